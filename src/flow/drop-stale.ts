import { Observable, type ObservableInput, type OperatorFunction, type Subscription, from, isObservable } from 'rxjs';

export interface DropStaleOptions<T> {
  /**
   * Called with each value that is dropped because a newer one arrived while the stage was
   * busy, and, on teardown, with a value still waiting and each running one that has passed
   * on no result (its results are never seen): every value is either passed on or dropped.
   * Use it to count drops and release buffers. Default: nothing.
   */
  onDrop?: (value: T) => void;
  /**
   * How many values may be in the stage at once (running, or done and waiting for an earlier
   * one to finish so that results stay in order). Default 1. An observable changes it while the
   * stage runs (1 until its first value): a larger stage starts the waiting value at once; a
   * smaller one lets the values inside finish (none is dropped for it) and starts no other
   * until fewer than the new concurrency are inside.
   */
  concurrency?: number | Observable<number>;
  /** Called when a value enters the stage (its project is about to run). */
  onEnter?: (value: T) => void;
  /**
   * Called once per `onEnter`, when the value has left the stage: its results were all passed
   * on, in order, or it was torn down or failed.
   */
  onLeave?: (value: T) => void;
}

/** One value in the stage: its subscription, and the results held until every earlier value's are out. */
interface Run<T, R> {
  value: T;
  /** Results held until every earlier value's are out (made only when one must wait). */
  held?: R[];
  done: boolean;
  /** A result of this value was passed on. */
  out?: boolean;
  sub?: Subscription;
}

/**
 * Runs `project` for up to `concurrency` values at a time (default one). While the stage is
 * full, only the newest arriving value waits; an older waiting value is dropped (reported to
 * `onDrop`). When a place frees (or the concurrency grows), the waiting value starts. So at most `concurrency` values are
 * in the stage and one waits: nothing can queue up and latency cannot grow, whatever the rate
 * of the source. Results come out in the order the values started (a value that finishes
 * before an earlier one is held, and keeps its place in the stage, until the earlier one is
 * done), so a stage run on several workers at once still delivers in order.
 *
 * Completion waits for the running and the waiting values. Errors from the source or from
 * `project` (thrown, or from the observable it returns) pass through. Unsubscribing tears down
 * the running inner subscriptions; results held then are discarded, and a value that passed
 * on none is reported to `onDrop`.
 */
export function dropStale<T, R>(
  project: (value: T) => ObservableInput<R>,
  options: DropStaleOptions<T> = {},
): OperatorFunction<T, R> {
  const { onDrop, onEnter, onLeave } = options;
  const given = options.concurrency ?? 1;
  const concurrency$ = isObservable(given) ? given : undefined;
  if (!concurrency$) checkConcurrency(given as number);
  return (source) =>
    new Observable<R>((subscriber) => {
      let concurrency = concurrency$ ? 1 : (given as number);
      let waiting: { value: T } | undefined;
      const runs: Run<T, R>[] = []; // in start order; runs[0] passes its results on as they come
      let sourceDone = false;
      let closed = false;

      const leave = (run: Run<T, R>): void => onLeave?.(run.value);

      /** Passes on the results of the runs at the head that are done, then those of the new head. */
      const drain = (): void => {
        while (runs.length > 0 && runs[0].done) {
          const run = runs.shift()!;
          const head = runs[0];
          const held = head?.held;
          if (held) {
            head.held = undefined;
            head.out = true;
            for (const r of held) subscriber.next(r);
          }
          leave(run);
        }
      };

      const start = (value: T): void => {
        const run: Run<T, R> = { value, done: false };
        runs.push(run);
        onEnter?.(value);
        let input: ObservableInput<R>;
        try {
          input = project(value);
        } catch (e) {
          // Like rxjs's own flattening operators: a throwing project is an error, not an exception.
          subscriber.error(e);
          return;
        }
        const sub = from(input).subscribe({
          next: (r) => {
            if (runs[0] === run) {
              run.out = true;
              subscriber.next(r);
            } else (run.held ??= []).push(r);
          },
          error: (e) => subscriber.error(e),
          complete: () => {
            run.done = true;
            run.sub = undefined;
            drain();
            next();
          },
        });
        // A synchronous inner has already completed (and may have started the next one).
        if (!run.done) run.sub = sub;
      };

      const next = (): void => {
        if (closed) return;
        if (waiting && runs.length < concurrency) {
          const { value } = waiting;
          waiting = undefined;
          start(value);
        } else if (sourceDone && !waiting && runs.length === 0) {
          subscriber.complete();
        }
      };

      const resized = concurrency$?.subscribe({
        next: (n) => {
          try {
            checkConcurrency(n);
          } catch (e) {
            subscriber.error(e);
            return;
          }
          concurrency = n;
          next();
        },
        error: (e) => subscriber.error(e),
      });

      const outer = source.subscribe({
        next: (value) => {
          if (runs.length < concurrency && !waiting) {
            start(value);
            return;
          }
          if (waiting) onDrop?.(waiting.value);
          waiting = { value };
        },
        error: (e) => subscriber.error(e),
        complete: () => {
          sourceDone = true;
          next();
        },
      });

      return () => {
        closed = true;
        resized?.unsubscribe();
        outer.unsubscribe();
        for (const run of runs.splice(0)) {
          run.sub?.unsubscribe();
          leave(run);
          // Still running, or done with results that were waiting for an earlier one: never seen.
          if (!run.out && (!run.done || run.held?.length)) onDrop?.(run.value);
        }
        if (waiting) {
          const { value } = waiting;
          waiting = undefined;
          onDrop?.(value);
        }
      };
    });
}

function checkConcurrency(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`dropStale: concurrency must be an integer ≥ 1, got ${n}`);
}
