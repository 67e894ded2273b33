import { z } from 'zod';

const executionProvider = z.enum(['cpu', 'cuda', 'tensorrt']);

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
  })
  .strict();

export const ModelRefSchema = z
  .object({
    /** A manifest name from models/ (e.g. yolox-nano) or a path to a manifest YAML. */
    manifest: z.string().min(1).default('yolox-nano'),
    /** Use this ONNX file instead of the manifest's download. */
    path: z.string().min(1).optional(),
    /** Execution providers in order of preference; CPU is always the last resort. Default [cpu]. */
    providers: z.array(executionProvider).min(1).default(['cpu']),
    /** Threads ONNX Runtime uses inside one operator. Default 2. */
    intraOpThreads: z.number().int().min(1).max(64).default(2),
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
    /** Detection messages buffered in front of the producer; beyond it they are dropped and counted. Default 10000. */
    bufferSize: z.number().int().min(1).default(10_000),
    /** Alerts buffered while the broker is away (kept and retried). Default 10000. */
    alertBufferSize: z.number().int().min(1).default(10_000),
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
  })
  .strict();

export const SinksSchema = z
  .object({
    /** Write one JSON line per message to this file ('-' for stdout). */
    jsonl: z.object({ path: z.string().min(1) }).strict().optional(),
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
    /** WebSocket clients must present this token. Default: none. */
    token: z.string().min(1).optional(),
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
    /** HTTP server for the WebSocket API (and health, metrics, dashboard). Absent: no server. */
    server: ServerSchema.optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
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
    /** Official download URL. */
    url: z.string().url(),
    /** Other URLs tried after `url`, each verified against the same sha256. */
    alternates: z.array(z.string().url()).default([]),
    /** Hex sha256 of the file; downloads and mirror copies that differ are refused. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    input: z.object({ name: z.string().optional(), shape: z.array(z.union([z.number().int(), z.string()])).length(4) }).strict(),
    output: z.object({ name: z.string().optional(), shape: z.array(z.union([z.number().int(), z.string()])) }).strict(),
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
    decoder: z.object({ type: z.literal('yolox'), strides: z.array(z.number().int().positive()).default([8, 16, 32]) }).strict(),
    labels: z.array(z.string().min(1)).min(1),
  })
  .strict();

export type ModelManifest = z.infer<typeof ModelManifestSchema>;
