// A file source's look at its file before ffmpeg starts: asynchronous and bounded. statSync on a
// network mount that stopped answering stopped the event loop (every source, sink and timer).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SlowToDie } from './fake-ffmpeg.js';

const hung = vi.hoisted(() => ({ path: '/argus-test-hung-mount/clip.mp4' }));
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>();
  // A stat on the hung mount never answers (it waits in the kernel, in libuv's thread pool).
  return { ...real, stat: (p: string, ...rest: unknown[]) => (p === hung.path ? new Promise(() => {}) : (real.stat as (...a: unknown[]) => Promise<unknown>)(p, ...rest)) };
});

const { ffmpegSource, fileProblem, FILE_STAT_TIMEOUT_MS } = await import('../../src/sources/ffmpeg-source.js');
const { ErrorCodes } = await import('../../src/core/errors.js');

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
    // Its ffmpeg is stopped (a file's: SIGKILL).
    expect(children.map((c) => c.signals)).toEqual([['SIGKILL']]);
  });

  it('a file not there, a folder: said as before', async () => {
    expect(await fileProblem('/argus-test-not-there.mp4')).toEqual({ code: ErrorCodes.SOURCE_OPEN, why: 'file not found: /argus-test-not-there.mp4' });
    expect((await fileProblem('/tmp'))?.why).toBe('/tmp is a folder, not a file');
  });
});
