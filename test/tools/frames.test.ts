import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, map, toArray } from 'rxjs';
import sharp from 'sharp';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { bundledFfmpegPath, resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { videoFrames } from '../../src/tools/frames.js';
import { frameReport } from '../../src/sources/stderr-probe.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { runCommand } from '../helpers/cli.js';
import { resizedClip } from '../helpers/resized-video.js';

const ffmpeg = resolveFfmpegSync().path;
let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  server?.close();
  server = undefined;
});

/** A server on loopback that accepts connections and never answers (a camera that hangs). */
async function silentServer(): Promise<number> {
  server = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

describe('videoFrames (argus detect, argus preview): a source that never sends', () => {
  it.each([
    ['http', (port: number) => `http://127.0.0.1:${port}/cam.ts`],
    ['rtsp', (port: number) => `rtsp://127.0.0.1:${port}/cam`],
  ])('%s: accepted and then silent: VAP_ERR_SOURCE_TIMEOUT after stallMs, ffmpeg stopped, instead of waiting forever', async (_kind, url) => {
    const port = await silentServer();
    const u = url(port);
    let err: unknown;
    try {
      // 2 s: ffmpeg must have started and connected within it (at 0.5 s, a machine under load 13
      // had not always: "ffmpeg had connected" failed).
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: u, stallMs: 2000 })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_TIMEOUT');
    expect((err as Error).message).toBe(`no frame came from ${u} within 2 s`);
    expect(sockets.length).toBeGreaterThan(0); // ffmpeg had connected
  }, 30_000);
});

describe('an input without a video stream (an audio file)', () => {
  it('videoFrames and ffmpegSource: a coded probe error that says so, without ffmpeg\'s advice to make the map optional', async () => {
    const audio = join(mkdtempSync(join(tmpdir(), 'argus-audio-')), 'audio.m4a');
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'sine=d=0.5', audio]);
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: audio })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect((err as Error).message).toMatch(new RegExp(`^${audio.replace(/[.]/g, '\\.')} has no video stream:\n[^]*Audio: aac`));
    expect((err as Error).message).not.toContain('trailing');
    const src = await lastValueFrom(
      ffmpegSource({ id: 'a', input: { url: audio, kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 }, ffmpegPath: ffmpeg }),
    ).catch((e) => e);
    expect(isArgusError(src) && src.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect(src.message).toContain(`source "a": ${audio} has no video stream`);
    expect(src.message).not.toContain('trailing');
  });
});

describe('a program that is not ffmpeg (ARGUS_FFMPEG=/bin/true)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-not-ffmpeg-'));
  const video = join(dir, 'clip.mp4');
  writeFileSync(video, 'not read');
  const talker = join(dir, 'talker.sh');
  writeFileSync(talker, '#!/bin/sh\necho hello >&2\nexit 0\n', { mode: 0o755 });
  const saved = process.env.ARGUS_FFMPEG;
  afterEach(() => {
    if (saved === undefined) delete process.env.ARGUS_FFMPEG;
    else process.env.ARGUS_FFMPEG = saved;
  });

  it.each([
    ['exits 0 saying nothing', '/bin/true', 'exited with code 0'],
    ['exits 0 saying something else', talker, 'exited with code 0'],
    ['exits 1', '/bin/false', 'exited with code 1'],
  ])('%s: videoFrames and ffmpegSource say the program named by ARGUS_FFMPEG is not ffmpeg (VAP_ERR_SOURCE_OPEN), not that the file has no video stream', async (_n, program, ended) => {
    process.env.ARGUS_FFMPEG = program;
    const want = `the program named by ARGUS_FFMPEG (${program}) did not behave as ffmpeg: it ${ended} without ffmpeg's report of its input, and \`${program} -version\` gives no ffmpeg version; set ARGUS_FFMPEG to an ffmpeg executable, or unset it`;
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: program, url: video })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_OPEN');
    expect((err as Error).message).toBe(`${video}: ${want}`);
    const src = await lastValueFrom(
      ffmpegSource({ id: 'a', input: { url: video, kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 }, ffmpegPath: program }),
    ).catch((e) => e);
    expect(isArgusError(src) && src.code).toBe('VAP_ERR_SOURCE_OPEN');
    expect(src.message).toBe(`source "a": ${want}`);
  });

  it('a real ffmpeg that ends before any stream (a file it cannot read) is still the file\'s fault', async () => {
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: video })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_EXIT');
    expect((err as Error).message).toMatch(/^ffmpeg exited with code 1 decoding /);
  });
});

