/**
 * How slots (partitions of the cameras topic) are shared among workers: in proportion to each
 * worker's capacity, weighed by the cost of the cameras in each slot, keeping every slot where
 * it is when that stays within the worker's share (sticky), so that a join or a leave moves the
 * fewest cameras. Pure: the group leader calls it with what the members told the group.
 */

export interface SlotMember {
  /** The group's member id (what the assignment is keyed by). */
  memberId: string;
  /** The worker's id (ties are broken by it, so every leader computes the same). */
  workerId: string;
  /** Relative capacity; 0 takes nothing (a drained worker). */
  capacity: number;
  /** Slots the worker runs now. */
  owned: readonly number[];
  /** What it offers to cameras' placement (cluster.labels). */
  labels?: Readonly<Record<string, string>>;
  /** Slots it cannot run: a camera in each got no frame there for cluster.unreachableAfterMs (its report, kept 10 min). */
  unreachable?: readonly number[];
}

/** Whether a member may hold a slot (every camera in it may run there); absent: any member may. */
export type SlotAccepts = (slot: number, member: SlotMember) => boolean;

/**
 * Returns each member's slots. `cost(slot)` is the cost of the cameras in it (0 for an empty
 * slot: empty slots are dealt out by count, after the others). `accepts` limits which members
 * may hold a slot (its cameras' placement); a slot no member accepts is given to none.
 *
 * A member that reported a slot unreachable (`unreachable`: a camera in it got no frame there)
 * is not given it while another able member that accepts it has not reported it: the slot goes
 * there (kept by its owner among those, else to the least loaded). When every able member that
 * accepts it has reported it (the camera is down for all), the reports count for nothing: it
 * stays where it is, so that it does not bounce between members that all fail it.
 */
export function assignSlots(members: readonly SlotMember[], slots: readonly number[], slotCost: (slot: number) => number, slotAccepts: SlotAccepts = () => true): Map<string, number[]> {
  // Each asked once: a worker's answers scan every camera, and the balancing below asks again and
  // again (1 000 slots, 10 000 cameras: 8 s on the leader's event loop, every rebalance, with
  // every worker waiting for the assignment without a heartbeat, past the lease).
  const costs = new Map<number, number>();
  const cost = (s: number) => {
    let c = costs.get(s);
    if (c === undefined) costs.set(s, (c = slotCost(s)));
    return c;
  };
  const accepted = new Map<string, Map<number, boolean>>();
  const placed: SlotAccepts = (s, m) => {
    let byMember = accepted.get(m.memberId);
    if (!byMember) accepted.set(m.memberId, (byMember = new Map()));
    let a = byMember.get(s);
    if (a === undefined) byMember.set(s, (a = slotAccepts(s, m)));
    return a;
  };
  const out = new Map<string, number[]>(members.map((m) => [m.memberId, []]));
  const able = [...members].filter((m) => m.capacity > 0).sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : a.memberId < b.memberId ? -1 : 1));
  if (able.length === 0) return out;
  // Reports of unreachable slots, by member; per slot, whether some able member that may hold it
  // has not reported it (asked once per slot).
  const reported = new Map<string, ReadonlySet<number>>(able.map((m) => [m.memberId, new Set(m.unreachable ?? [])]));
  const reachable = new Map<number, boolean>();
  const reachableSomewhere = (s: number) => {
    let r = reachable.get(s);
    if (r === undefined) reachable.set(s, (r = able.some((m) => !reported.get(m.memberId)!.has(s) && placed(s, m))));
    return r;
  };
  const accepts: SlotAccepts = (s, m) => placed(s, m) && !(reported.get(m.memberId)?.has(s) && reachableSomewhere(s));
  const all = [...new Set(slots)].sort((a, b) => a - b);
  // Weighed slots by their cameras' cost; empty ones (a camera added later lands in one) by count.
  const weighed = all.filter((s) => cost(s) > 0);
  const empty = all.filter((s) => cost(s) <= 0);
  const taken = new Set<number>();
  for (const [group, weight] of [
    [weighed, (s: number) => cost(s)],
    [empty, () => 1],
  ] as const) {
    const plan = balance(able, group, weight, taken, accepts);
    for (const [m, l] of plan) out.get(m)!.push(...l);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}

