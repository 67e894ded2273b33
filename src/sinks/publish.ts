import { tap, type MonoTypeOperatorFunction } from 'rxjs';
import type { FrameResult } from '../analytics/analyze.js';
import type { AlertPublisher } from './alerts.js';
import type { Publisher } from './publisher.js';

/** Where results go: every configured sink through the publisher, plus optional side consumers. */
export interface PublishTargets {
  /** Detections messages to every sink (Kafka, WebSocket, JSONL). */
  publisher: Publisher;
  /** Alerts: id, snapshot, journal, then every sink. */
  alerts: AlertPublisher;
  /** Side consumers called with each result after the sinks, in order (metrics, live frames, user callbacks). */
  side?: readonly ((r: FrameResult) => void)[];
}

/**
 * The chain's last operator: hands each result to the sinks, then returns the frame's pixel
 * buffer to its pool (snapshots and live frames have copied what they need by then). Results
 * pass on unchanged for whoever subscribes.
 */
export function publish(targets: PublishTargets): MonoTypeOperatorFunction<FrameResult> {
  const { publisher, alerts } = targets;
  const side = targets.side ?? [];
  return tap((r) => {
    if (!r.alertsOnly) publisher.detections(r.frame, r.detections, r.dropped, r.analytics);
    if (r.alerts.length > 0) alerts.raise(r);
    if (!r.alertsOnly) for (const f of side) f(r);
    r.frame.release();
  });
}
