import type { Detections } from '../core/detections.js';
import type { Frame, Stamps } from '../core/frame.js';
import type { AlertBody, AnalyticsSummary } from '../analytics/analyzer.js';
import type { Transition } from '../sources/health.js';

/**
 * The one message envelope every sink publishes (JSONL, Kafka, WebSocket), version 1.
 * JSON Schema: src/sinks/message.schema.json. README, "Message schema", documents each field.
 */
export const MESSAGE_VERSION = 1;

export type MessageKind = 'detections' | 'alert' | 'status';

export interface DetectionJson {
  label: string;
  classId: number;
  score: number;
  /** [x1, y1, x2, y2] in source pixels. */
  box: [number, number, number, number];
  /** Track id once tracking runs (absent otherwise). */
  trackId?: number;
}

export interface PublishedStamps extends Stamps {
  /** The message was serialised and handed to the sinks. */
  published: number;
}

interface Envelope {
  type: MessageKind;
  version: typeof MESSAGE_VERSION;
  source: string;
  seq: number;
  pts: number;
  /** Capture wall-clock time, ISO 8601 UTC. */
  capturedAt: string;
  stamps: PublishedStamps;
  frame: { width: number; height: number };
  model: { name: string; version: string };
  /** Frames this source dropped so far because inference was busy. */
  dropped: number;
}

export interface DetectionsMessage extends Envelope {
  type: 'detections';
  detections: DetectionJson[];
  /** Zone occupancy, line counts and conveyor rates (sources with zones, lines or rules). */
  analytics?: AnalyticsSummary;
}

export interface AlertMessage extends Envelope {
  type: 'alert';
  alert: AlertBody;
  detections: DetectionJson[];
}

/** A source's state change (see `sources/health.ts`), as published. */
export interface StatusMessage extends Transition {
  type: 'status';
  version: typeof MESSAGE_VERSION;
  /** When it was handed to the sinks, epoch ms. */
  published: number;
  /** Status messages carry no frame stamps. */
  stamps?: undefined;
}

export type Message = DetectionsMessage | AlertMessage | StatusMessage;

export function statusMessage(t: Transition): StatusMessage {
  const m: StatusMessage = { type: 'status', version: MESSAGE_VERSION, source: t.source, state: t.state, previous: t.previous, reason: t.reason, at: t.at, attempt: t.attempt, published: 0 };
  if (t.code) m.code = t.code;
  if (t.detail) m.detail = t.detail;
  return m;
}

export interface ModelInfo {
  name: string;
  version: string;
}

const round2 = (v: number) => Math.round(v * 100) / 100;
const round4 = (v: number) => Math.round(v * 10000) / 10000;

export function detectionsJson(d: Detections, labels: readonly string[]): DetectionJson[] {
  const out = new Array<DetectionJson>(d.length);
  const tid = d.trackerId;
  for (let i = 0; i < d.length; i++) {
    const o = i * 4;
    const det: DetectionJson = {
      label: labels[d.classId[i]] ?? String(d.classId[i]),
      classId: d.classId[i],
      score: round4(d.confidence[i]),
      box: [round2(d.xyxy[o]), round2(d.xyxy[o + 1]), round2(d.xyxy[o + 2]), round2(d.xyxy[o + 3])],
    };
    if (tid && tid[i] >= 0) det.trackId = tid[i];
    out[i] = det;
  }
  return out;
}

function envelope<T extends MessageKind>(type: T, frame: Frame, dropped: number, model: ModelInfo) {
  return {
    type,
    version: MESSAGE_VERSION,
    source: frame.source,
    seq: frame.seq,
    pts: round4(frame.pts),
    capturedAt: new Date(frame.stamps.captured).toISOString(),
    stamps: { ...frame.stamps, published: 0 },
    frame: { width: frame.letterbox.srcWidth, height: frame.letterbox.srcHeight },
    model,
    dropped,
  } as const;
}

export function detectionsMessage(
  frame: Frame,
  detections: Detections,
  dropped: number,
  model: ModelInfo,
  labels: readonly string[],
  analytics?: AnalyticsSummary,
): DetectionsMessage {
  const m: DetectionsMessage = { ...envelope('detections', frame, dropped, model), detections: detectionsJson(detections, labels) };
  if (analytics) m.analytics = analytics;
  return m;
}

export function alertMessage(frame: Frame, detections: Detections, dropped: number, model: ModelInfo, labels: readonly string[], alert: AlertBody): AlertMessage {
  return { ...envelope('alert', frame, dropped, model), alert, detections: detectionsJson(detections, labels) };
}
