import { randomBytes } from 'node:crypto';
import { z } from 'zod/v4';
import type { Detections } from '../core/detections.js';
import { PRODUCED_BY, type Frame, type Stamps } from '../core/frame.js';
import { AlertBodySchema, AnalyticsSummarySchema, type AlertBody, type AnalyticsSummary } from '../analytics/published.js';
import { SOURCE_STATES, type Transition } from '../sources/health.js';

/**
 * The one message envelope every sink publishes (JSONL, Kafka, WebSocket), version 1.
 *
 * The zod schemas below are its only definition: the types derive from them, and
 * `npm run schema` writes src/sinks/message.schema.json (the JSON Schema for consumers) from
 * `messageJsonSchema()`. They describe; nothing parses with them at run time — the builders
 * at the end of this file make plain objects. README, "Message schema", documents each field.
 */
export const MESSAGE_VERSION = 1;

/**
 * A tag unique to a run of the pipeline (base-36 start time in ms and eight random base-36
 * characters, 41 bits from the system's random source): every message's `run`, and the run in
 * every alert id, so that `run` and `seq` together never repeat across runs (`seq` starts at 0
 * at each: each start of argus, each runPipeline of a program that embeds it). The time alone
 * does not tell runs apart: a box without a real-time clock boots to the same time, a clock is
 * stepped back; and the two random characters there were (1296 values) left one such start in
 * 1296 reusing an id of an undelivered alert still in the journal, which the new alert then
 * replaced there (and consumers dropped as a duplicate).
 */
export function runTag(at = Date.now()): string {
  return `${at.toString(36)}${(randomBytes(8).readBigUInt64BE() % 36n ** 8n).toString(36).padStart(8, '0')}`;
}

const runField = z
  .string()
  .regex(/^[0-9a-z]+$/)
  .describe("the run of the pipeline that published the message (a start of argus; its alert ids' run); seq starts at 0 at each, so (run, seq) never repeats. Optional: messages written before it (an older release's outbox replayed) have none");

const count = z.int().min(0);
const epochMs = z.number().positive();

export const DetectionJsonSchema = z.strictObject({
  label: z.string(),
  classId: count,
  score: z.number().min(0).max(1),
  box: z.tuple([z.number().min(0), z.number().min(0), z.number().min(0), z.number().min(0)]).describe('x1, y1, x2, y2 in source pixels'),
  /** Track id once tracking runs (absent otherwise). */
  trackId: z.int().min(1).optional(),
});
export type DetectionJson = z.output<typeof DetectionJsonSchema>;

// Exactly core's Stamps (frame.ts) plus `published`: `satisfies` fails to compile when a stamp is added there and not here.
const stampShape = {
  /** The frame was produced at the source (what `producedBy` says); end-to-end latency counts from here. */
  produced: epochMs,
  captured: epochMs,
  /** The frame entered the detection stage (it waited for its source's previous frame until then). Optional: messages written before it have none. */
  staged: epochMs.optional(),
  preprocessed: epochMs,
  inferStart: epochMs,
  inferEnd: epochMs,
  postprocessed: epochMs,
  emitted: epochMs,
  /** The message was serialised and handed to the sinks. */
  published: epochMs,
} satisfies Record<keyof Stamps | 'published', z.ZodNumber | z.ZodOptional<z.ZodNumber>>;

/**
 * Latency stamps as published. The JSON Schema lets further numeric stamps through, so v1
 * consumers that validate accept stamps a later release adds; the type lists the ones argus writes.
 */
const PublishedStampsSchema = z.object(stampShape).meta({ description: 'epoch milliseconds with sub-millisecond precision', additionalProperties: { type: 'number' } });
export type PublishedStamps = z.output<typeof PublishedStampsSchema>;

const ModelInfoSchema = z.strictObject({ name: z.string(), version: z.string() });
export type ModelInfo = z.output<typeof ModelInfoSchema>;

/** Who ran the camera (argus worker only): README, "Many machines". */
const ownerShape = {
  owner: z.string().describe('argus worker: the worker that ran the camera').optional(),
  epoch: count
    .describe("argus worker: the owner's claim on the camera; grows with every new owner. A detections message with a lower epoch than one already seen for its source comes from a former owner")
    .optional(),
};

/** The owner and epoch of a worker's camera (absent outside `argus worker`). */
export interface Claim {
  owner: string;
  epoch: number;
}

