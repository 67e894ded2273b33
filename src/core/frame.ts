import type { Letterbox } from './geometry.js';

/**
 * Latency stamps, epoch milliseconds with sub-millisecond precision. A stage that has not
 * happened yet is 0. Any consumer can derive each stage's duration and end-to-end latency.
 */
export interface Stamps {
  /** The frame's last byte arrived from ffmpeg. */
  captured: number;
  /** The frame was converted into the model's input tensor. */
  preprocessed: number;
  /** ONNX Runtime started the run (after any wait for the shared session). */
  inferStart: number;
  /** ONNX Runtime returned. */
  inferEnd: number;
  /** Decoding, NMS and mapping to source pixels finished. */
  postprocessed: number;
  /** The frame's result was handed to the sinks. */
  emitted: number;
}

export function emptyStamps(captured: number): Stamps {
  return { captured, preprocessed: 0, inferStart: 0, inferEnd: 0, postprocessed: 0, emitted: 0 };
}

/** A decoded, letterboxed frame as ffmpeg delivered it. */
export interface Frame {
  /** Source id from the pipeline config. */
  readonly source: string;
  /** 0-based sequence number of frames read from this source (dropped ones included). */
  readonly seq: number;
  /** Presentation time in seconds since the source started (seq / frame rate). */
  readonly pts: number;
  /** Packed HWC pixels at the model's input size, channel order as the model wants. */
  readonly data: Buffer;
  /** How the source picture was fitted into `data`; maps boxes back to source pixels. */
  readonly letterbox: Letterbox;
  readonly stamps: Stamps;
  /** Hands the pixel buffer back to the reader's pool. Call once, when nothing reads `data` any more. */
  release(): void;
}
