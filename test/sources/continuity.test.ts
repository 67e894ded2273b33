// seq/pts across reconnects, spawn failures and pipe errors, in virtual time: ffmpeg is a fake
// child process (injected spawn), timers are vitest's fake timers, the monotonic clock is a
// counter the test advances.
import { lastValueFrom } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import type { Frame } from '../../src/core/frame.js';
import { ffmpegSource, LIVE_PTS_SLACK_S, type FfmpegSourceOptions, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import type { ReconnectPolicy, Transition } from '../../src/sources/health.js';
import { supervisedSource, type SupervisedSourceOptions } from '../../src/sources/supervised-source.js';
import { FakeFfmpeg } from './fake-ffmpeg.js';

const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const FRAME = 32 * 32 * 3;
const policy: ReconnectPolicy = { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 };

let mono = 0;
const advance = (ms: number) => {
  mono += ms;
  vi.advanceTimersByTime(ms);
};
beforeEach(() => {
  vi.useFakeTimers();
  mono = 1_000_000; // the monotonic clock is not 0 at the start
});
afterEach(() => vi.useRealTimers());

function harness(over: Partial<SupervisedSourceOptions> = {}, spawnHook?: (n: number) => void) {
  const children: FakeFfmpeg[] = [];
  const frames: Frame[] = [];
  const transitions: Transition[] = [];
  let calls = 0;
  const spawn: SpawnFn = (_cmd, args) => {
    spawnHook?.(calls++);
    const c = new FakeFfmpeg(args, FRAME);
    children.push(c);
    return c.asChild();
  };
  const src = supervisedSource({
    id: 'cam',
    input: { url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
    output,
    ffmpegPath: 'ffmpeg',
    reconnect: policy,
    watchdog: { startTimeoutMs: 15_000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
    onTransition: (t) => transitions.push(t),
    spawn,
    clock: () => mono,
    ...over,
  });
  let error: unknown;
  const sub = src.subscribe({ next: (f) => (frames.push(f), f.release()), error: (e) => (error = e) });
  /** The newest ffmpeg prints its banner after 50 ms, then `n` frames at 10 fps. */
  const stream = (n: number) => {
    const c = children.at(-1)!;
    advance(50);
    c.info();
    for (let i = 0; i < n; i++) {
      advance(100);
      c.frame();
    }
  };
  return { children, frames, transitions, sub, stream, error: () => error };
}

describe('seq and pts keep growing across reconnects (live source, virtual time)', () => {
  it('three ffmpeg runs with a 5 s outage and a wall-clock jump: seq 0..N without repeats, pts strictly increasing, the outage shows in pts', () => {
    const h = harness();
    h.stream(20); // seq 0..19, pts 0..1.9
    h.children[0].exit(1); // the camera drops the connection
    expect(h.transitions.at(-1)).toMatchObject({ state: 'reconnecting', code: 'VAP_ERR_SOURCE_EXIT' });
    advance(100); // backoff
    expect(h.children).toHaveLength(2);
    // The camera answers but sends its first frame 5 s later; meanwhile the wall clock is set back an hour.
    vi.setSystemTime(Date.now() - 3_600_000);
    advance(5000);
    h.stream(10);
    h.children[1].exit(0); // end of stream
    advance(200);
    h.stream(5);
    h.sub.unsubscribe();

    const seqs = h.frames.map((f) => f.seq);
    expect(seqs).toEqual(Array.from({ length: 35 }, (_, i) => i));
    const pts = h.frames.map((f) => f.pts);
    for (let i = 1; i < pts.length; i++) expect(pts[i]).toBeGreaterThan(pts[i - 1]);
    // First run: 1 / fps per frame.
    expect(pts.slice(0, 3)).toEqual([0, 0.1, 0.2]);
    expect(pts[19]).toBeCloseTo(1.9, 9);
    // After the outage: monotonic seconds since the first frame (1.9 s + 0.1 backoff + 5 s + 0.05 + 0.1).
    expect(pts[20]).toBeCloseTo(7.15, 6);
    expect(pts[20] - pts[19]).toBeGreaterThan(5);
    expect(pts[29]).toBeCloseTo(7.15 + 0.9, 6);
    // A short reconnect (0.2 s + 0.15 s): the gap is the time that passed.
    expect(pts[30]).toBeCloseTo(8.05 + 0.35, 6);
    expect(pts[34]).toBeCloseTo(8.4 + 0.4, 6);
  });

  it('a source whose frames arrive faster than real time after a reconnect (a burst): 1 / fps apart up to LIVE_PTS_SLACK_S ahead of the clock, never back in pts', () => {
    const h = harness();
    h.stream(10);
    h.children[0].exit(1);
    advance(100);
    const c = h.children[1];
    advance(50);
    c.info();
    for (let i = 0; i < 30; i++) c.frame(); // 30 frames at once: 1 / fps apart, after the last pts
    h.sub.unsubscribe();
    const pts = h.frames.map((f) => f.pts);
    for (let i = 1; i < pts.length; i++) expect(pts[i]).toBeGreaterThan(pts[i - 1]);
    expect(h.frames.map((f) => f.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    // 0.1 s apart for the first half second (6 frames), then held there: 30 frames at 10 fps
    // would otherwise put the run 2.9 s ahead of real time for as long as it streams.
    for (let i = 11; i <= 15; i++) expect(pts[i] - pts[i - 1]).toBeCloseTo(0.1, 9);
    expect(pts[39] - pts[10]).toBeCloseTo(LIVE_PTS_SLACK_S + 24 * 1e-3, 6);
  });

  it('`fps` above the camera\'s own rate (25 on a 10 fps stream): pts stay within LIVE_PTS_SLACK_S of real time, and time differences follow the clock', () => {
    let info: number | undefined;
    const h = harness({ input: { url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false, fps: 25 }, onStreamInfo: (i) => (info = i.fps) });
    h.stream(30); // 3 s of the camera's frames, 0.1 s apart
    h.sub.unsubscribe();
    expect(info).toBe(10); // the rate delivered, in the pipeline's stats
    const pts = h.frames.map((f) => f.pts);
    // Counted at 25 fps (0.04 s a frame) until half a second behind the clock, then with it.
    expect(pts.slice(0, 9)).toEqual(pts.slice(0, 9).map((_p, i) => expect.closeTo(i / 25, 9)));
    pts.forEach((p, i) => expect(Math.abs(p - i / 10)).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 1e-9));
    expect(pts[29] - pts[10]).toBeCloseTo(1.9, 9); // 19 frames of a 10 fps camera: 1.9 s (0.76 s at 25 fps)
  });

  it('a camera at its rate whose frames are now and then thinned (two in one 1/fps interval) and sometimes come two in one read: spacing never below 1 / fps, pts within LIVE_PTS_SLACK_S of the clock', () => {
    const h = harness({ input: { url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false, fps: 10 } });
    const c = h.children[0];
    advance(50);
    c.info();
    let t = 0;
    const at: number[] = [];
    for (let i = 0; i < 80; i++) {
      const gap = i % 4 === 3 ? 200 : 100; // every fourth frame thinned away: 30 s of such a camera drifts far
      if (i % 7 === 6) {
        c.frame(); // with the one before it, in one read
      } else {
        advance(gap);
        t += gap;
        c.frame();
      }
      at.push(t / 1000);
    }
    h.sub.unsubscribe();
    const pts = h.frames.map((f) => f.pts);
    for (let i = 1; i < pts.length; i++) expect(pts[i] - pts[i - 1], `frame ${i}`).toBeGreaterThanOrEqual(0.1 - 1e-9);
    pts.forEach((p, i) => expect(Math.abs(p - (at[i] - at[0])), `frame ${i}`).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 1e-9));
  });

  it('pts ahead of the clock (a rate guessed too low) do not gain at each restart: within LIVE_PTS_SLACK_S of the time since the source\'s first frame', () => {
    const h = harness();
    let t = 0;
    const step = (ms: number) => {
      advance(ms);
      t += ms;
    };
    const at: number[] = [];
    for (let run = 0; run < 4; run++) {
      while (h.children.length <= run) step(10); // the backoff
      const c = h.children[run];
      step(50);
      c.info('mpjpeg', 5); // 10 frames a second sent, 5 guessed
      for (let i = 0; i < 15; i++) {
        step(100);
        c.frame();
        at.push(t / 1000);
      }
      c.exit(1);
    }
    h.sub.unsubscribe();
    const pts = h.frames.map((f) => f.pts);
    expect(pts).toHaveLength(60);
    const t0 = at[0];
    pts.forEach((p, i) => expect(p - pts[0] - (at[i] - t0), `frame ${i}`).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 1e-9));
    for (let i = 1; i < pts.length; i++) expect(pts[i]).toBeGreaterThan(pts[i - 1]);
  });

  it('a live rate ffmpeg guessed too low (5 fps reported, 10 sent, no fps configured): pts held within LIVE_PTS_SLACK_S of real time', () => {
    const h = harness();
    const c = h.children[0];
    advance(50);
    c.info('mpjpeg', 5);
    const at: number[] = [];
    let t = 0;
    for (let i = 0; i < 30; i++) {
      advance(100);
      t += 0.1;
      c.frame();
      at.push(t);
    }
    for (let i = 0; i < 4; i++) {
      advance(100);
      t += 0.1;
      c.frame();
      mono += 0.02; // 20 µs later: cut from the same read
      c.frame(); // both held at the slack's edge: still 1 ms apart at least (0.1 ms is what is published)
      at.push(t, t);
    }
    h.sub.unsubscribe();
    const pts = h.frames.map((f) => f.pts);
    pts.forEach((p, i) => expect(Math.abs(p - (at[i] - at[0]))).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 0.01));
    expect(pts[29] - pts[10]).toBeCloseTo(1.9, 9); // 3.8 s at the guessed 5 fps
    for (let i = 1; i < pts.length; i++) expect(pts[i] - pts[i - 1], `frame ${i}`).toBeGreaterThanOrEqual(1e-3 - 1e-12);
  });
});

/** A live ffmpegSource over a fake ffmpeg (no supervisor) on the virtual clock; `fake()` is its ffmpeg once subscribed. */
function liveAlone(input: Partial<FfmpegSourceOptions['input']> = {}, extra: Partial<FfmpegSourceOptions> = {}) {
  let c: FakeFfmpeg | undefined;
  const source = ffmpegSource({
    id: 'cam',
    input: { url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false, ...input },
    output,
    ffmpegPath: 'ffmpeg',
    clock: () => mono,
    spawn: (_cmd, args) => {
      c = new FakeFfmpeg(args, FRAME);
      return c.asChild();
    },
    ...extra,
  });
  return { source, fake: () => c! };
}

describe('ffmpegSource alone (no supervisor), virtual time', () => {
  it('a live source with `fps` above its rate, without a ptsClock: pts held within LIVE_PTS_SLACK_S of the time since its first frame', () => {
    const pts: number[] = [];
    const { source, fake } = liveAlone({ fps: 25 });
    source.subscribe((f) => (pts.push(f.pts), f.release()));
    const c = fake();
    advance(1);
    c.info(); // 10 fps
    for (let i = 0; i < 30; i++) {
      if (i > 0) advance(100);
      c.frame();
    }
    pts.forEach((p, i) => expect(Math.abs(p - i / 10), `frame ${i}`).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 1e-9));
    expect(pts[29] - pts[10]).toBeCloseTo(1.9, 9);
  });

  it('an exception while reading ffmpeg\'s log (here from onStreamInfo) fails the source with a coded error and stops ffmpeg; nothing is thrown out of the pipe\'s handler', () => {
    let err: unknown;
    const boom = () => {
      throw new Error('boom');
    };
    const { source, fake } = liveAlone({}, { onStreamInfo: boom });
    source.subscribe({ error: (e) => (err = e) });
    expect(() => fake().info()).not.toThrow();
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect((err as Error).message).toBe('source "cam": ffmpeg\'s report of the stream could not be used: boom');
    // (An RTSP camera's: SIGTERM first, so that it tears its session down; this fake exits on it.)
    expect(fake().signals).toEqual(['SIGTERM']);
  });

  it("ffmpeg writes to stdout under a name of each run's own, which is what the probe waits for", () => {
    const names: string[] = [];
    for (let run = 0; run < 2; run++) {
      const frames: number[] = [];
      const { source, fake } = liveAlone();
      source.subscribe((f) => (frames.push(f.seq), f.release()));
      const c = fake();
      names.push(c.args[c.args.length - 1]);
      // A report of an output of another name (as a file's metadata can print) is not it.
      c.stderr.write("Input #0, rtsp, from 'x':\n    Stream #0:0: Video: h264, yuv420p, 64x48, 10 fps, 10 tbr\nOutput #0, rawvideo, to 'pipe:1':\n  Stream #0:0: Video: rawvideo, bgr24, 64x48, 10 fps\n");
      c.frame();
      expect(frames).toEqual([]);
      c.info();
      expect(frames).toEqual([0]);
    }
    expect(names[0]).toMatch(/^pipe:argus-[0-9a-f]{16}$/);
    expect(names[1]).toMatch(/^pipe:argus-[0-9a-f]{16}$/);
    expect(names[0]).not.toBe(names[1]);
  });

  it('a file above 1000 fps (high-speed footage): pts are its position, k / fps, not pushed 1 ms apart', () => {
    let c: FakeFfmpeg | undefined;
    const pts: number[] = [];
    ffmpegSource({
      id: 'hs',
      input: { url: process.execPath, kind: 'file', rate: 'fast', loop: false }, // any file that exists: ffmpeg is a fake
      output,
      ffmpegPath: 'ffmpeg',
      memo: { readsOnce: false }, // the file's look done (a fake ffmpeg: no file to look at)
      spawn: (_cmd, args) => {
        c = new FakeFfmpeg(args, FRAME);
        return c.asChild();
      },
    }).subscribe((f) => (pts.push(f.pts), f.release()));
    advance(1);
    expect(c).toBeDefined();
    c!.info('mov,mp4,m4a,3gp,3g2,mj2', 2000);
    for (let i = 0; i < 5; i++) c!.frame();
    c!.exit(0);
    expect(pts).toEqual([0, 0.0005, 0.001, 0.0015, 0.002]);
  });
});

