import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { letterbox } from '../../src/core/geometry.js';
import { agrees, LETTERBOX_IMPL, letterboxTensor, type NativeLetterbox } from '../../src/preprocess/letterbox.js';

/** A deterministic pseudo-random picture (no two runs differ). */
function picture(w: number, h: number, seed: number): Uint8Array {
  const out = new Uint8Array(w * h * 3);
  let s = seed >>> 0;
  for (let i = 0; i < out.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

const hasCompiler = spawnSync('cc', ['--version']).status === 0;

describe('the native letterbox kernel (src/preprocess/letterbox.c, built by npm ci)', () => {
  it('is built and loaded on a machine with a C compiler (this one)', () => {
    expect(hasCompiler).toBe(true);
    expect(LETTERBOX_IMPL).toBe('native');
  });

  it('writes the same tensor as the TypeScript loops, value for value: down- and upscaling, exact halves, odd sizes, both pad alignments, normalisation, channel swap, a batch offset', () => {
    const sizes: [number, number, number, number][] = [
      [1920, 1080, 416, 416], [768, 432, 416, 416], [640, 360, 640, 640], [832, 468, 416, 416], // 832x468 → 416x234 is an exact half
      [101, 57, 416, 416], [3, 5, 64, 48], [1280, 720, 320, 192], [417, 233, 416, 416], [1, 1, 8, 8],
    ];
    const cases = [
      { align: 'top-left' as const, rounding: 'floor' as const, normalize: { scale: 1, mean: [0, 0, 0] as const, std: [1, 1, 1] as const }, order: 'bgr' as const },
      { align: 'center' as const, rounding: 'round' as const, normalize: { scale: 1 / 255, mean: [0.485, 0.456, 0.406] as const, std: [0.229, 0.224, 0.225] as const }, order: 'rgb' as const },
    ];
    let compared = 0;
    for (const [sw, sh, W, H] of sizes) {
      for (const [i, c] of cases.entries()) {
        const src = picture(sw, sh, sw * 31 + sh + i);
        const lb = letterbox(sw, sh, W, H, c.align, c.rounding);
        const offset = i * 7;
        const a = new Float32Array(offset + W * H * 3 + 5).fill(-1);
        const b = new Float32Array(offset + W * H * 3 + 5).fill(-1);
        const options = { modelOrder: c.order, normalize: c.normalize, padValue: 114 };
        letterboxTensor(src, sw, sh, 'bgr', lb, a, options, offset, 'native');
        letterboxTensor(src, sw, sh, 'bgr', lb, b, options, offset, 'js');
        let differ = 0;
        for (let k = 0; k < a.length; k++) if (!Object.is(a[k], b[k])) differ++;
        expect(differ, `${sw}x${sh} → ${W}x${H} (${c.align})`).toBe(0);
        compared += a.length;
      }
    }
    expect(compared).toBeGreaterThan(2_000_000);
  });

  it('a kernel that does not give the loops’ values (built from an older letterbox.c, or by a compiler that reorders floating point) is left unused', () => {
    const k = createRequire(import.meta.url)(resolve(__dirname, '../../dist/native/letterbox.node')) as NativeLetterbox;
    expect(agrees(k)).toBe(true);
    const offByOne: NativeLetterbox = {
      letterbox: (...a: Parameters<NativeLetterbox['letterbox']>) => {
        k.letterbox(...a);
        a[11][a[12] + a[15][0]] += 1; // one value of the first plane
      },
    };
    expect(agrees(offByOne)).toBe(false);
    expect(agrees({ letterbox: () => { throw new Error('old ABI'); } })).toBe(false);
  });

  it('the kernel itself checks every table against the arrays: rows, columns or planes out of bounds, or wrong types, throw instead of reading or writing outside them', () => {
    const k = createRequire(import.meta.url)(resolve(__dirname, '../../dist/native/letterbox.node')) as { letterbox: (...a: unknown[]) => void };
    const i32 = (...v: number[]) => Int32Array.from(v);
    const src = new Uint8Array(4 * 2 * 3); // 4x2
    const dst = new Float32Array(2 * 2 * 3);
    const mo = Float64Array.from([1, 1, 1, 0, 0, 0]);
    const ok = () => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8));
    expect(ok).not.toThrow();
    expect(() => k.letterbox(src, 12, i32(0, 2), i32(1, 2), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(RangeError); // row 2 of 2
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 10), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(RangeError); // a column past the row
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 9))).toThrow(RangeError); // a plane past the tensor
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), true, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(RangeError); // a 2x reduction of 2 rows needs 4
    expect(() => k.letterbox(src, 12, [0, 1], i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(TypeError);
    expect(() => k.letterbox(src)).toThrow(/16 arguments/);
    // a table in shared memory could change between the check and its use: refused
    const shared = new Int32Array(new SharedArrayBuffer(8));
    shared.set([0, 6]);
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), shared, i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(TypeError);
    // weights outside OpenCV's 0–2048
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(0x7fffffff, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(RangeError);
    // a pair of weights over 2049 (OpenCV's pairs sum to 2048 ± 1): the byte it makes could pass 255 and index past a normalisation table
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(2, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 0), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(/pair over 2049/);
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(0, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 2), false, dst, 0, 2, mo, i32(0, 4, 8))).toThrow(/pair over 2049/);
    expect(() => k.letterbox(src, 12, i32(0, 1), i32(1, 1), i32(2048, 0), i32(1, 2048), i32(0, 6), i32(3, 9), i32(2048, 2048), i32(0, 1), false, dst, 0, 2, mo, i32(0, 4, 8))).not.toThrow();
  });

  it('a frame shorter than its size says, or a tensor too small, is a RangeError (never a read or write out of bounds)', () => {
    const lb = letterbox(640, 360, 416, 416, 'top-left', 'floor');
    const options = { modelOrder: 'rgb' as const, normalize: { scale: 1, mean: [0, 0, 0] as const, std: [1, 1, 1] as const }, padValue: 114 };
    expect(() => letterboxTensor(new Uint8Array(640 * 359 * 3), 640, 360, 'rgb', lb, new Float32Array(416 * 416 * 3), options, 0, 'native')).toThrow(RangeError);
    expect(() => letterboxTensor(new Uint8Array(640 * 360 * 3), 640, 360, 'rgb', lb, new Float32Array(416 * 416 * 3 - 1), options, 0, 'native')).toThrow(RangeError);
  });
});
