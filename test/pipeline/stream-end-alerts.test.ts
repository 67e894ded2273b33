/**
 * The alerts a stream's end settles (SourceAnalyzer.finish: a person lost at a door line and
 * found past it under a new id, the file ending before that id showed which way it went) are
 * published as any other alert: through the outbox to Kafka (a real broker), with the message
 * shape and ids of any alert, before the sinks close; with Kafka down, on disk in the outbox for
 * the next start. Before, they were only logged. The results come from the analyze operator over
 * tracked detections (the door-line scene of test/analytics/line-end.test.ts), then stamp and
 * publish as in a run, and the outputs close in a run's order (alerts, publisher, Kafka, outbox).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { analyze } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { parseConfigText } from '../../src/config/load.js';
import { AlertsSchema, KafkaSinkSchema, PipelineSchema, SourceSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { stamp } from '../../src/pipeline/stamp.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';
import { AlertPublisher } from '../../src/sinks/alerts.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox, readOutbox } from '../../src/sinks/outbox.js';
import { publish } from '../../src/sinks/publish.js';
import { Publisher } from '../../src/sinks/publisher.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { newSourceStats } from '../../src/sources/stats.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { BROKER_TIMEOUT_MS, readTopicUntil, testBrokers, uniqueTopic } from '../helpers/kafka.js';
import { feed, type SceneObject } from '../tracking/helpers.js';
import { walker } from '../analytics/door-line.js';

// A walks down and is lost at the line at 0.8 s; B, its size, is found standing past it from 2.3 s;
// the file ends at 3.0 s, before B has stood there a second: its crossing is settled by the end.
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

/** One source's run through the outputs: the results to the sinks, then the outputs closed in a run's order. */
async function runThrough(kafka: KafkaSink, outbox: Outbox, run: string): Promise<{ published: number; raised: number; report: number }> {
  const publisher = new Publisher([kafka], { name: 'm', version: '1' }, ['person'], outbox, undefined, run);
  const alerts = new AlertPublisher(publisher, AlertsSchema.parse({}), detector, tmpdir(), () => {});
  const analyzer = new SourceAnalyzer(source, ['person'], 'sources[0]', () => {});
  const st = newSourceStats('cam');
  const input = frames();
  const out = await lastValueFrom(from(input).pipe(analyze(analyzer), stamp(st), publish({ publisher, alerts }), toArray()));
  // Not a frame: the source's frames out are its frames.
  expect(st.framesOut).toBe(input.length);
  expect(out).toHaveLength(input.length + 1);
  await alerts.drain();
  await publisher.flush();
  await kafka.close();
  await outbox.close();
  return { published: alerts.stats.published, raised: alerts.stats.raised, report: analyzer.report().alerts.in };
}

