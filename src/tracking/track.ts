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
 * true spacing; a resolution change carries the tracks over to the new size. `frameRateHint` is read when the first frame arrives (the source's rate is
 * known by then) unless the options fix it.
 */
export function track<T extends DetectedFrame>(options: TrackOptions, frameRateHint: () => number | undefined = () => undefined): MonoTypeOperatorFunction<T> {
  const { enabled, ...trackerOptions } = options;
  if (!enabled) return (source) => source;
  return (source) =>
    defer(() => {
      let tracker: ByteTracker | undefined;
      let width = 0;
      let height = 0;
      return source.pipe(
        map((r) => {
          tracker ??= new ByteTracker({ ...trackerOptions, frameRateHint: trackerOptions.frameRateHint ?? frameRateHint() ?? 30 });
          // A source that changes its resolution: the tracks move to the new picture's pixels and keep their ids.
          const { srcWidth, srcHeight } = r.frame.letterbox;
          if (srcWidth !== width || srcHeight !== height) {
            if (width > 0) tracker.rescale(srcWidth / width, srcHeight / height);
            width = srcWidth;
            height = srcHeight;
          }
          return { ...r, detections: tracker.update(r.detections, r.frame.pts * 1000) };
        }),
      );
    });
}
