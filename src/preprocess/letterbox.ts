import type { Letterbox } from '../core/geometry.js';
import { loadNativeModule } from '../core/native.js';
import { IDENTITY_NORMALIZE, type NormalizeOptions } from './normalize.js';
import { yuv420Bytes, yuvTables, yuvToPackedJs } from './yuv.js';

/** The C kernel (src/preprocess/letterbox.c): the same arithmetic as the loops below, value for value. */
export interface NativeLetterbox {
  letterbox(src: Uint8Array, stride: number, y0: Int32Array, y1: Int32Array, b0: Int32Array, b1: Int32Array, px0: Int32Array, px1: Int32Array, pa0: Int32Array, pa1: Int32Array, area2: boolean, dst: Float32Array, d0: number, W: number, mo: Float64Array, q: Int32Array): void;
  /** The same from a yuv420p picture, each sampled pixel converted as ffmpeg converts (yuv.ts). Absent from a kernel built before it. */
  letterboxYuv?(src: Uint8Array, width: number, height: number, tab: Int32Array, y0: Int32Array, y1: Int32Array, b0: Int32Array, b1: Int32Array, px0: Int32Array, px1: Int32Array, pa0: Int32Array, pa1: Int32Array, area2: boolean, dst: Float32Array, d0: number, W: number, mo: Float64Array, q: Int32Array): void;
  /** A whole yuv420p picture as packed BGR (RGB with `rgb`). */
  yuvToPacked?(src: Uint8Array, width: number, height: number, tab: Int32Array, dst: Uint8Array, rgb: boolean): void;
  /** Tests: rows converted with AVX2 (the default where the CPU has it) or without; returns whether AVX2 is now used. */
  useAvx2?(on: boolean): boolean;
}

/**
 * The kernel built by `npm ci` (src/preprocess/letterbox.c); undefined without a C compiler at
 * install, or with ARGUS_NATIVE=0: the TypeScript loops run then.
 */
function loadNative(): NativeLetterbox | undefined {
  return loadNativeModule<NativeLetterbox>('letterbox');
}

/**
 * The kernel is used only if it gives the loops' values on a small picture, down- and
 * upscaled and halved (a kernel built from an older letterbox.c, or by a compiler that
 * reorders floating point, is left unused). Microseconds, once per process.
 */
export function agrees(k: NativeLetterbox): boolean {
  const src = new Uint8Array(14 * 10 * 3);
  for (let i = 0; i < src.length; i++) src[i] = (i * 157 + 11) & 255;
  const opts: LetterboxTensorOptions = { modelOrder: 'rgb', normalize: { scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] }, padValue: 114 };
  for (const [dw, dh, W, H] of [[5, 3, 8, 8], [7, 5, 7, 5], [20, 13, 24, 16]]) {
    const lb: Letterbox = { srcWidth: 14, srcHeight: 10, dstWidth: W, dstHeight: H, scale: dw / 14, scaledWidth: dw, scaledHeight: dh, padX: 0, padY: H - dh >= 1 ? 1 : 0 };
    const a = new Float32Array(W * H * 3), b = new Float32Array(W * H * 3);
    try {
      letterboxTensor(src, 14, 10, 'bgr', lb, a, opts, 0, k);
    } catch {
      return false;
    }
    letterboxTensor(src, 14, 10, 'bgr', lb, b, opts, 0, 'js');
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  }
  return true;
}

/**
 * Whether the kernel's yuv420p functions give the TypeScript reference's values (yuv.ts's
 * conversion, then the loops) on a small picture of odd size, limited and full range, down- and
 * upscaled and halved. False for a kernel built before they existed.
 */
