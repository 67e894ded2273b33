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
  const capacity = able.reduce((s, m) => s + m.capacity, 0);
  const weighed = all.filter((s) => cost(s) > 0);
  const empty = all.filter((s) => cost(s) <= 0);
  const total = weighed.reduce((s, x) => s + cost(x), 0);
  const load = new Map<string, number>(able.map((m) => [m.memberId, 0]));
  const count = new Map<string, number>(able.map((m) => [m.memberId, 0]));
  const taken = new Set<number>();
  const give = (m: SlotMember, slot: number) => {
    out.get(m.memberId)!.push(slot);
    taken.add(slot);
    load.set(m.memberId, load.get(m.memberId)! + Math.max(0, cost(slot)));
    count.set(m.memberId, count.get(m.memberId)! + 1);
  };

  // 1. Sticky, weighed slots: each member keeps what it runs, heaviest first, while keeping
  //    the next one brings its load closer to its share (load + cost/2 < share); what is left
  //    over is dealt in 2, where a tie goes back to the worker that had it.
  const inAll = new Set(weighed);
  for (const m of able) {
    const share = (total * m.capacity) / capacity;
    const mine = m.owned.filter((s) => inAll.has(s) && !taken.has(s)).sort((a, b) => cost(b) - cost(a) || a - b);
    for (const s of mine) if (load.get(m.memberId)! + cost(s) / 2 < share - 1e-9) give(m, s);
  }
  const before = new Map<number, string>();
  for (const m of able) for (const s of m.owned) if (!before.has(s)) before.set(s, m.memberId);
  // 2. The rest, heaviest first, each to the member whose load after taking it is lowest
  //    relative to its capacity (longest-processing-time first); on a tie, the worker that ran it.
  for (const s of weighed.filter((x) => !taken.has(x)).sort((a, b) => cost(b) - cost(a) || a - b)) {
    let best = able[0];
    let bestLoad = Infinity;
    for (const m of able) {
      const l = (load.get(m.memberId)! + cost(s)) / m.capacity;
      if (l < bestLoad - 1e-9 || (Math.abs(l - bestLoad) <= 1e-9 && before.get(s) === m.memberId)) {
        best = m;
        bestLoad = l;
      }
    }
    give(best, s);
  }
  // 3. Empty slots by count (a camera added later lands in one): sticky within the share, then fewest first.
  const slotShare = (m: SlotMember) => Math.ceil((empty.length * m.capacity) / capacity);
  const emptyCount = new Map<string, number>(able.map((m) => [m.memberId, 0]));
  const inEmpty = new Set(empty);
  for (const m of able) {
    for (const s of m.owned) {
      if (!inEmpty.has(s) || taken.has(s) || emptyCount.get(m.memberId)! >= slotShare(m)) continue;
      give(m, s);
      emptyCount.set(m.memberId, emptyCount.get(m.memberId)! + 1);
    }
  }
  for (const s of empty.filter((x) => !taken.has(x))) {
    let best = able[0];
    let bestN = Infinity;
    for (const m of able) {
      const n = emptyCount.get(m.memberId)! / m.capacity;
      if (n < bestN - 1e-9) {
        best = m;
        bestN = n;
      }
    }
    give(best, s);
    emptyCount.set(best.memberId, emptyCount.get(best.memberId)! + 1);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}
