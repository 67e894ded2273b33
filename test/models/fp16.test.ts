import { describe, expect, it } from 'vitest';
import { float16ToFloat32, float32ToFloat16, toFloat16Bits } from '../../src/models/fp16.js';

/** (half bits, value, what) — known binary16 encodings. */
const known: [number, number, string][] = [
  [0x0000, 0, '+0'],
  [0x3c00, 1, 'one'],
  [0xc000, -2, 'minus two'],
  [0x3555, 0.333251953125, 'nearest to 1/3'],
  [0x2e66, 0.0999755859375, 'nearest to 0.1'],
  [0x7bff, 65504, 'largest normal'],
  [0x0400, 2 ** -14, 'smallest normal'],
  [0x03ff, 1023 * 2 ** -24, 'largest subnormal'],
  [0x0001, 2 ** -24, 'smallest subnormal'],
  [0x8001, -(2 ** -24), 'negative subnormal'],
  [0x7c00, Infinity, '+inf'],
  [0xfc00, -Infinity, '-inf'],
  [0x3bff, 1 - 2 ** -11, 'largest below one'],
  [0x5640, 100, 'a hundred'],
];

const hex = (bits: number) => bits.toString(16).padStart(4, '0');
const knownRows = known.map(([bits, value, what]) => [hex(bits), value, what, bits] as const);

describe('float16ToFloat32', () => {
  it.each(knownRows)('0x%s widens to %s (%s)', (_, value, _what, bits) => {
    expect(float16ToFloat32(new Uint16Array([bits]))[0]).toBe(value);
  });

  it('keeps the sign of zero and reads every exponent-31 pattern with a mantissa as NaN', () => {
    const out = float16ToFloat32(new Uint16Array([0x8000, 0x7e00, 0x7c01, 0xfe00, 0x7fff]));
    expect(Object.is(out[0], -0)).toBe(true);
    expect(Array.from(out.subarray(1)).every(Number.isNaN)).toBe(true);
  });

  it('writes into the given buffer and rejects a short one', () => {
    const dst = new Float32Array(3);
    expect(float16ToFloat32(new Uint16Array([0x3c00, 0x4000]), dst)).toBe(dst);
    expect(Array.from(dst)).toEqual([1, 2, 0]);
    expect(() => float16ToFloat32(new Uint16Array(4), new Float32Array(3))).toThrow(RangeError);
  });
});

describe('float32ToFloat16', () => {
  it.each(knownRows)('0x%s is the encoding of %s (%s)', (_, value, _what, bits) => {
    expect(toFloat16Bits(value)).toBe(bits);
  });

  /** (float32 value, half bits, why) for rounding. */
  const rounding: [number, number, string][] = [
    [1 + 2 ** -11, 0x3c00, 'halfway between 1 and the next half: ties to even (down)'],
    [1 + 3 * 2 ** -11, 0x3c02, 'halfway between 0x3c01 and 0x3c02: ties to even (up)'],
    [1 + 2 ** -11 + 2 ** -20, 0x3c01, 'just above halfway: up'],
    [65519, 0x7bff, 'under the overflow midpoint: largest normal'],
    [65520, 0x7c00, 'the overflow midpoint ties to even, which is inf'],
    [1e6, 0x7c00, 'overflow: inf'],
    [-1e6, 0xfc00, 'overflow: -inf'],
    [2 ** -25, 0x0000, 'half the smallest subnormal: ties to even (zero)'],
    [2 ** -25 + 2 ** -35, 0x0001, 'above half the smallest subnormal: up'],
    [3 * 2 ** -25, 0x0002, '1.5 × smallest subnormal: ties to even (up to 2)'],
    [2 ** -14 - 2 ** -26, 0x0400, 'rounds up out of the subnormals into the smallest normal'],
    [1e-10, 0x0000, 'underflow: zero'],
    [-1e-10, 0x8000, 'underflow: -0'],
    [0.1, 0x2e66, '0.1'],
  ];
  it.each(rounding.map(([value, bits, why]) => [value, hex(bits), why, bits] as const))('%s → 0x%s (%s)', (value, _, _why, bits) => {
    expect(float32ToFloat16(new Float32Array([value]))[0]).toBe(bits);
  });

  it('keeps NaN a NaN and the sign of zero', () => {
    const h = float32ToFloat16([NaN, -0]);
    expect(h[0] & 0x7c00).toBe(0x7c00);
    expect(h[0] & 0x3ff).not.toBe(0);
    expect(h[1]).toBe(0x8000);
  });

  it('round-trips all 63488 finite half values and both infinities', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const back = float32ToFloat16(float16ToFloat32(all));
    for (let h = 0; h < 65536; h++) {
      const isNaN = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
      if (!isNaN && back[h] !== h) throw new Error(`0x${h.toString(16)} came back as 0x${back[h].toString(16)}`);
    }
  });

  it('writes into the given buffer', () => {
    const dst = new Uint16Array(2);
    expect(float32ToFloat16([1, -2], dst)).toBe(dst);
    expect(Array.from(dst)).toEqual([0x3c00, 0xc000]);
  });
});
