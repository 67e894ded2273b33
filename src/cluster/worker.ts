import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { catchError, EMPTY, filter, finalize, mergeAll, type Observable, Subject } from 'rxjs';
import type { FrameResult } from '../analytics/analyze.js';
import type { CarriedCooldown } from '../analytics/analyzer.js';
import { hostId } from '../config/interpolate.js';
import type { ClusterConfig, KafkaSinkConfig, PipelineConfig } from '../config/schema.js';
import type { PipelineParts } from '../config/load.js';
import { withDeadline } from '../core/clock.js';
import { ArgusError, ErrorCodes, inContext } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import type { Frame } from '../core/frame.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { ClusterMetricsState } from '../server/metrics.js';
import { outboxDir, runPipeline, type RunningPipeline, type RunOptions, type RunSummary } from '../pipeline/run.js';
import { runTag, type Claim, type StatusMessage } from '../sinks/message.js';
import type { SourceState, Transition } from '../sources/health.js';
import { KafkajsMembership } from './kafkajs-membership.js';
import { chainTag, clusterTag, readStored, reportsFile, writeReports, type StoredRefusal, type StoredReport } from './reports.js';
import { MAX_UNREACHABLE_SLOTS, type Assignment, type GroupMembership, type MemberInfo, type SlotTable } from './membership.js';
import { satisfies, unmet, type PlacementTarget } from './placement.js';
import { redact } from '../core/redact.js';
import { connectionError, describeKafkaError } from '../sinks/kafka.js';
import { ClusterView, ensureClusterTopics, OwnerLog, type CameraEntry, type OpenClaim } from './view.js';

/** A worker id from the host name and the process id (ids allow letters, digits, dot, dash, underscore). */
export function defaultWorkerId(): string {
  return `${hostId()}-${process.pid}`;
}

/**
 * How a worker's Kafka clients for the cluster topics authenticate (TLS, SASL): `cluster.ssl` and
 * `cluster.sasl` where given (false: none), else the Kafka sink's (the cluster's brokers are the
 * sink's unless `cluster.brokers` names others, whose credentials may differ).
 */
export function clusterKafkaAuth(config: PipelineParts): Pick<KafkaSinkConfig, 'ssl' | 'sasl'> {
  const k = config.sinks.kafka;
  const c = config.cluster;
  const ssl = c?.ssl ?? k?.ssl;
  const sasl = c?.sasl === false ? undefined : (c?.sasl ?? k?.sasl);
  return { ...(ssl !== undefined ? { ssl } : {}), ...(sasl ? { sasl } : {}) };
}

/** Kafka's ConfigResource type of a broker (kafkajs's ConfigResourceTypes.BROKER, which its ES module build does not export by name). */
const BROKER_CONFIG_RESOURCE = 4;

/**
 * A session timeout outside the brokers' range (group.min/max.session.timeout.ms: 6 s–30 min by
 * default) is refused by the group coordinator at every join: a worker would loop on "group
 * consumer crashed" for ever and run nothing. VAP_ERR_CONFIG naming the field (a worker's start,
 * and `argus check --connect` of its YAML, which passed such a file before); brokers that do not
 * let this client read their configuration are not checked.
 */
export async function checkSessionTimeout(admin: Admin, ms: number): Promise<void> {
  let min: number, max: number;
  try {
    const { brokers } = await admin.describeCluster();
    const names = ['group.min.session.timeout.ms', 'group.max.session.timeout.ms'];
    const r = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: BROKER_CONFIG_RESOURCE, name: String(brokers[0].nodeId), configNames: names }] });
    const entries = r.resources[0]?.configEntries ?? [];
    [min, max] = names.map((n) => Number(entries.find((e) => e.configName === n)?.configValue));
  } catch (e) {
    if (connectionError(e)) throw e;
    return;
  }
  if (Number.isFinite(min) && Number.isFinite(max) && (ms < min || ms > max)) {
    throw new ArgusError(ErrorCodes.CONFIG, `cluster.sessionTimeoutMs: ${ms} is outside what the brokers accept, ${min}–${max} ms (their group.min.session.timeout.ms and group.max.session.timeout.ms)`);
  }
}

/** The brokers of the cluster topics: cluster.brokers, else sinks.kafka.brokers. */
export function clusterBrokers(config: PipelineParts): string[] {
  const b = config.cluster?.brokers ?? config.sinks.kafka?.brokers;
  if (!b?.length) throw new ArgusError(ErrorCodes.CONFIG, 'cluster.brokers: a worker needs Kafka brokers (cluster.brokers, or sinks.kafka.brokers)');
  return b;
}

/** What a worker counts (in /healthz, the summary and the tests). */
export interface WorkerCounters {
  /** Claims written (each a camera start, or an attempt at one). */
  claims: number;
  releases: number;
  /** Times the lease ran out with cameras running: all were stopped at once. */
  fencings: number;
  /** Results dropped because the worker no longer held the camera when they were ready. */
  fencedFrames: number;
  /** …of which because the lease had run out / the slot was no longer this worker's. */
  fencedByLease: number;
  fencedBySlot: number;
  /** Alerts of such results still published (their frames were admitted under the claim): not lost to the fence. */
  fencedAlerts: number;
  /** Planned moves that waited for the former owner's release. */
  waitedForRelease: number;
  /** Claims made after releaseWaitMs without the former owner's release. */
  forcedClaims: number;
  /** Rebalances this worker asked for because a camera's placement and the assignment disagreed, or because it found a camera of its slots unreachable. */
  rebalancesAsked: number;
  /** Cameras of its slots this worker reported unreachable (cluster.unreachableAfterMs). */
  unreachableReports: number;
}

/** How long a worker keeps reporting a camera unreachable after it last tried it (its slot moved away): 10 min, doubled at each report again with no frame between (UNREACHABLE_FORGET_MAX_MS at most). */
export const UNREACHABLE_FORGET_MS = 600_000;

/** The longest a report is kept after the worker last tried the camera: 160 min; and how long it is kept while the slot's holder reports it too (a camera down for every worker moves once per this). */
export const UNREACHABLE_FORGET_MAX_MS = 16 * UNREACHABLE_FORGET_MS;

/**
 * Attempts in a row that opened a camera's input and ended with no frame (its start timeout: an MTU
 * black hole that lets the stream's description through and no picture) after which, with no
 * frame for unreachableAfterMs, the camera counts as unreachable. One or two are a slow camera's
 * (a first key frame later than its start timeout once); a camera whose first frame comes within
 * its attempt (a 10 s GOP under a 15 s start timeout) never ends one so.
 */
export const HOLLOW_ATTEMPTS = 3;

/** The least time between two rebalances a worker asks for to tell the group of unreachable slots. */
const UNREACHABLE_ASK_GAP_MS = 10_000;

/** How long the worker's 100 ms tick may be late before the worker counts itself stalled (its event loop held: a long GC, SIGSTOP). */
const STALL_MS = 2000;

/**
 * Whether a camera meant to run here reaches this worker: since when it is meant to (under this
 * record, tried here), its last contact (a frame, or ffmpeg opening its input), its source's latest
 * state, when a connection attempt last failed, and when its chain here last started.
 */
interface Reach {
  text: string;
  since: number;
  /** The last frame here, or the last time ffmpeg opened the camera's input (the path to it works). */
  frameAt: number;
  /** The last frame here (not an opening). */
  pictureAt: number;
  /** Attempts in a row that opened the input and ended with no frame since (HOLLOW_ATTEMPTS). */
  hollow: number;
  state: SourceState | undefined;
  /** performance.now() of the last attempt that failed without ffmpeg opening the input (the source `reconnecting` or `failed`, or its chain ending by itself). */
  failedAt: number;
  /** performance.now() when ffmpeg last opened the input, and when an attempt last ended (an attempt that ended after it opened failed for another reason than the path). */
  openedAt: number;
  endedAt: number;
  /** performance.now() when its chain last started here (its first attempt, while its state is `starting`). */
  chainAt: number;
}

/** A camera this worker reported unreachable: its record and slot then, when reported, when last found so. */
/** Source `id`'s stats in `pipeline`, the latest attached (a chain stopping beside it: the earlier one). */
function latestStats(pipeline: Pipeline, id: string): Pipeline['stats'][number] | undefined {
  for (let k = pipeline.stats.length - 1; k >= 0; k--) if (pipeline.stats[k].id === id) return pipeline.stats[k];
  return undefined;
}

/** A record a camera's chain refused (Worker.unusable). */
interface Unusable {
  text: string;
  source: string;
  why: string;
  /**
   * 'here': refused as the chain set up, for this worker's model or YAML (another worker may run
   * it: its slot is reported to the group). 'record': refused for the record's own geometry at
   * its first frame (zones or lines outside the picture), which every worker refuses alike: its
   * slot is not moved for it.
   */
  scope: 'here' | 'record';
}

interface UnreachableReport {
  slot: number;
  text: string;
  /** Its source as its chain reads it (JSON; '' unknown): an edit of its cost or placement alone keeps the report (sameSource). */
  source: string;
  reportedAt: number;
  confirmedAt: number;
  /** How long it is kept after confirmedAt (UNREACHABLE_FORGET_MS, doubled per earlier report of the same record with no frame since). */
  forgetMs: number;
}

interface Running {
  id: string;
  slot: number;
  text: string;
  /** Its source as its chain runs it (the record's definition less cost and placement, as JSON): an edit of the record that leaves it so does not restart the chain. */
  source: string;
  /** Undefined while the camera waits for its claim (connected, analysing nothing). */
  claim: Claim | undefined;
  stop$: Subject<void>;
  done: Promise<void>;
  /** Its results are no longer published (fenced, or stopped for good). */
  fenced: boolean;
  stopping: boolean;
  /** performance.now() when a planned stop began. */
  stoppingAt: number;
  /** Its slot went to another worker: it runs on until that worker's connection delivers frames (or the budget ends). */
  handoffSince: number;
  /** Offset of the owners topic up to which "ready" records are older than this handoff. */
  handoffAfter: number;
  /** A standby camera told the current owner that it is connected (or that its connection was refused: release now). */
  readySent: boolean;
  /**
   * The source's latest state while the camera waited for its claim here: `reconnecting` when its
   * connection failed (a camera that allows one session refuses it while the old owner streams).
   * Such a chain waits out its restart backoff; admitted, it is started afresh instead.
   */
  standbyState: Transition['state'] | undefined;
  /** The chain ended by itself (the source gave up, a file ended, it could not start). */
  ended: boolean;
  startedAt: number;
  /** Its source's stats in the pipeline (taken at its first frame): the error its chain ended with, if any (isolate keeps it there). */
  stats: { readonly id: string; readonly error?: Error } | undefined;
  /** Its chain's analyzer (taken at its first frame, as its stats): what a planned stop hands over (its rule cooldowns). */
  analyzer: { handover(): CarriedCooldown[] | undefined; takeOver(list: readonly CarriedCooldown[]): void } | undefined;
  /** Cooldowns the camera's former owner handed over (its release record), for this chain's analyzer before its first analysed frame. */
  carry: Handover | undefined;
}

/** What a camera's former owner handed over (ClusterView.handovers): when its release was written (its wall clock) and the cooldowns then left. */
type Handover = { readonly at: number; readonly cooldowns: readonly CarriedCooldown[] };

export interface WorkerOptions extends Omit<RunOptions, 'attached' | 'claimOf' | 'health' | 'clusterMetrics' | 'publishesStatus' | 'replaysStatus' | 'run' | 'failureSaid'> {
  /** Called once the worker has joined the group (tests, bench). */
  onJoined?: (worker: Worker) => void;
}

