import { MAX_CARRIED_COOLDOWNS, type CarriedCooldown } from '../analytics/analyzer.js';
import type { Admin, Consumer, Kafka, Producer } from 'kafkajs';
import { CameraSchema, DEFAULT_MAX_CAMERAS, PlacementSchema, type CameraDefinition, type Placement } from '../config/schema.js';
import { formatIssues, shapeProblem, parseYamlText, YamlTextError } from '../config/load.js';
import { InterpolationError, interpolateEnv } from '../config/interpolate.js';
import { MAX_ID_LENGTH } from '../config/schema/common.js';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { connectionError, createTopicsReady, fewerPartitions, type WantedPartitions } from '../sinks/kafka.js';
import type { LogFn } from '../core/log.js';

/** One camera in the cameras topic (the latest record of its key). */
export interface CameraEntry {
  id: string;
  /** The slot (partition) it lives in. */
  slot: number;
  /** The record's value as written: a restart is due when it changes. */
  text: string;
  /** The definition, or why it is not valid (the camera then runs nowhere; `argus cameras ls` says why, and for a record valid as written, the worker holding its slot). */
  definition?: CameraDefinition;
  error?: string;
  /**
   * The `${env:…}` variable this worker's environment lacks, where that is why its record cannot
   * be used here: another worker's environment may have it (the worker reports the slot to the group).
   */
  missingEnv?: string;
  offset: string;
  /**
   * Where it may run and whether it is meant to run, read from the record as written (before
   * `${env:…}` resolves), so every worker, whatever its environment, reads the same: the
   * leader assigns by them even for a camera whose variables only some workers have.
   */
  placement?: Placement;
  active: boolean;
}

/** The latest claim or release of a camera in the owners topic. */
export interface OwnerEntry {
  camera: string;
  state: 'claimed' | 'released';
  owner: string;
  /** The owner's process (a worker restarted under the same id is another incarnation). */
  incarnation: string;
  /** The claim's offset in the owners topic: grows with every claim of any camera. */
  epoch: number;
  at: number;
}

/** A claim nobody has released yet. */
export interface OpenClaim {
  owner: string;
  incarnation: string;
  epoch: number;
}

/** Record values of the owners topic. */
export type OwnersRecord =
  | { type: 'claim'; camera: string; owner: string; incarnation: string; at: number }
  | { type: 'release'; camera: string; owner: string; incarnation: string; epoch: number; at: number; cooldowns?: CarriedCooldown[] }
  | { type: 'drain'; worker: string; drain: boolean; at: number }
  | { type: 'ready'; camera: string; owner: string; incarnation: string; at: number };

export const DRAIN_KEY_PREFIX = 'drain/';
/** The most handed-over cooldowns a view holds over every camera (ClusterView.handovers): about 10 MiB (measured, 160 bytes each as parsed). */
export const MAX_HANDOVER_COOLDOWNS = 65_536;

/** Key prefix of "the new owner's connection delivers frames" records (a planned move's handoff). */
export const READY_KEY_PREFIX = 'ready/';
/**
 * Key prefix of releases. A release keyed by its camera, as a claim is, superseded a newer claim
 * of that camera in the compacted topic. That order is common: once its lease holds again, a
 * worker fenced by a broker restart has claimed its cameras anew before it releases the claims
 * its fence stopped (a forced claim after releaseWaitMs, or two claims racing, likewise). Once
 * the log cleaner had run (a segment roll, min.compaction.lag.ms) only the release was left, and
 * a worker started then saw nobody holding a camera that ran, and took it over in the next move
 * without waiting for its owner's release.
 */
export const RELEASE_KEY_PREFIX = 'release/';

/**
 * The only environment variables a camera record may read: `${env:ARGUS_CAMERA_…}`. Anyone who
 * can write the cameras topic could otherwise send any of a worker's variables (its Kafka
 * password, a cloud key) to an address of their choosing in a camera URI.
 */
export const CAMERA_ENV_PREFIX = 'ARGUS_CAMERA_';

/** The `${env:NAME}` references of a camera's text that it may not read (names without CAMERA_ENV_PREFIX). */
export function forbiddenEnvRefs(text: string): string[] {
  return [...text.matchAll(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]).filter((n) => !n.startsWith(CAMERA_ENV_PREFIX));
}

/** The largest camera record read (a `sources[]` entry with zones and rules is a few KB). */
export const MAX_CAMERA_RECORD_CHARS = 64 * 1024;
/**
 * Of a record's value, at most this many bytes are kept (4 bytes a character at most: past
 * MAX_CAMERA_RECORD_CHARS whatever they hold). The view keeps each camera's latest record, and
 * a writer of the cameras topic made every worker hold up to the broker's 1 MB per key.
 */
const KEPT_BYTES = 4 * MAX_CAMERA_RECORD_CHARS + 4;
/** The characters such a cut value has at least. */
const KEPT_CHARS = MAX_CAMERA_RECORD_CHARS + 1;

/** Errors about a record are cut to this many characters (they go to the log, `cameras ls` and /healthz). */
const MAX_RECORD_ERROR_CHARS = 500;

