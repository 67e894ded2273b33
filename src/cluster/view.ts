import type { Admin, Consumer, Kafka, Producer } from 'kafkajs';
import { parse as parseYaml } from 'yaml';
import { CameraSchema, type CameraDefinition } from '../config/schema.js';
import { formatIssues } from '../config/load.js';
import { interpolateEnv } from '../config/interpolate.js';

/** One camera in the cameras topic (the latest record of its key). */
export interface CameraEntry {
  id: string;
  /** The slot (partition) it lives in. */
  slot: number;
  /** The record's value as written: a restart is due when it changes. */
  text: string;
  /** The definition, or why it is not valid (the camera then runs nowhere and `argus cameras ls` says why). */
  definition?: CameraDefinition;
  error?: string;
  offset: string;
}

/** The latest claim or release of a camera in the owners topic. */
export interface OwnerEntry {
  camera: string;
  state: 'claimed' | 'released';
  owner: string;
  /** The claim's offset in the owners topic: grows with every claim of any camera. */
  epoch: number;
  at: number;
}

/** Record values of the owners topic. */
export type OwnersRecord =
  | { type: 'claim'; camera: string; owner: string; at: number }
  | { type: 'release'; camera: string; owner: string; epoch: number; at: number }
  | { type: 'drain'; worker: string; drain: boolean; at: number };

export const DRAIN_KEY_PREFIX = 'drain/';

/** Parses a camera record's value (JSON, or YAML: a person may write one by hand). */
export function parseCamera(id: string, text: string, env: NodeJS.ProcessEnv = process.env): { definition?: CameraDefinition; error?: string } {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    return { error: `not valid JSON or YAML: ${(e as Error).message.split('\n')[0]}` };
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { error: 'expected an object' };
  try {
    // `${env:…}` references resolve here, from this worker's environment.
    doc = interpolateEnv(doc, env);
  } catch (e) {
    return { error: (e as Error).message };
  }
  const r = CameraSchema.safeParse(doc);
  if (!r.success) return { error: formatIssues(r.error).trim() };
  if (r.data.source.id !== id) return { error: `id "${r.data.source.id}" differs from the record key "${id}"` };
  return { definition: r.data };
}

/**
 * A worker's picture of the cluster's desired state: every camera of the cameras topic and
 * the latest claim or release of each camera, read by a consumer of its own (its own group,
 * nothing committed: every start reads both compacted topics from the beginning). `ready`
 * resolves once it has read up to the end offsets the topics had when it started.
 */
export class ClusterView {
  readonly cameras = new Map<string, CameraEntry>();
  readonly owners = new Map<string, OwnerEntry>();
  /** The record of each camera before its latest one (a new claim's predecessor). */
  readonly previous = new Map<string, OwnerEntry>();
  /** The highest claim epoch of each camera that its owner released. */
  readonly released = new Map<string, number>();
  /** Offset after the last owners record read (the view has seen every claim below it). */
  ownersRead = 0;
  /** Workers asked to drain (true) or to come back (false). */
  readonly drains = new Map<string, boolean>();
  private consumer: Consumer | undefined;
  private readonly listeners = new Set<() => void>();
  private readonly waiting: { topic: string; partition: number; offset: bigint }[] = [];
  private resolveReady!: () => void;
  /** Resolves once both topics are read to where they ended at start. */
  readonly ready = new Promise<void>((r) => (this.resolveReady = r));

  constructor(
    private readonly kafka: Kafka,
    private readonly topics: { cameras: string; owners: string },
    private readonly groupPrefix = 'argus-view',
  ) {}

