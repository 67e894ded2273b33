import { CompressionTypes, Kafka, logLevel, type Admin, type Producer, type SASLOptions } from 'kafkajs';
import type { ConnectionOptions } from 'node:tls';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import { SampleWindow } from '../core/stats.js';
import { Deque } from '../flow/deque.js';
import type { Message, MessageKind } from './message.js';
import type { Sink } from './sink.js';

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
  /** Detection messages buffered before new ones are dropped (and counted). */
  bufferSize: number;
  /** Alert messages buffered while the broker is away; beyond it the oldest is dropped with an error log. */
  alertBufferSize: number;
  /** Passed to kafkajs as is. */
  ssl?: boolean | ConnectionOptions;
  sasl?: SASLOptions;
  /** Time allowed to flush on close. */
  closeTimeoutMs: number;
  log?: LogFn;
}

interface Pending {
  kind: MessageKind;
  topic: string;
  key: string;
  value: string;
  emitted: number;
}

export interface KafkaSinkStats {
  connected: boolean;
  sent: number;
  alertsSent: number;
  /** Source status changes delivered (kept and retried like alerts). */
  statusSent: number;
  /** Detection messages dropped because the buffer was full or the broker refused them. */
  dropped: number;
  /** Alerts lost because even the alert buffer overflowed (each is logged as an error). */
  alertsDropped: number;
  buffered: number;
  alertsBuffered: number;
  failures: number;
  lastError?: string;
}

/**
 * Publishes to Kafka without ever blocking the frame path: messages go into bounded buffers
 * and one batch at a time is sent with an idempotent producer (acks=all), keyed by source id
 * so each camera's order is kept. While the broker is away, detections are dropped and
 * counted and alerts wait (bounded) and are retried until it returns.
 */
export class KafkaSink implements Sink {
  readonly name = 'kafka';
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly detections = new Deque<Pending>(1024);
  private readonly alerts = new Deque<Pending>(64);
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private backoffMs = 0;
  private closed = false;
  private producerConnected = false;
  readonly stats: KafkaSinkStats = { connected: false, sent: 0, alertsSent: 0, statusSent: 0, dropped: 0, alertsDropped: 0, buffered: 0, alertsBuffered: 0, failures: 0 };
  /** emitted → broker ack, ms (recent messages). */
  readonly ackLatency = new SampleWindow(4096);
  /** Ack latencies not yet taken by the metrics (bounded: the oldest are overwritten). */
  private readonly ackFresh: number[] = [];
  private readonly log: LogFn;

