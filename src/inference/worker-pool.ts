import { Worker } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';
import type { ExecutionProviderName } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { canHardExit, hardExit } from '../core/native.js';
import { writeStderr } from '../core/log.js';
import type { TensorInfo } from '../models/tensor-info.js';
import type { ProviderFailure } from './provider-fallback.js';
import { attemptList, providerAttempts } from './providers.js';
import { enqueue, ortSessionOptions, releasedError, type ModelSession, type RunOutput, type RunRequest, type SessionOptions, type StuckRun } from './session.js';

interface Pending {
  req: RunRequest;
  onStart?: () => void;
  bulk?: boolean;
  /** Runs queued ahead of it since it was queued (bulk runs only: enqueue). */
  overtaken?: number;
  resolve: (r: RunOutput[]) => void;
  reject: (e: Error) => void;
}

/** What a worker reports once its session is open (see session-worker.js). */
interface Ready {
  type: 'ready';
  provider: ExecutionProviderName;
  failed: ProviderFailure[];
  inputs: TensorInfo[];
  outputs: TensorInfo[];
}

/** A worker thread holding one session; one run at a time. */
class SessionThread {
  private current: Pending | undefined;
  /** Settles when the run in flight does (so the session is never torn down under a run). */
  private settled: Promise<void> = Promise.resolve();
  private settle: () => void = () => {};
  private nextId = 0;
  /** When the run in flight was posted (performance.now()), and whether it was logged as stuck. */
  startedAt = 0;
  stuckLogged = false;
  private dead: Error | undefined;
  onIdle: () => void = () => {};
  /** Called once when the worker dies (crash or exit) other than by release(). */
  onDeath: (e: Error) => void = () => {};
  private releasing = false;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (m: { id: number; outputs?: RunOutput[]; error?: string }) => {
      const p = this.current;
      if (!p || m.id !== this.nextId) return;
      this.current = undefined;
      worker.unref(); // idle: an unreleased detector does not keep the process alive
      this.settle();
      if (m.error !== undefined) p.reject(new ArgusError(ErrorCodes.MODEL_RUN, `ONNX Runtime run failed: ${m.error}`));
      else p.resolve(m.outputs!);
      this.onIdle();
    });
    const die = (e: Error) => {
      const first = this.dead === undefined;
      this.dead ??= e;
      if (first && !this.releasing) this.onDeath(e);
      const p = this.current;
      this.current = undefined;
      this.settle();
      p?.reject(this.dead);
      this.onIdle();
    };
    worker.on('error', die);
    worker.on('exit', (code) => die(new Error(`inference worker exited (code ${code})`)));
  }

  /** Starts a worker that opens the model with the first of `attempts` that works. */
  static start(modelPath: string, attempts: readonly ExecutionProviderName[], o: SessionOptions): Promise<{ thread: SessionThread; ready: Ready }> {
    // Exiting: no worker starts (process.exit would wait for its session to open).
    if (quiescing) return Promise.reject(releasedError());
    const worker = new Worker(new URL('./session-worker.js', import.meta.url), {
      workerData: { modelPath, attempts: attemptList(attempts, o), options: ortSessionOptions(o), logLevel: ort.env.logLevel },
    });
    const started = new Promise<{ thread: SessionThread; ready: Ready }>((resolve, reject) => {
      const fail = (e: Error) => {
        void worker.terminate();
        reject(e);
      };
      const exited = (code: number) => fail(new Error(`inference worker exited (code ${code}) before the model was loaded`));
      worker.once('error', fail);
      worker.once('exit', exited);
      worker.once('message', (m: Ready | { type: 'fatal'; message: string }) => {
        worker.off('error', fail);
        worker.off('exit', exited);
        if (m.type === 'fatal') return fail(new Error(m.message));
        worker.unref();
        resolve({ thread: new SessionThread(worker), ready: m });
      });
    });
    const settled = started.then(
      () => undefined,
      () => undefined,
    );
    opening.add(settled);
    void settled.then(() => opening.delete(settled));
    return started;
  }

  get busy(): boolean {
    return this.current !== undefined;
  }
  get alive(): boolean {
    return this.dead === undefined;
  }

  /** Posts the run to the worker (or rejects it on a dead one); `onStart` is called as it is posted. */
  start(p: Pending): void {
    if (this.dead) return p.reject(this.dead);
    this.current = p;
    this.startedAt = performance.now();
    this.stuckLogged = false;
    this.settled = new Promise((r) => (this.settle = r));
    this.worker.ref(); // a run in flight keeps the process alive
    p.onStart?.();
    const { req } = p;
    this.worker.postMessage({ id: ++this.nextId, name: req.name, type: req.type, data: req.parts ?? req.data, dims: req.dims, outputNames: req.outputNames });
  }

  /** Tests: the worker exits by itself between two runs, as after a fatal error. */
  crash(): void {
    this.worker.postMessage('exit');
  }

  /**
   * Tests: the worker's thread blocks (as inside a long native run) until `gate[0]` is made
   * non-zero and notified; messages posted meanwhile wait for it.
   */
  stall(gate: Int32Array): void {
    this.worker.postMessage({ stall: gate });
  }

  /** Waits for the run in flight, if any (terminating a worker inside a native run aborts the process). */
  idle(): Promise<void> {
    return this.settled;
  }

  async release(): Promise<void> {
    this.releasing = true;
    await this.settled;
    if (!this.dead) {
      const exited = new Promise((r) => this.worker.once('exit', r));
      this.worker.ref(); // the caller awaits the release: keep the process alive until it is done
      this.worker.postMessage('release');
      let timer: NodeJS.Timeout | undefined;
      // Releasing a GPU session can take a moment; ending the worker inside it would abort.
      await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
      clearTimeout(timer);
    }
    await this.worker.terminate();
  }
}

