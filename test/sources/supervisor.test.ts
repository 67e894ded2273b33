// The reconnect supervisor in virtual time: each ffmpeg run is a cold marble observable (an
// injected run factory), every timer runs on the TestScheduler, and the monotonic clock is the
// scheduler's. One marble frame is 1 ms.
import { defer, map, type Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { ArgusError, ErrorCodes } from '../../src/core/errors.js';
import type { Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { FfmpegInputSpec } from '../../src/sources/ffmpeg-args.js';
import type { FfmpegSourceOptions } from '../../src/sources/ffmpeg-source.js';
import type { ReconnectPolicy } from '../../src/sources/health.js';
import type { StreamInfo } from '../../src/sources/stderr-probe.js';
import { supervisedSource, type SupervisedSourceOptions } from '../../src/sources/supervised-source.js';

let scheduler: TestScheduler;
beforeEach(() => {
  scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
});

const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const LB = letterbox(64, 48, 32, 32, 'top-left');
const policy: ReconnectPolicy = { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 0, healthyResetMs: 1000 };
const live: FfmpegInputSpec = { url: 'rtsp://cam/s', kind: 'rtsp', rate: 'native', loop: false, fps: 10 };
const file = (over: Partial<FfmpegInputSpec> = {}): FfmpegInputSpec => ({ url: '/videos/a.ts', kind: 'file', rate: 'native', loop: false, fps: 10, ...over });
const exitErr = new ArgusError(ErrorCodes.SOURCE_EXIT, 'source "cam": ffmpeg exited with code 1\nConnection refused');

interface Options {
  over?: Partial<SupervisedSourceOptions>;
  /** What each fake ffmpeg reports before its first frame; null: nothing (it never opened the input). */
  info?: StreamInfo | null;
}

/**
 * A supervised source whose n-th ffmpeg run is `runs[n]`: each marble value becomes a frame
 * numbered as ffmpegSource numbers them (`seqStart` + k; `ptsStart` + k / fps).
 */
function supervise(runs: Observable<string>[], { over = {}, info = { width: 64, height: 48, fps: 10, format: 'mpegts' } }: Options = {}) {
  const calls: FfmpegSourceOptions[] = [];
  const transitions: { at: number; state: string; reason: string; attempt: number; code?: string; detail?: string }[] = [];
  const src = supervisedSource({
    id: 'cam',
    input: live,
    output,
    ffmpegPath: 'ffmpeg',
    reconnect: policy,
    watchdog: { startTimeoutMs: 500, stallFactor: 10, stallMinMs: 300, stallMaxMs: 60_000 },
    scheduler,
    onTransition: ({ state, reason, attempt, code, detail }) => transitions.push({ at: scheduler.now(), state, reason, attempt, ...(code ? { code } : {}), ...(detail ? { detail } : {}) }),
    run: (opts) => {
      const n = calls.push(opts) - 1;
      if (!runs[n]) throw new Error(`no run ${n} in this test`);
      return defer(() => {
        if (info) opts.onStreamInfo?.(info, LB);
        const fps = opts.input.fps ?? info?.fps ?? 10;
        let base = 0;
        return runs[n].pipe(
          map((_v, k): Frame => {
            if (k === 0) base = typeof opts.ptsStart === 'function' ? opts.ptsStart() : (opts.ptsStart ?? 0);
            return { source: 'cam', seq: (opts.seqStart ?? 0) + k, pts: base + k / fps, data: Buffer.alloc(0), letterbox: LB, stamps: {} as Frame['stamps'], producedBy: 'captured', release: () => {} };
          }),
        );
      });
    },
    ...over,
  });
  return { src, calls, transitions, seqs: src.pipe(map((f) => f.seq)) };
}
const states = (ts: { state: string }[]) => ts.map((t) => t.state);
/** `n` frames 100 ms apart, then `end` ('#', '|' or nothing) 100 ms after the last. */
const every100 = (n: number, end = '') => Array(n).fill('a').join(' 99ms ') + (end ? ` 99ms ${end}` : '');

describe('backoff', () => {
  it('delays double from initialDelayMs with ±jitter (deterministic random), capped at maxDelayMs', () => {
    scheduler.run(({ cold, expectSubscriptions, flush }) => {
      const runs = [...Array(5)].map(() => cold('#', undefined, exitErr)).concat(cold('a'));
      const rand = [0, 0.5, 0.75, 0.25, 0.5];
      const h = supervise(runs, { over: { reconnect: { ...policy, jitter: 0.2 }, random: () => rand.shift()! } });
      scheduler.schedule(() => sub.unsubscribe(), 2000);
      const sub = h.src.subscribe();
      flush();
      // 100 × 0.8 = 80; 200 × 1.0; 400 × 1.1 = 440; 800 capped to 400, × 0.9 = 360; 400 × 1.0.
      expectSubscriptions(runs[0].subscriptions).toBe('(^!)');
      expectSubscriptions(runs[1].subscriptions).toBe('80ms (^!)');
      expectSubscriptions(runs[2].subscriptions).toBe('280ms (^!)');
      expectSubscriptions(runs[3].subscriptions).toBe('720ms (^!)');
      expectSubscriptions(runs[4].subscriptions).toBe('1080ms (^!)');
      expectSubscriptions(runs[5].subscriptions).toBe('1480ms ^ 519ms !');
      const reconnecting = h.transitions.filter((t) => t.state === 'reconnecting');
      expect(reconnecting.map((t) => t.attempt)).toEqual([1, 2, 3, 4, 5]);
      expect(reconnecting.map((t) => t.reason.replace(/.*; /, ''))).toEqual(['retry 1 in 0.1 s', 'retry 2 in 0.2 s', 'retry 3 in 0.4 s', 'retry 4 in 0.4 s', 'retry 5 in 0.4 s']);
      expect(reconnecting[0]).toMatchObject({ code: 'VAP_ERR_SOURCE_EXIT', detail: 'Connection refused' });
    });
  });

  it("a transition's reason: the error's first line and the line that says why (the relay's camera line, else the last), redacted before it is cut to 400 characters", () => {
    scheduler.run(({ cold, flush }) => {
      const long = new ArgusError(ErrorCodes.SOURCE_EXIT, `\n${'x'.repeat(360)}\nupload to https://admin:hunter2secret@hook.example/path/that/is/long`);
      const relayed = new ArgusError(ErrorCodes.SOURCE_EXIT, 'source "cam": ffmpeg exited with code 1 for rtsp://***@cam/x\n[tcp] connected\nInvalid data\ncamera: cam:554: ECONNREFUSED');
      const h = supervise([cold('#', undefined, long), cold('#', undefined, relayed), cold('a')]);
      scheduler.schedule(() => sub.unsubscribe(), 400);
      const sub = h.src.subscribe();
      flush();
      const [a, b] = h.transitions.filter((t) => t.state === 'reconnecting').map((t) => t.reason);
      expect(a).not.toContain('hunter2');
      expect(a.startsWith(`${'x'.repeat(360)}: upload to https://***@`)).toBe(true); // the blank first line skipped
      expect(a.length).toBeLessThanOrEqual(400 + '; retry 1 in 0.1 s'.length);
      expect(b).toBe('source "cam": ffmpeg exited with code 1 for rtsp://***@cam/x: camera: cam:554: ECONNREFUSED; retry 2 in 0.2 s');
    });
  });

  it('the attempt count resets after streaming for healthyResetMs: the next failure waits initialDelayMs again', () => {
    scheduler.run(({ cold, expectSubscriptions, flush }) => {
      // Run 1 streams from 100 to 1200 (1100 ms ≥ 1000), then ffmpeg dies at 1300.
      const runs = [cold('#', undefined, exitErr), cold(every100(12, '#'), undefined, exitErr), cold('#', undefined, exitErr), cold('-')];
      const h = supervise(runs);
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 2000);
      flush();
      expect(h.transitions.slice(1, 5)).toMatchObject([
        { at: 0, state: 'reconnecting', attempt: 1 },
        { at: 100, state: 'streaming', attempt: 1, reason: 'frames again after 1 attempt' },
        { at: 1300, state: 'reconnecting', attempt: 1, reason: 'source "cam": ffmpeg exited with code 1: Connection refused; retry 1 in 0.1 s' },
        { at: 1400, state: 'reconnecting', attempt: 2 },
      ]);
      expectSubscriptions(runs[3].subscriptions).toBe('1600ms ^ 399ms !');
    });
  });

  it('a short burst of frames does not reset it (the first frame does not): the next failure backs off further', () => {
    scheduler.run(({ cold, expectSubscriptions, flush }) => {
      const runs = [cold('#', undefined, exitErr), cold(every100(3, '#'), undefined, exitErr), cold('-')];
      const h = supervise(runs);
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 1000);
      flush();
      expect(h.transitions.slice(1, 4)).toMatchObject([
        { at: 0, state: 'reconnecting', attempt: 1 },
        { at: 100, state: 'streaming', attempt: 1 },
        { at: 400, state: 'reconnecting', attempt: 2, reason: 'source "cam": ffmpeg exited with code 1: Connection refused; retry 2 in 0.2 s' },
      ]);
      expectSubscriptions(runs[2].subscriptions).toBe('600ms ^ 399ms !');
    });
  });
});

