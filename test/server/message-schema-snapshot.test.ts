// README, "Message schema": an alert's snapshot carries its picture (`data`, mode embed on Kafka and
// in the JSON lines), its file (`ref`, mode ref) or its URL (`url`, mode embed on the WebSocket).
// The schema let a snapshot with none of them (or two) through: a consumer that validated could
// not rely on finding the picture.
import { describe, expect, it } from 'vitest';
import { messageErrors } from '../helpers/schema.js';

function alert(snapshot: Record<string, unknown>): Record<string, unknown> {
  const t = 1796008567104.88;
  return {
    type: 'alert', version: 1, source: 'lobby', run: 'mio3k2x1q07f3kzt', seq: 41, pts: 4.1, capturedAt: '2026-11-30T03:20:41.104Z', producedBy: 'arrival',
    stamps: { produced: t, captured: t, preprocessed: t, inferStart: t, inferEnd: t, postprocessed: t, emitted: t, published: t },
    frame: { width: 768, height: 432 }, model: { name: 'yolox-nano', version: '0.1.1rc0' }, dropped: 0, detections: [],
    alert: { id: 'lobby:r:mio3k2x1q07f3kzt-41:3', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg', width: 768, height: 432, ...snapshot } },
  };
}

describe('message schema: an alert snapshot names its picture', () => {
  it('one of data, ref and url is valid', () => {
    expect(messageErrors(alert({ data: '/9j/' }))).toBe('');
    expect(messageErrors(alert({ ref: '/var/lib/argus/snapshots/a.jpg' }))).toBe('');
    expect(messageErrors(alert({ url: '/api/snapshot?id=x' }))).toBe('');
  });

  it('none of them, or two, is not', () => {
    expect(messageErrors(alert({}))).not.toBe('');
    expect(messageErrors(alert({ data: '/9j/', url: '/api/snapshot?id=x' }))).not.toBe('');
  });
});
