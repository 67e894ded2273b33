import { constants } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { CompressionTypes, Kafka, logLevel, type Admin, type ITopicConfig, type Producer, type SASLOptions } from 'kafkajs';
import type { ConnectionOptions } from 'node:tls';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { makeDir, writeWithoutWaiting, type PipeWait, type WriteCutShort } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import { SampleWindow } from '../core/stats.js';
import { Deque } from '../flow/deque.js';
import { replayedAlertJson, withoutSnapshot } from '../analytics/published.js';
import type { AlertMessage, Message, MessageKind } from './message.js';
import type { Sink } from './sink.js';

/** What became of alerts and status messages handed to `onDelivered`. */
export type DeliveryOutcome = 'acked' | 'dead-lettered';

/**
 * A durable store that already holds every alert (the outbox): see KafkaSinkOptions.spill. `key`
 * names an alert in the store; `load` returns it, or undefined once it is gone from the store
 * (delivered, or dropped by the store's own bounds); `replace` rewrites an alert it still holds
 * as it is now to be sent (without its snapshot: see `snapshotUrl`), under the same key.
 */
export interface AlertStore {
  key: (m: Message) => string;
  load: (key: string) => { json: string; message: Message } | undefined;
  has: (key: string) => boolean;
  replace?: (m: Message, json: string) => void;
}

export interface KafkaSinkOptions {
  brokers: string[];
  clientId: string;
  topics: { detections: string; alerts: string; status: string };
  /** Create missing topics at start (needs the right ACLs); otherwise a missing topic is an error naming it. */
  createTopics: boolean;
  partitions: number;
  replicationFactor: number;
  compression: 'none' | 'gzip';
  /** How long a batch may wait for more messages before it is sent. */
  lingerMs: number;
  /** Messages per produce request at most. */
  batchSize: number;
  /**
   * Bytes per produce request at most, counted as key + value + 70 bytes per record (before
   * compression). Default 900000: below the broker's default `message.max.bytes` (1 MB).
   */
  maxBatchBytes?: number;
  /**
   * A record (key + value + 70 bytes) bigger than this is never sent: an alert with an embedded
   * snapshot goes without it (`snapshotOmitted`), anything still bigger is parked. Default 1000000.
   */
  maxMessageBytes?: number;
  /** Detection messages buffered before new ones are dropped (and counted). */
  bufferSize: number;
  /** Alert messages buffered while the broker is away; beyond it the oldest is dropped with an error log (or, with `spill`, new ones wait on disk). */
  alertBufferSize: number;
  /** The same bound in bytes of the alerts' JSON (embedded snapshots make alerts large). Default 64 MiB. */
  alertBufferBytes?: number;
  /**
   * A durable store that already holds every alert (the outbox). With it, alerts beyond the
   * memory bounds are not dropped: only their key is kept, and they are loaded back, in order,
   * as the buffer drains. `key` names an alert in the store; `load` returns it, or undefined
   * once it is gone from the store (delivered, or dropped by the store's own bounds).
   */
  spill?: AlertStore;
  /**
   * Where this argus's server answers an alert's picture while it holds it (the WebSocket hub's
   * `/api/snapshot?id=`), or undefined: named in an alert sent without its snapshot, too large with it.
   */
  snapshotUrl?: (alertId: string) => string | undefined;
  /**
   * Sources whose latest status message is kept while undelivered (a newer status of the same
   * source replaces the older one). Beyond it the oldest is dropped with an error log. Default 1000.
   */
  statusBufferSize?: number;
  /**
   * JSON lines file for parked messages (too large for the broker): `{topic,key,value,reason,at}`.
   * Created on the first one. Absent: parked messages are only logged and counted.
   */
  deadLetterPath?: string;
  /** The dead-letter file grows to this many bytes at most; later parked messages are only logged and counted. Default 100 MB. Not for a named pipe (or a device), which holds nothing. */
  deadLetterMaxBytes?: number;
  /** How long a dead-letter pipe whose reader takes nothing is waited for (writeWithoutWaiting; tests: a clock of their own). Default 5 s. */
  deadLetterWait?: PipeWait;
  /** Passed to kafkajs as is. */
  ssl?: boolean | ConnectionOptions;
  sasl?: SASLOptions;
  /** Time allowed to flush on close; `close()` returns within it (+ ~250 ms) whatever the broker does. */
  closeTimeoutMs: number;
  /** How long one request may go unanswered before kafkajs fails it (and the sink retries). Default 10000. */
  requestTimeoutMs?: number;
  /** `start()` waits this long for the topic check and the connection, then goes on without them. Default 3000. */
  startWaitMs?: number;
  log?: LogFn;
  /**
   * Called with the alert and status Message objects (those given to `publish`, never
   * detections; an alert sent without its snapshot as that copy, its id the same) of each
   * produce request the broker acknowledged ('acked', acks=all), and with
   * each message parked as too large ('dead-lettered'). Order is publish order within a source.
   * Not called for messages lost (buffer overflow, shutdown) nor for a status replaced by a
   * newer one of its source before it was sent, nor after `close()` has returned (a late ack
   * of a request close() gave up on). Exceptions it throws are logged and ignored.
   */
  onDelivered?: (messages: Message[], outcome: DeliveryOutcome) => void;
}

interface Pending {
  kind: MessageKind;
  topic: string;
  key: string;
  value: string;
  emitted: number;
  /** key + value bytes + record overhead; 0 until measured (off the publish path). */
  bytes: number;
  /** Alerts and status messages only (for `onDelivered` and the logs). */
  msg?: Message;
  /** Left undelivered by an earlier run (its outbox, replayed at start): `emitted` is that run's. */
  replayed?: boolean;
  /** An alert now without its snapshot (too large with it): the alert as published, parked as such if it is still too large. */
  unstripped?: { value: string; msg: Message };
}

export interface KafkaSinkStats {
  connected: boolean;
  sent: number;
  alertsSent: number;
  /** Source status changes delivered. */
  statusSent: number;
  /**
   * Of `alertsSent` and `statusSent`: messages an earlier run left undelivered in the outbox,
   * replayed at start. Their age (since that run emitted them: minutes, hours) is no publish
   * latency, and is not in `ackLatency` nor told to `onAck`.
   */
  alertsReplayed: number;
  statusReplayed: number;
  /** Detection messages dropped because the buffer was full or the broker refused them. */
  dropped: number;
  /** Alerts lost because the alert buffer overflowed or shutdown came first (each logged as an error). Alerts only. */
  alertsDropped: number;
  /** Alerts beyond the memory bounds left in the durable store (`spill`) and loaded back later: not lost. */
  alertsSpilled: number;
  /** Of those, waiting on disk now. */
  alertsOnDisk: number;
  buffered: number;
  /** Alerts waiting or in flight (status messages not included). */
  alertsBuffered: number;
  /** Status messages waiting or in flight (at most one waiting per source). */
  statusBuffered: number;
  /** Undelivered status messages replaced by a newer one of the same source (not lost: superseded). */
  statusSuperseded: number;
  /** Status messages lost (status buffer overflow, or undelivered at shutdown). */
  statusDropped: number;
  /** Alerts and status messages too large for the broker, taken out of the queue (logged as errors, written to the dead-letter file). */
  parked: number;
  /** Of `parked`, the alerts: never delivered to Kafka (in the dead-letter file, or kept in the outbox where that file could not take them). */
  alertsParked: number;
  /** Parked messages written to the dead-letter file. */
  deadLettered: number;
  /**
   * Alerts too large for the broker with their embedded snapshot that it acknowledged without it
   * (`snapshotOmitted`; logged, at most once a minute). Counted at the ack: one refused without
   * it too is parked (`parked`), never both.
   */
  snapshotsLeftOut: number;
  failures: number;
  lastError?: string;
}

/** The kinds of message in the order their requests go: one kind a request (see takeBatch). */
const KIND_ORDER: readonly Pending['kind'][] = ['alert', 'status', 'detections'];

/** Per record overhead counted against `maxBatchBytes` (record header, varints, batch share). */
const RECORD_OVERHEAD = 70;
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
/** Distinct failure reasons logged per outage at most. */
const MAX_REASONS_LOGGED = 20;
/** Acks kept for a latency listener not yet set (KafkaSink.onAck): the first ones of a run, before the metrics start. */
const EARLY_ACKS_MAX = 100_000;

type KafkaErrorLike = { message?: string; name?: string; type?: string; cause?: unknown };

/** An error and the ones it wraps (`cause`), at most 5 deep. */
function* causes(e: unknown): Generator<KafkaErrorLike> {
  let x = e as KafkaErrorLike | undefined;
  for (let i = 0; x && i < 5; i++, x = x.cause as KafkaErrorLike | undefined) yield x;
}