describe('watchdog', () => {
  it('no first frame within startTimeoutMs: restarted (no stalled state); then frames stop: stalled, reconnecting, resubscribed; seq goes on', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const runs = [cold('-'), cold('a 99ms a'), cold('a')];
      const h = supervise(runs);
      expectObservable(h.seqs, '^ 1999ms !').toBe('600ms a 99ms b 1199ms c', { a: 0, b: 1, c: 2 });
      flush();
      expectSubscriptions(runs[0].subscriptions).toBe('^ 499ms !'); // killed at the start timeout
      expectSubscriptions(runs[1].subscriptions).toBe('600ms ^ 1099ms !'); // last frame at 700, + 10 periods
      expectSubscriptions(runs[2].subscriptions).toBe('1900ms ^ 99ms !');
      expect(h.transitions).toEqual([
        { at: 0, state: 'starting', reason: 'started', attempt: 0 },
        { at: 500, state: 'reconnecting', reason: 'source "cam": no frame within 0.5 s of starting; retry 1 in 0.1 s', attempt: 1, code: 'VAP_ERR_SOURCE_TIMEOUT' },
        { at: 600, state: 'streaming', reason: 'frames again after 1 attempt', attempt: 1 },
        { at: 1700, state: 'stalled', reason: 'no frame for 1.0 s', attempt: 1 },
        { at: 1700, state: 'reconnecting', reason: 'source "cam": no frame for 1.0 s; retry 2 in 0.2 s', attempt: 2, code: 'VAP_ERR_SOURCE_STALLED' },
        { at: 1900, state: 'streaming', reason: 'frames again after 2 attempts', attempt: 2 },
        { at: 2000, state: 'stopped', reason: 'stopped', attempt: 2 },
      ]);
    });
  });

  it.each([
    ['stallFactor periods of the rate ffmpeg reports in the first run (2 fps → 5 s)', undefined, 2, 5000, 'no frame for 5.0 s'],
    ['never less than stallMinMs (100 fps → 0.1 s → 0.3 s)', 100, 100, 300, 'no frame for 0.3 s'],
    // A stream can declare any rate: 10 periods of 0.001 fps would be 2.8 hours without a frame.
    ['never more than stallMaxMs (a declared 0.001 fps → 10 000 s → 60 s)', undefined, 0.001, 60_000, 'no frame for 60.0 s'],
  ])('stall timeout: %s', (_name, fps, reported, at, reason) => {
    scheduler.run(({ cold, flush }) => {
      const h = supervise([cold('a'), cold('-')], { over: { input: { ...live, fps } }, info: { width: 64, height: 48, fps: reported } });
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), at + 50);
      flush();
      expect(h.transitions.find((t) => t.state === 'stalled')).toEqual({ at, state: 'stalled', reason, attempt: 0 });
    });
  });

  it('a file at rate fast is not watched: a long pause is no stall; a native-rate file is', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const fast = supervise([cold('a 5000ms a |')], { over: { input: file({ rate: 'fast' }) } });
      expectObservable(fast.seqs).toBe('a 5000ms b |', { a: 0, b: 1 });
      const native = supervise([cold('a 5000ms a |'), cold('-')], { over: { input: file() } });
      expectObservable(native.seqs, '^ 1200ms !').toBe('a', { a: 0 });
      flush();
      expect(states(fast.transitions)).toEqual(['starting', 'streaming', 'ended']);
      expect(states(native.transitions)).toEqual(['starting', 'streaming', 'stalled', 'reconnecting', 'stopped']);
    });
  });
});