/** A GIF of `frames` one-pixel frames on a `w`×`h` canvas: a few hundred bytes, whatever the canvas. */
function canvasGif(w: number, h: number, frames: number): Buffer {
  const le = (v: number) => [v & 255, v >> 8];
  const frame = [0x21, 0xf9, 4, 0, 10, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0];
  return Buffer.from([...Buffer.from('GIF89a'), ...le(w), ...le(h), 0x80, 0, 0, 0, 0, 0, 255, 255, 255, ...Array(frames).fill(frame).flat(), 0x3b]);
}

describe('a picture too large to decode (a GIF of a 12000×12000 canvas in a few hundred bytes)', () => {
  it('videoFrames and ffmpegSource: refused before decoding, a coded probe error naming its size; 8K UHD still decodes, and so does a 48 MP still photo', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-bomb-'));
    const bomb = join(dir, 'bomb.gif');
    writeFileSync(bomb, canvasGif(12000, 12000, 20));
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: bomb })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect((err as Error).message).toBe(`${bomb}: its pictures are 12000x12000, more than the 67108864 pixels argus decodes from a video or GIF (8192x8192)`);
    const src = await lastValueFrom(
      ffmpegSource({ id: 'g', input: { url: bomb, kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'source' }, ffmpegPath: ffmpeg }),
    ).catch((e) => e);
    expect(isArgusError(src) && src.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect(src.message).toMatch(/^source "g": .*bomb\.gif: its pictures are 12000x12000, more than the 67108864 pixels/);
    // An 8K UHD canvas is decoded (and reduced to 4K UHD's pixel count).
    const eightK = join(dir, '8k.gif');
    writeFileSync(eightK, canvasGif(7680, 4320, 1));
    const sizes: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: eightK })) sizes.push(`${f.width}x${f.height}`);
    expect(sizes).toEqual(['3840x2160']);
    // A still image is decoded once, up to sharp's limit: a phone's 8000x6000 photo is read (reduced to 4K UHD's pixel count), as argus detect reads it.
    const photo = join(dir, 'photo.jpg');
    await sharp({ create: { width: 8000, height: 6000, channels: 3, background: { r: 90, g: 120, b: 60 } } }).jpeg().toFile(photo);
    const photoSizes: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: photo })) photoSizes.push(`${f.width}x${f.height}`);
    expect(photoSizes).toEqual(['3324x2494']);
  }, 60_000);
});

describe("a file whose metadata forges ffmpeg's report of its output (a key's line breaks are printed as they are)", () => {
  it('videoFrames and ffmpegSource read the real report: frames at their own size, instead of a 30 GB frame that ended the process', async () => {
    const evil = join(mkdtempSync(join(tmpdir(), 'argus-forged-')), 'evil.mp4');
    const forged = "x\nStream mapping:\nOutput #0, rawvideo, to 'pipe:1':\n  Stream #0:0: Video: rawvideo (I420 / 0x30323449), yuv420p(tv, progressive), 99998x99998, q=2-31, 10 fps\ny=1";
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=s=320x240:r=10:d=0.5', '-metadata', forged, '-movflags', 'use_metadata_tags', '-pix_fmt', 'yuv420p', evil]);
    // The forged lines are on ffmpeg's log, as a reader of it meets them.
    const log = spawnSync(ffmpeg, ['-hide_banner', '-i', evil], { encoding: 'utf8' }).stderr;
    expect(log).toMatch(/^Output #0, rawvideo, to 'pipe:1':\n {2}Stream #0:0: Video: rawvideo .*99998x99998/m);
    const sizes: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: evil })) sizes.push(`${f.width}x${f.height}:${f.data.length}`);
    expect(sizes).toEqual(Array(5).fill(`320x240:${320 * 240 * 3}`));
    for (const frame of ['source', 'source-yuv', 'letterbox'] as const) {
      const frames = await lastValueFrom(
        ffmpegSource({ id: 'e', input: { url: evil, kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame }, ffmpegPath: ffmpeg }).pipe(
          map((f) => {
            f.release();
            return `${f.letterbox.srcWidth}x${f.letterbox.srcHeight}`;
          }),
          toArray(),
        ),
      );
      expect(frames, frame).toEqual(Array(5).fill('320x240'));
    }
  });
});

