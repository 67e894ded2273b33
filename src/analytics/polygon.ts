import type { Point } from '../core/polygon.js';

/** Fractions of the frame (0–1) to pixels; pixels pass through. */
export function toPixels(points: readonly Point[], units: 'fraction' | 'pixel', width: number, height: number): Point[] {
  return units === 'pixel' ? points.map((p) => [p[0], p[1]] as const) : points.map((p) => [p[0] * width, p[1] * height] as const);
}