describe('resolution changes', () => {
  it('are reported at most once a second: a stream that changes size on every frame gives one report at once, then one a second with the changes counted, and the last at the end of its second', () => {
    scheduler.run(({ cold, flush }) => {
      const small = letterbox(32, 24, 32, 32, 'top-left');
      const h = supervise([cold('-')], {
        over: {
          // 25 changes, one every 100 ms (an MJPEG camera sending pictures of two sizes in turn), then none.
          run: (opts) => defer(() => {
            opts.onStreamInfo?.({ width: 64, height: 48, fps: 10 }, LB);
            return cold('a 99ms '.repeat(25)).pipe(
              map((_v, k): Frame => {
                opts.onResize?.(k % 2 ? small : LB, k % 2 ? LB : small);
                return { source: 'cam', seq: k, pts: k / 10, data: Buffer.alloc(0), letterbox: LB, stamps: {} as Frame['stamps'], producedBy: 'captured', release: () => {} };
              }),
            );
          }),
        },
      });
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 3200); // before the watchdog restarts the silent run
      flush();
      const reports = h.transitions.filter((t) => t.code === 'VAP_ERR_SOURCE_RESIZED').map((t) => [t.at, t.reason]);
      // Frames k = 1–10 come at 100–1000 ms, 11–20 at 1100–2000 ms, 21–24 at 2100–2400 ms.
      expect(reports).toEqual([
        [0, 'resolution changed from 64x48 to 32x24'],
        [1000, 'resolution changed 10 times in 1.0 s, from 32x24; now 32x24'],
        [2000, 'resolution changed 10 times in 1.0 s, from 32x24; now 32x24'],
        [3000, 'resolution changed 4 times in 1.0 s, from 32x24; now 32x24'],
      ]);
    });
  });

  it('changes still counted when the state changes (the run fails, the source stops) are reported first, in the state they happened in', () => {
    scheduler.run(({ cold, flush }) => {
      const small = letterbox(32, 24, 32, 32, 'top-left');
      const runOf = (marbles: string) => (opts: FfmpegSourceOptions) =>
        defer(() => {
          opts.onStreamInfo?.({ width: 64, height: 48, fps: 10 }, LB);
          return cold(marbles, undefined, exitErr).pipe(
            map((_v, k): Frame => {
              opts.onResize?.(k % 2 ? small : LB, k % 2 ? LB : small);
              return { source: 'cam', seq: k, pts: k / 10, data: Buffer.alloc(0), letterbox: LB, stamps: {} as Frame['stamps'], producedBy: 'captured', release: () => {} };
            }),
          );
        });
      let n = 0;
      // Run 1: changes at 0 (reported), 100 and 200 ms (counted), then ffmpeg fails at 300 ms.
      // Run 2 (after the 100 ms backoff): a change at 400 ms (counted); the source is stopped at 500 ms.
      const h = supervise([], { over: { run: (opts) => (n++ === 0 ? runOf('a 99ms a 99ms a 99ms #') : runOf('a'))(opts) } });
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 500);
      flush();
      expect(h.transitions.map((t) => [t.at, t.state, t.reason])).toEqual([
        [0, 'starting', 'started'],
        [0, 'starting', 'resolution changed from 64x48 to 32x24'],
        [0, 'streaming', 'first frame'],
        [300, 'streaming', 'resolution changed 2 times in 1.0 s, from 32x24; now 32x24'],
        [300, 'reconnecting', 'source "cam": ffmpeg exited with code 1: Connection refused; retry 1 in 0.1 s'],
        [400, 'reconnecting', 'resolution changed from 64x48 to 32x24'], // one change: said as one
        [400, 'streaming', 'frames again after 1 attempt'],
        [500, 'stopped', 'stopped'],
      ]);
    });
  });
});

