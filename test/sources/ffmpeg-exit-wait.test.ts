// A source's next ffmpeg starts once the one before it has exited (ffmpeg-source afterExit): a
// camera that takes one session at a time, a V4L2 device (busy while open) or a UDP port refuse
// a second ffmpeg while the first still holds them. Fake children whose exit comes when the test
// says, as a real process's comes some time after its SIGKILL.
import { Subscription } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ffmpegSource, FFMPEG_EXIT_WAIT_MS, type FfmpegSourceOptions, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import type { Transition } from '../../src/sources/health.js';
import { newSourceStats, recordTransition, sourceSummary } from '../../src/sources/stats.js';
import { FakeFfmpeg, SlowToDie } from './fake-ffmpeg.js';

const output = { width: 64, height: 48, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114, frame: 'letterbox' as const };

function spawner() {
  const children: SlowToDie[] = [];
  const spawnedAt: number[] = [];
  const spawn: SpawnFn = (_cmd, args) => {
    const c = new SlowToDie(args, 64 * 48 * 3);
    children.push(c);
    spawnedAt.push(performance.now());
    return c.asChild();
  };
  return { spawn, children, spawnedAt };
}

const opts = (spawn: SpawnFn, over: Partial<FfmpegSourceOptions> = {}): FfmpegSourceOptions => ({
  id: 'cam',
  input: { url: 'udp://127.0.0.1:21000', kind: 'stream', rate: 'native', loop: false },
  output,
  ffmpegPath: 'ffmpeg',
  spawn,
  ...over,
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Until `cond`, checked every 5 ms, for `ms` at most. */
const until = async (cond: () => boolean, ms = 5000) => {
  const end = performance.now() + ms;
  while (!cond() && performance.now() < end) await sleep(5);
};

/** ffmpeg's report of an interlaced stream (a field order) and of the output it writes, up to its first frame. */
const interlaced = (c: FakeFfmpeg) =>
  "Input #0, mpegts, from 'x':\n  Duration: N/A\n    Stream #0:0[0x100]: Video: h264 (High), yuv420p(tv, top first), 64x48, 25 fps, 25 tbr\nStream mapping:\n" +
  '[graph 0 input from stream 0:0 @ 0x55d0c0ffee40] w:64 h:48 pixfmt:yuv420p tb:1/90000 fr:25000/1000 sar:0/1\n' +
  `Output #0, rawvideo, to '${c.args.at(-1)}':\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, 25 fps, 25 tbn\n`;

let sub: Subscription | undefined;
afterEach(() => sub?.unsubscribe());

describe("a source's next ffmpeg waits for the last one's exit", () => {
  it('an interlaced stream read again with the deinterlacer: the second ffmpeg is started only once the first has exited', async () => {
    const { spawn, children } = spawner();
    sub = ffmpegSource(opts(spawn)).subscribe({ error: () => {} });
    expect(children).toHaveLength(1);
    children[0].stderr.write(interlaced(children[0]));
    expect(children[0].signals).toEqual(['SIGKILL']);
    await sleep(100);
    // Killed, not yet exited: the camera (the device) may still be held by it.
    expect(children).toHaveLength(1);
    children[0].exitLater();
    await until(() => children.length === 2);
    expect(children).toHaveLength(2);
    expect(children[1].args.join(' ')).toContain('bwdif');
  });

  it(`an ffmpeg that never exits (stuck in the kernel) does not stall its source: the next one starts ${FFMPEG_EXIT_WAIT_MS} ms after`, async () => {
    const { spawn, children, spawnedAt } = spawner();
    sub = ffmpegSource(opts(spawn)).subscribe({ error: () => {} });
    children[0].stderr.write(interlaced(children[0]));
    const killedAt = performance.now();
    await until(() => children.length === 2, FFMPEG_EXIT_WAIT_MS + 10_000);
    expect(children).toHaveLength(2);
    expect(spawnedAt[1] - killedAt).toBeGreaterThanOrEqual(FFMPEG_EXIT_WAIT_MS - 5);
    // Its late exit touches nothing of the run now going.
    children[0].exitLater();
    expect(children[1].signals).toEqual([]);
  }, 20_000);

  it('a stalled camera restarted after its backoff: the restart waits for the killed ffmpeg, then goes on', async () => {
    const { spawn, children } = spawner();
    sub = supervisedSource({
      ...opts(spawn),
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 100, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
    }).subscribe({ error: () => {} });
    await until(() => children[0]?.signals.length > 0);
    expect(children[0].signals).toEqual(['SIGKILL']);
    await sleep(200);
    expect(children).toHaveLength(1);
    children[0].exitLater();
    await until(() => children.length === 2);
    expect(children).toHaveLength(2);
  });

  it('unsubscribed while it waits: no ffmpeg is started after', async () => {
    const { spawn, children } = spawner();
    const s = ffmpegSource(opts(spawn)).subscribe({ error: () => {} });
    children[0].stderr.write(interlaced(children[0]));
    await sleep(50);
    s.unsubscribe();
    children[0].exitLater();
    await sleep(100);
    expect(children).toHaveLength(1);
  });
});


describe("the start timeout counts from the next ffmpeg's start, not from the wait for the last one's exit (fake timers)", () => {
  afterEach(() => vi.useRealTimers());

  it('a restart whose killed ffmpeg takes 1.5 s to exit still has its whole startTimeoutMs; past it, it is timed out', async () => {
    vi.useFakeTimers();
    const { spawn, children } = spawner();
    sub = supervisedSource({
      ...opts(spawn),
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 3000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
    }).subscribe({ error: () => {} });
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(1);
    // No frame: timed out, killed; it exits 1.5 s later.
    await vi.advanceTimersByTimeAsync(3000);
    expect(children[0].signals).toEqual(['SIGKILL']);
    await vi.advanceTimersByTimeAsync(1500);
    expect(children).toHaveLength(1);
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(2);
    // 3 s after the restart began, 1.5 s after its ffmpeg started: not timed out (it was: the wait counted).
    await vi.advanceTimersByTimeAsync(1600);
    expect(children[1].signals).toEqual([]);
    // 3 s after its ffmpeg started: timed out.
    await vi.advanceTimersByTimeAsync(1500);
    expect(children[1].signals).toEqual(['SIGKILL']);
  });
});

describe('at most one ffmpeg a source is left behind (stuck in the kernel: a device that hangs every ffmpeg) (fake timers)', () => {
  afterEach(() => vi.useRealTimers());

  it('the first stuck one is left behind after the wait; with a second stuck too, the source waits (stalled, coded, counted) until one of them has gone', async () => {
    vi.useFakeTimers();
    const { spawn, children } = spawner();
    const transitions: Transition[] = [];
    const stats = newSourceStats('cam');
    sub = supervisedSource({
      ...opts(spawn),
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 1000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
      onTransition: (t) => {
        transitions.push(t);
        recordTransition(stats, t);
      },
    }).subscribe({ error: () => {} });
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(1);
    // No frame: timed out and killed; it never exits. Left behind after the wait: the next starts.
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
    expect(children).toHaveLength(2);
    // The second times out and never exits either: no third beside the two.
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 60_000);
    expect(children).toHaveLength(2);
    expect(children[1].signals).toEqual(['SIGKILL']);
    // Reported `stuck`, with each one's pid and how long since it was stopped, and again a minute
    // on (STUCK_REPORT_MS): the log's line then, /api/sources and argus_source_state meanwhile.
    const stalled = transitions.filter((t) => t.state === 'stuck');
    expect(stalled).toHaveLength(2);
    expect(stalled[0].code).toBe('VAP_ERR_SOURCE_STALLED');
    expect(stalled[0].reason).toBe(`ffmpeg ${children[1].pid} has not exited 2 s after it was stopped, nor has ffmpeg ${children[0].pid} before it (5 s) (stuck in the kernel: a hung device or network mount?): the next is started once one of them has gone`);
    expect(stalled[1].reason).toMatch(new RegExp(`^ffmpeg ${children[1].pid} has not exited 62 s after it was stopped, nor has ffmpeg ${children[0].pid} before it \\(65 s\\)`));
    expect(stats.state).toBe('stuck');
    expect(stats.ffmpegWaits).toBe(1); // one wait, however often told
    // Said in the run's summary of the source (argus run's `source summary` line), not only kept.
    expect(sourceSummary(stats)).toMatchObject({ source: stats.id, ffmpegWaits: 1 });
    expect(sourceSummary(newSourceStats('fine'))).not.toHaveProperty('ffmpegWaits');
    // The first finally exits: the third starts (the second is the one left behind now).
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(3);
  });

  /**
   * A supervised source of frames at the source's size in YUV, with fake timers, started: its
   * 64x48 picture is run again packed (YUV_MIN_PIXELS) within the start; `startTimeoutMs` its
   * watchdog's. Its ffmpegs (`children`), transitions and stats.
   */
  async function rerunning(startTimeoutMs: number) {
    vi.useFakeTimers();
    const { spawn, children } = spawner();
    const transitions: Transition[] = [];
    const stats = newSourceStats('cam');
    sub = supervisedSource({
      ...opts(spawn, { output: { ...output, frame: 'source-yuv' } }),
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
      onTransition: (t) => {
        transitions.push(t);
        recordTransition(stats, t);
      },
    }).subscribe({ error: () => {} });
    await vi.advanceTimersByTimeAsync(0);
    return { children, transitions, stats };
  }

  it('a rerun within one start (packed frames, then the deinterlacer) waiting for its stuck ffmpeg and the one left behind: reported as a restart\'s wait is (stalled, coded, counted), not silent', async () => {
    const { children, transitions, stats } = await rerunning(600_000);
    expect(children).toHaveLength(1);
    // Its report: run again (packed, or deinterlaced) within this start; killed, it never exits:
    // left behind after the wait, the rerun starts beside it.
    children[0].stderr.write(interlaced(children[0]));
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    expect(children).toHaveLength(2);
    expect(transitions.filter((t) => t.state === 'stuck')).toHaveLength(0);
    // The rerun's report: run again for the other reason; it never exits either: the next waits
    // for one of the two, and says so.
    children[1].stderr.write(interlaced(children[1]));
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    expect(children.map((c) => c.signals)).toEqual([['SIGKILL'], ['SIGKILL']]);
    expect(children).toHaveLength(2);
    const stalled = transitions.filter((t) => t.state === 'stuck');
    expect(stalled).toHaveLength(1);
    expect(stalled[0].code).toBe('VAP_ERR_SOURCE_STALLED');
    expect(stalled[0].reason).toMatch(/has not exited 2 s after it was stopped, nor has ffmpeg .* before it/);
    expect(stats.state).toBe('stuck');
    expect(stats.ffmpegWaits).toBe(1);
    // One of them exits: the rerun starts, packed and deinterlaced.
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(3);
    expect(children[2].args.join(' ')).toContain('bwdif');
  });

  it("a rerun's wait for two stuck ffmpegs is not counted in the start timeout, as a restart's is not: one wait, said and counted once", async () => {
    const { children, transitions, stats } = await rerunning(10_000);
    children[0].stderr.write(interlaced(children[0]));
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    children[1].stderr.write(interlaced(children[1]));
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    // Waiting, well past the start timeout: not timed out (it was: "no frame within 10.0 s of
    // starting", a reconnect, and the restart's wait said and counted a second time).
    await vi.advanceTimersByTimeAsync(30_000);
    expect(transitions.map((t) => t.state)).toEqual(['starting', 'stuck']);
    expect(stats.ffmpegWaits).toBe(1);
    // One exits: the rerun starts, and its start timeout counts from then.
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(9_900);
    expect(children[2].signals).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(children[2].signals).toEqual(['SIGKILL']);
    expect(transitions.at(-1)).toMatchObject({ state: 'reconnecting', code: 'VAP_ERR_SOURCE_TIMEOUT' });
  });
});
