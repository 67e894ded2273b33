import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelManifest, resolveModelFile } from '../../src/assets/catalog.js';
import type { ModelManifest } from '../../src/config/schema.js';
import { isArgusError } from '../../src/core/errors.js';
import { batchConfigs } from '../../src/bench/bench.js';
import { Batcher } from '../../src/inference/batcher.js';
import { Detector, type InputBuffer } from '../../src/inference/detector.js';
import { MIRROR, MODEL } from '../helpers/assets.js';
import { detectFile } from '../helpers/detect.js';

let manifest: ModelManifest;
const opened: Detector[] = [];
const load = async (workers: number, extra: Partial<Parameters<typeof Detector.load>[2]> = {}, m: ModelManifest = manifest, path = MODEL) => {
  const d = await Detector.load(m, path, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1, workers, ...extra });
  opened.push(d);
  return d;
};
beforeAll(async () => {
  manifest = (await loadModelManifest('yolox-nano')).manifest;
});
afterAll(async () => {
  for (const d of opened) await d.release();
});

/** Two runs submitted together: when each started and finished. */
async function twoRuns(det: Detector, a: InputBuffer, b: InputBuffer) {
  const t = { start: [0, 0], end: [0, 0] };
  await Promise.all(
    [a, b].map((inp, i) =>
      det.run(inp, () => (t.start[i] = performance.now())).then(() => {
        t.end[i] = performance.now();
      }),
    ),
  );
  return t;
}