describe('giving up', () => {
  it('maxAttempts failures in a row: the source errors with state failed, after maxAttempts retries', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const runs = [...Array(3)].map(() => cold('#', undefined, exitErr));
      const h = supervise(runs, { over: { reconnect: { ...policy, maxAttempts: 2 } } });
      expectObservable(h.seqs).toBe('300ms #', undefined, exitErr);
      flush();
      expect(h.calls).toHaveLength(3);
      expect(states(h.transitions)).toEqual(['starting', 'reconnecting', 'reconnecting', 'failed']); // not stopped
      // attempt counts reconnect attempts, as on `reconnecting` (1, 2) and as the reason says: 2, not the 3 failures.
      expect(h.transitions.map((t) => t.attempt)).toEqual([0, 1, 2, 2]);
      expect(h.transitions[3]).toMatchObject({ at: 300, attempt: 2, reason: 'gave up after 2 attempts: source "cam": ffmpeg exited with code 1: Connection refused', code: 'VAP_ERR_SOURCE_EXIT', detail: 'Connection refused' });
    });
  });

  it('maxAttempts 0 never gives up', () => {
    scheduler.run(({ cold, expectObservable }) => {
      const runs = [...Array(30)].map(() => cold('#', undefined, exitErr)).concat(cold('a'));
      const h = supervise(runs);
      // 100 + 200 + 28 × 400 ms of backoff.
      expectObservable(h.seqs, '^ 11600ms !').toBe('11500ms a', { a: 0 });
    });
  });

  it('errors that retrying cannot fix fail at once: a source that cannot be opened, a file ffmpeg never opened', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const open = new ArgusError(ErrorCodes.SOURCE_OPEN, 'source "cam": file not found: /videos/a.ts');
      const missing = supervise([cold('#', undefined, open)]);
      expectObservable(missing.seqs).toBe('#', undefined, open);
      const unreadable = supervise([cold('#', undefined, exitErr)], { over: { input: file() }, info: null });
      expectObservable(unreadable.seqs).toBe('#', undefined, exitErr);
      flush();
      // No reconnect was attempted: attempt 0.
      expect(missing.transitions.slice(1)).toMatchObject([{ state: 'failed', reason: 'source "cam": file not found: /videos/a.ts', code: 'VAP_ERR_SOURCE_OPEN', attempt: 0 }]);
      expect(states(unreadable.transitions)).toEqual(['starting', 'failed']);
    });
  });
});