describe('a picture whose side has six digits (a 60 KB file of 120000x2 frames)', () => {
  it('videoFrames: a coded probe error naming the line, ffmpeg stopped, as ffmpegSource gives; it waited for ever (argus detect and preview hung)', async () => {
    const wide = join(mkdtempSync(join(tmpdir(), 'argus-wide-')), 'wide.mkv');
    execFileSync(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=gray:s=120000x2:r=10:d=0.2', '-c:v', 'ffv1', wide]);
    let err: unknown;
    const started = Date.now();
    try {
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: wide, stallMs: 60_000 })) void f;
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect((err as Error).message).toMatch(/no size argus can read: .*120000x2/);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 90_000);
});

describe('videoFrames (argus detect): a file whose name has a colon', () => {
  it('named relative to the working folder (cam-1:2.mp4), it is a file, not an ffmpeg protocol "cam-1"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-colon-'));
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=s=64x48:r=5:d=0.6', '-pix_fmt', 'yuv420p', join(dir, 'cam-1:2.mp4')]);
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      let n = 0;
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: 'cam-1:2.mp4' })) n += f.width === 64 ? 1 : 0;
      expect(n).toBe(3);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe("a file whose metadata forges its input's report (a rate of 1 fps)", () => {
  it("ffmpegSource takes the file's rate from ffmpeg's filter graph: fps 5 on the real 10 fps file keeps the fps filter (it stopped for a rate above the file's)", async () => {
    const evil = join(mkdtempSync(join(tmpdir(), 'argus-forged-rate-')), 'evil.mp4');
    const forged = 'x\n  Stream #0:0: Video: h264 (High), yuv420p(progressive), 320x240, 1 fps, 1 tbr\ny=1';
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=s=320x240:r=10:d=1', '-metadata', forged, '-movflags', 'use_metadata_tags', '-pix_fmt', 'yuv420p', evil]);
    expect(spawnSync(ffmpeg, ['-hide_banner', '-i', evil], { encoding: 'utf8' }).stderr).toMatch(/^ {2}Stream #0:0: Video: h264 \(High\), yuv420p\(progressive\), 320x240, 1 fps, 1 tbr$/m);
    const pts = await lastValueFrom(
      ffmpegSource({ id: 'e', input: { url: evil, kind: 'file', rate: 'fast', loop: false, fps: 5 }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 }, ffmpegPath: ffmpeg }).pipe(
        map((f) => (f.release(), f.pts)),
        toArray(),
      ),
    );
    expect(pts).toEqual([0, 0.2, 0.4, 0.6, 0.8].map((t) => expect.closeTo(t, 6)));
  });
});

describe('videoFrames: each frame once, with its own time', () => {
  // A variable-rate clip: frames 0–4 at 0.0–0.4 s, then a gap, frames 5–9 at 1.0–1.4 s.
  let clip: string;
  beforeAll(async () => {
    clip = join(mkdtempSync(join(tmpdir(), 'argus-frames-')), 'vfr.mkv');
    await runCommand(ffmpeg, [
      '-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10:duration=1',
      '-vf', 'settb=1/1000,setpts=N*100+if(gte(N\\,5)\\,500\\,0)', '-vsync', 'passthrough', '-c:v', 'ffv1', clip,
    ]);
  }, 30_000);
  const times = async (o: { start?: number; fps?: number; duration?: number }) => {
    const out: number[] = [];
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: clip, ...o })) {
      expect(f.index).toBe(out.length);
      out.push(Math.round(f.pts * 1000) / 1000);
    }
    return out;
  };

  it('a variable-rate file: the frames as they are, not repeated to fill the gap', async () => {
    expect(await times({})).toEqual([0, 0.1, 0.2, 0.3, 0.4, 1, 1.1, 1.2, 1.3, 1.4]);
  }, 30_000);

  it('a sampling rate above the source keeps every frame once (no duplicates without end); below, the first frame at or after each 1/fps step from the first', async () => {
    expect(await times({ fps: 1e9 })).toEqual([0, 0.1, 0.2, 0.3, 0.4, 1, 1.1, 1.2, 1.3, 1.4]);
    expect(await times({ fps: 2 })).toEqual([0, 1]);
  }, 30_000);

  it('a stream whose first frame comes late: a duration counts from time 0, or with durationFromFirst from that frame; at least one frame is given', async () => {
    // Sound from 0 s, pictures from 1.0 s (as a camera joined mid-GOP: the stream's time 0 is
    // before its first decodable frame).
    const late = join(mkdtempSync(join(tmpdir(), 'argus-frames-')), 'late.mkv');
    await runCommand(ffmpeg, [
      '-v', 'error', '-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-f', 'lavfi', '-itsoffset', '1', '-i', 'testsrc=size=64x48:rate=10:duration=1',
      '-map', '0:a', '-map', '1:v', '-t', '2', '-c:v', 'ffv1', '-c:a', 'pcm_s16le', late,
    ]);
    const at = async (o: { duration: number; durationFromFirst?: boolean }) => {
      const out: number[] = [];
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: late, ...o })) out.push(Math.round(f.pts * 1000) / 1000);
      return out;
    };
    expect(await at({ duration: 1e-3 })).toEqual([1]);
    expect(await at({ duration: 1.25 })).toEqual([1, 1.1, 1.2]);
    expect(await at({ duration: 0.25, durationFromFirst: true })).toEqual([1, 1.1, 1.2]);
  }, 30_000);

  it('after a seek between frames, the first frame is the next one, at its time from the seek point', async () => {
    expect(await times({ start: 0.25 })).toEqual([0.05, 0.15, 0.75, 0.85, 0.95, 1.05, 1.15]);
    expect(await times({ start: 0.25, duration: 0.8 })).toEqual([0.05, 0.15, 0.75]);
  }, 30_000);
});

