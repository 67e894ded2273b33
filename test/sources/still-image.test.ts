import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, take, toArray } from 'rxjs';
import sharp from 'sharp';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource, type FfmpegSourceOptions } from '../../src/sources/ffmpeg-source.js';
import type { Transition } from '../../src/sources/health.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { readImage, videoFrames } from '../../src/tools/frames.js';
import { MIRROR } from '../helpers/assets.js';

// Every picture argus's sharp is asked to open (the real sharp, counted).
const opened = vi.hoisted(() => ({ paths: [] as string[] }));
vi.mock('../../src/core/sharp.js', async () => {
  const real = (await import('sharp')).default;
  const counted = (input?: unknown, options?: object) => {
    if (typeof input === 'string') opened.paths.push(input);
    return real(input as string, options);
  };
  return { loadSharp: async () => Object.assign(counted, real) };
});

// Still images are read by one decoder wherever argus reads them: `argus detect` (readImage),
// `argus preview` (videoFrames) and a pipeline's source (ffmpegSource) see the same pixels.
// ffmpeg 5.1, which read them for preview and run, left a PNG, WebP, TIFF or AVIF on its side
// where its EXIF says to turn it (detect turned it), decoded a JPEG-compressed TIFF (libvips'
// default) to a flat green picture without a word, and converted CMYK otherwise than detect.
const STREET = `${MIRROR}/images/000000001268.jpg`; // 640x427
const ffmpeg = defaultFfmpegPath();
const files: Record<string, string> = {};
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-still-'));
  const street = () => sharp(STREET);
  // Stored turned a quarter to the left (427x640), EXIF orientation 6: shown upright, 640x427.
  const sideways = () => street().rotate(270).withMetadata({ orientation: 6 });
  const made: [string, Promise<unknown>][] = [
    ['turned.png', sideways().png().toFile(join(dir, 'turned.png'))],
    ['turned.webp', sideways().webp().toFile(join(dir, 'turned.webp'))],
    ['turned.tif', sideways().tiff({ compression: 'lzw' }).toFile(join(dir, 'turned.tif'))],
    ['jpeg.tif', street().tiff({ compression: 'jpeg' }).toFile(join(dir, 'jpeg.tif'))],
    ['cmyk.jpg', street().toColourspace('cmyk').jpeg().toFile(join(dir, 'cmyk.jpg'))],
  ];
  for (const [name, p] of made) {
    await p;
    files[name] = join(dir, name);
  }
}, 30_000);

const output = { width: 416, height: 416, pixelFormat: 'rgb24' as const, align: 'top-left' as const, padValue: 114, rounding: 'floor' as const };
const opts = (url: string, frame: 'letterbox' | 'source', loop = false): FfmpegSourceOptions => ({
  id: 'cam',
  input: { url, kind: 'file', rate: 'fast', loop },
  output: { ...output, frame },
  ffmpegPath: ffmpeg,
});

describe('a still image: the same pixels for detect, preview and a pipeline source', () => {
  it.each(['turned.png', 'turned.webp', 'turned.tif', 'jpeg.tif', 'cmyk.jpg'])('%s: upright 640x427, and ffmpegSource and videoFrames give exactly readImage\'s pixels', async (name) => {
    const file = files[name];
    const ref = await readImage(file);
    expect([ref.width, ref.height]).toEqual([640, 427]);
    const [f] = await lastValueFrom(ffmpegSource(opts(file, 'source')).pipe(toArray()));
    expect([f.letterbox.srcWidth, f.letterbox.srcHeight]).toEqual([640, 427]);
    expect(f.data.equals(ref.data)).toBe(true);
    const viaTools = [];
    for await (const v of videoFrames({ ffmpegPath: ffmpeg, url: file })) viaTools.push(v);
    expect(viaTools).toHaveLength(1);
    expect([viaTools[0].width, viaTools[0].height]).toEqual([640, 427]);
    expect(viaTools[0].data.equals(ref.data)).toBe(true);
    // Letterboxed by ffmpeg (model.resize: fast): the upright picture's letterbox.
    const [g] = await lastValueFrom(ffmpegSource(opts(file, 'letterbox')).pipe(toArray()));
    expect(g.letterbox).toMatchObject({ srcWidth: 640, srcHeight: 427, scaledWidth: 416, scaledHeight: 277 });
  }, 30_000);

  it('an empty file or a folder (argus detect, preview): said so, coded; they were sharp\'s "unsupported image format", a folder "not a regular file (a named pipe or a device)", an empty video ffmpeg\'s "moov atom not found"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-still-'));
    const [empty, folder, emptyVideo] = [join(dir, 'empty.jpg'), join(dir, 'folder.jpg'), join(dir, 'empty.mp4')];
    writeFileSync(empty, '');
    mkdirSync(folder);
    writeFileSync(emptyVideo, '');
    const failure = async (f: () => Promise<unknown>) => f().then(() => undefined, (e: unknown) => e);
    expect(await failure(() => readImage(empty))).toMatchObject({ code: 'VAP_ERR_SOURCE_PROBE', message: `image: ${empty} is empty (0 bytes)` });
    expect(await failure(() => readImage(folder))).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN', message: `image: ${folder} is a folder, not a file` });
    const read = async () => {
      for await (const _ of videoFrames({ ffmpegPath: ffmpeg, url: emptyVideo })) void _;
    };
    expect(await failure(read)).toMatchObject({ code: 'VAP_ERR_SOURCE_PROBE', message: `video: ${emptyVideo} is empty (0 bytes)` });
  });

  it('looped (loop: true), the picture comes again and again', async () => {
    const frames = await lastValueFrom(ffmpegSource(opts(files['turned.png'], 'source', true)).pipe(take(5), toArray()));
    const ref = await readImage(files['turned.png']);
    expect(frames.map((f) => f.seq)).toEqual([0, 1, 2, 3, 4]);
    for (const f of frames) expect(f.data.equals(ref.data)).toBe(true);
  }, 30_000);
});

