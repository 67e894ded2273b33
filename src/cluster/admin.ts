import { AssignerProtocol, Kafka, Partitioners, type Admin, type KafkaConfig } from 'kafkajs';
import { decodeInfo, memberWorker } from './kafkajs-membership.js';
import { CamerasFileSchema, ClusterSchema, type ClusterConfig, type KafkaSinkConfig, type Placement } from '../config/schema.js';
import { loadPipelineParts, parseConfigText, parseYamlText, readConfigText, YamlTextError } from '../config/load.js';
import { lenientEnv } from '../config/interpolate.js';
import { ArgusError, ErrorCodes, isArgusError } from '../core/errors.js';
import { writeStderr } from '../core/log.js';
import { forTerminalLines } from '../core/text.js';
import { brokersText, checkBrokerFlags, commandKafkaConfig, disconnectBounded, reachKafka, untilStopped } from '../sinks/kafka-reach.js';
import { placementKey, SlotPlacements, unmet } from './placement.js';
import { CAMERA_ENV_PREFIX, DRAIN_KEY_PREFIX, ClusterView, MAX_CAMERA_RECORD_CHARS, ensureClusterTopics, forbiddenEnvRefs, parseCamera, rawCamera, retrying, type OwnersRecord } from './view.js';

/** `argus cameras …` and `argus cluster …`: what they need to reach the cluster. */
export interface ClusterTarget {
  brokers: string[];
  cluster: ClusterConfig;
  /** TLS and SASL, as the workers of `--config` reach the brokers (its sinks.kafka). */
  ssl?: KafkaSinkConfig['ssl'];
  sasl?: KafkaSinkConfig['sasl'];
  /** How long to wait for the brokers to answer at all, ms. Default CONNECT_TIMEOUT_MS. */
  connectTimeoutMs?: number;
  /** Where a warning about the cluster topics goes (a cameras topic with fewer partitions than cluster.slots). Default stderr, `argus: warning: …`. */
  warn?: (message: string) => void;
  /**
   * The command's stop (its first SIGINT or SIGTERM): every wait on the brokers (the connect, the
   * topics' reading, a write, the group's description) ends at once with VAP_ERR_INTERRUPTED.
   */
  signal?: AbortSignal;
  /** The command, for the message of a stop (`cameras ls`). */
  command?: string;
}

/** The cluster section of a worker YAML (`--config`), or the defaults with `--brokers`. */
export async function clusterTarget(o: { config?: string; brokers?: string[] }): Promise<ClusterTarget> {
  // With --config or not (its credentials would go to what --brokers names).
  checkBrokerFlags(o.brokers);
  if (o.config) {
    const { clusterBrokers, clusterKafkaAuth } = await import('./worker.js');
    // Only the brokers, the cluster section and the Kafka sink's TLS and SASL are read here: a
    // variable only the workers need (a WebSocket token, a camera password) may be unset.
    const config = await loadPipelineParts(o.config, ['cluster', 'sinks.kafka']);
    if (!config.cluster) throw new ArgusError(ErrorCodes.CONFIG, `${o.config}: no cluster section (a worker config is needed)`);
    // The workers' TLS and SASL too: without them, a secured cluster was unreachable from here.
    return { brokers: o.brokers?.length ? o.brokers : clusterBrokers(config), cluster: config.cluster, ...clusterKafkaAuth(config) };
  }
  if (!o.brokers?.length) throw new ArgusError(ErrorCodes.CONFIG, '--brokers or --config: where is the cluster?');
  return { brokers: o.brokers, cluster: ClusterSchema.parse({}) };
}

/** Connects `admin` within the target's connect timeout, or fails with VAP_ERR_KAFKA_UNREACHABLE naming the brokers and why. */
export function reach(t: ClusterTarget, admin: Pick<Admin, 'connect' | 'disconnect'>): Promise<void> {
  return reachKafka(t.brokers, admin, {
    timeoutMs: t.connectTimeoutMs,
    signal: t.signal,
    command: t.command,
    hint: (refused) => (refused ? 'check cluster.sasl (or sinks.kafka.sasl) of --config' : 'is Kafka running there? (--brokers, or the brokers of --config)'),
  });
}

