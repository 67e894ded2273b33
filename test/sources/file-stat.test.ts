// A file source's look at its file before ffmpeg starts: asynchronous and bounded. statSync on a
// network mount that stopped answering stopped the event loop (every source, sink and timer).
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SlowToDie } from './fake-ffmpeg.js';

const hung = vi.hoisted(() => ({ path: '/argus-test-hung-mount/clip.mp4', stats: 0 }));
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>();
  // A stat on the hung mount never answers (it waits in the kernel, in libuv's thread pool).
  return { ...real, stat: (p: string, ...rest: unknown[]) => (p.startsWith('/argus-test-hung-mount/') ? (hung.stats++, new Promise(() => {})) : (real.stat as (...a: unknown[]) => Promise<unknown>)(p, ...rest)) };
});

// A synchronous look at it would hold the event loop (and every source, sink and timer) for as
// long as the mount does not answer: noted here, and failed, as the kernel would not.
const syncLooks = vi.hoisted(() => [] as string[]);
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  const statSync = ((p: string, ...rest: unknown[]) => {
    if (p === hung.path) {
      syncLooks.push(p);
      throw Object.assign(new Error(`EIO: statSync(${p}) on the hung mount`), { code: 'EIO' });
    }
    return (real.statSync as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof real.statSync;
  return { ...real, default: { ...real, statSync }, statSync };
});

const { ffmpegSource, fileLook, fileProblem, FILE_STAT_TIMEOUT_MS } = await import('../../src/sources/ffmpeg-source.js');
const { ErrorCodes } = await import('../../src/core/errors.js');
const { statProblem } = await import('../../src/sources/file-look.js');
const { supervisedSource } = await import('../../src/sources/supervised-source.js');
type Transition = import('../../src/sources/health.js').Transition;

afterEach(() => vi.useRealTimers());

describe("a file source's stat at start", () => {
  it(`on a mount that does not answer: VAP_ERR_SOURCE_TIMEOUT naming the file after ${FILE_STAT_TIMEOUT_MS} ms, its ffmpeg stopped, the loop running meanwhile`, async () => {
    vi.useFakeTimers();
    const children: SlowToDie[] = [];
    let error: (Error & { code?: string }) | undefined;
    ffmpegSource({
      id: 'cam',
      input: { url: hung.path, kind: 'file', rate: 'native', loop: false },
      output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' },
      ffmpegPath: 'ffmpeg',
      // (ffmpeg, started beside the stat, waits on the mount too: it reports nothing.)
      spawn: (_c, args) => {
        const c = new SlowToDie(args, 64 * 48 * 3);
        children.push(c);
        return c.asChild();
      },
    }).subscribe({ error: (e: Error) => (error = e) });
    await vi.advanceTimersByTimeAsync(FILE_STAT_TIMEOUT_MS - 1);
    expect(error).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await vi.runOnlyPendingTimersAsync(); // (the bound's answer waits for the poll phase: setImmediate)
    expect(error?.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    expect(error?.message).toContain(`source "cam": ${hung.path}`);
    // No ffmpeg was started: the look judges the file (a named pipe is read once) before the
    // first one, as a run's source's start does (it ran readsOnce's statSync, here without a memo).
    expect(children).toEqual([]);
    expect(syncLooks).toEqual([]);
  });

  it('a later run (the file judged, in the memo): looked at as its ffmpeg starts, which is stopped when the look fails (a file\'s: SIGKILL)', async () => {
    vi.useFakeTimers();
    const children: SlowToDie[] = [];
    let error: (Error & { code?: string }) | undefined;
    ffmpegSource({
      id: 'cam',
      input: { url: hung.path, kind: 'file', rate: 'native', loop: false },
      output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' },
      ffmpegPath: 'ffmpeg',
      memo: { readsOnce: false },
      spawn: (_c, args) => {
        const c = new SlowToDie(args, 64 * 48 * 3);
        children.push(c);
        return c.asChild();
      },
    }).subscribe({ error: (e: Error) => (error = e) });
    await vi.advanceTimersByTimeAsync(FILE_STAT_TIMEOUT_MS);
    await vi.runOnlyPendingTimersAsync();
    expect(error?.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    expect(children.map((c) => c.signals)).toEqual([['SIGKILL']]);
  });

  it("a run's source (supervised) looks at it only so: no synchronous stat (readsOnce's), the start fails coded and naming the file, retried", async () => {
    vi.useFakeTimers();
    const looksBefore = syncLooks.length;
    const children: SlowToDie[] = [];
    const transitions: Transition[] = [];
    const sub = supervisedSource({
      id: 'cam',
      input: { url: hung.path, kind: 'file', rate: 'native', loop: false },
      output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' },
      ffmpegPath: 'ffmpeg',
      reconnect: { initialDelayMs: 10, maxDelayMs: 10, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 60_000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
      onTransition: (t) => transitions.push(t),
      spawn: (_c, args) => {
        const c = new SlowToDie(args, 64 * 48 * 3);
        children.push(c);
        return c.asChild();
      },
    }).subscribe({ error: () => {} });
    try {
      // The loop runs meanwhile: the bound's timer fires; the event loop was never held.
      for (let i = 0; i < 3; i++) {
        await vi.advanceTimersByTimeAsync(FILE_STAT_TIMEOUT_MS);
        await vi.runOnlyPendingTimersAsync();
      }
      expect(syncLooks.length - looksBefore).toBe(0);
      const retried = transitions.filter((t) => t.state === 'reconnecting');
      expect(retried.length).toBeGreaterThanOrEqual(2);
      expect(retried[0].code).toBe(ErrorCodes.SOURCE_TIMEOUT);
      expect(retried[0].reason).toContain(`source "cam": ${hung.path}: the file system gave no answer`);
      // No ffmpeg is started on a file not yet looked at (it would wait on the mount too).
      expect(children).toHaveLength(0);
      // Stopped while a look waits: stopped at once, nothing left to fire.
      await vi.advanceTimersByTimeAsync(20);
      sub.unsubscribe();
      expect(transitions.at(-1)?.state).toBe('stopped');
      const seen = transitions.length;
      await vi.advanceTimersByTimeAsync(3 * FILE_STAT_TIMEOUT_MS);
      expect(transitions).toHaveLength(seen);
    } finally {
      sub.unsubscribe();
    }
  });

  it("a source retried on a mount that does not answer waits on one stat, not one more of libuv's 4 threads per retry", async () => {
    vi.useFakeTimers();
    const before = hung.stats;
    for (let i = 0; i < 6; i++) {
      const look = fileProblem('/argus-test-hung-mount/other.mp4', 100);
      await vi.advanceTimersByTimeAsync(100);
      await vi.runOnlyPendingTimersAsync();
      expect((await look)?.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    }
    expect(hung.stats - before).toBe(1);
  });

  it('a file that answers is looked at anew each time: a folder, a named pipe or device (read once)', async () => {
    expect(await fileLook('/tmp')).toEqual({ problem: { code: ErrorCodes.SOURCE_OPEN, why: '/tmp is a folder, not a file' } });
    expect(await fileLook('/dev/null')).toEqual({ readsOnce: true });
  });

  it('a file not there, a folder: said as before', async () => {
    expect(await fileProblem('/argus-test-not-there.mp4')).toEqual({ code: ErrorCodes.SOURCE_OPEN, why: 'file not found: /argus-test-not-there.mp4' });
    expect((await fileProblem('/tmp'))?.why).toBe('/tmp is a folder, not a file');
  });

  it("a stat's error other than not found (a link loop, a path through a file, a name too long, EIO) is said as it is, coded and naming the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-stat-error-'));
    try {
      const loop = join(dir, 'loop.mp4');
      symlinkSync(loop, loop);
      writeFileSync(join(dir, 'plain'), 'x');
      expect(await fileProblem(loop)).toEqual({ code: ErrorCodes.SOURCE_OPEN, why: `${loop}: too many levels of symbolic links (ELOOP): a link on its path leads back to itself` });
      expect(await fileProblem(join(dir, 'plain', 'x.mp4'))).toEqual({ code: ErrorCodes.SOURCE_OPEN, why: `${join(dir, 'plain', 'x.mp4')}: not found: a part of its path is a file, not a folder (ENOTDIR)` });
      const long = join(dir, `${'n'.repeat(300)}.mp4`);
      expect((await fileProblem(long))?.why).toBe(`${long}: its name, or a part of it, is too long for the file system (ENAMETOOLONG)`);
      // (Root enters any folder: EACCES and EIO by their codes.)
      expect(statProblem('/mnt/x.mp4', Object.assign(new Error('x'), { code: 'EACCES' })).why).toBe("/mnt/x.mp4: permission denied (EACCES): a folder on its path is not this user's to enter");
      expect(statProblem('/mnt/x.mp4', Object.assign(new Error('x'), { code: 'EIO' })).why).toMatch(/^\/mnt\/x\.mp4: an input\/output error \(EIO\)/);
      expect(statProblem('/mnt/x.mp4', Object.assign(new Error('x'), { code: 'EOVERFLOW' })).why).toBe('/mnt/x.mp4: cannot be looked at (EOVERFLOW)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
