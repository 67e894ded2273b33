import type { Family } from '../core/families.js';

/**
 * A decoder turns a model's raw output into candidate boxes (model-input pixels, xyxy) with
 * one score and class each, keeping only those at or above the score threshold. Thresholds,
 * top-k and NMS are applied afterwards by `postprocess/select.ts`, the same for every family.
 */
export interface Decoder {
  /** Family name, as written in manifests (`yolox`, …). */
  readonly family: string;
  /** Number of classes the output carries. */
  readonly numClasses: number;
  /** Upper bound on candidates one output can produce. */
  readonly maxCandidates: number;
  /** Fills `out` and returns the number of candidates written. */
  decode(output: Float32Array, scoreThreshold: number, out: Candidates): number;
}

/** Reusable scratch space for candidates, sized once per decoder. */
export class Candidates {
  readonly xyxy: Float32Array;
  readonly score: Float32Array;
  readonly classId: Int32Array;
  constructor(readonly capacity: number) {
    this.xyxy = new Float32Array(capacity * 4);
    this.score = new Float32Array(capacity);
    this.classId = new Int32Array(capacity);
  }
}

/** What a decoder was built for, for error messages. */
export interface TensorShapes {
  input: readonly (number | string)[];
  output: readonly (number | string)[];
}

/**
 * An output's data as a decoder reads it: float outputs as numbers (fp16 widened first, see
 * `fp16.js`); integer outputs (num_dets, classes) may stay `BigInt64Array`s.
 */
export type OutputData = ArrayLike<number> | ArrayLike<bigint>;

export interface ModelDecoder {
  readonly family: Family;
  /** Classes the output carries; 0 when the graph does not say (end-to-end exports without labels). */
  readonly numClasses: number;
  /** Upper bound on candidates per image: size `Candidates` with it. */
  readonly maxCandidates: number;
  /** Output names it reads, in the order decode() receives them. */
  readonly outputNames: readonly string[];
  /** True when boxes are already NMS-ed by the graph (end-to-end exports). */
  readonly nmsInGraph: boolean;
  /**
   * Decodes image `batchIndex` of a batched output into `out` (xyxy in model-input pixels,
   * score, class); returns the count at or above `scoreThreshold`. Allocation-free.
   */
  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number;
}