export function agreesYuv(k: NativeLetterbox): boolean {
  if (typeof k.letterboxYuv !== 'function' || typeof k.yuvToPacked !== 'function') return false;
  const w = 37, h = 11; // wider than two of the kernel's 16-pixel SIMD steps, and odd
  const src = new Uint8Array(yuv420Bytes(w, h));
  for (let i = 0; i < src.length; i++) src[i] = (i * 97 + 5) & 255;
  const opts: LetterboxTensorOptions = { modelOrder: 'rgb', normalize: { scale: 1 / 255, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] }, padValue: 114 };
  for (const fullRange of [false, true]) {
    const tab = yuvTables({ matrix: fullRange ? 'bt601' : 'bt709', fullRange });
    const ref = new Uint8Array(w * h * 3), got = new Uint8Array(w * h * 3);
    // RGB, then BGR: `ref` is left in BGR for the letterboxes below.
    for (const rgb of [true, false]) {
      yuvToPackedJs(src, w, h, tab, ref, rgb);
      try {
        k.yuvToPacked(src, w, h, tab, got, rgb);
      } catch {
        return false;
      }
      for (let i = 0; i < ref.length; i++) if (ref[i] !== got[i]) return false;
    }
    for (const [dw, dh, W, H] of [[5, 3, 8, 8], [7, 5, 7, 5], [22, 15, 24, 16]]) {
      const lb: Letterbox = { srcWidth: w, srcHeight: h, dstWidth: W, dstHeight: H, scale: dw / w, scaledWidth: dw, scaledHeight: dh, padX: 0, padY: H - dh >= 1 ? 1 : 0 };
      const a = new Float32Array(W * H * 3), b = new Float32Array(W * H * 3);
      try {
        letterboxYuvTensor(src, w, h, tab, lb, a, opts, 0, k);
      } catch {
        return false;
      }
      letterboxTensor(ref, w, h, 'bgr', lb, b, opts, 0, 'js');
      for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    }
  }
  // an exact halving (the 2×2 mean) of an even-sized picture
  const src2 = new Uint8Array(yuv420Bytes(16, 10));
  for (let i = 0; i < src2.length; i++) src2[i] = (i * 61 + 3) & 255;
  const tab = yuvTables({ matrix: 'bt601', fullRange: false });
  const ref2 = new Uint8Array(16 * 10 * 3);
  yuvToPackedJs(src2, 16, 10, tab, ref2);
  const lb2: Letterbox = { srcWidth: 16, srcHeight: 10, dstWidth: 8, dstHeight: 8, scale: 0.5, scaledWidth: 8, scaledHeight: 5, padX: 0, padY: 0 };
  const a2 = new Float32Array(8 * 8 * 3), b2 = new Float32Array(8 * 8 * 3);
  try {
    letterboxYuvTensor(src2, 16, 10, tab, lb2, a2, opts, 0, k);
  } catch {
    return false;
  }
  letterboxTensor(ref2, 16, 10, 'bgr', lb2, b2, opts, 0, 'js');
  for (let i = 0; i < a2.length; i++) if (!Object.is(a2[i], b2[i])) return false;
  return true;
}

/** Set once the module has loaded (at its end: the check runs letterboxTensor). */
let native: NativeLetterbox | undefined;

/**
 * The exact letterbox: a full-size packed 8-bit frame resized as OpenCV's
 * `cv2.resize(…, INTER_LINEAR)` does for 8-bit images (how YOLOX, YOLOv5 and YOLOv8 are trained
 * and served), padded, normalised and written planar into the model's float tensor in one pass.
 *
 * OpenCV's arithmetic, reproduced (imgproc/resize.cpp, `resizeGeneric_` with `HResizeLinear`
 * and `VResizeLinear` for `uchar`):
 * - source position of destination x: `fx = float((x + 0.5) · sw/dw − 0.5)`, `sx = floor(fx)`,
 *   clamped to the picture (weight 0 past an edge); the same for y;
 * - weights in 11-bit fixed point: `round((1 − fx) · 2048)` and `round(fx · 2048)`, rounded
 *   half to even (`saturate_cast<short>` of a float);
 * - a horizontal pass into 32-bit sums, then the vertical pass as OpenCV's SIMD kernel computes
 *   it (`VResizeLinearVec_32s8u`): `((s0 >> 4) · b0 >> 16) + ((s1 >> 4) · b1 >> 16) + 2 >> 2`
 *   for every value of a row (OpenCV 4.13's wheels compute the row ends the same way);
 * - an exact 2× reduction on both axes is OpenCV's `INTER_AREA` fast path (a 2×2 mean).
 *
 * Unlike ffmpeg's `scale=…:flags=bilinear`, no anti-aliasing: each output pixel reads 2×2 source
 * pixels, which is what the model saw in training.
 */
