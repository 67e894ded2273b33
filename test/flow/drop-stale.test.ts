import { Observable, of, Subject, throwError, timer, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { dropStale } from '../../src/flow/drop-stale.js';

let scheduler: TestScheduler;
beforeEach(() => {
  scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

/** A stage that takes `busy` frames of virtual time per value, then emits it upper-cased. */
const slowStage = (busy: number) => (v: string) => timer(busy).pipe(map(() => v.toUpperCase()));

describe('dropStale (marbles)', () => {
  it('passes every value through when the stage keeps up', () => {
    scheduler.run(({ cold, expectObservable }) => {
      const src = cold('a---b---c---|');
      expectObservable(src.pipe(dropStale(slowStage(2)))).toBe('--A---B---C-|');
    });
  });

  it('busy stage: keeps only the newest waiting value and counts the rest as dropped', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const dropped: string[] = [];
      // Stage takes 5 frames; b, c, d arrive while a is running: b and c are dropped, d waits.
      const src = cold('abcd------|');
      expectObservable(src.pipe(dropStale(slowStage(5), { onDrop: (v) => dropped.push(v) }))).toBe('-----A----(D|)');
      flush();
      expect(dropped).toEqual(['b', 'c']);
    });
  });

  it('never holds more than one waiting value, however fast the source', () => {
    scheduler.run(({ flush }) => {
      let dropped = 0;
      let maxWaiting = 0;
      let running = 0;
      const src = timer(0, 1); // one value every frame, forever
      const stage = (v: number) =>
        new Observable<number>((s) => {
          running++;
          maxWaiting = Math.max(maxWaiting, running);
          const t = timer(10).subscribe(() => {
            running--;
            s.next(v);
            s.complete();
          });
          return () => t.unsubscribe();
        });
      const out = src.pipe(dropStale(stage, { onDrop: () => dropped++ }));
      const emitted: [number, number][] = [];
      const sub = out.subscribe((v) => emitted.push([scheduler.now(), v]));
      scheduler.schedule(() => sub.unsubscribe(), 35);
      flush();
      // One result every 10 frames, each from a value that arrived at most one frame before its run started.
      expect(emitted.map(([t]) => t)).toEqual([10, 20, 30]);
      emitted.forEach(([t, v]) => expect(t - 10 - v).toBeLessThanOrEqual(1));
      expect(maxWaiting).toBe(1); // one run at a time
      expect(dropped).toBeGreaterThanOrEqual(18);
    });
  });

  it('completion waits for the running and the waiting value', () => {
    scheduler.run(({ cold, expectObservable }) => {
      const src = cold('ab|');
      expectObservable(src.pipe(dropStale(slowStage(3)))).toBe('---A--(B|)');
    });
  });

  it('completes at once when the source completes empty', () => {
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('|').pipe(dropStale(slowStage(3)))).toBe('|');
    });
  });

  it('an error from the source passes through and the running stage is torn down', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const inner = cold('----(x|)');
      const src = cold('a-#');
      expectObservable(src.pipe(dropStale(() => inner))).toBe('--#');
      expectSubscriptions(inner.subscriptions).toBe('^-!');
    });
  });

  it('an error from the stage passes through', () => {
    scheduler.run(({ cold, expectObservable }) => {
      const src = cold('a-b-c|');
      expectObservable(src.pipe(dropStale((v) => (v === 'b' ? throwError(() => 'bad') : of(v))))).toBe('a-#', undefined, 'bad');
    });
  });

  it('a project function that throws is an error on the error channel (as exhaustMap does), and the source is torn down', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const src = cold('a-b-c|');
      const project = (v: string) => {
        if (v === 'b') throw new Error('bad project');
        return of(v);
      };
      expectObservable(src.pipe(dropStale(project))).toBe('a-#', undefined, new Error('bad project'));
      expectSubscriptions(src.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing tears down the source and the running stage, and releases the waiting value', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const dropped: string[] = [];
      const inner = cold('-----(x|)');
      const src = cold('ab-------|');
      expectObservable(src.pipe(dropStale(() => inner, { onDrop: (v) => dropped.push(v) })), '^--!').toBe('---');
      expectSubscriptions(src.subscriptions).toBe('^--!');
      expectSubscriptions(inner.subscriptions).toBe('^--!');
      flush();
      expect(dropped).toEqual(['b']);
    });
  });

  it('handles stages that complete synchronously', () => {
    const seen: number[] = [];
    const src = new Subject<number>();
    src.pipe(dropStale((v) => of(v * 2))).subscribe((v) => seen.push(v));
    src.next(1);
    src.next(2);
    src.next(3);
    expect(seen).toEqual([2, 4, 6]);
  });
});
