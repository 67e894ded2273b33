import { AssignerProtocol, type Admin, type Consumer, type Kafka, type PartitionAssigner } from 'kafkajs';
import { assignSlots, type SlotMember } from './assign.js';
import type { GroupMembership, MemberInfo, MembershipOptions } from './membership.js';

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
}

function decodeInfo(metadata: Buffer): MemberInfo | undefined {
  try {
    const { userData } = AssignerProtocol.MemberMetadata.decode(metadata)!;
    const v = JSON.parse(userData.toString('utf8')) as Partial<MemberInfo>;
    if (typeof v.workerId !== 'string' || typeof v.capacity !== 'number' || !Number.isFinite(v.capacity) || !Array.isArray(v.owned)) return undefined;
    return { workerId: v.workerId, incarnation: typeof v.incarnation === 'string' ? v.incarnation : '', capacity: Math.max(0, v.capacity), owned: v.owned.filter((s): s is number => Number.isInteger(s)) };
  } catch {
    return undefined;
  }
}

/**
 * The partition assigner kafkajs runs on the group leader: members send their worker id,
 * capacity and current slots as user data; assignSlots shares the topic's partitions. A member
 * whose user data cannot be read (another version) gets nothing and is logged.
 */
export function slotAssigner(o: Pick<KafkajsMembershipOptions, 'info' | 'slotCost' | 'log'>): PartitionAssigner {
  return ({ cluster }) => ({
    name: ASSIGNER_NAME,
    version: ASSIGNER_VERSION,
    async assign({ members, topics }) {
      const topic = topics[0];
      const slots = cluster.findTopicPartitionMetadata(topic).map((p) => p.partitionId);
      const infos: SlotMember[] = [];
      for (const m of members) {
        const info = decodeInfo(m.memberMetadata);
        if (!info) {
          o.log?.(`cluster: member ${m.memberId} sent no argus member data; it gets no slots`, { member: m.memberId }, 'warn');
          continue;
        }
        infos.push({ memberId: m.memberId, workerId: info.workerId, capacity: info.capacity, owned: info.owned });
      }
      const plan = assignSlots(infos, slots, o.slotCost);
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

  constructor(private readonly o: KafkajsMembershipOptions) {}

  get lastAlive(): number {
    return this.alive;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.admin ??= this.o.kafka.admin();
    try {
      await this.admin.connect();
      await this.join();
    } catch (e) {
      this.o.log?.(`cluster: could not join group ${this.o.group} (${(e as Error).message}); trying again in 2 s`, {}, 'warn');
      this.later(() => this.start());
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

  private async join(): Promise<void> {
    const o = this.o;
    const consumer = o.kafka.consumer({
      groupId: o.group,
      partitionAssigners: [slotAssigner(o)],
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      rebalanceTimeout: o.rebalanceTimeoutMs,
      // kafkajs heartbeats between fetches: an idle fetch waits at most this long.
      maxWaitTimeInMs: Math.min(500, o.heartbeatIntervalMs),
      maxBytes: 64 * 1024,
      allowAutoTopicCreation: false,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
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
      this.alive = performance.now();
      const generation = ++this.generation;
      const slots = [...((e.payload.memberAssignment as Record<string, number[]>)[o.topic] ?? [])].sort((a, b) => a - b);
      o.onAssigned({ slots });
      void this.members().then((members) => {
        if (this.consumer === consumer && generation === this.generation) o.onMembers?.(members);
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

  /** The worker ids in the group now (describeGroups); undefined when they cannot be read. */
  private async members(): Promise<Set<string> | undefined> {
    try {
      const { groups } = await this.admin!.describeGroups([this.o.group]);
      const ids = new Set<string>();
      for (const m of groups[0]?.members ?? []) {
        const info = decodeInfo(m.memberMetadata);
        if (info) ids.add(`${info.workerId}/${info.incarnation}`);
      }
      return ids;
    } catch {
      return undefined;
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
    this.alive = -Infinity;
    const old = this.consumer;
    this.consumer = undefined;
    await old?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }
}