/** The Kafka client settings of `argus cameras` / `argus cluster` for a target. */
export function adminKafkaConfig(t: ClusterTarget): KafkaConfig {
  return commandKafkaConfig('argus-cluster-admin', t);
}

/**
 * Connects an admin client, makes sure of the cluster topics, and runs `f` (`doing`, for the
 * message of a stop). A stop (t.signal) ends it at once with VAP_ERR_INTERRUPTED, the client's
 * disconnect not waited for (against a broker that no longer answers it may not end).
 */
async function withAdmin<T>(t: ClusterTarget, doing: string, f: (admin: Admin, kafka: Kafka) => Promise<T>, note = ''): Promise<T> {
  const kafka = new Kafka(adminKafkaConfig(t));
  const admin = kafka.admin();
  await reach(t, admin);
  const work = async () => {
    const fewer = await ensureClusterTopics(admin, { cameras: t.cluster.camerasTopic, owners: t.cluster.ownersTopic, slots: t.cluster.slots, replicationFactor: t.cluster.replicationFactor });
    // (A cameras topic with fewer partitions than cluster.slots: said by the workers and by check, and here, where cameras are placed in its slots.)
    for (const w of fewer) (t.warn ?? ((m: string) => writeStderr(`argus: warning: ${forTerminalLines(m)}\n`)))(w);
    return await f(admin, kafka);
  };
  let result: T;
  try {
    result = await untilStopped(work(), t.signal, (sig) => `${t.command ? `${t.command}: ` : ''}${sig} while ${doing} on the Kafka ${brokersText(t.brokers)}: stopped on the signal${note}`);
  } catch (e) {
    if (isArgusError(e, ErrorCodes.INTERRUPTED)) void admin.disconnect().catch(() => undefined);
    else await disconnectBounded(admin);
    throw e;
  }
  await disconnectBounded(admin);
  return result;
}

/** Reads both cluster topics to their end. */
export async function snapshot(t: ClusterTarget): Promise<ClusterView> {
  return withAdmin(t, `reading the cluster topics ${t.cluster.camerasTopic} and ${t.cluster.ownersTopic}`, async (admin, kafka) => {
    // The records as the workers will read them, but `${env:…}` is theirs to resolve: a variable
    // this shell lacks is no error here (it made every apply rewrite the camera, and ls call it invalid).
    const view = new ClusterView(kafka, { cameras: t.cluster.camerasTopic, owners: t.cluster.ownersTopic }, 'argus-cluster-admin', lenientEnv(), undefined, { maxCameras: Infinity });
    await view.start(admin);
    const timeout = new Promise<never>((_, rej) => setTimeout(() => rej(new ArgusError(ErrorCodes.KAFKA_UNREACHABLE, `cluster: could not read the cluster topics ${t.cluster.camerasTopic} and ${t.cluster.ownersTopic} from the Kafka ${brokersText(t.brokers)} within 30 s`)), 30_000).unref());
    try {
      await Promise.race([view.ready, timeout]);
    } finally {
      await view.stop();
    }
    return view;
  });
}

type Outgoing = { key: string; value: string | null; partition?: number };

async function produce(t: ClusterTarget, topic: string, messages: Outgoing[]): Promise<void> {
  if (messages.length === 0) return;
  // A stop while it writes may come after the brokers took the records: said so.
  await withAdmin(t, `writing to topic ${topic}`, async (_admin, kafka) => {
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    try {
      await retrying(() => producer.send({ topic, acks: -1, messages }));
    } finally {
      await disconnectBounded(producer);
    }
  }, ` (the brokers may have taken some of the records: argus cameras ls says what the cluster has)`);
}

/**
 * The most bytes of a cameras file (`argus cameras apply`): 8 MiB, thousands of cameras of a few
 * KB, 128 at the record's own limit (MAX_CAMERA_RECORD_CHARS).
 */
export const MAX_CAMERAS_FILE_BYTES = 8 * 1024 * 1024;