export interface LetterboxTensorOptions {
  /** Channel order of the model's input planes. */
  modelOrder: 'rgb' | 'bgr';
  normalize: NormalizeOptions;
  /** Grey level (0–255) of the padding, before normalisation. */
  padValue: number;
  /**
   * The tensor's padding already holds this call's (the same tensor, letterbox geometry, pad
   * value and normalisation as a call before, and nothing written there since): it is not
   * written again. `preprocess` knows this of its own tensors.
   */
  padFilled?: boolean;
}

/** Precomputed taps for one source size → scaled size. */
interface Plan {
  key: string;
  /** Per destination row: the two source rows and their weights. */
  y0: Int32Array;
  y1: Int32Array;
  b0: Int32Array;
  b1: Int32Array;
  /** Per destination pixel: byte offsets of the two taps' first channel, and the weights. */
  px0: Int32Array;
  px1: Int32Array;
  pa0: Int32Array;
  pa1: Int32Array;
  /** Two horizontal-pass rows, and the source row each holds (−1: none). */
  bufs: [Int32Array, Int32Array];
  held: Int32Array;
  /** The row of the result before it is spread over the planes. */
  row: Uint8Array;
  area2: boolean;
  /** The native kernel's scale/offset and plane arguments, reused call to call. */
  mo: Float64Array;
  q: Int32Array;
}

const COEF_BITS = 11;
const COEF_SCALE = 1 << COEF_BITS;

