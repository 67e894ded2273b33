import { describe, expect, it } from 'vitest';
import { normalizeHwcToChw } from '../../src/preprocess/normalize.js';

describe('normalizeHwcToChw', () => {
  // 2x1 image: pixel0 = (10,20,30), pixel1 = (40,50,60) in the order ffmpeg wrote them.
  const src = Uint8Array.from([10, 20, 30, 40, 50, 60]);

  it('writes planes in channel order without scaling for YOLOX (0–255 floats)', () => {
    const dst = new Float32Array(6);
    normalizeHwcToChw(src, 2, 1, dst);
    expect(Array.from(dst)).toEqual([10, 40, 20, 50, 30, 60]);
  });

  it('applies scale, then mean and std per channel', () => {
    const dst = new Float32Array(6);
    normalizeHwcToChw(src, 2, 1, dst, { scale: 1 / 255, mean: [0.1, 0.2, 0.3], std: [0.5, 0.25, 2] });
    const want = [(10 / 255 - 0.1) / 0.5, (40 / 255 - 0.1) / 0.5, (20 / 255 - 0.2) / 0.25, (50 / 255 - 0.2) / 0.25, (30 / 255 - 0.3) / 2, (60 / 255 - 0.3) / 2];
    Array.from(dst).forEach((v, i) => expect(v).toBeCloseTo(want[i], 5));
  });

  it('writes at an offset (a batch slot) and leaves the rest alone', () => {
    const dst = new Float32Array(12).fill(-1);
    normalizeHwcToChw(src, 2, 1, dst, undefined, 6);
    expect(Array.from(dst)).toEqual([-1, -1, -1, -1, -1, -1, 10, 40, 20, 50, 30, 60]);
  });

  it('reuses the destination: a second frame overwrites every value', () => {
    const dst = new Float32Array(6);
    normalizeHwcToChw(src, 2, 1, dst);
    normalizeHwcToChw(Uint8Array.from([1, 2, 3, 4, 5, 6]), 2, 1, dst);
    expect(Array.from(dst)).toEqual([1, 4, 2, 5, 3, 6]);
  });

  it('rejects buffers that are too small', () => {
    expect(() => normalizeHwcToChw(src, 3, 1, new Float32Array(9))).toThrow(/source has 6 bytes, need 9/);
    expect(() => normalizeHwcToChw(src, 2, 1, new Float32Array(5))).toThrow(/room for 5 values, need 6/);
  });
});
