import { AssignerProtocol, type Admin, type Consumer, type Kafka, type PartitionAssigner } from 'kafkajs';
import { assignSlots, type SlotMember } from './assign.js';
import { MAX_UNREACHABLE_SLOTS, type GroupMembership, type MemberInfo, type MembershipOptions } from './membership.js';
import { MAX_WEIGHT, MAX_WORKER_LABELS } from '../config/schema/cluster.js';

/** The protocol name members agree on (every worker must run the same assigner). */
export const ASSIGNER_NAME = 'argus-slots';
const ASSIGNER_VERSION = 1;

export interface KafkajsMembershipOptions extends MembershipOptions {
  kafka: Kafka;
  group: string;
  /** The cameras topic: its partitions are the slots. */
  topic: string;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  /** How long after the last proof of membership the worker's lease holds (sessionTimeoutMs − fenceMarginMs); default sessionTimeoutMs. */
  leaseMs?: number;
}

/** How often a starting worker asks whether the group still holds its former process (formerSelfGone). */
const FORMER_SELF_POLL_MS = 250;

/** How often the wall clock is compared with the monotonic one (watchClock), at most. */
const CLOCK_CHECK_MS = 250;

/** The user data of a member that joins only to make the group rebalance (requestRebalance). */
const NUDGE = { nudge: true };

/** A member's user data as an argus worker's info; undefined for a rebalance request or anything else. */
export function memberWorker(metadata: Buffer): MemberInfo | undefined {
  const info = decodeInfo(metadata);
  return info === 'nudge' ? undefined : info;
}

/**
 * The most bytes of a member's user data that are read: an argus worker's is a few KiB (its slots,
 * 1 000 at most where argus made the topic, its labels, 256 reported slots). Anything longer (a
 * newer release's, or not argus's) is not parsed: the leader parsed every member's at every
 * rebalance, and every worker again after each assignment, whatever its size.
 */
export const MAX_MEMBER_DATA_BYTES = 1024 * 1024;
/** The most slots read from a member's `owned`, labels from its `labels`, and characters of its ids and labels. */
const MAX_OWNED = 10_000;
export const MAX_LABELS = MAX_WORKER_LABELS;
const MAX_TEXT = 256;

/** A member's user data: an argus worker's info, 'nudge' for a rebalance request, undefined for anything else. */
export function decodeInfo(metadata: Buffer): MemberInfo | 'nudge' | undefined {
  try {
    const { userData } = AssignerProtocol.MemberMetadata.decode(metadata)!;
    if (!userData || userData.length > MAX_MEMBER_DATA_BYTES) return undefined;
    const v = JSON.parse(userData.toString('utf8')) as Partial<MemberInfo> & { nudge?: unknown };
    if (!v || typeof v !== 'object') return undefined;
    if (v.nudge === true) return 'nudge';
    if (typeof v.workerId !== 'string' || v.workerId.length > MAX_TEXT || typeof v.capacity !== 'number' || !Number.isFinite(v.capacity) || !Array.isArray(v.owned)) return undefined;
    const labels: Record<string, string> = {};
    if (v.labels && typeof v.labels === 'object' && !Array.isArray(v.labels)) {
      let n = 0;
      for (const [k, x] of Object.entries(v.labels)) {
        if (n >= MAX_LABELS) break;
        if (typeof x === 'string' && k.length <= MAX_TEXT && x.length <= MAX_TEXT && k !== '__proto__') {
          labels[k] = x;
          n++;
        }
      }
    }
    // Whoever joins the group writes these: read as slots (whole, not negative, each once), so many at most.
    // No `unreachable` at all: an argus from before unreachable reports (its assigner ignores them).
    const slots = (a: unknown, max: number) => (Array.isArray(a) ? [...new Set(a.slice(0, max).filter((s): s is number => Number.isInteger(s) && s >= 0))] : []);
    const incarnation = typeof v.incarnation === 'string' && v.incarnation.length <= MAX_TEXT ? v.incarnation : '';
    return { workerId: v.workerId, incarnation, capacity: Math.min(MAX_WEIGHT, Math.max(0, v.capacity)), owned: slots(v.owned, MAX_OWNED), labels, placement: v.placement === true, ...(v.unreachable !== undefined && { unreachable: slots(v.unreachable, MAX_UNREACHABLE_SLOTS) }) };
  } catch {
    return undefined;
  }
}

