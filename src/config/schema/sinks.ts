import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { z } from 'zod';
import { brokerList, filePath, finite, frameRate, kafkaTopic, ms, secret } from './common.js';

/** Node's TLS options that hold PEM text (a certificate, a key), not a file's path. */
const PEM_OPTIONS = ['ca', 'cert', 'key'] as const;

/** Whether Node's TLS takes `o` (the error it throws, else undefined). */
function tlsRefusal(o: Record<string, unknown>): Error | undefined {
  try {
    createSecureContext(o as SecureContextOptions);
    return undefined;
  } catch (e) {
    return e as Error;
  }
}

/**
 * The options whose refusal Node gives without a code, and so without OpenSSL's reason in the
 * form checkTlsOptions passes on (`refused`, no word of why), each tried alone: `pfx` (Node
 * throws OpenSSL's reason alone: `not enough data`, `mac verify failure`: fixed words, none of
 * the input) and `sigalgs` (Node's `error:00000000:lib(0)::reason(0)`: OpenSSL gives none, so
 * the entry it does not know is named by its place, never its text).
 */
function refusedAlone(o: Record<string, unknown>): { option: string; why: string } | undefined {
  if (o.pfx !== undefined) {
    const e = tlsRefusal({ pfx: o.pfx, ...(o.passphrase !== undefined ? { passphrase: o.passphrase } : {}) });
    if (e && (e as NodeJS.ErrnoException).code === undefined) {
      return { option: 'pfx', why: `OpenSSL: ${e.message}; pfx is a PKCS#12 file's bytes, which YAML text does not hold: give cert and key as PEM text instead` };
    }
  }
  if (o.sigalgs !== undefined && tlsRefusal({ sigalgs: o.sigalgs })) {
    const entries = typeof o.sigalgs === 'string' ? o.sigalgs.split(':') : [];
    const bad = entries.findIndex((s) => tlsRefusal({ sigalgs: s }) !== undefined);
    const which = bad >= 0 ? `its entry ${bad + 1} of ${entries.length}` : 'it';
    return { option: 'sigalgs', why: `${which} is not a signature algorithm OpenSSL knows: a list such as RSA+SHA256:ECDSA+SHA256:rsa_pss_rsae_sha256:ed25519, joined by ':'` };
  }
  return undefined;
}

/**
 * Kafka's TLS options, checked as Node's TLS will take them, when the pipeline loads: `ca: /etc/kafka/ca.pem`
 * (a path where Node takes the PEM text) ran with "Failed to connect: error:0480006C:PEM
 * routines::no start line" every few seconds for as long as argus ran, alerts piling up in the
 * outbox, no field named. Neither the option's value nor Node's words about it are repeated
 * (a key, a passphrase); OpenSSL's reason is.
 */
function checkTlsOptions(o: Record<string, unknown>, ctx: z.RefinementCtx): void {
  let pemProblem = false;
  for (const name of PEM_OPTIONS) {
    const v = o[name];
    const items = Array.isArray(v) ? v.map((x, i) => [x, [name, i]] as const) : [[v, [name]] as const];
    for (const [x, path] of items) {
      if (typeof x !== 'string' || x.includes('-----BEGIN')) continue;
      pemProblem = true;
      ctx.addIssue({ code: 'custom', path: [...path], message: `PEM text (-----BEGIN …), not a file's path: Node's TLS takes the ${name === 'key' ? 'key itself' : 'certificates themselves'}; give the file's text (a YAML block, \`${name}: |\`, or \${env:VAR} holding it)` });
    }
  }
  if (pemProblem) return;
  try {
    createSecureContext(o as SecureContextOptions);
  } catch (e) {
    const alone = refusedAlone(o);
    if (alone) {
      ctx.addIssue({ code: 'custom', path: [alone.option], message: `Node's TLS refuses it (${alone.why})` });
      return;
    }
    const code = (e as NodeJS.ErrnoException).code ?? '';
    // OpenSSL's reason ("PEM routines::no start line", "bad decrypt") holds none of the input; Node's own argument errors quote it.
    const why = code.startsWith('ERR_OSSL') ? (e as Error).message : `${code || 'refused'}${code === 'ERR_INVALID_ARG_TYPE' ? `: ${(e as Error).message.split('. Received')[0]}` : ''}`;
    ctx.addIssue({ code: 'custom', message: `Node's TLS refuses these options (${why})` });
  }
}