const cut = (s: string) => (s.length > MAX_RECORD_ERROR_CHARS ? `${s.slice(0, MAX_RECORD_ERROR_CHARS)}… (${s.length} characters)` : s);

/**
 * A record's text as a document: JSON (what `argus cameras` writes), else YAML (a person may
 * write one by hand), at most MAX_CAMERA_RECORD_CHARS. YAML's duplicate-key check scans the
 * whole map for each key: a 209 KB record of 20 000 keys took 8 s to parse, on the event loop
 * that answers the group's heartbeats, on every worker at once. Duplicate keys are taken as
 * JSON.parse takes them (the last wins), which keeps parsing linear.
 */
function parseRecord(text: string): { doc?: unknown; error?: string } {
  if (text.length > MAX_CAMERA_RECORD_CHARS) return { error: `the record has ${text.length >= KEPT_CHARS ? 'more than ' : ''}${text.length >= KEPT_CHARS ? MAX_CAMERA_RECORD_CHARS : text.length} characters; a camera record holds at most ${MAX_CAMERA_RECORD_CHARS}` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined; // not JSON: YAML
  }
  if (json !== undefined) {
    // JSON.parse takes any depth; what reads the record after it recurses (a placement of 30 000
    // nested lists threw past the view's catch and kept the camera's previous definition running).
    const shape = json !== null && typeof json === 'object' ? shapeProblem(json) : undefined;
    return shape === undefined ? { doc: json } : { error: cut(shape) };
  }
  try {
    return { doc: parseYamlText(text, { uniqueKeys: false }) };
  } catch (e) {
    if (!(e instanceof YamlTextError)) throw e;
    return { error: cut(`not valid JSON or ${e.message}`) };
  }
}

/**
 * A record's placement and whether it is meant to run, as written (no `${env:…}` resolved):
 * the same on every worker. A placement that reads the environment is refused, since workers
 * would disagree on it.
 */
export function rawCamera(text: string): { placement?: Placement; active: boolean; error?: string } {
  const parsed = parseRecord(text);
  return parsed.error !== undefined ? { active: false, error: parsed.error } : rawCameraDoc(parsed.doc);
}

function rawCameraDoc(doc: unknown): { placement?: Placement; active: boolean; error?: string } {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { active: false, error: 'expected an object' };
  const d = doc as { placement?: unknown; enabled?: unknown };
  const active = d.enabled !== false && d.enabled !== 'false';
  if (d.placement === undefined) return { active };
  if (JSON.stringify(d.placement).includes('${env:')) return { active, error: 'placement: may not read ${env:…} (every worker must read the same placement)' };
  const r = PlacementSchema.safeParse(d.placement);
  if (!r.success) return { active, error: cut(formatIssues(r.error, PlacementSchema).trim().replace(/^/, 'placement: ')) };
  return { active, placement: r.data };
}

/**
 * Parses a camera record's value (JSON, or YAML: a person may write one by hand), once: its
 * raw placement and activity (as rawCamera) and its definition with `${env:…}` resolved from `env`.
 */
export function readCamera(id: string, text: string, env: NodeJS.ProcessEnv = process.env): { raw: ReturnType<typeof rawCamera>; definition?: CameraDefinition; error?: string; missingEnv?: string } {
  const parsed = parseRecord(text);
  if (parsed.error !== undefined) return { raw: { active: false, error: parsed.error }, error: parsed.error };
  const raw = rawCameraDoc(parsed.doc);
  if (raw.error) return { raw, error: raw.error };
  const forbidden = forbiddenEnvRefs(text);
  if (forbidden.length) return { raw, error: `\${env:${forbidden[0]}}: a camera may read only ${CAMERA_ENV_PREFIX}* variables of the worker's environment` };
  let doc: unknown;
  try {
    // `${env:…}` references resolve here, from this worker's environment.
    doc = interpolateEnv(parsed.doc, env);
  } catch (e) {
    return { raw, error: cut((e as Error).message), ...(e instanceof InterpolationError && e.variable !== '' && { missingEnv: e.variable }) };
  }
  const r = CameraSchema.safeParse(doc);
  if (!r.success) return { raw, error: cut(formatIssues(r.error, CameraSchema).trim()) };
  if (r.data.source.id !== id) return { raw, error: cut(`id "${r.data.source.id}" differs from the record key "${id}"`) };
  return { raw, definition: { ...r.data, placement: raw.placement } };
}

/** Parses a camera record's value (see readCamera). */
export function parseCamera(id: string, text: string, env: NodeJS.ProcessEnv = process.env): { definition?: CameraDefinition; error?: string } {
  const { definition, error } = readCamera(id, text, env);
  return error !== undefined ? { error } : { definition };
}

/** Ids of records past cluster.maxCameras a view keeps aside at most, taken in as cameras are removed (ClusterView.hold). */
const HELD_CAMERAS = 1000;

/** Refused camera records are logged at most this often (with how many since the last such line). */
const REFUSED_LOG_EVERY_MS = 60_000;

