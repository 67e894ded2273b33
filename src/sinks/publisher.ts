import { now } from '../core/clock.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import type { AnalyticsSummary } from '../analytics/analyzer.js';
import type { Transition } from '../sources/health.js';
import { alertMessage, detectionsMessage, statusMessage, type AlertBody, type AlertMessage, type DetectionsMessage, type ModelInfo, type StatusMessage } from './message.js';
import type { Sink } from './sink.js';

/**
 * Builds each message once, stamps `published`, serialises it once and hands the same JSON to
 * every sink.
 */
export class Publisher {
  constructor(
    readonly sinks: readonly Sink[],
    private readonly model: ModelInfo,
    private readonly labels: readonly string[],
  ) {}

  detections(frame: Frame, detections: Detections, dropped: number, analytics?: AnalyticsSummary): DetectionsMessage {
    const msg = detectionsMessage(frame, detections, dropped, this.model, this.labels, analytics);
    this.fanOut(msg);
    return msg;
  }

  alert(frame: Frame, detections: Detections, dropped: number, body: AlertBody): AlertMessage {
    const msg = alertMessage(frame, detections, dropped, this.model, this.labels, body);
    this.fanOut(msg);
    return msg;
  }

  status(t: Transition): StatusMessage {
    const msg = statusMessage(t);
    msg.published = now();
    const json = JSON.stringify(msg);
    for (const s of this.sinks) s.publish('status', msg.source, json, msg);
    return msg;
  }

  private fanOut(msg: DetectionsMessage | AlertMessage): void {
    msg.stamps.published = now();
    const json = JSON.stringify(msg);
    for (const s of this.sinks) s.publish(msg.type, msg.source, json, msg);
  }

  /** Closes sinks in reverse order of creation. */
  async close(): Promise<void> {
    for (const s of [...this.sinks].reverse()) await s.close();
  }
}
