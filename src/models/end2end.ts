import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Candidates, ModelDecoder, OutputData } from './decoder.js';

/**
 * A class id as the graph wrote it (a float or an integer), or -1 (dropped with the invalid
 * candidates) when it is not a whole number ≥ 0: stored straight into the Int32Array, NaN became
 * 0 and 2^32 wrapped to 0, so garbage came out as class 0 ("person").
 */
function classIndex(v: number | bigint): number {
  const k = Number(v);
  return Number.isInteger(k) && k >= 0 && k <= 0x7fffffff ? k : -1;
}

/** Candidates per image when the graph's detection count is dynamic and nothing bounds it. */
export const DEFAULT_MAX_DETECTIONS = 1000;

/**
 * Row layouts of single-output end-to-end (NMS in the graph) models:
 * - `xyxy-score-class`: `[N, K, 6]`, rows x1, y1, x2, y2, score, class — Ultralytics YOLOv10
 *   (NMS-free head) and Ultralytics exports with `nms=True`; K is fixed (300 by default) and
 *   rows past the last detection are zero-padded.
 * - `batch-xyxy-class-score`: `[D, 7]`, rows batch index, x1, y1, x2, y2, class, score — YOLOv7
 *   `export.py --end2end` for ONNX Runtime (`--max-wh`); D is dynamic and counts detections
 *   over the whole batch, each row saying which image it belongs to.
 * Boxes are in model-input pixels. Rows with a score of 0 (padding) are never candidates.
 */
export type End2EndLayout = 'xyxy-score-class' | 'batch-xyxy-class-score';

export interface End2EndOptions {
  layout: End2EndLayout;
  /** K of `[N, K, 6]` when the graph fixes it; otherwise derived from the data at decode. */
  rowsPerImage?: number;
  /** N when the graph fixes it (lets K be derived when K is dynamic). */
  batchSize?: number;
  /** Classes, when known (labels or metadata); 0 = unknown, class ids pass through. */
  numClasses?: number;
  /** Candidate capacity when the row count is dynamic. Default 1000. */
  maxDetections?: number;
  outputName?: string;
}

export class End2EndDecoder implements ModelDecoder {
  readonly family = 'end2end' as const;
  readonly nmsInGraph = true;
  readonly layout: End2EndLayout;
  readonly numClasses: number;
  readonly maxCandidates: number;
  readonly outputNames: readonly string[];
  private readonly rows: number;
  private readonly batch: number;

  constructor(options: End2EndOptions) {
    this.layout = options.layout;
    this.numClasses = options.numClasses ?? 0;
    this.rows = options.rowsPerImage ?? 0;
    this.batch = options.batchSize ?? 0;
    this.maxCandidates = this.rows > 0 ? this.rows : (options.maxDetections ?? DEFAULT_MAX_DETECTIONS);
    this.outputNames = [options.outputName ?? 'output0'];
  }

  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const o = outputs[0] as ArrayLike<number>;
    return this.layout === 'xyxy-score-class' ? this.decode6(o, batchIndex, scoreThreshold, out) : this.decode7(o, batchIndex, scoreThreshold, out);
  }

  private decode6(o: ArrayLike<number>, batchIndex: number, scoreThreshold: number, out: Candidates): number {
    let K = this.rows;
    if (K === 0) {
      if (this.batch > 0) K = Math.floor(o.length / 6 / this.batch);
      else if (batchIndex === 0) K = Math.floor(o.length / 6);
      else throw new ArgusError(ErrorCodes.MODEL_SHAPE, `end2end: output [N, K, 6] has both N and K dynamic, so only batch 1 can be split into images`);
    }
    const base = batchIndex * K * 6;
    if (o.length < base + K * 6) throw new ArgusError(ErrorCodes.MODEL_SHAPE, `end2end: output has ${o.length} values, image ${batchIndex} needs ${base + K * 6}`);
    const { xyxy, score, classId } = out;
    const cap = out.capacity;
    let n = 0;
    for (let r = 0, p = base; r < K && n < cap; r++, p += 6) {
      const s = o[p + 4];
      if (!(s >= scoreThreshold) || !(s > 0)) continue;
      const q = n * 4;
      xyxy[q] = o[p];
      xyxy[q + 1] = o[p + 1];
      xyxy[q + 2] = o[p + 2];
      xyxy[q + 3] = o[p + 3];
      score[n] = s;
      classId[n] = classIndex(o[p + 5]);
      n++;
    }
    return n;
  }

  private decode7(o: ArrayLike<number>, batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const D = Math.floor(o.length / 7);
    const { xyxy, score, classId } = out;
    const cap = out.capacity;
    let n = 0;
    for (let r = 0, p = 0; r < D && n < cap; r++, p += 7) {
      if (o[p] !== batchIndex) continue;
      const s = o[p + 6];
      if (!(s >= scoreThreshold) || !(s > 0)) continue;
      const q = n * 4;
      xyxy[q] = o[p + 1];
      xyxy[q + 1] = o[p + 2];
      xyxy[q + 2] = o[p + 3];
      xyxy[q + 3] = o[p + 4];
      score[n] = s;
      classId[n] = classIndex(o[p + 5]);
      n++;
    }
    return n;
  }
}

