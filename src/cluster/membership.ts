/**
 * Group membership behind a small interface, so that another Kafka client (one with static
 * membership, KIP-345, or cooperative rebalancing, KIP-429) can replace kafkajs's
 * (kafkajs-membership.ts) without touching the worker.
 */

/** What a worker tells the group about itself when it joins. */
export interface MemberInfo {
  workerId: string;
  /** Relative capacity; 0: a drained worker, given no slots. */
  capacity: number;
  /** The slots it runs now (sticky assignment keeps them where it can). */
  owned: number[];
}

/** One generation's outcome for this worker. */
export interface Assignment {
  /** The slots this worker now holds. */
  slots: number[];
  /** Worker ids of the group's members in this generation (this one included). Undefined when they could not be read. */
  members?: Set<string>;
}

export interface GroupMembership {
  /** Joins the group; resolves once connected (the first assignment follows through `onAssigned`). */
  start(): Promise<void>;
  /** Leaves the group; resolves once left (or given up after the client's timeout). */
  stop(): Promise<void>;
  /** Leaves and joins again, telling the group `info()` afresh (a drain, or capacity back). */
  rejoin(): Promise<void>;
  /**
   * performance.now() of the last proof of membership (a heartbeat the coordinator answered, or
   * a completed join); -Infinity before the first. The worker's fence reads it.
   */
  readonly lastAlive: number;
  /**
   * True from the moment the coordinator answered a heartbeat with "rebalance in progress"
   * (the member then rejoins at once) until the next assignment. A member waiting in a join is
   * kept in the group until the rebalance timeout, which began after its last answered heartbeat.
   */
  readonly rebalancing: boolean;
}

export interface MembershipOptions {
  /** What to tell the group at each join. */
  info: () => MemberInfo;
  /** The cost of the cameras in a slot (the leader balances by it). */
  slotCost: (slot: number) => number;
  onAssigned: (a: Assignment) => void;
  /** The group began a rebalance (this worker keeps its slots until the next assignment). */
  onRebalancing?: () => void;
  log?: (msg: string, fields?: Record<string, unknown>, level?: 'info' | 'warn' | 'error' | 'debug') => void;
}