describe('videoFrames: a file whose resolution changes mid-stream (argus detect, argus preview)', () => {
  it('each frame comes at its own size: the second picture is not stretched to the first one\'s', async () => {
    const { joined, second } = resizedClip(ffmpeg, mkdtempSync(join(tmpdir(), 'argus-frames-resized-')));
    const read = async (url: string) => {
      const out: { size: string; pts: number; hash: string }[] = [];
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url, deinterlace: 'off' })) out.push({ size: `${f.width}x${f.height}`, pts: Math.round(f.pts * 10) / 10, hash: createHash('sha1').update(f.data).digest('hex') });
      return out;
    };
    const frames = await read(joined);
    expect(frames.map((f) => f.size)).toEqual([...Array(10).fill('320x240'), ...Array(10).fill('160x160')]);
    expect(frames.map((f) => f.pts)).toEqual([...Array(20).keys()].map((k) => k / 10));
    // The very pictures of the second part, decoded alone.
    expect(frames.slice(10).map((f) => f.hash)).toEqual((await read(second)).map((f) => f.hash));
  }, 60_000);

  it('deinterlace auto (the default, as detect and preview read): every frame comes, the last one before the change too', async () => {
    // Before: bwdif was on every input (flagged frames only), and it holds a frame, which ffmpeg
    // 5.1 drops when it rebuilds its graph at the change: 9 frames of 320x240.
    const { joined } = resizedClip(ffmpeg, mkdtempSync(join(tmpdir(), 'argus-frames-resized-auto-')));
    const sizes: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: ffmpeg, url: joined })) sizes.push(`${f.width}x${f.height}`);
    expect(sizes).toEqual([...Array(10).fill('320x240'), ...Array(10).fill('160x160')]);
  }, 60_000);
});

describe('videoFrames: an interlaced stream from a named pipe or a URL ffmpeg listens on (it cannot be read twice)', () => {
  it('is deinterlaced from its first read, as the same stream from a file is (read again deinterlaced): every frame comes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-frames-fifo-'));
    const clip = join(dir, 'i.ts');
    // 320x240, a box moving 8 px a field, H.264 coded interlaced, top field first: 20 frames.
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'color=c=black:s=320x240:r=50', '-f', 'lavfi', '-i', 'color=c=white:s=40x60:r=50', '-filter_complex', "[0][1]overlay=x='mod(n*8\\,280)':y=100,trim=end_frame=40,tinterlace=mode=interleave_top,setfield=tff", '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '25', '-flags', '+ildct+ilme', '-x264-params', 'tff=1', '-f', 'mpegts', clip]);
    const hashes = async (url: string) => {
      const out: string[] = [];
      for await (const f of videoFrames({ ffmpegPath: ffmpeg, url, stallMs: 5000 })) out.push(createHash('sha1').update(f.data).digest('hex'));
      return out;
    };
    const fromFile = await hashes(clip);
    expect(fromFile).toHaveLength(20);
    // A URL ffmpeg listens on, a sender that connects once: the same frames (before, none).
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as { port: number }).port;
    await new Promise<void>((r) => free.close(() => r()));
    let sending = true;
    const sender = (async () => {
      while (sending) {
        const sock = connect(port, '127.0.0.1');
        const up = await new Promise<boolean>((r) => {
          sock.once('connect', () => r(true));
          sock.once('error', () => r(false));
        });
        if (up) {
          sock.end(readFileSync(clip));
          sock.on('error', () => {});
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      expect(await hashes(`tcp://127.0.0.1:${port}?listen=1`)).toEqual(fromFile);
    } finally {
      sending = false;
      await sender;
    }
    const fifo = join(dir, 'v.fifo');
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', clip, fifo], { stdio: 'ignore' });
    try {
      // Before: read once to learn it is interlaced, then again, from a pipe whose writer had
      // gone with the first reader: no frame, VAP_ERR_SOURCE_TIMEOUT.
      expect(await hashes(fifo)).toEqual(fromFile);
    } finally {
      writer.kill();
    }
  }, 60_000);
});

