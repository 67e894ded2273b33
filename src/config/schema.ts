import { z } from 'zod';
import { polygonArea, selfIntersection } from '../core/polygon.js';

const executionProvider = z.enum(['cpu', 'cuda', 'tensorrt']);

const point = z.tuple([z.number(), z.number()]);
const units = z.enum(['fraction', 'pixel']);
const anchor = z.enum(['bottom-center', 'center', 'top-center', 'bottom-left', 'bottom-right', 'center-left', 'center-right']);
const id = z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, dot, dash or underscore');
const severity = z.enum(['info', 'warning', 'critical']);

/** A polygon zone; its events are enter, exit and dwell per track. */
export const ZoneSchema = z
  .object({
    id,
    /** Corners, at least 3, not self-intersecting; fractions of the frame (0–1) or pixels (see units). */
    polygon: z.array(point).min(3, 'a polygon needs at least 3 points'),
    /** fraction (default): 0–1 of width/height; pixel: source pixels. */
    units: units.default('fraction'),
    /** Class labels that count (default: all). */
    classes: z.array(z.string().min(1)).min(1).optional(),
    /** Point of each box tested against the polygon. Default bottom-center (the feet). */
    anchor: anchor.default('bottom-center'),
    /** Frames in a row inside (or outside) before an entry (or exit) counts. Default 3. */
    minHoldFrames: z.number().int().min(1).max(1000).default(3),
    /** A stay longer than this raises one dwell event. Default: none. */
    dwellLimitSec: z.number().positive().optional(),
  })
  .strict();

/** A directional counting line. */
export const LineSchema = z
  .object({
    id,
    from: point,
    to: point,
    units: units.default('fraction'),
    classes: z.array(z.string().min(1)).min(1).optional(),
    /** Point of each box tested against the line. Default center. */
    anchor: anchor.default('center'),
    /** A track must get this far (px) past the line for a crossing to count. Default 10. */
    marginPx: z.number().min(0).default(10),
  })
  .strict();

const ruleBase = {
  id,
  severity: severity.default('warning'),
  /** Minimum time between two alerts of this rule for the same key (track, or the rule itself). */
  cooldownSec: z.number().min(0).default(0),
};

export const RuleSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('zone-enter'), zone: z.string(), ...ruleBase }).strict(),
  z.object({ type: z.literal('zone-exit'), zone: z.string(), ...ruleBase }).strict(),
  z.object({ type: z.literal('zone-dwell'), zone: z.string(), ...ruleBase }).strict(),
  z
    .object({ type: z.literal('line-cross'), line: z.string(), direction: z.enum(['in', 'out', 'any']).default('any'), ...ruleBase, severity: severity.default('info') })
    .strict(),
  z
    .object({
      type: z.literal('conveyor-rate'),
      /** Line whose crossings are the items… */
      line: z.string().optional(),
      /** …or zone whose entries are the items (give one of the two). */
      zone: z.string().optional(),
      /** Alarm when fewer items per minute than this… */
      minPerMinute: z.number().positive(),
      /** …for at least this long. */
      forSec: z.number().positive(),
      /** Window the rate is measured over. Default 60. */
      windowSec: z.number().positive().default(60),
      ...ruleBase,
      severity: severity.default('critical'),
    })
    .strict(),
  z
    .object({
      type: z.literal('conveyor-defect'),
      /** Defect classes: any of these on a frame counts. */
      classes: z.array(z.string().min(1)).min(1).optional(),
      /** Or: any class outside this set counts. */
      allowed: z.array(z.string().min(1)).min(1).optional(),
      /** Alert when K of the last N frames show a defect. */
      k: z.number().int().min(1),
      n: z.number().int().min(1).max(10_000),
      /** Detections below this score are ignored. Default 0.5. */
      minScore: z.number().min(0).max(1).default(0.5),
      ...ruleBase,
      severity: severity.default('critical'),
      cooldownSec: z.number().min(0).default(60),
    })
    .strict(),
]);