/**
 * One `argus worker`: the pipeline (model, sinks, outbox, server) of the worker YAML, with the
 * cameras of the slots the group gives it (README, "Many machines").
 *
 * Exclusivity: a camera runs on a worker only under a claim in the owners topic whose epoch
 * (its offset) is the camera's latest, and only while the worker's group lease holds (a
 * heartbeat answered within sessionTimeoutMs − fenceMarginMs): the coordinator cannot hand a
 * slot away before a silent worker's session has expired, and by then the worker has stopped
 * the slot's cameras and drops any result still in flight. A planned move (a rebalance among
 * live workers) starts the camera on its new owner only after the old owner's release, or
 * after releaseWaitMs.
 */
export class Worker {
  readonly id: string;
  /**
   * This start of the worker: claims and group member data carry it, so a restart under the same id
   * is told apart; and it is the run of its pipeline (runWorker passes it as RunOptions.run), every
   * message's `run`: one start, one tag (sinks/message.ts runTag). It was a tag of its own (pid,
   * time, four random characters) beside the messages' run, two names for the same start.
   */
  readonly incarnation = runTag();
  readonly counters: WorkerCounters = { claims: 0, releases: 0, fencings: 0, fencedFrames: 0, fencedByLease: 0, fencedBySlot: 0, fencedAlerts: 0, waitedForRelease: 0, forcedClaims: 0, rebalancesAsked: 0, unreachableReports: 0 };
  private readonly c: ClusterConfig;
  private readonly kafka: Kafka;
  private admin: Admin | undefined;
  private producer: Producer | undefined;
  readonly view: ClusterView;
  private owners: OwnerLog | undefined;
  private membership: GroupMembership | undefined;
  private pipeline: Pipeline | undefined;
  private readonly chains$ = new Subject<Observable<FrameResult>>();
  private readonly running = new Map<string, Running>();
  /** The last claim of each camera this worker made (alerts rendered after a stop still carry it). */
  private readonly claims = new Map<string, Claim>();
  /**
   * Results let through a fence for their alerts (alertsOnly), by frame: the claim the frame was
   * admitted under, which its alerts carry (claimOf). The camera's latest claim is not it once
   * this worker has claimed the camera again: a frame still in flight after stopBudget, its alert
   * raised after the new claim, went out under the new epoch.
   */
  private readonly fencedFrameClaims = new WeakMap<Frame, Claim>();
  /** Per camera waiting for its claim here, its latest state change, held back until the claim holds. */
  private readonly heldStatus = new Map<string, Transition>();
  /** The latest connect() of open(): close() disconnects what it made once it ends. */
  private connecting: Promise<void> | undefined;
  /** Claims of cameras stopped by a fence, by epoch (an owners-topic offset: unique), released once the lease holds again (releaseFenced). */
  private readonly fencedClaims = new Map<number, string>();
  private releasingFenced = false;
  /** Claims written and not yet started (waiting for the view to show them, or for a release). */
  private readonly pending = new Map<string, number>();
  /** When a wait for a former owner's release began, per camera. */
  private readonly waits = new Map<string, number>();
  private assigned = new Set<number>();
  /** The group's members as `workerId/incarnation`, read after each assignment. */
  private members: Set<string> | undefined;
  /** The slots the group gave out in this generation (any worker's), read with the members. */
  private heldByGroup: Set<number> | undefined;
  /** performance.now() before which no rebalance is asked for (checkPlacement), the next wait, and since when the placement has disagreed. */
  private nextRebalanceAt = 0;
  private rebalanceBackoff = 10_000;
  private mismatchSince: number | undefined;
  /** Some member runs an argus whose assigner ignores placement (read with the members). */
  private placementUnaware = false;
  private warnedUnaware = false;
  /** Some member runs an argus from before unreachable reports (read with the members; readGroup reportsUnaware). */
  private reportsUnaware = false;
  /** Another live process has this worker's id: it runs nothing, and takes no slot, until that is fixed. */
  private duplicateId = false;
  /** Per camera meant to run here (its slot held, enabled, placement met), whether frames reach this worker. */
  private readonly reach = new Map<string, Reach>();
  /** Cameras this worker reported unreachable, by id (its member data names their slots). */
  private readonly unreachable = new Map<string, UnreachableReport>();
  /**
   * Per camera, how many times this worker reported its record with no frame here since: a camera
   * down for every worker came back at each expiry (every 10 min, at the next rebalance) and moved
   * its slot's healthy cameras with it; each report again is now kept twice as long. Kept by its
   * source as its chain reads it (sameSource): an edit of its cost or placement alone between two
   * reports made the next a first again, kept 10 min.
   */
  private readonly strikes = new Map<string, { text: string; source: string; n: number }>();
  /**
   * Slots another member holds and reports unreachable too, as last read of the group (onMembers):
   * the leader left them there because every able member has reported them (a camera down for
   * all). This worker's reports of them are kept UNREACHABLE_FORGET_MAX_MS: each expiry moved the
   * slot back here, where it was as dark (3 moves in its first 30 min, two workers).
   */
  private darkHeld = new Set<number>();
  /** Where this worker keeps its reports across restarts (reports.ts); undefined: nowhere. */
  private reportsAt: string | undefined;
  /** Its cluster as the file names it (clusterTag): a file of another is not read. */
  private reportsCluster = '';
  /** Reports read back at the start, taken at the first join (memberInfo) where their camera's record is unchanged. */
  private restored: StoredReport[] = [];
  /** Refusals read back at the start (unusable), taken at the first join where their camera's record (and, refused here, the chain's model and tracking) is unchanged. */
  private restoredRefusals: StoredRefusal[] = [];
  /** What was last written (ids, slots and report times), when, and whether a write is under way or wanted after it. */
  private savedKey = ';';
  private savedAt = -Infinity;
  private saving: Promise<void> | undefined;
  private saveAgain = false;
  private saveFailed = false;
  /** The slots reported unreachable in the member data last given to the group. */
  private toldUnreachable = new Set<number>();
  private nextUnreachableAskAt = 0;
  /** When the 100 ms tick last ran (undefined until it runs). */
  private beatAt: number | undefined;
  /** Time without frames counts from here at the earliest: the worker's own stall (its event loop held) restarts it. */
  private reachFrom = -Infinity;
  /** When a camera whose chain ended by itself may be started again (performance.now()). */
  private readonly retryAt = new Map<string, number>();
  /** Cameras in a handoff (checked every tick). */
  private readonly handoffs = new Set<string>();
  /** Cameras of this worker's slots that are meant to run but whose record it cannot use, by id: the record text already logged. */
  private readonly invalidSaid = new Map<string, string>();
  /**
   * Cameras meant to run (enabled, placement met here) whose record names a `${env:…}` variable
   * this worker's environment lacks, by id: their slots, told to the group (unreachableSlots) as
   * slots it cannot run, wherever they are. Each worker resolves the variables from its own
   * environment: one set on some workers only left the camera dark for good where its slot was on
   * another. Made afresh at each reconciliation (reportInvalid).
   */
  private readonly lacking = new Map<string, number>();
  /**
   * Cameras whose chain refused their record here as it set up (VAP_ERR_CONFIG: a class the
   * worker's model lacks, lines with tracking disabled in the worker YAML), by id: that record's
   * text and why. Such a camera runs nowhere here until its record changes (or the worker
   * restarts). Before, it was started again every 10 s, a claim and a release each time, and
   * each start counted as a failed connection: 30 s on it was reported unreachable, and its
   * slot moved to another worker with the slot's healthy cameras, where it failed the same way.
   * Its slot is in the member data (unreachableSlots) while the record is unchanged: another
   * worker's model or YAML may take it (workers need not run one model), and once every able
   * worker has said so the leader leaves the slot where it is.
   */
  private readonly unusable = new Map<string, Unusable>();
  private outputs: RunningPipeline | undefined;
  private joined = false;
  /** False after a fence until the next assignment: a rejoin then claims no slots (the group has handed them away). */
  private holdsSlots = true;
  /** Set by a fence: once the lease holds again (a heartbeat answered, the slots still ours), the cameras restart. */
  private refenced = false;
  private draining = false;
  private closing = false;
  private step: Promise<void> = Promise.resolve();
  private dirty = false;
  private tick: NodeJS.Timeout | undefined;
  private readonly log: LogFn;
  /** What this worker offers to cameras' placement. */
  private readonly self: PlacementTarget;

