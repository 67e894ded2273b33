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
}

/**
 * Returns each member's slots. `cost(slot)` is the cost of the cameras in it (0 for an empty
 * slot: empty slots are dealt out by count, after the others).
 */
export function assignSlots(members: readonly SlotMember[], slots: readonly number[], cost: (slot: number) => number): Map<string, number[]> {
  const out = new Map<string, number[]>(members.map((m) => [m.memberId, []]));
  const able = [...members].filter((m) => m.capacity > 0).sort((a, b) => (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : a.memberId < b.memberId ? -1 : 1));
  if (able.length === 0) return out;
  const all = [...new Set(slots)].sort((a, b) => a - b);
  // Weighed slots by their cameras' cost; empty ones (a camera added later lands in one) by count.
  const weighed = all.filter((s) => cost(s) > 0);
  const empty = all.filter((s) => cost(s) <= 0);
  const taken = new Set<number>();
  for (const [group, weight] of [
    [weighed, (s: number) => cost(s)],
    [empty, () => 1],
  ] as const) {
    const plan = balance(able, group, weight, taken);
    for (const [m, l] of plan) out.get(m)!.push(...l);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}

/**
 * One group of slots: each member keeps what it runs; slots nobody (able) runs go, heaviest
 * first, to the member with the lowest load relative to its capacity; then, while some slot
 * moved from a member to the least loaded one would leave the latter below the giver's load,
 * such a slot moves (the most loaded giver's heaviest first). Only moves that even the loads
 * out are made: each lowers the sum of squared loads, so this ends.
 */
function balance(able: readonly SlotMember[], group: readonly number[], weight: (s: number) => number, taken: Set<number>): Map<string, number[]> {
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
  for (const m of able) for (const s of [...m.owned].sort((a, b) => a - b)) if (inGroup.has(s) && !taken.has(s)) give(m.memberId, s);
  for (const s of group.filter((x) => !taken.has(x)).sort((a, b) => weight(b) - weight(a) || a - b)) {
    let best = able[0].memberId;
    for (const m of able) if (rel(m.memberId, weight(s)) < rel(best, weight(s)) - 1e-9) best = m.memberId;
    give(best, s);
  }
  for (let guard = 0; guard < 10_000; guard++) {
    let lo = able[0].memberId;
    for (const m of able) if (rel(m.memberId) < rel(lo) - 1e-9) lo = m.memberId;
    // Givers from the most loaded down: the heaviest of its slots whose move leaves the least
    // loaded member below the giver's load now (a giver whose slots are all too heavy is passed).
    const givers = able.map((m) => m.memberId).filter((id) => id !== lo).sort((a, b) => rel(b) - rel(a));
    let moved = false;
    for (const hi of givers) {
      const movable = held
        .get(hi)!
        .filter((s) => rel(lo, weight(s)) < rel(hi) - 1e-9)
        .sort((a, b) => weight(b) - weight(a) || b - a);
      if (movable.length === 0) continue;
      const s = movable[0];
      held.set(hi, held.get(hi)!.filter((x) => x !== s));
      load.set(hi, load.get(hi)! - weight(s));
      held.get(lo)!.push(s);
      load.set(lo, load.get(lo)! + weight(s));
      moved = true;
      break;
    }
    if (!moved) break;
  }
  return held;
}
