import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Candidates, Decoder } from './decoder.js';

export interface YoloxOptions {
  inputWidth: number;
  inputHeight: number;
  numClasses: number;
  /** Head strides, coarsest last. Default [8, 16, 32]. */
  strides?: readonly number[];
}

/**
 * YOLOX raw head output `[1, A, 5 + C]`: per anchor cx, cy, log-w, log-h relative to its grid
 * cell and stride, objectness, then C class scores (sigmoid already applied in the export).
 * Score = objectness × best class score.
 */
export class YoloxDecoder implements Decoder {
  readonly family = 'yolox';
  readonly numClasses: number;
  readonly maxCandidates: number;
  readonly expectedOutput: readonly number[];
  private readonly gridX: Float32Array;
  private readonly gridY: Float32Array;
  private readonly stride: Float32Array;

  constructor(options: YoloxOptions) {
    const strides = options.strides ?? [8, 16, 32];
    const { inputWidth: w, inputHeight: h, numClasses } = options;
    let anchors = 0;
    for (const s of strides) {
      if (w % s !== 0 || h % s !== 0) {
        throw new ArgusError(ErrorCodes.MODEL_SHAPE, `yolox: input ${w}x${h} is not a multiple of stride ${s}`);
      }
      anchors += (w / s) * (h / s);
    }
    this.numClasses = numClasses;
    this.maxCandidates = anchors;
    this.expectedOutput = [1, anchors, 5 + numClasses];
    this.gridX = new Float32Array(anchors);
    this.gridY = new Float32Array(anchors);
    this.stride = new Float32Array(anchors);
    let a = 0;
    for (const s of strides) {
      const gw = w / s;
      const gh = h / s;
      for (let y = 0; y < gh; y++) {
        for (let x = 0; x < gw; x++, a++) {
          this.gridX[a] = x;
          this.gridY[a] = y;
          this.stride[a] = s;
        }
      }
    }
  }

  /** Throws MODEL_SHAPE unless `dims` is the output this decoder reads (symbolic or −1 dims match anything). */
  checkOutput(dims: readonly (number | string)[]): void {
    const ok = dims.length === 3 && dims.every((d, i) => d === this.expectedOutput[i] || typeof d === 'string' || d === -1);
    if (!ok) {
      throw new ArgusError(
        ErrorCodes.MODEL_SHAPE,
        `yolox decoder expects output [${this.expectedOutput.join(', ')}] ` +
          `(anchors for strides over the input size, 5 + ${this.numClasses} classes), the model has [${dims.join(', ')}]`,
      );
    }
  }

  decode(o: Float32Array, scoreThreshold: number, out: Candidates): number {
    const c = this.numClasses;
    const row = 5 + c;
    const anchors = this.maxCandidates;
    const { gridX, gridY, stride } = this;
    const { xyxy, score, classId } = out;
    let n = 0;
    for (let a = 0, p = 0; a < anchors; a++, p += row) {
      const obj = o[p + 4];
      if (obj < scoreThreshold) continue; // score = obj × cls ≤ obj
      let best = 0;
      let bestScore = o[p + 5];
      for (let k = 1; k < c; k++) {
        const v = o[p + 5 + k];
        if (v > bestScore) {
          bestScore = v;
          best = k;
        }
      }
      const s = obj * bestScore;
      if (s < scoreThreshold) continue;
      const st = stride[a];
      const cx = (o[p] + gridX[a]) * st;
      const cy = (o[p + 1] + gridY[a]) * st;
      const hw = Math.exp(o[p + 2]) * st * 0.5;
      const hh = Math.exp(o[p + 3]) * st * 0.5;
      const q = n * 4;
      xyxy[q] = cx - hw;
      xyxy[q + 1] = cy - hh;
      xyxy[q + 2] = cx + hw;
      xyxy[q + 3] = cy + hh;
      score[n] = s;
      classId[n] = best;
      n++;
    }
    return n;
  }
}