/** Round half to even, as `cvRound` (the CPU's default rounding). */
function roundEven(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** OpenCV's per-axis tap table: source index and 11-bit weights for each destination index. */
function taps(src: number, dst: number): { i0: Int32Array; i1: Int32Array; w0: Int32Array; w1: Int32Array } {
  const scale = 1 / (dst / src);
  const i0 = new Int32Array(dst), i1 = new Int32Array(dst), w0 = new Int32Array(dst), w1 = new Int32Array(dst);
  for (let d = 0; d < dst; d++) {
    let f = Math.fround((d + 0.5) * scale - 0.5);
    let s = Math.floor(f);
    f = Math.fround(f - s);
    if (s < 0) {
      s = 0;
      f = 0;
    }
    if (s >= src - 1) {
      s = src - 1;
      f = 0;
    }
    i0[d] = s;
    i1[d] = Math.min(s + 1, src - 1);
    w0[d] = roundEven(Math.fround(1 - f) * COEF_SCALE);
    w1[d] = roundEven(f * COEF_SCALE);
  }
  return { i0, i1, w0, w1 };
}

function makePlan(srcW: number, srcH: number, dw: number, dh: number, key: string): Plan {
  const n = dw * 3;
  const tx = taps(srcW, dw);
  const ty = taps(srcH, dh);
  // OpenCV clamps each source row (not the weight) vertically: row sy+1 past the bottom is the last row.
  for (let y = 0; y < dh; y++) {
    const f = Math.fround((y + 0.5) * (1 / (dh / srcH)) - 0.5);
    const s = Math.floor(f);
    const fy = Math.fround(f - s);
    ty.i0[y] = Math.min(Math.max(s, 0), srcH - 1);
    ty.i1[y] = Math.min(Math.max(s + 1, 0), srcH - 1);
    ty.w0[y] = roundEven(Math.fround(1 - fy) * COEF_SCALE);
    ty.w1[y] = roundEven(fy * COEF_SCALE);
  }
  return {
    key,
    y0: ty.i0,
    y1: ty.i1,
    b0: ty.w0,
    b1: ty.w1,
    px0: tx.i0.map((v) => v * 3),
    px1: tx.i1.map((v) => v * 3),
    pa0: tx.w0,
    pa1: tx.w1,
    bufs: [new Int32Array(n), new Int32Array(n)],
    held: new Int32Array(2),
    row: new Uint8Array(n),
    area2: srcW === dw * 2 && srcH === dh * 2,
    mo: new Float64Array(6),
    q: new Int32Array(3),
  };
}

/** Plans by size; a handful of sources' sizes, bounded. */
const plans = new Map<string, Plan>();
const MAX_PLANS = 16;

function planFor(srcW: number, srcH: number, dw: number, dh: number): Plan {
  const key = `${srcW}x${srcH}>${dw}x${dh}`;
  let p = plans.get(key);
  if (!p) {
    if (plans.size >= MAX_PLANS) plans.delete(plans.keys().next().value!);
    p = makePlan(srcW, srcH, dw, dh, key);
    plans.set(key, p);
  }
  return p;
}

function hpass(src: Uint8Array, rowStart: number, p: Plan, out: Int32Array): void {
  const { px0, px1, pa0, pa1 } = p;
  for (let x = 0, k = 0, n = px0.length; x < n; x++, k += 3) {
    const s0 = rowStart + px0[x], s1 = rowStart + px1[x], a = pa0[x], b = pa1[x];
    out[k] = src[s0] * a + src[s1] * b;
    out[k + 1] = src[s0 + 1] * a + src[s1 + 1] * b;
    out[k + 2] = src[s0 + 2] * a + src[s1 + 2] * b;
  }
}

/** Index of the plan's buffer holding source row `r`'s horizontal pass, computing it into the one not holding row-index `keep` if needed. */
function need(src: Uint8Array, stride: number, p: Plan, r: number, keep: number): number {
  const held = p.held;
  if (held[0] === r) return 0;
  if (held[1] === r) return 1;
  const i = keep === 0 ? 1 : 0;
  hpass(src, r * stride, p, p.bufs[i]);
  held[i] = r;
  return i;
}

/** Fills the padding of one plane (starting at `q`) with `v`. */
function fillPad(dst: Float32Array, q: number, v: number, lb: Letterbox): void {
  const W = lb.dstWidth, H = lb.dstHeight, dw = lb.scaledWidth, dh = lb.scaledHeight;
  for (let y = 0; y < H; y++) {
    const rowStart = q + y * W;
    if (y < lb.padY || y >= lb.padY + dh) dst.fill(v, rowStart, rowStart + W);
    else {
      if (lb.padX > 0) dst.fill(v, rowStart, rowStart + lb.padX);
      if (lb.padX + dw < W) dst.fill(v, rowStart + lb.padX + dw, rowStart + W);
    }
  }
}

/**
 * Checks the tensor's room, pads it, and returns the size's plan with the normalisation
 * (`mo`: m0–m2, o0–o2, value = byte · m + o) and the planes (`q`) of source channels 0..2 set.
 */
function setUp(srcWidth: number, srcHeight: number, srcOrder: 'rgb' | 'bgr', lb: Letterbox, dst: Float32Array, options: LetterboxTensorOptions, dstOffset: number): Plan {
  const W = lb.dstWidth, H = lb.dstHeight;
  const dw = lb.scaledWidth, dh = lb.scaledHeight;
  if (dst.length - dstOffset < W * H * 3) throw new RangeError(`letterbox: tensor has room for ${dst.length - dstOffset} values, need ${W * H * 3}`);
  const { scale, mean, std } = options.normalize ?? IDENTITY_NORMALIZE;
  const plane = W * H;
  // Source channel c goes to plane c, or to plane 2 − c when the orders differ: c0..c2 are the
  // model channels of source channels 0..2. Scalars only: nothing is allocated per frame.
  const swap = srcOrder !== options.modelOrder;
  const c0 = swap ? 2 : 0, c2 = swap ? 0 : 2;
  const m0 = scale / std[c0], m1 = scale / std[1], m2 = scale / std[c2];
  const o0 = -mean[c0] / std[c0], o1 = -mean[1] / std[1], o2 = -mean[c2] / std[c2];
  const q0 = dstOffset + c0 * plane, q1 = dstOffset + plane, q2 = dstOffset + c2 * plane;

  // Padding: right/bottom (top-left alignment) or around (centre).
  if ((dw < W || dh < H) && !options.padFilled) {
    const pad = options.padValue;
    fillPad(dst, q0, pad * m0 + o0, lb);
    fillPad(dst, q1, pad * m1 + o1, lb);
    fillPad(dst, q2, pad * m2 + o2, lb);
  }
  const p = planFor(srcWidth, srcHeight, dw, dh);
  const { mo, q } = p;
  mo[0] = m0;
  mo[1] = m1;
  mo[2] = m2;
  mo[3] = o0;
  mo[4] = o1;
  mo[5] = o2;
  q[0] = q0;
  q[1] = q1;
  q[2] = q2;
  return p;
}

/**
 * The exact letterbox of a yuv420p picture (frames as ffmpeg decodes them): each pixel the
 * resize reads is converted to BGR with `tab` (yuv.ts: ffmpeg's own conversion), so the tensor
 * equals letterboxTensor of the frame ffmpeg would have converted to bgr24, value for value.
 * The C kernel only (frames come as yuv420p only where it runs: `YUV_KERNEL`).
 */
export function letterboxYuvTensor(src: Uint8Array, srcWidth: number, srcHeight: number, tab: Int32Array, lb: Letterbox, dst: Float32Array, options: LetterboxTensorOptions, dstOffset = 0, kernel: NativeLetterbox | undefined = native): void {
  if (!kernel?.letterboxYuv) throw new Error('letterbox: yuv420p frames need the native kernel (npm ci builds it with the C compiler)');
  if (src.length < yuv420Bytes(srcWidth, srcHeight)) throw new RangeError(`letterbox: source has ${src.length} bytes, need ${yuv420Bytes(srcWidth, srcHeight)} for a ${srcWidth}x${srcHeight} yuv420p picture`);
  const p = setUp(srcWidth, srcHeight, 'bgr', lb, dst, options, dstOffset);
  const W = lb.dstWidth;
  kernel.letterboxYuv(src, srcWidth, srcHeight, tab, p.y0, p.y1, p.b0, p.b1, p.px0, p.px1, p.pa0, p.pa1, p.area2, dst, lb.padY * W + lb.padX, W, p.mo, p.q);
}

/** A yuv420p picture as packed bytes in `order` (a new buffer): for snapshots and annotated video, off the per-frame path. */
export function yuvToPacked(src: Uint8Array, width: number, height: number, tab: Int32Array, order: 'rgb' | 'bgr'): Buffer {
  const out = Buffer.allocUnsafe(width * height * 3);
  if (native?.yuvToPacked) native.yuvToPacked(src, width, height, tab, out, order === 'rgb');
  else yuvToPackedJs(src, width, height, tab, out, order === 'rgb');
  return out;
}

/**
 * Resizes the `srcWidth × srcHeight` packed picture in `src` (channel order `srcOrder`) into the
 * scaled area of `lb`, pads the rest with `padValue`, and writes the result normalised and
 * planar (CHW, `options.modelOrder`) at `dstOffset` in `dst`. `impl`: the C kernel (the default
 * where it is built) or the TypeScript loops; both give the same values.
 */
export function letterboxTensor(
  src: Uint8Array,
  srcWidth: number,
  srcHeight: number,
  srcOrder: 'rgb' | 'bgr',
  lb: Letterbox,
  dst: Float32Array,
  options: LetterboxTensorOptions,
  dstOffset = 0,
  impl: 'native' | 'js' | NativeLetterbox = native ? 'native' : 'js',
): void {
  if (impl === 'native' && !native) throw new Error('letterbox: the native kernel is not built (npm ci builds it with the C compiler)');
  // The C kernel (or, from `agrees`, a kernel on trial), else the loops below.
  const kernel = impl === 'native' ? native : impl === 'js' ? undefined : impl;
  if (src.length < srcWidth * srcHeight * 3) throw new RangeError(`letterbox: source has ${src.length} bytes, need ${srcWidth * srcHeight * 3} for ${srcWidth}x${srcHeight}`);
  const p = setUp(srcWidth, srcHeight, srcOrder, lb, dst, options, dstOffset);
  const W = lb.dstWidth, dw = lb.scaledWidth, dh = lb.scaledHeight;
  const stride = srcWidth * 3;
  if (kernel) {
    kernel.letterbox(src, stride, p.y0, p.y1, p.b0, p.b1, p.px0, p.px1, p.pa0, p.pa1, p.area2, dst, lb.padY * W + lb.padX, W, p.mo, p.q);
    return;
  }
  const mo = p.mo, q = p.q;
  const m0 = mo[0], m1 = mo[1], m2 = mo[2], o0 = mo[3], o1 = mo[4], o2 = mo[5];
  const q0 = q[0], q1 = q[1], q2 = q[2];
  const n = dw * 3;
  const row = p.row;
  // The two horizontal-pass buffers and the source row each holds (rows shared by consecutive
  // output rows, as when upscaling, are computed once). The plan's, reset per call: the call
  // is synchronous, so no two calls share them at once.
  const bufs = p.bufs;
  const held = p.held;
  held[0] = held[1] = -1;
  for (let y = 0; y < dh; y++) {
    if (p.area2) {
      const s0 = 2 * y * stride, s1 = s0 + stride;
      for (let x = 0, k = 0; x < dw; x++) {
        const b = 6 * x;
        for (let c = 0; c < 3; c++, k++) row[k] = (src[s0 + b + c] + src[s0 + b + 3 + c] + src[s1 + b + c] + src[s1 + b + 3 + c] + 2) >> 2;
      }
    } else {
      const ia = need(src, stride, p, p.y0[y], held[0] === p.y1[y] ? 0 : held[1] === p.y1[y] ? 1 : -1);
      const h0 = bufs[ia];
      const h1 = bufs[need(src, stride, p, p.y1[y], ia)];
      const b0 = p.b0[y], b1 = p.b1[y];
      let d = (lb.padY + y) * W + lb.padX;
      for (let k = 0; k < n; k += 3, d++) {
        // Values are within 0–255 by construction (weights sum to 2048): no clamping needed.
        dst[q0 + d] = (((((h0[k] >> 4) * b0) >> 16) + (((h1[k] >> 4) * b1) >> 16) + 2) >> 2) * m0 + o0;
        dst[q1 + d] = (((((h0[k + 1] >> 4) * b0) >> 16) + (((h1[k + 1] >> 4) * b1) >> 16) + 2) >> 2) * m1 + o1;
        dst[q2 + d] = (((((h0[k + 2] >> 4) * b0) >> 16) + (((h1[k + 2] >> 4) * b1) >> 16) + 2) >> 2) * m2 + o2;
      }
      continue;
    }
    // Spread the row over the three planes, normalised.
    let d = (lb.padY + y) * W + lb.padX;
    for (let x = 0, s = 0; x < dw; x++, s += 3, d++) {
      dst[q0 + d] = row[s] * m0 + o0;
      dst[q1 + d] = row[s + 1] * m1 + o1;
      dst[q2 + d] = row[s + 2] * m2 + o2;
    }
  }
}


/** The resized picture as packed bytes (`dw × dh × 3`, source channel order): for tests and tools comparing pixels with OpenCV. */
export function resizeLinear(src: Uint8Array, srcWidth: number, srcHeight: number, dw: number, dh: number, impl: 'native' | 'js' = LETTERBOX_IMPL): Uint8Array {
  const out = new Float32Array(dw * dh * 3);
  const lb: Letterbox = { srcWidth, srcHeight, dstWidth: dw, dstHeight: dh, scale: dw / srcWidth, scaledWidth: dw, scaledHeight: dh, padX: 0, padY: 0 };
  letterboxTensor(src, srcWidth, srcHeight, 'rgb', lb, out, { modelOrder: 'rgb', normalize: IDENTITY_NORMALIZE, padValue: 0 }, 0, impl);
  const plane = dw * dh;
  const bytes = new Uint8Array(plane * 3);
  for (let i = 0; i < plane; i++) {
    bytes[i * 3] = out[i];
    bytes[i * 3 + 1] = out[plane + i];
    bytes[i * 3 + 2] = out[2 * plane + i];
  }
  return bytes;
}

let yuvKernel = false;
{
  const k = loadNative();
  native = k && agrees(k) ? k : undefined;
  yuvKernel = native !== undefined && agreesYuv(native);
  plans.clear(); // the check's tiny sizes take no place of a source's
}

/** Which implementation letterboxTensor runs by default: 'native' (the C kernel) or 'js' (the loops). */
export const LETTERBOX_IMPL: 'native' | 'js' = native ? 'native' : 'js';

/**
 * Whether the C kernel letterboxes yuv420p frames (letterboxYuvTensor): then sources deliver
 * frames for the exact letterbox as ffmpeg decodes them, not converted to BGR (ARGUS_YUV=0: BGR).
 * x86-64 only: the kernel reproduces the arithmetic of ffmpeg's x86 converter; ffmpeg's ARM
 * converter may round differently, so ARM hosts keep BGR frames, which ffmpeg converts.
 */
export const YUV_KERNEL: boolean = yuvKernel && process.arch === 'x64' && process.env.ARGUS_YUV !== '0';
