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
    if (typeof v.workerId !== 'string' || typeof v.capacity !== 'number' || !Array.isArray(v.owned)) return undefined;
    return { workerId: v.workerId, capacity: Math.max(0, v.capacity), owned: v.owned.filter((s): s is number => Number.isInteger(s)) };
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
 * (every heartbeatIntervalMs, between fetches that wait 100 ms at most), and assignments.
 * Offsets are never committed.
 */
export class KafkajsMembership implements GroupMembership {
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  private alive = -Infinity;
  private joining = false;
  private stopped = false;

  constructor(private readonly o: KafkajsMembershipOptions) {}

  get lastAlive(): number {
    return this.alive;
  }

  get rebalancing(): boolean {
    return this.joining;
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.admin ??= this.o.kafka.admin();
    await this.admin.connect();
    await this.join();
  }

  private async join(): Promise<void> {
    const o = this.o;
    const consumer = o.kafka.consumer({
      groupId: o.group,
      partitionAssigners: [slotAssigner(o)],
      sessionTimeout: o.sessionTimeoutMs,
      heartbeatInterval: o.heartbeatIntervalMs,
      rebalanceTimeout: o.rebalanceTimeoutMs,
      maxWaitTimeInMs: 100,
      maxBytes: 64 * 1024,
      allowAutoTopicCreation: false,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.HEARTBEAT, () => {
      if (this.consumer === consumer) this.alive = performance.now();
    });
    consumer.on(consumer.events.REBALANCING, () => {
      if (this.consumer !== consumer) return;
      this.joining = true;
      o.onRebalancing?.();
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      if (this.consumer !== consumer) return;
      this.alive = performance.now();
      this.joining = false;
      const slots = [...((e.payload.memberAssignment as Record<string, number[]>)[o.topic] ?? [])].sort((a, b) => a - b);
      void this.members().then((members) => {
        if (this.consumer === consumer) o.onAssigned({ slots, members });
      });
    });
    consumer.on(consumer.events.CRASH, (e) => {
      if (this.consumer !== consumer || this.stopped) return;
      this.joining = false;
      o.log?.(`cluster: group consumer crashed (${(e.payload.error as Error)?.message}); ${e.payload.restart ? 'kafkajs restarts it' : 'joining again'}`, {}, 'warn');
      if (!e.payload.restart) void this.rejoin().catch(() => undefined);
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
        if (info) ids.add(info.workerId);
      }
      return ids;
    } catch {
      return undefined;
    }
  }

  async rejoin(): Promise<void> {
    const old = this.consumer;
    this.consumer = undefined;
    this.joining = false;
    await old?.disconnect().catch(() => undefined);
    if (!this.stopped) await this.join();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const old = this.consumer;
    this.consumer = undefined;
    await old?.disconnect().catch(() => undefined);
    await this.admin?.disconnect().catch(() => undefined);
  }
}
