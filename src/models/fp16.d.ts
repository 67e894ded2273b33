/** Types of fp16.js (plain JavaScript, shared with the inference worker thread). */

/**
 * Widens half-precision bit patterns to float32 (exact: every half value is a float32).
 * Writes into `dst` when given (it must hold `src.length` values) and returns it.
 */
export function float16ToFloat32(src: Uint16Array, dst?: Float32Array): Float32Array;

/** One value to half-precision bits, rounding to nearest, ties to even. */
export function toFloat16Bits(x: number): number;

/**
 * Narrows float32 values to half-precision bits (round to nearest, ties to even; overflow to
 * ±inf; NaN stays NaN), for models that take fp16 inputs. Writes into `dst` when given.
 */
export function float32ToFloat16(src: ArrayLike<number>, dst?: Uint16Array): Uint16Array;
