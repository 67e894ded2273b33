/**
 * yuv420p → BGR as ffmpeg converts it (libswscale's unscaled yuv420p → bgr24 converter on x86,
 * the one `-pix_fmt bgr24` runs for a 4:2:0 source): the letterbox kernel converts only the
 * source rows it samples, from frames ffmpeg delivers in their decoded format (half the bytes of
 * BGR, and no conversion in ffmpeg), and gets the values ffmpeg's own conversion would give.
 *
 * The arithmetic (libswscale/x86/yuv_2_rgb.asm with the coefficients of
 * `ff_yuv2rgb_c_init_tables`, contrast, saturation and brightness at their defaults): 16-bit
 * fixed point, `pmulhw` (a product's high 16 bits, rounded down), chroma shared by each 2×2 block:
 *   Y' = ((Y << 3) − yOffset) · yCoeff >> 16,  U' = (U << 3) − 1024,  V' = (V << 3) − 1024
 *   B = sat(Y' + (U' · ubCoeff >> 16)),  R = sat(Y' + (V' · vrCoeff >> 16)),
 *   G = sat(Y' + ((U' · ugCoeff >> 16) + (V' · vgCoeff >> 16)))
 * Each term depends on one byte, so five 256-entry tables hold it all.
 */
import type { YuvColour, YuvMatrix } from '../core/frame.js';

/** `ff_yuv2rgb_coeffs`: {crv, cbu, cgu, cgv} per matrix. */
const COEFFS: Record<YuvMatrix, readonly [number, number, number, number]> = {
  bt601: [104597, 132201, 25675, 53279],
  bt709: [117489, 138438, 13975, 34925],
  fcc: [104448, 132798, 24759, 53109],
  smpte240m: [117579, 136230, 16907, 35559],
  bt2020: [110013, 140363, 12277, 42626],
};

/** `roundToInt16`: a 16.16 value rounded to 16 bits, saturated. */
function roundToInt16(f: number): number {
  const r = Math.floor((f + 32768) / 65536);
  return r < -0x7fff ? -0x8000 : r > 0x7fff ? 0x7fff : r;
}

const MATRICES = Object.keys(COEFFS) as YuvMatrix[];
/** ffmpeg's default for a frame that names no colour: BT.601, limited range. */
const BT601: YuvColour = { matrix: 'bt601', fullRange: false };
/** Built on first use: two ranges per matrix. */
const tables: (Int32Array | undefined)[] = [];

/** Five 256-entry tables and six coefficients: what yuvTables returns. */
export const YUV_TABLES_LENGTH = 5 * 256 + 6;

/**
 * The five tables [Y', U'·ub, V'·vr, U'·ug, V'·vg] (256 each) the kernel converts with, then
 * the coefficients [yCoeff, yOffset, ub, vr, ug, vg]; built once (per frame: a lookup). Without
 * a colour, ffmpeg's default (BT.601, limited range).
 */
export function yuvTables(c: YuvColour = BT601): Int32Array {
  const key = MATRICES.indexOf(c.matrix) * 2 + (c.fullRange ? 1 : 0);
  if (key < 0) throw new RangeError(`yuv: unknown matrix ${String(c.matrix)}`);
  let t = tables[key];
  if (t) return t;
  let [crv, cbu, cgu, cgv] = COEFFS[c.matrix];
  cgu = -cgu;
  cgv = -cgv;
  let cy = 1 << 16, oy = 0;
  if (!c.fullRange) {
    cy = Math.trunc((cy * 255) / 219);
    oy = 16 << 16;
  } else {
    crv = Math.trunc((crv * 224) / 255);
    cbu = Math.trunc((cbu * 224) / 255);
    cgu = Math.trunc((cgu * 224) / 255);
    cgv = Math.trunc((cgv * 224) / 255);
  }
  // 64-bit products in C: exact in doubles (well below 2^53).
  const yc = roundToInt16(cy * 8192), vr = roundToInt16(crv * 8192), ub = roundToInt16(cbu * 8192);
  const vg = roundToInt16(cgv * 8192), ug = roundToInt16(cgu * 8192), yo = roundToInt16(oy * 8);
  t = new Int32Array(YUV_TABLES_LENGTH);
  for (let v = 0; v < 256; v++) {
    const c8 = (v << 3) - 1024;
    t[v] = (((v << 3) - yo) * yc) >> 16;
    t[256 + v] = (c8 * ub) >> 16;
    t[512 + v] = (c8 * vr) >> 16;
    t[768 + v] = (c8 * ug) >> 16;
    t[1024 + v] = (c8 * vg) >> 16;
  }
  // The coefficients themselves, for the kernel's SIMD rows (the same arithmetic, 8 pixels at once).
  t.set([yc, yo, ub, vr, ug, vg], 5 * 256);
  tables[key] = t;
  return t;
}

/** Bytes of a `width × height` yuv420p picture (chroma planes of half size, rounded up). */
export function yuv420Bytes(width: number, height: number): number {
  return width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
}

const sat = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);

/** The whole picture as packed BGR (RGB with `rgb`), in TypeScript: the kernel's reference, for tests and its load-time check. */
export function yuvToPackedJs(src: Uint8Array, width: number, height: number, tab: Int32Array, dst: Uint8Array, rgb = false): void {
  const cw = Math.ceil(width / 2), ch = Math.ceil(height / 2);
  const u0 = width * height, v0 = u0 + cw * ch;
  for (let r = 0, o = 0; r < height; r++) {
    for (let x = 0; x < width; x++, o += 3) {
      const Y = tab[src[r * width + x]];
      const c = (r >> 1) * cw + (x >> 1);
      const U = src[u0 + c], V = src[v0 + c];
      const b = sat(Y + tab[256 + U]), g = sat(Y + (tab[768 + U] + tab[1024 + V])), red = sat(Y + tab[512 + V]);
      dst[o] = rgb ? red : b;
      dst[o + 1] = g;
      dst[o + 2] = rgb ? b : red;
    }
  }
}