/** What a worker reads of its settled group after an assignment (KafkajsMembership.members). */
export interface GroupRead {
  /** The members as `workerId/incarnation`. */
  ids: Set<string>;
  /** The slots given out, to any member. */
  held: Set<number>;
  /** Some member runs an argus whose assigner ignores placement. */
  placementUnaware: boolean;
  /**
   * Slots held by a member whose own member data reports them unreachable: the leader gives a
   * reported slot to a member that has not reported it when there is one, so such a slot is down
   * for every able member (or none other may run it). MembershipOptions.onMembers.
   */
  dark: Set<number>;
  /**
   * Some member runs an argus from before unreachable reports (its member data has no
   * `unreachable`): it may lead the group and ignore every report, so a slot left with a member
   * that reports it says nothing of the others, and `dark` is empty (a rolling upgrade: else each
   * worker that had reported such a slot kept its report 160 minutes, not its own time).
   */
  reportsUnaware: boolean;
}

/** Reads a settled group's members (describeGroups) for the cameras topic `topic`. */
export function readGroup(members: readonly { memberMetadata: Buffer; memberAssignment: Buffer }[], topic: string): GroupRead {
  const ids = new Set<string>();
  const held = new Set<number>();
  const dark = new Set<number>();
  let placementUnaware = false;
  let reportsUnaware = false;
  for (const m of members) {
    const info = memberWorker(m.memberMetadata);
    if (info) {
      ids.add(`${info.workerId}/${info.incarnation}`);
      if (!info.placement) placementUnaware = true;
      if (info.unreachable === undefined) reportsUnaware = true;
    }
    const reported = new Set(info?.unreachable ?? []);
    try {
      for (const s of AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[topic] ?? []) {
        held.add(s);
        if (reported.has(s)) dark.add(s);
      }
    } catch {
      // no assignment yet
    }
  }
  return { ids, held, placementUnaware, dark: reportsUnaware ? new Set() : dark, reportsUnaware };
}

/**
 * The partition assigner kafkajs runs on the group leader: members send their worker id,
 * capacity and current slots as user data; assignSlots shares the topic's partitions. A member
 * whose user data cannot be read (another version) gets nothing and is logged.
 */
export function slotAssigner(o: Pick<KafkajsMembershipOptions, 'slots' | 'log'> & { info: () => MemberInfo | typeof NUDGE }): PartitionAssigner {
  return ({ cluster }) => ({
    name: ASSIGNER_NAME,
    version: ASSIGNER_VERSION,
    async assign({ members, topics }) {
      const topic = topics[0];
      const slots = cluster.findTopicPartitionMetadata(topic).map((p) => p.partitionId);
      const infos: (SlotMember & { info: MemberInfo })[] = [];
      for (const m of members) {
        const info = decodeInfo(m.memberMetadata);
        if (info === 'nudge') continue; // it gets nothing and leaves
        if (!info) {
          o.log?.(`cluster: member ${m.memberId} sent no argus member data; it gets no slots`, { member: m.memberId }, 'warn');
          continue;
        }
        infos.push({ memberId: m.memberId, workerId: info.workerId, capacity: info.capacity, owned: info.owned, labels: info.labels, unreachable: info.unreachable, info });
      }
      const table = o.slots();
      const byMember = new Map(infos.map((m) => [m.memberId, m.info]));
      const plan = assignSlots(infos, slots, (slot) => table.cost(slot), (slot, m) => table.accepts(slot, byMember.get(m.memberId)!));
      return members.map((m) => ({
        memberId: m.memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: ASSIGNER_VERSION, assignment: { [topic]: plan.get(m.memberId) ?? [] }, userData: Buffer.alloc(0) }),
      }));
    },
    protocol({ topics }) {
      return { name: ASSIGNER_NAME, metadata: AssignerProtocol.MemberMetadata.encode({ version: ASSIGNER_VERSION, topics, userData: Buffer.from(JSON.stringify(o.info())) }) };
    },
  });
}

/**
 * Membership with a kafkajs consumer subscribed to the cameras topic. Nothing is read through
 * it (the worker's view reads the topics); it exists for the group protocol: joins, heartbeats
 * (every heartbeatIntervalMs, between fetches that wait at most that long or 500 ms), and assignments.
 * Offsets are never committed.
 */
export class KafkajsMembership implements GroupMembership {
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private alive = -Infinity;
  /** Date.now() when the last Heartbeat request was sent (kafkajs's REQUEST event). */
  private heartbeatSentAt = 0;
  private stopped = false;
  /** Generations seen: a members read that finishes after a newer assignment is dropped. */
  private generation = 0;
  private retry: NodeJS.Timeout | undefined;
  private nudging = false;
  private clockWatch: NodeJS.Timeout | undefined;

  constructor(private readonly o: KafkajsMembershipOptions) {}

