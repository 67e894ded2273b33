import { map, type OperatorFunction } from 'rxjs';
import { now } from '../core/clock.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import { unletterboxXyxy } from '../core/geometry.js';
import type { InferredFrame } from '../inference/infer.js';
import { Candidates, type ModelDecoder } from '../models/decoder.js';
import { selectDetections, type SelectOptions } from './select.js';

/** A frame with its detections in source pixels. */
export interface DetectedFrame {
  frame: Frame;
  detections: Detections;
}

export interface PostprocessOptions extends SelectOptions {
  /** Candidates scoring below this are not decoded. */
  scoreThreshold: number;
}

/**
 * Decodes the model's outputs, keeps the best boxes (top-k, NMS) and maps them to source
 * pixels. The candidate scratch is reused across frames: the map runs synchronously and
 * `selectDetections` copies what it keeps.
 */
export function postprocess(decoder: ModelDecoder, numClasses: number, options: PostprocessOptions): OperatorFunction<InferredFrame, DetectedFrame> {
  const candidates = new Candidates(decoder.maxCandidates);
  // Graphs that already ran NMS: keep their boxes (IoU never exceeds 1, so nothing is suppressed).
  const select = { ...options, iouThreshold: decoder.nmsInGraph ? 1 : options.iouThreshold, numClasses };
  return map(({ frame, output }) => {
    const n = decoder.decode(output.outputs, output.batchIndex, options.scoreThreshold, candidates);
    const detections = selectDetections(candidates, n, select);
    unletterboxXyxy(detections.xyxy, detections.length, frame.letterbox);
    frame.stamps.postprocessed = now();
    return { frame, detections };
  });
}
