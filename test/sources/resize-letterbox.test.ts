// A mid-stream resolution change with letterboxed frames (model.resize: fast): ffmpeg reports
// the new size on its log (stderr) and writes the frames on another pipe (stdout), which argus
// reads apart. Each frame must carry the letterbox of the picture it was made from: the frames
// ffmpeg wrote before it reconfigured its scaler keep the old one, however late they are read.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { Pace } from '../../src/flow/pace.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import type { Letterbox } from '../../src/core/geometry.js';
import type { FfmpegInputSpec } from '../../src/sources/ffmpeg-args.js';
import { ffmpegSource, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { MIRROR } from '../helpers/assets.js';
import { FakeFfmpeg } from './fake-ffmpeg.js';

const output = { width: 64, height: 48, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const FRAME = 64 * 48 * 3;
/** A file that exists (ffmpegSource checks); the fake ffmpeg never reads it. */
const FILE = join(MIRROR, 'streams', 'one-by-one-person-detection.mp4');

/** The scaler's configuration line for a `w × h` input (ffmpeg 5.1's form). */
const scaler = (w: number, h: number) => `[Parsed_scale_0 @ 0x55d0c0ffee10] w:${w} h:${h} fmt:yuv420p sar:1/1 -> w:64 h:36 fmt:bgr24 sar:1/1 flags:0x2\n`;

function run(input: FfmpegInputSpec) {
  let child!: FakeFfmpeg;
  const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, FRAME)).asChild();
  const frames: Frame[] = [];
  const resizes: [Letterbox, Letterbox][] = [];
  const sub = ffmpegSource({ id: 'cam', input, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn, onResize: (from, to) => resizes.push([from, to]) }).subscribe({
    next: (f) => frames.push(f),
    error: (e) => {
      throw e;
    },
  });
  return { child, frames, resizes, sub };
}

