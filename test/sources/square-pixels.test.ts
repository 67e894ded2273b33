import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, take, toArray } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource, type FfmpegSourceOptions } from '../../src/sources/ffmpeg-source.js';
import { videoFrames } from '../../src/tools/frames.js';
import { runCommand } from '../helpers/cli.js';

// A picture of non-square pixels (SAR 2:1), as an anamorphic camera or a DVD stores it: 384x432
// stored, shown 768x432 by every player. Its left half is white, its right half black, so where
// the edge lands says whether the picture was widened.
const ffmpeg = defaultFfmpegPath();
let clip: string;
let still: string;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-sar-'));
  clip = join(dir, 'anamorphic.mp4');
  still = join(dir, 'density.jpg');
  const picture = (w: number, h: number) => `color=c=white:s=${w}x${h}:r=10:d=0.5,drawbox=x=${w / 2}:y=0:w=${w / 2}:h=${h}:color=black:t=fill,setsar=2`;
  await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', picture(384, 432), '-c:v', 'libx264', '-pix_fmt', 'yuv420p', clip]);
  // A JPEG whose JFIF density is 2:1 (ffmpeg reads it as a SAR; image viewers ignore it).
  await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', picture(64, 48), '-frames:v', '1', still]);
}, 30_000);

const output = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const opts = (url: string, frame: 'letterbox' | 'source' | 'source-yuv'): FfmpegSourceOptions => ({
  id: 'cam',
  input: { url, kind: 'file', rate: 'fast', loop: false },
  output: { ...output, rounding: 'floor', frame },
  ffmpegPath: ffmpeg,
});
/** The grey level (first channel) of packed 3-channel pixels at (x, y) of a `width`-wide picture. */
const at = (data: Buffer, width: number, x: number, y: number) => data[(y * width + x) * 3];