describe('inference on worker threads', () => {
  it('gives exactly the detections of the main-thread session', async () => {
    const inline = await load(0);
    const worker = await load(1);
    expect(worker.session.sharedInputs).toBe(true);
    expect(worker.createInput().data.buffer).toBeInstanceOf(SharedArrayBuffer);
    for (const f of ['000000002532.jpg', '000000000139.jpg']) {
      const [a] = await detectFile(inline, join(MIRROR, 'images', f));
      const [b] = await detectFile(worker, join(MIRROR, 'images', f));
      expect(b.detections.length, f).toBe(a.detections.length);
      expect(Array.from(b.detections.classId)).toEqual(Array.from(a.detections.classId));
      expect(Array.from(b.detections.xyxy)).toEqual(Array.from(a.detections.xyxy));
    }
  }, 120_000);

  it('leaves the event loop free while the model runs (the main-thread session blocks it)', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    const path = await resolveModelFile(dyn);
    // A batch of 8 frames per run: long enough (tens of ms) to count timer ticks during it.
    const measure = async (det: Detector) => {
      const inputs = Array.from({ length: 8 }, () => det.createInput());
      for (const i of inputs) i.data.fill(114);
      await Promise.all(inputs.map((i) => det.run(i)));
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const t0 = performance.now();
      await Promise.all(inputs.map((i) => det.run(i)));
      const ms = performance.now() - t0;
      clearInterval(timer);
      return { ticks, ms };
    };
    const inline = await measure(await load(0, { batch: { maxBatch: 8, maxWaitMs: 1000 }, intraOpThreads: 2 }, dyn, path));
    const worker = await measure(await load(1, { batch: { maxBatch: 8, maxWaitMs: 1000 }, intraOpThreads: 2 }, dyn, path));
    expect(inline.ms).toBeGreaterThan(20);
    // Main thread: the run blocks the loop; at most a tick or two around it.
    expect(inline.ticks).toBeLessThanOrEqual(3);
    // Worker: the 1 ms timer keeps firing during the run (generous: a third of the run's ms).
    expect(worker.ticks).toBeGreaterThan(Math.max(5, worker.ms / 3));
  }, 300_000);

  it('with two workers, two frames run at the same time; with one, the second waits for the first', async () => {
    const one = await load(1);
    const two = await load(2);
    expect(one.session.slots).toBe(1);
    expect(two.session.slots).toBe(2);
    const inputs = [one.createInput(), one.createInput()];
    for (const i of inputs) i.data.fill(114);
    // One session: the second run starts only when the first is done (its start lags by about a
    // run's length). Two sessions: both start at once and overlap.
    const serial = await twoRuns(one, inputs[0], inputs[1]);
    const run0 = serial.end[0] - serial.start[0];
    expect(serial.start[1] - serial.start[0]).toBeGreaterThan(0.5 * run0);
    const inputs2 = [two.createInput(), two.createInput()];
    for (const i of inputs2) i.data.fill(114);
    const parallel = await twoRuns(two, inputs2[0], inputs2[1]);
    expect(parallel.start[1] - parallel.start[0]).toBeLessThan(0.5 * (parallel.end[0] - parallel.start[0]));
    expect(parallel.start[1]).toBeLessThan(parallel.end[0]);
    expect(parallel.start[0]).toBeLessThan(parallel.end[1]);
  }, 120_000);

  it('a batch of three sources on a worker session: the worker assembles the batch, each frame gets exactly its own detections', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    // A generous wait: on a busy machine the three decodes finish far apart; the batch is sent as soon as it is full.
    const batched = await load(1, { batch: { maxBatch: 3, maxWaitMs: 3000 } }, dyn, await resolveModelFile(dyn));
    const single = await load(0);
    const files = ['000000002532.jpg', '000000006460.jpg', '000000001818.jpg'];
    const refs = await Promise.all(files.map(async (f) => (await detectFile(single, join(MIRROR, 'images', f)))[0].detections));
    const got = await Promise.all(files.map(async (f) => (await detectFile(batched, join(MIRROR, 'images', f)))[0].detections));
    expect(batched.batchSizes).toContain(3);
    got.forEach((g, i) => {
      expect(Array.from(g.classId), files[i]).toEqual(Array.from(refs[i].classId));
      g.xyxy.forEach((v, k) => expect(v).toBeCloseTo(refs[i].xyxy[k], 2));
    });
  }, 120_000);

  it('release() with a run in flight lets it finish, rejects the queued ones and later ones, and leaves no worker behind', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    const det = await Detector.load(dyn, await resolveModelFile(dyn), { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1, batch: { maxBatch: 8, maxWaitMs: 1000 } });
    const inputs = Array.from({ length: 16 }, () => det.createInput());
    for (const i of inputs) i.data.fill(114);
    let started = 0;
    // Two batches of 8: the first runs (tens of ms), the second waits for the session.
    const runs = inputs.map((i) => det.run(i, () => started++).then(() => 'ok', (e: Error) => e.message));
    await new Promise((r) => setTimeout(r, 5));
    expect(started).toBe(8);
    await det.release();
    const results = await Promise.all(runs);
    expect(results.slice(0, 8)).toEqual(Array(8).fill('ok'));
    expect(results.slice(8)).toEqual(Array(8).fill('inference session released'));
    await expect(det.run(inputs[0])).rejects.toThrow('inference session released');
  }, 120_000);

  it('a forced exit during a run waits for it (quiesceInference) and exits with the chosen code, not an abort', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const script = join(dir, 'force.mts');
    const root = join(__dirname, '../..');
    writeFileSync(
      script,
      `import { Detector } from '${root}/src/inference/detector.ts';
import { quiesceInference } from '${root}/src/inference/session.ts';
const det = await Detector.load(${JSON.stringify(dyn)}, ${JSON.stringify(await resolveModelFile(dyn))}, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1, batch: { maxBatch: 16, maxWaitMs: 0 } });
const inputs = Array.from({ length: 16 }, () => det.createInput());
void Promise.all(inputs.map((i) => det.run(i, () => process.stdout.write('s'))));
setTimeout(() => void quiesceInference(5000).finally(() => process.exit(130)), 20);
`,
    );
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout, r.stderr).toContain('s'); // the run had started when the exit came
    expect(r.stderr).not.toMatch(/terminate called|Napi::Error/);
    expect(r.status).toBe(130);
  }, 120_000);

  it('a file that is not ONNX fails the load with the file named, from the worker', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const p = join(dir, 'not-a-model.onnx');
    writeFileSync(p, '<html>not a model</html>');
    const e = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 2 }).catch((x: unknown) => x);
    expect(isArgusError(e) && e.code).toBe('VAP_ERR_MODEL_LOAD');
    expect((e as Error).message).toContain(p);
  });
});

