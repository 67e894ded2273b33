/**
 * The pipeline YAML's schema. Each section lives in schema/ (source, analytics, model, postprocess,
 * tracking, sinks, server, alerts); this file composes them into PipelineSchema and re-exports
 * every section's schema and type, so importers name only this file.
 */
import { z } from 'zod';
import { mention } from '../core/redact.js';
import { AlertsSchema, alertJournalBytes, OutboxSchema } from './schema/alerts.js';
import { ClusterSchema } from './schema/cluster.js';
import { filePath } from './schema/common.js';
import { ModelRefSchema } from './schema/model.js';
import { PostprocessSchema } from './schema/postprocess.js';
import { ServerSchema } from './schema/server.js';
import { SinksSchema } from './schema/sinks.js';
import { SourceSchema } from './schema/source.js';
import { TrackingSchema, type TrackingConfig } from './schema/tracking.js';
import type { SourceConfig } from './schema/source.js';
import type { AlertsConfig, OutboxConfig } from './schema/alerts.js';

export { AlertsSchema, alertJournalBytes, OutboxSchema, type AlertsConfig, type OutboxConfig } from './schema/alerts.js';
export { CameraSchema, CamerasFileSchema, ClusterSchema, DEFAULT_MAX_CAMERAS, PlacementSchema, type CameraDefinition, type ClusterConfig, type Placement } from './schema/cluster.js';
export { LineSchema, RuleSchema, ZoneSchema, type LineConfig, type RuleConfig, type ZoneConfig } from './schema/analytics.js';
export { MAX_MODEL_BATCH, MAX_MODEL_SIDE, ModelManifestSchema, ModelRefSchema, type ExecutionProviderName, type ModelManifest, type ModelRefConfig } from './schema/model.js';
export { PostprocessSchema, type PostprocessConfig } from './schema/postprocess.js';
export { ServerSchema } from './schema/server.js';
export { KafkaSinkSchema, SinksSchema, WebSocketSinkSchema, type KafkaSinkConfig } from './schema/sinks.js';
export { SourceSchema, type SourceConfig } from './schema/source.js';
export { TrackingSchema, type TrackingConfig } from './schema/tracking.js';

export const PipelineSchema = z
  .object({
    /** Pipeline name for logs. */
    name: z.string().min(1).default('pipeline'),
    /** ffmpeg executable (e.g. a build with NVDEC; relative: from the YAML's folder; a bare name: on PATH). Default: see sources/ffmpeg-path.ts. */
    ffmpegPath: filePath().optional(),
    /** The cameras and files. Empty only with `cluster` (a worker's cameras come from Kafka). */
    sources: z.array(SourceSchema).default([]),
    model: ModelRefSchema.default({}),
    postprocess: PostprocessSchema.default({}),
    sinks: SinksSchema.default({}),
    /** Multi-object tracking (ByteTrack), per source. */
    tracking: TrackingSchema.default({}),
    /** How alerts are delivered. */
    alerts: AlertsSchema.default({}),
    /** HTTP server for the WebSocket API (and health, metrics, dashboard). Absent: no server. */
    server: ServerSchema.optional(),
    /** Durable alert delivery (see OutboxSchema). */
    outbox: OutboxSchema.default({}),
    /** `argus worker`: cameras from Kafka, spread over workers (README, "Many machines"). */
    cluster: ClusterSchema.optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.sources.length === 0) {
      if (!p.cluster) ctx.addIssue({ code: 'custom', path: ['sources'], message: 'at least one source is needed' });
    } else if (p.cluster) {
      ctx.addIssue({ code: 'custom', path: ['sources'], message: 'a worker (cluster) runs the cameras of the cameras topic (argus cameras apply); leave sources empty' });
    } else if (p.sources.every((s) => !s.enabled)) ctx.addIssue({ code: 'custom', path: ['sources'], message: 'every source is disabled (enabled: false); enable at least one' });
    const seen = new Set<string>();
    p.sources.forEach((s, i) => {
      if (seen.has(s.id)) ctx.addIssue({ code: 'custom', path: ['sources', i, 'id'], message: `duplicate source id${mention(s.id) ? ` ${mention(s.id)}` : ''}` });
      seen.add(s.id);
      const field = untrackedField(s, p.tracking);
      if (field) ctx.addIssue({ code: 'custom', path: ['sources', i, field], message: UNTRACKED });
    });
    checkOutbox(p, ctx);
  });

