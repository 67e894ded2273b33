import { map, type OperatorFunction } from 'rxjs';
import { now } from '../core/clock.js';
import type { Frame } from '../core/frame.js';
import type { Letterbox } from '../core/geometry.js';
import type { Pool } from '../core/pool.js';
import { letterboxTensor, letterboxYuvTensor } from './letterbox.js';
import { yuvTables } from './yuv.js';
import { normalizeHwcToChw, type NormalizeOptions } from './normalize.js';

/** The model's input for one frame: CHW floats (in shared memory when a worker runs the model). */
export interface InputTensor {
  data: Float32Array;
  /** The letterbox whose padding `data` holds, as `preprocess` wrote it (the same geometry next time: not written again). */
  padded?: Letterbox;
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
  /** The model's channel order (frames arrive in it). */
  channelOrder: 'rgb' | 'bgr';
  /** Pad grey level (frames at the source's size are letterboxed here). */
  padValue: number;
}

/**
 * HWC bytes → the model's NCHW float tensor, written into a tensor of the frame's own taken
 * from `tensors`, so frames in flight never share one and any number may be in flight. A
 * frame at the source's size is letterboxed on the way (the model's exact resize,
 * preprocess/letterbox.ts), a yuv420p one converted as ffmpeg would on the way; one ffmpeg
 * letterboxed is only normalised.
 */
export function preprocess(options: PreprocessOptions, tensors: Pool<InputTensor>): OperatorFunction<Frame, TensorFrame> {
  const { width, height, normalize } = options;
  const lbOptions = { modelOrder: options.channelOrder, normalize, padValue: options.padValue };
  const lbPadded = { ...lbOptions, padFilled: true };
  return map((frame) => {
    const tensor = tensors.acquire();
    const lb = frame.letterbox;
    // The tensors are this operator's own: a tensor letterboxed before with the same geometry
    // still holds its padding (the letterbox writes only the picture's area).
    const o = samePadding(tensor.padded, lb) ? lbPadded : lbOptions;
    if (frame.layout === 'source') letterboxTensor(frame.data, lb.srcWidth, lb.srcHeight, options.channelOrder, lb, tensor.data, o);
    else if (frame.layout === 'yuv420p') letterboxYuvTensor(frame.data, lb.srcWidth, lb.srcHeight, yuvTables(frame.colour), lb, tensor.data, o);
    else normalizeHwcToChw(frame.data, width, height, tensor.data, normalize);
    tensor.padded = frame.layout === 'source' || frame.layout === 'yuv420p' ? lb : undefined;
    frame.stamps.preprocessed = now();
    return { frame, tensor };
  });
}

/** Whether a tensor padded for `a` has the padding of `b`: the same model size, picture area and offsets. */
function samePadding(a: Letterbox | undefined, b: Letterbox): boolean {
  return a !== undefined && (a === b || (a.dstWidth === b.dstWidth && a.dstHeight === b.dstHeight && a.scaledWidth === b.scaledWidth && a.scaledHeight === b.scaledHeight && a.padX === b.padX && a.padY === b.padY));
}
