import { describe, expect, it } from 'vitest';
import { iouXyxy, letterbox, unletterboxXyxy } from '../../src/core/geometry.js';

describe('letterbox', () => {
  it.each([
    // [src w, src h, dst w, dst h, align, scale, scaled w, scaled h, pad x, pad y]
    ['landscape 16:9 into square, top-left', 768, 432, 416, 416, 'top-left', 416 / 768, 416, 234, 0, 0],
    ['landscape 16:9 into square, centred', 768, 432, 416, 416, 'center', 416 / 768, 416, 234, 0, 91],
    ['portrait into square, centred', 480, 640, 416, 416, 'center', 416 / 640, 312, 416, 52, 0],
    ['1080p into 640', 1920, 1080, 640, 640, 'top-left', 1 / 3, 640, 360, 0, 0],
    ['already the right size', 416, 416, 416, 416, 'center', 1, 416, 416, 0, 0],
    ['upscales a small source', 208, 104, 416, 416, 'top-left', 2, 416, 208, 0, 0],
    ['rounds a scaled side up to the nearest pixel (138.528 → 139)', 1000, 333, 416, 416, 'top-left', 0.416, 416, 139, 0, 0],
    ['rounds a scaled side down to the nearest pixel (137.28 → 137)', 1000, 330, 416, 416, 'center', 0.416, 416, 137, 0, 139],
    ['keeps a side that scales below one pixel at 1', 10_000, 1, 416, 416, 'top-left', 0.0416, 416, 1, 0, 0],
  ] as const)('%s', (_name, sw, sh, dw, dh, align, scale, w, h, px, py) => {
    const lb = letterbox(sw, sh, dw, dh, align);
    expect(lb.scale).toBeCloseTo(scale, 9);
    expect([lb.scaledWidth, lb.scaledHeight, lb.padX, lb.padY]).toEqual([w, h, px, py]);
  });

  it('rejects non-positive sizes', () => {
    expect(() => letterbox(0, 10, 416, 416)).toThrow(RangeError);
  });
});

describe('unletterboxXyxy', () => {
  it('maps model pixels back to source pixels (top-left padding)', () => {
    const lb = letterbox(768, 432, 416, 416, 'top-left');
    const boxes = new Float32Array([0, 0, 416, 234, 208, 117, 312, 175.5]);
    unletterboxXyxy(boxes, 2, lb);
    expect(Array.from(boxes).map((v) => Math.round(v * 100) / 100)).toEqual([0, 0, 768, 432, 384, 216, 576, 324]);
  });

  it('removes centred padding before scaling', () => {
    const lb = letterbox(768, 432, 416, 416, 'center');
    const boxes = new Float32Array([104, 91 + 58.5, 208, 91 + 117]);
    unletterboxXyxy(boxes, 1, lb);
    expect(Array.from(boxes).map((v) => Math.round(v * 100) / 100)).toEqual([192, 108, 384, 216]);
  });

  it('clips boxes that reach into the padding or beyond the frame', () => {
    const lb = letterbox(768, 432, 416, 416, 'top-left');
    const boxes = new Float32Array([-10, -5, 500, 300]);
    unletterboxXyxy(boxes, 1, lb);
    expect(Array.from(boxes)).toEqual([0, 0, 768, 432]);
  });

  it('round-trips any point through letterbox and back', () => {
    const lb = letterbox(1280, 720, 640, 640, 'center');
    const x = 333.3, y = 222.2;
    const mx = x * lb.scale + lb.padX, my = y * lb.scale + lb.padY;
    const b = new Float32Array([mx, my, mx, my]);
    unletterboxXyxy(b, 1, lb);
    expect(b[0]).toBeCloseTo(x, 3);
    expect(b[1]).toBeCloseTo(y, 3);
  });
});

describe('iouXyxy', () => {
  it.each([
    ['identical', [0, 0, 10, 10], [0, 0, 10, 10], 1],
    ['disjoint', [0, 0, 10, 10], [20, 20, 30, 30], 0],
    ['touching edges', [0, 0, 10, 10], [10, 0, 20, 10], 0],
    ['half overlap', [0, 0, 10, 10], [5, 0, 15, 10], 50 / 150],
    ['contained', [0, 0, 10, 10], [0, 0, 5, 10], 0.5],
  ])('%s', (_n, a, b, want) => {
    expect(iouXyxy(a, 0, b, 0)).toBeCloseTo(want as number, 6);
  });
});
