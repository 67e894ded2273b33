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
    const detections = withArea(selectDetections(candidates, n, select), frame.letterbox);
    frame.stamps.postprocessed = now();
    return { frame, detections };
  });
}

/**
 * Maps the boxes to source pixels, cut to the picture, and drops those left with no area: a
 * box the model put in the letterbox's padding or beyond the picture (cut to a line on its
 * edge), or one of no width or height. Such a row is no object in the picture, but a
 * conveyor-defect rule counted it, and it was published. A new container only when one goes.
 */
function withArea(d: Detections, lb: Frame['letterbox']): Detections {
  unletterboxXyxy(d.xyxy, d.length, lb);
  const b = d.xyxy;
  let keep: boolean[] | undefined;
  for (let i = 0; i < d.length; i++) {
    if (b[i * 4 + 2] > b[i * 4] && b[i * 4 + 3] > b[i * 4 + 1]) continue;
    keep ??= Array.from({ length: d.length }, () => true);
    keep[i] = false;
  }
  return keep ? d.select(keep) : d;
}