  constructor(
    private readonly config: PipelineConfig,
    log: LogFn = () => {},
  ) {
    this.c = config.cluster!;
    this.log = log;
    this.id = this.c.workerId ?? defaultWorkerId();
    this.self = { workerId: this.id, labels: this.c.labels };
    const auth = clusterKafkaAuth(config);
    this.kafka = new Kafka({
      clientId: `argus-worker-${this.id}`,
      brokers: clusterBrokers(config),
      ssl: auth.ssl as never,
      sasl: auth.sasl as never,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    // The view's group has the worker's session: one a broker restart makes it wait out, as the workers' group.
    this.view = new ClusterView(this.kafka, { cameras: this.c.camerasTopic, owners: this.c.ownersTopic }, `argus-view-${this.id}`, process.env, { sessionTimeoutMs: this.c.sessionTimeoutMs, heartbeatIntervalMs: this.c.heartbeatIntervalMs }, { maxCameras: this.c.maxCameras, drainsOf: this.id, log });
  }

  /**
   * Whether the group lease holds: a heartbeat answered (counted from when it was sent) or a
   * join completed within sessionTimeoutMs − fenceMarginMs. The coordinator hands a member's
   * slots away only after its session has expired, counted from a later moment.
   */
  leaseHolds(): boolean {
    if (!this.joined || !this.membership) return false;
    return performance.now() - this.membership.lastAlive < this.c.sessionTimeoutMs - this.c.fenceMarginMs;
  }

  /** Whether results of `run` may be published now: its claim holds, the lease holds, its slot is still this worker's. */
  private owns(run: Running): boolean {
    if (run.claim === undefined || run.fenced || this.duplicateId || !this.leaseHolds()) return false;
    if (this.assigned.has(run.slot)) return true;
    // A handoff: the slot is another worker's, which waits for our release (see reconcileOnce).
    if (run.handoffSince && !run.stopping && performance.now() - run.handoffSince < this.handoffBudget()) return true;
    // A planned stop: frames in flight finish and their alerts are raised. The new owner starts
    // only after our release, or after releaseWait, within which this stop has ended.
    return run.stopping && performance.now() - run.stoppingAt < this.stopBudget();
  }

  /** How long an old owner runs on after losing the slot, waiting for the new owner's connection: a third of the new owner's wait. */
  private handoffBudget(): number {
    return Math.max(0, ((this.c.releaseWaitMs ?? this.c.sessionTimeoutMs) - this.c.fenceMarginMs) / 3);
  }

  /** How long a planned stop may let frames in flight finish: less than the new owner's wait for the release. */
  private stopBudget(): number {
    return Math.min(10_000, ((this.c.releaseWaitMs ?? this.c.sessionTimeoutMs) - this.c.fenceMarginMs) / 2);
  }

  /** The claim a source's messages carry: that of `frame` when a fence let it through for its alerts, else the camera's latest claim here. */
  claimOf(source: string, frame?: Frame): Claim | undefined {
    return (frame && this.fencedFrameClaims.get(frame)) ?? this.claims.get(source);
  }

  /** The cameras running here: id, slot, epoch. */
  cameras(): { id: string; slot: number; epoch: number; since: number }[] {
    return [...this.running.values()].filter((r) => !r.stopping && r.claim).map((r) => ({ id: r.id, slot: r.slot, epoch: r.claim!.epoch, since: r.startedAt }));
  }

  /**
   * Cameras this worker does not run for their record, counted: refused by its chain here (its
   * model, its YAML: refusedHere, their slots reported to the group) or for their own geometry
   * (refusedRecord: every worker alike), and those whose `${env:…}` variable its environment
   * lacks (envMissing). Wherever their slots are: each is a camera it would not run.
   */
  notRunCounts(): ClusterMetricsState['notRun'] {
    let refusedHere = 0;
    let refusedRecord = 0;
    for (const [id, u] of this.unusable) {
      if (!this.view.cameras.get(id)?.active || !this.stillRefused(id, u)) continue;
      if (u.scope === 'here') refusedHere++;
      else refusedRecord++;
    }
    return { refusedHere, refusedRecord, envMissing: this.lacking.size };
  }

  /** What /metrics shows of this worker (server/metrics.ts). */
  metricsState(): ClusterMetricsState {
    return { worker: this.id, cameras: this.cameras(), lease: this.leaseHolds(), counters: this.counters, unreachable: this.unreachableNow(), view: { cameras: this.view.cameras.size, refused: this.view.refusedCameras }, notRun: this.notRunCounts() };
  }

  health(): Record<string, unknown> {
    return {
      cluster: {
        worker: this.id,
        group: this.c.group,
        capacity: this.capacity(),
        labels: this.c.labels,
        draining: this.draining,
        lease: this.leaseHolds(),
        heartbeatAgoMs: this.membership && Number.isFinite(this.membership.lastAlive) ? Math.round(performance.now() - this.membership.lastAlive) : null,
        slots: [...this.assigned].sort((a, b) => a - b),
        members: this.members ? [...this.members].sort() : null,
        cameras: this.cameras(),
        waiting: [...new Set([...this.waits.keys(), ...this.pending.keys()])],
        // Cameras this worker reported unreachable to the group (cluster.unreachableAfterMs), with their slots.
        unreachable: this.unreachableNow(),
        // Cameras of this worker's slots it may not run (their placement), and why.
        notHere: [
          ...[...this.view.cameras.values()].filter((c) => this.assigned.has(c.slot) && c.active && !satisfies(c.placement, this.self)).map((c) => ({ id: c.id, reason: unmet(c.placement, this.self) })),
          ...[...this.unusable].filter(([id]) => this.assigned.has(this.view.cameras.get(id)?.slot ?? -1)).map(([id, u]) => ({ id, reason: `its record cannot be used ${u.scope === 'here' ? 'here' : 'on any worker'}: ${u.why}` })),
        ],
        // How many cameras it would not run for their record (refused here, refused for their own
        // geometry, a ${env:…} variable missing here), as /metrics has them.
        notRun: this.notRunCounts(),
        // Every camera of the cluster and its latest owner (from the owners topic), for the dashboard.
        map: [...this.view.cameras.values()]
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .map((c) => {
            const o = this.view.owners.get(c.id);
            return { camera: c.id, slot: c.slot, enabled: c.definition?.source.enabled ?? false, error: c.error?.split('\n')[0], owner: o?.owner ?? null, epoch: o?.epoch ?? null, state: o?.state ?? null, here: this.running.get(c.id)?.claim !== undefined };
          }),
        counters: this.counters,
      },
    };
  }

  /**
   * Connects, creates the topics when missing, and reads the desired state (before the group
   * gives this worker anything). A broker that cannot be reached is tried again, with a backoff
   * of up to OPEN_RETRY_MAX_MS, for as long as it takes (a worker started before Kafka waits
   * for it, as `argus run` does); `signal` ends the wait. Resolves false when aborted.
   */
  async open(signal?: AbortSignal): Promise<boolean> {
    const aborted = new Promise<false>((r) => {
      if (signal?.aborted) r(false);
      signal?.addEventListener('abort', () => r(false), { once: true });
    });
    for (let attempt = 1; ; attempt++) {
      try {
        this.connecting = this.connect();
        const ok = await Promise.race([this.connecting.then(() => true as const), aborted]);
        if (!ok) return false;
        break;
      } catch (e) {
        await this.producer?.disconnect().catch(() => undefined);
        await this.admin?.disconnect().catch(() => undefined);
        if (!connectionError(e)) throw e;
        const wait = Math.min(OPEN_RETRY_MAX_MS, 1000 * 2 ** Math.min(attempt - 1, 4));
        this.log(`cluster: cannot reach Kafka (${redact(describeKafkaError(e))}); trying again in ${wait / 1000} s`, { attempt }, attempt === 1 ? 'warn' : 'info');
        let t: NodeJS.Timeout | undefined;
        const again = await Promise.race([new Promise<true>((r) => (t = setTimeout(() => r(true), wait))), aborted]);
        clearTimeout(t);
        if (!again) return false;
      }
    }
    // The view is read once connected (its consumer retries on its own); a stop still ends the wait.
    this.watchView();
    if (!(await Promise.race([this.view.start(this.admin!).then(() => true as const), aborted]))) return false;
    return Promise.race([this.view.ready.then(() => true as const), aborted]);
  }

  /** Reconciles on every change of the view, and writes again a release of this process's that a later release of an older claim hides from compaction (ClusterView.onReleaseHidden). */
  private watchView(): void {
    this.view.onChange(() => this.reconcile());
    this.view.onReleaseHidden((camera, latest) => {
      if (latest.owner !== this.id || latest.incarnation !== this.incarnation || !this.owners) return;
      this.log(`cluster: a release of an older claim of ${camera} came after this worker's release of epoch ${latest.epoch}; writing that release again (compaction keeps only the latest)`, { camera, epoch: latest.epoch }, 'debug');
      this.owners.release(camera, latest.epoch).catch((e: unknown) => this.log(`cluster: could not write the release of ${camera} (epoch ${latest.epoch}) again: ${(e as Error).message}`, { camera }, 'warn'));
    });
  }

  /** What ensureClusterTopics said of the cluster topics and this worker logged (once each). */
  private readonly topicsSaid = new Set<string>();

  private async connect(): Promise<void> {
    this.admin = this.kafka.admin();
    await this.admin.connect();
    await checkSessionTimeout(this.admin, this.c.sessionTimeoutMs);
    const fewer = await ensureClusterTopics(this.admin, { cameras: this.c.camerasTopic, owners: this.c.ownersTopic, slots: this.c.slots, replicationFactor: this.c.replicationFactor });
    // Once a worker: connect() is retried until the producer's connect succeeds too.
    for (const f of fewer) {
      if (this.topicsSaid.has(f)) continue;
      this.topicsSaid.add(f);
      this.log(`cluster: ${f}`, { worker: this.id, topic: this.c.camerasTopic }, 'warn');
    }
    this.producer = this.kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 } });
    await this.producer.connect();
    this.owners = new OwnerLog(this.producer, this.c.ownersTopic, this.id, this.incarnation);
  }

  /** The cameras' results, for runPipeline's `attached`; joins the group once the pipeline is up. */
  attached(pipeline: Pipeline, stop: Observable<void>): Observable<FrameResult> {
    this.pipeline = pipeline;
    stop.subscribe(() => void this.shutdown());
    this.membership = new KafkajsMembership({
      kafka: this.kafka,
      group: this.c.group,
      topic: this.c.camerasTopic,
      sessionTimeoutMs: this.c.sessionTimeoutMs,
      heartbeatIntervalMs: this.c.heartbeatIntervalMs,
      rebalanceTimeoutMs: this.c.rebalanceTimeoutMs,
      leaseMs: this.c.sessionTimeoutMs - this.c.fenceMarginMs,
      info: () => this.memberInfo(),
      slots: () => this.slotTable(),
      onAssigned: (a) => this.onAssigned(a),
      onMembers: (m, held, unaware, dark, reportsUnaware) => this.onMembers(m, held, unaware, dark, reportsUnaware),
      log: this.log,
    });
    // A worker drained before it (re)started joins drained: capacity 0 from its first join, so
    // no camera moves to it and straight back (the view has been read to its end by now).
    this.draining = this.drainWanted();
    if (this.draining) this.log(`cluster: ${this.id} is drained (argus cluster drain ${this.id} --undo brings it back); joining with capacity 0`, { worker: this.id });
    void this.membership.start();
    // The fence and the waits: checked every 100 ms, whatever else happens; a full
    // reconciliation at least every second (a failed claim, a camera to retry).
    this.tick = setInterval(() => this.beat(), 100);
    this.tick.unref();
    return this.chains$.pipe(mergeAll());
  }

  /** Ticks so far (every tenth reconciles). */
  private beats = 0;

  /** The tick (every 100 ms): the fence, the waits, a reconciliation at least every second. */
  private beat(): void {
    this.awake(performance.now());
    if (this.running.size > 0 && !this.leaseHolds() && [...this.running.values()].some((r) => !r.fenced)) this.fenceAll();
    if (this.refenced && this.leaseHolds()) {
      this.refenced = false;
      this.holdsSlots = true;
      this.reconcile();
    }
    if (this.fencedClaims.size > 0 && this.leaseHolds()) void this.releaseFenced();
    if (++this.beats % 10 === 0 || this.pending.size > 0 || this.waits.size > 0 || this.handoffs.size > 0 || this.drainWanted() !== this.draining) this.reconcile();
  }

  /**
   * Notes that the process runs at `now`: a tick later than STALL_MS means its event loop was held
   * (a long GC, SIGSTOP), so no source could deliver a frame meanwhile: the cameras' time without
   * frames counts afresh from now. Checked by the tick and by checkReach, whichever runs first on waking.
   */
  private awake(now: number): void {
    if (this.beatAt !== undefined && now - this.beatAt > STALL_MS) {
      this.reachFrom = now;
      this.log(`cluster: ${this.id} did not run for ${Math.round((now - this.beatAt) / 1000)} s (its event loop was held); its cameras' time without frames counts afresh`, { worker: this.id }, 'warn');
    }
    this.beatAt = now;
  }

  /** The cameras this worker reports unreachable now, each with its slot and whether that slot is still this worker's (/healthz, /metrics). */
  unreachableNow(): { id: string; slot: number; here: boolean }[] {
    return [...this.unreachable].map(([id, u]) => ({ id, slot: u.slot, here: this.assigned.has(u.slot) }));
  }

  /** What this worker tells the group at each join (a rebalance included): its slots, capacity, labels and the slots it cannot run. */
  memberInfo(): MemberInfo {
    this.adoptRestored();
    this.adoptRefusals();
    const unreachable = this.unreachableSlots();
    this.toldUnreachable = new Set(unreachable);
    return { workerId: this.id, incarnation: this.incarnation, capacity: this.capacity(), owned: this.holdsSlots ? [...this.assigned] : [], labels: { ...this.c.labels }, placement: true, unreachable };
  }

  /**
   * Reads back the reports an earlier process of this worker kept in `file` (reports.ts): a rolling
   * restart handed a worker back a slot it could not reach, dark for unreachableAfterMs again.
   * Call before open(); they are taken at the first join.
   */
  async restoreReports(file: string): Promise<void> {
    // A default id (host and pid) is never a later process's: its file would never be read back,
    // one more left in the outbox folder at each restart.
    if (!this.c.workerId) return;
    this.reportsAt = file;
    this.reportsCluster = clusterTag(clusterBrokers(this.config), this.c.group, this.c.camerasTopic);
    // Bounded, as the stop's write: a folder on a disk that does not answer (a network share) does not hold the start.
    const read = readStored(file, Date.now(), (why) => this.log(`cluster: ${this.id} ignores ${file}: ${why}`, { worker: this.id, file }, 'warn'), this.reportsCluster);
    const stored = await withDeadline(read, 1000, 'reports').catch(() => {
      this.log(`cluster: ${this.id} could not read its unreachable reports and refusals from ${file} within 1 s; it starts without them`, { worker: this.id, file }, 'warn');
      return { reports: [], refused: [] };
    });
    this.restored = this.c.unreachableAfterMs > 0 ? stored.reports : [];
    this.restoredRefusals = stored.refused;
    if (this.restored.length > 0 || this.restoredRefusals.length > 0) this.savedKey = '(read back)';
  }

  /** What this worker's refusals here depend on (StoredRefusal.chain): its model's classes and its tracking settings. */
  private chainTag(): string {
    return chainTag(this.pipeline?.detector?.labels ?? [], this.config.tracking);
  }

  /**
   * The refusals read back whose camera's record is unchanged (same offset) and, for one refused
   * here, whose worker's model and tracking are too: its camera runs nowhere here, as before the
   * restart, until its record changes. Before, a restart forgot them: each such camera was started
   * once more after every restart (a claim, a release, an error line; a refusal here, a move of
   * its slot's cameras away and back).
   */
  private adoptRefusals(): void {
    if (this.restoredRefusals.length === 0) return;
    const chain = this.chainTag();
    const taken: string[] = [];
    for (const r of this.restoredRefusals) {
      const cam = this.view.cameras.get(r.camera);
      if (!cam || !cam.definition || cam.offset !== r.offset || this.unusable.has(r.camera) || (r.scope === 'here' && r.chain !== chain)) continue;
      const why = r.scope === 'here' ? 'refused by this worker before its restart (its model and tracking unchanged; the reason was logged then)' : 'refused before this worker\'s restart (the reason was logged then)';
      this.unusable.set(r.camera, { text: cam.text, source: JSON.stringify(cam.definition.source), why, scope: r.scope });
      taken.push(r.camera);
    }
    this.restoredRefusals = [];
    if (taken.length > 0) this.log(`cluster: ${this.id} does not run ${taken.length} camera(s) whose record it refused before its restart, unchanged since: ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''}; each is tried again once its record changes`, { worker: this.id, cameras: taken.slice(0, 100) }, 'warn');
  }

  /** The reports read back whose camera's record is unchanged (same offset, same slot, active), as this process's own, their times on its clock. */
  private adoptRestored(): void {
    if (this.restored.length === 0) return;
    const wall = Date.now();
    const mono = performance.now();
    const taken: string[] = [];
    for (const r of this.restored) {
      const cam = this.view.cameras.get(r.camera);
      if (!cam || !cam.active || cam.slot !== r.slot || cam.offset !== r.offset || this.unreachable.has(r.camera)) continue;
      this.unreachable.set(r.camera, { slot: r.slot, text: cam.text, source: cam.definition ? JSON.stringify(cam.definition.source) : '', reportedAt: mono - (wall - r.reportedAt), confirmedAt: mono - (wall - r.confirmedAt), forgetMs: Math.min(r.forgetMs, UNREACHABLE_FORGET_MAX_MS) });
      this.strikes.set(r.camera, { text: cam.text, source: cam.definition ? JSON.stringify(cam.definition.source) : '', n: r.n });
      taken.push(r.camera);
    }
    if (taken.length > 0) {
      const slots = [...new Set(taken.map((id) => this.unreachable.get(id)!.slot))].sort((a, b) => a - b);
      this.log(`cluster: ${this.id} reports slot(s) ${slots.join(', ')} unreachable again, as before its restart (${taken.length} camera(s): ${taken.slice(0, 5).join(', ')}${taken.length > 5 ? ', …' : ''})`, { worker: this.id, slots, cameras: taken.slice(0, 100) });
    }
    this.restored = [];
  }

  /**
   * Writes the reports to reportsAt when they changed, and at most once a minute when only their
   * times did (a report stands 10 min at least after its last confirmation); `force`: now (close).
   * One write at a time; a change meanwhile is written after it. After a failed write, once a minute.
   */
  private saveReports(force = false): Promise<void> {
    // Another live process has this id (the file is its too) and this one runs nothing: its reports say nothing, the file is left to that one.
    if (!this.reportsAt || this.duplicateId) return Promise.resolve();
    if (this.saving) {
      this.saveAgain = true;
      return this.saving;
    }
    const key = [...this.unreachable].map(([id, u]) => `${id}:${u.slot}:${u.reportedAt}`).join(',') + ';' + [...this.unusable].map(([id, u]) => `${id}:${u.scope}:${this.recordOffset(id, u.text)}`).join(',');
    const mono = performance.now();
    // A folder that refused the last write (a read-only volume) is tried again once a minute, not at every reconcile.
    if (!force && this.saveFailed && mono - this.savedAt < 60_000) return Promise.resolve();
    if (!force && key === this.savedKey && (key === ';' || mono - this.savedAt < 60_000)) return Promise.resolve();
    const wall = Date.now();
    const list: StoredReport[] = [...this.unreachable].map(([camera, u]) => ({ camera, slot: u.slot, offset: this.recordOffset(camera, u.text), reportedAt: wall - (mono - u.reportedAt), confirmedAt: wall - (mono - u.confirmedAt), forgetMs: this.darkHeld.has(u.slot) && !this.assigned.has(u.slot) ? Math.max(u.forgetMs, UNREACHABLE_FORGET_MAX_MS) : u.forgetMs, n: this.strikes.get(camera)?.n ?? 1 }));
    this.savedKey = key;
    this.savedAt = mono;
    const file = this.reportsAt;
    const chain = this.chainTag();
    const refused: StoredRefusal[] = [];
    for (const [camera, u] of this.unusable) {
      const offset = this.recordOffset(camera, u.text);
      if (offset !== '') refused.push({ camera, offset, scope: u.scope, ...(u.scope === 'here' ? { chain } : {}) });
    }
    this.saving = writeReports(file, list, this.reportsCluster, refused)
      .then(
        () => void (this.saveFailed = false),
        (e: unknown) => {
          if (!this.saveFailed) this.log(`cluster: ${this.id} could not keep its unreachable reports in ${file} (${(e as Error).message}); a restart forgets them`, { worker: this.id, file }, 'warn');
          this.saveFailed = true;
          this.savedKey = '(failed)';
        },
      )
      .finally(() => {
        this.saving = undefined;
        if (this.saveAgain) {
          this.saveAgain = false;
          void this.saveReports();
        }
      });
    return this.saving;
  }

  /** The offset of camera `id`'s record while its text is `text` (what a report kept on disk names); '' once edited since (never taken back). */
  private recordOffset(id: string, text: string): string {
    const cam = this.view.cameras.get(id);
    return cam && cam.text === text ? cam.offset : '';
  }

  /**
   * Whether a report still stands for camera `cam`'s record: the same text, or the same source
   * (its cost or placement alone edited; then its text is taken). Withdrawn at any edit, a
   * re-weigh let the slot come back at the next rebalance to a worker that cannot reach the camera.
   */
  private sameSource(u: { text: string; source: string }, cam: CameraEntry): boolean {
    if (cam.text === u.text) return true;
    if (!cam.definition || u.source === '' || JSON.stringify(cam.definition.source) !== u.source) return false;
    u.text = cam.text;
    return true;
  }

  /** Whether camera `id`'s record is still the one its chain refused here: the same text, or the same source (its cost or placement edited; then its text is taken). */
  private stillRefused(id: string, u: { text: string; source: string }): boolean {
    const cam = this.view.cameras.get(id);
    return cam?.definition !== undefined && this.sameSource(u, cam);
  }

  /** The slots of the cameras reported unreachable, and of the records refused here (unusable), MAX_UNREACHABLE_SLOTS at most (those held here first: the ones to move). */
  private unreachableSlots(): number[] {
    const reported = [...this.unreachable.values()].map((u) => u.slot).concat([...this.lacking.values()]);
    // And the slots of the records this worker's chain refused (its model, its YAML): while the
    // record is unchanged, this worker would refuse it again, wherever its slot is now.
    // Not a record's own geometry: every worker refuses it alike, and moving its slot would move
    // the slot's healthy cameras for nothing.
    for (const [id, u] of this.unusable) {
      const cam = this.view.cameras.get(id);
      if (u.scope === 'here' && cam?.active && this.stillRefused(id, u)) reported.push(cam.slot);
    }
    const slots = [...new Set(reported)].sort((a, b) => Number(!this.assigned.has(a)) - Number(!this.assigned.has(b)) || a - b);
    return slots.slice(0, MAX_UNREACHABLE_SLOTS).sort((a, b) => a - b);
  }

  /**
   * Which cameras meant to run here do not reach this worker: no frame for unreachableAfterMs since
   * the camera was first meant to run here or since its last frame, and its source not streaming
   * (a connection that is up, however slow its frames, is not reported: another worker would see
   * the same). Such a camera is reported (logged, and in the member data, by slot) and the group
   * is asked to rebalance once, so that the leader gives the slot to a worker that has not
   * reported it. A report ends when the camera gives this worker a frame again, when its record
   * changes or it is removed, disabled or moved to another slot, and UNREACHABLE_FORGET_MS after
   * this worker last found it unreachable (its slot went elsewhere): until then the slot is not
   * given back here, so it does not bounce back and forth.
   */
  private checkReach(desired: ReadonlyMap<string, CameraEntry>, now: number): void {
    for (const id of this.reach.keys()) if (!desired.has(id)) this.reach.delete(id);
    const after = this.c.unreachableAfterMs;
    const found: CameraEntry[] = [];
    if (this.beatAt !== undefined) this.awake(now);
    if (after > 0) {
      for (const cam of desired.values()) {
        const r = this.reachOf(cam, now);
        // Not tried here, so its time does not count: no chain runs for it (its claim not yet
        // written, or the write failed: a broker fault, not the camera), or it waits for an old
        // owner's release (a planned move: that owner may still hold a camera that allows one
        // session). A chain that ended and waits out its retry counts on; so does a claim pending
        // only until the view reads it (each restart's): else a camera whose chain ended every
        // few seconds counted afresh at each restart and was never reported.
        if ((!this.running.has(cam.id) && !this.retryAt.has(cam.id)) || this.waits.has(cam.id)) r.since = now;
        const u = this.unreachable.get(cam.id);
        if (r.pictureAt > -Infinity) this.strikes.delete(cam.id); // it gave a frame here under this record
        // A frame ends a report, not an opening (a camera reported for attempts that opened and gave none).
        const edited = u !== undefined && !this.sameSource(u, cam);
        if (u && (r.pictureAt >= u.reportedAt || edited)) {
          this.unreachable.delete(cam.id);
          this.log(`cluster: ${cam.id} ${edited ? 'was edited' : `reaches ${this.id} again`}; no longer reported unreachable`, { worker: this.id, camera: cam.id, slot: cam.slot });
          continue;
        }
        if (!this.unreachableNowHere(r, now, after)) continue;
        if (u) {
          u.confirmedAt = now;
          u.slot = cam.slot;
          continue;
        }
        const before = this.strikes.get(cam.id);
        const n = before && this.sameSource(before, cam) ? before.n + 1 : 1;
        this.strikes.set(cam.id, { text: cam.text, source: JSON.stringify(cam.definition!.source), n });
        this.unreachable.set(cam.id, { slot: cam.slot, text: cam.text, source: JSON.stringify(cam.definition!.source), reportedAt: now, confirmedAt: now, forgetMs: Math.min(UNREACHABLE_FORGET_MAX_MS, UNREACHABLE_FORGET_MS * 2 ** Math.min(n - 1, 16)) });
        this.counters.unreachableReports++;
        found.push(cam);
      }
    }
    for (const [id, u] of this.unreachable) {
      if (desired.has(id) && after > 0) continue;
      const cam = this.view.cameras.get(id);
      const keep = this.darkHeld.has(u.slot) && !this.assigned.has(u.slot) ? UNREACHABLE_FORGET_MAX_MS : u.forgetMs;
      if (after <= 0 || !cam || !cam.active || !this.sameSource(u, cam) || cam.slot !== u.slot || now - u.confirmedAt >= keep) this.unreachable.delete(id);
    }
    for (const [id, k] of this.strikes) {
      const cam = this.view.cameras.get(id);
      if (!cam || !this.sameSource(k, cam)) this.strikes.delete(id);
    }
    void this.saveReports();
    for (const cam of found) {
      // The group moves slots: the slot's other cameras, reachable here, go with it (a short gap each).
      const others = [...desired.values()].filter((c) => c.slot === cam.slot && !this.unreachable.has(c.id)).map((c) => c.id);
      const also = others.length === 0 ? '' : `; slot ${cam.slot}'s other camera(s) ${others.length > 5 ? `${others.slice(0, 5).join(', ')} and ${others.length - 5} more` : others.join(', ')} move with it`;
      this.log(`cluster: ${cam.id} (slot ${cam.slot}) gave ${this.id} no frame for ${Math.round((now - this.quietSince(this.reach.get(cam.id)!)) / 1000)} s (${this.reach.get(cam.id)!.state ?? 'not started'}): reported unreachable from here (report ${this.strikes.get(cam.id)!.n} from here, kept ${Math.round(this.unreachable.get(cam.id)!.forgetMs / 60_000)} min after its slot leaves), so that another worker may run it${also}`, { worker: this.id, camera: cam.id, slot: cam.slot, ...(others.length > 0 && { movesWith: others.slice(0, 100) }) }, 'warn');
    }
    // The group is told at the next join of every member: asked for when a slot held here is
    // reported and the member data last given did not say so (once; again only if that rebalance
    // did not happen).
    if ((this.unreachable.size === 0 && this.unusable.size === 0 && this.lacking.size === 0) || !this.membership || now < this.nextUnreachableAskAt) return;
    const untold = this.unreachableSlots().filter((s) => this.assigned.has(s) && !this.toldUnreachable.has(s));
    if (untold.length === 0) return;
    this.nextUnreachableAskAt = now + UNREACHABLE_ASK_GAP_MS;
    this.counters.rebalancesAsked++;
    this.log(`cluster: ${this.id} reports slot(s) ${untold.join(', ')} unreachable; asking the group to rebalance`, { worker: this.id, slots: untold });
    void this.membership.requestRebalance();
  }

  /**
   * Whether what the camera's attempts here tell says that it cannot be reached: no contact (a
   * frame, or ffmpeg opening its input) for `after`, and an attempt failed at the end of that time
   * (a failure `after` past the last contact), or its chain's first attempt has gone on that long
   * without opening the input. Time alone says nothing: a camera waiting out a retry delay (its
   * source's `reconnect.maxDelayMs`, or the worker's own 10 s before starting an ended chain
   * again) as long as `after` was reported though its next attempt would have connected, and so
   * was one whose input opened but whose first frame came later (a 10 s GOP).
   */
  private unreachableNowHere(r: Reach, now: number, after: number): boolean {
    // Attempts that open the input and never give a frame (an MTU black hole past the stream's
    // description), HOLLOW_ATTEMPTS in a row, with no frame for `after`: their openings are no contact.
    if (r.hollow >= HOLLOW_ATTEMPTS && r.state !== 'streaming' && now - Math.max(r.since, r.pictureAt, this.reachFrom) >= after) return true;
    const quiet = this.quietSince(r);
    if (now - quiet < after || r.state === 'streaming') return false;
    if (r.failedAt - quiet >= after) return true;
    // The chain's first attempt, its input not opened yet: a connect that hangs.
    return (r.state === undefined || r.state === 'starting') && r.openedAt < r.chainAt && r.endedAt < r.chainAt && now - Math.max(quiet, r.chainAt) >= after;
  }

  /** ffmpeg opened a camera's input here and described its video stream (RunOptions.onSourceOpened: its size, or a stream (H.264, H.265, MPEG-2, MPEG-4 Part 2) whose size its key frame brings; not an input with no such stream: a login page): the path to it works, whatever its frames do (a first frame 10 s on, a GOP that long). */
  sourceOpened(source: string): void {
    const reach = this.reach.get(source);
    if (reach) reach.frameAt = reach.openedAt = performance.now();
  }

  /** An attempt of the camera's source ended by failing (its state `reconnecting` or `failed`, or its chain ended by itself): a failed connection unless ffmpeg opened the input during it. */
  private attemptFailed(r: Reach): void {
    const now = performance.now();
    if (r.openedAt <= r.endedAt) r.failedAt = now;
    // Opened during this attempt, and no frame since.
    else if (r.pictureAt < r.openedAt) r.hollow++;
    r.endedAt = now;
  }

  /** The reach record of a camera meant to run here (made, counting from `now`, when missing or its record was edited: the new record counts afresh). */
  private reachOf(cam: CameraEntry, now = performance.now()): Reach {
    let r = this.reach.get(cam.id);
    // Its cost or placement alone edited while its chain runs on (reconcileOnce): what its attempts
    // told still holds. Made anew, a chain waiting out a retry delay was taken for a first attempt
    // that hangs, and reported by time alone.
    const run = r && r.text !== cam.text ? this.running.get(cam.id) : undefined;
    if (r && run && !run.stopping && !run.ended && run.text === r.text && run.slot === cam.slot && cam.definition && JSON.stringify(cam.definition.source) === run.source) r.text = cam.text;
    if (!r || r.text !== cam.text) this.reach.set(cam.id, (r = { text: cam.text, since: now, frameAt: -Infinity, pictureAt: -Infinity, hollow: 0, state: undefined, failedAt: -Infinity, openedAt: -Infinity, endedAt: -Infinity, chainAt: now }));
    return r;
  }

  /** Since when a camera has given this worker no frame, as counted: its last frame, else when it was first tried here, and not before the worker's own last stall. */
  private quietSince(r: Reach): number {
    return Math.max(r.since, r.frameAt, this.reachFrom);
  }

  /** The cameras of each slot, read once: the cost of a slot's enabled cameras, and whether a worker may run every active one (their placement). */
  private slotTable(): SlotTable {
    const bySlot = new Map<number, CameraEntry[]>();
    for (const c of this.view.cameras.values()) {
      const list = bySlot.get(c.slot);
      if (list) list.push(c);
      else bySlot.set(c.slot, [c]);
    }
    return {
      cost: (slot) => {
        let cost = 0;
        for (const c of bySlot.get(slot) ?? []) if (c.definition?.source.enabled) cost += c.definition.cost;
        return cost;
      },
      // By the records as written (CameraEntry.active, .placement): the same on every worker,
      // whether or not this one has the camera's ${env:…} variables.
      accepts: (slot, m) => (bySlot.get(slot) ?? []).every((c) => !c.active || satisfies(c.placement, m)),
    };
  }

  /**
   * A camera's placement and the group's assignment disagree (a slot here holds a camera this
   * worker may not run, or no worker holds a slot this one may run): ask the group to assign
   * afresh. Only once the disagreement has lasted 1 s (a view or an assignment read a moment
   * early), only when every member's leader would assign by placement, and with a back-off that
   * doubles from 10 s to 2 min while the same disagreement stays. The leader assigns from its
   * view of the cameras.
   */
  private checkPlacement(now: number): void {
    if (!this.membership || this.draining || !this.leaseHolds()) return;
    let why: string | undefined;
    let table: SlotTable | undefined;
    for (const c of this.view.cameras.values()) {
      if (!c.active) continue;
      if (this.assigned.has(c.slot) && !satisfies(c.placement, this.self)) why = `${c.id} in slot ${c.slot} may not run here (${unmet(c.placement, this.self)})`;
      else if (this.heldByGroup && !this.heldByGroup.has(c.slot) && (table ??= this.slotTable()).accepts(c.slot, this.self)) why = `no worker holds ${c.id}'s slot ${c.slot}, which this worker may run`;
      if (why) break;
    }
    if (!why) {
      this.mismatchSince = undefined;
      this.rebalanceBackoff = 10_000;
      return;
    }
    this.mismatchSince ??= now;
    if (now - this.mismatchSince < 1000 || now < this.nextRebalanceAt) return;
    if (this.placementUnaware) {
      if (!this.warnedUnaware) this.log(`cluster: ${why}, but a member of group ${this.c.group} runs an argus without placement (it may lead the group and ignore it): upgrade every worker`, { worker: this.id }, 'warn');
      this.warnedUnaware = true;
      return;
    }
    this.nextRebalanceAt = now + this.rebalanceBackoff;
    this.rebalanceBackoff = Math.min(this.rebalanceBackoff * 2, 120_000);
    this.counters.rebalancesAsked++;
    this.log(`cluster: ${why}; asking the group to rebalance`, { worker: this.id }, 'info');
    void this.membership.requestRebalance();
  }

  /**
   * The capacity this worker tells the group: 0 while drained, or while another process has its
   * id (it runs nothing then, so its slots go to the others: they held them and ran nothing, and
   * their cameras ran nowhere while the two ids were alike).
   */
  private capacity(): number {
    return this.draining || this.duplicateId ? 0 : this.c.capacity;
  }

  private drainWanted(): boolean {
    return this.view.drains.get(this.id) === true;
  }

  private onAssigned(a: Assignment): void {
    // The lease lapsed before this join (the process was frozen, and woke to finish its rejoin
    // before the 100 ms fence check ran): another worker may hold these cameras under newer
    // claims by now. Fence them as the check would have; the join then claims afresh.
    if (this.joined && performance.now() - a.aliveBefore >= this.c.sessionTimeoutMs - this.c.fenceMarginMs) this.fenceAll();
    const before = [...this.assigned].sort((x, y) => x - y).join(',');
    // Applied at once: results of a slot this worker no longer holds stop passing now.
    this.assigned = new Set(a.slots);
    this.members = undefined; // read anew for this generation (onMembers)
    this.heldByGroup = undefined;
    this.holdsSlots = true;
    this.refenced = false;
    const first = !this.joined;
    this.joined = true;
    this.log(`cluster: ${this.id} holds ${a.slots.length} slot(s)${before === a.slots.join(',') ? ' (unchanged)' : ''}`, { worker: this.id, slots: a.slots });
    this.reconcile();
    if (first) this.onJoinedOnce?.(this);
  }

  private onMembers(members: Set<string> | undefined, held?: Set<number>, placementUnaware = false, dark?: Set<number>, reportsUnaware?: boolean): void {
    this.members = members;
    // A rolling upgrade: the group's leader may be an argus that ignores reports. Said once per such stretch (members read).
    if (members && reportsUnaware !== undefined) {
      if (reportsUnaware && !this.reportsUnaware && this.c.unreachableAfterMs > 0) this.log(`cluster: a member of group ${this.c.group} runs an argus from before unreachable reports (it may lead the group and ignore them): while it leads, a slot reported unreachable may stay until a worker of this version leads the group and a rebalance comes (the older one's leave is one); until every member runs this version, each report is kept its own time`, { worker: this.id }, 'warn');
      this.reportsUnaware = reportsUnaware;
    }
    // Read while the group was not settled, it may lack this worker's own slots: not used then.
    this.heldByGroup = held && [...this.assigned].every((s) => held.has(s)) ? held : undefined;
    if (dark && (this.heldByGroup || !held)) this.darkHeld = dark; // not read, or not of this generation: as it was
    this.placementUnaware = placementUnaware;
    // Members not read (describeGroups failed): as they were.
    const dup = members ? [...members].some((m) => m.startsWith(`${this.id}/`) && m !== `${this.id}/${this.incarnation}`) : this.duplicateId;
    if (dup && !this.duplicateId) this.log(`cluster: another process in group ${this.c.group} has this worker's id "${this.id}": running no camera and taking no slot until the ids differ (cluster.workerId)`, { worker: this.id }, 'error');
    // The group is told the new capacity (0 while the id is shared) at the rebalance this asks for.
    const changed = dup !== this.duplicateId;
    this.duplicateId = dup;
    if (changed) void this.membership?.requestRebalance();
    if (dup) {
      for (const r of this.running.values()) if (!r.fenced) void this.stopCamera(r, false);
      // Claims written and not started yet are released with the fenced ones (releaseFenced): no
      // reconciliation runs while the id is shared, and the worker given the slot waited
      // releaseWaitMs (6 s) for each of them.
      for (const [id, epoch] of this.pending) this.fencedClaims.set(epoch, id);
      this.pending.clear();
    }
    this.reconcile();
  }

  onJoinedOnce?: (w: Worker) => void;

  /** Runs a reconciliation after the current one (coalesced). */
  reconcile(): void {
    if (this.dirty) return;
    this.dirty = true;
    this.step = this.step.then(async () => {
      this.dirty = false;
      try {
        await this.reconcileOnce();
      } catch (e) {
        this.log(`cluster: reconcile failed: ${(e as Error).message}`, {}, 'warn');
      }
    });
  }

  private fenceAll(): void {
    const live = [...this.running.values()].filter((r) => !r.fenced);
    if (live.length === 0) return;
    this.counters.fencings++;
    this.log(`cluster: no heartbeat answered for ${Math.round(performance.now() - (this.membership?.lastAlive ?? 0))} ms; stopping ${live.length} camera(s) before the group can hand them away`, { worker: this.id, cameras: live.map((r) => r.id) }, 'warn');
    // No release now (the broker may be out of reach, and the frames in flight are still being
    // dropped); each claim is released once its camera has stopped and the lease holds again
    // (releaseFenced). Its claims still pending are this process's too.
    for (const r of live) void this.stopCamera(r, false);
    for (const [id, epoch] of this.pending) this.fencedClaims.set(epoch, id);
    this.pending.clear();
    // Stopped by the fence, not by their connections: their time without frames counts afresh once the lease holds.
    this.reach.clear();
    this.holdsSlots = false;
    this.refenced = true;
  }

  /**
   * Says once per record why a camera of this worker's slots, enabled as written, runs nowhere:
   * its record cannot be used here (a `${env:ARGUS_CAMERA_…}` this worker's environment lacks,
   * say). `argus cameras ls` reads the records without the workers' environments and can only
   * call such a camera waiting; before, the worker said nothing either (an edit that added an
   * unset variable stopped a running camera without a word).
   */
  private reportInvalid(): void {
    for (const id of this.invalidSaid.keys()) {
      const c = this.view.cameras.get(id);
      if (!c || c.error === undefined || !this.assigned.has(c.slot)) this.invalidSaid.delete(id);
    }
    this.lacking.clear();
    for (const c of this.view.cameras.values()) {
      if (c.missingEnv !== undefined && c.active && satisfies(c.placement, this.self)) this.lacking.set(c.id, c.slot);
      if (c.error === undefined || !c.active || !this.assigned.has(c.slot) || this.invalidSaid.get(c.id) === c.text) continue;
      this.invalidSaid.set(c.id, c.text);
      this.log(`cluster: camera ${c.id} (slot ${c.slot}) runs nowhere${c.missingEnv !== undefined ? ' here' : ''}: its record cannot be used on ${this.id}: ${c.error.split('\n')[0]}${c.missingEnv !== undefined ? '; its slot is reported to the group, for a worker whose environment has the variable' : ''}`, { worker: this.id, camera: c.id, slot: c.slot, code: ErrorCodes.CONFIG }, 'error');
    }
  }

  private async reconcileOnce(): Promise<void> {
    const pipeline = this.pipeline;
    if (!pipeline || this.closing || !this.owners) return;
    // A drain asked for (or undone): stop everything planned, then tell the group the new capacity.
    if (this.duplicateId) return;
    const drain = this.drainWanted();
    if (drain !== this.draining) {
      this.draining = drain;
      this.log(`cluster: ${this.id} ${drain ? 'draining: releasing its cameras' : 'back from a drain'}`, { worker: this.id });
      if (drain) await Promise.all([...this.running.values()].filter((r) => !r.stopping).map((r) => this.stopCamera(r, true)));
      await this.membership?.rejoin();
      return;
    }
    if (!this.leaseHolds()) return;
    const now = performance.now();
    const desired = new Map<string, CameraEntry>();
    // A record refused by its chain is tried again once its source changes (edited, or removed and
    // added again); not for its cost or placement alone, which its chain never reads (as a running
    // camera so edited runs on): tried, it was refused again, a claim, a release and an error.
    const refusals = this.unusable.size;
    for (const [id, u] of this.unusable) if (!this.stillRefused(id, u)) this.unusable.delete(id);
    if (this.unusable.size !== refusals) void this.saveReports();
    if (!this.draining) for (const c of this.view.cameras.values()) if (this.assigned.has(c.slot) && c.definition?.source.enabled && satisfies(c.placement, this.self) && !this.unusable.has(c.id)) desired.set(c.id, c);
    this.reportInvalid();
    this.checkPlacement(now);
    this.checkReach(desired, now);

    // Stops first: cameras edited (restarted under a new claim), removed or disabled, at once;
    // cameras whose slot went to another worker after a handoff (they run on until the new
    // owner's connection delivers frames, or the budget ends); then chains that ended by
    // themselves (released, retried in 10 s).
    const stops: Promise<void>[] = [];
    for (const r of this.running.values()) {
      if (r.stopping) continue;
      const want = desired.get(r.id);
      if (want && want.text !== r.text && !r.ended && want.slot === r.slot && JSON.stringify(want.definition!.source) === r.source) {
        // Only its cost or placement changed (the assigner's fields), and it may still run here: it
        // runs on under its claim. Before, it was restarted under a new claim: a gap in its frames,
        // its tracker and counts from 0, a crossing under way lost, for a camera re-weighed.
        this.log(`cluster: ${r.id}'s record changed, its source did not (cost or placement); it runs on`, { worker: this.id, camera: r.id }, 'debug');
        r.text = want.text;
      }
      if (want?.text === r.text) {
        r.handoffSince = 0;
        this.handoffs.delete(r.id);
        continue;
      }
      const cam = this.view.cameras.get(r.id);
      const moved = !want && !this.draining && cam?.text === r.text && cam.definition?.source.enabled && r.claim !== undefined && !this.unusable.has(r.id);
      if (moved) {
        if (!r.handoffSince) {
          r.handoffSince = now;
          r.handoffAfter = this.view.connected.get(r.id)?.offset ?? -1;
          this.handoffs.add(r.id);
        }
        const ready = this.view.connected.get(r.id);
        const readyNow = ready !== undefined && ready.offset > r.handoffAfter && ready.member !== `${this.id}/${this.incarnation}`;
        if (!readyNow && now - r.handoffSince < this.handoffBudget()) continue;
      }
      this.handoffs.delete(r.id);
      stops.push(this.stopCamera(r, true));
    }
    await Promise.all(stops);
    for (const r of [...this.running.values()]) {
      if (!r.ended || r.stopping) continue;
      this.log(`cluster: camera ${r.id} ended on ${this.id}; releasing it and starting it again in 10 s`, { camera: r.id }, 'warn');
      this.retryAt.set(r.id, now + 10_000);
      await this.stopCamera(r, true);
    }
    for (const [id, epoch] of this.pending) {
      if (desired.has(id)) continue;
      this.pending.delete(id);
      await this.release(id, epoch);
    }
    for (const id of this.waits.keys()) if (!desired.has(id)) this.waits.delete(id);
    // A camera stopped here and no longer wanted (removed, disabled, its slot another worker's):
    // its alerts are in the outbox by now (a planned stop drains it before the release), so its
    // claim is forgotten; so is a handoff whose camera a fence stopped. Both kept an entry for every
    // camera that ever ran here (and a handoff left behind made the tick reconcile 10 times a second).
    for (const id of this.claims.keys()) if (!this.running.has(id) && !desired.has(id)) this.claims.delete(id);
    for (const id of this.handoffs) if (!this.running.has(id)) this.handoffs.delete(id);

    for (const [id, at] of this.retryAt) if (at <= now) this.retryAt.delete(id);
    const releaseWait = this.c.releaseWaitMs ?? this.c.sessionTimeoutMs;
    const toClaim: CameraEntry[] = [];
    for (const cam of desired.values()) {
      if (this.running.get(cam.id)?.claim || (this.retryAt.get(cam.id) ?? 0) > now) continue;
      // Until its claim holds, the camera is connected but analyses nothing (a warm start:
      // ffmpeg's connect and its wait for a key frame overlap the wait for the old owner).
      const standby = () => {
        if (!this.running.has(cam.id)) this.startCamera(pipeline, cam, undefined);
      };
      const latest = this.view.owners.get(cam.id);
      const mine = this.pending.get(cam.id);
      if (mine !== undefined) {
        // Claimed: start once the view shows the claim as the camera's latest record and every
        // earlier open claim is released (or its owner's process has left the group).
        if (!latest || latest.epoch < mine) {
          standby(); // the view has not read it yet
          continue;
        }
        if (latest.epoch > mine) {
          // Another worker claimed after us (it held the slot a moment ago): ours ends; we claim again after its release.
          this.pending.delete(cam.id);
          await this.release(cam.id, mine);
          continue;
        }
        if (this.view.openBefore(cam.id, mine).some((c) => this.waitFor(cam.id, c, releaseWait))) {
          standby();
          continue;
        }
        const warm = this.running.get(cam.id);
        // Started under the claim once the chain below has stopped (stopCamera reconciles then).
        if (warm?.stopping) continue;
        if (warm && warm.standbyState === 'reconnecting') {
          // Its connection was refused while the former owner held the camera, and its source
          // waits out a restart backoff (up to reconnect.maxDelayMs): stopped, and started again
          // under the claim, connecting now. Not waited for here: the other cameras' reconciliation goes on.
          void this.stopCamera(warm, true);
          continue;
        }
        this.pending.delete(cam.id);
        this.waits.delete(cam.id);
        const claim = { owner: this.id, epoch: mine };
        if (warm) this.admit(warm, claim);
        else this.startCamera(pipeline, cam, claim);
        continue;
      }
      if (latest?.state === 'claimed' && !this.mine(latest) && this.waitFor(cam.id, latest, releaseWait)) {
        standby();
        continue;
      }
      toClaim.push(cam);
    }
    if (toClaim.length === 0) return;
    // One write for all of them: a worker taking over many cameras waits one round trip.
    this.counters.claims += toClaim.length;
    try {
      const epochs = await this.owners.claim(toClaim.map((c) => c.id));
      toClaim.forEach((cam, i) => {
        // Another process with this id was seen while the claims were written: no reconciliation
        // runs until it has gone, so a claim kept pending stayed open, and the worker given the
        // slot waited releaseWaitMs for it. Released with the fenced ones instead (as onMembers does).
        if (this.duplicateId) return void this.fencedClaims.set(epochs[i], cam.id);
        // Written after the stop began (shutdown waited for this reconciliation SHUTDOWN_RELEASE_MS at most): given back at once.
        if (this.closing) return void this.release(cam.id, epochs[i]);
        this.pending.set(cam.id, epochs[i]);
        if (this.assigned.has(cam.slot) && this.leaseHolds() && !this.running.has(cam.id)) this.startCamera(pipeline, cam, undefined);
      });
    } catch (e) {
      // Retried by the next reconciliation (within a second).
      const ids = toClaim.map((c) => c.id);
      const named = ids.length > 5 ? `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more` : ids.join(', ');
      this.log(`cluster: could not write the claims of ${named}: ${(e as Error).message}`, { cameras: ids.slice(0, 100) }, 'warn');
    }
  }

  private mine(c: { owner: string; incarnation: string }): boolean {
    return c.owner === this.id && c.incarnation === this.incarnation;
  }

  /**
   * True while a new owner should wait for an open claim's release: its owner's process is still
   * in the group (a planned move) and releaseWait has not passed. A claim of this process, or of
   * a process that has left the group (its session expired: it has fenced itself), is no reason to wait.
   */
  private waitFor(camera: string, claim: Pick<OpenClaim, 'owner' | 'incarnation'>, releaseWait: number): boolean {
    if (this.mine(claim)) return false;
    const inGroup = this.members === undefined || this.members.has(`${claim.owner}/${claim.incarnation}`);
    if (!inGroup) return false;
    const since = this.waits.get(camera);
    if (since === undefined) {
      this.waits.set(camera, performance.now());
      this.counters.waitedForRelease++;
      return true;
    }
    if (performance.now() - since < releaseWait) return true;
    // Its process holds no slot of this camera now (the group gave it to us), so it publishes
    // nothing for it whatever it does: the claim is taken.
    this.counters.forcedClaims++;
    this.log(`cluster: ${claim.owner} did not release ${camera} within ${releaseWait} ms; claiming it`, { camera, owner: claim.owner }, 'warn');
    this.waits.set(camera, -Infinity);
    return false;
  }

  /** The claim holds: the camera's frames are analysed and published from now on. */
  private admit(run: Running, claim: Claim): void {
    run.claim = claim;
    run.carry = this.carryFor(run.id, claim.epoch);
    this.claims.set(run.id, claim);
    this.log(`cluster: ${this.id} starts ${run.id} (slot ${run.slot}, epoch ${claim.epoch}; connected while it waited)`, { worker: this.id, camera: run.id, slot: run.slot, epoch: claim.epoch });
    // Its state changes while it waited were held back (the old owner still published its own):
    // the latest is published now, under the new claim. Else the old owner's "stopped" stayed the
    // camera's last status while it streamed here.
    const held = this.heldStatus.get(run.id);
    this.heldStatus.delete(run.id);
    if (held) this.outputs?.publisher.status(held).catch(() => undefined);
  }

  /**
   * Whether a status an earlier run of this worker left in its outbox is replayed at start: not
   * once the view (read to its end before the run starts) holds a later claim of its camera. That
   * claim's owner publishes the camera's states; replayed after them, this one (a `kill -9` during
   * a broker outage, then a restart) became the camera's latest on the compacted status topic.
   */
  replaysStatus(m: StatusMessage): boolean {
    const latest = this.view.owners.get(m.source);
    return m.epoch === undefined || latest === undefined || latest.epoch <= m.epoch;
  }

  /** Whether a source's state change is published: not while its camera waits for its claim here (the latest such is kept for admit). */
  publishesStatus(t: Transition): boolean {
    const reach = this.reach.get(t.source);
    if (reach) {
      reach.state = t.state;
      if (t.state === 'reconnecting' || t.state === 'failed') this.attemptFailed(reach);
    }
    const r = this.running.get(t.source);
    if (!r || r.claim !== undefined) return true;
    this.heldStatus.set(t.source, t);
    if (!r.stopping) {
      r.standbyState = t.state;
      // The connection made while the former owner still streams was refused (a camera that
      // allows one session): that owner is told at once, as by a first frame, so it stops and
      // releases now rather than after its handoff budget, and the new owner, once admitted,
      // connects afresh (reconcileOnce) rather than after its restart backoff. Measured with a
      // one-session camera: the move's gap was 3.1 s (1.5 s budget, then a backoff, then a connect).
      if (t.state === 'reconnecting' && !r.readySent && this.owners) {
        r.readySent = true;
        this.log(`cluster: ${this.id} could not connect ${r.id} while it waits for its claim (${t.reason}); asking its current owner to release it now`, { worker: this.id, camera: r.id }, 'info');
        void this.owners.ready(r.id).catch(() => undefined);
      }
    }
    return false;
  }

  private startCamera(pipeline: Pipeline, cam: CameraEntry, claim: Claim | undefined): void {
    // A reconciliation that outlived shutdown's wait for it (SHUTDOWN_RELEASE_MS) attaches nothing:
    // a camera started then would hold the drain of the stop.
    if (this.closing) return;
    const stop$ = new Subject<void>();
    let ended!: () => void;
    const done = new Promise<void>((r) => (ended = r));
    const run: Running = { id: cam.id, slot: cam.slot, text: cam.text, source: JSON.stringify(cam.definition!.source), claim, stop$, done, fenced: false, stopping: false, stoppingAt: 0, handoffSince: 0, handoffAfter: -1, readySent: false, standbyState: undefined, ended: false, startedAt: Date.now(), stats: undefined, analyzer: undefined, carry: claim ? this.carryFor(cam.id, claim.epoch) : undefined };
    this.running.set(cam.id, run);
    const reach = this.reachOf(cam);
    // A new chain: its first attempt starts now (its state says so until the source tells more).
    reach.chainAt = performance.now();
    reach.state = undefined;
    if (claim) {
      this.claims.set(cam.id, claim);
      this.log(`cluster: ${this.id} starts ${cam.id} (slot ${cam.slot}, epoch ${claim.epoch})`, { worker: this.id, camera: cam.id, slot: cam.slot, epoch: claim.epoch });
    } else this.log(`cluster: ${this.id} connects ${cam.id} (slot ${cam.slot}) while its claim is pending`, { worker: this.id, camera: cam.id, slot: cam.slot }, 'debug');
    // The last check before the sinks: a result is published only while this claim holds.
    const fence = (r: FrameResult): boolean => {
      if (this.owns(run)) return true;
      this.counters.fencedFrames++;
      if (!this.leaseHolds()) this.counters.fencedByLease++;
      else if (!this.assigned.has(run.slot)) this.counters.fencedBySlot++;
      // Its frame was admitted while the claim held (the gate, attach's admit, lets no other in): the
      // alerts it raised are real, and published under that claim's epoch; its detections are
      // not (another worker may hold the camera by now). Dropped, a crossing seen just before
      // a lease lapse raised no alert anywhere: the new owner starts with the object past the line.
      if (r.alerts.length > 0 && run.claim) {
        this.counters.fencedAlerts += r.alerts.length;
        r.alertsOnly = true;
        this.fencedFrameClaims.set(r.frame, run.claim);
        return true;
      }
      r.frame.release();
      return false;
    };
    // The chain's stream's end handed over (the chain cut off, by the run's drain timeout at the stop
    // or --max-frames: it never reaches the filter below) passes the same check, and its alerts carry
    // the claim its frames were admitted under: the camera's latest claim here is another once this
    // worker has claimed it again. Before, it went past the fence, not counted (fencedAlerts), under
    // that latest claim.
    const handedOver = (r: FrameResult): boolean => {
      if (!fence(r)) return false;
      if (run.claim) this.fencedFrameClaims.set(r.frame, run.claim);
      return true;
    };
    this.chains$.next(
      pipeline.attach(cam.definition!.source, stop$, () => {
        // Its stats, where the chain's error is kept (isolate): the latest of its id, this chain's at its first frame.
        if (!run.stats) {
          run.stats = latestStats(pipeline, run.id);
          run.analyzer = pipeline.analyzers?.get(run.id);
        }
        // Looked up, not kept: the record is made anew when the camera is meant to run here again, this chain still running.
        const reach = this.reach.get(run.id);
        if (reach) {
          reach.frameAt = reach.pictureAt = performance.now();
          reach.hollow = 0;
        }
        if (this.owns(run)) {
          // What its former owner handed over, before the first frame it analyses.
          if (run.carry) {
            const left = carriedLeft(run.carry);
            if (left) run.analyzer?.takeOver(left);
            run.carry = undefined;
          }
          return true;
        }
        // Waiting for the claim: the first frame tells the current owner it may hand over.
        if (!run.claim && !run.readySent && this.owners) {
          run.readySent = true;
          void this.owners.ready(run.id).catch(() => undefined);
        }
        return false;
      }, handedOver).pipe(
        filter(fence),
        catchError((e: Error) => {
          const code = (e as { code?: string }).code;
          // Refused as the chain set up (no source state yet): its record, not its connection or a
          // file of this machine's (a source's missing tls.ca fails its attempt, `failed`, and is
          // retried as any ended chain, the file perhaps put back). Started again, it would fail
          // the same way: reconcileOnce leaves it until its record changes.
          const reach = this.reach.get(cam.id);
          if (code === ErrorCodes.CONFIG && this.view.cameras.get(cam.id)?.text === cam.text && reach?.text === cam.text && reach.state === undefined) {
            this.unusable.set(cam.id, { text: cam.text, source: JSON.stringify(cam.definition!.source), why: e.message.split('\n')[0], scope: 'here' });
            void this.saveReports();
            this.log(`cluster: camera ${cam.id} (slot ${cam.slot}) runs nowhere here: its record cannot be used on ${this.id}: ${e.message}; its slot is reported to the group, for a worker that can run it; tried here again once its record changes`, { worker: this.id, camera: cam.id, slot: cam.slot, code }, 'error');
          } else this.log(`cluster: camera ${cam.id} could not start: ${e.message}`, { camera: cam.id, code }, 'error');
          return EMPTY;
        }),
        finalize(() => {
          ended();
          if (!run.stopping) {
            run.ended = true;
            // Its source gave up (or could not start): an attempt that failed, as its `failed` state says.
            // Not a record it refused: that is no failed connection.
            const r = this.reach.get(run.id);
            this.refusedAtFirstFrame(run, r);
            if (r && r.text === run.text && r.state !== 'failed' && this.unusable.get(run.id)?.text !== run.text) this.attemptFailed(r);
            this.reconcile();
          }
        }),
      ),
    );
  }

  /**
   * A chain that ended by itself with VAP_ERR_CONFIG after its source gave it a frame, not in a
   * failed attempt: its record's own geometry (zones or lines outside the picture, analyzer.ts
   * init). Every worker the camera gives the same picture refuses it alike: it runs nowhere until
   * its record changes, its slot is not reported (moving it moves the slot's healthy cameras for
   * nothing), said once. Before, it was started again every 10 s, a claim and a release each
   * time, and reported unreachable 30 s on: its slot moved from worker to worker.
   */
  private refusedAtFirstFrame(run: Running, r: Reach | undefined): void {
    const e = run.stats?.error;
    if (!this.refusedForRecord(run, r, e)) return;
    const why = e!.message.split('\n')[0];
    this.unusable.set(run.id, { text: run.text, source: run.source, why, scope: 'record' });
    void this.saveReports();
    this.log(`cluster: camera ${run.id} (slot ${run.slot}) runs nowhere: its record cannot be used on any worker: ${why}; tried again once its record changes`, { worker: this.id, camera: run.id, slot: run.slot, code: ErrorCodes.CONFIG }, 'error');
  }

  /** Whether error `e` that ended camera `run`'s chain refuses its record for its own geometry (refusedAtFirstFrame): VAP_ERR_CONFIG after a frame, not in a failed attempt, its record unchanged. */
  private refusedForRecord(run: Running, r: Reach | undefined, e: Error | undefined): boolean {
    const cam = this.view.cameras.get(run.id);
    return (e as { code?: string } | undefined)?.code === ErrorCodes.CONFIG && !!cam && cam.text === run.text && !!r && r.text === run.text && r.state !== 'failed' && r.frameAt >= r.chainAt;
  }

  /**
   * Whether the pipeline leaves the failure `e` of camera `id`'s chain for this worker to say
   * (PipelineOptions.failureSaid): a record refused at its first frame, said once by
   * refusedAtFirstFrame naming the camera and the field, with what the worker does about it.
   * Before, the pipeline's "source … failed" came first, a second error line of the same refusal.
   */
  failureSaid(id: string, e: Error): boolean {
    const run = this.running.get(id);
    return !!run && !run.stopping && this.refusedForRecord(run, this.reach.get(id), e);
  }

  /**
   * Stops a camera; frames in flight finish (planned) or are dropped (fenced). A planned stop
   * then lets the alerts raised so far reach the outbox and writes the release.
   */
  private async stopCamera(run: Running, planned: boolean): Promise<void> {
    if (!planned) run.fenced = true;
    // A stop under way (a refused standby's restart, a fence): waited for as long as its own wait
    // for the chain, no longer. It waited for the chain's end: a shutdown meanwhile, with a chain
    // that did not end, never ended either.
    if (run.stopping) return this.chainEnd(run);
    run.stopping = true;
    run.stoppingAt = performance.now();
    run.stop$.next();
    run.stop$.complete();
    await this.chainEnd(run);
    if (this.running.get(run.id) === run) this.running.delete(run.id);
    if (this.running.get(run.id) === undefined) this.heldStatus.delete(run.id);
    run.fenced = true;
    if (!run.claim) return this.reconcile(); // it never held the camera: nothing to release
    this.log(`cluster: ${this.id} stopped ${run.id} (epoch ${run.claim.epoch}${planned ? '' : ', fenced'})`, { worker: this.id, camera: run.id, epoch: run.claim.epoch });
    // The outbox holds every alert of the camera before another worker may start it; after a
    // fence too: the alerts of its frames in flight then (see the filter in startCamera) are
    // journaled under the old epoch before its release is written.
    await this.outputs?.alerts.drain().catch(() => undefined);
    if (planned) {
      await this.outputs?.publisher.flush().catch(() => undefined);
      // Its rules' cooldowns still running go with the release, to the camera's next owner.
      await this.release(run.id, run.claim.epoch, run.analyzer?.handover());
    } else this.fencedClaims.set(run.claim.epoch, run.id);
    this.reconcile();
  }

  /** The end of a stopping camera's chain, waited for until stopBudget after its stop began at most (frames in flight finish within it). */
  private chainEnd(run: Running): Promise<void> {
    const left = run.stoppingAt + this.stopBudget() - performance.now();
    return Promise.race([run.done, new Promise<void>((r) => setTimeout(r, Math.max(0, left)).unref())]);
  }

  /**
   * Releases the claims of cameras stopped by a fence, once the lease holds again. Left open, a
   * later owner waited releaseWaitMs (6 s) on each of them, as this process is in the group again:
   * a broker restart took cameras 27–33 s to come back. A release closes only its own epoch, so it
   * is safe whoever holds the camera now.
   */
  private async releaseFenced(): Promise<void> {
    if (this.releasingFenced) return;
    this.releasingFenced = true;
    try {
      for (const [epoch, camera] of [...this.fencedClaims]) {
        try {
          await this.owners!.release(camera, epoch);
          this.counters.releases++;
          this.fencedClaims.delete(epoch);
        } catch (e) {
          this.log(`cluster: could not write the release of ${camera} (epoch ${epoch}, fenced): ${(e as Error).message}; trying again`, { camera }, 'warn');
          return;
        }
      }
    } finally {
      this.releasingFenced = false;
    }
  }

  /**
   * What camera `id`'s former owner handed over in its release (ClusterView.handovers), for claim
   * `epoch`: that of an earlier claim, counted down at the chain's first analysed frame
   * (carriedLeft). A camera removed and added again takes none.
   */
  private carryFor(id: string, epoch: number): Handover | undefined {
    const h = this.view.handovers.get(id);
    return h && h.epoch < epoch ? h : undefined;
  }

  private async release(camera: string, epoch: number, cooldowns?: CarriedCooldown[]): Promise<void> {
    try {
      // At shutdown, within SHUTDOWN_RELEASE_MS: with the broker down, kafkajs's retries held the
      // exit ~10 s before the Kafka sink's own closeTimeoutMs (24 s in all: past Docker's 10 s
      // stop timeout, then SIGKILL). A release not written costs the next owner releaseWaitMs.
      const written = this.owners!.release(camera, epoch, cooldowns);
      await (this.closing ? withDeadline(written, SHUTDOWN_RELEASE_MS, `no answer within ${SHUTDOWN_RELEASE_MS} ms, shutting down`) : written);
      this.counters.releases++;
    } catch (e) {
      this.log(`cluster: could not write the release of ${camera}: ${(e as Error).message}`, { camera }, 'warn');
    }
  }

  private async shutdown(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.tick) clearInterval(this.tick);
    // A reconciliation writing a claim or a release may wait on a broker that does not answer
    // (kafkajs's retries, each up to its request timeout): it held the stop as long, whatever
    // SHUTDOWN_RELEASE_MS says, past a supervisor's grace. Left to end by itself: what it claims
    // then is released, never started (closing).
    await withDeadline(this.step, SHUTDOWN_RELEASE_MS, 'reconcile').catch(() => undefined);
    await Promise.all([...this.running.values()].map((r) => this.stopCamera(r, this.leaseHolds())));
    await Promise.all([...this.pending].map(([id, epoch]) => this.release(id, epoch)));
    this.pending.clear();
    await this.membership?.stop();
    this.chains$.complete();
  }

  onOutputs(r: RunningPipeline): void {
    this.outputs = r;
  }

  async close(): Promise<void> {
    if (this.tick) clearInterval(this.tick);
    // Bounded: a folder on a disk that hangs (a network share) does not hold the stop.
    if (this.joined) await withDeadline(this.saveReports(true), 1000, 'reports').catch(() => undefined);
    // A stop during open() leaves its connect running (up to kafkajs's retries, ~10 s, when Kafka
    // is down): not waited for, but what it makes once it ends is disconnected.
    void this.connecting?.then(
      () => Promise.all([this.producer?.disconnect().catch(() => undefined), this.admin?.disconnect().catch(() => undefined)]),
      () => undefined,
    );
    await this.membership?.stop();
    await this.view.stop();
    await this.producer?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }
}

