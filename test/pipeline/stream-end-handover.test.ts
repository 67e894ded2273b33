/**
 * A chain cut off before its stream's end's result reached the sinks (the stop's drain timeout,
 * --max-frames: unsubscribed) hands that result to the alert path directly (analyze's HandOver:
 * a run's AlertPublisher.handOver), while the sinks and the outbox are open: the alert is
 * journaled and published with an alert's shape and id. Only where that path is closed is it
 * counted lost (SourceAnalyzer.uncarried). Before, it was always counted lost (exit status 3).
 * The door-line scene of test/analytics/line-end.test.ts; a real outbox.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { AlertsSchema, SourceSchema } from '../../src/config/schema.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';
import { AlertPublisher } from '../../src/sinks/alerts.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox, readOutbox } from '../../src/sinks/outbox.js';
import { publish } from '../../src/sinks/publish.js';
import { Publisher } from '../../src/sinks/publisher.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, type SceneObject } from '../tracking/helpers.js';
import { walker } from '../analytics/door-line.js';

// A walks down and is lost at the line at 0.8 s; B, its size, is found standing past it from 2.3 s;
// the frames stop at 3.0 s, before B has stood there a second: its crossing is settled by the end.
const scene: SceneObject[] = [walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3 }];
const source = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'in', severity: 'critical' }] });
const detector = { manifest: { preprocess: { channelOrder: 'bgr' } }, labels: ['person'] } as never;

function frames(): DetectedFrame[] {
  const tracker = new ByteTracker({ frameRateHint: 10 });
  const lb = letterbox(640, 480, 640, 480, 'top-left');
  return feed(10, 3.0, { objects: scene, jitter: 1, seed: 3 }).map((f) => ({
    frame: { source: 'cam', seq: Math.round(f.timestampMs / 100), pts: f.timestampMs / 1000, data: Buffer.alloc(640 * 480 * 3, 80), layout: 'source', letterbox: lb, stamps: emptyStamps(Date.now()), producedBy: 'captured', release: () => {} },
    detections: tracker.update(f.detections, f.timestampMs),
  }));
}

/** The outputs of a run (spy sink, real outbox), and a chain fed every frame, then cut off (unsubscribed). */
async function cutOff(closedFirst: boolean) {
  const dir = mkdtempSync(join(tmpdir(), 'argus-handover-'));
  const outbox = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: true });
  const seen: AlertMessage[] = [];
  const sink = { name: 'spy', publish: (kind: string, _s: string, json: string) => void (kind === 'alert' && seen.push(JSON.parse(json) as AlertMessage)), close: async () => {} };
  const publisher = new Publisher([sink], { name: 'm', version: '1' }, ['person'], outbox, undefined, 'r7');
  const alerts = new AlertPublisher(publisher, AlertsSchema.parse({}), detector, tmpdir(), () => {});
  const warned: string[] = [];
  const analyzer = new SourceAnalyzer(source, ['person'], 'sources[0]', (m) => warned.push(m));
  const input = frames();
  const frames$ = new Subject<DetectedFrame>();
  const sub = frames$.pipe(analyze(analyzer, (r) => alerts.handOver(r)), publish({ publisher, alerts })).subscribe();
  for (const f of input) frames$.next(f);
  // The outputs closed in a run's order (the alert publisher first, then the rest) before the cut.
  if (closedFirst) {
    await alerts.close();
    await publisher.flush();
    await outbox.close();
  }
  sub.unsubscribe();
  await alerts.drain();
  await publisher.flush();
  await outbox.close();
  return { seen, analyzer, alerts, warned, dir, lastSeq: input[input.length - 1].frame.seq };
}

describe("a cut-off chain's end's alerts", () => {
  it('are handed to the alert path while it is open: journaled and published as the chain would have, none counted lost', async () => {
    const { seen, analyzer, alerts, warned, dir, lastSeq } = await cutOff(false);
    // Before: nothing published, analyzer.uncarried 1 (the run's lostAlerts: exit status 3).
    expect(seen.map((m) => [m.alert.id, m.seq, m.alert.rule, m.alert.snapshotOmitted?.reason])).toEqual([[`cam:in:r7-${lastSeq}:2`, lastSeq, 'in', 'no-frame']]);
    expect(alerts.stats).toMatchObject({ raised: 1, published: 1 });
    expect(analyzer.uncarried).toBe(0);
    expect(analyzer.report().alerts).toEqual({ in: 1 });
    expect(warned).toEqual([]);
    // On disk, for Kafka (none here): the same alert.
    const kept = (await readOutbox(dir)).filter((r) => r.kind === 'alert').map((r) => (JSON.parse(r.value) as AlertMessage).alert.id);
    expect(kept).toEqual([`cam:in:r7-${lastSeq}:2`]);
  });

  it('are counted lost where the alert path is closed already (its outbox closed): nothing journaled, said in the log', async () => {
    const { seen, analyzer, alerts, warned, dir } = await cutOff(true);
    expect(seen).toEqual([]);
    expect(alerts.stats).toMatchObject({ raised: 0, published: 0 });
    expect(analyzer.uncarried).toBe(1);
    expect(analyzer.report().alerts).toEqual({ in: 0 });
    expect(warned).toEqual([expect.stringMatching(/^source cam: alert of rule in \(critical\) not published: .*; the chain was cut off before the result of the end of the stream that carried it reached the sinks, and the alert path was already closed .*counted lost\)$/)]);
    expect((await readOutbox(dir)).filter((r) => r.kind === 'alert')).toEqual([]);
  });
});