describe('ends, loops and resumes', () => {
  it('a file that ends completes (state ended); a live stream that ends is reconnected (VAP_ERR_SOURCE_EOF)', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const f = supervise([cold('a 99ms a 99ms |')], { over: { input: file() } });
      expectObservable(f.seqs).toBe('a 99ms b 99ms |', { a: 0, b: 1 });
      const l = supervise([cold('a 99ms a 99ms |'), cold('a')]);
      expectObservable(l.seqs, '^ 500ms !').toBe('a 99ms b 199ms c', { a: 0, b: 1, c: 2 });
      flush();
      expect(states(f.transitions)).toEqual(['starting', 'streaming', 'ended']);
      expect(l.transitions[2]).toMatchObject({ at: 200, state: 'reconnecting', reason: 'source "cam": end of stream; retry 1 in 0.1 s', code: 'VAP_ERR_SOURCE_EOF' });
    });
  });

  it('a looped file restarts at 0 in the file at its end, with no status change; seq and pts go on', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const runs = [cold('a 99ms a 99ms |'), cold('a 99ms a 99ms |'), cold('a 99ms a 99ms |'), cold('-')];
      const h = supervise(runs, { over: { input: file({ loop: true }) } });
      const pts: number[] = [];
      expectObservable(h.src.pipe(map((fr) => (pts.push(fr.pts), fr.seq))), '^ 700ms !').toBe('a 99ms b 99ms c 99ms d 99ms e 99ms f', { a: 0, b: 1, c: 2, d: 3, e: 4, f: 5 });
      flush();
      expectSubscriptions(runs[1].subscriptions).toBe('200ms ^ 199ms !');
      expectSubscriptions(runs[3].subscriptions).toBe('600ms ^ 100ms !');
      expect(h.calls.map((c) => [c.input.loop, c.input.seek])).toEqual([...Array(4)].map(() => [false, undefined]));
      expect(pts.map((p) => +p.toFixed(9))).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5]);
      expect(states(h.transitions)).toEqual(['starting', 'streaming', 'stopped']);
    });
  });

  it('a looped file that yields nothing at position 0 ends instead of restarting forever', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const h = supervise([cold('|')], { over: { input: file({ loop: true }) } });
      expectObservable(h.seqs).toBe('|');
      flush();
      expect(states(h.transitions)).toEqual(['starting', 'ended']);
    });
  });

  it.each([
    ['MPEG-TS: sought 3 s earlier and trimmed', 'mpegts', 3],
    ['MP4: exact seek', 'mov,mp4,m4a,3gp,3g2,mj2', 0],
  ])('a file whose ffmpeg died resumes at the next frame not yet delivered (%s)', (_name, format, margin) => {
    scheduler.run(({ cold, flush }) => {
      const runs = [cold('a 99ms a 99ms a 9ms #', undefined, exitErr), cold('a 99ms a 9ms #', undefined, exitErr), cold('-')];
      const h = supervise(runs, { over: { input: file() }, info: { width: 64, height: 48, fps: 10, format } });
      const frames: Frame[] = [];
      const sub = h.src.subscribe((f) => frames.push(f));
      scheduler.schedule(() => sub.unsubscribe(), 1000);
      flush();
      // Frames at 0, 0.1, 0.2 delivered: the next is at 0.3 (sought half a frame early); then 0.5.
      expect(h.calls.map((c) => c.input.seek && +c.input.seek.toFixed(9))).toEqual([undefined, 0.25, 0.45]);
      expect(h.calls.map((c) => c.input.seekMargin)).toEqual([0, margin, margin]);
      expect(frames.map((f) => f.seq)).toEqual([0, 1, 2, 3, 4]);
      // Native rate: the first frame after a restart counts the outage (restarted at 310 ms).
      expect(frames.map((f) => +f.pts.toFixed(9))).toEqual([0, 0.1, 0.2, 0.31, 0.41]);
      expect(states(h.transitions)).toEqual(['starting', 'streaming', 'reconnecting', 'streaming', 'reconnecting', 'stopped']);
    });
  });

  it('a fast file resumed after a restart: pts is the position played, not the time that passed', () => {
    scheduler.run(({ cold, flush }) => {
      const runs = [cold('a 99ms a 99ms a 9ms #', undefined, exitErr), cold('a 99ms a')];
      const h = supervise(runs, { over: { input: file({ rate: 'fast' }) } });
      const pts: number[] = [];
      const sub = h.src.subscribe((f) => pts.push(+f.pts.toFixed(9)));
      scheduler.schedule(() => sub.unsubscribe(), 1000);
      flush();
      expect(pts).toEqual([0, 0.1, 0.2, 0.3, 0.4]);
    });
  });

  it('a live source restarted: seq goes on, the first frame after the outage is at the time that passed', () => {
    scheduler.run(({ cold, flush }) => {
      const h = supervise([cold('a 99ms a 99ms #', undefined, exitErr), cold('a 99ms a')]);
      const frames: Frame[] = [];
      const sub = h.src.subscribe((f) => frames.push(f));
      scheduler.schedule(() => sub.unsubscribe(), 1000);
      flush();
      expect(frames.map((f) => f.seq)).toEqual([0, 1, 2, 3]);
      expect(frames.map((f) => +f.pts.toFixed(9))).toEqual([0, 0.1, 0.3, 0.4]); // ffmpeg died at 200, restarted at 300
      expect(h.calls.map((c) => c.seqStart)).toEqual([0, 2]);
    });
  });
});

