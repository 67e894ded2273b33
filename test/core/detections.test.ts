import { describe, expect, it } from 'vitest';
import { Detections } from '../../src/core/detections.js';

const make = (n: number, tracked = false) =>
  new Detections(
    Float32Array.from({ length: n * 4 }, (_, i) => i),
    Float32Array.from({ length: n }, (_, i) => i / 10),
    Int32Array.from({ length: n }, (_, i) => i % 2),
    tracked ? Int32Array.from({ length: n }, (_, i) => 100 + i) : undefined,
  );

describe('Detections', () => {
  it('empty() has no rows', () => {
    expect(Detections.empty().length).toBe(0);
  });

  it('checks column lengths', () => {
    expect(() => new Detections(new Float32Array(7), new Float32Array(2), new Int32Array(2))).toThrow(/xyxy has 7 values, expected 8/);
    expect(() => new Detections(new Float32Array(8), new Float32Array(2), new Int32Array(3))).toThrow(/classId has 3 rows/);
  });

  it('select by indices keeps the given order and every column', () => {
    const d = make(3, true).select([2, 0]);
    expect(d.length).toBe(2);
    expect(Array.from(d.xyxy)).toEqual([8, 9, 10, 11, 0, 1, 2, 3]);
    expect(Array.from(d.confidence)).toEqual([Math.fround(0.2), 0]);
    expect(Array.from(d.classId)).toEqual([0, 0]);
    expect(Array.from(d.trackerId!)).toEqual([102, 100]);
  });

  it('select by mask', () => {
    const d = make(3).select([false, true, false]);
    expect(Array.from(d.classId)).toEqual([1]);
    expect(d.trackerId).toBeUndefined();
    expect(make(3).select([false, false, false]).length).toBe(0);
  });

  it('select rejects a mask of the wrong length and rows out of range', () => {
    expect(() => make(3).select([true])).toThrow(/mask has 1 entries, expected 3/);
    expect(() => make(3).select([5])).toThrow(/row 5 out of range/);
  });

  it('merge concatenates, and keeps track ids only when all have them', () => {
    const m = Detections.merge([make(1, true), Detections.empty(), make(2, true)]);
    expect(m.length).toBe(3);
    expect(Array.from(m.trackerId!)).toEqual([100, 100, 101]);
    expect(Detections.merge([make(1, true), make(1)]).trackerId).toBeUndefined();
    expect(Detections.merge([]).length).toBe(0);
  });
});
