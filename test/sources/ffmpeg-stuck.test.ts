// An ffmpeg stuck in the kernel (uninterruptible sleep: a hung NFS mount, a wedged V4L2 or USB
// device) ignores SIGKILL until it leaves the kernel. A source that waits for it is reported
// `stuck` (its pid, how long since it was stopped), told again each STUCK_REPORT_MS while the wait
// lasts (a line in the log each time; /api/sources and argus_source_state meanwhile), and counted
// once (ffmpegWaits). A second ffmpeg is started beside it only where that is safe: a network
// camera's (one left behind at most); a V4L2 device's or a file's never (the device is busy
// while open; a file on a hung mount hangs the next one too). Before, a V4L2 source started its
// next ffmpeg beside the stuck one, and a source waiting said `stalled` once and nothing after.
// Fake children that never exit until the test says (the wait for a child's exit is the fake's),
// on fake timers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Subscription } from 'rxjs';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ffmpegSource, FFMPEG_EXIT_WAIT_MS, STUCK_REPORT_MS, type FfmpegSourceOptions, type SourceMemo, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { statBounded } from '../../src/sources/file-look.js';
import type { Transition } from '../../src/sources/health.js';
import { newSourceStats, recordTransition } from '../../src/sources/stats.js';
import { SlowToDie } from './fake-ffmpeg.js';

const output = { width: 64, height: 48, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114, frame: 'letterbox' as const };

