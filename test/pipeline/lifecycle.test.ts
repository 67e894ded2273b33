import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { Lifecycle } from '../../src/pipeline/lifecycle.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { Outbox } from '../../src/sinks/outbox.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { BROKER_TIMEOUT_MS, testBrokers } from '../helpers/kafka.js';

describe('Lifecycle', () => {
  it('stops in reverse order of start, each once, even when a stop fails', async () => {
    const order: string[] = [];
    const warnings: string[] = [];
    const life = new Lifecycle((m, _f, level) => level === 'warn' && warnings.push(m));
    await life.start('a', () => 1, () => void order.push('a'));
    life.use('b', 2, () => {
      order.push('b');
      throw new Error('b broke');
    });
    await life.start('c', async () => 3, async () => void order.push('c'));
    await Promise.all([life.stop(), life.stop()]);
    await life.stop();
    expect(order).toEqual(['c', 'b', 'a']);
    expect(life.stopped).toEqual(['c', 'b', 'a']);
    expect(warnings).toEqual(['stop: b failed: b broke']);
  });

  it('a start that throws registers nothing; what started before it is stopped', async () => {
    const order: string[] = [];
    const life = new Lifecycle();
    await life.start('first', () => 'x', () => void order.push('first'));
    await expect(
      life.start('second', () => {
        throw new Error('cannot start');
      }, () => void order.push('second')),
    ).rejects.toThrow('cannot start');
    await life.stop();
    expect(order).toEqual(['first']);
  });

  it('refuses to start anything once stopping', async () => {
    const life = new Lifecycle();
    await life.stop();
    await expect(life.start('late', () => 1, () => {})).rejects.toThrow(/stopping/);
    expect(() => life.use('late', 1, () => {})).toThrow(/stopping/);
  });
});

describe('runPipeline: a start that fails half-way stops what it started, in reverse order', () => {
  let brokers: string[];
  let detector: Detector;
  let busy: Server;
  let busyPort: number;
  let clip: string;
  beforeAll(async () => {
    brokers = await testBrokers();
    ({ detector } = await fakeDetector());
    busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    busyPort = (busy.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'argus-life-'));
    clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', clip]);
  }, BROKER_TIMEOUT_MS);
  afterAll(async () => {
    busy?.close();
    await detector?.release();
  });

  it('the server cannot listen (port taken): Kafka, JSONL, the outbox and the pipeline are stopped, and the outbox lock is free again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-life-run-'));
    const yaml = `
name: life
sources:
  - id: cam
    uri: ${clip}
    rate: fast
outbox: { enabled: true, dir: ${join(dir, 'outbox')} }
sinks:
  jsonl: { path: ${join(dir, 'out.jsonl')} }
  kafka: { brokers: [${brokers.join(',')}], topics: { detections: life.d, alerts: life.a, status: life.s } }
server: { host: 127.0.0.1, port: ${busyPort} }
`;
    const config = parseConfigText(yaml, PipelineSchema, 'life.yaml', {});
    const stopped: string[] = [];
    const log = (m: string) => {
      const s = /^stopped (.+)$/.exec(m);
      if (s) stopped.push(s[1]);
    };
    await expect(runPipeline(config, { detector, log, status: false })).rejects.toThrow(/EADDRINUSE|address already in use/i);
    expect(stopped).toEqual(['kafka', 'jsonl', 'outbox', 'pipeline']);
    // The outbox's lock was released: a new run can take it.
    const again = await Outbox.open({ dir: join(dir, 'outbox'), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false, log: () => {} });
    await again.close();
  }, 120_000);
});

describe('runPipeline and a Kafka broker that accepts connections and never answers', () => {
  let detector: Detector;
  let hole: Server;
  const held: import('node:net').Socket[] = [];
  let clip: string;
  beforeAll(async () => {
    ({ detector } = await fakeDetector());
    hole = createServer((c) => {
      held.push(c);
      c.on('error', () => undefined);
    });
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', () => r()));
    const dir = mkdtempSync(join(tmpdir(), 'argus-life-'));
    clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '20', '-pix_fmt', 'yuv420p', clip]);
  });
  afterAll(async () => {
    for (const c of held) c.destroy();
    hole?.close();
    await detector?.release();
  });

  it('the cameras start within the 3 s start wait (they waited 20 s), and a stop ends the run without blaming frames in flight', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-life-hole-'));
    const yaml = `
name: hole
sources:
  - id: cam
    uri: ${clip}
    rate: native
    loop: true
outbox: { enabled: true, dir: ${join(dir, 'outbox')} }
sinks:
  kafka: { brokers: ["127.0.0.1:${(hole.address() as { port: number }).port}"], closeTimeoutMs: 500 }
`;
    const config = parseConfigText(yaml, PipelineSchema, 'hole.yaml', {});
    const logs: string[] = [];
    const ac = new AbortController();
    const t0 = performance.now();
    let firstResult = 0;
    const run = runPipeline(config, {
      detector,
      status: false,
      signal: ac.signal,
      drainTimeoutMs: 300,
      log: (m: string) => logs.push(m),
      onResult: () => {
        if (firstResult === 0) {
          firstResult = performance.now() - t0;
          setImmediate(() => ac.abort()); // between frames, as a closed stdout stops a run
        }
      },
    });
    await run;
    await new Promise((r) => setTimeout(r, 600)); // past the drain timeout: a timer left running would log
    expect(firstResult, logs.join('\n')).toBeGreaterThan(0);
    // 3 s of waiting, then the source's start: far below kafkajs's 10 s request timeout.
    expect(firstResult, logs.join('\n')).toBeLessThan(9000);
    expect(logs.some((m) => /^kafka: no answer from 127\.0\.0\.1:\d+ within 3 s; starting without it/.test(m))).toBe(true);
    expect(logs.filter((m) => m.includes('frames still in flight'))).toEqual([]);
  }, 60_000);
});