/** Workers a pool starts again at most, over its life. */
export const MAX_WORKER_RESTARTS = 10;
/** The longest wait before trying again to start a replacement worker. */
const RESTART_RETRY_MAX_MS = 10_000;

/**
 * Sessions on worker threads. Inference never blocks the event loop (ffmpeg reads, Kafka,
 * WebSocket and /metrics go on meanwhile), and with more than one worker a CPU runs several
 * frames or batches at once: on a small CPU, two one-thread sessions get more frames through
 * than one two-thread session, because one small model's operators do not keep two cores busy.
 */
export class WorkerPool implements ModelSession {
  readonly sharedInputs = true;
  private readonly queue: Pending[] = [];
  private closed = false;

  /** Workers started again after one died. */
  restarts = 0;
  /** Replacements starting now, or waiting to try again: runs wait for them rather than fail. */
  private replacing = 0;
  /** Replacements that failed to start (each is tried again, up to MAX_WORKER_RESTARTS in all). */
  private failedStarts = 0;
  private readonly retries = new Set<NodeJS.Timeout>();
  /** Looks for runs in flight longer than stuckRunMs. */
  private readonly stuckCheck: NodeJS.Timeout;

  private constructor(
    private readonly threads: SessionThread[],
    private readonly ready: Ready,
    private readonly modelPath: string,
    private readonly o: SessionOptions,
  ) {
    for (const t of threads) this.watch(t);
    // Opened while the process exits (quiesceInference waited for its workers to open): it takes
    // no run, as a worker inside one would hold the exit.
    if (quiescing) this.closed = true;
    this.stuckMs = o.stuckRunMs ?? STUCK_RUN_MS;
    this.stuckCheck = setInterval(() => this.logStuck(), Math.min(1000, this.stuckMs / 2)).unref();
  }
  /** A run in flight this long is stuck (logStuck, stuckRun), ms. */
  private readonly stuckMs: number;

  stuckRun(): StuckRun | undefined {
    const t = performance.now();
    let oldest: number | undefined;
    let stuck = 0;
    for (const th of this.threads) {
      if (!th.busy) continue;
      const ms = t - th.startedAt;
      if (ms < this.stuckMs) continue;
      stuck++;
      if (oldest === undefined || ms > oldest) oldest = ms;
    }
    return oldest === undefined ? undefined : { ms: oldest, stuck, workers: this.threads.length };
  }

