import { map, Observable, type OperatorFunction } from 'rxjs';
import { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import type { Letterbox } from '../core/geometry.js';
import type { DetectedFrame } from '../postprocess/postprocess.js';
import type { AlertDraft, AnalyticsSummary, SourceAnalyzer } from './analyzer.js';

/** What the pipeline emits for every processed frame. */
export interface FrameResult extends DetectedFrame {
  /** Frames this source has dropped so far (set as the result leaves the pipeline). */
  dropped: number;
  /**
   * Set as the result leaves the pipeline (stamp), where frames of its source older than this one
   * were dropped since its previous result: each one's latency to this result, ms (from its
   * `produced` stamp to this `emitted`: how long its moment went unseen), for the frames-read latency.
   */
  superseded?: number[];
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
  /**
   * The result of no frame: the alerts the end of the source's stream raised (analyze: lines'
   * crossings it settled), with `alertsOnly`. Its frame stands in for the stream's last (no
   * pixels: its alerts have no snapshot); it is not counted as a frame out.
   */
  streamEnd?: boolean;
}

/**
 * Runs a source's zones, lines and rules on each frame's tracked detections: figures for the
 * message and alerts to raise. Zones and lines are placed in pixels on the first frame and
 * again when the source's resolution changes. Time base: the frame's presentation time.
 * Without an analyzer, results carry no analytics and no alerts. At the end of the stream (a
 * file's end, the run stopping, the source failing) the analyzer settles what its lines had
 * pending (SourceAnalyzer.finish), into its figures, and the alerts that raises go out on one
 * more result (`streamEnd`, alertsOnly: see endResult) before the stream's own end: the user's
 * operators and the sinks get them as any other. Before, they were only logged, never
 * published (a file that ended right after a person crossed lost that crossing's alert). A chain
 * unsubscribed instead (frames still in flight when the stop's drainTimeoutMs ends, `--max-frames`)
 * settles the same, but no result of the chain can carry its alerts: the same result is given to
 * `handOver` (a run's: straight to its AlertPublisher, the sinks and outbox still open), and only
 * where there is none, or it says it could not take it (false: the alert path closed), are they
 * counted lost and logged (SourceAnalyzer.finish's and uncarry's warn). Before, they were always
 * counted lost (exit status 3), the sinks open all the while.
 */
export function analyze(analyzer: SourceAnalyzer | undefined, handOver?: HandOver): OperatorFunction<DetectedFrame, FrameResult> {
  // A list of its own per result, as the analyzer's: an operator after this one may push its
  // alerts onto it (one shared empty list carried such an alert on every later result).
  if (!analyzer) return map(({ frame, detections }) => ({ frame, detections, dropped: 0, alerts: [] }));
  return (source) =>
    new Observable<FrameResult>((out) => {
      let placedFor: Letterbox | undefined;
      /** The last frame analysed: the end's result is dated and numbered as it. */
      let last: Frame | undefined;
      /** Settles the lines once; the result that carries their alerts, if they raised any (`carried`: it will be emitted). */
      const end = (carried: boolean): FrameResult | undefined => {
        if (!placedFor) return undefined;
        placedFor = undefined;
        const settled = analyzer.finish(carried);
        return settled && settled.alerts.length > 0 && last ? endResult(last, settled.alerts, settled.summary, analyzer) : undefined;
      };
      const inner = source
        .pipe(
          map(({ frame, detections }): FrameResult => {
            const lb = frame.letterbox;
            if (placedFor !== lb) {
              if (!placedFor || placedFor.srcWidth !== lb.srcWidth || placedFor.srcHeight !== lb.srcHeight) analyzer.init(lb.srcWidth, lb.srcHeight);
              placedFor = lb;
            }
            last = frame;
            const { summary, alerts } = analyzer.process(detections, frame.pts * 1000);
            return { frame, detections, dropped: 0, analytics: summary, alerts, analyzer };
          }),
        )
        .subscribe({
          next: (r) => out.next(r),
          // Before the chain's own end (the pipeline's finalize reads the analyzer's report then).
          complete: () => {
            let r: FrameResult | undefined;
            try {
              r = end(true);
            } catch (e) {
              out.error(e);
              return;
            }
            if (r) out.next(r);
            out.complete();
          },
          // The stream's own error is the one reported (isolate), not one the settling may meet after it;
          // what the settling raised goes out before it.
          error: (e: unknown) => {
            let r: FrameResult | undefined;
            try {
              r = end(true);
            } catch {
              placedFor = undefined;
            }
            if (r) out.next(r);
            out.error(e);
          },
        });
      return () => {
        inner.unsubscribe();
        // Unsubscribed before the end: no later result can carry its alerts; handed over, where
        // someone takes them (else counted lost, logged: finish, uncarry).
        try {
          const r = end(handOver !== undefined);
          // (Without a hand-over, finish(false) has counted them lost and logged them already.)
          if (r && handOver && !handOver(r)) analyzer.uncarry(r.alerts, CLOSED);
        } catch {
          placedFor = undefined;
        }
      };
    });
}

/**
 * Takes the result of a stream's end that its chain was cut off before emitting (analyze, and
 * the user's operators that held it: pipeline.ts `extended`) to the alert path directly; false
 * where it cannot (that path closed): its alerts are then counted lost (SourceAnalyzer.uncarry).
 */
export type HandOver = (r: FrameResult) => boolean;

/** Why an end's alert handed over was counted lost after all (SourceAnalyzer.uncarry). */
export const CLOSED = 'the chain was cut off before the result of the end of the stream that carried it reached the sinks, and the alert path was already closed (the run had stopped its outputs)';

/** No rows (the end's result shows no frame). */
const NO_ROWS = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
const NO_PIXELS = Buffer.alloc(0);
const keep = () => {};

/**
 * The result that carries the alerts the end of a stream raised: alertsOnly (no detections
 * message, no side consumer: no frame was analysed), `streamEnd`, on a stand-in for the stream's
 * last frame (its source, seq, pts and stamps, no pixels: the alerts go out without a snapshot;
 * their ids are told apart from the last frame's own, AlertPublisher).
 */
function endResult(last: Frame, alerts: AlertDraft[], summary: AnalyticsSummary, analyzer: SourceAnalyzer): FrameResult {
  const frame: Frame = { source: last.source, seq: last.seq, pts: last.pts, data: NO_PIXELS, layout: last.layout, colour: last.colour, letterbox: last.letterbox, stamps: { ...last.stamps, emitted: 0 }, producedBy: last.producedBy, release: keep };
  return { frame, detections: NO_ROWS, dropped: 0, analytics: summary, alerts, analyzer, alertsOnly: true, streamEnd: true };
}
