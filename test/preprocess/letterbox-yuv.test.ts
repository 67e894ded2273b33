import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { grabPicture } from '../../src/analytics/snapshot.js';
import type { Frame, YuvColour } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { agreesYuv, letterboxTensor, letterboxYuvTensor, YUV_KERNEL, yuvToPacked, type NativeLetterbox } from '../../src/preprocess/letterbox.js';
import { yuv420Bytes, yuvTables, yuvToPackedJs } from '../../src/preprocess/yuv.js';
import { ffmpegOutputFor } from '../../src/pipeline/detect.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { MIRROR, PERSON_VIDEO } from '../helpers/assets.js';

/**
 * Frames for the exact letterbox come from ffmpeg as it decoded them (4:2:0 YUV) and the kernel
 * converts the pixels it samples: these tests hold that conversion to ffmpeg's own, byte for
 * byte, with the ffmpeg argus runs, and the resulting tensors to those of BGR frames.
 */
const FFMPEG = defaultFfmpegPath();
const dir = mkdtempSync(join(tmpdir(), 'argus-yuv-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * One frame of `input` through the filter `size` as yuv420p, and that picture converted by
 * ffmpeg to bgr24 with the colour tags `tags` (setparams): ffmpeg's own unscaled conversion.
 */
function ffmpegFrames(input: string, size: string, tags: string, w: number, h: number): { yuv: Buffer; bgr: Buffer } {
  const a = spawnSync(FFMPEG, ['-v', 'error', '-i', input, '-frames:v', '1', '-vf', `${size},format=yuv420p`, '-f', 'rawvideo', 'pipe:1'], { maxBuffer: 64e6 });
  expect(a.status, String(a.stderr)).toBe(0);
  const b = spawnSync(FFMPEG, ['-v', 'error', '-f', 'rawvideo', '-pix_fmt', 'yuv420p', '-s', `${w}x${h}`, '-i', 'pipe:0', '-vf', `${tags},format=bgr24`, '-f', 'rawvideo', 'pipe:1'], { input: a.stdout, maxBuffer: 64e6 });
  expect(b.status, String(b.stderr)).toBe(0);
  return { yuv: a.stdout, bgr: b.stdout };
}

const OPTS = { modelOrder: 'rgb' as const, normalize: { scale: 1 / 255, mean: [0.485, 0.456, 0.406] as [number, number, number], std: [0.229, 0.224, 0.225] as [number, number, number] }, padValue: 114 };

describe('yuv420p → BGR as ffmpeg converts it (src/preprocess/yuv.ts, the kernel in letterbox.c)', () => {
  it('the kernel is built with its yuv functions and passes its load-time check; a kernel without them is refused', () => {
    expect(YUV_KERNEL).toBe(true);
    const old = { letterbox: () => undefined } as unknown as NativeLetterbox;
    expect(agreesYuv(old)).toBe(false);
    // a kernel whose conversion is off by one anywhere is refused
    const off: NativeLetterbox = {
      letterbox: () => undefined,
      letterboxYuv: () => undefined,
      yuvToPacked: (src, w, h, tab, dst, rgb) => {
        yuvToPackedJs(src, w, h, tab, dst, rgb);
        dst[7] ^= 1;
      },
    };
    expect(agreesYuv(off)).toBe(false);
  });

  // Every matrix and both ranges (the colour ffmpeg reads from a frame's tags), at the video's
  // size and at an odd width (chroma planes rounded up; odd heights go to BGR frames, below).
  const cases: { tags: string; colour: YuvColour; w: number; h: number }[] = [
    { tags: 'null', colour: { matrix: 'bt601', fullRange: false }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=bt709:range=tv', colour: { matrix: 'bt709', fullRange: false }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=bt709:range=pc', colour: { matrix: 'bt709', fullRange: true }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=fcc:range=tv', colour: { matrix: 'fcc', fullRange: false }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=smpte240m:range=pc', colour: { matrix: 'smpte240m', fullRange: true }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=bt2020nc:range=tv', colour: { matrix: 'bt2020', fullRange: false }, w: 768, h: 432 },
    { tags: 'setparams=range=pc', colour: { matrix: 'bt601', fullRange: true }, w: 768, h: 432 },
    { tags: 'setparams=colorspace=bt709', colour: { matrix: 'bt709', fullRange: false }, w: 851, h: 478 },
  ];
  it.each(cases)('$w×$h $tags: the kernel and the TypeScript reference give ffmpeg’s bgr24 byte for byte', ({ tags, colour, w, h }) => {
    const { yuv, bgr } = ffmpegFrames(PERSON_VIDEO, `scale=${w}:${h}`, tags, w, h);
    expect(yuv.length).toBe(yuv420Bytes(w, h));
    expect(bgr.length).toBe(w * h * 3);
    const tab = yuvTables(colour);
    const js = Buffer.alloc(w * h * 3);
    yuvToPackedJs(yuv, w, h, tab, js);
    const c = yuvToPacked(yuv, w, h, tab, 'bgr');
    let jsDiffer = 0, cDiffer = 0;
    for (let i = 0; i < bgr.length; i++) {
      if (js[i] !== bgr[i]) jsDiffer++;
      if (c[i] !== bgr[i]) cDiffer++;
    }
    expect({ jsDiffer, cDiffer }).toEqual({ jsDiffer: 0, cDiffer: 0 });
    // …and the letterbox of the YUV frame is that of ffmpeg's BGR frame, every float
    for (const [W, H] of [[416, 416], [640, 640]]) {
      const lb = letterbox(w, h, W, H, 'top-left', 'floor');
      const a = new Float32Array(W * H * 3), b = new Float32Array(W * H * 3);
      letterboxYuvTensor(yuv, w, h, tab, lb, a, OPTS);
      letterboxTensor(bgr, w, h, 'bgr', lb, b, OPTS);
      let differ = 0;
      for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) differ++;
      expect(differ, `${w}x${h} → ${W}x${H}`).toBe(0);
    }
  });

  it('an exact halving (OpenCV’s 2×2 mean) and an upscale from YUV agree with the BGR frame too', () => {
    for (const [vf, w, h, W, H] of [['scale=832:468', 832, 468, 416, 416], ['scale=200:120', 200, 120, 640, 640]] as const) {
      const { yuv, bgr } = ffmpegFrames(PERSON_VIDEO, vf, 'null', w, h);
      const lb = letterbox(w, h, W, H, 'center', 'round');
      const a = new Float32Array(W * H * 3), b = new Float32Array(W * H * 3);
      letterboxYuvTensor(yuv, w, h, yuvTables({ matrix: 'bt601', fullRange: false }), lb, a, OPTS);
      letterboxTensor(bgr, w, h, 'bgr', lb, b, OPTS);
      let differ = 0;
      for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) differ++;
      expect(differ, vf).toBe(0);
    }
  });

  it('a picture wider or taller than 65536 that a source takes (65538×4: 262,144 pixels, within its bound) is letterboxed as its converted picture is, not refused', () => {
    const tab = yuvTables({ matrix: 'bt601', fullRange: false });
    for (const [w, h] of [[65538, 4], [4, 65538]]) {
      const yuv = new Uint8Array(yuv420Bytes(w, h));
      for (let i = 0; i < yuv.length; i++) yuv[i] = (i * 73 + 19) & 255;
      const bgr = Buffer.alloc(w * h * 3);
      yuvToPackedJs(yuv, w, h, tab, bgr);
      expect(yuvToPacked(yuv, w, h, tab, 'bgr').equals(bgr), `${w}x${h}`).toBe(true);
      const lb = letterbox(w, h, 64, 64, 'center', 'round');
      const a = new Float32Array(64 * 64 * 3), b = new Float32Array(64 * 64 * 3);
      letterboxYuvTensor(yuv, w, h, tab, lb, a, OPTS);
      letterboxTensor(bgr, w, h, 'bgr', lb, b, OPTS);
      let differ = 0;
      for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) differ++;
      expect(differ, `${w}x${h}`).toBe(0);
    }
  });

  it('rows converted with AVX2 (where the CPU has it, as here) and with SSE2 give the same tensor and picture, value for value', () => {
    const k = createRequire(import.meta.url)(resolve(__dirname, '../../dist/native/letterbox.node')) as NativeLetterbox;
    const cpuHasAvx2 = /^flags\s*:.*\bavx2\b/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
    const { yuv } = ffmpegFrames(PERSON_VIDEO, 'scale=1917:1080', 'null', 1917, 1080); // a width that is no multiple of 32 or 16: the scalar tail too
    const tab = yuvTables({ matrix: 'bt709', fullRange: false });
    const lb = letterbox(1917, 1080, 416, 416, 'top-left', 'floor');
    const run = (avx2: boolean) => {
      expect(k.useAvx2!(avx2)).toBe(avx2 && cpuHasAvx2);
      const t = new Float32Array(416 * 416 * 3);
      letterboxYuvTensor(yuv, 1917, 1080, tab, lb, t, OPTS, 0, k);
      const picture = Buffer.alloc(1917 * 1080 * 3);
      k.yuvToPacked!(yuv, 1917, 1080, tab, picture, false);
      return { t, picture };
    };
    try {
      const sse2 = run(false), avx2 = run(true);
      const reference = Buffer.alloc(1917 * 1080 * 3);
      yuvToPackedJs(yuv, 1917, 1080, tab, reference);
      expect(sse2.picture.equals(reference)).toBe(true);
      expect(avx2.picture.equals(reference)).toBe(true);
      let differ = 0;
      for (let i = 0; i < sse2.t.length; i++) if (!Object.is(sse2.t[i], avx2.t[i])) differ++;
      expect(differ).toBe(0);
      expect(new Set(sse2.t.subarray(0, 416 * 234)).size).toBeGreaterThan(100); // a picture, not a constant
    } finally {
      k.useAvx2!(true);
    }
  });

  it('taps whose second column is not the first + 1 (tables of the kernel’s own callers never are) take the general path: the values of the converted picture’s letterbox', () => {
    const k = createRequire(import.meta.url)(resolve(__dirname, '../../dist/native/letterbox.node')) as NativeLetterbox;
    const [w, h] = [64, 36];
    const yuv = new Uint8Array(yuv420Bytes(w, h));
    for (let i = 0; i < yuv.length; i++) yuv[i] = (i * 73 + 19) & 255;
    const tab = yuvTables({ matrix: 'bt601', fullRange: false });
    const bgr = Buffer.alloc(w * h * 3);
    yuvToPackedJs(yuv, w, h, tab, bgr);
    const i32 = (n: number, f: (i: number) => number) => Int32Array.from({ length: n }, (_, i) => f(i));
    // 10 × 8 output: rows 4y and 4y + 2, columns 6x and 6x + 3 (two apart and more), uneven weights
    const y0 = i32(8, (y) => 4 * y), y1 = i32(8, (y) => 4 * y + 2), b0 = i32(8, (y) => 2048 - 200 * y), b1 = i32(8, (y) => 200 * y);
    const px0 = i32(10, (x) => 3 * 6 * x), px1 = i32(10, (x) => 3 * (6 * x + 3)), pa0 = i32(10, (x) => 2048 - 150 * x), pa1 = i32(10, (x) => 150 * x);
    const mo = Float64Array.from([1 / 255, 1 / 255, 1 / 255, -0.5, 0, 0.5]);
    const q = Int32Array.from([0, 80, 160]);
    const a = new Float32Array(240), b = new Float32Array(240);
    k.letterboxYuv!(yuv, w, h, tab, y0, y1, b0, b1, px0, px1, pa0, pa1, false, a, 0, 10, mo, q);
    k.letterbox(bgr, w * 3, y0, y1, b0, b1, px0, px1, pa0, pa1, false, b, 0, 10, mo, q);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(new Set(a).size).toBeGreaterThan(50);
    // a column paired with itself at a weight other than 0 is no neighbouring pair either (16 wide: the SIMD loop's width)
    const sx0 = i32(16, (x) => 3 * 3 * x), sw = i32(16, () => 1024);
    const a2 = new Float32Array(16 * 8 * 3), b2 = new Float32Array(16 * 8 * 3);
    const q2 = Int32Array.from([0, 128, 256]);
    k.letterboxYuv!(yuv, w, h, tab, y0, y1, b0, b1, sx0, sx0, sw, sw, false, a2, 0, 16, mo, q2);
    k.letterbox(bgr, w * 3, y0, y1, b0, b1, sx0, sx0, sw, sw, false, b2, 0, 16, mo, q2);
    expect(Array.from(a2)).toEqual(Array.from(b2));
  });

  it('bad arguments are errors, never a read outside the picture', () => {
    const tab = yuvTables({ matrix: 'bt601', fullRange: false });
    const lb = letterbox(64, 48, 32, 32, 'top-left', 'floor');
    const t = new Float32Array(32 * 32 * 3);
    expect(() => letterboxYuvTensor(new Uint8Array(yuv420Bytes(64, 48) - 1), 64, 48, tab, lb, t, OPTS)).toThrow(/need 4608/);
    expect(() => yuvToPacked(new Uint8Array(10), 64, 48, tab, 'bgr')).toThrow(/yuvToPacked: expected/);
    expect(() => letterboxYuvTensor(new Uint8Array(yuv420Bytes(64, 48)), 64, 48, new Int32Array(10), lb, t, OPTS)).toThrow(/Int32Array\(1286\)/);
  });
});

