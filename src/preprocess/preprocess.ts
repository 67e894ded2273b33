import { map, type OperatorFunction } from 'rxjs';
import { now } from '../core/clock.js';
import type { Frame } from '../core/frame.js';
import type { Pool } from '../core/pool.js';
import { normalizeHwcToChw, type NormalizeOptions } from './normalize.js';

/** The model's input for one frame: CHW floats (in shared memory when a worker runs the model). */
export interface InputTensor {
  data: Float32Array;
}

/** A frame with its own input tensor, between pre-processing and inference. */
export interface TensorFrame {
  frame: Frame;
  /** Taken from the pool by `preprocess`; `infer` gives it back when the run has settled. */
  tensor: InputTensor;
}

export interface PreprocessOptions {
  /** Model input width and height (the frame's letterboxed size). */
  width: number;
  height: number;
  normalize: NormalizeOptions;
}

/**
 * HWC bytes → the model's NCHW float tensor, written into a tensor of the frame's own taken
 * from `tensors`, so frames in flight never share one and any number may be in flight.
 */
export function preprocess(options: PreprocessOptions, tensors: Pool<InputTensor>): OperatorFunction<Frame, TensorFrame> {
  const { width, height, normalize } = options;
  return map((frame) => {
    const tensor = tensors.acquire();
    normalizeHwcToChw(frame.data, width, height, tensor.data, normalize);
    frame.stamps.preprocessed = now();
    return { frame, tensor };
  });
}