  /** Called after every change (camera records, claims, releases, drains). */
  onChange(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  async start(admin: Admin): Promise<void> {
    for (const topic of [this.topics.cameras, this.topics.owners]) {
      for (const p of await retrying(() => admin.fetchTopicOffsets(topic))) {
        if (BigInt(p.high) > BigInt(p.low)) this.waiting.push({ topic, partition: p.partition, offset: BigInt(p.high) });
      }
    }
    if (this.waiting.length === 0) this.resolveReady();
    const consumer = this.kafka.consumer({
      groupId: `${this.groupPrefix}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
      sessionTimeout: 30_000,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics: [this.topics.cameras, this.topics.owners], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) this.apply(batch.topic, batch.partition, m.key?.toString('utf8') ?? '', m.value, m.offset);
        const next = BigInt(batch.lastOffset()) + 1n;
        for (let i = this.waiting.length - 1; i >= 0; i--) {
          const w = this.waiting[i];
          if (w.topic === batch.topic && w.partition === batch.partition && next >= w.offset) this.waiting.splice(i, 1);
        }
        if (this.waiting.length === 0) this.resolveReady();
        for (const f of this.listeners) f();
      },
    });
  }

  private apply(topic: string, slot: number, key: string, value: Buffer | null, offset: string): void {
    if (!key) return;
    if (topic === this.topics.cameras) {
      if (value === null) {
        this.cameras.delete(key);
        return;
      }
      const text = value.toString('utf8');
      this.cameras.set(key, { id: key, slot, text, offset, ...parseCamera(key, text) });
      return;
    }
    if (value === null) {
      if (key.startsWith(DRAIN_KEY_PREFIX)) this.drains.delete(key.slice(DRAIN_KEY_PREFIX.length));
      else this.owners.delete(key);
      return;
    }
    this.ownersRead = Math.max(this.ownersRead, Number(offset) + 1);
    let r: OwnersRecord;
    try {
      r = JSON.parse(value.toString('utf8')) as OwnersRecord;
    } catch {
      return;
    }
    if (r.type === 'drain') {
      this.drains.set(r.worker, r.drain);
      return;
    }
    if (r.type !== 'claim' && r.type !== 'release') return;
    const cur = this.owners.get(r.camera);
    if (r.type === 'release') {
      this.released.set(r.camera, Math.max(this.released.get(r.camera) ?? -1, r.epoch));
      // A release of an older claim (a newer one was made since) changes nothing else.
      if (cur && cur.epoch > r.epoch) return;
    }
    if (cur) this.previous.set(r.camera, cur);
    const epoch = r.type === 'claim' ? Number(offset) : r.epoch;
    this.owners.set(r.camera, { camera: r.camera, state: r.type === 'claim' ? 'claimed' : 'released', owner: r.owner, epoch, at: r.at });
  }

  /** Resolves once the view has read the owners topic up to `offset` (or after `timeoutMs`: false). */
  async readOwnersTo(offset: number, timeoutMs: number): Promise<boolean> {
    const end = performance.now() + timeoutMs;
    while (this.ownersRead < offset) {
      if (performance.now() > end) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return true;
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
  }
}

/**
 * Claims and releases in the owners topic (one partition, compacted, keyed by camera). A
 * claim's epoch is the offset the broker gave it: it only grows, so a later owner's messages
 * always carry a larger epoch than an earlier one's, with no counter to coordinate.
 */
export class OwnerLog {
  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly workerId: string,
  ) {}

  async claim(camera: string): Promise<number> {
    const rec: OwnersRecord = { type: 'claim', camera, owner: this.workerId, at: Date.now() };
    const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages: [{ key: camera, value: JSON.stringify(rec), partition: 0 }] });
    return Number(meta.baseOffset);
  }

  async release(camera: string, epoch: number): Promise<void> {
    const rec: OwnersRecord = { type: 'release', camera, owner: this.workerId, epoch, at: Date.now() };
    await this.producer.send({ topic: this.topic, acks: -1, messages: [{ key: camera, value: JSON.stringify(rec), partition: 0 }] });
  }
}

/** Creates the cameras topic (`slots` partitions) and the owners topic (1 partition), both compacted, when missing. */
export async function ensureClusterTopics(admin: Admin, t: { cameras: string; owners: string; slots: number; replicationFactor: number }): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const compact = [
    { name: 'cleanup.policy', value: 'compact' },
    { name: 'min.compaction.lag.ms', value: '0' },
  ];
  const topics = [];
  if (!existing.has(t.cameras)) topics.push({ topic: t.cameras, numPartitions: t.slots, replicationFactor: t.replicationFactor, configEntries: compact });
  if (!existing.has(t.owners)) topics.push({ topic: t.owners, numPartitions: 1, replicationFactor: t.replicationFactor, configEntries: compact });
  if (topics.length === 0) return;
  try {
    await admin.createTopics({ waitForLeaders: true, topics });
  } catch (e) {
    // Another worker created them at the same moment.
    if (!/exists/i.test(String((e as Error)?.message)) && !String((e as { type?: string }).type).includes('TOPIC_ALREADY_EXISTS')) throw e;
  }
}

/** Retries a metadata-dependent call for a few seconds: a topic created a moment ago may have no leader known to this client yet. */
export async function retrying<T>(f: () => Promise<T>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await f();
    } catch (e) {
      if (Date.now() + delay > end) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