/** At shutdown, how long a release may take to be written (Worker.release). */
export const SHUTDOWN_RELEASE_MS = 2000;

/** The longest wait between two tries to reach Kafka at a worker's start. */
const OPEN_RETRY_MAX_MS = 10_000;

/** The summary of a worker stopped before it ran anything. */
function emptySummary(): RunSummary {
  return { frames: 0, stats: [], failed: [], wallMs: 0, alerts: { raised: 0, published: 0, snapshotFailures: 0, snapshotsSkipped: 0 }, lostAlerts: 0, keptAlerts: 0, unsavedAlerts: 0, parkedAlerts: 0, analytics: {}, detached: {} };
}

/**
 * The cooldowns of hand-over `h` still left now, less the time since its release was written (by
 * the two machines' wall clocks: a time in the future reads as now); none left, undefined. Taken
 * at the new chain's first analysed frame: before, at its claim, and a source that gave its
 * first frame 25 s later (a reconnect) had 25 s more of each cooldown than the old owner would have.
 */
function carriedLeft(h: Handover): CarriedCooldown[] | undefined {
  const since = Math.max(0, Date.now() - h.at);
  // A stoppage still open goes over whatever is left of its cooldown.
  const left = h.cooldowns.filter((c) => c.leftMs > since || c.open).map((c) => ({ ...c, leftMs: Math.max(0, c.leftMs - since) }));
  return left.length > 0 ? left : undefined;
}

