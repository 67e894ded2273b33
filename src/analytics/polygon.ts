import type { Point } from '../core/polygon.js';

/**
 * Points given on a picture of `base`'s size (fractions of the frame: a 1×1 base) in the pixels
 * of a `width` × `height` picture, as p × size / base: not p × (size / base), whose rounded ratio
 * put a point on the base picture's border (624 of 624) a hair inside the new one's (639.99…),
 * where a box cut off by the frame has its edge, outside the zone.
 */
export function toPixels(points: readonly Point[], width: number, height: number, base: { width: number; height: number } = { width: 1, height: 1 }): Point[] {
  return points.map((p) => [(p[0] * width) / base.width, (p[1] * height) / base.height] as const);
}