  /**
   * kafkajs times its heartbeats by the wall clock (the next is due at Date.now() ≥ the last one's
   * Date.now() + heartbeatIntervalMs): a wall clock stepped back by S seconds (NTP correcting a
   * drifted clock, a VM resumed, `date -s`) sent no heartbeat for S seconds. Past the lease the
   * worker fenced every camera, past the session the group dropped it, and it stayed out, running
   * nothing, until the clock had caught up (measured: a step of 30 s, no heartbeat for 30 s, the
   * group empty from 6 s on). A step back that would delay the next heartbeat past the lease
   * makes the worker join again at once, with a consumer whose heartbeats count from the new time.
   */
  private watchClock(): void {
    if (this.clockWatch) return;
    const limit = Math.max(this.o.heartbeatIntervalMs, (this.o.leaseMs ?? this.o.sessionTimeoutMs) - 2 * this.o.heartbeatIntervalMs);
    let wall = Date.now();
    let mono = performance.now();
    this.clockWatch = setInterval(
      () => {
        const w = Date.now();
        const m = performance.now();
        const back = m - mono - (w - wall);
        wall = w;
        mono = m;
        if (back < limit || this.stopped || !this.consumer) return;
        this.o.log?.(`cluster: the wall clock went back ${Math.round(back)} ms; kafkajs would send no heartbeat for as long (it times them by the wall clock): joining group ${this.o.group} again`, { stepMs: Math.round(back) }, 'warn');
        void this.rejoin();
      },
      Math.min(CLOCK_CHECK_MS, this.o.heartbeatIntervalMs),
    );
    this.clockWatch.unref();
  }

  get lastAlive(): number {
    return this.alive;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.watchClock();
    this.admin ??= this.o.kafka.admin();
    try {
      await this.admin.connect();
      await this.formerSelfGone();
      if (this.stopped) return;
      await this.join();
    } catch (e) {
      this.o.log?.(`cluster: could not join group ${this.o.group} (${(e as Error).message}); trying again in 2 s`, {}, 'warn');
      this.later(() => this.start());
    }
  }

  /**
   * Waits (sessionTimeoutMs + 2 s at most) while the group still holds a member with this worker's
   * id from another process: this worker killed and started again before its session expired
   * (kafkajs has no static membership). Joining then began a rebalance that waited for the dead
   * member until its session expired, with every live worker inside its JoinGroup, sending no
   * heartbeat: their leases ran out and every camera of the cluster stopped (measured: 4.5 s
   * without a heartbeat, then all restarted). Once the coordinator has dropped it, the join is a
   * rebalance among live workers. A live process with the same id (a mistake the worker reports
   * once joined) is waited for as long, then joined beside.
   */
  private async formerSelfGone(): Promise<void> {
    const { workerId, incarnation } = this.o.info();
    const until = performance.now() + this.o.sessionTimeoutMs + 2000;
    for (let said = false; !this.stopped && performance.now() < until; ) {
      let former = false;
      let rebalancing = false;
      try {
        const { groups } = await this.admin!.describeGroups([this.o.group]);
        const g = groups[0];
        if (!g || g.state === 'Empty' || g.state === 'Dead') return;
        // A rebalancing group describes its members without their ids: asked again once it has
        // settled, without saying that a former process was seen (workers started together).
        rebalancing = g.state !== 'Stable';
        former = !rebalancing && g.members.some((m) => {
          const w = memberWorker(m.memberMetadata);
          return w?.workerId === workerId && w.incarnation !== incarnation;
        });
      } catch {
        return; // not readable: joined as before
      }
      if (!former && !rebalancing) return;
      if (former && !said) {
        said = true;
        this.o.log?.(`cluster: group ${this.o.group} still holds a member with this worker's id "${workerId}" (its process killed and started again?): joining once the group has dropped it, in ${Math.round(this.o.sessionTimeoutMs / 1000) + 2} s at most`, { worker: workerId });
      }
      await new Promise((r) => setTimeout(r, FORMER_SELF_POLL_MS));
    }
  }