/** The kafkajs error type when the broker refused a request as too large (the error or one it wraps). */
export function tooLargeType(e: unknown): string | undefined {
  for (const x of causes(e)) {
    if (x.type && TOO_LARGE.has(x.type)) return x.type;
    if (typeof x.message === 'string' && /larger than the max message size|message batch larger than/.test(x.message)) return 'MESSAGE_TOO_LARGE';
  }
  return undefined;
}

/** After the topics could not be checked or created, the next try waits this long, ms. */
const TOPICS_RETRY_MS = 5000;

/** The error (or one it wraps) is about the connection: refused, closed, timed out, or kafkajs's "Broker not connected". */
export function connectionError(e: unknown): boolean {
  for (const x of causes(e)) {
    if (x.name && /^KafkaJS(Connection|ConnectionClosed|RequestTimeout)Error$|^KafkaJSBrokerNotFound$/.test(x.name)) return true;
    if (typeof x.message === 'string' && /Broker not connected|Connection (error|timeout)|timed out/i.test(x.message)) return true;
  }
  return false;
}

/** A fresh producer after this many failed connections in a row (about 10 s of retries at the backoff's pace); a topic's own error (deleted, not authorised) is not one. */
const RESET_AFTER_FAILURES = 5;

/** Errors after which the producer's idempotence state is out of step with the broker's. */
const RESET_PRODUCER = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING']);

function errorType(e: unknown): string | undefined {
  for (const x of causes(e)) if (x.type) return x.type;
  return undefined;
}

/** Whether messages of `part` may go to more than one partition (another topic, or another key). */
function spansPartitions(part: Pending[]): boolean {
  for (const p of part) if (p.topic !== part[0].topic || p.key !== part[0].key) return true;
  return false;
}

/** How long createTopicsReady waits for every partition of the topics it made to have a leader, ms. */
export const TOPICS_READY_MS = 30_000;

/**
 * Creates `topics` and waits until each partition of each has a leader (`withinMs` at most; then
 * the last error, or one saying so, is thrown). kafkajs's own `waitForLeaders` retries only
 * LEADER_NOT_AVAILABLE: a broker whose metadata had not yet caught up with the creation answered
 * UNKNOWN_TOPIC_OR_PARTITION ("This server does not host this topic-partition"; kafkajs issues
 * #1222 and #815), and createTopics threw it: a worker starting on a loaded cluster, or the sink
 * making its topics, failed with the topic just made (a clean-clone suite run beside two busy
 * loops failed so). Every error kafkajs marks retriable is retried here, 100 ms apart; any other
 * is thrown at once. `alreadyMade`: a topic another client made at the same moment
 * (TOPIC_ALREADY_EXISTS) is taken as made, and waited for as ours.
 */