/** What the view holds at most, and where it says what it refused. */
export interface ViewLimits {
  /**
   * Camera ids held at most (cluster.maxCameras): a record of a new id past it is refused (the
   * camera runs nowhere on this worker), logged and counted. Every worker held every id ever
   * written to the cameras topic: whoever could write it could fill every worker's memory with
   * valid-sized records under new keys. Default DEFAULT_MAX_CAMERAS; `argus cameras` reads without a bound
   * (it lists and removes what the workers refused).
   */
  maxCameras?: number;
  /**
   * The one worker whose drain request is kept (a worker needs only its own). Each worker kept
   * every drain record's worker id: a writer of the owners topic could fill its memory (a
   * million drain records of 200-character ids held 242 MiB in every worker). Default: every
   * worker's (`argus cluster status` names each member's).
   */
  drainsOf?: string;
  log?: LogFn;
}

/**
 * A worker's picture of the cluster's desired state: every camera of the cameras topic and
 * the latest claim or release of each camera, read by a consumer of its own (its own group,
 * nothing committed: every start reads both compacted topics from the beginning). `ready`
 * resolves once it has read up to the end offsets the topics had when it started.
 */
export class ClusterView {
  readonly cameras = new Map<string, CameraEntry>();
  /** Per camera id, the latest record in each slot that holds one (more than one: an error). */
  private readonly records = new Map<string, Map<number, { text: string; offset: string }>>();
  readonly owners = new Map<string, OwnerEntry>();
  /** Per camera, every claim not released yet, by epoch (a new owner waits for all of them). */
  readonly open = new Map<string, Map<number, OpenClaim>>();
  /** Next offset to apply per topic partition: a replay (the view's consumer rejoined its group) applies nothing twice. */
  private readonly next = new Map<string, bigint>();
  /** Workers asked to drain (their latest drain record says so; `--undo` removes the entry). */
  readonly drains = new Map<string, boolean>();
  /** Per camera, the latest "connected and delivering frames" of a would-be new owner: `owner/incarnation` and the record's offset. */
  readonly connected = new Map<string, { member: string; offset: number }>();
  /**
   * Per camera, what its latest release handed over (a planned stop's rule cooldowns still
   * running: SourceAnalyzer.handover): the claim it ended, when it was written (the writer's wall
   * clock) and the cooldowns. Its next owner takes them over (Worker). Only releases that carry some.
   */
  readonly handovers = new Map<string, { epoch: number; at: number; cooldowns: CarriedCooldown[] }>();
  /** The cooldowns `handovers` holds in all (MAX_HANDOVER_COOLDOWNS at most). */
  private carried = 0;
  /**
   * Cameras gone from the cameras topic whose claims are still open, oldest first (kept: re-added,
   * its new owner waits for them), at most maxCameras of them.
   */
  private readonly gone = new Set<string>();
  /**
   * The cameras topic has been read to where it ended at start: a camera absent from it is gone,
   * and what the owners topic says of it (its last owner, its "ready") is forgotten. Before, a
   * claim read ahead of its camera's record could not be told from one of a removed camera.
   */
  private camerasRead = false;
  /** Records of new camera ids refused since start (maxCameras, or a key longer than an id may be). */
  refusedCameras = 0;
  private refusedSinceLog = 0;
  private refusedLoggedAt = -Infinity;
  private readonly maxCameras: number;
  private readonly drainsOf: string | undefined;
  /**
   * Records of new ids read while the view held maxCameras ids, by id, oldest first: taken in as
   * cameras are removed (hold). At most heldMax ids (HELD_CAMERAS, or maxCameras if fewer).
   */
  private readonly held = new Map<string, Map<number, { text: string; offset: string }>>();
  private readonly heldMax: number;
  private readonly log: LogFn;
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
    /** Where camera records' `${env:…}` resolve: the worker's environment. */
    private readonly env: NodeJS.ProcessEnv = process.env,
    /**
     * The session of the view's consumer group (a worker passes its cluster.sessionTimeoutMs and
     * heartbeatIntervalMs). After a broker restart the consumer rejoins as a new member, and the
     * coordinator holds that join until the old member's session has expired: with 30 s, every
     * worker read no claim or release for ~27 s after the broker was back, so no camera started.
     */
    private readonly session: { sessionTimeoutMs: number; heartbeatIntervalMs: number } = { sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3000 },
    limits: ViewLimits = {},
  ) {
    this.maxCameras = limits.maxCameras ?? DEFAULT_MAX_CAMERAS;
    this.drainsOf = limits.drainsOf;
    this.heldMax = Math.min(this.maxCameras, HELD_CAMERAS);
    this.log = limits.log ?? (() => {});
  }

  /** Called after every change (camera records, claims, releases, drains). */
  onChange(f: () => void): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private readonly hiddenListeners = new Set<(camera: string, latest: OwnerEntry) => void>();

  /**
   * Called with a camera and its latest claim, released, when a release of an older claim of it
   * is read after that release: both under the camera's release key, compaction keeps only the
   * older one, and a worker started then sees the latest claim open (its next owner waited
   * releaseWaitMs for a release that had been written). The latest claim's owner writes its
   * release again (Worker), so it is the key's latest record once more.
   */
  onReleaseHidden(f: (camera: string, latest: OwnerEntry) => void): () => void {
    this.hiddenListeners.add(f);
    return () => this.hiddenListeners.delete(f);
  }

  async start(admin: Admin): Promise<void> {
    for (const topic of [this.topics.cameras, this.topics.owners]) {
      for (const p of await retrying(() => admin.fetchTopicOffsets(topic))) {
        if (BigInt(p.high) > BigInt(p.low)) this.waiting.push({ topic, partition: p.partition, offset: BigInt(p.high) });
      }
    }
    if (this.waiting.length === 0) this.resolveReady();
    this.checkCamerasRead();
    const consumer = this.kafka.consumer({
      groupId: `${this.groupPrefix}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
      // Claims, releases and "ready" records decide a handover's gap: poll often (measured: at
      // 1 s, a camera edit took 650 ms to restart instead of 37 ms).
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
      sessionTimeout: this.session.sessionTimeoutMs,
      heartbeatInterval: this.session.heartbeatIntervalMs,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0) this.readUpTo(payload.topic, payload.partition, payload.lastOffset);
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [this.topics.cameras, this.topics.owners], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) this.ingest(batch.topic, batch.partition, m.key?.toString('utf8') ?? '', m.value, m.offset);
        this.readUpTo(batch.topic, batch.partition, batch.lastOffset());
        for (const f of this.listeners) f();
      },
    });
  }

  /**
   * The consumer has read a partition up to `lastOffset`. Batches whose records were all
   * filtered out (an aborted transaction's, control records) never reach eachBatch: kafkajs
   * reports them only as END_BATCH_PROCESS, which is counted too, or a slot holding only
   * those would keep `ready` (and every worker's start) waiting for ever.
   */
  private readUpTo(topic: string, partition: number, lastOffset: string): void {
    const next = BigInt(lastOffset) + 1n;
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const w = this.waiting[i];
      if (w.topic === topic && w.partition === partition && next >= w.offset) this.waiting.splice(i, 1);
    }
    if (this.waiting.length === 0) this.resolveReady();
    this.checkCamerasRead();
  }

  /** Once the cameras topic is read to its start-time end: the owners topic's state of cameras not in it is forgotten. */
  private checkCamerasRead(): void {
    if (this.camerasRead || this.waiting.some((w) => w.topic === this.topics.cameras)) return;
    this.camerasRead = true;
    for (const key of new Set([...this.owners.keys(), ...this.open.keys(), ...this.connected.keys(), ...this.handovers.keys()])) this.forget(key);
  }

  /**
   * What the owners topic says of a camera not in the cameras topic (removed, or never there) is
   * dropped: its last owner and its "ready", and its claims once all are released. Claims still
   * open are kept (the camera re-added, its new owner waits for them), of maxCameras cameras at
   * most, the oldest dropped first. Every worker kept an entry in each for every camera ever
   * claimed: cameras added and removed over months filled its memory.
   */
  private forget(camera: string): void {
    if (!this.camerasRead || this.records.has(camera)) {
      this.gone.delete(camera);
      return;
    }
    if ((this.open.get(camera)?.size ?? 0) > 0) {
      this.gone.delete(camera);
      this.gone.add(camera);
      if (this.gone.size <= this.maxCameras) return;
      camera = this.gone.values().next().value!;
    }
    this.gone.delete(camera);
    this.owners.delete(camera);
    this.open.delete(camera);
    this.connected.delete(camera);
    this.dropHandover(camera);
  }

  private dropHandover(camera: string): void {
    this.carried -= this.handovers.get(camera)?.cooldowns.length ?? 0;
    this.handovers.delete(camera);
  }

  /**
   * A record of a new camera id past maxCameras (or under a key no id can be): refused, counted,
   * logged at most once a minute. `held`: kept aside until a camera is removed (hold).
   */
  private refuse(key: string, why: string, held = false): void {
    this.refusedCameras++;
    this.refusedSinceLog++;
    const t = now();
    if (t - this.refusedLoggedAt < REFUSED_LOG_EVERY_MS) return;
    const shown = key.length > MAX_ID_LENGTH ? `${key.slice(0, MAX_ID_LENGTH)}… (${key.length} characters)` : key;
    this.log(
      `cluster: camera record "${shown}" refused: ${why}; it runs nowhere on this worker${held ? ' until a camera is removed' : ''} (${this.refusedSinceLog} record${this.refusedSinceLog > 1 ? 's' : ''} refused since the last such line, ${this.refusedCameras} in all)`,
      { code: ErrorCodes.CAMERA_LIMIT, camera: shown, refused: this.refusedCameras, maxCameras: this.maxCameras },
      'error',
    );
    this.refusedLoggedAt = t;
    this.refusedSinceLog = 0;
  }

  /** Applies one record of either topic (what the view's consumer reads; tests feed it directly). */
  ingest(topic: string, slot: number, key: string, value: Buffer | null, offset: string): void {
    const at = `${topic}/${slot}`;
    const o = BigInt(offset);
    if (o < (this.next.get(at) ?? 0n)) return; // already applied
    this.next.set(at, o + 1n);
    if (!key) return;
    try {
      if (topic === this.topics.cameras) this.applyCamera(slot, key, value, offset);
      else this.applyOwners(key, value, Number(offset));
    } catch {
      // A record of an unexpected shape changes nothing (the view never stops on one).
    }
  }

  /** The slots holding a record of camera `id` (more than one only while it is in error). */
  slotsOf(id: string): number[] {
    return [...(this.records.get(id)?.keys() ?? [])].sort((a, b) => a - b);
  }

  private applyCamera(slot: number, key: string, value: Buffer | null, offset: string): void {
    // Every slot's latest record of the id: one is the camera; a tombstone removes that slot's.
    let bySlot = this.records.get(key);
    // (A value past KEPT_BYTES is refused whatever follows: its first bytes stand for it.)
    const record = value && { text: (value.length > KEPT_BYTES ? value.subarray(0, KEPT_BYTES) : value).toString('utf8'), offset };
    if (!bySlot && this.hold(slot, key, record)) return;
    if (record === null) bySlot?.delete(slot);
    else {
      if (!bySlot) {
        if (key.length > MAX_ID_LENGTH) return this.refuse(key, `its key has ${key.length} characters; a camera id has at most ${MAX_ID_LENGTH}`);
        this.records.set(key, (bySlot = new Map()));
      }
      bySlot.set(slot, record);
    }
    if (!bySlot || bySlot.size === 0) {
      this.records.delete(key);
      this.cameras.delete(key);
      this.forget(key);
      this.admitHeld();
      return;
    }
    this.show(key, bySlot);
  }

  /**
   * A record of an id the view does not hold, while it holds maxCameras ids: kept aside in `held`
   * (true), at most HELD_CAMERAS ids (past them refused: counted, logged), or a tombstone of one
   * kept aside. Workers read the slots in their own order: a camera removed and another added in
   * its place, the topic at the bound, were read the new one first (at start, or while the move
   * was written), and the new one was refused for good: it ran nowhere. Held, it is taken in once
   * the removal is read.
   */
  private hold(slot: number, key: string, record: { text: string; offset: string } | null): boolean {
    let aside = this.held.get(key);
    if (record === null) {
      if (!aside) return false;
      aside.delete(slot);
      if (aside.size === 0) this.held.delete(key);
      return true;
    }
    if (!aside) {
      if (this.records.size < this.maxCameras || key.length > MAX_ID_LENGTH) return false;
      this.refuse(key, `this worker holds ${this.maxCameras} cameras already (cluster.maxCameras)`, this.held.size < this.heldMax);
      if (this.held.size >= this.heldMax) return true;
      this.held.set(key, (aside = new Map()));
    }
    aside.set(slot, record);
    return true;
  }

  /** Room made (a camera removed): the ids held aside longest are taken in, as far as there is room. */
  private admitHeld(): void {
    for (const [key, bySlot] of this.held) {
      if (this.records.size >= this.maxCameras) return;
      this.held.delete(key);
      this.records.set(key, bySlot);
      this.gone.delete(key);
      this.show(key, bySlot);
    }
  }

  /** The camera entry of `key` from its records, one per slot. */
  private show(key: string, bySlot: Map<number, { text: string; offset: string }>): void {
    if (bySlot.size > 1) {
      // Written into a second slot by a client with another partitioner (or after the topic's
      // partitions changed), or a move by `argus cameras` whose tombstone has not been read yet:
      // two workers would hold it. It runs nowhere until one of the records is removed.
      const [[a, first], [b]] = [...bySlot].sort(([x], [y]) => x - y);
      this.cameras.set(key, { id: key, slot: a, text: first.text, offset: first.offset, active: false, error: `in two slots (${a} and ${b}): written by a client with another partitioner, or the topic's partitions changed; argus cameras rm it and add it again` });
      return;
    }
    const [[only, rec]] = [...bySlot];
    const { raw, definition, error, missingEnv } = readCamera(key, rec.text, this.env);
    this.cameras.set(key, { id: key, slot: only, text: rec.text, offset: rec.offset, placement: raw.placement, active: raw.active && !raw.error, ...(error !== undefined ? { error, ...(missingEnv !== undefined && { missingEnv }) } : { definition }) });
  }

  private applyOwners(key: string, value: Buffer | null, offset: number): void {
    const camera = this.applyOwnersRecord(key, value, offset);
    if (camera !== undefined) this.forget(camera);
  }

  /** Applies a record of the owners topic; returns the camera it was about, if any. */
  private applyOwnersRecord(key: string, value: Buffer | null, offset: number): string | undefined {
    if (value === null) {
      if (key.startsWith(DRAIN_KEY_PREFIX)) this.drains.delete(key.slice(DRAIN_KEY_PREFIX.length));
      else if (key.startsWith(READY_KEY_PREFIX)) this.connected.delete(key.slice(READY_KEY_PREFIX.length));
      else if (!key.startsWith(RELEASE_KEY_PREFIX)) this.owners.delete(key);
      return undefined;
    }
    const r = JSON.parse(value.toString('utf8')) as Partial<Record<string, unknown>> | null;
    if (r === null || typeof r !== 'object') return undefined;
    const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 256;
    if (r.type === 'drain') {
      // Only a drain is kept: `--undo` (false) is what a worker absent from the map reads.
      if (str(r.worker) && typeof r.drain === 'boolean' && key === `${DRAIN_KEY_PREFIX}${r.worker}` && (this.drainsOf === undefined || r.worker === this.drainsOf)) {
        if (r.drain) this.drains.set(r.worker, true);
        else this.drains.delete(r.worker);
      }
      return undefined;
    }
    if (r.type === 'ready') {
      if (!str(r.camera) || !str(r.owner) || !str(r.incarnation) || key !== `${READY_KEY_PREFIX}${r.camera}`) return undefined;
      this.connected.set(r.camera, { member: `${r.owner}/${r.incarnation}`, offset });
      return r.camera;
    }
    // A release is keyed apart from its camera's claims (RELEASE_KEY_PREFIX); by the camera itself when an earlier version wrote it.
    const keyed = r.camera === key || (r.type === 'release' && key === `${RELEASE_KEY_PREFIX}${String(r.camera)}`);
    if ((r.type !== 'claim' && r.type !== 'release') || !str(r.camera) || !keyed || !str(r.owner)) return undefined;
    const incarnation = str(r.incarnation) ? r.incarnation : '';
    const when = typeof r.at === 'number' && Number.isFinite(r.at) ? r.at : 0;
    if (r.type === 'claim') {
      let open = this.open.get(key);
      if (!open) this.open.set(key, (open = new Map<number, OpenClaim>()));
      open.set(offset, { owner: r.owner, incarnation, epoch: offset });
      this.owners.set(key, { camera: key, state: 'claimed', owner: r.owner, incarnation, epoch: offset, at: when });
      return key;
    }
    // A release names the claim it ends: an earlier offset in this partition, by the same owner.
    const epoch = r.epoch;
    if (typeof epoch !== 'number' || !Number.isInteger(epoch) || epoch < 0 || epoch >= offset) return undefined;
    const camera = r.camera;
    const open = this.open.get(camera);
    const claim = open?.get(epoch);
    if (claim && claim.owner === r.owner) open!.delete(epoch);
    if (open?.size === 0) this.open.delete(camera);
    // What it hands over to the camera's next owner (its rule cooldowns): the latest release's, read
    // bounded. One without the list is a claim whose chain analysed nothing (a rebalance gave the
    // slot on first), a fenced chain's, or a worker's before 2026-12-08: what the camera's last
    // planned stop handed over stands (counted down by the time since it was written).
    // Before, that release erased it, and the next owner alerted again at once.
    const prev = this.handovers.get(camera);
    if (Array.isArray(r.cooldowns) && (!prev || prev.epoch <= epoch)) {
      const cooldowns = carriedCooldowns(r.cooldowns);
      this.carried -= prev?.cooldowns.length ?? 0;
      this.handovers.delete(camera); // re-set last: the oldest are dropped first
      if (cooldowns.length > 0) {
        this.handovers.set(camera, { epoch, at: when, cooldowns });
        this.carried += cooldowns.length;
        // Bounded over every camera: those whose cooldowns have all run out first, then the oldest.
        if (this.carried > MAX_HANDOVER_COOLDOWNS) {
          const t = Date.now();
          for (const [id, h] of this.handovers) if (h.cooldowns.every((c) => t - h.at >= c.leftMs)) this.dropHandover(id);
          for (const id of this.handovers.keys()) {
            if (this.carried <= MAX_HANDOVER_COOLDOWNS) break;
            this.dropHandover(id);
          }
        }
      }
    }
    const cur = this.owners.get(camera);
    if (cur && cur.epoch === epoch && cur.owner === r.owner) this.owners.set(camera, { ...cur, state: 'released', at: when });
    else if (cur && cur.state === 'released' && epoch < cur.epoch && key === `${RELEASE_KEY_PREFIX}${camera}`) for (const f of this.hiddenListeners) f(camera, cur);
    return camera;
  }

  /** Claims of `camera` below `epoch` that are still open (their owner has not released them). */
  openBefore(camera: string, epoch: number): OpenClaim[] {
    return [...(this.open.get(camera)?.values() ?? [])].filter((c) => c.epoch < epoch);
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect().catch(() => undefined);
  }
}

