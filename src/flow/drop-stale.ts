import { Observable, type ObservableInput, type OperatorFunction, type Subscription, from } from 'rxjs';

export interface DropStaleOptions<T> {
  /**
   * Called with each value that is dropped because a newer one arrived while the stage was
   * busy (and, on teardown, with a value still waiting). Use it to count drops and release
   * buffers. Default: nothing.
   */
  onDrop?: (value: T) => void;
}

/**
 * Runs `project` for one value at a time. While it is busy, only the newest arriving value
 * waits; an older waiting value is dropped (reported to `onDrop`). When the current run ends,
 * the waiting value starts. So at most one value runs and one waits: nothing can queue up and
 * latency cannot grow, whatever the rate of the source.
 *
 * Completion waits for the running and the waiting value. Errors from the source or from
 * `project` (thrown, or from the observable it returns) pass through. Unsubscribing tears down the running inner subscription.
 */
export function dropStale<T, R>(
  project: (value: T) => ObservableInput<R>,
  options: DropStaleOptions<T> = {},
): OperatorFunction<T, R> {
  const onDrop = options.onDrop;
  return (source) =>
    new Observable<R>((subscriber) => {
      let waiting: { value: T } | undefined;
      let inner: Subscription | undefined;
      let busy = false;
      let sourceDone = false;

      const start = (value: T): void => {
        busy = true;
        let done = false;
        let input: ObservableInput<R>;
        try {
          input = project(value);
        } catch (e) {
          // Like rxjs's own flattening operators: a throwing project is an error, not an exception.
          subscriber.error(e);
          return;
        }
        const sub = from(input).subscribe({
          next: (r) => subscriber.next(r),
          error: (e) => subscriber.error(e),
          complete: () => {
            done = true;
            busy = false;
            inner = undefined;
            next();
          },
        });
        // A synchronous inner has already completed (and may have started the next one).
        if (!done) inner = sub;
      };

      const next = (): void => {
        if (waiting) {
          const { value } = waiting;
          waiting = undefined;
          start(value);
        } else if (sourceDone) {
          subscriber.complete();
        }
      };

      const outer = source.subscribe({
        next: (value) => {
          if (!busy) {
            start(value);
            return;
          }
          if (waiting) onDrop?.(waiting.value);
          waiting = { value };
        },
        error: (e) => subscriber.error(e),
        complete: () => {
          sourceDone = true;
          if (!busy && !waiting) subscriber.complete();
        },
      });

      return () => {
        outer.unsubscribe();
        inner?.unsubscribe();
        if (waiting) {
          const { value } = waiting;
          waiting = undefined;
          onDrop?.(value);
        }
      };
    });
}
