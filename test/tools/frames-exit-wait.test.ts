// argus detect and preview read an interlaced stream again, deinterlaced (tools/frames): the second
// ffmpeg starts once the first has exited, as a run's source's does (ffmpeg-source afterExit). A V4L2
// device (busy while open), a camera that takes one session at a time or a UDP port refuse a second
// ffmpeg while the first still holds them. Real ffmpeg, whose exit is made known 600 ms late (as
// one's comes while its device's driver releases it).
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

const hooks: { onSpawn?: (c: ChildProcess) => void } = {};
vi.mock('node:child_process', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:child_process')>();
  return {
    ...real,
    spawn: (...a: Parameters<typeof real.spawn>) => {
      const c = real.spawn(...a);
      hooks.onSpawn?.(c);
      return c;
    },
  };
});

const { resolveFfmpegSync } = await import('../../src/sources/ffmpeg-path.js');
const { videoFrames } = await import('../../src/tools/frames.js');
const { FFMPEG_EXIT_WAIT_MS } = await import('../../src/sources/ffmpeg-source.js');
const ffmpeg = resolveFfmpegSync().path;

describe('videoFrames reading an interlaced stream again', () => {
  it("starts the second ffmpeg once the first has exited, not beside it; an ffmpeg that does not exit delays it by FFMPEG_EXIT_WAIT_MS at most", async () => {
    const clip = join(mkdtempSync(join(tmpdir(), 'argus-frames-exit-')), 'i.ts');
    // 320x240, H.264 coded interlaced, top field first: 10 frames.
    execFileSync(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=320x240:r=50', '-f', 'lavfi', '-i', 'color=c=white:s=40x60:r=50', '-filter_complex', "[0][1]overlay=x='mod(n*8\\,280)':y=100,trim=end_frame=20,tinterlace=mode=interleave_top,setfield=tff", '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-flags', '+ildct+ilme', '-x264-params', 'tff=1', '-f', 'mpegts', clip]);
    const read = async (lateMs: number) => {
      const events: string[] = [];
      const spawned: ChildProcess[] = [];
      hooks.onSpawn = (c) => {
        if (!c.spawnargs.join(' ').includes(clip)) return;
        const k = spawned.push(c) - 1;
        events.push(`spawn ${k}`);
        c.once('exit', () => events.push(`exit ${k}`));
        // Its exit is known lateMs after it comes (a process still in the kernel, holding the device).
        const emit = c.emit.bind(c) as (event: string, ...args: unknown[]) => boolean;
        c.emit = ((event: string, ...args: unknown[]) => {
          if (event !== 'exit' && event !== 'close') return emit(event, ...args);
          setTimeout(() => emit(event, ...args), lateMs);
          return true;
        }) as typeof c.emit;
      };
      const t = performance.now();
      let frames = 0;
      let secondAt = 0;
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: clip })) {
        frames++;
      }
      secondAt = performance.now() - t;
      hooks.onSpawn = undefined;
      return { events, frames, secondAt, args: spawned.map((c) => c.spawnargs.join(' ')) };
    };
    const slow = await read(600);
    expect(slow.frames).toBe(10);
    expect(slow.args[1]).toContain('bwdif');
    // Before: spawn 0, spawn 1, exit 0 (the second beside the first, which held the input).
    expect(slow.events.slice(0, 3)).toEqual(['spawn 0', 'exit 0', 'spawn 1']);
    // One that does not exit within the bound: the second starts anyway, after FFMPEG_EXIT_WAIT_MS.
    const stuck = await read(FFMPEG_EXIT_WAIT_MS + 1500);
    expect(stuck.frames).toBe(10);
    expect(stuck.events.slice(0, 2)).toEqual(['spawn 0', 'spawn 1']);
    expect(stuck.secondAt).toBeGreaterThanOrEqual(FFMPEG_EXIT_WAIT_MS);
  }, 60_000);
});