/** A pipeline given where a cameras file is wanted (`argus cameras apply pipelines/demo.yaml`: "cameras: Required" and its keys listed as unknown). */
function notACamerasFile(doc: Record<string, unknown>): string | undefined {
  if ('cameras' in doc || !('sources' in doc || 'cluster' in doc)) return undefined;
  return 'a pipeline YAML, not a cameras file: `argus run FILE` runs a pipeline (`argus worker FILE` a worker\'s); a cameras file lists `cameras: [{id, uri, …}]`, as pipelines/cameras.yaml';
}

/** The cameras of a YAML file (`cameras: [...]`), each as written (its record value) and validated. Errors name the file and the field. */
export async function readCamerasFile(file: string): Promise<{ id: string; value: string }[]> {
  const text = await readConfigText(file, MAX_CAMERAS_FILE_BYTES);
  // A variable a camera may not read is said first, before this shell's value of it is
  // validated in its place: `${env:HOME}` in a password was refused as "the part before '@'
  // holds '/'" (HOME's /root), which sent the user after the password, not the variable.
  let doc: { cameras?: unknown } | null;
  try {
    doc = parseYamlText(text) as { cameras?: unknown } | null;
  } catch (e) {
    if (e instanceof YamlTextError) throw new ArgusError(ErrorCodes.CONFIG_FILE, `${file}: ${e.message}`);
    throw e;
  }
  if (doc && typeof doc === 'object' && Array.isArray(doc.cameras)) {
    doc.cameras.forEach((c: unknown, i) => {
      const forbidden = forbiddenEnvRefs(JSON.stringify(c) ?? '');
      if (forbidden.length) throw new ArgusError(ErrorCodes.CONFIG, `${file}: cameras[${i}]: \${env:${forbidden[0]}}: a camera may read only ${CAMERA_ENV_PREFIX}* variables of the workers' environment`);
    });
  }
  // Validated (coded errors naming the field) and written as the user gave it: `${env:…}`
  // stays a reference, resolved by each worker from its own environment, so a password in one
  // never enters Kafka. Validation here stands in '1' for a variable this shell lacks.
  const parsed = parseConfigText(text, CamerasFileSchema, file, lenientEnv(), notACamerasFile);
  const raw = doc as { cameras: Record<string, unknown>[] };
  const seen = new Set<string>();
  return parsed.cameras.map((c, i) => {
    const id = c.source.id;
    if (seen.has(id)) throw new ArgusError(ErrorCodes.CONFIG, `${file}: cameras[${i}].id: duplicate camera id "${id}"`);
    seen.add(id);
    const value = JSON.stringify(raw.cameras[i]);
    if (value.length > MAX_CAMERA_RECORD_CHARS) throw tooLong(`${file}: cameras[${i}]`, value);
    return { id, value };
  });
}

export interface ApplyResult {
  added: string[];
  changed: string[];
  unchanged: string[];
  removed: string[];
}

/** The number of slots (partitions of the cameras topic) as the broker has them. */
async function slotCount(t: ClusterTarget): Promise<number> {
  return withAdmin(t, `looking up topic ${t.cluster.camerasTopic}`, async (admin) => (await retrying(() => admin.fetchTopicOffsets(t.cluster.camerasTopic))).length);
}

/** The slot Kafka's default partitioner gives a key (kafkajs's, the same murmur2 as Java's). */
export function homeSlot(topic: string, key: string, slots: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: slots }, (_, partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  return partitioner({ topic, partitionMetadata, message: { key, value: null } });
}

/**
 * The records that put `cams` in place: each camera in a slot whose cameras ask for the same
 * placement (placement.ts, SlotPlacements), its home slot when it can; a camera that moves slot gets
 * a tombstone in every slot it leaves, written before its new record.
 */
export function placeCameras(topic: string, view: Pick<ClusterView, 'cameras' | 'slotsOf'>, cams: { id: string; value: string }[], slots: number): Outgoing[] {
  const placed = new SlotPlacements([...view.cameras.values()].map((c) => ({ id: c.id, slot: c.slot, key: placementKey(c.placement) })));
  const tombstones: Outgoing[] = [];
  const records: Outgoing[] = [];
  for (const c of cams) {
    const key = placementKey(rawCamera(c.value).placement);
    const slot = placed.choose(c.id, key, homeSlot(topic, c.id, slots), slots);
    if (slot === undefined) throw new ArgusError(ErrorCodes.CONFIG, `camera ${c.id}: every one of the ${slots} slots holds cameras of another placement (cameras sharing a slot must share their placement): raise cluster.slots, or give fewer placements`);
    for (const s of view.slotsOf(c.id)) if (s !== slot) tombstones.push({ key: c.id, value: null, partition: s });
    placed.put({ id: c.id, slot, key });
    records.push({ key: c.id, value: c.value, partition: slot });
  }
  return [...tombstones, ...records];
}

