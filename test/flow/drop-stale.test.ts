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

  it('unsubscribing tears down the source and the running stage, and reports the waiting value and the running one (no result out) as dropped', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const dropped: string[] = [];
      const inner = cold('-----(x|)');
      const src = cold('ab-------|');
      expectObservable(src.pipe(dropStale(() => inner, { onDrop: (v) => dropped.push(v) })), '^--!').toBe('---');
      expectSubscriptions(src.subscriptions).toBe('^--!');
      expectSubscriptions(inner.subscriptions).toBe('^--!');
      flush();
      expect(dropped).toEqual(['a', 'b']);
    });
  });

  it('on teardown, a running value whose result is out is not dropped; one done but held behind it is, one done with no result is not', () => {
    scheduler.run(({ cold, flush }) => {
      const dropped: string[] = [];
      const seen: string[] = [];
      // a emits at 1 and runs on; b is done at 2 with a result held behind a; c ends at 1 with none.
      const runs: Record<string, ReturnType<typeof cold>> = { a: cold('-x----|'), b: cold('--(y|)'), c: cold('-|') };
      const src = cold('abc--------|');
      const sub = src.pipe(dropStale((v: string) => runs[v], { concurrency: 3, onDrop: (v) => dropped.push(v) })).subscribe((r) => seen.push(r as string));
      scheduler.schedule(() => sub.unsubscribe(), 4);
      flush();
      expect(seen).toEqual(['x']);
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

  it('concurrency 2: two values run at once and results come out in start order, a later one held until the earlier is done', () => {
    scheduler.run(({ cold, flush }) => {
      // a takes 5 frames, b 2: b is done at 3 but is held (and keeps its place) until a is out at
      // 5; c, arrived at 3, waits until then and takes 1 frame.
      const took: Record<string, number> = { a: 5, b: 2, c: 1 };
      const stage = (v: string) => timer(took[v]).pipe(map(() => v.toUpperCase()));
      const seen: string[] = [];
      cold('ab-c--|')
        .pipe(dropStale(stage, { concurrency: 2 }))
        .subscribe({ next: (v) => seen.push(`${scheduler.now()}:${v}`), complete: () => seen.push(`${scheduler.now()}:|`) });
      flush();
      expect(seen).toEqual(['5:A', '5:B', '6:C', '6:|']);
    });
  });

  it('concurrency 2: never more than two in the stage and one waiting; the newest waiting value wins', () => {
    scheduler.run(({ flush }) => {
      const dropped: number[] = [];
      let inside = 0;
      let most = 0;
      const entered: number[] = [];
      const left: number[] = [];
      const src = timer(0, 1); // one value every frame
      const stage = (v: number) => timer(v % 2 === 0 ? 7 : 3).pipe(map(() => v));
      const out = src.pipe(
        dropStale(stage, {
          concurrency: 2,
          onDrop: (v) => dropped.push(v),
          onEnter: (v) => {
            entered.push(v);
            most = Math.max(most, ++inside);
          },
          onLeave: (v) => {
            left.push(v);
            inside--;
          },
        }),
      );
      const emitted: number[] = [];
      const sub = out.subscribe((v) => emitted.push(v));
      scheduler.schedule(() => sub.unsubscribe(), 40);
      flush();
      expect(most).toBe(2);
      // In start order, whatever finished first.
      expect(emitted).toEqual([...emitted].sort((a, b) => a - b));
      expect(emitted).toEqual(entered.slice(0, emitted.length));
      // A value leaves only once it is out, in order; every entered value left (teardown included).
      expect(left.slice(0, emitted.length)).toEqual(emitted);
      expect([...left].sort((a, b) => a - b)).toEqual(entered);
      expect(inside).toBe(0);
      // Every value is passed on or dropped, once: those never entered, the last one waiting at
      // teardown, and those running then with no result out.
      const all = [...emitted, ...dropped].sort((a, b) => a - b);
      expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i));
      expect(all.length).toBeGreaterThanOrEqual(40);
      expect(emitted.length).toBeGreaterThan(40 / 7); // two at a time: more than one 7-frame run's worth
    });
  });

  it('concurrency 2: a value that finishes while the one before it still runs keeps its place (no third starts)', () => {
    const starts: string[] = [];
    const finish: Record<string, Subject<string>> = { a: new Subject(), b: new Subject(), c: new Subject() };
    const src = new Subject<string>();
    const got: string[] = [];
    src
      .pipe(
        dropStale(
          (v: string) => {
            starts.push(v);
            return finish[v];
          },
          { concurrency: 2 },
        ),
      )
      .subscribe((v) => got.push(v));
    src.next('a');
    src.next('b');
    src.next('c');
    expect(starts).toEqual(['a', 'b']);
    finish.b.next('B');
    finish.b.complete();
    expect(got).toEqual([]); // held behind a
    expect(starts).toEqual(['a', 'b']); // b still takes its place
    finish.a.next('A');
    finish.a.complete();
    expect(got).toEqual(['A', 'B']);
    expect(starts).toEqual(['a', 'b', 'c']);
  });

  it('a value handed over from onLeave, as a place frees, wins over the older waiting one (dropped, counted): the newest frame is the one worth the place', () => {
    const src = new Subject<string>();
    const stages = new Map<string, Subject<string>>();
    const started: string[] = [];
    const dropped: string[] = [];
    let handed = false;
    src
      .pipe(
        dropStale(
          (v: string) => {
            started.push(v);
            const s = new Subject<string>();
            stages.set(v, s);
            return s;
          },
          // A native-rate file's next frame, due and complete in the pipe, is read as the stage frees.
          { onDrop: (v) => dropped.push(v), onLeave: () => !handed && ((handed = true), src.next('c')) },
        ),
      )
      .subscribe();
    src.next('a'); // starts
    src.next('b'); // waits
    stages.get('a')!.complete();
    expect(started).toEqual(['a', 'c']);
    expect(dropped).toEqual(['b']);
  });

  it('refuses a concurrency below 1', () => {
    expect(() => dropStale(slowStage(1), { concurrency: 0 })).toThrow(RangeError);
  });

  it('a concurrency that changes while the stage runs: grown, the waiting value starts at once; shrunk, those inside finish and none is dropped for it', () => {
    scheduler.run(({ cold, hot, flush }) => {
      // Every value takes 4 frames. Concurrency 1, then 2 at frame 2 (b, waiting behind a, starts
      // then), then 1 at frame 3 (a and b finish; c, arrived at 3, waits until both are out).
      const dropped: string[] = [];
      const starts: string[] = [];
      const seen: string[] = [];
      const concurrency = hot('1-23', { 1: 1, 2: 2, 3: 1 });
      const stage = (v: string) => {
        starts.push(`${scheduler.now()}:${v}`);
        return timer(4).pipe(map(() => v.toUpperCase()));
      };
      cold('ab-c-------|')
        .pipe(dropStale(stage, { concurrency, onDrop: (v) => dropped.push(v) }))
        .subscribe({ next: (v) => seen.push(`${scheduler.now()}:${v}`), complete: () => seen.push(`${scheduler.now()}:|`) });
      flush();
      expect(starts).toEqual(['0:a', '2:b', '6:c']);
      expect(seen).toEqual(['4:A', '6:B', '10:C', '11:|']);
      expect(dropped).toEqual([]);
    });
  });

  it('an observable concurrency counts 1 until its first value, and an invalid value is an error', () => {
    scheduler.run(({ cold, hot, expectObservable }) => {
      expectObservable(cold('ab---|').pipe(dropStale(slowStage(2), { concurrency: hot('---x', { x: 2 }) }))).toBe('--A-B|');
      expectObservable(cold('a----|').pipe(dropStale(slowStage(2), { concurrency: hot('-x', { x: 0 }) }))).toBe('-#', undefined, new RangeError('dropStale: concurrency must be an integer ≥ 1, got 0'));
    });
  });
});