/**
 * The outbox keeps each alert until Kafka acknowledges it: `enabled: true` without a Kafka sink
 * is refused (nothing would ever take its records out: once full, it dropped the oldest, each
 * logged as lost, exit 3, alerts the JSONL file and the WebSocket clients had all got). And its
 * `maxBytes` must hold one alert at least (alertJournalBytes): a smaller one dropped every such
 * alert the moment it was journaled.
 */
function checkOutbox(p: { outbox: OutboxConfig; sinks: { kafka?: unknown }; alerts: AlertsConfig; postprocess: { maxDetections: number } }, ctx: z.RefinementCtx): void {
  if (p.outbox.enabled === true && p.sinks.kafka === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['outbox', 'enabled'],
      message: 'the outbox keeps alerts until Kafka acknowledges them, and no Kafka sink is configured (sinks.kafka): nothing would ever take them out, and once full it would drop them as lost; configure sinks.kafka, or leave outbox.enabled out (the JSONL file and the WebSocket API get every alert without it). Alerts an earlier run journaled stay in its folder for a run with sinks.kafka',
    });
    return;
  }
  if (!(p.outbox.enabled ?? p.sinks.kafka !== undefined)) return;
  const one = alertJournalBytes(p.alerts.snapshot, p.postprocess.maxDetections);
  if (p.outbox.maxBytes < one) {
    const picture = snapshotPart(p.alerts);
    ctx.addIssue({
      code: 'custom',
      path: ['outbox', 'maxBytes'],
      message: `${p.outbox.maxBytes} cannot hold one alert: with ${picture}up to ${p.postprocess.maxDetections} detections (postprocess.maxDetections), one takes up to ${one} bytes in the journal, and an alert larger than what maxBytes leaves would be dropped undelivered; set outbox.maxBytes to ${one} at least (room for many alerts: a broker outage fills it), or lower alerts.snapshot.maxBytes, or use alerts.snapshot.mode: ref`,
    });
  }
}

/** How an alert's embedded snapshot counts in alertJournalBytes, for the messages that name it ('' when not embedded). */
function snapshotPart(alerts: AlertsConfig): string {
  return alerts.snapshot.mode === 'embed' ? `its snapshot embedded (alerts.snapshot.maxBytes ${alerts.snapshot.maxBytes}, base64) and ` : '';
}

const UNTRACKED = 'zones and lines count tracked objects, and tracking.enabled is false: they would count nothing; enable tracking (conveyor-defect rules alone work without it)';

/** With tracking off, the first field of a source that would count nothing (`zones` or `lines`), or undefined. */
export function untrackedField(s: Pick<SourceConfig, 'zones' | 'lines'>, tracking: Pick<TrackingConfig, 'enabled'>): 'zones' | 'lines' | undefined {
  if (tracking.enabled) return undefined;
  return s.zones.length ? 'zones' : s.lines.length ? 'lines' : undefined;
}

/** The refusal of `untrackedField` as an error naming the field, for sources checked outside the pipeline's schema (a worker's cameras). */
export function untrackedError(s: Pick<SourceConfig, 'zones' | 'lines'>, tracking: Pick<TrackingConfig, 'enabled'>, path: string): string | undefined {
  const field = untrackedField(s, tracking);
  return field && `${path}.${field}: ${UNTRACKED}`;
}

export type PipelineConfig = z.infer<typeof PipelineSchema>;
