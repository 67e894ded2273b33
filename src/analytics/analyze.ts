import { defer, map, tap, type OperatorFunction } from 'rxjs';
import type { Letterbox } from '../core/geometry.js';
import type { DetectedFrame } from '../postprocess/postprocess.js';
import type { AlertDraft, AnalyticsSummary, SourceAnalyzer } from './analyzer.js';

/** What the pipeline emits for every processed frame. */
export interface FrameResult extends DetectedFrame {
  /** Frames this source has dropped so far (set as the result leaves the pipeline). */
  dropped: number;
  /** Zone occupancy, line counts, rates (sources with zones, lines or rules). */
  analytics?: AnalyticsSummary;
  /** Alerts this frame raised (after cooldown and de-duplication). An operator may add its own. */
  alerts: AlertDraft[];
  /** The source's analyzer (zones and lines in pixels, for drawing). */
  analyzer?: SourceAnalyzer;
  /**
   * Only its alerts are published: an argus worker's camera whose claim stopped holding (a fence)
   * while this frame, admitted under it, was in flight. Its alerts are real (raised under that
   * claim, with its epoch); its detections and the frame are not published (another worker may
   * hold the camera by now).
   */
  alertsOnly?: boolean;
}

/**
 * Runs a source's zones, lines and rules on each frame's tracked detections: figures for the
 * message and alerts to raise. Zones and lines are placed in pixels on the first frame and
 * again when the source's resolution changes. Time base: the frame's presentation time.
 * Without an analyzer, results carry no analytics and no alerts. At the end of the stream (a
 * file's end, the run stopping, the source failing or detached) the analyzer settles what its lines had
 * pending (SourceAnalyzer.finish), into its figures.
 */
export function analyze(analyzer: SourceAnalyzer | undefined): OperatorFunction<DetectedFrame, FrameResult> {
  // A list of its own per result, as the analyzer's: an operator after this one may push its
  // alerts onto it (one shared empty list carried such an alert on every later result).
  if (!analyzer) return map(({ frame, detections }) => ({ frame, detections, dropped: 0, alerts: [] }));
  return (source) =>
    defer(() => {
      let placedFor: Letterbox | undefined;
      const end = () => {
        if (placedFor) analyzer.finish();
        placedFor = undefined;
      };
      return source.pipe(
        map(({ frame, detections }): FrameResult => {
          const lb = frame.letterbox;
          if (placedFor !== lb) {
            if (!placedFor || placedFor.srcWidth !== lb.srcWidth || placedFor.srcHeight !== lb.srcHeight) analyzer.init(lb.srcWidth, lb.srcHeight);
            placedFor = lb;
          }
          const { summary, alerts } = analyzer.process(detections, frame.pts * 1000);
          return { frame, detections, dropped: 0, analytics: summary, alerts, analyzer };
        }),
        // Before the chain's own end (the pipeline's finalize reads the analyzer's report then).
        tap({
          complete: end,
          unsubscribe: end,
          // The stream's own error is the one reported (isolate), not one the settling may meet after it.
          error: () => {
            try {
              end();
            } catch {
              placedFor = undefined;
            }
          },
        }),
      );
    });
}
