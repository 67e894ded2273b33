import { iouXyxy } from '../core/geometry.js';

/**
 * Greedy non-maximum suppression over xyxy boxes. Candidates are visited by descending score
 * (equal scores: lower index first, so results are deterministic); a box is suppressed when
 * its IoU with a kept box of the same class (any class if `classAgnostic`) exceeds
 * `iouThreshold`. Returns kept indices in visiting order, at most `maxKeep`.
 */
export function nmsXyxy(
  xyxy: Float32Array,
  scores: Float32Array,
  classIds: Int32Array,
  count: number,
  iouThreshold: number,
  options: { classAgnostic?: boolean; maxKeep?: number; order?: Int32Array } = {},
): Int32Array {
  const maxKeep = options.maxKeep ?? count;
  const order = options.order ?? argsortDesc(scores, count);
  const kept = new Int32Array(Math.min(count, maxKeep));
  let nKept = 0;
  const agnostic = options.classAgnostic === true;
  for (let a = 0; a < count && nKept < maxKeep; a++) {
    const i = order[a];
    let keep = true;
    for (let k = 0; k < nKept; k++) {
      const j = kept[k];
      if (!agnostic && classIds[i] !== classIds[j]) continue;
      if (iouXyxy(xyxy, i, xyxy, j) > iouThreshold) {
        keep = false;
        break;
      }
    }
    if (keep) kept[nKept++] = i;
  }
  return kept.subarray(0, nKept);
}

/** Indices 0..count-1 sorted by descending score, ties by ascending index. */
export function argsortDesc(scores: ArrayLike<number>, count: number): Int32Array {
  const idx = new Int32Array(count);
  for (let i = 0; i < count; i++) idx[i] = i;
  idx.sort((a, b) => scores[b] - scores[a] || a - b);
  return idx;
}