export async function createTopicsReady(admin: Admin, topics: ITopicConfig[], o: { withinMs?: number; alreadyMade?: boolean } = {}): Promise<void> {
  try {
    await admin.createTopics({ topics, waitForLeaders: false });
  } catch (e) {
    if (!o.alreadyMade || !(/exists/i.test(String((e as Error)?.message)) || String(errorType(e)).includes('TOPIC_ALREADY_EXISTS'))) throw e;
  }
  const names = topics.map((t) => t.topic);
  const end = performance.now() + (o.withinMs ?? TOPICS_READY_MS);
  for (;;) {
    let last: unknown;
    try {
      const { topics: meta } = await admin.fetchTopicMetadata({ topics: names });
      if (meta.length === names.length && meta.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (e) {
      if (!retriable(e)) throw e;
      last = e;
    }
    if (performance.now() > end) throw last ?? new Error(`topics ${names.join(', ')}: no leader for every partition within ${Math.round((o.withinMs ?? TOPICS_READY_MS) / 1000)} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Whether kafkajs marks the error (or one it wraps) retriable. */
function retriable(e: unknown): boolean {
  for (const x of causes(e)) if ((x as { retriable?: boolean }).retriable === true) return true;
  return false;
}

/** A topic argus asks for with a number of partitions: its name, that number, and the setting that asks for it. */
export interface WantedPartitions {
  topic: string;
  partitions: number;
  /** The setting of the count (`sinks.kafka.partitions`, `cluster.slots`). */
  setting: string;
  /** What fewer partitions cost, said after the counts. */
  cost: string;
}

/**
 * The topics of `wanted` that exist with fewer partitions than argus asks for, each said (topic,
 * its count, the setting's): a topic keeps the count it was made with, by hand or by a broker that
 * creates the topics it is asked for (auto.create.topics.enable, num.partitions: 1 by default), so
 * argus's own count was never applied and nothing said so. Only topics that exist are asked about
 * (their metadata: a missing one is never created by the asking). Throws what the admin throws.
 */
export async function fewerPartitions(admin: Admin, wanted: readonly WantedPartitions[]): Promise<{ topic: string; partitions: number; wanted: number; message: string }[]> {
  const existing = new Set(await admin.listTopics());
  const there = wanted.filter((w, i) => existing.has(w.topic) && wanted.findIndex((x) => x.topic === w.topic) === i);
  if (there.length === 0) return [];
  const { topics } = await admin.fetchTopicMetadata({ topics: there.map((w) => w.topic) });
  const counts = new Map(topics.map((t) => [t.name, t.partitions.length]));
  return there.flatMap((w) => {
    const n = counts.get(w.topic);
    if (n === undefined || n >= w.partitions) return [];
    const message = `topic "${w.topic}" has ${n} partition${n === 1 ? '' : 's'}, fewer than the ${w.partitions} of ${w.setting}: it existed before (made by hand, or by a broker that creates the topics it is asked for, with its num.partitions) and keeps its count; ${w.cost}`;
    return [{ topic: w.topic, partitions: n, wanted: w.partitions, message }];
  });
}

/** What fewer partitions of a topic of the Kafka sink cost (fewerPartitions' `cost`). */
export const SINK_PARTITIONS_COST = 'its consumers in one group read it with no more parallelism than its partitions (kafka-topics.sh --alter --topic … --partitions N adds them; a source\'s later records may then go to another partition than its earlier ones)';

/** The Kafka sink's topics with the partitions it asks for (fewerPartitions). */
export function sinkWantedPartitions(o: { topics: { detections: string; alerts: string; status: string }; partitions: number }): WantedPartitions[] {
  return [o.topics.detections, o.topics.alerts, o.topics.status].map((topic) => ({ topic, partitions: o.partitions, setting: 'sinks.kafka.partitions', cost: SINK_PARTITIONS_COST }));
}

/** An error as logged: its message, and the kafkajs error type when there is one. */
export function describeKafkaError(e: unknown): string {
  const message = (e as KafkaErrorLike | undefined)?.message ?? String(e);
  const type = errorType(e);
  return type ? `${message} [${type}]` : message;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The last byte of the regular file at `path` (undefined if it cannot be read). */
async function lastByte(path: string): Promise<number | undefined> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined);
  if (!fh) return undefined;
  try {
    const { size } = await fh.stat();
    if (size === 0) return undefined;
    const b = Buffer.alloc(1);
    const { bytesRead } = await fh.read(b, 0, 1, size - 1);
    return bytesRead === 1 ? b[0] : undefined;
  } catch {
    return undefined;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Waits for `p` at most `ms`: true if it settled in time. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => (t = setTimeout(() => r(false), Math.max(0, ms))));
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(t);
  }
}

/**
 * Publishes to Kafka without ever blocking the frame path: messages go into bounded buffers
 * and one batch at a time (cut by count and by bytes) is sent with an idempotent producer
 * (acks=all), keyed by source id so each camera's order is kept. While the broker is away,
 * detections are dropped and counted, alerts wait (bounded) and each source's latest status
 * waits, and they are retried until it returns. A batch the broker refuses as too large is
 * split; an alert too large on its own with an embedded snapshot is sent without it, in its place;
 * a message too large without it is parked (dead-letter file) and never blocks the queue.
 */
export class KafkaSink implements Sink {
  readonly name = 'kafka';
  private readonly kafka: Kafka;
  private producer: Producer;
  private producerResets = 0;
  /** The topics were found (or created) on the broker (see ensureTopics). */
  private topicsChecked = false;
  /** When ensureTopics may be tried again after it failed (the clock of `now()`). */
  private topicsRetryAt = 0;
  /** The topics check's error last said (not said again while it stays the same). */
  private topicsSaid: string | undefined;
  private topicsChecking: Promise<void> | undefined;
  private connecting: Promise<void> | undefined;
  /** While the start's topic check and connection run (maybe in the background, past startWaitMs). */
  private opening = false;
  /** Requests that failed since the last one that went through (see RESET_AFTER_FAILURES). */
  private failuresInARow = 0;
  /** The kind of the last request that failed: it goes after the others (see takeBatch). */
  private lastFailedKind: Pending['kind'] | undefined;
  /** Kinds whose last request failed: the outage (its reasons logged once, "broker back") lasts until each has gone through, or has nothing left to send. */
  private readonly failingKinds = new Set<Pending['kind']>();
  /** A request failed since the outage last ended (cleared when failingKinds empties after a request went through). */
  private outage = false;
  private readonly detections = new Deque<Pending>(1024);
  private readonly alerts = new Deque<Pending>(64);
  /** Characters of the alerts' JSON in `alerts` (the memory bound; see heldChars). */
  private alertChars = 0;
  private readonly alertBufferBytes: number;
  /** Keys of alerts left in the durable store, oldest first (see `spill`). */
  private readonly spilled = new Deque<string>(64);
  /** Of those, the replayed ones (`Pending.replayed`), which stay so when loaded back. */
  private readonly spilledReplays = new Set<string>();
  private spillLogged = false;
  /** Latest undelivered status per source, in order of first arrival. */
  private statuses = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  /** The batch being sent (split in parts when refused as too large), for shutdown accounting and the memory bounds (with `retry`). */
  private inFlight: Pending[][] = [];
  /**
   * The alerts and statuses of the request that failed, in its parts, to be sent again as they
   * were: kafkajs rolls back the sequence numbers of a failed request, so the broker takes a part
   * it had written (its answer lost: a timeout, a connection cut) for the duplicate it is only if
   * it comes again unchanged. Put back in the queue, they went out again with the alerts
   * published meanwhile, that request failed with OUT_OF_ORDER_SEQUENCE_NUMBER, the producer was
   * replaced, and the alerts written the first time were written twice. One for each kind (a
   * status request may fail while an alert request waits for its turn again). In flight still:
   * in the memory bounds and the shutdown's count.
   */
  private readonly retry = new Map<Pending['kind'], Pending[][]>();
  private inFlightAlerts = 0;
  private inFlightAlertChars = 0;
  private inFlightStatus = 0;
  private backoffMs = 0;
  private stopping = false;
  private closing: Promise<void> | undefined;
  private closed = false;
  private producerConnected = false;
  /** Failure reasons logged since publishing last worked (each is logged once). */
  private readonly reasonsLogged = new Set<string>();
  private splits = 0;
  private splitLoggedAt = -Infinity;
  private deadLetterSize: number | undefined;
  /** The dead-letter path is a named pipe (or a device: /dev/stderr): it holds nothing, so deadLetterMaxBytes does not apply. */
  private deadLetterPipe = false;
  private deadLetterFullLogged = false;
  private deadLetterErrorLogged = false;
  /** The dead-letter file's folder was synced (its entry for the file on disk). */
  private deadLetterDirSynced = false;
  /** The dead-letter file's last line was cut short (its end not written): the next starts on a line of its own. */
  private deadLetterTorn = false;
  private readonly maxBatchBytes: number;
  private readonly maxMessageBytes: number;
  private readonly statusBufferSize: number;
  private readonly deadLetterMaxBytes: number;
  readonly stats: KafkaSinkStats = {
    connected: false,
    sent: 0,
    alertsSent: 0,
    statusSent: 0,
    alertsReplayed: 0,
    statusReplayed: 0,
    dropped: 0,
    alertsDropped: 0,
    alertsSpilled: 0,
    alertsOnDisk: 0,
    buffered: 0,
    alertsBuffered: 0,
    statusBuffered: 0,
    statusSuperseded: 0,
    statusDropped: 0,
    parked: 0,
    alertsParked: 0,
    deadLettered: 0,
    snapshotsLeftOut: 0,
    failures: 0,
  };
  /** emitted → broker ack, ms (recent messages of this run; replayed ones are not: `stats.alertsReplayed`). */
  readonly ackLatency = new SampleWindow(4096);
  /**
   * Told each ack's latency (emitted → broker ack, ms) as it comes: the metrics' histogram. (They
   * were kept for the next scrape, up to 100 000 and then no more: unscraped for that long, the
   * histogram's count fell behind argus_kafka_messages_total.) Not told of messages replayed from
   * an earlier run's outbox: their latency counted from that run's `emitted` (one replay after a
   * night's stop put hours into the histogram); they are counted apart (`stats.alertsReplayed`).
   */
  set onAck(listener: ((ms: number) => void) | undefined) {
    this.ackListener = listener;
    // Acks that came before the listener (acked while the HTTP server and the metrics were still
    // starting) are told to it now: argus_kafka_messages_total counts them, and the histogram's
    // count would otherwise fall behind it from the start.
    const early = this.earlyAcks;
    this.earlyAcks = undefined;
    if (listener) for (const ms of early ?? []) listener(ms);
  }
  private ackListener: ((ms: number) => void) | undefined;
  /**
   * Told each alert's latency at the broker's ack: ms from its frame's `produced` stamp, through
   * its snapshot, the outbox and any outage of the broker (alerts of this run only: a replayed
   * one's frame was an earlier run's). The metrics' `argus_alert_latency_seconds{to="kafka"}`;
   * the publish latency above counts from `emitted`, and mixes alerts with the detections.
   */
  onAlertAck: ((ms: number) => void) | undefined;
  /** Acks before any listener was set (bounded: a pipeline without metrics never sets one). */
  private earlyAcks: number[] | undefined = [];
  private readonly log: LogFn;

  constructor(private readonly o: KafkaSinkOptions) {
    this.log = o.log ?? (() => {});
    this.maxBatchBytes = o.maxBatchBytes ?? 900_000;
    this.maxMessageBytes = o.maxMessageBytes ?? 1_000_000;
    this.statusBufferSize = o.statusBufferSize ?? 1000;
    this.alertBufferBytes = o.alertBufferBytes ?? 64 * 1024 * 1024;
    this.deadLetterMaxBytes = o.deadLetterMaxBytes ?? 100 * 1024 * 1024;
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      ssl: o.ssl,
      sasl: o.sasl,
      connectionTimeout: 3000,
      requestTimeout: o.requestTimeoutMs ?? 10_000,
      logLevel: logLevel.NOTHING,
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    this.producer = this.makeProducer();
  }

  private makeProducer(): Producer {
    const p = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 } });
    p.on(p.events.DISCONNECT, () => {
      if (this.producer === p) this.producerConnected = false;
    });
    return p;
  }

  /**
   * A fresh producer (new producer id, sequence numbers from 0). Needed when the old one's
   * sequence numbers no longer match the broker's: kafkajs rolls back the sequence numbers of
   * every partition of a failed produce request, also of partitions the broker did write, and
   * the split or regrouped retry then fails with OUT_OF_ORDER_SEQUENCE_NUMBER for ever. Messages
   * of those partitions may then be written twice (at least once).
   */
  private resetProducer(why: string): void {
    const old = this.producer;
    this.producer = this.makeProducer();
    this.producerConnected = false;
    this.producerResets++;
    if (this.producerResets <= 3 || this.producerResets % 100 === 0) this.log(`kafka: starting a new producer (${why})`, { resets: this.producerResets }, 'warn');
    void within(old.disconnect().catch(() => undefined), 5000);
  }

  /**
   * Checks (or creates) the topics and connects, waiting for that at most `startWaitMs` (3 s).
   * A missing topic with `createTopics: false` found in that time is an error; an unreachable
   * broker is not: the sink starts and keeps retrying. Nor is a broker that does not answer (a
   * frozen broker, a firewall dropping packets): the check and the connection go on in the
   * background, while the cameras run and messages wait in the buffers (alerts in the outbox).
   * A kafkajs request waits 10 s for its answer, and the start used to wait for two of them.
   */
  async start(): Promise<void> {
    this.opening = true;
    const opening = this.open().finally(() => (this.opening = false));
    const wait = this.o.startWaitMs ?? 3000;
    if (await within(opening, wait)) return opening;
    this.log(`kafka: no answer from ${this.o.brokers.join(',')} within ${wait / 1000} s; starting without it: messages wait in the buffers (alerts in the outbox) until it answers`, { brokers: this.o.brokers }, 'warn');
    opening.catch((e: unknown) => this.log((e as Error).message, { code: (e as { code?: string }).code }, 'error'));
  }

  private async open(): Promise<void> {
    try {
      await this.checkTopics();
    } catch (e) {
      if (e instanceof ArgusError) throw e; // a missing topic with createTopics false
      // Not reachable, or a topic could not be created: tried again before a request after
      // TOPICS_RETRY_MS; the producer connects and publishes meanwhile.
      this.topicsRetryAt = now() + TOPICS_RETRY_MS;
      this.log(`kafka: the topics could not be checked or created (${describeKafkaError(e)}); trying again in ${TOPICS_RETRY_MS / 1000} s`, {}, 'warn');
    }
    try {
      await this.connect();
    } catch (e) {
      if (e instanceof ArgusError) throw e;
      this.stats.failures++;
      this.stats.lastError = describeKafkaError(e);
      this.reasonsLogged.add(`0:${this.stats.lastError}`);
      this.lastReason = this.stats.lastError;
      this.log(`kafka: broker not reachable at start (${this.stats.lastError}); buffering alerts and retrying`, { brokers: this.o.brokers }, 'warn');
    }
  }

  /** One topic check at a time: the start's, still running in the background, and a send's are the same. */
  private checkTopics(): Promise<void> {
    this.topicsChecking ??= this.ensureTopics().finally(() => (this.topicsChecking = undefined));
    return this.topicsChecking;
  }

  /**
   * Checks that the topics exist and creates the missing ones (`createTopics`), once: at start,
   * or before the first request when the broker was not reachable then (its topics were never
   * created, and every request failed with UNKNOWN_TOPIC_OR_PARTITION for good). Missing topics
   * with `createTopics: false` are an error (at start, thrown; later, logged, and the requests
   * fail and are retried until someone creates them).
   */
  private async ensureTopics(): Promise<void> {
    let admin: Admin | undefined;
    try {
      admin = this.kafka.admin({ retry: { retries: 1 } });
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      // Each topic once: two kinds may share one (kafkajs refuses a topic named twice in a
      // create request, and a shared topic was never created: every request to it failed).
      const wanted = [...new Set([this.o.topics.detections, this.o.topics.alerts, this.o.topics.status])];
      const missing = wanted.filter((t) => !existing.has(t));
      if (missing.length > 0) {
        if (!this.o.createTopics) {
          this.topicsChecked = true;
          throw new ArgusError(
            ErrorCodes.SINK_TOPIC,
            `kafka: topic${missing.length > 1 ? 's' : ''} ${missing.map((t) => `"${t}"`).join(', ')} do${missing.length > 1 ? '' : 'es'} not exist on ${this.o.brokers.join(',')} and sinks.kafka.createTopics is false`,
          );
        }
        // The status topic compacted: each camera's latest state stays for a consumer that starts
        // late (it had the broker's delete policy, so after the retention a camera had no state
        // until its next change). Not when it is also the detections' or the alerts' topic. The
        // others with the delete policy, said: with the broker's default, a broker whose
        // log.cleanup.policy is compact got an alerts topic that keeps only each camera's latest
        // alert, made so by argus (and said at once as an error by the check below).
        const { detections, alerts, status } = this.o.topics;
        const policy = (topic: string) => (topic === status && status !== detections && status !== alerts ? 'compact' : 'delete');
        await createTopicsReady(
          admin,
          missing.map((topic) => ({ topic, numPartitions: this.o.partitions, replicationFactor: this.o.replicationFactor, configEntries: [{ name: 'cleanup.policy', value: policy(topic) }] })),
        );
        this.log(`kafka: created topics ${missing.join(', ')}`);
      }
      this.topicsChecked = true;
      // In the background, its admin connection let go when it is answered: it only informs, and
      // awaited here a DescribeConfigs answered late (a slow or unreachable controller: up to two
      // request timeouts) held the start for startWaitMs with a false "no answer from the broker",
      // and the producer's connection until it came.
      // (close() waits for it within its deadline.)
      if (!this.keepsChecking) {
        const kept = admin;
        admin = undefined;
        const made = new Set(missing);
        this.keepsChecking = Promise.all([this.checkAlertsTopicKeeps(kept), this.checkPartitions(kept, made)]).then(() => undefined).finally(() => {
          this.keepsChecking = undefined;
          return kept.disconnect().catch(() => undefined);
        });
      }
    } finally {
      await admin?.disconnect().catch(() => undefined);
    }
  }

  /**
   * Says (an error, VAP_ERR_ALERT_UNDELIVERED) when the alerts topic is compacted: the broker then
   * keeps only the latest alert of each camera (the key), and a consumer that reads after the
   * cleaner ran never sees the others, with no count or word of it anywhere. And (a warning) when
   * the status topic, a topic of its own, is not compacted: one made before argus ran (a consumer
   * that subscribed first, on a broker that creates topics it is asked for, got it with the
   * broker's defaults), or by an older release, loses each camera's state after the retention,
   * and a consumer that starts later sees none, unsaid. Nothing is said when the broker does not
   * tell (no DescribeConfigs right).
   */
  private async checkAlertsTopicKeeps(admin: Admin): Promise<void> {
    const { alerts: topic, status, detections } = this.o.topics;
    const ownStatus = status !== topic && status !== detections ? status : undefined;
    const names: string[] = [];
    if (this.compactedSaid !== topic) names.push(topic);
    if (ownStatus && this.uncompactedSaid !== ownStatus) names.push(ownStatus);
    if (names.length === 0) return;
    // One request a topic: kafkajs throws a request any of whose resources has an error (no
    // DescribeConfigs right on it, an ACL per topic), the others' answers with it; asked together,
    // a status topic argus may not describe kept the compacted alerts topic's error unsaid.
    const policies = new Map(
      await Promise.all(
        names.map(async (name) => {
          try {
            // 2: kafkajs's ConfigResourceTypes.TOPIC (its ES module build does not export it by name).
            const r = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name, configNames: ['cleanup.policy'] }] });
            return [name, r.resources[0]?.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue] as const;
          } catch {
            return [name, undefined] as const;
          }
        }),
      ),
    );
    if (this.closed) return;
    const policy = policies.get(topic);
    if (this.compactedSaid !== topic && policy?.split(',').includes('compact')) {
      this.compactedSaid = topic;
      this.log(
        `kafka: the alerts topic "${topic}" is compacted (cleanup.policy ${policy}): the broker keeps only the latest alert of each camera, and a consumer that reads later never gets the others; set its cleanup.policy to delete, or name another topic in sinks.kafka.topics.alerts`,
        { topic, cleanupPolicy: policy, code: ErrorCodes.ALERT_UNDELIVERED },
        'error',
      );
    }
    const statusPolicy = ownStatus ? policies.get(ownStatus) : undefined;
    if (ownStatus && statusPolicy !== undefined && !statusPolicy.split(',').includes('compact')) {
      this.uncompactedSaid = ownStatus;
      this.log(
        `kafka: the status topic "${ownStatus}" is not compacted (cleanup.policy ${statusPolicy}; it existed before argus made it): after the retention a camera's latest state is gone from it, and a consumer that starts later sees no state for that camera until its next change; kafka-configs.sh --alter --entity-type topics --entity-name ${ownStatus} --add-config cleanup.policy=compact changes it`,
        { topic: ownStatus, cleanupPolicy: statusPolicy },
        'warn',
      );
    }
  }
  /**
   * Says (a warning, once a topic) a topic of this sink that existed with fewer partitions than
   * `partitions` (fewerPartitions): argus asked for them only when it made the topic. Nothing is
   * said when the broker does not answer (the sink goes on as before).
   */
  private async checkPartitions(admin: Admin, made: ReadonlySet<string>): Promise<void> {
    const wanted = sinkWantedPartitions(this.o).filter((w) => !made.has(w.topic) && !this.partitionsSaid.has(w.topic));
    if (wanted.length === 0) return;
    const fewer = await fewerPartitions(admin, wanted).catch(() => []);
    if (this.closed) return;
    for (const f of fewer) {
      this.partitionsSaid.add(f.topic);
      this.log(`kafka: ${f.message}`, { topic: f.topic, partitions: f.partitions, wanted: f.wanted }, 'warn');
    }
  }
  /** Topics said to have fewer partitions than asked for. */
  private readonly partitionsSaid = new Set<string>();
  /** The status topic said not to be compacted (once a sink). */
  private uncompactedSaid: string | undefined;
  private compactedSaid: string | undefined;
  /** The check of the alerts topic's cleanup policy, while it waits for its answer (see ensureTopics). */
  private keepsChecking: Promise<void> | undefined;

  /**
   * O(1): no parsing or serialising here (the json is given); sizes are measured when a batch is
   * cut. `replayed`: an alert or status an earlier run left in the outbox (counted apart: see
   * `stats.alertsReplayed`).
   */
  publish(kind: MessageKind, source: string, json: string, msg: Message, replayed = false): void {
    if (this.closed) {
      this.tooLate(kind, source, msg);
      return;
    }
    if (kind === 'detections') {
      if (this.detections.length >= this.o.bufferSize) {
        this.stats.dropped++;
        return;
      }
      this.detections.push({ kind, topic: this.o.topics.detections, key: source, value: json, emitted: msg.stamps?.emitted ?? now(), bytes: 0 });
    } else if (kind === 'status') {
      const p: Pending = { kind, topic: this.o.topics.status, key: source, value: json, emitted: msg.type === 'status' ? msg.published : now(), bytes: 0, msg, replayed };
      if (this.statuses.has(source)) {
        // Only the latest state of a source matters while it is undelivered.
        this.statuses.set(source, p);
        this.stats.statusSuperseded++;
      } else {
        if (this.statuses.size >= this.statusBufferSize) {
          const oldest = this.statuses.keys().next().value!;
          this.statuses.delete(oldest);
          this.stats.statusDropped++;
          this.log(`kafka: status buffer full (${this.statusBufferSize} sources); oldest status lost`, { source: oldest }, 'error');
        }
        this.statuses.set(source, p);
      }
    } else {
      const full = () => this.alerts.length >= this.o.alertBufferSize || (this.alerts.length > 0 && this.alertChars + json.length > this.alertBufferBytes);
      // With the outbox, the batch in flight counts against the memory bound too (and a request
      // that failed, kept in memory to be sent again as it was: see `retry`): those published
      // meanwhile had filled the buffer (4 alerts in memory against a bound of 2 under load).
      // Without it, the batch in flight (or failed, waiting) comes on top: counting it would lose
      // queued alerts that had room before.
      const heldFull = () =>
        this.alerts.length + this.inFlightAlerts >= this.o.alertBufferSize ||
        (this.alerts.length + this.inFlightAlerts > 0 && this.alertChars + this.inFlightAlertChars + json.length > this.alertBufferBytes);
      if (this.o.spill && (this.spilled.length > 0 || heldFull())) {
        // Memory is full: the alert is already on disk; keep only its key, load it back in order.
        const key = this.o.spill.key(msg);
        this.spilled.push(key);
        if (replayed) this.spilledReplays.add(key);
        // The store drops its oldest alerts past its bounds (logged there): their keys, the oldest
        // here, go too, so the list is no longer than what the store holds (it grew by every
        // alert of an outage: 199 900 keys, 53 MiB, for 1869 alerts kept).
        while (this.spilled.length > 0 && !this.o.spill.has(this.spilled.peek()!)) this.spilledReplays.delete(this.spilled.shift()!);
        this.stats.alertsSpilled++;
        this.stats.alertsOnDisk = this.spilled.length;
        if (!this.spillLogged) {
          this.spillLogged = true;
          this.log(`kafka: alert buffer full (${this.alerts.length + this.inFlightAlerts} alerts, ${Math.round((this.alertChars + this.inFlightAlertChars) / 1024)} KiB); further alerts wait in the outbox on disk and are sent in order as it drains`, {}, 'warn');
        }
      } else {
        while (full()) {
          const lost = this.alerts.shift()!;
          this.alertChars -= heldChars(lost);
          this.stats.alertsDropped++;
          this.log(`kafka: alert buffer full (${this.o.alertBufferSize} alerts or ${this.alertBufferBytes} bytes); oldest alert lost`, { source: lost.key, alertId: alertId(lost), code: ErrorCodes.ALERT_UNDELIVERED }, 'error');
        }
        this.alerts.push({ kind, topic: this.o.topics.alerts, key: source, value: json, emitted: msg.stamps?.emitted ?? now(), bytes: 0, msg, replayed });
        this.alertChars += json.length;
      }
    }
    this.updateBuffered();
    this.schedule();
  }

  /**
   * A message given after close() returned: never sent. Counted as lost as at shutdown (an alert
   * the outbox holds is kept there for the next start, said), and an alert said. (It vanished:
   * no count, no log.)
   */
  private tooLate(kind: MessageKind, source: string, msg: Message): void {
    if (kind === 'detections') this.stats.dropped++;
    else if (kind === 'status') this.stats.statusDropped++;
    else {
      const id = msg.type === 'alert' ? msg.alert.id : undefined;
      const kept = this.o.spill?.has(this.o.spill.key(msg)) ?? false;
      if (!kept) this.stats.alertsDropped++;
      this.log(
        `kafka: alert ${id ?? '?'} from ${source} came after the sink closed; ${kept ? 'it stays in the outbox and is sent on the next start' : 'not delivered'}`,
        { source, alertId: id, code: ErrorCodes.ALERT_UNDELIVERED },
        kept ? 'warn' : 'error',
      );
    }
  }

  private schedule(): void {
    if (this.sending || this.timer || this.stopping) return;
    const n = this.pending;
    if (n === 0) return;
    const delay = this.backoffMs > 0 ? this.backoffMs : n >= this.o.batchSize ? 0 : this.o.lingerMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.startSend();
    }, delay);
  }

  private startSend(): Promise<void> {
    const s = this.sendOnce()
      .catch((e: unknown) => this.log(`kafka: unexpected error while sending (${(e as Error)?.message ?? e})`, {}, 'error'))
      .finally(() => {
      if (this.sending === s) this.sending = undefined;
      this.schedule();
    });
    this.sending = s;
    return s;
  }

  /** One connection attempt at a time (the start's, still running in the background, and a send's are the same). */
  private connect(): Promise<void> {
    this.connecting ??= this.connectOnce().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectOnce(): Promise<void> {
    if (!this.topicsChecked && now() >= this.topicsRetryAt) {
      // Never in the way of the producer: a topic that cannot be created (a missing ACL, too few
      // brokers for the replication factor) must not hold back the topics that exist.
      try {
        await this.checkTopics();
        this.topicsSaid = undefined; // the topics are there: a later failure is said again
      } catch (e) {
        this.topicsRetryAt = now() + TOPICS_RETRY_MS;
        // The start's check, shared, is logged by the start.
        const said = e instanceof ArgusError ? e.message : `kafka: the topics could not be checked or created (${describeKafkaError(e)}); publishing anyway, trying again in ${TOPICS_RETRY_MS / 1000} s`;
        // Once while it stays the same (it was said every TOPICS_RETRY_MS for as long as a topic was missing).
        if (!this.opening && said !== this.topicsSaid) this.log(said, { code: (e as { code?: string }).code }, 'error');
        this.topicsSaid = said;
      }
    }
    if (this.producerConnected) return;
    await this.producer.connect();
    this.producerConnected = true;
    if (!this.stats.connected) {
      this.stats.connected = true;
      this.log('kafka: connected', { brokers: this.o.brokers });
    }
  }

  private measure(p: Pending): number {
    if (p.bytes === 0) p.bytes = this.recordBytes(p.key, p.value);
    return p.bytes;
  }

  private recordBytes(key: string, value: string): number {
    return Buffer.byteLength(key) + Buffer.byteLength(value) + RECORD_OVERHEAD;
  }

  /**
   * An alert with an embedded snapshot, as it is without it (`snapshotOmitted`: too-large, why,
   * and where this argus's server holds the picture); undefined for any other message (nothing
   * to leave out: it is parked).
   */
  private withoutSnapshot(p: Pending, why: string): { value: string; msg: AlertMessage } | undefined {
    if (p.kind !== 'alert' || p.unstripped) return undefined;
    // From its JSON: an alert replayed from the outbox, or loaded back from it, has only its id
    // and source in `msg` (recordMessage), and was parked picture and all.
    let m: AlertMessage;
    try {
      m = JSON.parse(p.value) as AlertMessage;
    } catch {
      return undefined;
    }
    if (m?.type !== 'alert' || typeof m.alert?.snapshot?.data !== 'string') return undefined;
    // An earlier run's (replayed from the outbox): this process does not hold its picture, and a
    // URL by its id could serve another alert's (a program that gives its run again raises the
    // same ids).
    const url = p.replayed ? undefined : this.o.snapshotUrl?.(m.alert.id);
    const msg: AlertMessage = { ...m, alert: withoutSnapshot(m.alert, { reason: 'too-large', detail: why, ...(url ? { url } : {}) }) };
    return { value: JSON.stringify(msg), msg };
  }

  /**
   * The alert `p` becomes its form `without` its snapshot, in its place in the queue (its source's
   * order kept), and the outbox's record of it with it: a replay sends what Kafka took, and the
   * ack (by id) forgets the one record. Logged at most once a minute, with how many.
   */
  private leaveOutSnapshot(p: Pending, without: { value: string; msg: AlertMessage }): void {
    p.unstripped = { value: p.value, msg: p.msg! };
    p.value = without.value;
    p.msg = without.msg;
    p.bytes = 0;
    this.o.spill?.replace?.(without.msg, without.value);
    this.leftOutSince++;
    const t = now();
    if (t - this.leftOutLoggedAt < 60_000) return;
    this.log(
      `kafka: alert ${without.msg.alert.id} from ${p.key} is too large for the broker with its snapshot (${without.msg.alert.snapshotOmitted?.detail}); sent without it (snapshotOmitted)${this.leftOutSince > 1 ? `; ${this.leftOutSince} alerts so since the last such log` : ''}`,
      { source: p.key, alertId: without.msg.alert.id, url: without.msg.alert.snapshotOmitted?.url },
      'warn',
    );
    this.leftOutLoggedAt = t;
    this.leftOutSince = 0;
  }
  private leftOutSince = 0;
  private leftOutLoggedAt = -Infinity;

  /**
   * Cuts the next batch, of one kind of message: alerts, else status messages, else detections,
   * up to `batchSize` messages and `maxBatchBytes` bytes (a single message bigger than that goes
   * alone). One kind a request, so a topic the broker refuses (deleted, not authorised) holds up
   * only its own messages: with all three in one request, a deleted detections topic kept every
   * alert back (4 of 44 sent in 40 s). After a failed request its kind goes last. A message over
   * `maxMessageBytes` is parked on the way.
   */
  private takeBatch(): Pending[][] {
    const batch: Pending[] = [];
    let bytes = 0;
    // 'take' | 'skip' (parked or dropped) | 'full'
    const admit = (p: Pending): 'take' | 'skip' | 'full' => {
      let n = this.measure(p);
      if (n > this.maxMessageBytes) {
        // An alert goes without its picture (in its place) if that is small enough; else parked whole.
        const why = `${n} bytes > maxMessageBytes ${this.maxMessageBytes}`;
        const without = this.withoutSnapshot(p, why);
        if (!without || this.recordBytes(p.key, without.value) > this.maxMessageBytes) {
          this.refuse(p, why);
          return 'skip';
        }
        this.leaveOutSnapshot(p, without);
        n = this.measure(p);
      }
      if (batch.length >= this.o.batchSize || (batch.length > 0 && bytes + n > this.maxBatchBytes)) return 'full';
      batch.push(p);
      bytes += n;
      return 'take';
    };
    this.refill();
    const order = KIND_ORDER.filter((k) => k !== this.lastFailedKind);
    if (this.lastFailedKind) order.push(this.lastFailedKind);
    for (const kind of order) {
      // A failed request's kind: that request again, as it was, before anything newer of its kind,
      // or of another kind sent to its topic (topics may be shared: `topics.alerts` and
      // `topics.status` the same). Sent in between, a request to the same partition got the
      // failed one's rolled-back sequence numbers: one the broker had written (its answer lost)
      // was "found" again in it, a duplicate answered with the old offset, and that request (one
      // alert, say, after one status) was acked and never written.
      for (const [k, again] of this.retry) {
        if (k !== kind && this.topicOf(k) !== this.topicOf(kind)) continue;
        this.retry.delete(k);
        return again;
      }
      if (kind === 'status') {
        for (const [source, p] of this.statuses) {
          if (admit(p) === 'full') break;
          this.statuses.delete(source);
        }
      } else {
        const q = kind === 'alert' ? this.alerts : this.detections;
        while (q.length > 0) {
          const p = q.shift()!;
          // (What it held before admit: an alert may leave its snapshot out, and hold it aside.)
          const chars = heldChars(p);
          if (admit(p) === 'full') {
            q.unshift(p);
            if (p.kind === 'alert') this.alertChars += heldChars(p) - chars;
            break;
          }
          if (p.kind === 'alert') this.alertChars -= chars;
        }
      }
      if (batch.length > 0) return [batch];
    }
    return [];
  }

  /** Loads alerts left on disk back into memory, oldest first, while there is room. */
  private refill(): void {
    const spill = this.o.spill;
    if (!spill) return;
    // The batch in flight is in memory too (see publish): it comes back to the buffer if it fails.
    while (this.spilled.length > 0 && this.alerts.length + this.inFlightAlerts < this.o.alertBufferSize && this.alertChars + this.inFlightAlertChars < this.alertBufferBytes / 2) {
      const key = this.spilled.shift()!;
      const replayed = this.spilledReplays.delete(key);
      const r = spill.load(key);
      if (!r) continue; // delivered meanwhile, or dropped by the store's bounds (it logs that)
      // A replay (an earlier run's alert) goes as it does from memory: without that run's picture
      // url, its server gone (the store holds it as that run journaled it; loaded back, it went with it).
      const value = replayed ? replayedAlertJson(r.json) : r.json;
      this.alerts.push({ kind: 'alert', topic: this.o.topics.alerts, key: r.message.source, value, emitted: r.message.type === 'alert' ? r.message.stamps.emitted : now(), bytes: 0, msg: r.message, replayed });
      this.alertChars += value.length;
    }
    this.stats.alertsOnDisk = this.spilled.length;
    if (this.spilled.length === 0 && this.spillLogged) {
      this.spillLogged = false;
      this.log('kafka: every alert that waited on disk is back in the send buffer', {});
    }
  }

  /** The detections go to the alerts' or the statuses' topic. */
  private sharesDetectionsTopic(): boolean {
    const { detections, alerts, status } = this.o.topics;
    return detections === alerts || detections === status;
  }

  private topicOf(kind: Pending['kind']): string {
    return kind === 'alert' ? this.o.topics.alerts : kind === 'status' ? this.o.topics.status : this.o.topics.detections;
  }

  /** Whether messages of `kind` wait to be sent. */
  private hasQueued(kind: Pending['kind']): boolean {
    if (this.retry.has(kind)) return true;
    return kind === 'detections' ? this.detections.length > 0 : kind === 'alert' ? this.alerts.length > 0 || this.spilled.length > 0 : this.statuses.size > 0;
  }

  private async sendOnce(): Promise<void> {
    // Parts still to send, in order: a batch refused as too large is replaced by its halves.
    const work = this.takeBatch();
    if (work.length === 0) {
      this.updateBuffered();
      return;
    }
    const batch = work.flat();
    this.inFlight = work;
    this.countInFlight();
    let anySent = false;
    try {
      while (work.length > 0) {
        if (this.closed) return; // shutdown gave up on these; close() counted them
        const part = work[0];
        try {
          await this.connect(); // again: a too-large refusal may have replaced the producer
          await this.produce(part);
        } catch (e) {
          const type = tooLargeType(e);
          if (!type) throw e;
          work.shift();
          // Other partitions of the request may have been written: their sequence numbers are stale now.
          if (spansPartitions(part)) this.resetProducer(`${type} in a request spanning several partitions`);
          const without = part.length === 1 ? this.withoutSnapshot(part[0], describeKafkaError(e)) : undefined;
          if (part.length > 1) {
            const half = Math.ceil(part.length / 2);
            work.unshift(part.slice(0, half), part.slice(half));
            this.noteSplit(e, part);
          } else if (without) {
            // Sent again at once without its picture, before anything after it (its source's order).
            this.leaveOutSnapshot(part[0], without);
            work.unshift(part);
          } else {
            this.refuse(part[0], describeKafkaError(e));
          }
          this.countInFlight();
          continue;
        }
        work.shift();
        this.countInFlight();
        anySent = true;
        this.delivered(part);
      }
      // Any request that went through ends the failed kind's turn at the back: it is first again
      // at the next cut (kept at the back until its own kind succeeded, an alert waited behind a
      // stream of detections for as long as they came).
      this.lastFailedKind = undefined;
      this.failuresInARow = 0;
      // The outage is over when what failed goes through again (detections sent while every
      // alert request failed, a topic deleted under argus, said "broker back" and the reasons
      // anew at every cycle), or has nothing left to send (a camera's last detections failed,
      // then only alerts came: it held the outage open for good).
      for (const p of batch) this.failingKinds.delete(p.kind);
      for (const k of [...this.failingKinds]) if (!this.hasQueued(k)) this.failingKinds.delete(k);
      const wasDown = this.backoffMs > 0 || !this.stats.connected || this.outage;
      this.stats.connected = true; // a request went through: connected, whatever else still fails
      if (this.failingKinds.size === 0 && (wasDown || this.reasonsLogged.size > 0)) {
        if (wasDown) this.log('kafka: broker back, publishing again', { alertsPending: this.alerts.length, statusPending: this.statuses.size });
        this.outage = false;
        this.reasonsLogged.clear();
        this.lastReason = undefined;
      }
      this.backoffMs = 0;
    } catch (e) {
      if (this.closed) return;
      if (anySent && this.failingKinds.size === 0) {
        this.reasonsLogged.clear();
        this.lastReason = undefined;
      }
      for (const p of batch) this.failingKinds.add(p.kind);
      this.outage = true;
      // A topic gone (deleted, or a broker restarted without its data): checked and created
      // again before a next request, as at start (it was checked once, and every request to it
      // failed for the rest of the run), TOPICS_RETRY_MS after the last check at the soonest.
      if (errorType(e) === 'UNKNOWN_TOPIC_OR_PARTITION' && this.topicsChecked) this.topicsChecked = false;
      // Alerts and statuses are sent again as they were (see `retry`); detections of the failed batch are dropped.
      this.lastFailedKind = batch[0].kind;
      this.holdForRetry(work);
      this.noteFailure(e);
      const type = errorType(e);
      if (type && RESET_PRODUCER.has(type)) this.resetProducer(type);
      // kafkajs may never recover a connection on its own: after a broker that accepted it and
      // never answered, every later request failed with "Broker not connected" and no new
      // connection was tried, for good. A fresh producer (a new connection) every few failures in a row.
      else if (connectionError(e) && ++this.failuresInARow % RESET_AFTER_FAILURES === 0) this.resetProducer(`${this.failuresInARow} failed connections in a row: ${describeKafkaError(e)}`);
      // Detections are not sent again, and kafkajs rolled back their sequence numbers: the broker
      // may have written them (their answer lost), and the next request to their partitions
      // would reuse those numbers. Detections then are only lost as counted; an alert or status
      // on the same topic (the same camera's partition) was answered as their duplicate and
      // never written. A fresh producer id makes the numbers new.
      else if (batch[0].kind === 'detections' && this.sharesDetectionsTopic()) this.resetProducer(`a failed detections request on the topic of ${this.o.topics.detections === this.o.topics.alerts ? 'the alerts' : 'the statuses'}`);
      this.backoffMs = Math.min(5000, this.backoffMs ? this.backoffMs * 2 : 200) * (0.75 + Math.random() * 0.5);
    } finally {
      if (this.inFlight === work) {
        this.inFlight = [];
        this.countInFlight();
      }
      this.updateBuffered();
    }
  }

  private async produce(part: Pending[]): Promise<void> {
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const p of part) {
      let l = byTopic.get(p.topic);
      if (!l) byTopic.set(p.topic, (l = []));
      l.push({ key: p.key, value: p.value });
    }
    await this.producer.sendBatch({
      acks: -1,
      compression: this.o.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
  }

  /** The broker acknowledged `part`. After shutdown gave up on it (a late ack) the loss counted then is taken back. */
  private delivered(part: Pending[]): void {
    const late = this.closed;
    const t = now();
    const msgs: Message[] = [];
    for (const p of part) {
      if (!p.replayed) {
        this.noteAck(t - p.emitted);
        if (p.msg?.type === 'alert' && Number.isFinite(p.msg.stamps?.produced)) this.onAlertAck?.(t - p.msg.stamps.produced);
      }
      if (p.kind === 'detections') {
        this.stats.sent++;
        if (late) this.stats.dropped--;
      } else {
        msgs.push(p.msg!);
        if (p.kind === 'alert') {
          this.stats.alertsSent++;
          if (p.unstripped) this.stats.snapshotsLeftOut++;
          if (p.replayed) this.stats.alertsReplayed++;
          // (With the outbox, close() counted none lost: they stay in it.)
          if (late && !this.o.spill) this.stats.alertsDropped--;
        } else {
          this.stats.statusSent++;
          if (p.replayed) this.stats.statusReplayed++;
          if (late) this.stats.statusDropped--;
        }
      }
    }
    // Not after close(): whoever listens may be closed too (an outbox then keeps them: at least once).
    if (msgs.length > 0 && !late) this.notify(msgs, 'acked');
  }

  /** A message the broker will not take (too large on its own): parked, never retried. */
  private refuse(p: Pending, reason: string): void {
    if (p.unstripped) {
      // Too large without its snapshot too: parked as it was published, picture and all (its outbox record too).
      reason = `${reason}, without its snapshot too`;
      p.value = p.unstripped.value;
      p.msg = p.unstripped.msg;
      p.unstripped = undefined;
      p.bytes = 0;
      this.measure(p);
      this.o.spill?.replace?.(p.msg, p.value);
    }
    if (p.kind === 'detections') {
      this.stats.dropped++;
      this.noteReason(`detections too large`, `kafka: a detections message from ${p.key} is too large for the broker (${reason}); dropped and counted`);
      return;
    }
    this.stats.parked++;
    if (p.kind === 'alert') this.stats.alertsParked++;
    // One after the other (their lines never interleave), never waited for by the caller.
    this.deadLetters = this.deadLetters.then(() => this.park(p, reason));
  }

  /** Parked messages being written to the dead-letter file, in order. */
  private deadLetters: Promise<void> = Promise.resolve();

  private async park(p: Pending, reason: string): Promise<void> {
    const id = alertId(p);
    const file = await this.writeDeadLetter(p, reason);
    this.log(
      `kafka: ${p.kind === 'alert' ? `alert ${id ?? '?'}` : 'status message'} from ${p.key} is too large for the broker (${reason}); parked${file ? ` in ${file}` : ''}, not retried`,
      { source: p.key, alertId: id, topic: p.topic, bytes: p.bytes, reason, ...(p.kind === 'alert' ? { code: ErrorCodes.ALERT_UNDELIVERED } : {}) },
      'error',
    );
    // Forgotten by the outbox only once it is in the dead-letter file; a parked alert that could
    // not be written there stays in the outbox (kept, retried at the next start), never erased.
    // Not after close() (see acks): the outbox keeps it then.
    if (this.closed) return;
    if (file || p.kind !== 'alert' || !this.o.spill) this.notify([p.msg!], 'dead-lettered');
    else this.log(`kafka: alert ${id ?? '?'} stays in the outbox (the dead-letter file could not take it)`, { source: p.key, alertId: id, code: ErrorCodes.ALERT_UNDELIVERED }, 'error');
  }

  /** Appends a parked message to the dead-letter file; returns its path if it was written. */
  private async writeDeadLetter(p: Pending, reason: string): Promise<string | undefined> {
    const path = this.o.deadLetterPath;
    if (!path) return undefined;
    try {
      if (this.deadLetterSize === undefined) {
        // Without blocking the event loop: a hung network mount here froze every camera.
        await makeDir(dirname(path));
        try {
          const st = await stat(path);
          this.deadLetterSize = st.size;
          // A line a killed process or a full disk cut short, before this start. In a pipe
          // nothing says: a run killed or stopped mid-write left its fragment there, and a
          // reader that outlives runs (a shipper's, a loop of cat) joins it to this run's first
          // line, so that one starts on a line of its own (an empty line where none was cut).
          this.deadLetterPipe = !st.isFile();
          if (st.isFIFO()) this.deadLetterTorn = true;
          else if (st.isFile() && st.size > 0) {
            const last = await lastByte(path);
            this.deadLetterTorn = last !== undefined && last !== 0x0a;
          }
        } catch {
          this.deadLetterSize = 0;
        }
      }
      // After a line cut short (its end not written), a line of its own: the next line went on
      // after the fragment, the two read as one line that parses as neither, and that message
      // was taken as written (its alert forgotten by the outbox).
      const line = `${this.deadLetterTorn ? '\n' : ''}${JSON.stringify({ topic: p.topic, key: p.key, value: p.value, reason, at: new Date().toISOString() })}\n`;
      const n = Buffer.byteLength(line);
      // A file's size on disk. Not a pipe's: what went through it is its reader's (a long-lived
      // pipe was reported full once 100 MB had passed through it, and every later parked alert
      // stayed in the outbox); its reader's pace bounds it (deadLetterWait).
      if (!this.deadLetterPipe && this.deadLetterSize + n > this.deadLetterMaxBytes) {
        if (!this.deadLetterFullLogged) {
          this.deadLetterFullLogged = true;
          this.log(`kafka: dead-letter file ${path} is full (${this.deadLetterMaxBytes} bytes); further parked messages are only counted`, { path }, 'error');
        }
        return undefined;
      }
      // (Its user's alone, as the outbox's files: parked alerts and statuses.) Opened without
      // waiting: a named pipe whose reader is away (a log shipper's) froze the whole process in
      // a synchronous open, every camera and the group's heartbeats with it; it now fails
      // (ENXIO), is logged, and the alert stays in the outbox. Written without waiting on that
      // one descriptor: a full pipe (a parked message, too large for the broker, is usually over
      // its 64 KiB) takes the rest as its reader reads, within deadLetterWait (then logged, the
      // alert kept in the outbox). A second, blocking open of a pipe waited for ever for a new
      // reader when the first left between the two opens, and its writes for a reader that
      // stopped reading: the process froze either way.
      const fh = await open(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK, 0o600);
      try {
        await writeWithoutWaiting(fh, Buffer.from(line), this.o.deadLetterWait);
        // On disk before the outbox is told to forget the alert (its ack is fsynced): unsynced, a
        // power cut could lose the line while the journal's ack stood, the alert in neither. The
        // folder too, once a run (the file may be new: its name is the folder's data).
        if (!this.deadLetterPipe) {
          await fh.datasync();
          if (!this.deadLetterDirSynced) {
            // (As the outbox's: a folder some file systems cannot sync is no failure of the line.)
            const d = await open(dirname(path), 'r').catch(() => undefined);
            await d?.sync().catch(() => undefined);
            await d?.close().catch(() => undefined);
            this.deadLetterDirSynced = true;
          }
        }
      } catch (e) {
        const written = (e as WriteCutShort).written;
        if (written > 0) {
          this.deadLetterSize += written;
          this.deadLetterTorn = true;
        }
        throw e;
      } finally {
        await fh.close().catch(() => undefined);
      }
      this.deadLetterTorn = false;
      this.deadLetterSize += n;
      this.stats.deadLettered++;
      return path;
    } catch (e) {
      if (!this.deadLetterErrorLogged) {
        this.deadLetterErrorLogged = true;
        this.log(`kafka: cannot write the dead-letter file ${path} (${(e as Error).message}); parked messages are only counted`, { path }, 'error');
      }
      return undefined;
    }
  }

  private notify(msgs: Message[], outcome: DeliveryOutcome): void {
    if (!this.o.onDelivered) return;
    try {
      this.o.onDelivered(msgs, outcome);
    } catch (e) {
      this.log(`kafka: onDelivered failed (${(e as Error).message})`, {}, 'error');
    }
  }

  /**
   * Keeps the undelivered parts of a failed request (its alerts and statuses) to be sent again as
   * they were, before anything newer of their kind (see `retry`); detections are dropped. They
   * stay in flight meanwhile: in the memory bounds and the shutdown's count.
   */
  private holdForRetry(work: Pending[][]): void {
    const parts: Pending[][] = [];
    for (const part of work) {
      const kept = part.filter((p) => p.kind !== 'detections');
      this.stats.dropped += part.length - kept.length;
      if (kept.length > 0) parts.push(kept);
    }
    // (A request is of one kind; another kind's failed request, waiting too, stays as it is.)
    if (parts.length > 0) this.retry.set(parts[0][0].kind, parts);
  }

  /** The parts of the request being sent and of those waiting to be sent again. */
  private *heldParts(): Generator<Pending[]> {
    yield* this.inFlight;
    for (const parts of this.retry.values()) yield* parts;
  }

  private countInFlight(): void {
    let a = 0;
    let chars = 0;
    let s = 0;
    for (const part of this.heldParts()) for (const p of part) if (p.kind === 'alert') {
      a++;
      chars += heldChars(p);
    } else if (p.kind === 'status') s++;
    this.inFlightAlerts = a;
    this.inFlightAlertChars = chars;
    this.inFlightStatus = s;
    this.updateBuffered();
  }

  private updateBuffered(): void {
    this.stats.buffered = this.detections.length;
    this.stats.alertsBuffered = this.alerts.length + this.inFlightAlerts;
    this.stats.statusBuffered = this.statuses.size + this.inFlightStatus;
  }

  private noteAck(ms: number): void {
    this.ackLatency.add(ms);
    if (this.ackListener) this.ackListener(ms);
    else if (this.earlyAcks && this.earlyAcks.length < EARLY_ACKS_MAX) this.earlyAcks.push(ms);
  }

  get bufferCapacity(): number {
    return this.o.bufferSize;
  }

  /** Splits are logged at most once a minute (with how many there were), as they may recur with every batch. */
  private noteSplit(e: unknown, part: Pending[]): void {
    this.splits++;
    const t = now();
    if (t - this.splitLoggedAt < 60_000) return;
    this.log(
      `kafka: the broker refused a batch as too large (${describeKafkaError(e)}); splitting it (${part.length} messages, ${part.reduce((n, p) => n + p.bytes, 0)} bytes; ${this.splits} split${this.splits > 1 ? 's' : ''} since the last such log)`,
      { brokers: this.o.brokers, maxBatchBytes: this.maxBatchBytes },
      'warn',
    );
    this.splitLoggedAt = t;
    this.splits = 0;
  }

  /**
   * Logs `text` when the failure reason changes (A → B → A logs three times; A, A once), at most
   * MAX_REASONS_LOGGED times between two successful sends (bounded log volume).
   */
  private noteReason(reason: string, text: string, level: 'warn' | 'error' = 'warn'): void {
    if (reason === this.lastReason || this.reasonsLogged.size >= MAX_REASONS_LOGGED) return;
    this.lastReason = reason;
    this.reasonsLogged.add(`${this.reasonsLogged.size}:${reason}`);
    this.log(text, { brokers: this.o.brokers, reason }, level);
  }
  private lastReason: string | undefined;

  private noteFailure(e: unknown): void {
    const reason = describeKafkaError(e);
    this.stats.failures++;
    this.stats.lastError = reason;
    const first = this.reasonsLogged.size === 0;
    this.stats.connected = false;
    this.noteReason(reason, first ? `kafka: publishing failed (${reason}); detections are dropped and counted, alerts wait` : `kafka: publishing still failing, now: ${reason}`);
  }

  /**
   * Flushes buffers (statuses and alerts first) and disconnects, returning within
   * `closeTimeoutMs` (+ up to 250 ms for the disconnect) whatever the broker does: a send or a
   * disconnect still pending at the deadline is abandoned. What was not delivered by then is
   * counted (`alertsDropped`, `statusDropped`, `dropped`) and logged.
   */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    const deadline = now() + this.o.closeTimeoutMs;
    const left = () => Math.max(0, deadline - now());
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (;;) {
      if (this.sending && !(await within(this.sending, left()))) break;
      if (this.pending === 0 || left() <= 0) break;
      if (!(await within(this.startSend(), left()))) break;
      if (this.backoffMs > 0 && this.pending > 0) await sleep(Math.min(this.backoffMs, left()));
    }
    // Parked messages still being written (a pipe's slow reader), and the alerts topic's
    // cleanup policy still asked for, within the deadline.
    await within(this.deadLetters, left());
    if (this.keepsChecking) await within(this.keepsChecking, left());
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const inFlight = [...this.heldParts()].flat();
    this.inFlight = [];
    this.retry.clear();
    let alerts = this.alerts.length + this.spilled.length;
    let statuses = this.statuses.size;
    let dets = this.detections.length;
    for (const p of inFlight) {
      if (p.kind === 'alert') alerts++;
      else if (p.kind === 'status') statuses++;
      else dets++;
    }
    if (alerts > 0 && this.o.spill) {
      this.log(`kafka: ${alerts} alerts not delivered before shutdown; they stay in the outbox and are sent on the next start`, { closeTimeoutMs: this.o.closeTimeoutMs, lastError: this.stats.lastError, code: ErrorCodes.ALERT_UNDELIVERED }, 'warn');
    } else if (alerts > 0) {
      this.stats.alertsDropped += alerts;
      this.log(`kafka: ${alerts} alerts could not be delivered before shutdown`, { closeTimeoutMs: this.o.closeTimeoutMs, lastError: this.stats.lastError, code: ErrorCodes.ALERT_UNDELIVERED }, 'error');
    }
    if (statuses > 0) {
      this.stats.statusDropped += statuses;
      this.log(`kafka: ${statuses} status messages could not be delivered before shutdown`, {}, 'warn');
    }
    this.stats.dropped += dets;
    await within(this.producer.disconnect().catch(() => undefined), Math.max(left(), 250));
  }

  /** Undelivered messages at this moment (waiting, or failed and waiting to be sent again; not in flight). */
  get pending(): number {
    let again = 0;
    for (const parts of this.retry.values()) for (const part of parts) again += part.length;
    return this.alerts.length + this.spilled.length + this.statuses.size + this.detections.length + again;
  }
}

/**
 * The characters of JSON a message holds in memory: its value, and for an alert sent without its
 * snapshot the alert as published too (`unstripped`, to park it picture and all if it is refused
 * without it). Uncounted, a batch of such alerts in flight held their pictures beside a buffer
 * refilled to the bound: twice `alertBufferBytes`.
 */
function heldChars(p: Pending): number {
  return p.value.length + (p.unstripped?.value.length ?? 0);
}

function alertId(p: Pending): string | undefined {
  return p.msg?.type === 'alert' ? p.msg.alert.id : undefined;
}