/**
 * The cooldowns a release record hands over (SourceAnalyzer.handover), as written by whoever can
 * write the owners topic: MAX_CARRIED_COOLDOWNS at most, each a rule id, a time left (at most a
 * day: a rule's cooldown is no longer than that here) and, where given, a box of four fractions
 * and a direction; anything else is dropped.
 */
function carriedCooldowns(v: unknown): CarriedCooldown[] {
  if (!Array.isArray(v)) return [];
  const out: CarriedCooldown[] = [];
  const frac = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= -1 && x <= 2;
  for (const c of v.slice(0, MAX_CARRIED_COOLDOWNS) as Partial<Record<string, unknown>>[]) {
    if (!c || typeof c !== 'object' || typeof c.rule !== 'string' || c.rule.length === 0 || c.rule.length > 256) continue;
    const left = c.leftMs;
    const open = c.open === true;
    if (typeof left !== 'number' || !Number.isFinite(left) || left < 0 || (left === 0 && !open) || left > 86_400_000) continue;
    const box = c.box;
    if (box !== undefined && !(Array.isArray(box) && box.length === 4 && box.every(frac))) continue;
    const dir = c.dir;
    if (dir !== undefined && dir !== 'in' && dir !== 'out') continue;
    out.push({ rule: c.rule, leftMs: left, ...(box ? { box: box as [number, number, number, number] } : {}), ...(dir ? { dir } : {}), ...(open && !box ? { open: true as const } : {}) });
  }
  return out;
}

