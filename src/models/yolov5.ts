import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Candidates, ModelDecoder, OutputData } from './decoder.js';
import { type GridOptions, outputTooShort, requireGridPoints } from './yolov8.js';

export interface Yolov5Options extends GridOptions {
  /** Anchor boxes per grid point. Default 3. */
  anchorsPerPoint?: number;
  outputName?: string;
}

/**
 * Ultralytics YOLOv5 and YOLOv7 exports (the box decoding is part of the graph): output
 * `[N, A, 5 + C]`, per row cx, cy, w, h in model-input pixels, objectness, then C class
 * scores (sigmoid applied). Score = objectness × best class score. A = 3 · Σ (W/s · H/s) over
 * strides 8, 16, 32 (25200 at 640): three anchor boxes per grid point, which is what tells it
 * apart from YOLOX's `[N, Σ (W/s · H/s), 5 + C]`.
 */
export class Yolov5Decoder implements ModelDecoder {
  readonly family = 'yolov5' as const;
  readonly nmsInGraph = false;
  readonly numClasses: number;
  readonly maxCandidates: number;
  readonly outputNames: readonly string[];
  /** `[N, A, 5 + C]` with N symbolic. */
  readonly expectedOutput: readonly (number | string)[];

  constructor(options: Yolov5Options) {
    const strides = options.strides ?? [8, 16, 32];
    const anchors = requireGridPoints('yolov5', options.inputWidth, options.inputHeight, strides) * (options.anchorsPerPoint ?? 3);
    if (!(options.numClasses >= 1)) throw new ArgusError(ErrorCodes.MODEL_SHAPE, `yolov5: numClasses must be at least 1, got ${options.numClasses}`);
    this.numClasses = options.numClasses;
    this.maxCandidates = anchors;
    this.outputNames = [options.outputName ?? 'output0'];
    this.expectedOutput = ['N', anchors, 5 + this.numClasses];
  }

  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const o = outputs[0] as ArrayLike<number>;
    const C = this.numClasses;
    const row = 5 + C;
    const A = this.maxCandidates;
    const base = batchIndex * A * row;
    if (o.length < base + A * row) throw outputTooShort('yolov5', o.length, base + A * row, batchIndex);
    const { xyxy, score, classId } = out;
    const cap = out.capacity;
    let n = 0;
    for (let a = 0, p = base; a < A; a++, p += row) {
      const obj = o[p + 4];
      if (!(obj >= scoreThreshold)) continue; // score = obj × cls ≤ obj
      let best = 0;
      let bestScore = o[p + 5];
      for (let k = 1; k < C; k++) {
        const v = o[p + 5 + k];
        if (v > bestScore) {
          bestScore = v;
          best = k;
        }
      }
      const s = obj * bestScore;
      if (!(s >= scoreThreshold)) continue;
      if (n === cap) break;
      const hw = o[p + 2] * 0.5;
      const hh = o[p + 3] * 0.5;
      const q = n * 4;
      xyxy[q] = o[p] - hw;
      xyxy[q + 1] = o[p + 1] - hh;
      xyxy[q + 2] = o[p] + hw;
      xyxy[q + 3] = o[p + 1] + hh;
      score[n] = s;
      classId[n] = best;
      n++;
    }
    return n;
  }
}