  /** Runs `f` after 2 s unless stopped meanwhile (a failed join or rejoin is retried, never left for good). */
  private later(f: () => Promise<void>): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      if (!this.stopped) void f();
    }, 2000);
    this.retry.unref();
  }

  private consumerFor(assigner: PartitionAssigner): Consumer {
    const o = this.o;
    return o.kafka.consumer({
      groupId: o.group,
      partitionAssigners: [assigner],
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      rebalanceTimeout: o.rebalanceTimeoutMs,
      // kafkajs heartbeats between fetches: an idle fetch waits at most this long.
      maxWaitTimeInMs: Math.min(500, o.heartbeatIntervalMs),
      maxBytes: 64 * 1024,
      allowAutoTopicCreation: false,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
  }

  private async join(): Promise<void> {
    const o = this.o;
    const consumer = this.consumerFor(slotAssigner(o));
    this.consumer = consumer;
    // The lease counts from when the answered heartbeat was sent: its answer may have waited in
    // the socket (a frozen process reads it only on waking), and it proves only that the
    // coordinator had the member then.
    consumer.on(consumer.events.REQUEST, (e) => {
      if (this.consumer === consumer && e.payload.apiName === 'Heartbeat') this.heartbeatSentAt = e.payload.sentAt;
    });
    consumer.on(consumer.events.HEARTBEAT, () => {
      if (this.consumer !== consumer || !this.heartbeatSentAt) return;
      this.alive = Math.max(this.alive, performance.now() - Math.max(0, Date.now() - this.heartbeatSentAt));
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      if (this.consumer !== consumer) return;
      const aliveBefore = this.alive;
      this.alive = performance.now();
      const generation = ++this.generation;
      const slots = [...((e.payload.memberAssignment as Record<string, number[]>)[o.topic] ?? [])].sort((a, b) => a - b);
      o.onAssigned({ slots, aliveBefore });
      void this.members().then((r) => {
        if (this.consumer === consumer && generation === this.generation) o.onMembers?.(r?.ids, r?.held, r?.placementUnaware, r?.dark, r?.reportsUnaware);
      });
    });
    consumer.on(consumer.events.CRASH, (e) => {
      if (this.consumer !== consumer || this.stopped) return;
      // kafkajs disconnects a crashed consumer: it has left the group, whatever comes next.
      this.alive = -Infinity;
      o.log?.(`cluster: group consumer crashed (${(e.payload.error as Error)?.message}); ${e.payload.restart ? 'kafkajs restarts it' : 'joining again in 2 s'}`, {}, 'warn');
      if (!e.payload.restart) this.later(() => this.rejoin());
    });
    await consumer.connect();
    await consumer.subscribe({ topic: o.topic, fromBeginning: false });
    await consumer.run({ autoCommit: false, eachBatchAutoResolve: true, eachBatch: async () => {} });
  }

  /**
   * The worker ids in the group now and the slots given out (describeGroups); undefined when they
   * cannot be read, and while the group rebalances: the broker then describes its members without
   * their metadata, so no worker id could be read, and an empty list said that every former owner
   * had left the group: a new owner did not wait for the old one's release, and both ran a camera
   * for up to a second (two rebalances in a row: a rebalance request, a join right after another).
   * The next generation's read tells them.
   */
  private async members(): Promise<GroupRead | undefined> {
    try {
      const { groups } = await this.admin!.describeGroups([this.o.group]);
      if (groups[0]?.state !== 'Stable') return undefined;
      return readGroup(groups[0].members, this.o.topic);
    } catch {
      return undefined;
    }
  }

  /**
   * A short-lived member joins (the group rebalances: the leader assigns afresh from its view)
   * and leaves once it has its (empty) assignment, or after the rebalance timeout. Resolves
   * when it has left. One at a time.
   */
  async requestRebalance(): Promise<void> {
    if (this.stopped || this.nudging) return;
    const nudge = this.consumerFor(slotAssigner({ ...this.o, info: () => NUDGE }));
    this.nudging = true;
    try {
      const joined = new Promise<void>((r) => {
        nudge.on(nudge.events.GROUP_JOIN, () => r());
        nudge.on(nudge.events.CRASH, () => r());
        setTimeout(r, this.o.rebalanceTimeoutMs + 5000).unref();
      });
      await nudge.connect();
      await nudge.subscribe({ topic: this.o.topic, fromBeginning: false });
      await nudge.run({ autoCommit: false, eachBatchAutoResolve: true, eachBatch: async () => {} });
      await joined;
    } catch (e) {
      this.o.log?.(`cluster: could not ask group ${this.o.group} to rebalance (${(e as Error).message})`, {}, 'warn');
    } finally {
      await nudge.disconnect().catch(() => undefined);
      this.nudging = false;
    }
  }

  async rejoin(): Promise<void> {
    const old = this.consumer;
    this.consumer = undefined;
    this.alive = -Infinity;
    await old?.disconnect().catch(() => undefined);
    if (this.stopped) return;
    try {
      await this.join();
    } catch (e) {
      this.o.log?.(`cluster: could not join group ${this.o.group} again (${(e as Error).message}); trying again in 2 s`, {}, 'warn');
      this.later(() => this.rejoin());
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    clearInterval(this.clockWatch);
    this.clockWatch = undefined;
    this.alive = -Infinity;
    const old = this.consumer;
    this.consumer = undefined;
    await old?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }
}