describe('a video of non-square pixels (SAR 2:1, 384x432 stored, 768x432 shown)', () => {
  it.each(['source', 'source-yuv'] as const)('ffmpegSource, frames at the source size (%s): the picture as shown, 768x432, white to x 383 and black from 384', async (frame) => {
    const [f] = await lastValueFrom(ffmpegSource(opts(clip, frame)).pipe(take(1), toArray()));
    expect([f.letterbox.srcWidth, f.letterbox.srcHeight]).toEqual([768, 432]);
    if (f.layout === 'yuv420p') {
      expect(f.data.length).toBe(768 * 432 + 2 * 384 * 216);
      expect([f.data[200 * 768 + 370], f.data[200 * 768 + 400]].map((v) => v > 128)).toEqual([true, false]);
    } else {
      expect(f.data.length).toBe(768 * 432 * 3);
      expect([at(f.data, 768, 370, 200), at(f.data, 768, 400, 200)].map((v) => v > 128)).toEqual([true, false]);
    }
  }, 30_000);

  it('ffmpegSource, letterboxed by ffmpeg (model.resize: fast): the letterbox of the 768x432 picture, the edge at x 208 of 416', async () => {
    const [f] = await lastValueFrom(ffmpegSource(opts(clip, 'letterbox')).pipe(take(1), toArray()));
    expect(f.letterbox).toMatchObject({ srcWidth: 768, srcHeight: 432, scaledWidth: 416, scaledHeight: 233 });
    expect([at(f.data, 416, 200, 100), at(f.data, 416, 216, 100)].map((v) => v > 128)).toEqual([true, false]);
    expect(f.data.subarray(300 * 416 * 3, 301 * 416 * 3).every((v) => v === 114)).toBe(true); // below the picture: padding
  }, 30_000);

  it('videoFrames (argus detect, argus preview): frames of 768x432, as shown', async () => {
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: clip })) {
      expect([f.width, f.height]).toEqual([768, 432]);
      expect([at(f.data, 768, 370, 200), at(f.data, 768, 400, 200)].map((v) => v > 128)).toEqual([true, false]);
    }
  }, 30_000);

  it('a SAR below 1 (a rotated anamorphic clip: 432x384 at 1:2 once turned, shown 9:16) keeps its width and gains height, 432x768: no detail is thrown away', async () => {
    const tall = join(mkdtempSync(join(tmpdir(), 'argus-sar-')), 'tall.mp4');
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=white:s=432x384:r=10:d=0.3,drawbox=x=0:y=192:w=432:h=192:color=black:t=fill,setsar=1/2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', tall]);
    const [f] = await lastValueFrom(ffmpegSource(opts(tall, 'source')).pipe(take(1), toArray()));
    expect([f.letterbox.srcWidth, f.letterbox.srcHeight]).toEqual([432, 768]);
    expect([at(f.data, 432, 200, 370), at(f.data, 432, 200, 400)].map((v) => v > 128)).toEqual([true, false]);
    const [g] = await lastValueFrom(ffmpegSource(opts(tall, 'letterbox')).pipe(take(1), toArray()));
    expect(g.letterbox).toMatchObject({ srcWidth: 432, srcHeight: 768, scaledWidth: 233, scaledHeight: 416 });
    expect([at(g.data, 416, 100, 100), at(g.data, 416, 240, 100)]).toEqual([255, 114]); // the picture, then padding
    for await (const v of videoFrames({ ffmpegPath: ffmpeg, url: tall })) expect([v.width, v.height]).toEqual([432, 768]);
  }, 30_000);

  it('a SAR beyond 8:1 either way is no pixel shape a camera makes (a broken or hostile file): ignored, the picture as stored; 1:3000 made 60x136656 frames, a coded error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-sar-'));
    for (const [sar, size] of [['1/3000', '640x480'], ['100', '64x48']]) {
      const odd = join(dir, `odd-${sar.replace('/', '-')}.mkv`);
      await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', `testsrc=s=${size}:r=10:d=0.3,setsar=${sar}`, '-c:v', 'ffv1', odd]);
      const [f] = await lastValueFrom(ffmpegSource(opts(odd, 'source')).pipe(take(1), toArray()));
      expect(`${f.letterbox.srcWidth}x${f.letterbox.srcHeight}`).toBe(size);
      const [g] = await lastValueFrom(ffmpegSource(opts(odd, 'letterbox')).pipe(take(1), toArray()));
      expect(`${g.letterbox.srcWidth}x${g.letterbox.srcHeight}`).toBe(size);
      for await (const v of videoFrames({ ffmpegPath: ffmpeg, url: odd })) expect(`${v.width}x${v.height}`).toBe(size);
    }
  }, 30_000);

  it("a still image's JFIF density is no pixel shape (viewers ignore it, as sharp does in argus detect): 64x48 as stored", async () => {
    const [f] = await lastValueFrom(ffmpegSource(opts(still, 'source')).pipe(toArray()));
    expect([f.letterbox.srcWidth, f.letterbox.srcHeight]).toEqual([64, 48]);
    const [g] = await lastValueFrom(ffmpegSource(opts(still, 'letterbox')).pipe(toArray()));
    expect(g.letterbox).toMatchObject({ srcWidth: 64, srcHeight: 48, scaledWidth: 416, scaledHeight: 312 });
    for await (const v of videoFrames({ ffmpegPath: ffmpeg, url: still })) expect([v.width, v.height]).toEqual([64, 48]);
  }, 30_000);

  it("the same JPEG named by URL (an HTTP camera's snapshot, which ffmpeg fetches and decodes, not sharp): 64x48 as stored, not 128x48", async () => {
    const body = readFileSync(still);
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': body.length }).end(body));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/snapshot.jpg`;
      const http = (frame: 'letterbox' | 'source'): FfmpegSourceOptions => ({ ...opts(url, frame), input: { url, kind: 'http', rate: 'native', loop: false } });
      const [f] = await lastValueFrom(ffmpegSource(http('source')).pipe(take(1), toArray()));
      expect([f.letterbox.srcWidth, f.letterbox.srcHeight]).toEqual([64, 48]);
      const [g] = await lastValueFrom(ffmpegSource(http('letterbox')).pipe(take(1), toArray()));
      expect(g.letterbox).toMatchObject({ srcWidth: 64, srcHeight: 48, scaledWidth: 416, scaledHeight: 312 });
      for await (const v of videoFrames({ ffmpegPath: ffmpeg, url })) expect([v.width, v.height]).toEqual([64, 48]);
    } finally {
      server.close();
    }
  }, 30_000);
});
