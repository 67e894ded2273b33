import { concatMap, from, map, type OperatorFunction } from 'rxjs';
import { now } from '../core/clock.js';
import type { Frame } from '../core/frame.js';
import type { Pool } from '../core/pool.js';
import type { InputTensor, TensorFrame } from '../preprocess/preprocess.js';
import type { InferOutput } from './detector.js';

/** A frame with the model's raw outputs, between inference and post-processing. */
export interface InferredFrame {
  frame: Frame;
  output: InferOutput;
}

/** What `infer` needs of a model: `Detector` is one; tests use one over a fake session. */
export interface Runner {
  /** Runs the model on `input`; `onStart` when ONNX Runtime really starts (after any wait). */
  run(input: InputTensor, onStart?: () => void, bulk?: boolean): Promise<InferOutput>;
}

/**
 * Runs the model on each frame's tensor; stamps when the run really starts (after any wait for
 * the session or a batch) and ends. The tensor goes back to `tensors` once the run has settled
 * (never while ONNX Runtime may still read it, even when the subscriber has left). `bulk`: the
 * frames of a file read as fast as possible, which wait behind other sources' for the session.
 */
export function infer(model: Runner, tensors: Pool<InputTensor>, bulk = false): OperatorFunction<TensorFrame, InferredFrame> {
  return concatMap(({ frame, tensor }) =>
    from(
      model
        .run(
          tensor,
          () => {
            frame.stamps.inferStart = now();
          },
          bulk,
        )
        .finally(() => tensors.release(tensor)),
    ).pipe(
      map((output) => {
        frame.stamps.inferEnd = now();
        return { frame, output };
      }),
    ),
  );
}