describe('a looped still in a pipeline (supervisedSource: each loop is a run of one frame)', () => {
  const sup = (url: string, onTransition?: (t: Transition) => void) =>
    supervisedSource({
      id: 'cam',
      input: { url, kind: 'file', rate: 'fast', loop: true },
      output: { ...output, frame: 'source' },
      ffmpegPath: ffmpeg,
      reconnect: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 },
      onTransition,
    });
  const picture = (r: number, g: number, b: number) => sharp({ create: { width: 64, height: 48, channels: 3, background: { r, g, b } } }).png().toBuffer();

  it('is decoded once, not at every loop, and again once its file is written anew (a snapshot replaced on disk)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-still-')), 'snap.png');
    const [red, blue] = [await picture(255, 0, 0), await picture(0, 0, 255)];
    writeFileSync(file, red);
    const before = opened.paths.filter((p) => p === file).length;
    let replaced = false;
    const frames: Frame[] = [];
    await new Promise<void>((done, fail) => {
      const sub = sup(file).subscribe({
        next: (f) => {
          frames.push(f);
          // Four frames (four runs) of the first picture, then the file is written anew.
          if (frames.length === 4) {
            writeFileSync(file, blue);
            replaced = true;
          } else if (replaced && f.data[2] === 255) {
            sub.unsubscribe(); // blue (rgb24)
            done();
          }
        },
        error: fail,
      });
    });
    expect(frames.slice(0, 4).every((f) => f.data[0] === 255 && f.data[2] === 0)).toBe(true); // red
    // Each picture decoded once (the four runs of the red one were one decode; the blue one's runs another).
    expect(opened.paths.filter((p) => p === file).length - before).toBe(2);
  }, 30_000);

  it('rewritten in place (empty, then half written) while it loops: the source is tried again and goes on with the new picture, as when ffmpeg decoded it (it failed for good, VAP_ERR_SOURCE_OPEN)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-still-')), 'snap.png');
    const [red, blue] = [await picture(255, 0, 0), await picture(0, 0, 255)];
    writeFileSync(file, red);
    const states: string[] = [];
    let frames = 0;
    await new Promise<void>((done, fail) => {
      const sub = sup(file, (t) => {
        states.push(`${t.state}${t.code ? ` ${t.code}` : ''}`);
        // The uploader goes on: half the file at the first retry, all of it at the second.
        if (t.state === 'reconnecting' && t.attempt === 1) writeFileSync(file, blue.subarray(0, blue.length >> 1));
        if (t.state === 'reconnecting' && t.attempt === 2) writeFileSync(file, blue);
      }).subscribe({
        next: (f) => {
          if (++frames === 3) writeFileSync(file, Buffer.alloc(0)); // the uploader starts writing it anew
          if (f.data[2] === 255) {
            sub.unsubscribe(); // the new picture, blue
            done();
          }
        },
        error: fail,
      });
    });
    expect(states).toEqual(['starting', 'streaming', 'reconnecting VAP_ERR_SOURCE_PROBE', 'reconnecting VAP_ERR_SOURCE_PROBE', 'streaming', 'stopped']);
  }, 30_000);

  it('undecodable at its first start: failed for good (VAP_ERR_SOURCE_PROBE), as a file ffmpeg cannot read', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-still-')), 'not-a-picture.jpg');
    writeFileSync(file, 'not a picture');
    const states: string[] = [];
    const err = await lastValueFrom(sup(file, (t) => states.push(t.state))).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_PROBE', message: expect.stringContaining(`image ${file}: cannot be decoded`) });
    expect(states).toEqual(['starting', 'failed']);
  }, 30_000);
});
