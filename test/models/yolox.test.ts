import { describe, expect, it } from 'vitest';
import { Candidates } from '../../src/models/decoder.js';
import { YoloxDecoder } from '../../src/models/yolox.js';

/** A synthetic YOLOX output for a 64x64 input, strides 8/16/32: 64 + 16 + 4 = 84 anchors, 3 classes. */
function synthetic() {
  const dec = new YoloxDecoder({ inputWidth: 64, inputHeight: 64, numClasses: 3 });
  const row = 8;
  const out = new Float32Array(84 * row);
  const set = (anchor: number, v: number[]) => out.set(v, anchor * row);
  // Anchor 9: stride 8, grid (1, 1). cx = (0.5+1)*8 = 12, cy = (0.25+1)*8 = 10, w = e^0*8 = 8, h = e^ln2*8 = 16.
  set(9, [0.5, 0.25, 0, Math.log(2), 0.9, 0.1, 0.8, 0.2]);
  // Anchor 64 + 5: stride 16, grid (1, 1). cx = (0+1)*16 = 16, cy = 16, w = h = 16. obj .6 × cls .5 = .3.
  set(69, [0, 0, 0, 0, 0.6, 0.5, 0.1, 0.0]);
  // Anchor 80 + 3: stride 32, grid (1, 1): objectness too low.
  set(83, [0, 0, 0, 0, 0.05, 0.9, 0.9, 0.9]);
  return { dec, out };
}

describe('YoloxDecoder', () => {
  it('expects [1, anchors, 5 + classes] for the input size and strides', () => {
    expect(new YoloxDecoder({ inputWidth: 416, inputHeight: 416, numClasses: 80 }).expectedOutput).toEqual([1, 3549, 85]);
    expect(new YoloxDecoder({ inputWidth: 640, inputHeight: 384, numClasses: 2 }).expectedOutput).toEqual([1, 80 * 48 + 40 * 24 + 20 * 12, 7]);
  });

  it('decodes grid offsets, strides and log sizes into xyxy boxes with obj × class scores', () => {
    const { dec, out } = synthetic();
    const c = new Candidates(dec.maxCandidates);
    const n = dec.decode(out, 0.25, c);
    expect(n).toBe(2);
    expect(Array.from(c.xyxy.subarray(0, 8))).toEqual([8, 2, 16, 18, 8, 8, 24, 24]);
    expect(c.score[0]).toBeCloseTo(0.72, 6);
    expect(c.classId[0]).toBe(1);
    expect(c.score[1]).toBeCloseTo(0.3, 6);
    expect(c.classId[1]).toBe(0);
  });

  it('drops candidates under the score threshold', () => {
    const { dec, out } = synthetic();
    const c = new Candidates(dec.maxCandidates);
    expect(dec.decode(out, 0.5, c)).toBe(1);
    expect(dec.decode(out, 0.8, c)).toBe(0);
  });

  it('finds nothing in an all-zero output', () => {
    const dec = new YoloxDecoder({ inputWidth: 64, inputHeight: 64, numClasses: 3 });
    expect(dec.decode(new Float32Array(84 * 8), 0.01, new Candidates(84))).toBe(0);
  });

  it('rejects inputs that are not a multiple of every stride', () => {
    expect(() => new YoloxDecoder({ inputWidth: 100, inputHeight: 64, numClasses: 1 })).toThrow(/not a multiple of stride 8/);
  });

  it('checks output shapes, naming both', () => {
    const dec = new YoloxDecoder({ inputWidth: 416, inputHeight: 416, numClasses: 80 });
    expect(() => dec.checkOutput([1, 3549, 85])).not.toThrow();
    expect(() => dec.checkOutput(['batch', 3549, 85])).not.toThrow();
    expect(() => dec.checkOutput([1, 8400, 84])).toThrow(/expects output \[1, 3549, 85\].*the model has \[1, 8400, 84\]/);
  });
});
