import { concatMap, from, map, type OperatorFunction } from 'rxjs';
import { now } from '../core/clock.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import { unletterboxXyxy } from '../core/geometry.js';
import type { Detector, InferOutput, InputBuffer } from '../inference/detector.js';
import { Candidates } from '../models/decoder.js';
import { selectDetections, type SelectOptions } from '../postprocess/select.js';
import { normalizeHwcToChw } from '../preprocess/normalize.js';

/** A frame with the model's raw outputs, between inference and post-processing. */
export interface InferredFrame {
  frame: Frame;
  output: InferOutput;
}

/** A frame with its detections in source pixels. */
export interface DetectedFrame {
  frame: Frame;
  detections: Detections;
}

/**
 * HWC bytes → the model's NCHW float tensor, written into `input` (one buffer per source:
 * `dropStale` guarantees a single frame in this stage and the next at a time).
 */
export function preprocess(detector: Detector, input: InputBuffer): OperatorFunction<Frame, Frame> {
  const norm = detector.normalize;
  const w = detector.inputWidth;
  const h = detector.inputHeight;
  return map((frame) => {
    normalizeHwcToChw(frame.data, w, h, input.data, norm);
    frame.stamps.preprocessed = now();
    return frame;
  });
}

/** Runs the model on `input`; stamps when the run really starts (after any wait for the session) and ends. */
export function infer(detector: Detector, input: InputBuffer): OperatorFunction<Frame, InferredFrame> {
  return concatMap((frame) =>
    from(
      detector.run(input, () => {
        frame.stamps.inferStart = now();
      }),
    ).pipe(
      map((output) => {
        frame.stamps.inferEnd = now();
        return { frame, output };
      }),
    ),
  );
}

export interface PostprocessOptions extends SelectOptions {
  scoreThreshold: number;
}

/** Decodes, keeps the best boxes (top-k, NMS), maps them to source pixels. */
export function postprocess(detector: Detector, options: PostprocessOptions): OperatorFunction<InferredFrame, DetectedFrame> {
  const candidates = new Candidates(detector.decoder.maxCandidates);
  // Graphs that already ran NMS: keep their boxes (IoU never exceeds 1, so nothing is suppressed).
  const select = { ...options, iouThreshold: detector.decoder.nmsInGraph ? 1 : options.iouThreshold, numClasses: detector.labels.length };
  return map(({ frame, output }) => {
    const n = detector.decoder.decode(output.outputs, output.batchIndex, options.scoreThreshold, candidates);
    const detections = selectDetections(candidates, n, select);
    unletterboxXyxy(detections.xyxy, detections.length, frame.letterbox);
    frame.stamps.postprocessed = now();
    return { frame, detections };
  });
}
