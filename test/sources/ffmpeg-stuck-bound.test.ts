// Many network cameras behind one hung route or mount: each restart of each left one stuck ffmpeg
// behind (one a source), so N sources held N stuck ffmpegs beside their running ones, each with
// its memory, descriptors and pid, for as long as the kernel held them. Across the process, at
// most MAX_FFMPEGS_LEFT_BEHIND are left behind; a source past that waits in state `stuck` for its
// own instead of starting another beside it. Fake children that never exit until the test says,
// on fake timers. (A file of its own: the bound is the process's, and children of other tests'
// that never exit would count against it.)
import { Subscription } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FFMPEG_EXIT_WAIT_MS, ffmpegsLeftBehind, MAX_FFMPEGS_LEFT_BEHIND, STUCK_REPORT_MS, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import type { Transition } from '../../src/sources/health.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { SlowToDie } from './fake-ffmpeg.js';

const output = { width: 64, height: 48, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114, frame: 'letterbox' as const };

const subs: Subscription[] = [];
afterEach(() => {
  for (const s of subs.splice(0)) s.unsubscribe();
  vi.useRealTimers();
});

describe('stuck ffmpegs left behind across the process (fake timers)', () => {
  it(`at most MAX_FFMPEGS_LEFT_BEHIND (${MAX_FFMPEGS_LEFT_BEHIND}); the source past it waits, reported stuck, and starts its next once its own has gone`, async () => {
    vi.useFakeTimers();
    const n = MAX_FFMPEGS_LEFT_BEHIND + 2;
    const children = new Map<string, SlowToDie[]>();
    const transitions = new Map<string, Transition[]>();
    for (let i = 0; i < n; i++) {
      const id = `cam${i}`;
      children.set(id, []);
      transitions.set(id, []);
      const spawn: SpawnFn = (_cmd, args) => {
        const c = new SlowToDie(args, 64 * 48 * 3);
        children.get(id)!.push(c);
        return c.asChild();
      };
      subs.push(
        supervisedSource({
          id,
          input: { url: `rtsp://cam${i}.invalid/stream`, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
          output,
          ffmpegPath: 'ffmpeg',
          spawn,
          reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
          watchdog: { startTimeoutMs: 1000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
          onTransition: (t) => void transitions.get(id)!.push(t),
        }).subscribe({ error: () => {} }),
      );
    }
    await vi.advanceTimersByTimeAsync(0);
    // Each first ffmpeg times out (no frame in 1 s), is killed, and never exits.
    await vi.advanceTimersByTimeAsync(1000 + FFMPEG_EXIT_WAIT_MS + 10);
    const all = [...children.values()];
    const beside = all.filter((c) => c.length === 2).length;
    expect(beside).toBe(MAX_FFMPEGS_LEFT_BEHIND);
    expect(ffmpegsLeftBehind()).toBe(MAX_FFMPEGS_LEFT_BEHIND);
    const waiting = [...children.entries()].filter(([, c]) => c.length === 1).map(([id]) => id);
    expect(waiting).toHaveLength(n - MAX_FFMPEGS_LEFT_BEHIND);
    for (const id of waiting) {
      const stuck = transitions.get(id)!.filter((t) => t.state === 'stuck');
      expect(stuck).toHaveLength(1);
      expect(stuck[0]).toMatchObject({ code: 'VAP_ERR_SOURCE_STALLED', reason: `ffmpeg ${children.get(id)![0].pid} has not exited 2 s after it was stopped (stuck in the kernel: a hung device or network mount?): the next is started once it has gone (${MAX_FFMPEGS_LEFT_BEHIND} ffmpegs of other sources are left behind stuck already, the most argus leaves)` });
    }
    // An hour on (each running one timing out and stuck in turn): still no more than that left
    // behind, and every source holds two ffmpegs at most.
    await vi.advanceTimersByTimeAsync(60 * STUCK_REPORT_MS);
    expect(all.reduce((k, c) => k + c.length, 0)).toBe(n + MAX_FFMPEGS_LEFT_BEHIND);
    expect(ffmpegsLeftBehind()).toBe(MAX_FFMPEGS_LEFT_BEHIND);
    // A waiting source's own stuck ffmpeg leaves the kernel: its next starts.
    const w = children.get(waiting[0])!;
    w[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(w).toHaveLength(2);
    // One left behind exits: its source (waiting for one of its two stuck ones) starts its next,
    // its second stuck one left behind in its place: still no more than the bound.
    const c0 = all.find((c) => c.length === 2 && c !== w)!;
    c0[0].exitLater();
    await vi.advanceTimersByTimeAsync(0);
    expect(c0).toHaveLength(3);
    expect(ffmpegsLeftBehind()).toBe(MAX_FFMPEGS_LEFT_BEHIND);
    for (const c of all.flat()) c.exitLater();
    await vi.advanceTimersByTimeAsync(0);
  });
});
