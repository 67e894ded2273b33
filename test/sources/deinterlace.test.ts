import { execFileSync, type ChildProcess } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, timeout, toArray } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import type { Deinterlace } from '../../src/sources/ffmpeg-args.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { videoFrames } from '../../src/tools/frames.js';
import { runCommand } from '../helpers/cli.js';
import { resizedClip } from '../helpers/resized-video.js';

// A white box (100x150 at y 200) moving 16 px a field to the right on black, 720x576: as an
// analogue-to-IP encoder sends it, interlaced (each frame's even rows are one moment, its odd
// rows the next: 25 frames, 50 fields a second), H.264 coded interlaced and flagged top field
// first. Undeinterlaced, the box's rows alternate between two places 16 px apart ("combing").
// Its progressive twin (25p, the same motion) is the control.
const ffmpeg = defaultFfmpegPath();
const FRAMES = 12;
let interlaced: string;
let interlacedTs: string;
let progressive: string;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-interlaced-'));
  interlaced = join(dir, 'i576.mp4');
  progressive = join(dir, 'p576.mp4');
  const box = (rate: number, step: number) => ['-f', 'lavfi', '-i', `color=c=black:s=720x576:r=${rate}`, '-f', 'lavfi', '-i', `color=c=white:s=100x150:r=${rate}`, '-filter_complex', `[0][1]overlay=x='mod(n*${step}\\,600)':y=200,trim=end_frame=${(FRAMES * rate) / 25}`];
  const h264 = ['-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '25'];
  await runCommand(ffmpeg, ['-v', 'error', ...box(50, 16).slice(0, -1), `${box(50, 16).at(-1)},tinterlace=mode=interleave_top,setfield=tff`, ...h264, '-flags', '+ildct+ilme', '-x264-params', 'tff=1', interlaced]);
  await runCommand(ffmpeg, ['-v', 'error', ...box(25, 32), ...h264, progressive]);
  // The same stream in MPEG-TS, which a pipe can carry (an MP4's index is at its end).
  interlacedTs = join(dir, 'i576.ts');
  await runCommand(ffmpeg, ['-v', 'error', '-i', interlaced, '-c', 'copy', interlacedTs]);
}, 60_000);

const run = async (url: string, frame: 'letterbox' | 'source' | 'source-yuv', deinterlace?: Deinterlace) => {
  const spawned: string[][] = [];
  const frames = await lastValueFrom(
    ffmpegSource({
      id: 'cam',
      input: { url, kind: 'file', rate: 'fast', loop: false, ...(deinterlace ? { decode: { lowLatency: true, threads: 1, deinterlace } } : {}) },
      output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame },
      ffmpegPath: ffmpeg,
      onSpawn: (c: ChildProcess) => spawned.push(c.spawnargs),
    }).pipe(toArray()),
  );
  const last = spawned.at(-1)!;
  return { frames, spawned, vf: last[last.indexOf('-vf') + 1] };
};

/** The first white column of row `y` (first channel) of a `width`-wide picture, `step` bytes a pixel. */
const leftEdge = (data: Buffer, width: number, y: number, step: number): number => {
  for (let x = 0; x < width; x++) if (data[(y * width + x) * step] > 128) return x;
  return -1;
};
/** Rows 200–349 hold the box: the largest difference between the left edges of a row and the next. */
const comb = (f: Frame, width: number): number => {
  const step = f.layout === 'yuv420p' ? 1 : 3;
  let worst = 0;
  for (let y = 210; y < 340; y++) worst = Math.max(worst, Math.abs(leftEdge(f.data, width, y, step) - leftEdge(f.data, width, y + 1, step)));
  return worst;
};

