/**
 * The ids of the alerts a stream's end settles (analyze's `streamEnd` result, on its last frame's
 * seq): told apart from the ids that frame's own alerts took, also where another result of the
 * same source came in between (a camera attached again while its former chain still drains: two
 * chains of one source, AlertPublisher seeing their results interleaved). A repeated id is taken
 * by consumers for a redelivery: the end's alert was dropped.
 */
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AlertsSchema } from '../../src/config/schema.js';
import { emptyStamps } from '../../src/core/frame.js';
import { Detections } from '../../src/core/detections.js';
import { letterbox } from '../../src/core/geometry.js';
import type { Frame } from '../../src/core/frame.js';
import { AlertPublisher } from '../../src/sinks/alerts.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Publisher } from '../../src/sinks/publisher.js';

const detector = { manifest: { preprocess: { channelOrder: 'bgr' } }, labels: ['person'] } as never;
const lb = letterbox(64, 48, 64, 48, 'top-left');
const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
const frame = (source: string, seq: number, data = Buffer.alloc(0)): Frame => ({ source, seq, pts: seq / 10, data, layout: 'source', letterbox: lb, stamps: emptyStamps(Date.now()), producedBy: 'captured', release: () => {} });
const draft = (trackId: number) => ({ rule: 'in', severity: 'critical', event: 'line.cross', message: 'm', trackId, row: -1 });

function publisher() {
  const seen: AlertMessage[] = [];
  const sink = { name: 'spy', publish: (_k: string, _s: string, json: string) => void seen.push(JSON.parse(json) as AlertMessage), close: async () => {} };
  const p = new Publisher([sink], { name: 'm', version: '1' }, ['person'], undefined, undefined, 'r');
  return { seen, alerts: new AlertPublisher(p, AlertsSchema.parse({ snapshot: { mode: 'none' } }), detector, tmpdir(), () => {}) };
}

describe("the ids of a stream's end's alerts", () => {
  it("are apart from their last frame's own where another result of the source came in between (two chains of one camera)", async () => {
    const { seen, alerts } = publisher();
    // The draining chain's last frame (seq 100) raises #2's alert; the camera's new chain raises on seq 101; then the old chain's end.
    alerts.raise({ frame: frame('cam', 100), detections: none, dropped: 0, alerts: [draft(2)] });
    alerts.raise({ frame: frame('cam', 101), detections: none, dropped: 0, alerts: [draft(7)] });
    alerts.raise({ frame: frame('cam', 100), detections: none, dropped: 0, alerts: [draft(2), draft(2)], alertsOnly: true, streamEnd: true });
    await alerts.drain();
    // Before: the end's first alert took 'cam:in:r-100:2' again (a redelivery to a consumer: dropped), its second '.2'.
    expect(seen.map((m) => m.alert.id)).toEqual(['cam:in:r-100:2', 'cam:in:r-101:7', 'cam:in:r-100:2.2', 'cam:in:r-100:2.3']);
  });

  it('of a source whose last frame raised nothing: the ids of its own seq only, another source in between changing nothing', async () => {
    const { seen, alerts } = publisher();
    alerts.raise({ frame: frame('cam', 5), detections: none, dropped: 0, alerts: [draft(2)] });
    alerts.raise({ frame: frame('other', 9), detections: none, dropped: 0, alerts: [draft(2)] });
    // cam's last frame (seq 9) raised nothing: its end's alert on seq 9 is apart from every id already.
    alerts.raise({ frame: frame('cam', 9), detections: none, dropped: 0, alerts: [draft(2)], alertsOnly: true, streamEnd: true });
    // And a later end of the same seq (a second chain's, cut to the same last frame) is told apart from the first end's.
    alerts.raise({ frame: frame('cam', 5), detections: none, dropped: 0, alerts: [draft(2)], alertsOnly: true, streamEnd: true });
    await alerts.drain();
    expect(seen.map((m) => m.alert.id)).toEqual(['cam:in:r-5:2', 'other:in:r-9:2', 'cam:in:r-9:2', 'cam:in:r-5:2.2']);
  });

  it('are kept bounded: 4 seqs a source, 10 000 sources', async () => {
    const { alerts } = publisher();
    const kept = (alerts as unknown as { lastIds: Map<string, { seq: number }[]> }).lastIds;
    for (let seq = 0; seq < 10; seq++) alerts.raise({ frame: frame('cam', seq), detections: none, dropped: 0, alerts: [draft(1)] });
    expect(kept.get('cam')!.map((e) => e.seq)).toEqual([6, 7, 8, 9]);
    for (let i = 0; i < 10_001; i++) alerts.raise({ frame: frame(`c${i}`, 1), detections: none, dropped: 0, alerts: [draft(1)] });
    expect(kept.size).toBe(10_000);
    expect(kept.has('cam')).toBe(false);
    await alerts.drain();
  });
});