const size = (f: Frame) => `${f.letterbox.srcWidth}x${f.letterbox.srcHeight}`;

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('letterboxed frames across a mid-stream resolution change', () => {
  it('live source: the frames reported before the new size keep the old letterbox, though read after the log line', () => {
    const r = run({ url: 'http://cam/stream.ts', kind: 'http', rate: 'native', loop: false });
    stop = () => r.sub.unsubscribe();
    const t = Date.now() - 100;
    r.child.stderr.write(scaler(640, 360));
    r.child.info('mpegts');
    // ffmpeg wrote frames 0–2 of 640x360 (their reports on the log), then met a 480x480 picture:
    // its new scaler's line comes before that frame's report. The log is read first.
    for (let i = 0; i < 3; i++) r.child.stderr.write(r.child.timeLine(i, t + i));
    r.child.stderr.write(scaler(480, 480));
    r.child.stderr.write(r.child.timeLine(0, t + 3));
    expect(r.resizes).toEqual([]); // no frame of the new size yet
    for (let i = 0; i < 4; i++) r.child.frame(i);
    expect(r.frames.map(size)).toEqual(['640x360', '640x360', '640x360', '480x480']);
    expect(r.resizes.map(([a, b]) => `${a.srcWidth}x${a.srcHeight}→${b.srcWidth}x${b.srcHeight}`)).toEqual(['640x360→480x480']);
    // And back, with the frames read as soon as they are written.
    r.child.stderr.write(r.child.timeLine(1, t + 4));
    r.child.frame(4);
    r.child.stderr.write(scaler(640, 360));
    r.child.stderr.write(r.child.timeLine(0, t + 5));
    r.child.frame(5);
    expect(r.frames.map(size).slice(4)).toEqual(['480x480', '640x360']);
    expect(r.resizes).toHaveLength(2);
  });

  it('the output\'s line, the first frame\'s report and the next picture\'s scaler in one chunk of the log (a loaded machine): the first frame keeps its own letterbox', () => {
    const r = run({ url: 'http://cam/stream.ts', kind: 'http', rate: 'native', loop: false });
    stop = () => r.sub.unsubscribe();
    const t = Date.now() - 100;
    r.child.stderr.write(scaler(640, 360));
    // Before: the later scaler's size was taken for the first frame's (480x480 on a 640x360 picture), and the change was never said.
    r.child.stderr.write(r.child.infoText('mpegts') + r.child.timeLine(0, t) + scaler(480, 480) + r.child.timeLine(0, t + 1));
    for (let i = 0; i < 2; i++) r.child.frame(i);
    expect(r.frames.map(size)).toEqual(['640x360', '480x480']);
    expect(r.resizes.map(([a, b]) => `${a.srcWidth}x${a.srcHeight}→${b.srcWidth}x${b.srcHeight}`)).toEqual(['640x360→480x480']);
  });

  it('a size that changes and changes back before any of its frames is read: each frame still gets its own', () => {
    const r = run({ url: 'http://cam/stream.ts', kind: 'http', rate: 'native', loop: false });
    stop = () => r.sub.unsubscribe();
    const t = Date.now() - 100;
    r.child.stderr.write(scaler(640, 360));
    r.child.info('mpegts');
    r.child.stderr.write(r.child.timeLine(0, t));
    r.child.stderr.write(scaler(480, 480));
    r.child.stderr.write(r.child.timeLine(0, t + 1));
    r.child.stderr.write(scaler(640, 360));
    r.child.stderr.write(r.child.timeLine(0, t + 2));
    for (let i = 0; i < 3; i++) r.child.frame(i);
    expect(r.frames.map(size)).toEqual(['640x360', '480x480', '640x360']);
  });

  it('file: the frames written before the new scaler keep the old letterbox, duplicates and drops of its constant-rate output counted', () => {
    const r = run({ url: FILE, kind: 'file', rate: 'fast', loop: false });
    stop = () => r.sub.unsubscribe();
    r.child.stderr.write(scaler(640, 360));
    r.child.info('mpegts');
    // Frames 0–3 filtered (reported); the output wrote frame 1 three times, dropped frame 2, and
    // wrote frame 3 twice, then once more (the log's repeat of that line): 4 + 2 - 1 + 1 + 1 = 7
    // frames written of the old picture.
    r.child.stderr.write(r.child.timeLine(0, 0) + r.child.timeLine(1, 100) + '*** 2 dup!\n' + r.child.timeLine(2, 200) + '*** dropping frame 2 from stream 0 at ts 3\n');
    r.child.stderr.write(r.child.timeLine(3, 400) + '*** 1 dup!\n');
    r.child.stderr.write('    Last message repeated 1 times\n');
    r.child.stderr.write(scaler(480, 480));
    r.child.stderr.write(r.child.timeLine(0, 600));
    for (let i = 0; i < 8; i++) r.child.frame(i);
    expect(r.frames.map(size)).toEqual([...Array(7).fill('640x360'), '480x480']);
  });

  it("file: a duplicate line in the input's report (a file's metadata) is not counted", () => {
    const r = run({ url: FILE, kind: 'file', rate: 'fast', loop: false });
    stop = () => r.sub.unsubscribe();
    r.child.stderr.write(scaler(640, 360));
    r.child.stderr.write("Input #0, mpegts, from 'x':\n    comment         : x\n*** 5 dup!\n");
    r.child.info('mpegts');
    r.child.stderr.write(r.child.timeLine(0, 0) + scaler(480, 480) + r.child.timeLine(0, 100));
    for (let i = 0; i < 2; i++) r.child.frame(i);
    expect(r.frames.map(size)).toEqual(['640x360', '480x480']);
  });

  /**
   * `file` (made in a folder of its own by `make`) read as a fast file behind a stage that works
   * 20 ms on each frame, letterboxed into 64x64: what each frame's first row shows (padding, grey
   * 114, above a wide picture; none for a square one), with the size its letterbox names.
   */
  async function pacedRows(make: (dir: string) => string, inputArgs?: string[]): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), 'argus-resize-'));
    try {
      const file = make(dir);
      // While the stage works, the next frame waits in the pipe and ffmpeg logs its new scaler.
      const pace = new Pace();
      const square = { ...output, width: 64, height: 64, align: 'center' as const };
      const frames = await lastValueFrom(
        ffmpegSource({ id: 'cam', input: { url: file, kind: 'file', rate: 'fast', loop: false, inputArgs }, output: square, ffmpegPath: defaultFfmpegPath(), pace }).pipe(
          tap(() => {
            pace.enter();
            setTimeout(() => pace.leave(), 20);
          }),
          toArray(),
        ),
      );
      return frames.map((f) => `${size(f)} ${f.data.subarray(0, 64 * 3).every((v) => v === 114) ? 'padded' : 'full'}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const ffmpeg = (...args: string[]) => execFileSync(defaultFfmpegPath(), ['-v', 'error', ...args]);

  it('real ffmpeg: a file of two sizes, read behind a busy stage: each frame carries the letterbox of its own picture', async () => {
    // 12 frames of 320x180, then 12 of 240x240 (two recordings joined, as a camera's profile
    // switch is recorded). Every run tagged the last wide frame square before.
    const seen = await pacedRows((dir) => {
      const part = (size: string, name: string) => {
        ffmpeg('-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=10`, '-frames:v', '12', '-c:v', 'libx264', '-preset', 'ultrafast', '-f', 'mpegts', join(dir, name));
        return readFileSync(join(dir, name));
      };
      const file = join(dir, 'joined.ts');
      writeFileSync(file, Buffer.concat([part('320x180', 'a.ts'), part('240x240', 'b.ts')]));
      return file;
    });
    expect(seen.length).toBeGreaterThanOrEqual(22);
    expect(seen.filter((x) => x === '320x180 padded').length).toBeGreaterThanOrEqual(11);
    expect(seen.filter((x) => x === '240x240 full').length).toBeGreaterThanOrEqual(11);
    expect(seen.filter((x) => x !== '320x180 padded' && x !== '240x240 full')).toEqual([]);
  });

  it('real ffmpeg: an MJPEG recording whose pictures change size every frame: each frame still carries its own letterbox', async () => {
    // JPEGs of 320x180 and 240x240 in turn (an MJPEG camera sending two sizes): 38 of 40 frames
    // carried the other size's letterbox before.
    const seen = await pacedRows((dir) => {
      const jpegs = (size: string) => {
        ffmpeg('-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=10`, '-frames:v', '10', '-q:v', '5', '-f', 'image2', join(dir, `${size}-%02d.jpg`));
        return Array.from({ length: 10 }, (_, i) => readFileSync(join(dir, `${size}-${String(i + 1).padStart(2, '0')}.jpg`)));
      };
      const [wide, sq] = [jpegs('320x180'), jpegs('240x240')];
      const file = join(dir, 'turns.mjpeg');
      writeFileSync(file, Buffer.concat(wide.flatMap((w, i) => [w, sq[i]])));
      return file;
    }, ['-f', 'mjpeg']);
    expect(seen.length).toBe(20);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? '240x240 full' : '320x180 padded')));
  });
});