/** Slots whose cameras ask for different placements (written by two `argus cameras` at once, or by another client): slot → camera ids. */
export function mixedSlots(view: Pick<ClusterView, 'cameras'>): Map<number, string[]> {
  const by = new Map<number, { keys: Set<string>; ids: string[] }>();
  for (const c of view.cameras.values()) {
    let e = by.get(c.slot);
    if (!e) by.set(c.slot, (e = { keys: new Set(), ids: [] }));
    e.keys.add(placementKey(c.placement));
    e.ids.push(c.id);
  }
  return new Map([...by].filter(([, e]) => e.keys.size > 1).map(([slot, e]) => [slot, e.ids.sort()]));
}

/** Refuses, before anything is written, a cameras topic of more cameras than a worker holds (the others would run nowhere). */
export function checkCameraCount(total: number, maxCameras: number): void {
  if (total > maxCameras) throw new ArgusError(ErrorCodes.CONFIG, `cluster.maxCameras: the cameras topic would hold ${total} cameras; a worker holds ${maxCameras} at most, and the others would run nowhere (raise cluster.maxCameras in the workers' and this command's config, or remove cameras)`);
}

/** Makes the cameras topic hold exactly the file's cameras (with `prune`), or adds/replaces them (without). */
export async function applyCameras(t: ClusterTarget, cams: { id: string; value: string }[], prune: boolean): Promise<ApplyResult> {
  const view = await snapshot(t);
  const r: ApplyResult = { added: [], changed: [], unchanged: [], removed: [] };
  const changed: { id: string; value: string }[] = [];
  const wanted = new Set(cams.map((c) => c.id));
  // A camera in a slot of mixed placements is written again (placed anew), even if unchanged.
  const mixed = new Set([...mixedSlots(view).values()].flat());
  for (const c of cams) {
    const cur = view.cameras.get(c.id);
    if (cur?.text === c.value && !cur.error && !mixed.has(c.id)) {
      r.unchanged.push(c.id);
      continue;
    }
    (cur ? r.changed : r.added).push(c.id);
    changed.push(c);
  }
  const messages: Outgoing[] = [];
  if (prune) {
    for (const id of view.cameras.keys()) {
      if (wanted.has(id)) continue;
      r.removed.push(id);
      for (const s of view.slotsOf(id)) messages.push({ key: id, value: null, partition: s });
      view.cameras.delete(id); // its slot is free for the file's cameras
    }
  }
  checkCameraCount(view.cameras.size + r.added.length, t.cluster.maxCameras);
  if (changed.length) messages.push(...placeCameras(t.cluster.camerasTopic, view, changed, await slotCount(t)));
  // Tombstones are acknowledged before the records that replace them are written (readers may
  // still read partitions in any order: the view ends in the new slot either way).
  await produce(t, t.cluster.camerasTopic, messages.filter((m) => m.value === null));
  await produce(t, t.cluster.camerasTopic, messages.filter((m) => m.value !== null));
  return r;
}

/** Removes cameras (a tombstone in every slot holding one); returns the ids that were not there. */
export async function removeCameras(t: ClusterTarget, ids: string[]): Promise<string[]> {
  const view = await snapshot(t);
  const unknown = ids.filter((id) => !view.cameras.has(id));
  await produce(t, t.cluster.camerasTopic, ids.flatMap((id) => view.slotsOf(id).map((partition) => ({ key: id, value: null, partition }))));
  return unknown;
}

/** One camera of `argus cameras ls` / `argus cluster status`. */
export interface CameraStatus {
  id: string;
  slot: number;
  cost: number;
  enabled: boolean;
  error?: string;
  owner?: string;
  epoch?: number;
  state?: 'claimed' | 'released';
  since?: string;
  /** Where it may run (its record's placement). */
  placement?: Placement;
}