export type ZoneConfig = z.infer<typeof ZoneSchema>;
export type LineConfig = z.infer<typeof LineSchema>;
export type RuleConfig = z.infer<typeof RuleSchema>;

/** One camera or file. */
export const SourceSchema = z
  .object({
    /** Unique id, used in messages, metrics and Kafka keys. */
    id: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, dot, dash or underscore'),
    /**
     * What to open: a path, file://, rtsp://, http(s)://, /dev/videoN (V4L2), or `asset:NAME`
     * for a video listed in streams/assets.yaml (fetched and checksummed on first use).
     */
    uri: z.string().min(1),
    /** Files: 'native' plays at the file's frame rate like a camera; 'fast' as fast as inference allows. Default native. */
    rate: z.enum(['native', 'fast']).default('native'),
    /** Files: start again at the end. Default false. */
    loop: z.boolean().default(false),
    /** Resample to this many frames per second in ffmpeg (e.g. 60 fps cameras to 30). Default: as the source. */
    fps: z.number().positive().max(240).optional(),
    /** RTSP transport. Default tcp (no smeared frames from lost UDP packets). */
    rtspTransport: z.enum(['tcp', 'udp']).default('tcp'),
    /** Extra ffmpeg arguments before -i, e.g. ["-hwaccel", "cuda"]. */
    inputArgs: z.array(z.string()).default([]),
    /** false skips this source. Default true. */
    enabled: z.boolean().default(true),
    /** Reconnecting after ffmpeg exits, the stream ends (live sources) or stalls. */
    reconnect: z
      .object({
        /** First delay, ms. Default 250. */
        initialDelayMs: z.number().int().min(0).default(250),
        /** Delays double up to this, ms. Default 2000: a camera that comes back is picked up within ~2 s; each try costs only a connection attempt. */
        maxDelayMs: z.number().int().min(0).default(2000),
        /** ± fraction of random jitter. Default 0.2. */
        jitter: z.number().min(0).max(1).default(0.2),
        /** Failed attempts in a row before the source is marked failed; 0 never gives up. Default 0. */
        maxAttempts: z.number().int().min(0).default(0),
        /** Streaming this long resets the attempt count and the delay, ms. Default 30000. */
        healthyResetMs: z.number().int().min(0).default(30_000),
      })
      .strict()
      .default({}),
    /** Stall watchdog (live sources and native-rate files). */
    watchdog: z
      .object({
        /** No first frame this long after (re)starting ffmpeg: restart. Default 15000 ms. */
        startTimeoutMs: z.number().int().min(100).default(15_000),
        /** No frame for this many frame periods: stalled, restart. Default 10. */
        stallFactor: z.number().min(1).default(10),
        /** …but never less than this, ms. Default 2000. */
        stallMinMs: z.number().int().min(50).default(2000),
      })
      .strict()
      .default({}),
    /** Polygon zones in this source's frame. */
    zones: z.array(ZoneSchema).default([]),
    /** Counting lines in this source's frame. */
    lines: z.array(LineSchema).default([]),
    /** Alert rules over this source's zones, lines and detections. */
    rules: z.array(RuleSchema).default([]),
  })
  .strict()
  .superRefine((s, ctx) => {
    const zoneIds = new Set<string>();
    s.zones.forEach((z, i) => {
      if (zoneIds.has(z.id)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'id'], message: `duplicate zone id "${z.id}"` });
      zoneIds.add(z.id);
      if (z.units === 'fraction') {
        z.polygon.forEach((p, j) => {
          if (p.some((v) => v < 0 || v > 1)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', j], message: `point [${p.join(', ')}] is outside the frame (fractions must be 0–1)` });
        });
      } else {
        z.polygon.forEach((p, j) => {
          if (p.some((v) => v < 0)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', j], message: `point [${p.join(', ')}] is outside the frame (negative pixel)` });
        });
      }
      const cross = selfIntersection(z.polygon);
      if (cross) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: `polygon is self-intersecting (edges ${cross[0]} and ${cross[1]} cross)` });
      else if (polygonArea(z.polygon) === 0) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: 'polygon has no area' });
    });
    const lineIds = new Set<string>();
    s.lines.forEach((l, i) => {
      if (lineIds.has(l.id)) ctx.addIssue({ code: 'custom', path: ['lines', i, 'id'], message: `duplicate line id "${l.id}"` });
      lineIds.add(l.id);
      for (const end of ['from', 'to'] as const) {
        const p = l[end];
        if (l.units === 'fraction' ? p.some((v) => v < 0 || v > 1) : p.some((v) => v < 0)) ctx.addIssue({ code: 'custom', path: ['lines', i, end], message: `point [${p.join(', ')}] is outside the frame` });
      }
      if (l.from[0] === l.to[0] && l.from[1] === l.to[1]) ctx.addIssue({ code: 'custom', path: ['lines', i, 'to'], message: 'a line needs two different points' });
    });
    const ruleIds = new Set<string>();
    s.rules.forEach((r, i) => {
      if (ruleIds.has(r.id)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'id'], message: `duplicate rule id "${r.id}"` });
      ruleIds.add(r.id);
      if ('zone' in r && r.zone !== undefined && !zoneIds.has(r.zone)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'zone'], message: `no zone "${r.zone}" in this source (zones: ${[...zoneIds].join(', ') || 'none'})` });
      if ('line' in r && r.line !== undefined && !lineIds.has(r.line)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'line'], message: `no line "${r.line}" in this source (lines: ${[...lineIds].join(', ') || 'none'})` });
      if (r.type === 'zone-dwell') {
        const z = s.zones.find((x) => x.id === r.zone);
        if (z && z.dwellLimitSec === undefined) ctx.addIssue({ code: 'custom', path: ['rules', i, 'zone'], message: `zone "${r.zone}" has no dwellLimitSec, so it never raises dwell events` });
      }
      if (r.type === 'conveyor-rate' && !r.line === !r.zone) ctx.addIssue({ code: 'custom', path: ['rules', i], message: 'give exactly one of "line" (crossings) or "zone" (entries) as what counts as an item' });
      if (r.type === 'conveyor-defect') {
        if (!r.classes === !r.allowed) ctx.addIssue({ code: 'custom', path: ['rules', i], message: 'give exactly one of "classes" (defect classes) or "allowed" (anything else is a defect)' });
        if (r.k > r.n) ctx.addIssue({ code: 'custom', path: ['rules', i, 'k'], message: `k (${r.k}) must not exceed n (${r.n})` });
      }
    });
  });