describe('an interlaced clip (576i, H.264 top field first, a box moving 16 px a field)', () => {
  it.each(['source', 'source-yuv'] as const)('frames at the source size (%s, argus letterboxes): deinterlaced, the box’s rows in one place; every frame, at its own time', async (frame) => {
    const { frames, vf } = await run(interlaced, frame);
    expect(vf).toMatch(/^bwdif=mode=send_frame:parity=auto:deint=interlaced,/);
    expect(frames).toHaveLength(FRAMES);
    expect(frames.map((f) => f.pts)).toEqual(frames.map((_, k) => expect.closeTo(k / 25, 6)));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_, k) => k));
    for (const f of frames) expect(comb(f, 720)).toBeLessThanOrEqual(2);
    // The box moves on from frame to frame: each frame is its own moment, not a repeat.
    const edges = frames.map((f) => leftEdge(f.data, 720, 250, f.layout === 'yuv420p' ? 1 : 3));
    expect(new Set(edges).size).toBe(FRAMES);
  }, 60_000);

  it('letterboxed by ffmpeg (model.resize: fast): deinterlaced before scaling, so the box’s left edge is sharp, not the two fields’ blend', async () => {
    const { frames, vf } = await run(interlaced, 'letterbox');
    expect(vf).toMatch(/^bwdif=[^,]+,scale=/);
    expect(frames).toHaveLength(FRAMES);
    for (const f of frames.slice(1)) {
      // Row 160 of 416 crosses the box (rows 115–202 once scaled by 416/720): the grey pixels
      // between black and white at its edges: 2–3 deinterlaced; two fields 16 px apart, blended
      // by the scaler, made 19–21 (117 where the box wraps round).
      const row = f.data.subarray(160 * 416 * 3, 161 * 416 * 3);
      let grey = 0;
      for (let x = 0; x < 416; x++) if (row[x * 3] > 40 && row[x * 3] < 215) grey++;
      expect(grey).toBeLessThanOrEqual(4);
    }
  }, 60_000);

  it('a named pipe (read once: a second read finds its writer gone): deinterlaced from its first read, one ffmpeg run, every frame', async () => {
    const fifo = join(mkdtempSync(join(tmpdir(), 'argus-fifo-')), 'cam.ts');
    execFileSync('mkfifo', [fifo]);
    // The writer writes the stream once, as an encoder's pipe would; a reader that goes away ends it.
    const writer = createWriteStream(fifo);
    writer.on('error', () => {});
    createReadStream(interlacedTs).pipe(writer);
    const spawned: string[][] = [];
    const frames = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: fifo, kind: 'file', rate: 'fast', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source' },
        ffmpegPath: ffmpeg,
        onSpawn: (c: ChildProcess) => spawned.push(c.spawnargs),
      }).pipe(timeout(30_000), toArray()),
    );
    expect(spawned).toHaveLength(1);
    expect(spawned[0].join(' ')).toContain('bwdif=mode=send_frame:parity=auto:deint=interlaced');
    expect(frames).toHaveLength(FRAMES);
    for (const f of frames) expect(comb(f, 720)).toBeLessThanOrEqual(2);
  }, 60_000);

  it('deinterlace: off leaves it as it comes: combed, its rows 16 px apart', async () => {
    const { frames, vf } = await run(interlaced, 'source', 'off');
    expect(vf).not.toContain('bwdif');
    expect(comb(frames[5], 720)).toBe(16);
  }, 60_000);

  it('videoFrames (argus detect, argus preview): deinterlaced too', async () => {
    let n = 0;
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: interlaced })) {
      const fake = { data: f.data, layout: 'source' } as unknown as Frame;
      expect(comb(fake, 720)).toBeLessThanOrEqual(2);
      n++;
    }
    expect(n).toBe(FRAMES);
  }, 60_000);

  it('videoFrames: a picture too small for the deinterlacer (under 4 lines a plane: 64x6, a 16x2 GIF) is read as before, not failed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-tiny-'));
    for (const [name, size, extra] of [['flat.mp4', '64x6', ['-pix_fmt', 'yuv420p']], ['tiny.gif', '16x2', []]] as const) {
      const file = join(dir, name);
      await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', `testsrc=size=${size}:rate=5`, '-frames:v', '3', ...extra, file]);
      const got: string[] = [];
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: file })) got.push(`${f.width}x${f.height}`);
      expect(got).toEqual([size, size, size]);
    }
  }, 60_000);
});