describe("the alerts a stream's end settles", () => {
  let brokers: string[];
  beforeAll(async () => {
    brokers = await testBrokers();
  }, BROKER_TIMEOUT_MS);

  it('reach Kafka through the outbox, with an alert\'s shape and id, before the sinks close', async () => {
    const topic = uniqueTopic('streamend');
    const dir = mkdtempSync(join(tmpdir(), 'argus-stream-end-'));
    const outbox = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, topics: { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` } }), ssl: undefined, log: () => {}, onDelivered: (m) => outbox.ack(m), spill: outbox.spill() });
    await kafka.start();
    const counts = await runThrough(kafka, outbox, 'r1');
    expect(counts).toEqual({ published: 1, raised: 1, report: 1 });
    const got = (await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 1, 60_000)).map((v) => ({ key: v.key, m: JSON.parse(v.value) as AlertMessage }));
    expect(got).toHaveLength(1);
    const { key, m } = got[0];
    expect(key).toBe('cam');
    // The last frame's seq and pts (29: 2.9 s), the crossing's time, an id as any alert's.
    expect(m).toMatchObject({ type: 'alert', source: 'cam', seq: 29, run: 'r1', alert: { id: 'cam:in:r1-29:2', rule: 'in', severity: 'critical', event: 'line.cross', line: 'door', direction: 'in', trackId: 2 } });
    expect(m.alert.message).toMatch(/at the end of the stream/);
    expect(m.alert.snapshot).toBeUndefined();
    expect(m.detections).toEqual([]);
    // Acknowledged: nothing left for the next start.
    expect((await readOutbox(dir)).filter((r) => r.kind === 'alert')).toEqual([]);
  }, 4 * 60_000);

  it('with Kafka down at the end: on disk in the outbox, for the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-stream-end-'));
    const outbox = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: true, log: () => {} });
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:1'], topics: { detections: 't', alerts: 't.alerts', status: 't.status' } }), ssl: undefined, closeTimeoutMs: 50, startWaitMs: 50, log: () => {}, onDelivered: (m) => outbox.ack(m), spill: outbox.spill() });
    await kafka.start().catch(() => undefined);
    const counts = await runThrough(kafka, outbox, 'r2');
    expect(counts).toEqual({ published: 1, raised: 1, report: 1 });
    const kept = (await readOutbox(dir)).filter((r) => r.kind === 'alert').map((r) => JSON.parse(r.value) as AlertMessage);
    expect(kept.map((m) => [m.alert.id, m.alert.event, m.alert.trackId])).toEqual([['cam:in:r2-29:2', 'line.cross', 2]]);
  }, 60_000);
});

describe("the ids of a stream's end's alerts", () => {
  it("are told apart from the last frame's own (the same seq), and go without a snapshot", async () => {
    const seen: AlertMessage[] = [];
    const sink = { name: 'spy', publish: (_k: string, _s: string, json: string) => void seen.push(JSON.parse(json) as AlertMessage), close: async () => {} };
    const publisher = new Publisher([sink], { name: 'm', version: '1' }, ['person'], undefined, undefined, 'r3');
    const alerts = new AlertPublisher(publisher, AlertsSchema.parse({}), detector, tmpdir(), () => {});
    const { frame, detections } = frames()[5];
    const draft = { rule: 'in', severity: 'critical', event: 'line.cross', message: 'm', trackId: 2, row: -1 };
    alerts.raise({ frame, detections, dropped: 0, alerts: [{ ...draft }] });
    const endFrame = { ...frame, data: Buffer.alloc(0), release: () => {} };
    alerts.raise({ frame: endFrame, detections, dropped: 0, alerts: [{ ...draft, direction: 'out' }, { ...draft, trackId: 3 }], alertsOnly: true, streamEnd: true });
    await alerts.drain();
    // Before: the end's first alert took the last frame's alert's id (a consumer drops it as a redelivery).
    expect(seen.map((m) => [m.alert.id, m.alert.snapshot !== undefined])).toEqual([
      ['cam:in:r3-5:2', true],
      ['cam:in:r3-5:2.2', false],
      ['cam:in:r3-5:3', false],
    ]);
    // Said why, as any snapshot left out (before: nothing, as if the mode asked for none).
    expect(seen.map((m) => m.alert.snapshotOmitted?.reason)).toEqual([undefined, 'no-frame', 'no-frame']);
    expect(seen[1].alert.snapshotOmitted?.detail).toMatch(/end of the stream/);
  });
});

describe("a run's stop and a file's end", () => {
  let brokers: string[];
  let fake: Detector;
  let dir: string;
  beforeAll(async () => {
    brokers = await testBrokers();
    ({ detector: fake } = await fakeDetector());
    dir = mkdtempSync(join(tmpdir(), 'argus-stream-end-run-'));
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '300', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
  }, BROKER_TIMEOUT_MS);
  afterAll(() => fake?.release());

  // The settling's alert, whatever the fake model sees: what runPipeline does with it is under test.
  const settled = (run: string) => {
    const finish = SourceAnalyzer.prototype.finish;
    return vi.spyOn(SourceAnalyzer.prototype, 'finish').mockImplementation(function (this: SourceAnalyzer, carried?: boolean) {
      const end = finish.call(this, carried);
      return end && { ...end, alerts: [{ rule: 'in', severity: 'critical', event: 'line.cross', message: `settled ${run}`, trackId: 7, line: 'door', direction: 'in', row: -1 }] };
    });
  };

  for (const how of ['stop', 'end'] as const) {
    it(`${how === 'stop' ? 'a stop (SIGTERM) mid-file' : "the file's end"}: the alert reaches Kafka before the sinks close, counted published`, async () => {
      const topic = uniqueTopic(`streamend${how}`);
      const config = parseConfigText(
        `name: streamend-${how}\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: ${how === 'stop' ? 'native' : 'fast'}, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }]\noutbox: {dir: ${join(dir, `outbox-${how}`)}, fsync: false}\nsinks:\n  kafka:\n    brokers: [${brokers.join(', ')}]\n    topics: {detections: ${topic}, alerts: ${topic}.alerts, status: ${topic}.status}\n`,
        PipelineSchema,
        'streamend.yaml',
        {},
      );
      const spy = settled(how);
      try {
        const ac = new AbortController();
        let frames = 0;
        const summary = await runPipeline(config, { detector: fake, status: false, signal: ac.signal, onResult: () => void (++frames === 5 && how === 'stop' && ac.abort()) });
        expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
        expect(summary.lostAlerts).toBe(0);
        expect(summary.keptAlerts).toBe(0);
        if (how === 'stop') expect(summary.frames).toBeLessThan(300);
        else expect(summary.frames).toBe(300);
        const got = (await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 1, 60_000)).map((v) => JSON.parse(v.value) as AlertMessage);
        expect(got.map((m) => [m.alert.message, m.alert.trackId, m.seq === summary.frames - 1])).toEqual([[`settled ${how}`, 7, true]]);
      } finally {
        spy.mockRestore();
      }
    }, 4 * 60_000);
  }
});
