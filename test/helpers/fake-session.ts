import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelManifestSchema } from '../../src/config/schema.js';
import { Detector } from '../../src/inference/detector.js';
import type { ModelSession, RunOutput, RunRequest } from '../../src/inference/session.js';
import { writeConstantModel } from './onnx.js';

/** Model input size of the fake model (frames are letterboxed to it). */
export const FAKE_SIZE = 64;
const ROWS = 4;

interface HeldRun {
  req: RunRequest;
  resolve: () => void;
  reject: (e: Error) => void;
}

/**
 * A model session with deterministic outputs and timing the test controls, for unit tests of
 * the pipeline's wiring, dropping and accounting without ONNX Runtime's cost or jitter.
 *
 * Output: an end-to-end layout `[1, 4, 6]` (x1, y1, x2, y2, score, class) with one box whose
 * x1 and y1 are the first value of the input tensor (the first pixel's first channel, scale 1),
 * so every detection says which frame's tensor it came from. Timing: `hold = true` keeps each
 * run pending until the test calls `finish()` or `fail()`; otherwise runs settle on the next
 * microtask. `failNext(n)` makes the next n runs reject. `limit` (with `hold`): at most that many
 * runs are started at once, as on a pool of that many sessions; the others wait in arrival order
 * and start (`onStart`) as one settles.
 */
export class FakeSession implements ModelSession {
  readonly provider = 'cpu' as const;
  readonly failed = [];
  readonly slots = 1;
  readonly sharedInputs = false;
  hold = false;
  limit = Infinity;
  /** Runs waiting for one of `limit` to settle (with `hold`), oldest first. */
  readonly waiting: (() => void)[] = [];
  private failures = 0;
  /** Runs started and not settled, oldest first (with `hold`). */
  readonly held: HeldRun[] = [];
  /** The first input value of every run, in order. */
  readonly seen: number[] = [];
  released = false;

  constructor(
    readonly inputs: ModelSession['inputs'],
    readonly outputs: ModelSession['outputs'],
  ) {}

  failNext(n: number): void {
    this.failures = n;
  }

  run(req: RunRequest, onStart?: () => void): Promise<RunOutput[]> {
    if (this.hold && this.held.length >= this.limit) return new Promise((resolve, reject) => this.waiting.push(() => this.run(req, onStart).then(resolve, reject)));
    onStart?.();
    const v = req.data[0];
    this.seen.push(v);
    const out = (): RunOutput[] => {
      const data = new Float32Array(ROWS * 6);
      data.set([v, v, v + 8, v + 8, 0.9, 0]);
      return [{ type: 'float32', data }];
    };
    const fail = this.failures > 0;
    if (fail) this.failures--;
    if (!this.hold) return fail ? Promise.reject(new Error('fake inference failure')) : Promise.resolve(out());
    return new Promise<RunOutput[]>((resolve, reject) => {
      this.held.push({ req, resolve: () => (fail ? reject(new Error('fake inference failure')) : resolve(out())), reject });
    });
  }

  /** Settles the oldest held run (as it was set to: success, or failure with `failNext`). */
  finish(): void {
    const r = this.held.shift();
    if (!r) throw new Error('FakeSession.finish: no run is held');
    r.resolve();
    this.waiting.shift()?.();
  }

  /** Settles the held run at `index` (0: the oldest), so that a later run can finish first. */
  finishAt(index: number): void {
    const [r] = this.held.splice(index, 1);
    if (!r) throw new Error(`FakeSession.finishAt: no held run at ${index}`);
    r.resolve();
    this.waiting.shift()?.();
  }

  /** Fails the oldest held run. */
  fail(message = 'fake inference failure'): void {
    const r = this.held.shift();
    if (!r) throw new Error('FakeSession.fail: no run is held');
    r.reject(new Error(message));
    this.waiting.shift()?.();
  }

  async release(): Promise<void> {
    this.released = true;
  }
}

/**
 * A real `Detector` (pre-processing recipe, decoder, batcher) over a `FakeSession`. The ONNX
 * file only describes the model (input `[1,3,64,64]`, output `[1,4,6]`); it never runs.
 */
export async function fakeDetector(): Promise<{ detector: Detector; session: FakeSession }> {
  const dir = mkdtempSync(join(tmpdir(), 'argus-fake-'));
  const path = join(dir, 'fake.onnx');
  writeConstantModel(path, { inputShape: [1, 3, FAKE_SIZE, FAKE_SIZE], outputShape: [1, ROWS, 6], outputName: 'output0' });
  const manifest = ModelManifestSchema.parse({
    name: 'fake',
    version: '1',
    file: 'fake.onnx',
    preprocess: { width: FAKE_SIZE, height: FAKE_SIZE, channelOrder: 'rgb', scale: 1, letterbox: { align: 'top-left', pad: 0 } },
    decoder: { type: 'end2end' },
    labels: ['person', 'car'],
  });
  let session: FakeSession | undefined;
  const detector = await Detector.load(manifest, path, {
    providers: ['cpu'],
    intraOpThreads: 1,
    warmupRuns: 0,
    openSession: async () => {
      // The fake declares the same inputs and outputs as the file (what a real session reads from it).
      const { openSession } = await import('../../src/inference/open-session.js');
      const real = await openSession(path, { providers: ['cpu'], intraOpThreads: 1, workers: 0, deviceId: 0, log: () => {} });
      session = new FakeSession(real.inputs, real.outputs);
      await real.release();
      return session;
    },
  });
  return { detector, session: session! };
}