/**
 * One group of slots: each member keeps what it runs (where it still accepts it); slots nobody
 * (able) runs go, heaviest first, to the accepting member with the lowest load relative to its
 * capacity; then, while some slot moved from a member to a less loaded one that accepts it
 * would leave the latter below the giver's load, such a slot moves (the most loaded giver's
 * heaviest first, to the least loaded taker). Only moves that even the loads out are made:
 * after each, both the giver's and the taker's relative loads are below the giver's before, so
 * the sorted loads fall and this ends (a guard bounds it besides).
 */
function balance(able: readonly SlotMember[], group: readonly number[], weight: (s: number) => number, taken: Set<number>, accepts: SlotAccepts): Map<string, number[]> {
  const inGroup = new Set(group);
  const held = new Map<string, number[]>(able.map((m) => [m.memberId, []]));
  const load = new Map<string, number>(able.map((m) => [m.memberId, 0]));
  const cap = new Map<string, number>(able.map((m) => [m.memberId, m.capacity]));
  const give = (id: string, s: number) => {
    held.get(id)!.push(s);
    taken.add(s);
    load.set(id, load.get(id)! + weight(s));
  };
  const rel = (id: string, extra = 0) => (load.get(id)! + extra) / cap.get(id)!;
  const byId = new Map(able.map((m) => [m.memberId, m]));
  const ok = (id: string, s: number) => accepts(s, byId.get(id)!);
  for (const m of able) for (const s of [...m.owned].sort((a, b) => a - b)) if (inGroup.has(s) && !taken.has(s) && ok(m.memberId, s)) give(m.memberId, s);
  for (const s of group.filter((x) => !taken.has(x)).sort((a, b) => weight(b) - weight(a) || a - b)) {
    let best: string | undefined;
    for (const m of able) if (ok(m.memberId, s) && (best === undefined || rel(m.memberId, weight(s)) < rel(best, weight(s)) - 1e-9)) best = m.memberId;
    if (best !== undefined) give(best, s); // else no member may run its cameras: it waits, held by none
  }
  // Stable order (every leader computes the same): by relative load, then by id order in `able`.
  const rank = new Map(able.map((m, i) => [m.memberId, i]));
  const order = (ids: string[], dir: 1 | -1) => ids.sort((a, b) => (Math.abs(rel(a) - rel(b)) > 1e-9 ? dir * (rel(a) - rel(b)) : rank.get(a)! - rank.get(b)!));
  for (let guard = 0; guard < 10_000; guard++) {
    let moved = false;
    // The least loaded member takes the heaviest slot of the most loaded giver that leaves it
    // below the giver's load now. Only when every such slot is one it may not hold (placement)
    // is the next least loaded member tried: without placement this is the plain rule.
    const ids = able.map((m) => m.memberId);
    outer: for (const lo of order([...ids], 1)) {
      let refused = false;
      for (const hi of order(ids.filter((id) => id !== lo), -1)) {
        if (rel(hi) <= rel(lo) + 1e-9) break;
        const fitting = held.get(hi)!.filter((s) => rel(lo, weight(s)) < rel(hi) - 1e-9);
        const movable = fitting.filter((s) => ok(lo, s)).sort((a, b) => weight(b) - weight(a) || b - a);
        if (movable.length === 0) {
          if (fitting.length > 0) refused = true;
          continue;
        }
        const s = movable[0];
        held.set(hi, held.get(hi)!.filter((x) => x !== s));
        load.set(hi, load.get(hi)! - weight(s));
        held.get(lo)!.push(s);
        load.set(lo, load.get(lo)! + weight(s));
        moved = true;
        break outer;
      }
      if (!refused) break;
    }
    if (!moved) break;
  }
  return held;
}