/**
 * Claims and releases in the owners topic (one partition, compacted; claims keyed by camera,
 * releases by RELEASE_KEY_PREFIX and the camera). A claim's epoch is the offset the broker gave it: it only grows, so a later owner's messages
 * always carry a larger epoch than an earlier one's, with no counter to coordinate.
 */
/** Claims written in one record batch at most (see OwnerLog.claim). */
export const CLAIMS_PER_WRITE = 500;

export class OwnerLog {
  constructor(
    private readonly producer: Producer,
    private readonly topic: string,
    private readonly workerId: string,
    private readonly incarnation: string,
  ) {}

  /**
   * Claims cameras in one write: their records form one batch, so each claim's epoch (its
   * offset) is the batch's base offset plus its place in it. One round trip for a worker that
   * takes over many cameras at once, instead of one per camera.
   */
  async claim(cameras: readonly string[]): Promise<number[]> {
    const epochs: number[] = [];
    const at = Date.now();
    // At most CLAIMS_PER_WRITE a batch: a record batch over the topic's max.message.bytes (1 MB
    // by default; a claim is up to ~400 bytes) would be refused whole, every time.
    for (let i = 0; i < cameras.length; i += CLAIMS_PER_WRITE) {
      const part = cameras.slice(i, i + CLAIMS_PER_WRITE);
      const messages = part.map((camera) => {
        const rec: OwnersRecord = { type: 'claim', camera, owner: this.workerId, incarnation: this.incarnation, at };
        return { key: camera, value: JSON.stringify(rec), partition: 0 };
      });
      const [meta] = await this.producer.send({ topic: this.topic, acks: -1, messages });
      const base = Number(meta.baseOffset);
      part.forEach((_, k) => epochs.push(base + k));
    }
    return epochs;
  }

