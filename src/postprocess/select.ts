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
}

/** Top-k by score, then NMS, then copies the kept rows into a new `Detections`. */
export function selectDetections(c: Candidates, count: number, options: SelectOptions): Detections {
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
