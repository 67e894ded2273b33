/**
 * Group membership behind a small interface, so that another Kafka client (one with static
 * membership, KIP-345, or cooperative rebalancing, KIP-429) can replace kafkajs's
 * (kafkajs-membership.ts) without touching the worker.
 */

/** What a worker tells the group about itself when it joins. */
export interface MemberInfo {
  workerId: string;
  /** This process (a worker restarted under the same id is a new incarnation). */
  incarnation: string;
  /** Relative capacity; 0: a drained worker, given no slots. */
  capacity: number;
  /** The slots it runs now (sticky assignment keeps them where it can). */
  owned: number[];
  /** What it offers to cameras' placement (cluster.labels). */
  labels: Record<string, string>;
  /** Its assigner gives slots by their cameras' placement (absent: an argus from before placement). */
  placement?: boolean;
  /**
   * Slots it cannot run: a camera in each got no frame on this worker for
   * cluster.unreachableAfterMs (README, "Many machines"). The leader gives such a slot to a member
   * that has not reported it, when there is one. At most MAX_UNREACHABLE_SLOTS.
   */
  unreachable?: number[];
}

/** The most slots a member reports unreachable in its member data (and the most read from another's). */
export const MAX_UNREACHABLE_SLOTS = 256;

/** One generation's outcome for this worker. */
export interface Assignment {
  /** The slots this worker now holds. */
  slots: number[];
  /**
   * `lastAlive` as it was just before this join completed. A frozen process (SIGSTOP, a long
   * pause) may complete its rejoin before its fence ever ran: the worker compares this with the
   * lease to see that the lease had lapsed, so another worker may have claimed its cameras.
   */
  aliveBefore: number;
}

export interface GroupMembership {
  /** Joins the group; resolves once connected (the first assignment follows through `onAssigned`). */
  start(): Promise<void>;
  /** Leaves the group; resolves once left (or given up after the client's timeout). */
  stop(): Promise<void>;
  /** Leaves and joins again, telling the group `info()` afresh (a drain, or capacity back). */
  rejoin(): Promise<void>;
  /**
   * Asks the group for a new assignment without leaving it (this worker's cameras run on): a
   * camera's placement changed, so a slot should go to another worker.
   */
  requestRebalance(): Promise<void>;
  /**
   * performance.now() of when the last proof of membership was *sent* (a heartbeat the
   * coordinator answered: its request's send time), or of a completed join; -Infinity before
   * the first, and again once the client has crashed or left. The worker's fence reads it.
   */
  readonly lastAlive: number;
}

/**
 * What the group's leader needs of each slot, from one reading of the cameras: each question is
 * answered from that slot's cameras alone (asked of every camera, once per slot and member and
 * again and again while balancing, 1 000 slots and 10 000 cameras held the leader's event loop
 * 8 s at every rebalance).
 */
export interface SlotTable {
  /** The cost of the cameras in a slot (the leader balances by it). */
  cost(slot: number): number;
  /** Whether a member may hold a slot (its cameras' placement). */
  accepts(slot: number, member: Pick<MemberInfo, 'workerId' | 'labels'>): boolean;
}

export interface MembershipOptions {
  /** What to tell the group at each join. */
  info: () => MemberInfo;
  /** The slots' cameras as the leader weighs them: asked for once per assignment. */
  slots: () => SlotTable;
  onAssigned: (a: Assignment) => void;
  /**
   * The group's members in this generation as `workerId/incarnation` (this one included), the
   * slots the group has given out, and those of them whose holder reports them unreachable (down
   * for every able member; none while `reportsUnaware`: a member runs an argus from before
   * unreachable reports, which may lead and ignore them), once read after onAssigned; undefined
   * when they could not be read.
   */
  onMembers?: (members: Set<string> | undefined, held?: Set<number>, placementUnaware?: boolean, dark?: Set<number>, reportsUnaware?: boolean) => void;
  log?: (msg: string, fields?: Record<string, unknown>, level?: 'info' | 'warn' | 'error' | 'debug') => void;
}
