import { describe, expect, it } from 'vitest';
import { assignSlots, type SlotMember } from '../../src/cluster/assign.js';

const slots = (n: number) => Array.from({ length: n }, (_, i) => i);
const members = (n: number, owned: number[][] = [], capacity: number[] = []): SlotMember[] =>
  Array.from({ length: n }, (_, i) => ({ memberId: `m${i}`, workerId: `w${i}`, capacity: capacity[i] ?? 1, owned: owned[i] ?? [] }));
const loads = (plan: Map<string, number[]>, cost: (s: number) => number) => [...plan.values()].map((l) => l.reduce((a, s) => a + cost(s), 0));
const everySlotOnce = (plan: Map<string, number[]>, n: number) => expect([...plan.values()].flat().sort((a, b) => a - b)).toEqual(slots(n));
const moved = (before: Map<string, number[]>, after: Map<string, number[]>) => {
  const owner = new Map<number, string>();
  for (const [m, l] of before) for (const s of l) owner.set(s, m);
  let n = 0;
  for (const [m, l] of after) for (const s of l) if (owner.has(s) && owner.get(s) !== m) n++;
  return n;
};

describe('assignSlots (the group leader’s partition assigner)', () => {
  it('shares cameras by cost in proportion to capacity, every slot to exactly one worker', () => {
    const cost = (s: number) => (s < 12 ? 1 : 0); // 12 cameras, 12 empty slots
    const plan = assignSlots(members(3), slots(24), cost);
    everySlotOnce(plan, 24);
    expect(loads(plan, cost)).toEqual([4, 4, 4]);
    const weighted = assignSlots(members(2, [], [2, 1]), slots(24), cost);
    expect(loads(weighted, cost)).toEqual([8, 4]);
    // empty slots are dealt out too (a camera added later lands in one)
    for (const l of plan.values()) expect(l.filter((s) => s >= 12).length).toBe(4);
  });

  it('is sticky: a fourth worker joining moves about a quarter of the cameras, all of them to it', () => {
    const cost = (s: number) => (s % 2 === 0 ? 1 : 0); // 12 cameras in 24 slots
    const three = assignSlots(members(3), slots(24), cost);
    const owned = [...three.values()];
    const four = assignSlots([...members(3, owned), { memberId: 'm3', workerId: 'w3', capacity: 1, owned: [] }], slots(24), cost);
    everySlotOnce(four, 24);
    expect(loads(four, cost)).toEqual([3, 3, 3, 3]);
    const cams = (p: Map<string, number[]>) => new Map([...p].map(([m, l]) => [m, l.filter((s) => cost(s) > 0)]));
    expect(moved(cams(three), cams(four))).toBe(3); // 3 of 12 cameras move…
    expect(cams(four).get('m3')!.length).toBe(3); // …all of them to the newcomer: none between the three
    // the same inputs give the same plan (every leader computes it alike)
    expect(assignSlots([...members(3, owned), { memberId: 'm3', workerId: 'w3', capacity: 1, owned: [] }], slots(24), cost)).toEqual(four);
  });

  it('six cameras, three workers then a fourth: exactly one camera moves, to the newcomer (2, 2, 1, 1); the next rebalance moves nothing', () => {
    const cost = (s: number) => ([3, 7, 11, 19, 23, 30].includes(s) ? 1 : 0);
    const three = assignSlots(members(3), slots(32), cost);
    expect(loads(three, cost)).toEqual([2, 2, 2]);
    const join = [...members(3, [...three.values()]), { memberId: 'm3', workerId: 'w3', capacity: 1, owned: [] }];
    const four = assignSlots(join, slots(32), cost);
    expect(loads(four, cost).sort()).toEqual([1, 1, 2, 2]);
    const cams = (p: Map<string, number[]>) => new Map([...p].map(([m, l]) => [m, l.filter((s) => cost(s) > 0)]));
    expect(moved(cams(three), cams(four))).toBe(1);
    expect(cams(four).get('m3')!.length).toBe(1);
    const again = assignSlots(join.map((m) => ({ ...m, owned: four.get(m.memberId)! })), slots(32), cost);
    expect(moved(four, again)).toBe(0);
  });

  it('an uneven start (3, 2, 1) and a newcomer: only the move that evens the loads out is made', () => {
    const cost = (s: number) => (s < 6 ? 1 : 0);
    const owned = [[0, 1, 2], [3, 4], [5]];
    const plan = assignSlots([...members(3, owned), { memberId: 'm3', workerId: 'w3', capacity: 1, owned: [] }], slots(12), cost);
    const cams = new Map([...plan].map(([m, l]) => [m, l.filter((x) => cost(x) > 0)]));
    expect(cams.get('m0')!.length).toBe(2);
    expect(cams.get('m1')).toEqual([3, 4]);
    expect(cams.get('m2')).toEqual([5]);
    expect(cams.get('m3')!.length).toBe(1);
    expect(cams.get('m0')!.every((x) => [0, 1, 2].includes(x))).toBe(true);
  });

  it('a slot holding two cameras is passed over when moving it would not even the loads out: the newcomer gets a one-camera slot from another worker', () => {
    const cost = (s: number) => ({ 3: 1, 5: 2, 22: 1 })[s] ?? 0;
    const plan = assignSlots([...members(2, [[5], [3, 22]]), { memberId: 'm2', workerId: 'w2', capacity: 1, owned: [] }], slots(32), cost);
    const cams = new Map([...plan].map(([m, l]) => [m, l.filter((x) => cost(x) > 0)]));
    expect(cams.get('m0')).toEqual([5]);
    expect(cams.get('m2')!.length).toBe(1);
    expect(cams.get('m1')!.length).toBe(1);
  });

  it('a worker leaving: only its cameras move, spread over the others', () => {
    const cost = () => 1;
    const three = assignSlots(members(3), slots(12), cost);
    const owned = [...three.values()];
    const two = assignSlots(members(2, owned), slots(12), cost);
    everySlotOnce(two, 12);
    expect(loads(two, cost)).toEqual([6, 6]);
    for (const s of owned[0]) expect(two.get('m0')).toContain(s);
    for (const s of owned[1]) expect(two.get('m1')).toContain(s);
  });

  it('capacity 0 (a drained worker) gets nothing; no able worker leaves everything unassigned', () => {
    const cost = () => 1;
    const plan = assignSlots(members(3, [[0, 1, 2, 3]], [0, 1, 1]), slots(12), cost);
    expect(plan.get('m0')).toEqual([]);
    expect(loads(plan, cost)).toEqual([0, 6, 6]);
    expect([...assignSlots(members(2, [], [0, 0]), slots(4), cost).values()].flat()).toEqual([]);
  });

  it('heavy cameras: greedy by cost keeps the heaviest load within one camera of the share; a slot two workers claim goes to one', () => {
    const costs = [5, 4, 3, 3, 2, 2, 1, 1, 1];
    const cost = (s: number) => costs[s] ?? 0;
    const plan = assignSlots(members(3, [[0, 1], [0]]), slots(9), cost);
    everySlotOnce(plan, 9);
    const l = loads(plan, cost);
    expect(Math.max(...l) - Math.min(...l)).toBeLessThanOrEqual(5);
    expect(l.reduce((a, b) => a + b, 0)).toBe(22);
  });

  it('placement: a slot goes only to a worker its cameras accept (kept there, balanced around it); a slot no worker accepts is held by none', () => {
    const cost = (s: number) => (s < 8 ? 1 : 0);
    // slot 0's camera is pinned to w2; slots 1 and 2 need gpu=yes (only w1 has it)
    const labels: Record<string, Record<string, string>> = { m0: {}, m1: { gpu: 'yes' }, m2: {} };
    const accepts = (slot: number, m: SlotMember) => (slot === 0 ? m.workerId === 'w2' : slot === 1 || slot === 2 ? labels[m.memberId].gpu === 'yes' : slot === 3 ? false : true);
    const ms = members(3, [[0, 1, 2, 4], [5], [6, 7]]);
    const plan = assignSlots(ms, slots(12), cost, accepts);
    expect(plan.get('m2')).toContain(0); // taken from m0, which owned it: it may not run it
    expect(plan.get('m1')).toEqual(expect.arrayContaining([1, 2]));
    for (const [m, l] of plan) for (const s of l) expect(accepts(s, ms.find((x) => x.memberId === m)!)).toBe(true);
    expect([...plan.values()].flat()).not.toContain(3); // nobody may run slot 3's camera
    expect([...plan.values()].flat().sort((a, b) => a - b)).toEqual(slots(12).filter((s) => s !== 3));
    // the loads are as even as the constraints allow: 7 cameras held, by 3 workers
    const l = loads(plan, cost);
    expect(Math.max(...l) - Math.min(...l)).toBeLessThanOrEqual(1);
    // and without the constraints the same members keep what they own (nothing moves but the newcomer's share)
    expect(assignSlots(ms, slots(12), cost).get('m0')).toEqual(expect.arrayContaining([0, 1, 2]));
  });

  it('unequal capacities: the plain rule only (the least loaded takes, or nothing moves), so placement support moved nothing that was kept before', () => {
    const cost = (s: number) => (s < 2 ? 1 : 0);
    // m0 (capacity 2) runs both cameras; m1 (1) and m2 (3) join: the least loaded relative to
    // capacity cannot take a camera without ending above m0's load, so both stay on m0.
    const plan = assignSlots([{ memberId: 'm0', workerId: 'w0', capacity: 2, owned: [0, 1] }, { memberId: 'm1', workerId: 'w1', capacity: 1, owned: [] }, { memberId: 'm2', workerId: 'w2', capacity: 3, owned: [] }], slots(2), cost);
    expect(plan.get('m0')).toEqual([0, 1]);
  });

  it('placement: when the least loaded member may not take any slot that would even the loads, the next least loaded takes it', () => {
    const cost = (s: number) => (s < 4 ? 1 : 0);
    // m0 runs 4 cameras; m1 (least loaded, 0) may not run slots 0–3 (they need gpu); m2 has gpu and one other slot's load.
    const accepts = (slot: number, m: SlotMember) => slot >= 4 || m.memberId !== 'm1';
    const ms: SlotMember[] = [
      { memberId: 'm0', workerId: 'w0', capacity: 1, owned: [0, 1, 2, 3] },
      { memberId: 'm1', workerId: 'w1', capacity: 1, owned: [] },
      { memberId: 'm2', workerId: 'w2', capacity: 1, owned: [] },
    ];
    const plan = assignSlots(ms, slots(4), cost, accepts);
    expect(plan.get('m1')).toEqual([]);
    expect(plan.get('m0')!.length).toBe(2);
    expect(plan.get('m2')!.length).toBe(2);
  });
});
