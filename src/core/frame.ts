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

/** The stages between two stamps, in order: what each one measures is in `stageMs`. */
export const STAGES = ['preprocess', 'queue', 'infer', 'postprocess', 'emit'] as const;
export type Stage = (typeof STAGES)[number];

/**
 * Milliseconds a frame spent in `stage`: preprocess = captured → preprocessed, queue =
 * preprocessed → inferStart (waiting for the session or a batch), infer = inferStart →
 * inferEnd, postprocess = inferEnd → postprocessed, emit = postprocessed → emitted (tracking,
 * rules, operators added by the user).
 */
export function stageMs(s: Stamps, stage: Stage): number {
  switch (stage) {
    case 'preprocess':
      return s.preprocessed - s.captured;
    case 'queue':
      return s.inferStart - s.preprocessed;
    case 'infer':
      return s.inferEnd - s.inferStart;
    case 'postprocess':
      return s.postprocessed - s.inferEnd;
    case 'emit':
      return s.emitted - s.postprocessed;
  }
}

/** Milliseconds from the frame's capture to its result reaching the sinks. */
export function e2eMs(s: Stamps): number {
  return s.emitted - s.captured;
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
  /**
   * Hands the pixel buffer back to the reader's pool for reuse; the pipeline calls it once the
   * sinks have had the frame (and when it drops one). Optional: a frame that is never
   * released (an operator filtered it out or kept it) is left to the garbage collector;
   * nothing waits for it. Do not read `data` after releasing; copy it to keep it longer.
   */
  release(): void;
}