/** Fields of every per-frame message (detections, alert). */
const frameEnvelope = {
  version: z.literal(MESSAGE_VERSION),
  source: z.string().regex(/^[A-Za-z0-9_.-]+$/).describe('source id from the pipeline'),
  run: runField.optional(),
  seq: count.describe('frames read from the source so far in this run (see run), dropped ones included'),
  pts: z.number().min(0).describe('seconds since the source started'),
  capturedAt: z.iso.datetime().describe('capture wall-clock time, UTC'),
  producedBy: z
    .enum(PRODUCED_BY)
    .describe('what stamps.produced is: camera (an RTSP camera: its own time for the frame, from its RTCP sender reports), due (a file at native rate: playback start + pts), arrival (a live source: when ffmpeg received the data, before decoding), captured (nothing earlier known)'),
  stamps: PublishedStampsSchema,
  frame: z.strictObject({ width: z.int().min(1), height: z.int().min(1) }),
  model: ModelInfoSchema,
  dropped: count.describe('frames this source dropped so far: inference was busy (a newer frame was kept) or failed on them'),
  ...ownerShape,
};

export const DetectionsMessageSchema = z.strictObject({
  type: z.literal('detections'),
  ...frameEnvelope,
  detections: z.array(DetectionJsonSchema),
  analytics: AnalyticsSummarySchema.optional(),
});
export type DetectionsMessage = z.output<typeof DetectionsMessageSchema>;

export const AlertMessageSchema = z.strictObject({
  type: z.literal('alert'),
  ...frameEnvelope,
  alert: AlertBodySchema,
  detections: z.array(DetectionJsonSchema),
});
export type AlertMessage = z.output<typeof AlertMessageSchema>;

const sourceState = z.enum(SOURCE_STATES);

// A source's Transition (sources/health.ts), field for field: `satisfies` fails to compile when a field is added there and not here.
const transitionShape = {
  source: frameEnvelope.source,
  state: sourceState.describe("the source's new state"),
  previous: sourceState,
  reason: z.string().describe("why (ffmpeg exit code, timeout, end of stream, …)"),
  at: epochMs.describe('epoch ms of the change'),
  attempt: count.describe('reconnect attempts since the source was last healthy'),
  code: z.string().describe('error code (VAP_ERR_…) when an error caused the change').optional(),
  detail: z.string().describe("ffmpeg's last log lines, when there are any").optional(),
} satisfies Record<keyof Transition, z.ZodType>;

/** A source's state change (see `sources/health.ts`), as published. */
export const StatusMessageSchema = z.strictObject({
  type: z.literal('status'),
  version: z.literal(MESSAGE_VERSION),
  ...transitionShape,
  run: runField.optional(),
  published: epochMs.describe('when it was handed to the sinks, epoch ms'),
  ...ownerShape,
});
/** Status messages carry no frame stamps (`stamps?: undefined` lets code read `m.stamps?.x` on any message). */
export type StatusMessage = z.output<typeof StatusMessageSchema> & { stamps?: undefined };

// The field types match too, both ways: a change to Transition's types that is not made here fails to compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type AssertTrue<T extends true> = T;
export type StatusCarriesTransition = AssertTrue<Same<Omit<z.output<typeof StatusMessageSchema>, 'type' | 'version' | 'run' | 'published' | 'owner' | 'epoch'>, Transition>>;

export const MessageSchema = z.discriminatedUnion('type', [DetectionsMessageSchema, AlertMessageSchema, StatusMessageSchema]);
export type Message = DetectionsMessage | AlertMessage | StatusMessage;
export type MessageKind = Message['type'];

/**
 * The message schema's revision within its version (`version`, MESSAGE_VERSION): the date of the
 * last change to what it accepts. Within version 1 a revision may add fields and values (a copy of
 * an earlier revision refuses them: each kind is closed to its own fields); anything else (a field
 * removed, renamed, retyped) is version 2. README, "Message schema", lists each revision and what
 * it added; test/sinks/schema-compat.test.ts fails when the schema changes without one.
 */
export const SCHEMA_REVISION = '2026-12-07.2';

const JSON_SCHEMA_HEADER = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://argus.dev/schemas/message.v1.json',
  $comment: `version 1, revision ${SCHEMA_REVISION}: a later revision of version 1 may add fields and values, which this copy refuses; README, "Message schema", lists the revisions`,
  title: 'argus message, version 1',
  description:
    'The envelope every argus sink publishes (JSONL, Kafka, WebSocket): one per processed frame (type detections), one per alert (type alert), one per source state change (type status).',
} as const;

