/**
 * A result marked alertsOnly (an argus worker's camera whose lease lapsed while the frame,
 * admitted under its claim, was in flight: see test/cluster/worker-fence-alerts.test.ts) reaches
 * Kafka as its alerts only, through the outbox, with their snapshots; no detections message of
 * it is published. Real broker, fake model, real ffmpeg; the README's crowd rule raises an alert
 * every second of video, and an extension marks the results from frame 15 on as the worker's
 * fence does.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { map } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import type { Extension } from '../../src/pipeline/pipeline.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { readOutbox } from '../../src/sinks/outbox.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { crowdRule } from '../../pipelines/custom-operator.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { BROKER_TIMEOUT_MS, readTopicUntil, testBrokers, uniqueTopic } from '../helpers/kafka.js';

describe('results whose alerts only are published (a worker\'s frames in flight at a lease lapse)', () => {
  let detector: Detector;
  let dir: string;
  let brokers: string[];
  beforeAll(async () => {
    brokers = await testBrokers();
    ({ detector } = await fakeDetector());
    dir = mkdtempSync(join(tmpdir(), 'argus-alerts-only-'));
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '30', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
  }, BROKER_TIMEOUT_MS);
  afterAll(() => detector?.release());

  it('their alerts reach Kafka through the outbox, with snapshots; their detections are not published', async () => {
    const topic = uniqueTopic('alertsonly');
    const outboxDir = join(dir, 'outbox');
    const config = parseConfigText(
      `name: fenced\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: fast }]\noutbox: {dir: ${outboxDir}, fsync: false}\nsinks:\n  kafka:\n    brokers: [${brokers.join(', ')}]\n    topics: {detections: ${topic}, alerts: ${topic}.alerts, status: ${topic}.status}\n`,
      PipelineSchema,
      'fenced.yaml',
      {},
    );
    const extend: Extension = (ctx) => (results) =>
      results.pipe(
        crowdRule(1, 1)(ctx),
        map((r) => {
          if (r.frame.seq >= 15) r.alertsOnly = true;
          return r;
        }),
      );
    await runPipeline(config, { detector, extend, status: false });
    const alerts = (await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 3, 60_000)).map((v) => JSON.parse(v.value) as { seq: number; alert: { snapshot?: unknown } });
    expect(alerts.map((a) => a.seq)).toEqual([0, 10, 20]); // 20: alertsOnly
    expect(alerts.every((a) => a.alert.snapshot !== undefined)).toBe(true);
    const detections = (await readTopicUntil(brokers, topic, (v) => v.length > 15, 10_000)).map((v) => (JSON.parse(v.value) as { seq: number }).seq);
    expect(detections).toEqual(Array.from({ length: 15 }, (_, i) => i));
    expect((await readOutbox(outboxDir)).filter((r) => r.kind === 'alert')).toEqual([]); // every alert acknowledged
  }, 4 * 60_000);
});