  /**
   * A run in flight for `stuckMs` is logged, once, as an error: a model whose run never returns
   * (or a wedged GPU) stopped every source's results, each frame dropped as stale, with nothing
   * said — /healthz answered ok and the sources were 'streaming'. Its end, if it comes, is logged
   * too. With several workers it says how many are stuck: frames go on to the others (it said
   * "no frame gets results" while one of two still ran them).
   */
  private logStuck(): void {
    const log = this.o.log ?? (() => {});
    for (const t of this.threads) {
      if (!t.busy || t.stuckLogged) continue;
      const ms = performance.now() - t.startedAt;
      if (ms < this.stuckMs) continue;
      t.stuckLogged = true;
      const { stuck, workers } = this.stuckRun() ?? { stuck: 1, workers: this.threads.length };
      const what =
        stuck < workers
          ? `${stuck} of ${workers} workers stuck: frames still get results from the other ${workers - stuck}, fewer in time (more are dropped as stale)`
          : `${workers > 1 ? `all ${workers} workers stuck: ` : ''}no frame gets results meanwhile, each is dropped`;
      log(`inference run has not returned after ${Math.round(ms)} ms (the model's run may not end): ${what}`, { code: ErrorCodes.MODEL_RUN, provider: this.provider, stuckWorkers: stuck, workers }, 'error');
    }
  }