  constructor(private readonly o: KafkaSinkOptions) {
    this.log = o.log ?? (() => {});
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      ssl: o.ssl,
      sasl: o.sasl,
      connectionTimeout: 3000,
      requestTimeout: 10_000,
      logLevel: logLevel.NOTHING,
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    });
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 } });
    this.producer.on(this.producer.events.DISCONNECT, () => {
      this.producerConnected = false;
    });
  }

  /**
   * Checks (or creates) the topics and connects. A missing topic with `createTopics: false` is
   * an error; an unreachable broker is not: the sink starts and keeps retrying.
   */
  async start(): Promise<void> {
    let admin: Admin | undefined;
    try {
      admin = this.kafka.admin({ retry: { retries: 1 } });
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const wanted = [this.o.topics.detections, this.o.topics.alerts, this.o.topics.status];
      const missing = wanted.filter((t) => !existing.has(t));
      if (missing.length > 0) {
        if (!this.o.createTopics) {
          throw new ArgusError(
            ErrorCodes.SINK_TOPIC,
            `kafka: topic${missing.length > 1 ? 's' : ''} ${missing.map((t) => `"${t}"`).join(', ')} do${missing.length > 1 ? '' : 'es'} not exist on ${this.o.brokers.join(',')} and sinks.kafka.createTopics is false`,
          );
        }
        await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: this.o.partitions, replicationFactor: this.o.replicationFactor })) });
        this.log(`kafka: created topics ${missing.join(', ')}`);
      }
      await this.connect();
    } catch (e) {
      if (e instanceof ArgusError) throw e;
      this.noteFailure(e as Error);
      this.log(`kafka: broker not reachable at start (${(e as Error).message}); buffering alerts and retrying`, { brokers: this.o.brokers }, 'warn');
    } finally {
      await admin?.disconnect().catch(() => undefined);
    }
  }

  publish(kind: MessageKind, source: string, json: string, msg: Message): void {
    if (this.closed) return;
    const topic = kind === 'alert' ? this.o.topics.alerts : kind === 'status' ? this.o.topics.status : this.o.topics.detections;
    const p: Pending = { kind, topic, key: source, value: json, emitted: msg.type === 'status' ? msg.published : msg.stamps.emitted };
    // Alerts and status changes are kept and retried; detections are dropped when the buffer is full.
    if (kind !== 'detections') {
      if (this.alerts.length >= this.o.alertBufferSize) {
        const lost = this.alerts.shift()!;
        this.stats.alertsDropped++;
        this.log(`kafka: alert buffer full (${this.o.alertBufferSize}); oldest alert lost`, { source: lost.key }, 'error');
      }
      this.alerts.push(p);
    } else {
      if (this.detections.length >= this.o.bufferSize) {
        this.stats.dropped++;
        return;
      }
      this.detections.push(p);
    }
    this.updateBuffered();
    this.schedule();
  }

  private schedule(): void {
    if (this.sending || this.timer || this.closed) return;
    if (this.detections.length + this.alerts.length === 0) return;
    const full = this.detections.length + this.alerts.length >= this.o.batchSize;
    const delay = this.backoffMs > 0 ? this.backoffMs : full ? 0 : this.o.lingerMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.sending = this.sendOnce().finally(() => {
        this.sending = undefined;
        this.schedule();
      });
    }, delay);
  }

  private async connect(): Promise<void> {
    if (this.producerConnected) return;
    await this.producer.connect();
    this.producerConnected = true;
    if (!this.stats.connected) {
      this.stats.connected = true;
      this.log('kafka: connected', { brokers: this.o.brokers });
    }
  }

  private async sendOnce(): Promise<void> {
    const alerts = this.alerts.take(this.o.batchSize);
    const dets = this.detections.take(Math.max(0, this.o.batchSize - alerts.length));
    if (alerts.length + dets.length === 0) return;
    this.inFlightAlerts = alerts.length;
    try {
      await this.connect();
      const byTopic = new Map<string, { key: string; value: string }[]>();
      for (const p of [...alerts, ...dets]) {
        let l = byTopic.get(p.topic);
        if (!l) byTopic.set(p.topic, (l = []));
        l.push({ key: p.key, value: p.value });
      }
      await this.producer.sendBatch({
        acks: -1,
        compression: this.o.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
      const t = now();
      for (const p of alerts) this.noteAck(t - p.emitted);
      for (const p of dets) this.noteAck(t - p.emitted);
      this.stats.sent += dets.length;
      for (const p of alerts) {
        if (p.kind === 'alert') this.stats.alertsSent++;
        else this.stats.statusSent++;
      }
      if (this.backoffMs > 0 || !this.stats.connected) {
        this.stats.connected = true;
        this.log('kafka: broker back, publishing again', { alertsPending: this.alerts.length });
      }
      this.backoffMs = 0;
    } catch (e) {
      // Alerts go back to the front, in order; detections of the failed batch are dropped.
      this.alerts.putBack(alerts);
      this.stats.dropped += dets.length;
      this.noteFailure(e as Error);
      this.backoffMs = Math.min(5000, this.backoffMs ? this.backoffMs * 2 : 200) * (0.75 + Math.random() * 0.5);
    } finally {
      this.inFlightAlerts = 0;
      this.updateBuffered();
    }
  }

  /** Alerts (and status changes) in the batch being sent now. */
  private inFlightAlerts = 0;

  private updateBuffered(): void {
    this.stats.buffered = this.detections.length;
    this.stats.alertsBuffered = this.alerts.length + this.inFlightAlerts;
  }

  private noteAck(ms: number): void {
    this.ackLatency.add(ms);
    if (this.ackFresh.length < 100_000) this.ackFresh.push(ms);
  }

  /** Ack latencies since the last call (for the Prometheus histogram). */
  takeAckSamples(): number[] {
    return this.ackFresh.splice(0, this.ackFresh.length);
  }

  get bufferCapacity(): number {
    return this.o.bufferSize;
  }

  private noteFailure(e: Error): void {
    this.stats.failures++;
    this.stats.lastError = e.message;
    if (this.stats.connected) {
      this.stats.connected = false;
      this.log(`kafka: publishing failed (${e.message}); detections are dropped and counted, alerts wait`, { brokers: this.o.brokers }, 'warn');
    }
  }

  /** Flushes buffers (alerts first) within `closeTimeoutMs`, then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    const deadline = now() + this.o.closeTimeoutMs;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (now() < deadline) {
      if (this.sending) await this.sending;
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (this.alerts.length + this.detections.length === 0) break;
      this.sending = this.sendOnce();
      await this.sending;
      this.sending = undefined;
      if (this.backoffMs > 0) await new Promise((r) => setTimeout(r, Math.min(this.backoffMs, Math.max(0, deadline - now()))));
    }
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.alerts.length > 0) {
      this.stats.alertsDropped += this.alerts.length;
      this.log(`kafka: ${this.alerts.length} alerts could not be delivered before shutdown`, {}, 'error');
    }
    this.stats.dropped += this.detections.length;
    await this.producer.disconnect().catch(() => undefined);
  }

  /** Undelivered messages at this moment. */
  get pending(): number {
    return this.alerts.length + this.detections.length;
  }
}
