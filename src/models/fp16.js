// Plain JavaScript (types in fp16.d.ts) so that the inference worker thread, which loads
// without a TypeScript loader, converts fp16 tensors with the same code.
/**
 * IEEE 754 half precision (binary16) ⇄ single precision. ONNX Runtime hands float16 tensors
 * over as `Uint16Array`s of raw bits (Node has no `Float16Array` before v24); decoders read
 * float32, so fp16 outputs are widened once per run into a reused `Float32Array`, and fp16
 * inputs are narrowed from the float32 pre-processing buffer.
 */

/** @type {Float32Array | undefined} */
let table;

/** All 65536 half-precision bit patterns as float32 (256 KiB), built on first use. */
/** @returns {Float32Array} */
function halfTable() {
  if (table) return table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    let v;
    if (exp === 0) v = mant * 2 ** -24; // ±0 and subnormals: mant × 2^−24
    else if (exp === 0x1f) v = mant === 0 ? Infinity : NaN;
    else v = (1024 + mant) * 2 ** (exp - 25); // (1 + mant/1024) × 2^(exp − 15)
    t[h] = sign * v;
  }
  table = t;
  return t;
}

/**
 * Widens half-precision bit patterns to float32 (exact: every half value is a float32).
 * Writes into `dst` when given (it must hold `src.length` values) and returns it.
 */
export function float16ToFloat32(src, dst) {
  const n = src.length;
  const out = dst ?? new Float32Array(n);
  if (out.length < n) throw new RangeError(`float16ToFloat32: dst holds ${out.length} values, src has ${n}`);
  const t = halfTable();
  for (let i = 0; i < n; i++) out[i] = t[src[i]];
  return out;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** One value to half-precision bits, rounding to nearest, ties to even. */
export function toFloat16Bits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0); // inf, NaN (quiet)
  const e = exp - 112; // rebias 127 → 15
  if (e >= 0x1f) return sign | 0x7c00; // overflow → ±inf
  if (e <= 0) {
    // Half subnormal (or zero): value = full × 2^(exp − 150) = h × 2^−24, so h = full >> (14 − e).
    if (e < -10) return sign; // below 2^−25: rounds to ±0
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) !== 0)) h++; // may carry into the smallest normal, correctly
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) !== 0)) h++; // a carry out of the mantissa bumps the exponent (up to inf)
  return sign | h;
}

/**
 * Narrows float32 values to half-precision bits (round to nearest, ties to even; overflow to
 * ±inf; NaN stays NaN), for models that take fp16 inputs. Writes into `dst` when given.
 */
export function float32ToFloat16(src, dst) {
  const n = src.length;
  const out = dst ?? new Uint16Array(n);
  if (out.length < n) throw new RangeError(`float32ToFloat16: dst holds ${out.length} values, src has ${n}`);
  for (let i = 0; i < n; i++) out[i] = toFloat16Bits(src[i]);
  return out;
}