const dir = mkdtempSync(join(tmpdir(), 'argus-stuck-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let sub: Subscription | undefined;
afterEach(() => {
  sub?.unsubscribe();
  vi.useRealTimers();
});

/** A supervised source on `input` with fake ffmpegs that never exit, started (fake timers): its ffmpegs, transitions and stats. */
async function started(input: FfmpegSourceOptions['input']) {
  vi.useFakeTimers();
  const children: SlowToDie[] = [];
  const spawn: SpawnFn = (_cmd, args) => {
    const c = new SlowToDie(args, 64 * 48 * 3);
    children.push(c);
    return c.asChild();
  };
  const transitions: Transition[] = [];
  const stats = newSourceStats('cam');
  sub = supervisedSource({
    id: 'cam',
    input,
    output,
    ffmpegPath: 'ffmpeg',
    spawn,
    reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
    watchdog: { startTimeoutMs: 1000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
    onTransition: (t) => {
      transitions.push(t);
      recordTransition(stats, t);
    },
  }).subscribe({ error: () => {} });
  await vi.advanceTimersByTimeAsync(0);
  return { children, transitions, stats };
}

describe('a source whose ffmpeg is stuck in the kernel (fake timers)', () => {
  for (const input of [{ url: '/dev/video0', kind: 'v4l2', rate: 'native', loop: false }] as const) {
    it(`${input.kind}: no second ffmpeg beside it; reported stuck with its pid and how long, again each minute, counted once; the next starts once it has gone`, async () => {
      const { children, transitions, stats } = await started(input);
      expect(children).toHaveLength(1);
      // No frame: timed out (1 s) and killed; it never exits.
      await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
      expect(children[0].signals).toContain('SIGKILL');
      expect(children).toHaveLength(1);
      let stuck = transitions.filter((t) => t.state === 'stuck');
      expect(stuck).toHaveLength(1);
      expect(stuck[0]).toMatchObject({ code: 'VAP_ERR_SOURCE_STALLED', reason: `ffmpeg ${children[0].pid} has not exited 2 s after it was stopped (stuck in the kernel: a hung device or network mount?): the next is started once it has gone (it has: the input takes one reader at a time)` });
      expect(stats.state).toBe('stuck');
      // An hour on: still one ffmpeg, told again each minute with how long.
      await vi.advanceTimersByTimeAsync(60 * STUCK_REPORT_MS);
      expect(children).toHaveLength(1);
      stuck = transitions.filter((t) => t.state === 'stuck');
      expect(stuck).toHaveLength(61);
      expect(stuck.at(-1)!.reason).toMatch(new RegExp(`^ffmpeg ${children[0].pid} has not exited 3602 s after it was stopped`));
      expect(stats).toMatchObject({ state: 'stuck', ffmpegWaits: 1 });
      // It leaves the kernel and exits: the next starts, and the reports stop.
      children[0].exitLater();
      await vi.advanceTimersByTimeAsync(0);
      expect(children).toHaveLength(2);
      // (The next, never exiting either, is reported stuck in turn: the first's reports have stopped.)
      const told = transitions.length;
      await vi.advanceTimersByTimeAsync(2 * STUCK_REPORT_MS);
      expect(transitions.slice(told).filter((t) => t.state === 'stuck').map((t) => /exited (\d+) s/.exec(t.reason)?.[1])).toEqual(['2', '62']);
    });
  }

  it("a file's (one on a hung mount: the next would hang the same way): the next run waits for the stuck one, told why, not beside it", async () => {
    vi.useFakeTimers();
    const children: SlowToDie[] = [];
    const spawn: SpawnFn = (_cmd, args) => {
      const c = new SlowToDie(args, 64 * 48 * 3);
      children.push(c);
      return c.asChild();
    };
    // (The file judged already, as a run's memo keeps it: no look at it, real I/O. One that is there.)
    const memo: SourceMemo = { readsOnce: false };
    const file = join(dir, 'cam.ts');
    writeFileSync(file, Buffer.alloc(188 * 10, 0x47));
    const said: string[] = [];
    const run = () => ffmpegSource({ id: 'cam', input: { url: file, kind: 'file', rate: 'native', loop: false }, output, ffmpegPath: 'ffmpeg', spawn, memo, onFfmpegStuck: (why) => void said.push(why) }).subscribe({ error: (e) => void said.push(`error: ${String(e)}`) });
    const first = run();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(1);
    first.unsubscribe(); // killed: it never exits
    expect(children[0].signals).toContain('SIGKILL');
    sub = run();
    // The next run's look at the file is a real stat, bounded by a (fake) 5 s timer: its answer is
    // let in before the clock moves (the same stat, shared: statBounded), or a loaded machine's
    // slow answer lost to the bound, and the run failed as a hung mount.
    await vi.advanceTimersByTimeAsync(0);
    await statBounded(file);
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + STUCK_REPORT_MS + 10);
    expect(children).toHaveLength(1);
    expect(said.map((w) => /exited (\d+) s/.exec(w)?.[1]), said.join(" / ")).toEqual(["2", "62"]);
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(2);
  });

  it('stopped while it waits: nothing told after its `stopped`, though the ffmpeg is still stuck', async () => {
    const { transitions } = await started({ url: '/dev/video0', kind: 'v4l2', rate: 'native', loop: false });
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
    expect(transitions.at(-1)!.state).toBe('stuck');
    sub!.unsubscribe();
    expect(transitions.at(-1)!.state).toBe('stopped');
    await vi.advanceTimersByTimeAsync(3 * STUCK_REPORT_MS);
    expect(transitions.at(-1)!.state).toBe('stopped');
  });

  it("stopped while it waits: the wait's reminder timer and its listeners on the stuck ffmpeg go with it (a stuck ffmpeg may never exit)", async () => {
    const { children, transitions } = await started({ url: '/dev/video0', kind: 'v4l2', rate: 'native', loop: false });
    const exitListeners = children[0].asChild().listenerCount('exit');
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
    expect(transitions.at(-1)!.state).toBe('stuck');
    expect(vi.getTimerCount()).toBeGreaterThan(0);
    sub!.unsubscribe();
    // Each stop and start of the camera (an argus worker's edit) while it hung added one more
    // minute's timer and two listeners on the child, for as long as the device hung.
    // (What else the stop set going ends within minutes; the reminder's interval went on.)
    await vi.advanceTimersByTimeAsync(3 * STUCK_REPORT_MS);
    expect(vi.getTimerCount()).toBe(0);
    expect(children[0].asChild().listenerCount('exit')).toBe(exitListeners);
  });

  it("a file's run stopped while it waits for the stuck one (ffmpegSource's own wait): its reminder's timer and listeners go with it, and the next run still waits", async () => {
    vi.useFakeTimers();
    const children: SlowToDie[] = [];
    const spawn: SpawnFn = (_cmd, args) => {
      const c = new SlowToDie(args, 64 * 48 * 3);
      children.push(c);
      return c.asChild();
    };
    const memo: SourceMemo = { readsOnce: false };
    const file = join(dir, 'cam2.ts');
    writeFileSync(file, Buffer.alloc(188 * 10, 0x47));
    const said: string[] = [];
    const run = () => ffmpegSource({ id: 'cam', input: { url: file, kind: 'file', rate: 'native', loop: false }, output, ffmpegPath: 'ffmpeg', spawn, memo, onFfmpegStuck: (why) => void said.push(why) }).subscribe({ error: () => {} });
    run().unsubscribe(); // killed: it never exits
    await vi.advanceTimersByTimeAsync(0);
    await statBounded(file);
    const exitListeners = children[0].asChild().listenerCount('exit');
    const second = run();
    await vi.advanceTimersByTimeAsync(0);
    await statBounded(file);
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    expect(said).toHaveLength(1);
    second.unsubscribe();
    await vi.advanceTimersByTimeAsync(3 * STUCK_REPORT_MS);
    expect(said).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
    expect(children[0].asChild().listenerCount('exit')).toBe(exitListeners);
    // The stuck one is still the one the next run waits for.
    sub = run();
    await vi.advanceTimersByTimeAsync(0);
    await statBounded(file);
    await vi.advanceTimersByTimeAsync(FFMPEG_EXIT_WAIT_MS + 10);
    expect(children).toHaveLength(1);
    expect(said).toHaveLength(2);
    children[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(children).toHaveLength(2);
  });

  it('a network camera: the first stuck one is left behind and the next started beside it (safe there), unreported; a second stuck: reported and told again, no third', async () => {
    const { children, transitions, stats } = await started({ url: 'rtsp://cam.invalid/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false });
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
    expect(children).toHaveLength(2);
    expect(transitions.filter((t) => t.state === 'stuck')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 3 * STUCK_REPORT_MS);
    expect(children).toHaveLength(2);
    expect(transitions.filter((t) => t.state === 'stuck')).toHaveLength(4);
    expect(stats).toMatchObject({ state: 'stuck', ffmpegWaits: 1 });
  });
});
