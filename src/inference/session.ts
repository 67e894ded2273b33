import type * as ort from 'onnxruntime-node';
import type { ExecutionProviderName } from '../config/schema.js';
import type { LogFn } from '../core/log.js';
import type { OutputData } from '../models/decoder.js';
import type { TensorInfo } from '../models/tensor-info.js';
import type { ProviderFailure } from './provider-fallback.js';
import type { ProviderOptions } from './providers.js';

// The contract every model session keeps: inline-session.ts (one session on the calling thread)
// and worker-pool.ts (sessions on worker threads) implement it; open-session.ts picks one.

/**
 * How many runs queued after a bulk run (a fast file's frame) may go before it: cameras come
 * first, but a file beside N cameras that always have a frame ready still gets one run in about
 * N + MAX_OVERTAKES + 1 (it got none: the cameras' next frames were always queued ahead of it).
 */
export const MAX_OVERTAKES = 4;

/**
 * Queues `item`: a bulk one at the end; any other before the bulk ones that have let fewer than
 * MAX_OVERTAKES runs go first (each of them counts one more), after those that have not. So
 * cameras are served before fast files, each class keeps its order, and no file starves.
 */
export function enqueue<T extends { bulk?: boolean; overtaken?: number }>(queue: T[], item: T): void {
  if (item.bulk) {
    queue.push(item);
    return;
  }
  // After the last bulk run that has waited enough, and after every non-bulk one.
  let at = queue.length;
  for (let i = queue.length - 1; i >= 0; i--) {
    const q = queue[i];
    if (!q.bulk || (q.overtaken ?? 0) >= MAX_OVERTAKES) break;
    at = i;
  }
  for (let i = at; i < queue.length; i++) queue[i].overtaken = (queue[i].overtaken ?? 0) + 1;
  queue.splice(at, 0, item);
}

export interface RunRequest {
  name: string;
  /** The model input's element type; `data` holds float32 values either way (fp16 is narrowed by the session). */
  type: 'float32' | 'float16';
  data: Float32Array;
  /**
   * Worker sessions only: the batch's images, concatenated (and zero-padded up to `dims`) by
   * the worker as it copies them, instead of `data` (one copy, off the main thread).
   */
  parts?: Float32Array[];
  dims: number[];
  outputNames: readonly string[];
}

/** One output, in the model's output order; fp16 outputs come widened to float32. */
export interface RunOutput {
  type: string;
  data: OutputData;
}

export interface SessionOptions extends ProviderOptions {
  providers: readonly ExecutionProviderName[];
  intraOpThreads: number;
  /** ONNX Runtime's intra-op threads may busy-wait between operators (its default); false: they sleep. Default true. */
  allowSpinning?: boolean;
  /** With spinning: at most this long, µs, before a thread sleeps. Default ONNX Runtime's. */
  spinMicros?: number;
  /** Sessions on worker threads; 0: one session on the calling (main) thread. */
  workers: number;
  /** Worker sessions: a run in flight this long is logged as an error, once (default STUCK_RUN_MS). */
  stuckRunMs?: number;
  log?: LogFn;
}

/**
 * An ONNX Runtime model session, on the main thread or as a pool of worker threads, each
 * with its own session. Runs are queued in arrival order and start as soon as a session is free.
 */
export interface ModelSession {
  readonly provider: ExecutionProviderName;
  /** Providers tried before `provider` that failed, with ONNX Runtime's reason. */
  readonly failed: readonly ProviderFailure[];
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** Runs that can execute at the same time. */
  readonly slots: number;
  /** Inputs in shared memory reach a worker without a copy on the main thread. */
  readonly sharedInputs: boolean;
  /** `onStart` is called when a session actually starts the run (for the frame's stamps). */
  /**
   * `bulk`: a frame of a file read as fast as possible, which loses nothing by waiting: it waits
   * behind every other queued run (cameras, native-rate files), which keep their order.
   */
  run(req: RunRequest, onStart?: () => void, bulk?: boolean): Promise<RunOutput[]>;
  release(): Promise<void>;
  /**
   * Worker sessions: how long the oldest run in flight has gone, ms, once that is `stuckRunMs` or
   * more (a run that may never end), with how many workers are so stuck; else undefined. (A
   * session on the main thread cannot be asked while it runs: its run holds the thread.)
   */
  stuckRun?(): StuckRun | undefined;
}

/** Runs in flight past the stuck bound (ModelSession.stuckRun). */
export interface StuckRun {
  /** How long the oldest has gone, ms. */
  ms: number;
  /** Workers inside such a run, of `workers`: the others still run frames. */
  stuck: number;
  workers: number;
}

/** What a run asked of a released session (or detector) is rejected with. */
export const releasedError = (): Error => new Error('inference session released');

/** ONNX Runtime's session options (less the providers), the same on every thread. */
export const ortSessionOptions = (o: SessionOptions): ort.InferenceSession.SessionOptions => ({
  intraOpNumThreads: o.intraOpThreads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  // ONNX Runtime's session config entries session.intra_op.allow_spinning and .spin_duration_us.
  ...(o.allowSpinning === false
    ? { extra: { session: { intra_op: { allow_spinning: '0' } } } }
    : o.spinMicros !== undefined
      ? { extra: { session: { intra_op: { allow_spinning: '1', spin_duration_us: String(o.spinMicros) } } } }
      : {}),
  // EP load failures are reported by us, once, with the fallback taken.
  logSeverityLevel: 4,
});
