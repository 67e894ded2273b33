import { copyFileSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadModelManifest, resolveModelFile } from '../../src/assets/catalog.js';
import type { ModelManifest } from '../../src/config/schema.js';
import { processStart } from '../../src/core/children.js';
import { isArgusError } from '../../src/core/errors.js';
import type { LogFn } from '../../src/core/log.js';
import { batchConfigs } from '../../src/bench/bench.js';
import { Batcher } from '../../src/inference/batcher.js';
import { Detector } from '../../src/inference/detector.js';
import { enqueue, MAX_OVERTAKES } from '../../src/inference/session.js';
import { MAX_WORKER_RESTARTS, RELEASE_WAIT_MS } from '../../src/inference/worker-pool.js';
import { MIRROR, MODEL, PERSON_VIDEO } from '../helpers/assets.js';
import { detectFile } from '../helpers/detect.js';
import { killAll } from '../helpers/procs.js';
import { writeModel } from '../helpers/onnx-graphs.js';
import { together } from './together.js';

/** The checkout, for scripts run on their own (runScript). */
const ROOT = join(__dirname, '../..');

/**
 * Writes `source` (TypeScript importing from `${ROOT}/src`) to `path` and runs it in a process of
 * its own (tsx), asynchronously: its status and output. Exits are tested there, not in vitest's.
 */
async function runScript(path: string, source: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000) {
  writeFileSync(path, source);
  const { runCommand } = await import('../helpers/cli.js');
  return runCommand(process.execPath, ['--import', 'tsx', path], env, timeoutMs);
}

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

/** The pool's threads, as the tests reach them (test hooks: crash, stall). */
interface PoolThreads {
  threads: { crash(): void; stall(gate: Int32Array): void; alive: boolean }[];
  restarts: number;
}
const pool = (det: Detector) => det.session as unknown as PoolThreads;

/** A log that resolves `next(re)` at the next message matching `re`. */
function logWatch(): { log: LogFn; next: (re: RegExp) => Promise<void> } {
  const watchers = new Set<{ re: RegExp; resolve: () => void }>();
  const log: LogFn = (msg) => {
    for (const w of watchers) {
      if (!w.re.test(msg)) continue;
      watchers.delete(w);
      w.resolve();
    }
  };
  return { log, next: (re) => new Promise((resolve) => watchers.add({ re, resolve })) };
}