  static async open(modelPath: string, o: SessionOptions): Promise<WorkerPool> {
    // The first worker finds the provider (with the fallback); the others start on it.
    // The others get that provider alone: a session that cannot have it fails the load rather
    // than quietly running on another one.
    const first = await SessionThread.start(modelPath, providerAttempts(o.providers), o);
    const rest = await Promise.allSettled(Array.from({ length: o.workers - 1 }, () => SessionThread.start(modelPath, [first.ready.provider], o)));
    const started = [first.thread, ...rest.flatMap((r) => (r.status === 'fulfilled' ? [r.value.thread] : []))];
    const failure = rest.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) {
      await Promise.all(started.map((t) => t.release()));
      throw failure.reason;
    }
    const pool = new WorkerPool(started, first.ready, modelPath, o);
    live.add(pool);
    return pool;
  }

  private watch(t: SessionThread): void {
    t.onIdle = () => {
      if (t.stuckLogged) {
        t.stuckLogged = false;
        this.o.log?.(`inference run returned after ${Math.round(performance.now() - t.startedAt)} ms`, { provider: this.provider });
      }
      this.pump();
    };
    t.onDeath = (e) => void this.replace(t, e);
  }

  /**
   * A worker died (its run, if any, was rejected): start another in its place, on the same
   * provider, so one failure does not leave the pipeline with fewer (or no) sessions. A
   * replacement that cannot start is reported and the slot stays down.
   */
  private async replace(dead: SessionThread, e: Error): Promise<void> {
    if (this.closed) return;
    const log = this.o.log ?? (() => {});
    if (this.restarts >= MAX_WORKER_RESTARTS) {
      // Something kills every worker: stop trying; the runs fail and so, after a while, the sources.
      log(`inference worker died (${e.message}) after ${this.restarts} restarts; not starting another`, { provider: this.provider }, 'error');
      this.pump();
      return;
    }
    log(`inference worker died (${e.message}); starting another`, { provider: this.provider }, 'warn');
    this.replacing++;
    try {
      const { thread } = await SessionThread.start(this.modelPath, [this.provider], this.o);
      if (this.closed) return void (await thread.release());
      this.watch(thread);
      this.threads[this.threads.indexOf(dead)] = thread;
      this.restarts++;
      log('inference worker replaced', { provider: this.provider, restarts: this.restarts });
    } catch (err) {
      // A start that failed (the model file briefly away, memory short) is tried again with
      // backoff: the slot stayed down for good, and with one worker the pipeline then ended
      // after one transient failure. Runs wait meanwhile, as for any replacement.
      this.failedStarts++;
      if (this.failedStarts >= MAX_WORKER_RESTARTS) {
        log(`inference worker could not be restarted: ${(err as Error).message}; ${this.failedStarts} tries failed, not trying again`, { provider: this.provider }, 'error');
      } else {
        const delay = Math.min(RESTART_RETRY_MAX_MS, 500 * 2 ** (this.failedStarts - 1));
        log(`inference worker could not be restarted: ${(err as Error).message}; trying again in ${delay} ms`, { provider: this.provider }, 'error');
        this.replacing++;
        const t = setTimeout(() => {
          this.retries.delete(t);
          this.replacing--;
          void this.replace(dead, e);
        }, delay);
        this.retries.add(t);
      }
    } finally {
      this.replacing--;
      this.pump();
    }
  }

  get provider(): ExecutionProviderName {
    return this.ready.provider;
  }
  get failed(): readonly ProviderFailure[] {
    return this.ready.failed;
  }
  get inputs(): readonly TensorInfo[] {
    return this.ready.inputs;
  }
  get outputs(): readonly TensorInfo[] {
    return this.ready.outputs;
  }
  get slots(): number {
    return this.threads.length;
  }
  /** Whether a run is in flight. */
  get busy(): boolean {
    return this.threads.some((t) => t.busy);
  }

  run(req: RunRequest, onStart?: () => void, bulk?: boolean): Promise<RunOutput[]> {
    if (this.closed) return Promise.reject(releasedError());
    return new Promise((resolve, reject) => {
      enqueue(this.queue, { req, onStart, bulk, resolve, reject });
      this.pump();
    });
  }

  /** Refuses new runs and waits for those in flight; queued ones are rejected. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.stuckCheck);
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
    for (const p of this.queue.splice(0)) p.reject(releasedError());
    await Promise.all(this.threads.map((t) => t.idle()));
  }

  /** Hands queued runs to free workers, in arrival order (fast files' after the others: enqueue). */
  private pump(): void {
    if (this.closed) return;
    while (this.queue.length > 0) {
      // A free live session; else wait for a busy one or a replacement; with every worker dead
      // and none starting, the runs fail (start() on a dead worker rejects).
      const t = this.threads.find((x) => !x.busy && x.alive) ?? (this.replacing === 0 && this.threads.every((x) => !x.alive) ? this.threads[0] : undefined);
      if (!t) return;
      t.start(this.queue.shift()!);
    }
  }

  /**
   * Waits (at most RELEASE_WAIT_MS) for the runs in flight, then ends the workers. A run that has
   * not returned by then (a model whose run never ends) leaves its worker as it is (ending a
   * worker inside a native run aborts the process): the pool stays among those quiesceInference
   * waits for, so exitAfterInference ends the process without joining it. The orderly stop of `argus run`
   * waited for that run for ever, its summary never written.
   */
  async release(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const quiet = await Promise.race([this.close().then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), RELEASE_WAIT_MS)))]);
    clearTimeout(timer);
    if (!quiet) {
      const stuck = this.threads.filter((t) => t.busy);
      this.o.log?.(`inference run had not returned ${RELEASE_WAIT_MS} ms after the model's release (the model's run does not end): its worker is left running, and the process ends without waiting for it as it exits`, { code: ErrorCodes.MODEL_RUN, provider: this.provider, runs: stuck.length }, 'error');
      await Promise.all(this.threads.filter((t) => !t.busy).map((t) => t.release()));
      return;
    }
    live.delete(this);
    await Promise.all(this.threads.map((t) => t.release()));
  }
}

/** How long a run may be in flight before it is logged as stuck (a slow model takes seconds, not this). */
export const STUCK_RUN_MS = 30_000;

/** How long a pool's release waits for the runs in flight before it leaves their workers running. */
export const RELEASE_WAIT_MS = 10_000;

