/**
 * Letterbox: fit a source picture into the model's input keeping its aspect ratio, then pad.
 * `align: 'top-left'` pads right and bottom (as YOLOX was trained); `'center'` pads evenly.
 */
export interface Letterbox {
  readonly srcWidth: number;
  readonly srcHeight: number;
  readonly dstWidth: number;
  readonly dstHeight: number;
  /** Source pixels → model pixels. */
  readonly scale: number;
  /** Size of the scaled picture inside the padded input. */
  readonly scaledWidth: number;
  readonly scaledHeight: number;
  /** Offset of the scaled picture inside the padded input. */
  readonly padX: number;
  readonly padY: number;
}

export type LetterboxAlign = 'top-left' | 'center';

/**
 * How the scaled size is made whole: `floor` truncates (YOLOX's `int(w * r)`), `round` rounds to
 * the nearest pixel (Ultralytics' `round(w * r)`). The model's reference decides (its manifest).
 */
export type LetterboxRounding = 'floor' | 'round';

export function letterbox(
  srcWidth: number,
  srcHeight: number,
  dstWidth: number,
  dstHeight: number,
  align: LetterboxAlign = 'top-left',
  rounding: LetterboxRounding = 'round',
): Letterbox {
  if (!(srcWidth > 0 && srcHeight > 0 && dstWidth > 0 && dstHeight > 0)) {
    throw new RangeError(`letterbox needs positive sizes, got ${srcWidth}x${srcHeight} → ${dstWidth}x${dstHeight}`);
  }
  const scale = Math.min(dstWidth / srcWidth, dstHeight / srcHeight);
  // Whole pixels as the model's reference makes them, at least 1 and at most the model input's
  // side (odd sizes allowed): the same expressions the ffmpeg scale filter is given
  // (sources/ffmpeg-args.ts), so boxes map back through the picture ffmpeg produced.
  const whole = rounding === 'floor' ? Math.floor : Math.round;
  const scaledWidth = Math.min(dstWidth, Math.max(1, whole(srcWidth * scale)));
  const scaledHeight = Math.min(dstHeight, Math.max(1, whole(srcHeight * scale)));
  const padX = align === 'center' ? Math.floor((dstWidth - scaledWidth) / 2) : 0;
  const padY = align === 'center' ? Math.floor((dstHeight - scaledHeight) / 2) : 0;
  return { srcWidth, srcHeight, dstWidth, dstHeight, scale, scaledWidth, scaledHeight, padX, padY };
}

/**
 * Maps `n` boxes (xyxy, model-input pixels) back to source pixels in place, clipped to the
 * source frame.
 */
export function unletterboxXyxy(xyxy: Float32Array, n: number, lb: Letterbox): void {
  const inv = 1 / lb.scale;
  const maxX = lb.srcWidth;
  const maxY = lb.srcHeight;
  for (let i = 0; i < n; i++) {
    const o = i * 4;
    xyxy[o] = clamp((xyxy[o] - lb.padX) * inv, 0, maxX);
    xyxy[o + 1] = clamp((xyxy[o + 1] - lb.padY) * inv, 0, maxY);
    xyxy[o + 2] = clamp((xyxy[o + 2] - lb.padX) * inv, 0, maxX);
    xyxy[o + 3] = clamp((xyxy[o + 3] - lb.padY) * inv, 0, maxY);
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** Intersection over union of box i in `a` and box j in `b` (xyxy, 4 floats a box). */
export function iouXyxy(a: ArrayLike<number>, i: number, b: ArrayLike<number>, j: number): number {
  const ai = i * 4;
  const bj = j * 4;
  const ix1 = Math.max(a[ai], b[bj]);
  const iy1 = Math.max(a[ai + 1], b[bj + 1]);
  const ix2 = Math.min(a[ai + 2], b[bj + 2]);
  const iy2 = Math.min(a[ai + 3], b[bj + 3]);
  const iw = ix2 - ix1;
  const ih = iy2 - iy1;
  if (iw <= 0 || ih <= 0) return 0;
  const inter = iw * ih;
  const areaA = (a[ai + 2] - a[ai]) * (a[ai + 3] - a[ai + 1]);
  const areaB = (b[bj + 2] - b[bj]) * (b[bj + 3] - b[bj + 1]);
  const union = areaA + areaB - inter;
  return union > 0 ? inter / union : 0;
}
