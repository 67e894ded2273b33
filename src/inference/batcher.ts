import { enqueue } from './session.js';

/**
 * Cross-source dynamic batching: frames from several sources join one run. A batch starts
 * when `maxBatch` frames wait or the oldest has waited `maxWaitMs`, whichever comes first.
 * Frames are taken in arrival order (a fast file's behind the others'), so no source starves (each source has at most one frame
 * in flight anyway: the drop-stale stage sits in front). Up to `concurrency` runs at a time
 * (one per session); while all are busy, frames keep joining the next batch.
 */
export interface BatchJob<R> {
  image: Float32Array;
  onStart?: () => void;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
  at: number;
  /** A fast file's frame: waits behind the others (enqueue). */
  bulk?: boolean;
  /** Frames queued ahead of it since it was queued (bulk frames only: enqueue). */
  overtaken?: number;
}

export interface BatcherOptions {
  maxBatch: number;
  maxWaitMs: number;
  /** Batches that may run at once. Default 1. */
  concurrency?: number;
}

export class Batcher<R> {
  private readonly queue: BatchJob<R>[] = [];
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Set by close(): what waiting and later frames are rejected with. */
  private closed: Error | undefined;
  /** Batch sizes run so far (for stats and tests). */
  readonly sizes: number[] = [];

  constructor(
    private readonly o: BatcherOptions,
    /** Runs `jobs` as one batch; returns each job's result in order. Calls `onStart` when the session really starts it (after any wait for one). */
    private readonly runBatch: (jobs: BatchJob<R>[], onStart: () => void) => Promise<R[]>,
  ) {}

  submit(image: Float32Array, onStart?: () => void, bulk?: boolean): Promise<R> {
    if (this.closed) return Promise.reject(this.closed);
    return new Promise<R>((resolve, reject) => {
      enqueue(this.queue, { image, onStart, resolve, reject, at: performance.now(), bulk });
      this.pump();
    });
  }

  /** Rejects the frames waiting for a batch, and every later one, with `reason`; batches already running finish. */
  close(reason: Error): void {
    this.closed = reason;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const j of this.queue.splice(0)) j.reject(reason);
  }

  get waiting(): number {
    return this.queue.length;
  }

  private pump(): void {
    if (this.running >= (this.o.concurrency ?? 1) || this.queue.length === 0) return;
    // The oldest frame (fast files' frames queue behind cameras', so it may not be the first).
    let oldest = this.queue[0].at;
    for (const j of this.queue) if (j.at < oldest) oldest = j.at;
    const waited = performance.now() - oldest;
    if (this.queue.length >= this.o.maxBatch || waited >= this.o.maxWaitMs) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      void this.runNow();
      return;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, this.o.maxWaitMs - waited);
    }
  }

  private async runNow(): Promise<void> {
    this.running++;
    const jobs = this.queue.splice(0, this.o.maxBatch);
    this.sizes.push(jobs.length);
    if (this.sizes.length > 10_000) this.sizes.splice(0, 5_000);
    try {
      // The frames' inferStart is when a session takes the batch: with every session busy (or a
      // worker being replaced) the batch waits in the session's queue, which is not inference.
      const run = this.runBatch(jobs, () => {
        for (const j of jobs) j.onStart?.();
      });
      this.pump(); // another session may take the next batch now
      const results = await run;
      jobs.forEach((j, i) => j.resolve(results[i]));
    } catch (e) {
      for (const j of jobs) j.reject(e);
    } finally {
      this.running--;
      this.pump();
    }
  }
}
