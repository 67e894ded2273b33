import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Candidates, ModelDecoder, OutputData } from './decoder.js';

export interface GridOptions {
  inputWidth: number;
  inputHeight: number;
  numClasses: number;
  /** Head strides. Default [8, 16, 32]. */
  strides?: readonly number[];
}

/**
 * Grid points over all head levels, Σ (W/s · H/s); undefined when the input is not a multiple
 * of every stride.
 */
export function gridPoints(width: number, height: number, strides: readonly number[]): number | undefined {
  let n = 0;
  for (const s of strides) {
    if (width % s !== 0 || height % s !== 0) return undefined;
    n += (width / s) * (height / s);
  }
  return n;
}

/** Grid points, or MODEL_SHAPE when the input is not a multiple of every stride. */
export function requireGridPoints(family: string, width: number, height: number, strides: readonly number[]): number {
  const n = gridPoints(width, height, strides);
  if (n === undefined) {
    throw new ArgusError(ErrorCodes.MODEL_SHAPE, `${family}: input ${width}x${height} is not a multiple of every stride (${strides.join(', ')})`);
  }
  return n;
}

/**
 * Ultralytics YOLOv8 / YOLO11 (also v9 exported by Ultralytics) detection head, anchor-free:
 * output `[N, 4 + C, A]`, channels first. For anchor a, rows 0–3 hold cx, cy, w, h in
 * model-input pixels and rows 4…4+C−1 the class scores (sigmoid already applied); there is no
 * objectness. Score = best class score. A = Σ (W/s · H/s) over strides 8, 16, 32 (8400 at 640).
 *
 * Holds one scratch buffer (a byte per anchor), so a decoder must not be shared between
 * concurrent decodes; decode() is synchronous, so one per model is fine in Node.
 */
export class Yolov8Decoder implements ModelDecoder {
  readonly family = 'yolov8' as const;
  readonly nmsInGraph = false;
  readonly numClasses: number;
  /** Anchors (grid points) per image. */
  readonly maxCandidates: number;
  readonly outputNames: readonly string[];
  /** `[N, 4 + C, A]` with N symbolic. */
  readonly expectedOutput: readonly (number | string)[];
  private readonly imageStride: number;
  /** Scratch: anchors with a class at or above the threshold (one byte per anchor). */
  private readonly mark: Uint8Array;

  constructor(options: GridOptions & { outputName?: string }) {
    const strides = options.strides ?? [8, 16, 32];
    const anchors = requireGridPoints('yolov8', options.inputWidth, options.inputHeight, strides);
    if (!(options.numClasses >= 1)) throw new ArgusError(ErrorCodes.MODEL_SHAPE, `yolov8: numClasses must be at least 1, got ${options.numClasses}`);
    this.numClasses = options.numClasses;
    this.maxCandidates = anchors;
    this.outputNames = [options.outputName ?? 'output0'];
    this.expectedOutput = ['N', 4 + this.numClasses, anchors];
    this.imageStride = (4 + this.numClasses) * anchors;
    this.mark = new Uint8Array(anchors);
  }

  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const o = outputs[0] as ArrayLike<number>;
    const A = this.maxCandidates;
    const C = this.numClasses;
    const thr = scoreThreshold;
    const base = batchIndex * this.imageStride;
    if (o.length < base + this.imageStride) throw outputTooShort('yolov8', o.length, base + this.imageStride, batchIndex);
    const cls0 = base + 4 * A;
    // Pass 1, class by class (sequential reads; the layout is channels first): mark anchors
    // with any class score at or above the threshold. Eight at a time, so the common case
    // (all eight near zero) is eight compares and one branch.
    const mark = this.mark;
    mark.fill(0);
    let any = false;
    const A8 = A - (A % 8);
    for (let k = 0; k < C; k++) {
      const row = cls0 + k * A;
      let a = 0;
      for (; a < A8; a += 8) {
        const p = row + a;
        if (o[p] >= thr || o[p + 1] >= thr || o[p + 2] >= thr || o[p + 3] >= thr || o[p + 4] >= thr || o[p + 5] >= thr || o[p + 6] >= thr || o[p + 7] >= thr) {
          for (let j = 0; j < 8; j++) if (o[p + j] >= thr) mark[a + j] = 1;
          any = true;
        }
      }
      for (; a < A; a++) {
        if (o[row + a] >= thr) {
          mark[a] = 1;
          any = true;
        }
      }
    }
    if (!any) return 0;
    // Pass 2, marked anchors only: best class (the first of equal maxima) and the box.
    const { xyxy, score, classId } = out;
    const cap = out.capacity;
    let n = 0;
    for (let a = 0; a < A; a++) {
      if (mark[a] === 0) continue;
      if (n === cap) break;
      let best = 0;
      let bestScore = o[cls0 + a];
      for (let k = 1, p = cls0 + A + a; k < C; k++, p += A) {
        const v = o[p];
        if (v > bestScore || !(bestScore === bestScore)) {
          bestScore = v;
          best = k;
        }
      }
      const p = base + a;
      const cx = o[p];
      const cy = o[p + A];
      const hw = o[p + 2 * A] * 0.5;
      const hh = o[p + 3 * A] * 0.5;
      const q = n * 4;
      xyxy[q] = cx - hw;
      xyxy[q + 1] = cy - hh;
      xyxy[q + 2] = cx + hw;
      xyxy[q + 3] = cy + hh;
      score[n] = bestScore;
      classId[n] = best;
      n++;
    }
    return n;
  }
}

export function outputTooShort(family: string, have: number, need: number, batchIndex: number): ArgusError {
  return new ArgusError(ErrorCodes.MODEL_SHAPE, `${family}: output has ${have} values, image ${batchIndex} needs ${need} (is the batch that large?)`);
}
