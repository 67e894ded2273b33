import { defer, map, type MonoTypeOperatorFunction } from 'rxjs';
import type { DetectedFrame } from '../postprocess/postprocess.js';
import { ByteTracker, type ByteTrackerOptions } from './byte-tracker.js';

export interface TrackOptions extends ByteTrackerOptions {
  /** False: detections pass through without track ids. */
  enabled: boolean;
}

/**
 * Gives detections track ids (ByteTrack), one tracker per subscription. Time base: the frame's
 * presentation time, so dropped frames and files played faster than real time keep their
 * true spacing. `frameRateHint` is read when the first frame arrives (the source's rate is
 * known by then) unless the options fix it.
 */
export function track<T extends DetectedFrame>(options: TrackOptions, frameRateHint: () => number | undefined = () => undefined): MonoTypeOperatorFunction<T> {
  const { enabled, ...trackerOptions } = options;
  if (!enabled) return (source) => source;
  return (source) =>
    defer(() => {
      let tracker: ByteTracker | undefined;
      return source.pipe(
        map((r) => {
          tracker ??= new ByteTracker({ ...trackerOptions, frameRateHint: trackerOptions.frameRateHint ?? frameRateHint() ?? 30 });
          return { ...r, detections: tracker.update(r.detections, r.frame.pts * 1000) };
        }),
      );
    });
}