/** Emitted once under `$defs` and referenced from the messages, so consumers can validate one detection or one alert body. */
const DEFS = new Map<z.core.$ZodType, string>([
  [DetectionJsonSchema, 'detection'],
  [AlertBodySchema, 'alert'],
]);

/** zod's JSON Schema for one schema, with the fixes below; schemas in DEFS other than `self` become `$ref`s. */
function toJson(schema: z.core.$ZodType, self?: z.core.$ZodType): Record<string, unknown> {
  return z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    override: ({ zodSchema, jsonSchema }) => {
      const def = DEFS.get(zodSchema);
      if (def && zodSchema !== self) {
        for (const k of Object.keys(jsonSchema)) delete jsonSchema[k];
        jsonSchema.$ref = `#/$defs/${def}`;
        return;
      }
      // A fixed-length tuple: zod gives only prefixItems, which lets shorter and longer arrays through.
      const zdef = zodSchema._zod.def;
      if (zdef.type === 'tuple' && !zdef.rest) {
        jsonSchema.minItems = zdef.items.length;
        jsonSchema.maxItems = zdef.items.length;
      }
    },
  }) as Record<string, unknown>;
}

/** The message JSON Schema (what src/sinks/message.schema.json holds), built from the zod schemas above. */
export function messageJsonSchema(): Record<string, unknown> {
  const { $schema: _s, ...root } = toJson(MessageSchema);
  const $defs: Record<string, unknown> = {};
  for (const [schema, name] of DEFS) {
    const { $schema: _d, ...body } = toJson(schema, schema);
    $defs[name] = body;
  }
  return { ...JSON_SCHEMA_HEADER, ...root, $defs };
}

/** messageJsonSchema() as the committed file's text: 2-space indent, trailing newline. */
export function messageJsonSchemaText(): string {
  return `${JSON.stringify(messageJsonSchema(), null, 2)}\n`;
}

export function statusMessage(t: Transition, claim?: Claim, run?: string): StatusMessage {
  const m: StatusMessage = { type: 'status', version: MESSAGE_VERSION, source: t.source, run, state: t.state, previous: t.previous, reason: t.reason, at: t.at, attempt: t.attempt, published: 0 };
  if (t.code) m.code = t.code;
  if (t.detail) m.detail = t.detail;
  if (claim) {
    m.owner = claim.owner;
    m.epoch = claim.epoch;
  }
  return m;
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

function envelope<T extends MessageKind>(type: T, frame: Frame, dropped: number, model: ModelInfo, claim: Claim | undefined, run: string | undefined) {
  const e = {
    type,
    version: MESSAGE_VERSION,
    source: frame.source,
    run,
    seq: frame.seq,
    pts: round4(frame.pts),
    capturedAt: new Date(frame.stamps.captured).toISOString(),
    producedBy: frame.producedBy,
    // A frame that never waited in a detection stage of argus's own (a library user's chain): staged = captured.
    stamps: { ...frame.stamps, staged: frame.stamps.staged || frame.stamps.captured, published: 0 },
    frame: { width: frame.letterbox.srcWidth, height: frame.letterbox.srcHeight },
    model,
    dropped,
  } as { type: T; version: 1; source: string; run?: string; seq: number; pts: number; capturedAt: string; producedBy: Frame['producedBy']; stamps: PublishedStamps; frame: { width: number; height: number }; model: ModelInfo; dropped: number; owner?: string; epoch?: number };
  if (claim) {
    e.owner = claim.owner;
    e.epoch = claim.epoch;
  }
  return e;
}

export function detectionsMessage(
  frame: Frame,
  detections: Detections,
  dropped: number,
  model: ModelInfo,
  labels: readonly string[],
  analytics?: AnalyticsSummary,
  claim?: Claim,
  run?: string,
): DetectionsMessage {
  const m: DetectionsMessage = { ...envelope('detections', frame, dropped, model, claim, run), detections: detectionsJson(detections, labels) };
  if (analytics) m.analytics = analytics;
  return m;
}

export function alertMessage(frame: Frame, detections: Detections, dropped: number, model: ModelInfo, labels: readonly string[], alert: AlertBody, claim?: Claim, run?: string): AlertMessage {
  return { ...envelope('alert', frame, dropped, model, claim, run), alert, detections: detectionsJson(detections, labels) };
}