/** An input buffer of the detector's, filled with the pad grey. */
const filled = (det: Detector) => {
  const input = det.createInput();
  input.data.fill(114);
  return input;
};

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

  it('leaves the event loop free while a run is in flight: timers fire and messages are handled before it ends', async () => {
    const inline = await load(0);
    const det = await load(1);
    const ref = await inline.run(filled(inline));
    // The worker's thread blocks (as inside a long native run) until the gate opens, and the run
    // waits behind it: it stays in flight for as long as this thread chooses.
    const gate = new Int32Array(new SharedArrayBuffer(4));
    pool(det).threads[0].stall(gate);
    let settled = false;
    let started = false;
    const run = det.run(filled(det), () => (started = true)).finally(() => (settled = true));
    try {
      expect(started).toBe(true);
      await new Promise((r) => setTimeout(r, 1)); // a timer fires
      const { port1, port2 } = new MessageChannel();
      await new Promise((r) => {
        port2.onmessage = r;
        port1.postMessage('ping'); // a message is handled
      });
      port1.close();
      await new Promise((r) => setImmediate(r));
      expect(settled).toBe(false);
    } finally {
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
    }
    // The held run then completes with the model's output (the same as on the main thread).
    const out = await run;
    expect(out.outputs.map((o) => Array.from(o as Float32Array))).toEqual(ref.outputs.map((o) => Array.from(o as Float32Array)));
  }, 120_000);

  it('with two workers, two frames run at the same time; with one, the second starts when the first is done', async () => {
    const one = await load(1);
    const two = await load(2);
    expect(one.session.slots).toBe(1);
    expect(two.session.slots).toBe(2);
    // A run starts (is handed to a worker) synchronously when a worker is free.
    let started = 0;
    const a = one.run(filled(one), () => started++);
    const b = one.run(filled(one), () => started++);
    expect(started).toBe(1);
    await a;
    // The first run's worker takes the second as it hands the first back.
    expect(started).toBe(2);
    await b;
    let startedTwo = 0;
    const both = [two.run(filled(two), () => startedTwo++), two.run(filled(two), () => startedTwo++)];
    expect(startedTwo).toBe(2);
    const [x, y] = await Promise.all(both);
    expect(Array.from(y.outputs[0] as Float32Array)).toEqual(Array.from(x.outputs[0] as Float32Array));
  }, 120_000);

  it('the first worker falls back from an unavailable provider; the others start on the provider it found', async () => {
    const logs: string[] = [];
    // No CUDA provider library on CPU machines (as in detector.test.ts).
    const det = await load(2, { providers: ['cuda', 'cpu'], log: (m) => logs.push(m) });
    expect(det.provider).toBe('cpu');
    expect(det.session.slots).toBe(2);
    expect(det.session.failed.map((f) => f.provider)).toEqual(['cuda']);
    expect(logs).toContain('execution provider cuda unavailable, falling back');
    expect(det.session.inputs).toEqual([{ name: 'images', dims: [1, 3, 416, 416], type: 'float32' }]);
    expect(det.session.outputs).toEqual([{ name: 'output', dims: [1, 3549, 85], type: 'float32' }]);
  }, 120_000);

  it('a batch of three sources on a worker session: the worker assembles the batch, each frame gets exactly its own detections', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    // The three frames are submitted together (see together.ts): one batch of three, whatever the timing.
    const batched = await load(1, { batch: { maxBatch: 3, maxWaitMs: 60_000 } }, dyn, await resolveModelFile(dyn));
    const single = await load(0);
    const files = ['000000002532.jpg', '000000006460.jpg', '000000001818.jpg'];
    const refs = await Promise.all(files.map(async (f) => (await detectFile(single, join(MIRROR, 'images', f)))[0].detections));
    const three = together(batched, 3);
    const got = await Promise.all(files.map(async (f) => (await detectFile(three, join(MIRROR, 'images', f)))[0].detections));
    expect(batched.batchSizes).toEqual([3]);
    got.forEach((g, i) => {
      expect(Array.from(g.classId), files[i]).toEqual(Array.from(refs[i].classId));
      g.xyxy.forEach((v, k) => expect(v).toBeCloseTo(refs[i].xyxy[k], 2));
    });
  }, 120_000);

  it('release() with a run in flight lets it finish, rejects the queued ones and later ones, and leaves no worker behind', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    const det = await Detector.load(dyn, await resolveModelFile(dyn), { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1, batch: { maxBatch: 8, maxWaitMs: 60_000 } });
    const inputs = Array.from({ length: 16 }, () => filled(det));
    let started = 0;
    // Two full batches of 8: the first goes to the worker at once, the second waits for it.
    const runs = inputs.map((i) => det.run(i, () => started++).then(() => 'ok', (e: Error) => e.message));
    expect(started).toBe(8);
    await det.release();
    const results = await Promise.all(runs);
    expect(results.slice(0, 8)).toEqual(Array(8).fill('ok'));
    expect(results.slice(8)).toEqual(Array(8).fill('inference session released'));
    await expect(det.run(inputs[0])).rejects.toThrow('inference session released');
    expect(pool(det).threads.map((t) => t.alive)).toEqual([false]);
  }, 120_000);

  it('a forced exit during a run waits for it (quiesceInference) and exits with the chosen code, not an abort', async () => {
    const { manifest: dyn } = await loadModelManifest('yolox-nano-dyn');
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    // Asynchronously (it was spawnSync): a busy machine stretches the model's load and run to
    // tens of seconds, and a test file whose event loop stands still for 60 s has vitest's calls
    // to its main process time out, an error that fails the run.
    const r = await runScript(join(dir, 'force.mts'), `import { Detector } from '${ROOT}/src/inference/detector.ts';
import { quiesceInference } from '${ROOT}/src/inference/worker-pool.ts';
const det = await Detector.load(${JSON.stringify(dyn)}, ${JSON.stringify(await resolveModelFile(dyn))}, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1, batch: { maxBatch: 16, maxWaitMs: 0 } });
const inputs = Array.from({ length: 16 }, () => det.createInput());
void Promise.all(inputs.map((i) => det.run(i, () => process.stdout.write('s'))));
// The batch of 16 was handed to the worker just now (synchronously): the exit comes during its run.
void quiesceInference(100_000).finally(() => process.exit(130));
`, {}, 110_000);
    expect(r.stdout, r.stderr).toContain('s'); // the run had started when the exit came
    expect(r.stderr).not.toMatch(/terminate called|Napi::Error/);
    expect(r.code).toBe(130);
  }, 120_000);

  it('a run in flight for stuckRunMs is logged as an error, once, and its end when it comes (a run that never returned was never said: /healthz ok, sources streaming)', async () => {
    const logs: string[] = [];
    const { openSession } = await import('../../src/inference/open-session.js');
    const det = await load(1, { warmupRuns: 0, log: (m, _f, level) => logs.push(`${level ?? 'info'}: ${m}`), openSession: (p, o) => openSession(p, { ...o, stuckRunMs: 300 }) });
    const stuck = () => logs.filter((l) => /^error: inference run has not returned after \d+ ms \(the model's run may not end\): no frame gets results meanwhile, each is dropped$/.test(l));
    const gate = new Int32Array(new SharedArrayBuffer(4));
    pool(det).threads[0].stall(gate); // the worker's thread blocks, as inside a run that does not end
    expect(det.stuckRun()).toBeUndefined();
    const run = det.run(filled(det));
    try {
      await vi.waitFor(() => expect(stuck()).toHaveLength(1), { timeout: 20_000, interval: 50 });
      await new Promise((r) => setTimeout(r, 1000));
      expect(stuck()).toHaveLength(1); // once per run, not every check
      expect(det.stuckRun()?.ms).toBeGreaterThanOrEqual(1300); // what /healthz reports (503, status: stuck)
      expect(det.stuckRun()).toMatchObject({ stuck: 1, workers: 1 });
    } finally {
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
    }
    await run;
    expect(logs.filter((l) => /^info: inference run returned after \d+ ms$/.test(l))).toHaveLength(1);
    expect(det.stuckRun()).toBeUndefined();
  }, 60_000);

  it('with several workers the stuck message says how many are stuck and that frames still go to the others (it said no frame got results while one of two ran them)', async () => {
    const logs: string[] = [];
    const { openSession } = await import('../../src/inference/open-session.js');
    const det = await load(2, { warmupRuns: 0, log: (m, _f, level) => level === 'error' && logs.push(m), openSession: (p, o) => openSession(p, { ...o, stuckRunMs: 300 }) });
    const gates = [0, 1].map(() => new Int32Array(new SharedArrayBuffer(4)));
    const open = () => {
      for (const g of gates) {
        Atomics.store(g, 0, 1);
        Atomics.notify(g, 0);
      }
    };
    const runs: Promise<unknown>[] = [];
    try {
      pool(det).threads[0].stall(gates[0]);
      runs.push(det.run(filled(det))); // to the first free worker: the stalled one
      await vi.waitFor(() => expect(logs).toHaveLength(1), { timeout: 20_000, interval: 50 });
      expect(logs[0]).toMatch(/^inference run has not returned after \d+ ms \(the model's run may not end\): 1 of 2 workers stuck: frames still get results from the other 1, fewer in time \(more are dropped as stale\)$/);
      expect(det.stuckRun()).toMatchObject({ stuck: 1, workers: 2 });
      await det.run(filled(det)); // the other worker still runs frames
      pool(det).threads[1].stall(gates[1]);
      runs.push(det.run(filled(det)));
      await vi.waitFor(() => expect(logs).toHaveLength(2), { timeout: 20_000, interval: 50 });
      expect(logs[1]).toMatch(/^inference run has not returned after \d+ ms \(the model's run may not end\): all 2 workers stuck: no frame gets results meanwhile, each is dropped$/);
      expect(det.stuckRun()).toMatchObject({ stuck: 2, workers: 2 });
    } finally {
      open();
    }
    await Promise.all(runs);
    expect(det.stuckRun()).toBeUndefined();
  }, 60_000);

  describe('a run that never returns (a Loop of 10^12 turns)', () => {
    /**
     * Runs the endless model in a process of its own (the worker left inside the run spins until
     * that process ends), releases it, and exits with 130 through exitAfterInference.
     */
    const endless = async (env: NodeJS.ProcessEnv) => {
      const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
      const model = join(dir, 'endless.onnx');
      writeModel(model, { input: { dims: [1, 3, 64, 64] }, loopTurns: 1e12, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: { names: "{0: 'person'}" } });
      const r = await runScript(join(dir, 'endless.mts'), `import { Detector } from '${ROOT}/src/inference/detector.ts';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
import { ownChild, processStart } from '${ROOT}/src/core/children.ts';
import { writeStderr } from '${ROOT}/src/core/log.ts';
import { spawn } from 'node:child_process';
// A child of argus's (an ffmpeg blocked opening a named pipe, or waiting for a camera): ended with argus.
const child = ownChild(spawn('sleep', ['300'], { stdio: 'ignore' }));
process.stdout.write('child ' + child.pid + ' ' + processStart(child.pid) + ' ');
// The run's last log lines, written as the process exits: they reach stderr's reader.
process.on('exit', (code) => writeStderr('exit handler ran with ' + code + '\\n'));
const log = (m, f, level) => level === 'error' && process.stdout.write('[' + m + ']');
const det = await Detector.load(undefined, ${JSON.stringify(model)}, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1, log });
void det.run(det.createInput(), () => process.stdout.write('started '));
const t = Date.now();
await det.release();
process.stdout.write(' released after ' + (Date.now() - t >= ${RELEASE_WAIT_MS}) + ' ');
void exitAfterInference(130, 500);
`, env, 80_000);
      // The child as the script saw it (its pid and start time: once gone, its pid may be another
      // process's, of another test or anyone's, which a kill by pid alone would end).
      const said = /^child (\d+) (\d+) /.exec(r.stdout);
      const child = { pid: Number(said?.[1]), start: said?.[2] };
      const there = () => child.start !== undefined && processStart(child.pid) === child.start;
      // Ended without the exit handlers (which end the process's children), the child would be left running.
      // (Killed, it may be a zombie for a moment, until init reaps it.)
      for (let i = 0; i < 50 && there(); i++) await new Promise((res) => setTimeout(res, 100));
      const orphaned = there();
      if (orphaned) killAll([child]);
      expect(said, r.stdout).not.toBeNull();
      expect(orphaned).toBe(false);
      expect(r.stdout.replace(/^child \d+ \d+ /, ''), r.stderr).toBe(
        `started [inference run had not returned ${RELEASE_WAIT_MS} ms after the model's release (the model's run does not end): its worker is left running, and the process ends without waiting for it as it exits] released after true `,
      );
      expect(r.stderr).toContain('exit handler ran with 130\n');
      return r;
    };

    it('the release ends after RELEASE_WAIT_MS, saying so, and the exit ends the process with its own status (130), saying why (both waited for ever: process.exit joins the worker; then a SIGKILL, 137, lost the status)', async () => {
      const r = await endless({});
      expect(r.stderr).toContain("argus: VAP_ERR_MODEL_RUN: an inference run had not ended 500 ms after the stop (the model's run does not return); exiting without waiting for it (exit status 130)");
      expect(r.code).toBe(130); // not killed (137), not left running until the test's own kill at 80 s
    }, 110_000);

    it('without the C module (ARGUS_NATIVE=0, or no compiler at install) the exit is a SIGKILL, saying so', async () => {
      const r = await endless({ ARGUS_NATIVE: '0' });
      expect(r.stderr).toContain("argus: VAP_ERR_MODEL_RUN: an inference run had not ended 500 ms after the stop (the model's run does not return); killing the process (exit status 137)");
      expect(r.code).toBeNull(); // killed by a signal
    }, 110_000);
  });

  it('an exit while a worker still opens its session (a TensorRT engine build: minutes) ends with its own status, saying why (process.exit waited for the session: no pool was live yet)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const model = join(dir, 'slow-open.onnx');
    // Some 10^4 products folded as the session opens: minutes, more than the test waits.
    writeModel(model, { input: { dims: [1, 3, 64, 64] }, openProducts: 1e4, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: { names: "{0: 'person'}" } });
    const r = await runScript(join(dir, 'slow-open.mts'), `import { Detector } from '${ROOT}/src/inference/detector.ts';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
void Detector.load(undefined, ${JSON.stringify(model)}, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1 }).then(() => process.stdout.write('opened'), (e) => process.stdout.write('failed: ' + e.message));
// The worker is starting (or already inside the session's creation): the exit waits 500 ms for it. Before, the exit
// aborted (134: terminate called after throwing Napi::Error) or waited for the session to open.
setTimeout(() => void exitAfterInference(130, 500), 1000);
`);
    expect(r.stderr).toContain("argus: VAP_ERR_MODEL_RUN: the model's session was still being opened 500 ms after the stop (a TensorRT engine build takes minutes); exiting without waiting for it (exit status 130)");
    expect(r.stdout).toBe('');
    expect(r.code).toBe(130); // not left running until the test's kill at 60 s
  }, 90_000);

  it("argus check's exit after a report that said the session was not made in time (sessionSaid): a note, not a VAP_ERR_MODEL_RUN error under a check that passed; the status kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const model = join(dir, 'slow-open.onnx');
    writeModel(model, { input: { dims: [1, 3, 64, 64] }, openProducts: 1e4, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: { names: "{0: 'person'}" } });
    const r = await runScript(join(dir, 'check-exit.mts'), `import { Detector } from '${ROOT}/src/inference/detector.ts';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
void Detector.load(undefined, ${JSON.stringify(model)}, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0, workers: 1 }).then(() => process.stdout.write('opened'), (e) => process.stdout.write('failed: ' + e.message));
setTimeout(() => void exitAfterInference(0, 500, { sessionSaid: true }), 1000);
`);
    expect(r.stderr).toContain("argus: note: the model's session was still being opened 500 ms after the stop (a TensorRT engine build takes minutes); exiting without waiting for it (exit status 0)");
    expect(r.stderr).not.toContain('VAP_ERR');
    expect(r.code).toBe(0);
  }, 90_000);

  it('a stop while the model\'s session is being made ends the start at once (VAP_ERR_INTERRUPTED), the exit with 130: it waited for the build, then ran on to stop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const model = join(dir, 'slow-open.onnx');
    writeModel(model, { input: { dims: [1, 3, 64, 64] }, openProducts: 1e4, outputs: [{ name: 'output0', dims: [1, 84, 6] }], metadata: { names: "{0: 'person'}" } });
    const r = await runScript(join(dir, 'slow-start.mts'), `import { PipelineSchema } from '${ROOT}/src/config/schema.ts';
import { createPipeline } from '${ROOT}/src/pipeline/pipeline.ts';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
const config = PipelineSchema.parse({ sources: [{ id: 'cam', uri: ${JSON.stringify(PERSON_VIDEO)} }], model: { path: ${JSON.stringify(model)}, warmupRuns: 0, workers: 1 } });
const ac = new AbortController();
setTimeout(() => ac.abort(), 1000);
const t = Date.now();
await createPipeline(config, { signal: ac.signal }).then(
  () => process.stdout.write('started'),
  (e) => process.stdout.write(e.code + ': ' + e.message + (Date.now() - t < 30_000 ? ' (at once)' : ' (late)')),
);
void exitAfterInference(130, 500);
`);
    expect(r.stdout, r.stderr).toBe("VAP_ERR_INTERRUPTED: stopped while the model's session was being made (a TensorRT engine build takes minutes), before any source started (at once)");
    expect(r.code).toBe(130);
  }, 90_000);

  it('an exit with no status given keeps the one the run set (process.exit(undefined) on Node 20 exits 0), with a handle still open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const r = await runScript(join(dir, 'exit-status.mts'), `import { createServer } from 'node:net';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
createServer().listen(0, '127.0.0.1'); // a handle that holds the process, as a broker's socket does
process.exitCode = 3;
void exitAfterInference(undefined, 500);
`);
    expect(r.code, r.stderr).toBe(3);
  }, 90_000);

  it("a start that fails on its sources (an unknown asset) while the model's session is being made says why at once, not after the build", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-w-'));
    const model = join(dir, 'slow-open.onnx');
    writeModel(model, { input: { dims: [1, 3, 64, 64] }, openProducts: 1e4, outputs: [{ name: 'output0', dims: [1, 84, 6] }], metadata: { names: "{0: 'person'}" } });
    const r = await runScript(join(dir, 'missing-source.mts'), `import { PipelineSchema } from '${ROOT}/src/config/schema.ts';
import { createPipeline } from '${ROOT}/src/pipeline/pipeline.ts';
import { exitAfterInference } from '${ROOT}/src/inference/worker-pool.ts';
const config = PipelineSchema.parse({ sources: [{ id: 'cam', uri: 'asset:no-such-clip' }], model: { path: ${JSON.stringify(model)}, warmupRuns: 0, workers: 1 } });
const t = Date.now();
await createPipeline(config).then(
  () => process.stdout.write('started'),
  (e) => process.stdout.write(e.code + (Date.now() - t < 30_000 ? ' (at once)' : ' (late)')),
);
void exitAfterInference(2, 500);
`);
    expect(r.stdout, r.stderr).toBe('VAP_ERR_ASSET_UNKNOWN (at once)');
    expect(r.code).toBe(2);
  }, 90_000);

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

describe('Batcher stamps', () => {
  it("a frame's onStart comes when the session starts its batch, not when the batch is handed to a busy session's queue", async () => {
    let startSession: (() => void) | undefined;
    const b = new Batcher<number>({ maxBatch: 1, maxWaitMs: 1000, concurrency: 2 }, (jobs, onStart) => {
      // The session is busy: the run waits in its queue until the test starts it.
      return new Promise((res) => {
        startSession = () => {
          onStart();
          res(jobs.map((_, i) => i));
        };
      });
    });
    const started: string[] = [];
    const done = b.submit(new Float32Array(1), () => started.push('a'));
    await Promise.resolve();
    expect(started).toEqual([]); // handed on, waiting for the session: not inference yet
    startSession!();
    expect(started).toEqual(['a']);
    expect(await done).toBe(0);
  });
});

describe('Batcher batch formation (virtual time)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const img = new Float32Array(1);
  /** A batcher whose runs finish when `finish()` is called; `batches` holds each run's size. */
  const setup = (maxBatch: number, maxWaitMs: number) => {
    const batches: number[] = [];
    const pending: (() => void)[] = [];
    const b = new Batcher<number>({ maxBatch, maxWaitMs }, (jobs) => {
      batches.push(jobs.length);
      return new Promise((res) => pending.push(() => res(jobs.map((_, i) => i))));
    });
    return { b, batches, finish: () => pending.splice(0).forEach((f) => f()) };
  };

  it('a partial batch waits until its oldest frame has waited maxWaitMs, then runs with what came meanwhile', async () => {
    const { b, batches, finish } = setup(4, 10);
    const first = b.submit(img);
    vi.advanceTimersByTime(6);
    const second = b.submit(img);
    vi.advanceTimersByTime(3);
    expect(batches).toEqual([]);
    expect(b.waiting).toBe(2);
    vi.advanceTimersByTime(1); // 10 ms after the first frame, 4 after the second
    expect(batches).toEqual([2]);
    finish();
    expect(await Promise.all([first, second])).toEqual([0, 1]);
  });

  it('a full batch runs at once, without waiting for maxWaitMs', () => {
    const { b, batches } = setup(3, 1000);
    for (let i = 0; i < 3; i++) void b.submit(img);
    expect(batches).toEqual([3]);
    expect(b.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0); // the wait timer was cleared
  });

  it('frames that arrive while the run is busy join the next batch, which goes when the run ends if they have waited long enough', async () => {
    const { b, batches, finish } = setup(4, 10);
    void b.submit(img);
    vi.advanceTimersByTime(10);
    expect(batches).toEqual([1]);
    // While the first batch runs (concurrency 1), three frames come; past maxWaitMs they still wait for the run.
    for (let i = 0; i < 3; i++) void b.submit(img);
    vi.advanceTimersByTime(50);
    expect(batches).toEqual([1]);
    expect(b.waiting).toBe(3);
    finish();
    await vi.waitFor(() => expect(batches).toEqual([1, 3]));
    expect(b.sizes).toEqual([1, 3]);
  });
  it('close() rejects the frames waiting for a batch at once, and later ones; the batch running finishes', async () => {
    const { b, batches, finish } = setup(2, 1000);
    const running = [b.submit(img), b.submit(img)];
    const waiting = b.submit(img); // behind the running batch
    b.close(new Error('closed'));
    await expect(waiting).rejects.toThrow('closed');
    await expect(b.submit(img)).rejects.toThrow('closed');
    finish();
    expect(await Promise.all(running)).toEqual([0, 1]);
    expect(batches).toEqual([2]);
    // A partial batch waiting on its timer: rejected at once, the timer cleared.
    const other = setup(2, 1000);
    const partial = other.b.submit(img);
    expect(vi.getTimerCount()).toBe(1);
    other.b.close(new Error('closed'));
    expect(vi.getTimerCount()).toBe(0);
    await expect(partial).rejects.toThrow('closed');
    expect(other.batches).toEqual([]);
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
    const { threads } = pool(det);
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
    expect(pool(det).restarts).toBe(1);
  }, 120_000);
});

describe('a worker that keeps dying', () => {
  it(`is started again at most ${MAX_WORKER_RESTARTS} times; after that the runs fail instead of restarting forever`, async () => {
    const { log, next } = logWatch();
    const det = await load(1, { log });
    const s = pool(det);
    const input = filled(det);
    for (let k = 1; k <= MAX_WORKER_RESTARTS; k++) {
      const replaced = next(/^inference worker replaced$/);
      s.threads[0].crash();
      await replaced;
      expect(s.restarts).toBe(k);
      await det.run(input); // the replacement works
    }
    const gaveUp = next(new RegExp(`after ${MAX_WORKER_RESTARTS} restarts; not starting another`));
    s.threads[0].crash();
    await gaveUp;
    expect(s.restarts).toBe(MAX_WORKER_RESTARTS);
    expect(s.threads[0].alive).toBe(false);
    await expect(det.run(input)).rejects.toThrow(/inference worker exited/);
  }, 120_000);
});

describe('a replacement worker that fails to start', () => {
  it('is tried again with backoff, and the pool recovers once it can start (the slot stayed down for good, ending a one-worker pipeline)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-restart-'));
    const model = join(dir, 'model.onnx');
    copyFileSync(MODEL, model);
    const { log, next } = logWatch();
    const det = await load(1, { log }, manifest, model);
    const s = pool(det);
    const input = filled(det);
    // The model file is away when the replacement starts.
    renameSync(model, `${model}.away`);
    const failed = next(/^inference worker could not be restarted: .*; trying again in 500 ms$/);
    s.threads[0].crash();
    await failed;
    const run = det.run(input); // waits for the replacement instead of failing
    renameSync(`${model}.away`, model);
    const replaced = next(/^inference worker replaced$/);
    await replaced;
    const out = await run;
    expect(out.outputs.length).toBeGreaterThan(0);
    expect(s.restarts).toBe(1);
    expect(s.threads[0].alive).toBe(true);
  }, 120_000);
});

describe('fast files wait behind cameras for the session', () => {
  it('enqueue: a bulk run goes last, any other before the first bulk one; each class keeps its order', () => {
    const q: { id: string; bulk?: boolean; overtaken?: number }[] = [];
    for (const [id, bulk] of [['f1', true], ['c1', false], ['f2', true], ['c2', false]] as const) enqueue(q, { id, bulk });
    expect(q.map((x) => x.id)).toEqual(['c1', 'c2', 'f1', 'f2']);
  });

  it(`a file beside cameras that always have a frame ready is not starved: at most ${MAX_OVERTAKES} runs queued after its frame go first`, () => {
    // One session; three cameras whose next frame is queued as soon as theirs is taken (it got no run at all).
    const q: { id: string; bulk?: boolean; overtaken?: number }[] = [];
    enqueue(q, { id: 'file', bulk: true });
    for (const c of ['c1', 'c2', 'c3']) enqueue(q, { id: c });
    const ran: string[] = [];
    for (let i = 0; i < 15; i++) {
      const job = q.shift()!;
      ran.push(job.id);
      enqueue(q, { id: job.id, bulk: job.bulk });
    }
    // At most MAX_OVERTAKES runs queued after the file's frame go before it: it runs at least
    // once in (the 3 ahead of it) + MAX_OVERTAKES + 1.
    expect(ran.slice(0, MAX_OVERTAKES + 1)).toEqual(['c1', 'c2', 'c3', 'c1', 'file']);
    const at = ran.flatMap((id, i) => (id === 'file' ? [i] : []));
    expect(at.length).toBe(2);
    expect(at[1] - at[0]).toBeLessThanOrEqual(3 + MAX_OVERTAKES + 1);
  });

  it('a worker pool: with the session busy, a camera frame queued after a fast file frame runs first', async () => {
    const det = await load(1);
    const gate = new Int32Array(new SharedArrayBuffer(4));
    pool(det).threads[0].stall(gate);
    const started: string[] = [];
    const runs = [
      det.run(filled(det), () => started.push('first')), // in flight, held by the stall
      det.run(filled(det), () => started.push('file'), true),
      det.run(filled(det), () => started.push('camera')),
    ];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual(['first']);
    Atomics.store(gate, 0, 1);
    Atomics.notify(gate, 0);
    await Promise.all(runs);
    expect(started).toEqual(['first', 'camera', 'file']);
  }, 120_000);

  it('one session on the main thread: the same order', async () => {
    const det = await load(0);
    const started: string[] = [];
    const runs = [det.run(filled(det), () => started.push('first')), det.run(filled(det), () => started.push('file'), true), det.run(filled(det), () => started.push('camera'))];
    await Promise.all(runs);
    expect(started).toEqual(['first', 'camera', 'file']);
  }, 120_000);

  it('the batcher: a batch is taken cameras first', async () => {
    const batches: string[][] = [];
    let release: (() => void) | undefined;
    const b = new Batcher<number>({ maxBatch: 2, maxWaitMs: 0, concurrency: 1 }, (jobs, onStart) => {
      onStart();
      batches.push(jobs.map((j) => (j.bulk ? 'file' : 'camera')));
      return new Promise((res) => (release = () => res(jobs.map((_, i) => i))));
    });
    const img = new Float32Array(1);
    const first = b.submit(img);
    const rest = [b.submit(img, undefined, true), b.submit(img, undefined, true), b.submit(img)];
    release!();
    await first;
    await new Promise((r) => setImmediate(r));
    release!();
    await new Promise((r) => setImmediate(r));
    release!();
    await Promise.all(rest);
    expect(batches).toEqual([['camera'], ['camera', 'file'], ['file']]);
  });

  it('the batcher: five sources that always have a frame waiting leave a file its turn (it got 0 runs in a second)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const runs: Record<string, number> = {};
      const b = new Batcher<number>({ maxBatch: 2, maxWaitMs: 5 }, (jobs, onStart) => {
        onStart();
        return new Promise((res) => setTimeout(() => res(jobs.map((_, i) => i)), 20));
      });
      const img = new Float32Array(1);
      const source = (id: string, bulk: boolean) => {
        // Until close() rejects the frames still waiting: the end of the test.
        const loop = (): void => void b.submit(img, () => (runs[id] = (runs[id] ?? 0) + 1), bulk).then(loop, () => undefined);
        loop();
      };
      for (let i = 0; i < 5; i++) source(`cam${i}`, false);
      source('file', true);
      for (let t = 0; t < 1000; t += 5) await vi.advanceTimersByTimeAsync(5);
      b.close(new Error('closed'));
      expect(runs.file).toBeGreaterThanOrEqual(3);
      expect(runs.cam0).toBeGreaterThan(runs.file);
    } finally {
      vi.useRealTimers();
    }
  });
});
