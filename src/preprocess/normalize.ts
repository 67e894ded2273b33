/**
 * Pixel normalisation for one model: `(pixel × scale − mean[c]) / std[c]`, written planar
 * (NCHW) from packed HWC bytes in a single pass. ffmpeg already delivers the channel order the
 * model wants, so no swizzle happens here.
 */
export interface NormalizeOptions {
  /** Multiplier applied to the 0–255 byte first (1 for YOLOX, 1/255 for most others). */
  scale: number;
  /** Per-channel mean subtracted after scaling, in the model's channel order. */
  mean: readonly [number, number, number];
  /** Per-channel divisor after subtracting the mean. */
  std: readonly [number, number, number];
}

export const IDENTITY_NORMALIZE: NormalizeOptions = { scale: 1, mean: [0, 0, 0], std: [1, 1, 1] };

/**
 * Writes `width × height` pixels of 3-channel HWC `src` into `dst` (length ≥ 3·w·h, offset
 * `dstOffset` for batched tensors) as CHW floats.
 */
export function normalizeHwcToChw(
  src: Uint8Array,
  width: number,
  height: number,
  dst: Float32Array,
  options: NormalizeOptions = IDENTITY_NORMALIZE,
  dstOffset = 0,
): void {
  const plane = width * height;
  if (src.length < plane * 3) throw new RangeError(`normalize: source has ${src.length} bytes, need ${plane * 3}`);
  if (dst.length - dstOffset < plane * 3) throw new RangeError(`normalize: tensor has room for ${dst.length - dstOffset} values, need ${plane * 3}`);
  const { scale, mean, std } = options;
  const p0 = dstOffset;
  const p1 = dstOffset + plane;
  const p2 = dstOffset + 2 * plane;
  if (scale === 1 && mean[0] === 0 && mean[1] === 0 && mean[2] === 0 && std[0] === 1 && std[1] === 1 && std[2] === 1) {
    for (let i = 0, s = 0; i < plane; i++, s += 3) {
      dst[p0 + i] = src[s];
      dst[p1 + i] = src[s + 1];
      dst[p2 + i] = src[s + 2];
    }
    return;
  }
  // Fold (v·scale − m)/s into v·a + b per channel.
  const a0 = scale / std[0], b0 = -mean[0] / std[0];
  const a1 = scale / std[1], b1 = -mean[1] / std[1];
  const a2 = scale / std[2], b2 = -mean[2] / std[2];
  for (let i = 0, s = 0; i < plane; i++, s += 3) {
    dst[p0 + i] = src[s] * a0 + b0;
    dst[p1 + i] = src[s + 1] * a1 + b1;
    dst[p2 + i] = src[s + 2] * a2 + b2;
  }
}