/** `argus worker`: joins the group and runs the cameras it is given until `signal` aborts. */
export async function runWorker(config: PipelineConfig, options: WorkerOptions = {}): Promise<RunSummary> {
  if (!config.cluster) throw new ArgusError(ErrorCodes.CONFIG, 'cluster: a worker config needs a cluster section (README, "Many machines")');
  const log = options.log ?? (() => {});
  // A setting found wrong here (no brokers) names the file, as the schema's errors do.
  let worker: Worker;
  try {
    worker = new Worker(config, log);
  } catch (e) {
    throw options.configFile ? inContext(e, options.configFile, [ErrorCodes.CONFIG]) : e;
  }
  worker.onJoinedOnce = options.onJoined;
  try {
    // Its reports from before a restart (a rolling restart), kept in its outbox folder.
    await worker.restoreReports(reportsFile(outboxDir(config, options.baseDir ?? process.cwd(), options.env), worker.id));
    // What the brokers refuse of the file's cluster section (its session timeout, a topic that deletes records) names the file too.
    const opened = await worker.open(options.signal).catch((e: unknown) => {
      throw options.configFile ? inContext(e, options.configFile, [ErrorCodes.CONFIG]) : e;
    });
    if (!opened) {
      log(`cluster: worker ${worker.id} stopped before it had read the cluster's state`, { worker: worker.id });
      return emptySummary();
    }
    log(`cluster: worker ${worker.id} read ${worker.view.cameras.size} camera(s); joining group ${config.cluster.group}`, { worker: worker.id });
    return await runPipeline(config, {
      ...options,
      run: worker.incarnation,
      onReady: (r) => {
        worker.onOutputs(r);
        options.onReady?.(r);
      },
      attached: (pipeline, stop) => worker.attached(pipeline, stop),
      claimOf: (source, frame) => worker.claimOf(source, frame),
      publishesStatus: (t) => worker.publishesStatus(t),
      onSourceOpened: (source) => {
        worker.sourceOpened(source);
        options.onSourceOpened?.(source);
      },
      replaysStatus: (m) => worker.replaysStatus(m),
      failureSaid: (id, e) => worker.failureSaid(id, e),
      health: () => worker.health(),
      clusterMetrics: () => worker.metricsState(),
    });
  } finally {
    await worker.close();
  }
}