export const ModelRefSchema = z
  .object({
    /**
     * A manifest name from models/ (e.g. yolox-nano) or a path to a manifest YAML. Default:
     * yolox-nano, unless `path` is given alone: then the model describes itself (ONNX metadata
     * such as Ultralytics' names and imgsz, output shapes for the decoder).
     */
    manifest: z.string().min(1).optional(),
    /** Use this ONNX file (instead of the manifest's download). */
    path: z.string().min(1).optional(),
    /** Decoder family; default: the manifest's, else detected from the output shapes. */
    family: z.enum(['auto', 'yolox', 'yolov8', 'yolov5', 'end2end', 'end2end-split']).optional(),
    /** Cross-source batching, for models with a dynamic (or fixed > 1) batch dimension. */
    batch: z
      .object({
        /** Frames per run at most; 1 turns batching off. Default 1. */
        maxBatch: z.number().int().min(1).max(64).default(1),
        /** Longest a frame waits for others to join its batch, ms. Default 4. */
        maxWaitMs: z.number().min(0).max(1000).default(4),
      })
      .strict()
      .default({}),
    /** TensorRT: folder for built engines, reused across runs. */
    trtEngineCacheDir: z.string().optional(),
    /** TensorRT: build fp16 engines. Default false. */
    trtFp16: z.boolean().default(false),
    /** Execution providers in order of preference; CPU is always the last resort. Default [cpu]. */
    providers: z.array(executionProvider).min(1).default(['cpu']),
    /** Threads ONNX Runtime uses inside one operator, per session. Default 2. */
    intraOpThreads: z.number().int().min(1).max(64).default(2),
    /**
     * Sessions, each on its own worker thread, so inference never blocks the event loop. More
     * than one runs several frames (or batches) at once: on a CPU, workers × intraOpThreads ≈
     * cores (e.g. 2 × 1 on 2 cores) gets more frames through than one session with all the
     * threads. 0 runs the session on the main thread. Default 1.
     */
    workers: z.number().int().min(0).max(16).default(1),
    /** Inference runs on a blank frame before the first real one. Default 2. */
    warmupRuns: z.number().int().min(0).max(100).default(2),
    /** CUDA/TensorRT device. Default 0. */
    deviceId: z.number().int().min(0).default(0),
  })
  .strict();