  /** Tells the camera's current owner that this worker's connection to it delivers frames: the owner may hand over now. */
  async ready(camera: string): Promise<void> {
    const rec: OwnersRecord = { type: 'ready', camera, owner: this.workerId, incarnation: this.incarnation, at: Date.now() };
    await this.producer.send({ topic: this.topic, acks: 1, messages: [{ key: `${READY_KEY_PREFIX}${camera}`, value: JSON.stringify(rec), partition: 0 }] });
  }

  /**
   * Releases claim `epoch` of `camera`; `cooldowns`: its chain's rule cooldowns still running, for
   * the camera's next owner (SourceAnalyzer.handover), empty where none is; none given (a chain
   * that analysed nothing), the record has no list and the camera's last hand-over stands.
   */
  async release(camera: string, epoch: number, cooldowns?: readonly CarriedCooldown[]): Promise<void> {
    const rec: OwnersRecord = { type: 'release', camera, owner: this.workerId, incarnation: this.incarnation, epoch, at: Date.now(), ...(cooldowns ? { cooldowns: cooldowns.slice(0, MAX_CARRIED_COOLDOWNS) } : {}) };
    // Keyed apart from the claims (RELEASE_KEY_PREFIX): compaction keeps the camera's latest claim and its latest release.
    await this.producer.send({ topic: this.topic, acks: -1, messages: [{ key: `${RELEASE_KEY_PREFIX}${camera}`, value: JSON.stringify(rec), partition: 0 }] });
  }
}

