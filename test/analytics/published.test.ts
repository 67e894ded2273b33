import { describe, expect, it } from 'vitest';
import { replayedAlertJson, withoutSnapshot, type AlertBody } from '../../src/analytics/published.js';

const body: AlertBody = { id: 'cam:r:1-2:3', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'person #3 entered zone a', trackId: 3, snapshot: { contentType: 'image/jpeg', data: 'AAAA', width: 1920, height: 1080 } };
const message = (alert: AlertBody) => JSON.stringify({ v: 1, type: 'alert', source: 'cam', alert, stamps: { emitted: 1 } });

describe('replayedAlertJson: an alert an earlier run left in the outbox, as this run replays it', () => {
  it('one sent without its picture (too large) no longer names where the earlier run held it, and says why; the rest is as it was', () => {
    const stripped = withoutSnapshot(body, { reason: 'too-large', detail: '1200000 bytes > maxMessageBytes 1000000', url: '/api/snapshot?id=cam%3Ar%3A1-2%3A3' });
    const out = JSON.parse(replayedAlertJson(message(stripped)));
    expect(out.alert.snapshotOmitted).toEqual({ reason: 'too-large', detail: '1200000 bytes > maxMessageBytes 1000000; the picture was held by the argus run that raised the alert, which has ended (the JSON lines sink, when on, has it)' });
    expect(out.alert.snapshot).toBeUndefined();
    expect(out).toMatchObject({ v: 1, type: 'alert', source: 'cam', stamps: { emitted: 1 }, alert: { id: body.id, message: body.message, trackId: 3 } });
  });

  it('any other is given back as the same string: with its snapshot, without one for another reason, a status, text that is not JSON', () => {
    for (const json of [
      message(body),
      message(withoutSnapshot(body, { reason: 'busy', detail: 'too many pictures waited' })),
      JSON.stringify({ v: 1, type: 'status', source: 'cam', state: 'streaming', message: 'snapshotOmitted "url"' }),
      '{"snapshotOmitted" "url" not json',
    ]) expect(replayedAlertJson(json)).toBe(json);
  });
});
