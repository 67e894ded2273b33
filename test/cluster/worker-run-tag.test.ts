// argus worker: one tag for one start. Its incarnation (in its claims and its group member data)
// and its messages' `run` were two tags of the same start, made apart (pid, time, four random
// characters; and runTag).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterNames } from '../../src/bench/cluster.js';
import { runWorker, type Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { RunningPipeline } from '../../src/pipeline/run.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { testBrokers } from '../helpers/kafka.js';

describe('argus worker: its incarnation and its messages\' run', () => {
  it('are one value: the run its pipeline publishes under is the incarnation its claims carry', async () => {
    const brokers = await testBrokers();
    const n = clusterNames('runtag');
    const dir = mkdtempSync(join(tmpdir(), 'argus-worker-run-'));
    const config = PipelineSchema.parse({
      name: 'runtag',
      sinks: { kafka: { brokers, topics: { detections: n.detections, alerts: n.alerts, status: n.status } } },
      cluster: { workerId: 'w1', group: n.group, camerasTopic: n.cameras, ownersTopic: n.owners, slots: 2, sessionTimeoutMs: 6000 },
      outbox: { dir: join(dir, 'outbox') },
    });
    const { detector } = await fakeDetector();
    const ac = new AbortController();
    let worker: Worker | undefined;
    let running: RunningPipeline | undefined;
    try {
      await runWorker(config, {
        detector,
        status: false,
        signal: ac.signal,
        onReady: (r) => (running = r),
        onJoined: (w) => {
          worker = w;
          ac.abort();
        },
      });
    } finally {
      await detector.release();
    }
    expect(worker!.incarnation).toMatch(/^[0-9a-z]{16,}$/);
    expect(running!.publisher.run).toBe(worker!.incarnation);
  }, 120_000);
});