export async function listCameras(t: ClusterTarget): Promise<CameraStatus[]> {
  const view = await snapshot(t);
  return [...view.cameras.values()]
    .sort((a, b) => (a.id < b.id ? -1 : 1))
    .map((c) => {
      const o = view.owners.get(c.id);
      const s: CameraStatus = { id: c.id, slot: c.slot, cost: c.definition?.cost ?? 0, enabled: c.definition?.source.enabled ?? false };
      if (c.placement) s.placement = c.placement;
      if (c.error) s.error = c.error;
      if (o) Object.assign(s, { owner: o.owner, epoch: o.epoch, state: o.state, since: new Date(o.at).toISOString() });
      return s;
    });
}

export interface WorkerStatus {
  worker: string;
  memberId: string;
  capacity: number;
  labels: Record<string, string>;
  slots: number[];
  cameras: string[];
  draining: boolean;
  /** Slots it reported unreachable (a camera there gave it no frame for cluster.unreachableAfterMs): the group gives them to another worker where it can. */
  unreachable: number[];
}

export interface ClusterStatus {
  group: string;
  state: string;
  /** The group is giving its members new slots: who holds what is not known until it settles. */
  rebalancing: boolean;
  workers: WorkerStatus[];
  cameras: CameraStatus[];
  /** Enabled cameras whose slot no worker holds (none is named while the group rebalances). */
  unassigned: string[];
  /** Why, for those whose placement no worker in the group satisfies (camera id → reason). */
  unplaceable: Record<string, string>;
}

/** A group's state while its members are being given new slots: its description then carries no assignment. */
const REBALANCING = new Set(['PreparingRebalance', 'CompletingRebalance']);

/** What `describeGroups` says of one member, as {@link statusOf} reads it. */
export interface GroupMember {
  memberId: string;
  memberMetadata: Buffer;
  memberAssignment: Buffer;
}

/**
 * The cluster's status from one group description. While the group is rebalancing, the broker
 * describes no member's slots, so no camera is called unassigned then: `rebalancing` says so.
 */
export function statusOf(t: ClusterTarget, group: { state: string; members: GroupMember[] } | undefined, cameras: CameraStatus[], view: ClusterView): ClusterStatus {
  const state = group?.state ?? 'Dead';
  const rebalancing = REBALANCING.has(state);
  const workers: WorkerStatus[] = [];
  const held = new Set<number>();
  for (const m of group?.members ?? []) {
    const info = decodeInfo(m.memberMetadata);
    if (info === 'nudge') continue; // a worker's request for a rebalance, about to leave
    let slots: number[] = [];
    try {
      slots = [...(AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[t.cluster.camerasTopic] ?? [])].sort((a, b) => a - b);
    } catch {
      // no assignment yet
    }
    for (const s of slots) held.add(s);
    const worker = info?.workerId ?? m.memberId; // not an argus worker: its member id
    workers.push({ worker, memberId: m.memberId, capacity: info?.capacity ?? 0, labels: info?.labels ?? {}, slots, cameras: cameras.filter((c) => c.owner === worker && c.state === 'claimed').map((c) => c.id), draining: view.drains.get(worker) === true, unreachable: info?.unreachable ?? [] });
  }
  workers.sort((a, b) => (a.worker < b.worker ? -1 : 1));
  const unassigned = rebalancing ? [] : cameras.filter((c) => c.enabled && !held.has(c.slot));
  const unplaceable: Record<string, string> = {};
  const mixed = mixedSlots(view);
  const able = workers.filter((w) => w.capacity > 0);
  for (const c of unassigned) {
    const mates = mixed.get(c.slot);
    if (mates) {
      unplaceable[c.id] = `slot ${c.slot} also holds ${mates.filter((m) => m !== c.id).join(', ')}, of another placement: argus cameras apply (or add) places them anew`;
      continue;
    }
    if (!c.placement || able.some((w) => unmet(c.placement, { workerId: w.worker, labels: w.labels }) === undefined)) continue;
    const pinned = c.placement.pin !== undefined ? workers.find((w) => w.worker === c.placement!.pin) : undefined;
    const pinNote = pinned ? (pinned.capacity > 0 ? '' : `${pinned.worker} is in the group but drained; `) : '';
    unplaceable[c.id] = `${pinNote}${unmet(c.placement, { workerId: '', labels: {} })}: no worker in the group has that`;
  }
  return { group: t.cluster.group, state, rebalancing, workers, cameras, unassigned: unassigned.map((c) => c.id), unplaceable };
}