describe('teardown and options', () => {
  it('unsubscribing tears the running ffmpeg down (state stopped)', () => {
    scheduler.run(({ cold, expectObservable, expectSubscriptions, flush }) => {
      const runs = [cold('a 99ms a 99ms a')];
      const h = supervise(runs);
      expectObservable(h.seqs, '^ 150ms !').toBe('a 99ms b', { a: 0, b: 1 });
      expectSubscriptions(runs[0].subscriptions).toBe('^ 150ms !');
      flush();
      expect(h.transitions.at(-1)).toEqual({ at: 151, state: 'stopped', reason: 'stopped', attempt: 0 });
    });
  });

  it('unsubscribing during a backoff wait cancels the restart', () => {
    scheduler.run(({ cold, expectObservable, flush }) => {
      const h = supervise([cold('#', undefined, exitErr), cold('a')]);
      expectObservable(h.seqs, '^ 50ms !').toBe('');
      flush();
      expect(h.calls).toHaveLength(1);
      expect(states(h.transitions)).toEqual(['starting', 'reconnecting', 'stopped']);
    });
  });

  it('options the supervisor does not consume reach each ffmpeg run unchanged', () => {
    scheduler.run(({ cold, flush }) => {
      const onExit = () => {};
      const spawn = (() => {
        throw new Error('not called');
      }) as unknown as FfmpegSourceOptions['spawn'];
      const h = supervise([cold('#', undefined, exitErr), cold('-')], { over: { onExit, spawn, addedLater: 'kept' } as Partial<SupervisedSourceOptions> });
      const sub = h.src.subscribe();
      scheduler.schedule(() => sub.unsubscribe(), 200);
      flush();
      for (const c of h.calls) {
        expect(c).toMatchObject({ id: 'cam', ffmpegPath: 'ffmpeg', output, onExit, spawn, addedLater: 'kept' }); // a field FfmpegSourceOptions gains later too
        expect(c).not.toHaveProperty('reconnect');
        expect(c).not.toHaveProperty('run');
      }
    });
  });
});