export const PostprocessSchema = z
  .object({
    /** Minimum detection score (objectness × class score for YOLOX). Default 0.3. */
    scoreThreshold: z.number().min(0).max(1).default(0.3),
    /** IoU above which NMS suppresses a box of the same class. Default 0.45. */
    iouThreshold: z.number().min(0).max(1).default(0.45),
    /** Best candidates kept before NMS. Default 300. */
    preNmsTopK: z.number().int().min(1).default(300),
    /** Detections kept per frame. Default 100. */
    maxDetections: z.number().int().min(1).default(100),
    /** NMS across classes. Default false. */
    classAgnostic: z.boolean().default(false),
  })
  .strict();

export const KafkaSinkSchema = z
  .object({
    /** Bootstrap brokers, host:port. */
    brokers: z.array(z.string().regex(/^[^\s:]+:\d+$/, 'use host:port')).min(1),
    clientId: z.string().min(1).default('argus'),
    topics: z
      .object({
        /** One message per processed frame, keyed by source id. Default argus.detections. */
        detections: z.string().min(1).default('argus.detections'),
        /** One message per alert, keyed by source id. Default argus.alerts. */
        alerts: z.string().min(1).default('argus.alerts'),
        /** One message per source state change, keyed by source id. Default argus.status. */
        status: z.string().min(1).default('argus.status'),
      })
      .strict()
      .default({}),
    /** Create missing topics at start; false makes a missing topic an error naming it. Default true. */
    createTopics: z.boolean().default(true),
    /** Partitions for created topics. Default 3. */
    partitions: z.number().int().min(1).default(3),
    /** Replication factor for created topics. Default 1. */
    replicationFactor: z.number().int().min(1).default(1),
    /** Batch compression. Default none. */
    compression: z.enum(['none', 'gzip']).default('none'),
    /** Longest a message waits for its batch to fill, ms. Default 5. */
    lingerMs: z.number().min(0).max(10_000).default(5),
    /** Messages per produce request at most. Default 500. */
    batchSize: z.number().int().min(1).max(100_000).default(500),
    /** Bytes per produce request at most (key + value + 70 per message, before compression). Default 900000: below the broker's 1 MB message.max.bytes, so a backlog of alerts with snapshots is never refused as a whole. */
    maxBatchBytes: z.number().int().min(1024).default(900_000),
    /** A message bigger than this (key + value + 70) is never sent: it is parked (logged, dead-letter file). Default 1000000. */
    maxMessageBytes: z.number().int().min(1024).default(1_000_000),
    /** Messages too large for the broker go to this JSON lines file ({topic,key,value,reason,at}); relative to the pipeline file. Default kafka-dead-letter.jsonl in the outbox folder. */
    deadLetterPath: z.string().min(1).optional(),
    /** The dead-letter file grows to this many bytes at most; later parked messages are only logged and counted. Default 100 MiB. */
    deadLetterMaxBytes: z.number().int().min(0).default(100 * 1024 * 1024),
    /** Detection messages buffered in front of the producer; beyond it they are dropped and counted. Default 10000. */
    bufferSize: z.number().int().min(1).default(10_000),
    /** Alerts buffered while the broker is away (kept and retried). Default 10000. */
    alertBufferSize: z.number().int().min(1).default(10_000),
    /** The same bound in bytes of the alerts' JSON (snapshots make alerts large). Default 64 MiB. With the outbox, alerts beyond either bound wait on disk and are sent in order as the buffer drains. */
    alertBufferBytes: z.number().int().min(64 * 1024).default(64 * 1024 * 1024),
    /** Sources whose latest undelivered status is kept (an older one of the same source is replaced, not lost). Default 1000. */
    statusBufferSize: z.number().int().min(1).default(1000),
    /** Time allowed to flush on shutdown, ms. Default 10000. */
    closeTimeoutMs: z.number().int().min(0).default(10_000),
    /** TLS: true, or Node tls options (ca, cert, key, servername…), passed to kafkajs. */
    ssl: z.union([z.boolean(), z.record(z.unknown())]).optional(),
    /** SASL, passed to kafkajs: { mechanism: plain | scram-sha-256 | scram-sha-512, username, password }. */
    sasl: z
      .object({ mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']), username: z.string(), password: z.string() })
      .strict()
      .optional(),
  })
  .strict();

export const WebSocketSinkSchema = z
  .object({
    /** Serve the WebSocket API at /ws on the pipeline's HTTP server. Default true. */
    enabled: z.boolean().default(true),
    /** Bytes queued for one client before its detection messages are dropped (and counted, and the client told). Default 1 MiB. */
    maxBufferedBytes: z.number().int().min(1024).default(1024 * 1024),
    /** Alerts held for a slow client before it is closed with 1013. Default 1000. */
    maxAlertBacklog: z.number().int().min(1).default(1000),
    /** Largest client message answered normally; larger ones get an error frame. Default 4096. */
    maxClientMessageBytes: z.number().int().min(64).max(65536).default(4096),
    /** Clients connected at once; beyond it an upgrade answers 503. Default 64. */
    maxClients: z.number().int().min(1).default(64),
    /** A ping every this often; a client that has not answered the previous ping is terminated. Default 15 000 ms. */
    heartbeatMs: z.number().int().min(100).default(15_000),
    /** Messages (and ping frames) one client may send per second; beyond it the client is closed with 1008. Default 100. */
    maxMessagesPerSecond: z.number().int().min(1).default(100),
  })
  .strict();

export const SinksSchema = z
  .object({
    /** Write one JSON line per processed frame and per alert to this file ('-' for stdout); `status: true` adds source state changes. */
    jsonl: z.object({ path: z.string().min(1), status: z.boolean().default(false) }).strict().optional(),
    kafka: KafkaSinkSchema.optional(),
    websocket: WebSocketSinkSchema.default({}),
  })
  .strict();

export const ServerSchema = z
  .object({
    /** Address to bind. Default 127.0.0.1 (loopback only); 0.0.0.0 exposes it. */
    host: z.string().min(1).default('127.0.0.1'),
    /** Port; $ARGUS_HTTP_PORT overrides it; 0 picks a free one. Default 8080. */
    port: z.number().int().min(0).max(65535).default(8080),
    /** Every route but /healthz and /readyz (and /metrics with publicMetrics), and /ws, needs this token (`Authorization: Bearer …` or `?token=…`). Default: none. */
    token: z.string().min(1).optional(),
    // The limits below are optional in the type (code builds `server` blocks by hand); their
    // defaults are applied by startHttpServer (SERVER_DEFAULTS) and the WebSocket hub.
    /** Serve /metrics without the token (for a scraper that cannot send one). Default false. */
    publicMetrics: z.boolean().optional(),
    /** Browser origins (`scheme://host[:port]`, or "*") whose pages may open /ws besides the server's own. Default: none. */
    allowedOrigins: z
      .array(
        z.string().refine((o) => {
          if (o === '*') return true;
          if (!/^https?:\/\/[^/?#@\s]+\/?$/i.test(o)) return false;
          try {
            return new URL(o).host !== '';
          } catch {
            return false;
          }
        }, 'must be "*" or an origin: scheme://host[:port], no path'),
      )
      .optional(),
    /** Open connections, HTTP and WebSocket together; beyond it new ones are closed at once. Default 256. */
    maxConnections: z.number().int().min(1).optional(),
    /** Request line and headers together; larger requests answer 431. Default 16384. */
    maxHeaderBytes: z.number().int().min(1024).max(1024 * 1024).optional(),
    /** Time to receive a request's headers (also the longest an idle new connection stays open); then 408 and closed. Default 10 000 ms. */
    headersTimeoutMs: z.number().int().min(100).optional(),
    /** Time to receive a whole request; then 408 and closed. Default 30 000 ms. */
    requestTimeoutMs: z.number().int().min(100).optional(),
    /** An idle keep-alive connection is closed after this long. Default 5000 ms. */
    keepAliveTimeoutMs: z.number().int().min(0).optional(),
    /** Host names served (the Host header); others get 403. Default: on loopback only loopback names (stops DNS rebinding); elsewhere any. "*": any. */
    allowedHosts: z.array(z.string().min(1)).optional(),
  })
  .strict();

export const TrackingSchema = z
  .object({
    /** Track objects and put track ids in every message. Default true. */
    enabled: z.boolean().default(true),
    /** ByteTrack thresholds and buffers; see src/tracking/byte-tracker.ts for each trade-off. */
    trackHighThresh: z.number().min(0).max(1).optional(),
    trackLowThresh: z.number().min(0).max(1).optional(),
    newTrackThresh: z.number().min(0).max(1).optional(),
    matchThresh: z.number().min(0).max(1).optional(),
    lostTrackBufferMs: z.number().min(0).optional(),
    minConfirmFrames: z.number().int().min(1).optional(),
    /** Nominal frame rate for the motion model. Default: the source's frame rate. */
    frameRateHint: z.number().positive().optional(),
    classAware: z.boolean().optional(),
  })
  .strict();

export const AlertsSchema = z
  .object({
    snapshot: z
      .object({
        /** embed: base64 JPEG inside the alert; ref: written to `dir`, the alert names the file; none. Default embed. */
        mode: z.enum(['embed', 'ref', 'none']).default('embed'),
        /** Folder for `ref` snapshots. Default ./snapshots (relative to the pipeline file). */
        dir: z.string().default('snapshots'),
        /** Largest JPEG in bytes; quality is lowered (then the size) until it fits. Default 150000. */
        maxBytes: z.number().int().min(4096).default(150_000),
        /** Snapshot width at most, px; never more than the decoded picture (the model input's picture area). Default 832. */
        maxWidth: z.number().int().min(64).default(832),
        /** JPEG quality to start from. Default 80. */
        quality: z.number().int().min(10).max(100).default(80),
      })
      .strict()
      .default({}),
  })
  .strict();

/** The durable alert outbox: a journal on local disk that alerts are written to before any sink sees them. */
export const OutboxSchema = z
  .object({
    /** Default: on when a Kafka sink is configured (the journal is emptied by the broker's acknowledgements). */
    enabled: z.boolean().optional(),
    /** Folder of the journal; relative to the pipeline file. Default $ARGUS_STATE_DIR/<name>, else $XDG_STATE_HOME/argus/<name>, else ~/.local/state/argus/<name>. */
    dir: z.string().min(1).optional(),
    /**
     * Undelivered alerts kept at most, bytes (on disk, and in memory: they are also held there);
     * beyond it the oldest are dropped (each logged as an error). Default 128 MiB, at most 192 MiB
     * (the journal is read back as one string at start).
     */
    maxBytes: z.number().int().min(64 * 1024).max(192 * 1024 * 1024).default(128 * 1024 * 1024),
    /** Undelivered alerts older than this are dropped (logged as errors), hours. Default 168 (7 days). */
    maxAgeHours: z.number().positive().default(168),
    /** fsync each write. Default true; false still survives a process crash, not a power cut. */
    fsync: z.boolean().default(true),
  })
  .strict();

export const PipelineSchema = z
  .object({
    /** Pipeline name for logs. */
    name: z.string().min(1).default('pipeline'),
    /** ffmpeg executable (e.g. a build with NVDEC). Default: the bundled @ffmpeg-installer binary, or $ARGUS_FFMPEG. */
    ffmpegPath: z.string().min(1).optional(),
    sources: z.array(SourceSchema).min(1, 'at least one source is needed'),
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
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.sources.every((s) => !s.enabled)) ctx.addIssue({ code: 'custom', path: ['sources'], message: 'every source is disabled (enabled: false); enable at least one' });
    const seen = new Set<string>();
    p.sources.forEach((s, i) => {
      if (seen.has(s.id)) ctx.addIssue({ code: 'custom', path: ['sources', i, 'id'], message: `duplicate source id "${s.id}"` });
      seen.add(s.id);
    });
  });

export type SourceConfig = z.infer<typeof SourceSchema>;
export type ModelRefConfig = z.infer<typeof ModelRefSchema>;
export type PostprocessConfig = z.infer<typeof PostprocessSchema>;
export type PipelineConfig = z.infer<typeof PipelineSchema>;
export type KafkaSinkConfig = z.infer<typeof KafkaSinkSchema>;
export type TrackingConfig = z.infer<typeof TrackingSchema>;
export type AlertsConfig = z.infer<typeof AlertsSchema>;
export type OutboxConfig = z.infer<typeof OutboxSchema>;
export type ExecutionProviderName = z.infer<typeof executionProvider>;

/** A model manifest (models/*.yaml). */
export const ModelManifestSchema = z
  .object({
    name: z.string().min(1),
    version: z.string().min(1),
    description: z.string().optional(),
    license: z.string().optional(),
    /** File name in the cache and in the mirror's models/ folder. */
    file: z.string().regex(/^[A-Za-z0-9_.-]+$/),
    /** Made locally from another manifest's model by scripts/derive-models.sh (dyn: dynamic batch; fp16; int8). */
    derive: z.object({ from: z.string().min(1), variant: z.enum(['dyn', 'fp16', 'int8']) }).strict().optional(),
    /** Official download URL (absent for local-only models: then the file must be in the mirror or cache, or given as model.path). */
    url: z.string().url().optional(),
    /** Other URLs tried after `url`, each verified against the same sha256. */
    alternates: z.array(z.string().url()).default([]),
    /** Hex sha256 of the file; downloads and mirror copies that differ are refused. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    input: z.object({ name: z.string().optional(), shape: z.array(z.union([z.number().int(), z.string()])).length(4) }).strict().optional(),
    output: z.object({ name: z.string().optional(), shape: z.array(z.union([z.number().int(), z.string()])) }).strict().optional(),
    preprocess: z
      .object({
        width: z.number().int().positive(),
        height: z.number().int().positive(),
        letterbox: z.object({ align: z.enum(['top-left', 'center']).default('top-left'), pad: z.number().int().min(0).max(255).default(114) }).strict().default({}),
        channelOrder: z.enum(['bgr', 'rgb']),
        scale: z.number().positive().default(1),
        mean: z.tuple([z.number(), z.number(), z.number()]).default([0, 0, 0]),
        std: z.tuple([z.number().positive(), z.number().positive(), z.number().positive()]).default([1, 1, 1]),
      })
      .strict(),
    decoder: z
      .object({ type: z.enum(['auto', 'yolox', 'yolov8', 'yolov5', 'end2end', 'end2end-split']).default('auto'), strides: z.array(z.number().int().positive()).default([8, 16, 32]) })
      .strict()
      .default({}),
    /** Class labels; default: the ONNX metadata's `names`. */
    labels: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict();

export type ModelManifest = z.infer<typeof ModelManifestSchema>;
