import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { sampleFilter } from '../../src/sources/ffmpeg-args.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

const ffmpeg = resolveFfmpegSync().path;

/**
 * The times (s) of the frames that `sampleFilter(fps)` keeps, run by the real ffmpeg on
 * `count` frames whose timestamps (µs time base, as a live source's wall clock) are `pts`, an
 * ffmpeg expression in seconds of the frame number N (random(0): ffmpeg's own seeded generator,
 * the same sequence every run).
 */
async function kept(pts: string, fps: number, count = 80, centred = true): Promise<number[]> {
  const vf = [`settb=1/1000000`, `setpts=(${pts.replace(/,/g, '\\,')})/TB`, sampleFilter(fps, centred), 'showinfo'].join(',');
  const { stderr } = await promisify(execFile)(ffmpeg, ['-hide_banner', '-nostdin', '-f', 'lavfi', '-i', `testsrc=rate=10:size=32x32:duration=${count / 10}`, '-vf', vf, '-vsync', 'passthrough', '-f', 'null', '-']);
  return [...stderr.matchAll(/pts_time:(\S+)/g)].map((m) => Number(m[1]));
}

const spacings = (t: number[]) => t.slice(1).map((x, i) => x - t[i]);

describe('fps sampling of a live source (the select filter, run by ffmpeg)', () => {
  it('a source at exactly the sampling rate keeps every frame, its times exactly on multiples of 1/fps (counted from 0, floating point dropped 14 of 80)', async () => {
    const t = await kept('N/10', 10);
    expect(t).toHaveLength(80);
  }, 20_000);

  it('a source at the sampling rate whose arrival times jitter ±15 ms around the interval edges keeps every frame (counted from 0: 60 of 80)', async () => {
    const t = await kept('N/10+0.03*(random(0)-0.5)', 10);
    expect(t).toHaveLength(80);
    expect(new Set(t).size).toBe(80);
  }, 20_000);

  it('a faster source keeps at most one frame per interval: 30 fps sampled at 10 keeps every third, 12 fps at 10 keeps 10 a second', async () => {
    const t30 = await kept('N/30', 10, 240);
    // 8 s: 80 intervals (the first one starts half an interval before the first frame).
    expect(t30.length).toBeGreaterThanOrEqual(80);
    expect(t30.length).toBeLessThanOrEqual(81);
    expect(Math.min(...spacings(t30).slice(1))).toBeGreaterThan(0.099);
    const t12 = await kept('N/12', 10, 96);
    expect(t12.length).toBeGreaterThanOrEqual(80);
    expect(t12.length).toBeLessThanOrEqual(81);
    expect(Math.min(...spacings(t12))).toBeGreaterThan(0.05);
  }, 20_000);

  it('a slower source keeps every frame, never one twice', async () => {
    const t = await kept('N/5+0.01*random(0)', 10, 40);
    expect(t).toHaveLength(40);
    expect(Math.min(...spacings(t))).toBeGreaterThan(0.15);
  }, 20_000);

  it('a small step back in time (arrival times out of order by a few ms) keeps no near-duplicate: at most one frame per interval', async () => {
    // 30 fps with ±25 ms of jitter, sampled at 1 fps: the times go back by a few ms now and then.
    const t = await kept('N/30+0.05*(random(0)-0.5)', 1, 240);
    expect(t.length).toBeLessThanOrEqual(9);
    expect(Math.min(...spacings(t))).toBeGreaterThan(0.5);
  }, 20_000);

  it('a time that jumps back (a relayed camera\'s RTP time) starts the count again from that frame', async () => {
    // 40 frames, then the times start again 0.3499 s in, just short of an interval edge of the
    // first count, with 5 ms of jitter.
    const t = await kept('if(lt(N,40),N/10,(N-40)/10+0.3499)+0.005*random(0)', 10);
    expect(t).toHaveLength(80);
  }, 20_000);
});

describe('fps sampling of a file (exact times: argus detect --fps)', () => {
  it('the first frame at or after each 1/fps step from the first frame: one frame in the first interval, none shifted by half of one', async () => {
    const t = await kept('N/30', 1, 300, false);
    expect(t.map((x) => Math.round(x * 1000) / 1000)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Times exactly on the steps in floating point (3 × 0.1 is 0.30000000000000004, 0.7 is 0.69999999999999996): none lost.
    expect(await kept('N/10', 10, 80, false)).toHaveLength(80);
    // Container times rounded: a 15 fps GIF's to 10 ms (0.13 s for 0.1333 s), a 30 fps MKV's to 1 ms.
    expect(await kept('floor(N*100/15+0.5)/100', 15, 75, false)).toHaveLength(75);
    expect(await kept('floor(N*1000/30)/1000', 30, 90, false)).toHaveLength(90);
  }, 20_000);
});