describe('a progressive clip (the same motion, 25p)', () => {
  it.each(['letterbox', 'source', 'source-yuv'] as const)('auto: one ffmpeg run, without a deinterlacer (no delay, no cost) (%s)', async (frame) => {
    const { frames, spawned } = await run(progressive, frame);
    expect(spawned).toHaveLength(1);
    expect(spawned[0].join(' ')).not.toContain('bwdif');
    expect(frames).toHaveLength(FRAMES);
  }, 60_000);
});

describe('an input that can be read only once (a named pipe), progressive', () => {
  it('a named pipe of a small picture (below the size given 4:2:0 frames): packed frames from its first read, not read again for them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
    const small = join(dir, 'small.ts');
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-frames:v', String(FRAMES), '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-f', 'mpegts', small]);
    const fifo = join(dir, 'cam.ts');
    execFileSync('mkfifo', [fifo]);
    const writer = createWriteStream(fifo);
    writer.on('error', () => {});
    createReadStream(small).pipe(writer);
    const spawned: string[][] = [];
    const frames = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: fifo, kind: 'file', rate: 'fast', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source-yuv' },
        ffmpegPath: ffmpeg,
        onSpawn: (c: ChildProcess) => spawned.push(c.spawnargs),
      }).pipe(timeout(30_000), toArray()),
    );
    expect(spawned).toHaveLength(1);
    expect(frames).toHaveLength(FRAMES);
    expect(frames.every((f) => f.layout === 'source' && f.data.length === 320 * 240 * 3)).toBe(true);
  }, 60_000);

  it('a named pipe whose resolution changes (frames at the source size): read on at the first size, once, to its end, not restarted at the new size (the restart waited for a writer gone with the first reader, for ever)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
    // 10 frames of 320x240, then 10 of 160x160.
    const { joined } = resizedClip(ffmpeg, dir);
    const fifo = join(dir, 'cam.ts');
    execFileSync('mkfifo', [fifo]);
    const writer = createWriteStream(fifo);
    writer.on('error', () => {});
    createReadStream(joined).pipe(writer);
    const spawned: string[][] = [];
    const states: string[] = [];
    const warnings: string[] = [];
    const frames = await lastValueFrom(
      supervisedSource({
        id: 'cam',
        input: { url: fifo, kind: 'file', rate: 'fast', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source' },
        ffmpegPath: ffmpeg,
        onSpawn: (c: ChildProcess) => spawned.push(c.spawnargs),
        relayLog: (m) => warnings.push(m),
        reconnect: { initialDelayMs: 100, maxDelayMs: 200, jitter: 0, maxAttempts: 2, healthyResetMs: 30_000 },
        watchdog: { startTimeoutMs: 3000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
        onTransition: (t) => states.push(t.state),
      }).pipe(timeout(20_000), toArray()),
    );
    expect(spawned).toHaveLength(1);
    expect(states).toEqual(['starting', 'streaming', 'ended']);
    expect(frames).toHaveLength(20);
    expect(frames.every((f) => f.data.length === 320 * 240 * 3)).toBe(true);
    expect(warnings).toEqual([expect.stringMatching(/^resolution changed from 320x240 to 160x160: .* can be read only once/)]);
  }, 60_000);

  it('a named pipe whose own rate (10 fps) is below the fps asked (25): read once, its frames delivered (some repeated by the fps filter), not read again without it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
    const slow = join(dir, 'slow.ts');
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=10', '-frames:v', '20', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-f', 'mpegts', slow]);
    const fifo = join(dir, 'cam.ts');
    execFileSync('mkfifo', [fifo]);
    const writer = createWriteStream(fifo);
    writer.on('error', () => {});
    createReadStream(slow).pipe(writer);
    const spawned: string[][] = [];
    const frames = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: fifo, kind: 'file', rate: 'fast', loop: false, fps: 25 },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source' },
        ffmpegPath: ffmpeg,
        onSpawn: (c: ChildProcess) => spawned.push(c.spawnargs),
      }).pipe(timeout(30_000), toArray()),
    );
    expect(spawned).toHaveLength(1);
    // 2 s of video at 25 fps (ffmpeg's count at its end may differ by a frame or two).
    expect(frames.length).toBeGreaterThanOrEqual(45);
    expect(frames.length).toBeLessThanOrEqual(52);
  }, 60_000);
});