describe('Batcher concurrency', () => {
  it('runs up to `concurrency` batches at once; further frames wait for a free session', async () => {
    const inFlight: number[] = [];
    let now = 0;
    const releases: (() => void)[] = [];
    const b = new Batcher<number>({ maxBatch: 2, maxWaitMs: 1000, concurrency: 2 }, (jobs) => {
      now++;
      inFlight.push(now);
      return new Promise((res) =>
        releases.push(() => {
          now--;
          res(jobs.map((_, i) => i));
        }),
      );
    });
    const img = new Float32Array(1);
    const results = Array.from({ length: 6 }, () => b.submit(img));
    await Promise.resolve();
    // Two full batches started at once; the third waits.
    expect(inFlight).toEqual([1, 2]);
    expect(b.waiting).toBe(2);
    releases.shift()!();
    await new Promise((r) => setImmediate(r));
    expect(inFlight).toEqual([1, 2, 2]);
    expect(b.waiting).toBe(0);
    releases.splice(0).forEach((r) => r());
    expect(await Promise.all(results)).toEqual([0, 1, 0, 1, 0, 1]);
    expect(b.sizes).toEqual([2, 2, 2]);
  });
});

describe('batching bench configurations', () => {
  it('compares the batch-1 baseline with the batch dimension and with one-thread worker sessions', () => {
    const c = batchConfigs(4, 2, 2, 'yolox-nano');
    expect(c[0]).toMatchObject({ manifest: 'yolox-nano', maxBatch: 1, workers: 1, threads: 2 });
    expect(c[1]).toMatchObject({ manifest: 'yolox-nano-dyn', maxBatch: 4, workers: 1, threads: 2 });
    expect(c[2]).toMatchObject({ manifest: 'yolox-nano', maxBatch: 1, workers: 2, threads: 1 });
    // Four sources over two sessions: batches of two, so both sessions have work.
    expect(c[3]).toMatchObject({ manifest: 'yolox-nano-dyn', maxBatch: 2, workers: 2, threads: 1 });
    expect(batchConfigs(4, 2, 16, 'yolox-nano')[3]).toMatchObject({ maxBatch: 1, workers: 4 });
  });
});

describe('a dead inference worker', () => {
  // (A worker cannot be ended inside a native run without aborting the process — see
  // quiesceInference — so the worker here dies between runs, as after an out-of-memory exit.)
  it('is replaced; frames wait for the replacement, and the source keeps going with every frame accounted for', async () => {
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { runPipeline } = await import('../../src/pipeline/run.js');
    const det = await load(1, { intraOpThreads: 2 });
    const threads = (det.session as unknown as { threads: { crash(): void }[]; restarts: number }).threads;
    const config = PipelineSchema.parse({ sources: [{ id: 'cam', uri: join(MIRROR, 'streams/one-by-one-person-detection.mp4'), rate: 'fast' }], tracking: { enabled: false } });
    let n = 0;
    let killed = false;
    const summary = await runPipeline(config, {
      detector: det,
      maxFrames: 80,
      status: false,
      onResult: () => {
        // After 20 frames, the worker exits (between two runs).
        if (++n === 20) {
          killed = true;
          threads[0].crash();
        }
      },
    });
    expect(killed).toBe(true);
    const st = summary.stats[0];
    expect(summary.failed).toEqual([]);
    expect(st.framesOut).toBe(80);
    // The run posted just before the exit, if any, is dropped and counted.
    expect(st.inferenceErrors).toBeLessThanOrEqual(1);
    expect(st.framesIn).toBe(st.framesOut + st.dropped);
    expect((det.session as unknown as { restarts: number }).restarts).toBe(1);
  }, 120_000);
});

describe('a worker that keeps dying', () => {
  it('is started again at most 10 times; after that the runs fail instead of restarting forever', async () => {
    const det = await load(1);
    const s = det.session as unknown as { threads: { crash(): void; alive: boolean }[]; restarts: number };
    const input = det.createInput();
    input.data.fill(114);
    const until = async (cond: () => boolean) => {
      for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(cond()).toBe(true);
    };
    for (let k = 1; k <= 10; k++) {
      s.threads[0].crash();
      await until(() => s.restarts === k);
      await det.run(input); // the replacement works
    }
    s.threads[0].crash();
    await until(() => !s.threads[0].alive);
    await new Promise((r) => setTimeout(r, 300));
    expect(s.restarts).toBe(10);
    await expect(det.run(input)).rejects.toThrow(/inference worker exited/);
  }, 120_000);
});