/** What a cameras topic with fewer partitions than cluster.slots costs (fewerPartitions' `cost`). */
export const SLOTS_COST = "its partitions are the slots, and a slot runs on one worker at a time: no more workers than that run cameras, however many start (it is read as it is: recreate the topic with more, then argus cameras apply the cameras again; --alter --partitions moves cameras' slots)";

/** The cameras topic with the partitions a worker asks for: cluster.slots (fewerPartitions). */
export function camerasWantedPartitions(t: { cameras: string; slots: number }): WantedPartitions {
  return { topic: t.cameras, partitions: t.slots, setting: 'cluster.slots', cost: SLOTS_COST };
}

/**
 * Creates the cameras topic (`slots` partitions) and the owners topic (1 partition), both
 * compacted, when missing. Returns what a cameras topic that existed with fewer partitions than
 * `slots` costs (fewerPartitions), for the caller to say; nothing when the broker does not tell.
 */
export async function ensureClusterTopics(admin: Admin, t: { cameras: string; owners: string; slots: number; replicationFactor: number }): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const compact = [
    { name: 'cleanup.policy', value: 'compact' },
    // Claims and releases stay readable for a day before compaction may drop superseded ones
    // (a worker that starts reads every open claim of a camera).
    { name: 'min.compaction.lag.ms', value: String(24 * 3_600_000) },
  ];
  const topics = [];
  if (!existing.has(t.cameras)) topics.push({ topic: t.cameras, numPartitions: t.slots, replicationFactor: t.replicationFactor, configEntries: compact });
  if (!existing.has(t.owners)) topics.push({ topic: t.owners, numPartitions: 1, replicationFactor: t.replicationFactor, configEntries: compact });
  // Topics made by someone else (a managed Kafka where clients may not create them) are checked (checkExistingTopics).
  // (alreadyMade: another worker created them at the same moment.)
  if (topics.length > 0) await createTopicsReady(admin, topics, { alreadyMade: true });
  return checkExistingTopics(admin, t, existing);
}