/** Kafka TLS: true, or Node tls options (ca, cert, key, servername…), passed to kafkajs. */
export const kafkaSsl = z.union([
  z.boolean(),
  z
    .object({
      // Strings for Node's TLS: a passphrase of digits made from the environment
      // (`passphrase: ${env:KAFKA_KEY_PASS}`, 123456) was a number, which Node's TLS refuses
      // (ERR_INVALID_ARG_TYPE), with no way to write it otherwise; named here, it is given back as
      // the variable's text, as a SASL password is; and redacted wherever it appears, as one.
      passphrase: secret().optional(),
      servername: z.string().optional(),
    })
    .passthrough()
    .superRefine(checkTlsOptions),
]);

/** Kafka SASL, passed to kafkajs: { mechanism: plain | scram-sha-256 | scram-sha-512, username, password }. */
export const kafkaSasl = z.object({ mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']), username: z.string(), password: secret() }).strict();

export const KafkaSinkSchema = z
  .object({
    /** Bootstrap brokers, host:port (an item may list several, comma-separated: brokerList). */
    brokers: brokerList,
    clientId: z.string().min(1).default('argus'),
    topics: z
      .object({
        /** One message per processed frame, keyed by source id. Default argus.detections. */
        detections: kafkaTopic.default('argus.detections'),
        /** One message per alert, keyed by source id. Default argus.alerts. */
        alerts: kafkaTopic.default('argus.alerts'),
        /** One message per source state change, keyed by source id. Default argus.status. */
        status: kafkaTopic.default('argus.status'),
      })
      .strict()
      .default({}),
    /** Create missing topics at start; false makes a missing topic an error naming it. Default true. */
    createTopics: z.boolean().default(true),
    /** Partitions for created topics. Default 3. */
    partitions: finite().int().min(1).default(3),
    /** Replication factor for created topics. Default 1. */
    replicationFactor: finite().int().min(1).default(1),
    /** Batch compression. Default none. */
    compression: z.enum(['none', 'gzip']).default('none'),
    /** Longest a message waits for its batch to fill, ms. Default 5. */
    lingerMs: finite().min(0).max(10_000).default(5),
    /** Messages per produce request at most. Default 500. */
    batchSize: finite().int().min(1).max(100_000).default(500),
    /** Bytes per produce request at most (key + value + 70 per message, before compression). Default 900000: below the broker's 1 MB message.max.bytes, so a backlog of alerts with snapshots is never refused as a whole. */
    maxBatchBytes: finite().int().min(1024).default(900_000),
    /** A message bigger than this (key + value + 70) is never sent: an alert goes without its embedded snapshot (snapshotOmitted), anything still bigger is parked (logged, dead-letter file). Default 1000000. */
    maxMessageBytes: finite().int().min(1024).default(1_000_000),
    /** Messages too large for the broker go to this JSON lines file ({topic,key,value,reason,at}); relative to the pipeline file. Default kafka-dead-letter.jsonl in the outbox folder. */
    deadLetterPath: filePath().optional(),
    /** The dead-letter file grows to this many bytes at most; later parked messages are only logged and counted. Default 100 MiB. Not for a named pipe (or a device), which holds nothing. */
    deadLetterMaxBytes: finite().int().min(0).default(100 * 1024 * 1024),
    /** Detection messages buffered in front of the producer; beyond it they are dropped and counted. Default 10000. */
    bufferSize: finite().int().min(1).default(10_000),
    /** Alerts buffered while the broker is away (kept and retried). Default 10000. */
    alertBufferSize: finite().int().min(1).default(10_000),
    /** The same bound in bytes of the alerts' JSON (snapshots make alerts large). Default 64 MiB. With the outbox, alerts beyond either bound wait on disk and are sent in order as the buffer drains. */
    alertBufferBytes: finite().int().min(64 * 1024).default(64 * 1024 * 1024),
    /** Sources whose latest undelivered status is kept (an older one of the same source is replaced, not lost). Default 1000. */
    statusBufferSize: finite().int().min(1).default(1000),
    /** Time allowed to flush on shutdown, ms. Default 10000. */
    closeTimeoutMs: ms(0).default(10_000),
    /** How long one request to the broker (produce, metadata, topic check) may go unanswered before it fails and is retried, ms. Default 10000. Lower: a broker that accepts connections and never answers is noticed sooner; too low for the link: requests that would have succeeded fail and are retried. */
    requestTimeoutMs: finite().int().min(500).max(300_000).default(10_000),
    /** TLS: true, or Node tls options (ca, cert, key, servername…), passed to kafkajs. */
    ssl: kafkaSsl.optional(),
    /** SASL, passed to kafkajs: { mechanism: plain | scram-sha-256 | scram-sha-512, username, password }. */
    sasl: kafkaSasl.optional(),
  })
  .strict();

export const WebSocketSinkSchema = z
  .object({
    /** Serve the WebSocket API at /ws on the pipeline's HTTP server. Default true. */
    enabled: z.boolean().default(true),
    /** Bytes queued for one client before its detection messages are dropped (and counted, and the client told). Default 1 MiB. */
    maxBufferedBytes: finite().int().min(1024).default(1024 * 1024),
    /** Alerts and status changes held for a slow client before it is closed with 1013. Default 1000. */
    maxAlertBacklog: finite().int().min(1).default(1000),
    /** The same backlog's bytes; beyond it the client is closed with 1013. Default 16 MiB. On the WebSocket an alert carries its snapshot's URL, not the picture: the least, 64 KiB, holds one alert with postprocess.maxDetections' most (300 detections). */
    maxAlertBacklogBytes: finite().int().min(64 * 1024).default(16 * 1024 * 1024),
    /** Largest client message answered normally; larger ones get an error frame. Default 4096. */
    maxClientMessageBytes: finite().int().min(64).max(65536).default(4096),
    /** Clients connected at once; beyond it an upgrade answers 503. Default 64. */
    maxClients: finite().int().min(1).default(64),
    /** Clients of one address (an IPv6 /64) at once; beyond it a new one is closed with 4429. Behind a proxy every client has its address: raise it to maxClients there. Default 16. */
    maxClientsPerAddress: finite().int().min(1).default(16),
    /** New connections one address may open at once before handshakesPerAddressPerSecond paces it (a token bucket); beyond it an upgrade answers 429 with Retry-After. Behind a proxy every client has its address: raise both there. Default 32. */
    handshakeBurstPerAddress: finite().int().min(1).default(32),
    /** The same bucket's refill: new connections per second of one address, in the long run. Default 2. */
    handshakesPerAddressPerSecond: finite().min(0.01).max(10_000).default(2),
    /** A ping every this often; a client that has not answered the previous ping is terminated. Default 15 000 ms. */
    heartbeatMs: ms(100).default(15_000),
    /** Messages (and ping frames) one client may send per second; beyond it the client is closed with 1008. Default 100. */
    maxMessagesPerSecond: finite().int().min(1).default(100),
    /** Alerts' pictures held for /api/snapshot (an alert on the WebSocket carries its snapshot's URL, not its bytes); the oldest go beyond it. Default 32 MiB. */
    snapshotCacheBytes: finite().int().min(0).default(32 * 1024 * 1024),
    /** The latest alerts held for a client that resumes after one (subscribe's "after"). Default 2000. */
    replayAlerts: finite().int().min(1).default(2000),
    /** The same in bytes. Default 16 MiB. */
    replayAlertBytes: finite().int().min(64 * 1024).default(16 * 1024 * 1024),
  })
  .strict();

/** The annotated video: each source's frames with boxes, track ids, zones, lines and counts, encoded to MP4 off the frame path. */
export const AnnotateSinkSchema = z
  .object({
    /** Output MP4 per source: `{source}` is replaced by the source id; a path ending in `/` (or an existing folder) gets `<source>.mp4` inside; otherwise, with several sources, `-<source>` is added before the extension. Relative to the pipeline file. */
    path: filePath(),
    /** Frames wider than this are scaled down to it (height in proportion, both made even). Default 1280. */
    maxWidth: finite().int().min(16).max(8192).default(1280),
    /** Output frame rate; frames beyond it are skipped. Default: the source's own rate. */
    fps: frameRate().optional(),
    /** Frames per source copied and not yet encoded at most; a frame offered while that many wait is dropped and counted. Default 2. */
    queue: finite().int().min(1).max(64).default(2),
  })
  .strict();

export const SinksSchema = z
  .object({
    /** Write one JSON line per processed frame and per alert to this file ('-' for stdout); `status: true` adds source state changes. */
    jsonl: z.object({ path: filePath(), status: z.boolean().default(false) }).strict().optional(),
    kafka: KafkaSinkSchema.optional(),
    websocket: WebSocketSinkSchema.default({}),
    annotate: AnnotateSinkSchema.optional(),
  })
  .strict();

export type KafkaSinkConfig = z.infer<typeof KafkaSinkSchema>;
export type AnnotateSinkConfig = z.infer<typeof AnnotateSinkSchema>;