export interface End2EndSplitOptions {
  /** Output names in decode order: num_dets, boxes, scores, classes. */
  outputNames: readonly [string, string, string, string];
  /** K when the graph fixes it. */
  rowsPerImage?: number;
  numClasses?: number;
  /** Candidate capacity when K is dynamic. Default 1000. */
  maxDetections?: number;
}

/**
 * The four-output "EfficientNMS" form (TensorRT `EfficientNMS_TRT` exports, and ONNX graphs
 * that mimic it, e.g. YOLOv6/YOLOv7/YOLOv8 `--end2end` for TensorRT): `num_dets [N, 1]`
 * (int32 or int64), `boxes [N, K, 4]` x1 y1 x2 y2 in model-input pixels, `scores [N, K]`,
 * `classes [N, K]` (int or float). Only the first num_dets rows of each image count.
 */
export class End2EndSplitDecoder implements ModelDecoder {
  readonly family = 'end2end-split' as const;
  readonly nmsInGraph = true;
  readonly numClasses: number;
  readonly maxCandidates: number;
  readonly outputNames: readonly string[];

  constructor(options: End2EndSplitOptions) {
    this.outputNames = options.outputNames;
    this.numClasses = options.numClasses ?? 0;
    this.maxCandidates = options.rowsPerImage ?? options.maxDetections ?? DEFAULT_MAX_DETECTIONS;
  }

  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const num = outputs[0];
    const boxes = outputs[1] as ArrayLike<number>;
    const scores = outputs[2] as ArrayLike<number>;
    const classes = outputs[3];
    const N = num.length; // [N, 1]
    const K = Math.floor(scores.length / N);
    if (batchIndex >= N) throw new ArgusError(ErrorCodes.MODEL_SHAPE, `end2end-split: num_dets has ${N} images, asked for image ${batchIndex}`);
    const count = Math.min(Number(num[batchIndex]), K);
    const { xyxy, score, classId } = out;
    const cap = out.capacity;
    let n = 0;
    for (let r = 0, i = batchIndex * K; r < count && n < cap; r++, i++) {
      const s = scores[i];
      if (!(s >= scoreThreshold) || !(s > 0)) continue;
      const b = i * 4;
      const q = n * 4;
      xyxy[q] = boxes[b];
      xyxy[q + 1] = boxes[b + 1];
      xyxy[q + 2] = boxes[b + 2];
      xyxy[q + 3] = boxes[b + 3];
      score[n] = s;
      classId[n] = classIndex(classes[i]);
      n++;
    }
    return n;
  }
}
