import { Detections } from '../core/detections.js';
import type { Candidates } from '../models/decoder.js';
import { argsortDesc, nmsXyxy } from './nms.js';

export interface SelectOptions {
  /** IoU above which a lower-scored box of the same class is suppressed. Default 0.45. */
  iouThreshold: number;
  /** Candidates kept (best first) before NMS, bounding its quadratic cost. Default 300. */
  preNmsTopK: number;
  /** Detections kept after NMS. Default 100. */
  maxDetections: number;
  /** Suppress across classes too. Default false (class-aware). */
  classAgnostic: boolean;
  /** Class ids at or past this (labels the model does not have) are dropped. Default: no limit. */
  numClasses?: number;
}

/**
 * Drops candidates a broken or hostile model can produce: a NaN or infinite score or
 * coordinate, an inverted box, a class id outside [0, numClasses). Compacts in place and
 * returns the count kept (NaN would otherwise sort anywhere and survive NMS, whose IoU with
 * NaN is never above the threshold).
 */
export function dropInvalid(c: Candidates, count: number, numClasses = Infinity): number {
  const { xyxy, score, classId } = c;
  let w = 0;
  for (let i = 0; i < count; i++) {
    const o = i * 4;
    const x1 = xyxy[o], y1 = xyxy[o + 1], x2 = xyxy[o + 2], y2 = xyxy[o + 3];
    const s = score[i];
    const k = classId[i];
    // Number.isFinite is false for NaN and ±Infinity; the comparisons are false for NaN too.
    if (!(Number.isFinite(s) && Number.isFinite(x1) && Number.isFinite(y1) && Number.isFinite(x2) && Number.isFinite(y2) && x2 >= x1 && y2 >= y1 && k >= 0 && k < numClasses)) continue;
    if (w !== i) {
      const q = w * 4;
      xyxy[q] = x1;
      xyxy[q + 1] = y1;
      xyxy[q + 2] = x2;
      xyxy[q + 3] = y2;
      score[w] = s;
      classId[w] = k;
    }
    w++;
  }
  return w;
}

/** Drops invalid candidates, then top-k by score, NMS, and copies the kept rows into a new `Detections`. */
export function selectDetections(c: Candidates, count: number, options: SelectOptions): Detections {
  count = dropInvalid(c, count, options.numClasses);
  if (count === 0) return Detections.empty();
  const order = argsortDesc(c.score, count);
  const k = Math.min(count, options.preNmsTopK);
  const kept = nmsXyxy(c.xyxy, c.score, c.classId, k, options.iouThreshold, {
    classAgnostic: options.classAgnostic,
    maxKeep: options.maxDetections,
    order: order.subarray(0, k),
  });
  const n = kept.length;
  const xyxy = new Float32Array(n * 4);
  const confidence = new Float32Array(n);
  const classId = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    const i = kept[r];
    xyxy[r * 4] = c.xyxy[i * 4];
    xyxy[r * 4 + 1] = c.xyxy[i * 4 + 1];
    xyxy[r * 4 + 2] = c.xyxy[i * 4 + 2];
    xyxy[r * 4 + 3] = c.xyxy[i * 4 + 3];
    confidence[r] = c.score[i];
    classId[r] = c.classId[i];
  }
  return new Detections(xyxy, confidence, classId);
}