/**
 * What a worker's start would say of the cluster topics there already, without making any (`argus
 * check --connect`): a topic that deletes records is VAP_ERR_CONFIG (thrown, as the worker refuses
 * it), a cameras topic with fewer partitions than `slots` is returned (fewerPartitions, as the
 * worker's warning).
 */
export async function checkClusterTopics(admin: Admin, t: { cameras: string; owners: string; slots: number }): Promise<string[]> {
  return checkExistingTopics(admin, t, new Set(await admin.listTopics()));
}

async function checkExistingTopics(admin: Admin, t: { cameras: string; owners: string; slots: number }, existing: Set<string>): Promise<string[]> {
  const made = [t.cameras, t.owners].filter((name) => existing.has(name));
  if (made.length > 0) await checkKept(admin, made.map((name) => ({ name, field: name === t.cameras ? 'cluster.camerasTopic' : 'cluster.ownersTopic' })));
  if (!existing.has(t.cameras)) return [];
  const fewer = await fewerPartitions(admin, [camerasWantedPartitions(t)]).catch((e: unknown) => {
    if (connectionError(e)) throw e;
    return [];
  });
  return fewer.map((f) => `cluster.camerasTopic: ${f.message}`);
}

/** Kafka's ConfigResource type of a topic (kafkajs's ConfigResourceTypes.TOPIC, which its ES module build does not export by name). */
const TOPIC_CONFIG_RESOURCE = 2;

/**
 * The cluster topics keep each key's latest record for as long as the key lives: compacted, and
 * nothing deleted by age or size. A topic created beforehand with Kafka's defaults
 * (cleanup.policy=delete, 7 days) lost its cameras a week after they were written: the workers
 * running kept them in memory, and one started after that read none and ran nothing, without a
 * word (the owners topic's claims likewise: a new owner no longer waited for the running one).
 * Refused, naming the topic, its settings and the fix. A deleting policy with neither limit
 * (retention.ms and retention.bytes -1: a managed Kafka's "infinite retention") deletes nothing,
 * and is taken. Brokers that do not let this client read topic settings are not checked.
 */
async function checkKept(admin: Admin, topics: { name: string; field: string }[]): Promise<void> {
  let resources: { resourceName: string; configEntries: { configName: string; configValue: string }[] }[];
  try {
    ({ resources } = await admin.describeConfigs({ includeSynonyms: false, resources: topics.map((t) => ({ type: TOPIC_CONFIG_RESOURCE, name: t.name, configNames: ['cleanup.policy', 'retention.ms', 'retention.bytes'] })) }));
  } catch (e) {
    if (connectionError(e)) throw e;
    return;
  }
  for (const t of topics) {
    const entries = resources.find((r) => r.resourceName === t.name)?.configEntries;
    if (!entries) continue;
    const value = (name: string) => entries.find((e) => e.configName === name)?.configValue;
    const policy = value('cleanup.policy') ?? '';
    const policies = policy.split(',').map((p) => p.trim());
    // retention.ms not given counts as a limit (the topic may delete by age); retention.bytes not
    // given, as Kafka's default (-1), as none.
    const limit = (name: string, missing: number): number | undefined => {
      const v = Number(value(name) ?? missing);
      return v < 0 ? undefined : v;
    };
    const [ms, bytes] = [limit('retention.ms', NaN), limit('retention.bytes', -1)];
    const deletes = policies.includes('delete') && (ms !== undefined || bytes !== undefined);
    if (!deletes && (policies.includes('compact') || policies.includes('delete'))) continue;
    const how = [ms !== undefined && (Number.isFinite(ms) ? `after retention.ms (${ms} ms)` : 'by age'), bytes !== undefined && `past retention.bytes (${bytes} bytes a partition)`].filter(Boolean).join(' and ');
    throw new ArgusError(
      ErrorCodes.CONFIG,
      `${t.field}: topic ${t.name} has cleanup.policy=${policy || '(none)'}: Kafka deletes its records ${how || 'by age'}, and with them what the cluster runs (a worker started after that reads none of them); make it compacted only (kafka-configs.sh --alter --entity-type topics --entity-name ${t.name} --add-config cleanup.policy=compact)`,
    );
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