/**
 * Workers, their slots and cameras, and the cameras no worker holds. A group caught mid-rebalance
 * is described again (every 250 ms, for up to `settleMs`) so that the answer is of a settled group
 * where one comes within that time.
 */
export async function clusterStatus(t: ClusterTarget, settleMs = 5000): Promise<ClusterStatus> {
  const cameras = await listCameras(t);
  const view = await snapshot(t);
  return withAdmin(t, `describing group ${t.cluster.group}`, async (admin) => {
    const until = Date.now() + settleMs;
    for (;;) {
      const { groups } = await retrying(() => admin.describeGroups([t.cluster.group]));
      const g = groups[0];
      if (!REBALANCING.has(g?.state ?? '') || Date.now() >= until) return statusOf(t, g, cameras, view);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
}

/**
 * Asks a worker to release its cameras and take none (or, with `undo`, to take its share again).
 * The request is kept (a worker started later with that id joins drained), so an id no worker can
 * have is refused before anything is written, and the answer says whether a worker with that id
 * is in the group now (undefined: not known, the group rebalancing): a typo (`drain w11` for w1)
 * drained no one then, said nothing, and drained a worker w11 whenever one started.
 */
export async function drainWorker(t: ClusterTarget, worker: string, undo = false): Promise<{ inGroup?: boolean }> {
  if (!ClusterSchema.safeParse({ workerId: worker }).success) {
    throw new ArgusError(ErrorCodes.USAGE, `cluster drain: not a worker id (letters, digits, dot, dash or underscore, at most 128 characters; argus cluster status names the workers)`);
  }
  const rec: OwnersRecord = { type: 'drain', worker, drain: !undo, at: Date.now() };
  await produce(t, t.cluster.ownersTopic, [{ key: `${DRAIN_KEY_PREFIX}${worker}`, value: JSON.stringify(rec) }]);
  return withAdmin(t, `describing group ${t.cluster.group}`, async (admin) => {
    const g = (await retrying(() => admin.describeGroups([t.cluster.group]))).groups[0];
    // A rebalancing group describes its members without their ids.
    if (g && REBALANCING.has(g.state)) return {};
    return { inGroup: (g?.members ?? []).some((m) => memberWorker(m.memberMetadata)?.workerId === worker) };
  });
}

/** `--label k=v` (repeatable) as labels; a malformed one is a coded error naming it. */
export function parseLabels(list: readonly string[] | undefined): Record<string, string> | undefined {
  if (!list?.length) return undefined;
  const out: Record<string, string> = {};
  for (const l of list) {
    const i = l.indexOf('=');
    if (i <= 0) throw new ArgusError(ErrorCodes.CONFIG, `--label ${l}: expected name=value`);
    out[l.slice(0, i)] = l.slice(i + 1);
  }
  return out;
}

/** A camera whose record workers would refuse for its size (MAX_CAMERA_RECORD_CHARS). */
function tooLong(where: string, value: string): ArgusError {
  return new ArgusError(ErrorCodes.CONFIG, `${where}: its record would have ${value.length} characters; workers read camera records of at most ${MAX_CAMERA_RECORD_CHARS} (a polygon of thousands of points: simplify it)`);
}

/** One camera from command-line fields (`argus cameras add --id … --uri …`), validated like a file's. */
export function cameraFromFields(f: Record<string, unknown>): { id: string; value: string } {
  const clean = Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
  const value = JSON.stringify(clean);
  const id = String(clean.id ?? '');
  if (value.length > MAX_CAMERA_RECORD_CHARS) throw tooLong('camera', value);
  // As for a file: `${env:…}` is the workers' to resolve, not this shell's.
  const r = parseCamera(id, value, lenientEnv());
  if (r.error) throw new ArgusError(ErrorCodes.CONFIG, `camera: ${r.error}`);
  return { id, value };
}