describe('spawn failures (out of file descriptors) are retried, never thrown', () => {
  const emfile = () => Object.assign(new Error('spawn EMFILE'), { code: 'EMFILE', errno: -24, syscall: 'spawn' });

  it('ffmpegSource: a spawn that throws becomes a VAP_ERR_SOURCE_SPAWN error', async () => {
    const err = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: 'rtsp://admin:hunter2@cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
        output,
        ffmpegPath: 'ffmpeg',
        memo: { readsOnce: false }, // the file's look done (a fake ffmpeg: no file to look at)
        spawn: () => {
          throw emfile();
        },
      }),
    ).catch((e: unknown) => e);
    expect(isArgusError(err, 'VAP_ERR_SOURCE_SPAWN')).toBe(true);
    expect((err as Error).message).toMatch(/could not start ffmpeg \(ffmpeg\): spawn EMFILE/);
  });

  it('supervisedSource: spawn throws twice, the source backs off and then streams from seq 0', () => {
    const h = harness({}, (n) => {
      if (n < 2) throw emfile();
    });
    // The first two tries threw before a child existed (children only holds successful spawns).
    expect(h.transitions.map((t) => t.state)).toEqual(['starting', 'reconnecting']);
    expect(h.transitions[1]).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', attempt: 1 });
    expect(h.transitions[1].reason).toMatch(/spawn EMFILE; retry 1 in 0\.1 s$/);
    advance(100);
    expect(h.transitions.at(-1)).toMatchObject({ state: 'reconnecting', code: 'VAP_ERR_SOURCE_SPAWN', attempt: 2 });
    advance(200);
    expect(h.children).toHaveLength(1);
    h.stream(3);
    h.sub.unsubscribe();
    expect(h.error()).toBeUndefined();
    expect(h.frames.map((f) => f.seq)).toEqual([0, 1, 2]);
    expect(h.transitions.map((t) => t.state)).toEqual(['starting', 'reconnecting', 'reconnecting', 'streaming', 'stopped']);
  });

  it("an asynchronous EMFILE from the child ('error' event) is retried too, not a permanent VAP_ERR_SOURCE_OPEN", () => {
    const h = harness();
    h.children[0].emit('error', emfile());
    expect(h.transitions.at(-1)).toMatchObject({ state: 'reconnecting', code: 'VAP_ERR_SOURCE_SPAWN' });
    expect(h.error()).toBeUndefined();
    h.sub.unsubscribe();
  });

  it("an 'error' on ffmpeg's stdout or stderr is handled: that ffmpeg is killed and the source reconnects", () => {
    for (const pipe of ['stdout', 'stderr'] as const) {
      const h = harness();
      h.stream(2);
      // Without a listener, EventEmitter throws on 'error' (an uncaught exception in production).
      expect(() => h.children[0][pipe].emit('error', Object.assign(new Error('read EIO'), { code: 'EIO' }))).not.toThrow();
      expect(h.children[0].signals).toEqual(['SIGTERM']); // (an RTSP camera's: stopFfmpeg)
      expect(h.transitions.at(-1)).toMatchObject({ state: 'reconnecting', code: 'VAP_ERR_SOURCE_SPAWN' });
      advance(100);
      h.stream(2);
      expect(h.frames.map((f) => f.seq)).toEqual([0, 1, 2, 3]);
      h.sub.unsubscribe();
    }
  });
});