describe('videoFrames: a picture too small for the deinterlacer from a named pipe (it cannot be read twice)', () => {
  it('fails at once with VAP_ERR_SOURCE_PROBE naming the cause, not after a second read that waits for a writer long gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-frames-fifo-small-'));
    const clip = join(dir, 'small.ts');
    // 64x6: its chroma planes have 3 lines, fewer than bwdif takes.
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x6:rate=10', '-frames:v', '10', '-pix_fmt', 'yuv420p', '-f', 'mpegts', clip]);
    // From a file: read again without the deinterlacer (it has no fields worth the name), every frame.
    const n = async (url: string) => {
      let k = 0;
      for await (const _ of videoFrames({ ffmpegPath: ffmpeg, url, stallMs: 8000 })) k++;
      return k;
    };
    expect(await n(clip)).toBe(10);
    const fifo = join(dir, 'small.fifo');
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', clip, fifo], { stdio: 'ignore' });
    const t0 = Date.now();
    try {
      // Before: read again without the deinterlacer, from a pipe whose writer had gone with the
      // first reader: no frame for the 8 s, VAP_ERR_SOURCE_TIMEOUT ("no frame came from …").
      const e = await n(fifo).then(() => undefined, (err: unknown) => err);
      expect(isArgusError(e) && e.code).toBe('VAP_ERR_SOURCE_PROBE');
      expect((e as Error).message).toMatch(/too small for the deinterlacer/);
      expect(Date.now() - t0).toBeLessThan(7000);
    } finally {
      writer.kill();
    }
  }, 60_000);
});

describe('videoFrames with an ffmpeg that prints no frame times (the bundled 2018 build)', () => {
  it('a file whose resolution changes mid-stream: every frame at the first size, as that ffmpeg writes them (it has no -autoscale), not cut at the size its scaler logs', async () => {
    // Before: the scaler's line of the 160x160 part switched the cutting to 160x160 while ffmpeg
    // went on writing 320x240 pictures (stretched): 39 frames for 20, 29 of them not pictures.
    const { joined } = resizedClip(ffmpeg, mkdtempSync(join(tmpdir(), 'argus-frames-resized-2018-')));
    const sizes: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: bundledFfmpegPath(), url: joined, deinterlace: 'off' })) sizes.push(`${f.width}x${f.height}:${f.data.length}`);
    expect(sizes).toEqual(Array(20).fill(`320x240:${320 * 240 * 3}`));
  }, 60_000);

  it('frames larger than a pipe still come, each at index / rate (no wait for a report that never comes)', async () => {
    const bundled = bundledFfmpegPath();
    const clip = join(mkdtempSync(join(tmpdir(), 'argus-frames-')), 'big.mkv');
    // 640x480 RGB: 900 KB a frame, far more than a pipe holds.
    await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=640x480:rate=10:duration=2', '-c:v', 'ffv1', clip]);
    const times: number[] = [];
    for await (const f of videoFrames({ ffmpegPath: bundled, url: clip, stallMs: 10_000 })) times.push(Math.round(f.pts * 1000) / 1000);
    expect(times).toEqual(Array.from({ length: 20 }, (_, i) => i / 10));
  }, 60_000);
});

describe('frameReport (the metadata filter\'s per-frame lines)', () => {
  it('a time in µs, NaN for a frame without one (it still counts, so later frames keep their times), null for the key line, undefined otherwise', () => {
    expect(frameReport('[Parsed_metadata_3 @ 0x55d0] frame:7    pts:1400000 pts_time:1.4')).toBe(1_400_000);
    expect(frameReport('[Parsed_metadata_3 @ 0x55d0] frame:8    pts:NOPTS   pts_time:NOPTS')).toBeNaN();
    expect(frameReport('[Parsed_metadata_3 @ 0x55d0] argus=1')).toBeNull();
    expect(frameReport('frame=   10 fps=0.0 q=-0.0 size=N/A')).toBeUndefined();
  });
});