/** Pools not yet released, for quiesceInference. */
const live = new Set<WorkerPool>();
/**
 * Workers opening their session (SessionThread.start), settled either way, for quiesceInference:
 * a worker inside ONNX Runtime's session creation (a TensorRT engine build: minutes) held
 * process.exit as a run does, since no pool was live yet to wait for.
 */
const opening = new Set<Promise<void>>();
/** The process is exiting (quiesceInference): no worker starts, and a pool opened now takes no run. */
let quiescing = false;

/**
 * Before a forced exit: stops every worker pool taking runs (and workers starting), and waits
 * (at most `timeoutMs`) for the runs in flight and the sessions being opened. Exiting while a
 * worker is inside a native run aborts the process (onnxruntime-node throws into a torn-down
 * environment), which would turn exit 130 into 134.
 */
export async function quiesceInference(timeoutMs: number): Promise<boolean> {
  quiescing = true;
  let timer: NodeJS.Timeout | undefined;
  const quiet = await Promise.race([Promise.all([...[...live].map((s) => s.close()), ...opening]).then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)))]);
  clearTimeout(timer);
  return quiet;
}

/**
 * Ends the process with `code` (process.exitCode when undefined) once the inference runs in flight
 * have ended (quiesceInference, at most `timeoutMs`). A run still going then (a model whose run
 * never returns: a Loop of 10^12 iterations), or a worker still opening its session (a TensorRT
 * engine being built), holds its worker thread inside ONNX Runtime, and process.exit waits to join
 * that thread for ever: Ctrl-C twice left `argus run` at 40 % CPU, only SIGKILL ended it. So argus
 * says so, runs the 'exit' handlers as process.exit would, and ends without the join (hardExit:
 * _exit, with the status the run set). Where that C module is not built it kills itself (SIGKILL:
 * exit status 137, the run's own status lost).
 *
 * `sessionSaid`: the command has said already that the model's session was not made in time and
 * that it ends without it (argus check's WARNING): a session still being opened then is a note
 * (`argus: note: …`), not a VAP_ERR_MODEL_RUN error line after a check that passed. A run that
 * has not returned, or an exit that cannot keep the status (SIGKILL), stays an error.
 */
export async function exitAfterInference(code: number | undefined, timeoutMs: number, o: { sessionSaid?: boolean } = {}): Promise<void> {
  const quiet = await quiesceInference(timeoutMs);
  // (process.exit(undefined) is process.exit(0) on Node 20: an explicit undefined resets
  // process.exitCode. A CLI error's exit 2 came out as 0 once a socket held the process.)
  const status = code ?? (typeof process.exitCode === 'number' ? process.exitCode : 0);
  if (quiet) return void process.exit(status);
  const hard = canHardExit();
  const openingOnly = opening.size > 0 && ![...live].some((p) => p.busy);
  const what = openingOnly ? `the model's session was still being opened ${timeoutMs} ms after the stop (a TensorRT engine build takes minutes)` : `an inference run had not ended ${timeoutMs} ms after the stop (the model's run does not return)`;
  writeStderr(
    `argus: ${openingOnly && hard && o.sessionSaid ? 'note' : ErrorCodes.MODEL_RUN}: ${what}; ${
      hard
        ? `exiting without waiting for it (exit status ${status}): Node's own exit waits for a thread inside ONNX Runtime until it returns`
        : `killing the process (exit status 137), which cannot end a thread inside ONNX Runtime (dist/native/hard-exit.node, which exits with the run's status instead, is not built)`
    }\n`,
  );
  // What process.exit does first, hardExit and the kill skip: the process's 'exit' handlers end
  // argus's children (ffmpeg: one blocked opening a named pipe or waiting for its camera was left
  // running, orphaned, holding a one-session camera or a V4L2 device from the next start) and
  // write the log lines a slow stderr reader has not taken yet (this one, the run's summary).
  // The log's writes are write(2)s, done when the handlers return: _exit loses none of them.
  try {
    process.emit('exit', status);
  } catch {
    // (a handler's failure must not keep the process alive)
  }
  if (!hardExit(status)) process.kill(process.pid, 'SIGKILL');
}