describe('sources deliver 4:2:0 frames as they were decoded where the kernel runs', () => {
  const take5 = (url: string, frame: 'source' | 'source-yuv') =>
    firstValueFrom(
      ffmpegSource({ id: 'x', input: { url, kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame }, ffmpegPath: FFMPEG }).pipe(take(5), toArray()),
    );
  const tensorOf = (f: Frame) => {
    const lb = f.letterbox;
    const t = new Float32Array(416 * 416 * 3);
    if (f.layout === 'yuv420p') letterboxYuvTensor(f.data, lb.srcWidth, lb.srcHeight, yuvTables(f.colour!), lb, t, OPTS);
    else letterboxTensor(f.data, lb.srcWidth, lb.srcHeight, 'bgr', lb, t, OPTS);
    return t;
  };

  it('the exact resize asks ffmpeg for YUV', () => {
    const detector = { inputWidth: 416, inputHeight: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', manifest: { preprocess: { resize: 'cv2-linear' } } } as unknown as Parameters<typeof ffmpegOutputFor>[0];
    expect(ffmpegOutputFor(detector, 'exact').frame).toBe('source-yuv');
    expect(ffmpegOutputFor(detector, 'fast').frame).toBe('letterbox');
  });

  // The video at 720p (4:2:0 frames are for pictures of YUV_MIN_PIXELS and more), and copies of
  // it tagged BT.709 and full range (the H.264 stream's own colour fields, no re-encode).
  let hd: string | undefined;
  const hd720 = () => {
    if (hd) return hd;
    const out = join(dir, '720p.mp4');
    const r = spawnSync(FFMPEG, ['-v', 'error', '-i', PERSON_VIDEO, '-t', '1', '-vf', 'scale=1280:720', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-y', out]);
    expect(r.status, String(r.stderr)).toBe(0);
    return (hd = out);
  };
  const tagged = (name: string, bsf: string) => {
    const out = join(dir, name);
    const r = spawnSync(FFMPEG, ['-v', 'error', '-i', hd720(), '-c', 'copy', '-bsf:v', `h264_metadata=${bsf}`, '-y', out]);
    expect(r.status, String(r.stderr)).toBe(0);
    return out;
  };

  /** A 4:2:0 video 320×180. */
  const small = () => {
    const out = join(dir, 'small.mp4');
    const r = spawnSync(FFMPEG, ['-v', 'error', '-i', PERSON_VIDEO, '-t', '0.5', '-vf', 'scale=320:180', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-y', out]);
    expect(r.status, String(r.stderr)).toBe(0);
    return out;
  };

  /** A 4:2:0 video 1281×719 (FFV1 keeps odd sizes). */
  const oddHeight = () => {
    const out = join(dir, 'odd.mkv');
    const r = spawnSync(FFMPEG, ['-v', 'error', '-i', PERSON_VIDEO, '-t', '0.5', '-vf', 'scale=1281:719', '-pix_fmt', 'yuv420p', '-c:v', 'ffv1', '-y', out]);
    expect(r.status, String(r.stderr)).toBe(0);
    return out;
  };

  it.each([
    ['720p (BT.601, limited)', () => hd720(), 'yuv420p', { matrix: 'bt601', fullRange: false }],
    ['the 432p person video', () => PERSON_VIDEO, 'yuv420p', { matrix: 'bt601', fullRange: false }],
    ['320×180 (below YUV_MIN_PIXELS: BGR frames)', () => small(), 'source', undefined],
    ['tagged BT.709', () => tagged('709.mp4', 'matrix_coefficients=1:colour_primaries=1:transfer_characteristics=1'), 'yuv420p', { matrix: 'bt709', fullRange: false }],
    ['tagged full range', () => tagged('pc.mp4', 'video_full_range_flag=1'), 'yuv420p', { matrix: 'bt601', fullRange: true }],
    ['a 4:4:4 JPEG (run again with BGR frames)', () => join(MIRROR, 'images', '000000000139.jpg'), 'source', undefined],
    ['a GIF (palette: BGR frames)', () => join(MIRROR, 'streams', 'bolt-multi-size-detection.gif'), 'source', undefined],
    ['4:2:0 of an odd height (BGR frames)', () => oddHeight(), 'source', undefined],
  ] as const)('%s: frames of the layout ffmpeg’s format calls for, tensors and snapshots equal to BGR frames’', async (_n, url, layout, colour) => {
    const path = url();
    const [bgr, yuv] = [await take5(path, 'source'), await take5(path, 'source-yuv')];
    expect(yuv.length).toBe(bgr.length);
    expect(yuv.length).toBeGreaterThan(0);
    for (let i = 0; i < yuv.length; i++) {
      expect(yuv[i].layout).toBe(layout);
      expect(yuv[i].colour).toEqual(colour);
      expect(yuv[i].seq).toBe(bgr[i].seq);
      expect(yuv[i].letterbox).toEqual(bgr[i].letterbox);
      const a = tensorOf(yuv[i]), b = tensorOf(bgr[i]);
      let differ = 0;
      for (let k = 0; k < a.length; k++) if (!Object.is(a[k], b[k])) differ++;
      expect(differ, `frame ${i}`).toBe(0);
    }
    // the alert snapshot (and annotated video) picture: the same bytes either way
    const p = grabPicture(yuv[0], 'bgr'), q = grabPicture(bgr[0], 'bgr');
    expect(p.width).toBe(q.width);
    expect(Buffer.compare(p.rgb, q.rgb)).toBe(0);
    if (layout === 'yuv420p') expect(Buffer.compare(grabPicture(yuv[0], 'rgb').rgb.subarray(0, 3), Buffer.from([q.rgb[2], q.rgb[1], q.rgb[0]]))).toBe(0);
    for (const f of [...bgr, ...yuv]) f.release();
  });

  it('a source found to call for packed frames starts its next runs with them (one ffmpeg, not two)', async () => {
    const memo: { packed?: boolean } = {};
    const spawned: number[] = [];
    for (let run = 0; run < 2; run++) {
      let n = 0;
      const frames = await firstValueFrom(
        ffmpegSource({ id: 'x', input: { url: join(MIRROR, 'streams', 'bolt-multi-size-detection.gif'), kind: 'file', rate: 'fast', loop: false }, output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source-yuv' }, ffmpegPath: FFMPEG, memo, onSpawn: () => n++ }).pipe(take(2), toArray()),
      );
      expect(frames.map((f) => f.layout)).toEqual(['source', 'source']);
      spawned.push(n);
    }
    expect(spawned).toEqual([2, 1]);
    expect(memo.packed).toBe(true);
  });
});