describe('a resolution change of frames at the source size (VAP_ERR_SOURCE_RESIZED)', () => {
  const resized = new ArgusError(ErrorCodes.SOURCE_RESIZED, 'source "cam": resolution changed from 64x48 to 32x24');
  it('restarts the source at once, not counted as a failure; another within RESIZE_RESTART_MS waits the backoff as one', () => {
    scheduler.run(({ cold, expectSubscriptions, flush }) => {
      // Frames, a change at 300 ms; frames at once, another change 200 ms later; then frames.
      const runs = [cold('a 99ms a 99ms a 99ms #', undefined, resized), cold('a 99ms a 99ms #', undefined, resized), cold('a 99ms a')];
      const h = supervise(runs);
      scheduler.schedule(() => sub.unsubscribe(), 1000);
      const sub = h.src.subscribe();
      flush();
      expectSubscriptions(runs[1].subscriptions).toBe('300ms ^ 199ms !');
      expectSubscriptions(runs[2].subscriptions).toBe('600ms ^ 399ms !'); // 500 ms + the first backoff, 100 ms
      expect(h.transitions.filter((t) => t.state !== 'stopped').map(({ at, state, reason, attempt, code }) => [at, state, reason, attempt, code])).toEqual([
        [0, 'starting', 'started', 0, undefined],
        [0, 'streaming', 'first frame', 0, undefined],
        [300, 'reconnecting', 'source "cam": resolution changed from 64x48 to 32x24; restarted at once at the new size', 0, ErrorCodes.SOURCE_RESIZED],
        [300, 'streaming', 'frames at the new size', 0, undefined],
        [500, 'reconnecting', 'source "cam": resolution changed from 64x48 to 32x24; retry 1 in 0.1 s', 1, ErrorCodes.SOURCE_RESIZED],
        [600, 'streaming', 'frames again after 1 attempt', 1, undefined],
      ]);
    });
  });

  it("is a reconnect (onReconnect: the source's reconnects, /metrics' argus_source_reconnects_total, the summary) when it waits the backoff, as the failure it counts as; not when restarted at once", () => {
    scheduler.run(({ cold, flush }) => {
      const runs = [cold('a 99ms a 99ms a 99ms #', undefined, resized), cold('a 99ms a 99ms #', undefined, resized), cold('a 99ms a 99ms #', undefined, exitErr), cold('a 99ms a')];
      let reconnects = 0;
      const h = supervise(runs, { over: { onReconnect: () => reconnects++ } });
      scheduler.schedule(() => sub.unsubscribe(), 2000);
      const sub = h.src.subscribe();
      flush();
      // The restart at once (300 ms) is none; the one after the backoff (500 ms) and the exit's (800 ms) are.
      expect(reconnects).toBe(2);
      expect(h.transitions.filter((t) => t.state === 'reconnecting').map((t) => t.at)).toEqual([300, 500, 800]);
      expect(runs[3].subscriptions).toHaveLength(1);
    });
  });
});
