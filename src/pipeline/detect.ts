import { catchError, defer, EMPTY, of, type OperatorFunction, pipe, tap } from 'rxjs';
import { now } from '../core/clock.js';
import type { Frame } from '../core/frame.js';
import type { LogFn } from '../core/log.js';
import { Pool } from '../core/pool.js';
import { redact } from '../core/redact.js';
import { dropStale } from '../flow/drop-stale.js';
import type { Pace } from '../flow/pace.js';
import type { Detector } from '../inference/detector.js';
import { infer } from '../inference/infer.js';
import { postprocess, type DetectedFrame, type PostprocessOptions } from '../postprocess/postprocess.js';
import { preprocess, type InputTensor, type PreprocessOptions } from '../preprocess/preprocess.js';
import { YUV_KERNEL } from '../preprocess/letterbox.js';
import type { FfmpegOutputSpec } from '../sources/ffmpeg-args.js';
import type { SourceStats } from '../sources/stats.js';

/**
 * What ffmpeg delivers for this model: the source's own frames, which argus letterboxes exactly
 * as the model's reference does (`resize: exact` and a model served with OpenCV's
 * INTER_LINEAR), or frames ffmpeg scaled and padded to the model's input (`resize: fast`, or a
 * model served with swscale's bilinear).
 */
export function ffmpegOutputFor(detector: Detector, resize: 'exact' | 'fast'): FfmpegOutputSpec {
  const exact = resize === 'exact' && detector.manifest.preprocess.resize === 'cv2-linear';
  return {
    width: detector.inputWidth,
    height: detector.inputHeight,
    pixelFormat: detector.pixelFormat,
    align: detector.align,
    padValue: detector.padValue,
    rounding: detector.rounding,
    // 4:2:0 YUV where the C kernel converts it (half the bytes, no conversion in ffmpeg).
    frame: exact ? (YUV_KERNEL ? 'source-yuv' : 'source') : 'letterbox',
  };
}

/** The pre-processing recipe of the detector's model. */
export function preprocessOptionsFor(detector: Detector): PreprocessOptions {
  return { width: detector.inputWidth, height: detector.inputHeight, normalize: detector.normalize, channelOrder: detector.manifest.preprocess.channelOrder, padValue: detector.padValue };
}

export interface DetectOptions {
  postprocess: PostprocessOptions;
  /** The source's counters: `dropped` and `inferenceErrors` are kept here. */
  stats: SourceStats;
  /**
   * Marked busy while a frame is in this stage (files at `rate: fast` read their next frame when
   * it has room). Its capacity is how many of this source's frames the stage holds at once, on
   * as many inference workers (files at `rate: fast`: `stageCapacity`), results in frame order;
   * it may change while the source runs (`Pace.resize`). Without a pace: one.
   */
  pace?: Pace;
  /** A file read as fast as possible: its frames wait behind other sources' for the session (they lose nothing by waiting). */
  bulk?: boolean;
  /** Consecutive frames whose inference failed before the source is failed with the error. Default 30. */
  maxFailuresInARow?: number;
  log?: LogFn;
}

/**
 * Pre-processing, inference and post-processing of one source's frames, one frame at a time
 * (or the pace's capacity at once, delivered in order): while the stage is full only the newest
 * arriving frame waits, older ones are dropped and counted (`dropStale`), so latency cannot
 * grow whatever the source's rate. Each frame
 * takes its own input tensor, so frames never share one. A frame whose inference fails (a
 * worker died mid-run, a transient provider error) is dropped and counted and the source goes
 * on; `maxFailuresInARow` failures in a row fail the source with the error.
 */
export function detect(detector: Detector, o: DetectOptions): OperatorFunction<Frame, DetectedFrame> {
  const st = o.stats;
  const log = o.log ?? (() => {});
  const maxFailures = o.maxFailuresInARow ?? 30;
  return (frames) =>
    defer(() => {
      // One tensor per frame in inference and one for the next pre-processed (a fast file may
      // hold one frame per session and one more); more are made if needed.
      const tensors = new Pool<InputTensor>(() => detector.createInput(), o.bulk ? Math.max(1, detector.session.slots) + 2 : 2);
      const stage = pipe(
        preprocess(preprocessOptionsFor(detector), tensors),
        infer(detector, tensors, o.bulk),
        postprocess(detector.decoder, detector.labels.length, o.postprocess),
      );
      let failedInARow = 0;
      const one = (frame: Frame) => {
        frame.stamps.staged = now();
        return of(frame).pipe(
          stage,
          tap(() => (failedInARow = 0)),
          catchError((err: Error) => {
            st.inferenceErrors++;
            // The failure that fails the source is an inference error too: dropStale's teardown
            // counts the frame dropped and releases it (it was counted `stale` on /metrics).
            if (++failedInARow >= maxFailures) throw err;
            st.dropped++;
            st.superseded.add(frame.seq, frame.stamps.produced);
            frame.release();
            if (failedInARow === 1) log(redact(`source ${st.id}: inference failed, frame dropped: ${err.message}`), { source: st.id }, 'warn');
            return EMPTY;
          }),
        );
      };
      return frames.pipe(
        dropStale(one, {
          concurrency: o.pace?.capacity$ ?? 1,
          onEnter: () => o.pace?.enter(),
          onLeave: () => o.pace?.leave(),
          onDrop: (frame) => {
            st.dropped++;
            st.superseded.add(frame.seq, frame.stamps.produced);
            frame.release();
          },
        }),
      );
    });
}
