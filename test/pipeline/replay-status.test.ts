/**
 * An argus worker killed during a broker outage leaves its cameras' latest statuses in its
 * outbox. Restarted once its cameras have moved on, it replayed them: on the compacted status
 * topic an old state of a camera another worker runs (its owner's "streaming" before it) became
 * the camera's latest. Statuses of cameras claimed since are now taken out of the outbox, not
 * replayed (the worker's rule: Worker.replaysStatus). Real broker, fake detector.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterView } from '../../src/cluster/view.js';
import { Worker } from '../../src/cluster/worker.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { runPipeline } from '../../src/pipeline/run.js';
import type { AlertMessage, StatusMessage } from '../../src/sinks/message.js';
import { Outbox, readOutbox } from '../../src/sinks/outbox.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { BROKER_TIMEOUT_MS, readTopicUntil, testBrokers, uniqueTopic } from '../helpers/kafka.js';

const status = (source: string, epoch: number, state: string): StatusMessage => ({ type: 'status', version: 1, source, state, previous: 'streaming', reason: 'broker outage, then kill -9', at: 1000 + epoch, attempt: 0, published: 1000 + epoch, owner: 'w1', epoch }) as StatusMessage;

describe('a worker restarted after its cameras moved on', () => {
  let detector: Detector;
  let clip: string;
  let brokers: string[];
  beforeAll(async () => {
    brokers = await testBrokers();
    ({ detector } = await fakeDetector());
    clip = join(mkdtempSync(join(tmpdir(), 'argus-replay-clip-')), 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '3', '-pix_fmt', 'yuv420p', clip]);
  }, BROKER_TIMEOUT_MS);
  afterAll(async () => {
    await detector?.release();
  });

  it('replays its alerts and the statuses of cameras not claimed since; the others are taken out of the outbox, not sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-replay-'));
    const left = await Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    const alert = { type: 'alert', version: 1, source: 'moved', owner: 'w1', epoch: 3, stamps: { emitted: 1 }, alert: { id: 'raised-before-the-kill' } } as unknown as AlertMessage;
    for (const m of [status('moved', 3, 'reconnecting'), status('stayed', 9, 'reconnecting'), alert]) await left.append(m, JSON.stringify(m));
    await left.close();
    const topic = uniqueTopic('replay');
    const config = parseConfigText(
      `name: w1\nsources:\n  - {id: cam, uri: ${clip}, rate: fast}\noutbox: {dir: ${dir}, fsync: false}\nsinks:\n  kafka:\n    brokers: [${brokers.join(', ')}]\n    topics: {detections: ${topic}, alerts: ${topic}.alerts, status: ${topic}.status}\n`,
      PipelineSchema,
      'w1.yaml',
      {},
    );
    const logs: string[] = [];
    // The cluster's view: 'moved' claimed since (epoch 12, another worker), 'stayed' not.
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1', ownersTopic: 'o', camerasTopic: 'c' } }));
    const view = (w as unknown as { view: ClusterView }).view;
    const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
    view.ingest('o', 0, 'moved', rec({ type: 'claim', camera: 'moved', owner: 'w1', incarnation: 'old', at: 1 }), '3');
    view.ingest('o', 0, 'stayed', rec({ type: 'claim', camera: 'stayed', owner: 'w1', incarnation: 'old', at: 1 }), '9');
    view.ingest('o', 0, 'moved', rec({ type: 'claim', camera: 'moved', owner: 'w2', incarnation: 'x', at: 2 }), '12');
    await runPipeline(config, { detector, status: false, log: (m) => void logs.push(m), replaysStatus: (m) => w.replaysStatus(m) });
    const alerts = await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 1, 60_000);
    expect(alerts.map((v) => JSON.parse(v.value).alert.id)).toEqual(['raised-before-the-kill']);
    // Every status of the topic: read until one of 'moved' comes, or 10 s after the run.
    const statuses = await readTopicUntil(brokers, `${topic}.status`, (v) => v.some((s) => JSON.parse(s.value).source === 'moved'), 10_000);
    const replayed = statuses.map((v) => JSON.parse(v.value) as StatusMessage).filter((s) => s.source !== 'cam');
    // Before: 'moved' too, after its new owner's states: its latest on the compacted topic.
    expect(replayed.map((s) => [s.source, s.epoch])).toEqual([['stayed', 9]]);
    expect(logs).toContain('outbox: 1 status message(s) an earlier run left undelivered are not replayed: their cameras have been claimed since (moved)');
    expect((await readOutbox(dir)).map((r) => r.key)).toEqual([]); // taken out: not replayed at every start
  }, 4 * 60_000);
});

describe('Worker.replaysStatus', () => {
  it('a status of an older claim than the camera\'s latest in the view is not replayed; one of the latest claim, of a camera the view does not know, or without an epoch is', () => {
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1', ownersTopic: 'o', camerasTopic: 'c' } }));
    const view = (w as unknown as { view: ClusterView }).view;
    view.ingest('o', 0, 'a', Buffer.from(JSON.stringify({ type: 'claim', camera: 'a', owner: 'w2', incarnation: 'x', at: 1 })), '7');
    expect(w.replaysStatus(status('a', 3, 'failed'))).toBe(false);
    expect(w.replaysStatus(status('a', 7, 'failed'))).toBe(true);
    expect(w.replaysStatus(status('b', 3, 'failed'))).toBe(true);
    expect(w.replaysStatus({ ...status('a', 3, 'failed'), epoch: undefined } as unknown as StatusMessage)).toBe(true);
  });
});

