import type { Letterbox } from './geometry.js';

/**
 * Latency stamps, epoch milliseconds with sub-millisecond precision. A stage that has not
 * happened yet is 0. Any consumer can derive each stage's duration and end-to-end latency.
 */
export interface Stamps {
  /**
   * When the frame was produced at the source, before any decoding: what `producedBy` says.
   * End-to-end latency (`e2eMs`) counts from here.
   */
  produced: number;
  /** The frame's last byte arrived from ffmpeg (decoded and letterboxed); a native-rate file's frame read ahead: its release when due. */
  captured: number;
  /**
   * The frame entered the detection stage: until then it waited while its source's previous
   * frame was in the stage (0 in messages of argus before this stamp: read as `captured`).
   */
  staged: number;
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

/**
 * What a frame's `produced` stamp is:
 * - `camera`: an RTSP camera over TCP that sends RTCP sender reports: the camera's own time for
 *   the frame's RTP timestamp (NTP-mapped, as DeepStream's NTP sync), when it is believable
 *   (not after the frame's arrival, nor more than 10 s before it; sources/rtsp-tap.ts);
 * - `due`: a file played at its native rate: when a camera would have produced it, the start
 *   of playback (ffmpeg's report of the opened input) plus the frame's presentation time;
 * - `arrival`: a live source (RTSP, HTTP, V4L2): when ffmpeg's demuxer received the frame's
 *   data, before decoding (ffmpeg's wall clock, `-use_wallclock_as_timestamps`; for RTSP over
 *   TCP, when the first packet of the frame reached argus's relay);
 * - `captured`: nothing earlier is known (files read as fast as possible, or an ffmpeg that
 *   does not report frame times): the same as `captured`.
 */
export const PRODUCED_BY = ['camera', 'due', 'arrival', 'captured'] as const;
export type ProducedBy = (typeof PRODUCED_BY)[number];

/** The stages between two stamps, in order: what each one measures is in `stageMs`. */
export const STAGES = ['source', 'wait', 'preprocess', 'queue', 'infer', 'postprocess', 'emit'] as const;
export type Stage = (typeof STAGES)[number];

/**
 * Milliseconds a frame spent in `stage`: source = produced → captured (transport, demuxer
 * buffering, decoding, scaling: what happens before argus has the pixels), wait = captured →
 * staged (waiting for the source's previous frame to leave the detection stage), preprocess =
 * staged → preprocessed, queue = preprocessed → inferStart (waiting for the session or a
 * batch, behind other sources' frames), infer = inferStart → inferEnd, postprocess = inferEnd →
 * postprocessed, emit = postprocessed → emitted (tracking, rules, operators added by the user).
 */
export function stageMs(s: Stamps, stage: Stage): number {
  switch (stage) {
    case 'source':
      return s.captured - s.produced;
    case 'wait':
      return (s.staged || s.captured) - s.captured;
    case 'preprocess':
      return s.preprocessed - (s.staged || s.captured);
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

/** End-to-end latency: milliseconds from the frame's production at the source to its result reaching the sinks. */
export function e2eMs(s: Stamps): number {
  return s.emitted - s.produced;
}

/** The pipeline's part of it: milliseconds from ffmpeg's delivery of the frame to its result reaching the sinks. */
export function pipelineMs(s: Stamps): number {
  return s.emitted - s.captured;
}

/** Stamps of a frame just delivered; `produced` defaults to `captured` (nothing earlier known). */
export function emptyStamps(captured: number, produced = captured): Stamps {
  return { produced, captured, staged: 0, preprocessed: 0, inferStart: 0, inferEnd: 0, postprocessed: 0, emitted: 0 };
}

/**
 * What a frame's pixels are: at the source's size, packed 8-bit in the model's channel order
 * (`source`) or 4:2:0 YUV as ffmpeg decoded them (`yuv420p`: the Y plane, then U and V at half
 * size, rounded up; `colour` says how they convert), both letterboxed by argus; or already
 * letterboxed by ffmpeg (`letterboxed`).
 */
export type FrameLayout = 'source' | 'yuv420p' | 'letterboxed';

/** The matrix ffmpeg converts YUV with for a frame's colour space; anything it does not name is BT.601. */
export type YuvMatrix = 'bt601' | 'bt709' | 'fcc' | 'smpte240m' | 'bt2020';

/** How a `yuv420p` frame's values map to RGB. */
export interface YuvColour {
  matrix: YuvMatrix;
  /** Full-range ("pc", JPEG) values; else limited ("tv", the default). */
  fullRange: boolean;
}

/** A decoded frame as ffmpeg delivered it. */
export interface Frame {
  /** Source id from the pipeline config. */
  readonly source: string;
  /** 0-based sequence number of frames read from this source (dropped ones included). */
  readonly seq: number;
  /** Presentation time in seconds since the source started (seq / frame rate). */
  readonly pts: number;
  /**
   * Packed HWC pixels, channel order as the model wants: the source's own size
   * (`letterbox.srcWidth × srcHeight`) when `layout` is `source`, the model's input size
   * (letterboxed by ffmpeg) when it is `letterboxed`; planar 4:2:0 YUV at the source's size
   * when it is `yuv420p`.
   */
  readonly data: Buffer;
  /** What `data` holds (see there). Absent: `letterboxed`. */
  readonly layout?: FrameLayout;
  /** A `yuv420p` frame's colour (from ffmpeg's output stream line). */
  readonly colour?: YuvColour;
  /** How the source picture is fitted into the model's input; maps boxes back to source pixels. */
  readonly letterbox: Letterbox;
  readonly stamps: Stamps;
  /** What `stamps.produced` is (see `ProducedBy`). A live source may refine it right after delivery. */
  producedBy: ProducedBy;
  /**
   * Hands the pixel buffer back to the reader's pool for reuse; the pipeline calls it once the
   * sinks have had the frame (and when it drops one). Optional: a frame that is never
   * released (an operator filtered it out or kept it) is left to the garbage collector;
   * nothing waits for it. Do not read `data` after releasing; copy it to keep it longer.
   */
  release(): void;
}
