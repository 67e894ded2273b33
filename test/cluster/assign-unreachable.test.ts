/**
 * A worker that cannot reach a camera of its slots (its VLAN, a firewall, its own DNS) reports the
 * slot in its member data (cluster.unreachableAfterMs); the leader's assigner gives such a slot to
 * another able member that has not reported it, and leaves it where it is when every one has (the
 * camera is down for all). Before, the reports did not exist: the slot stayed, and the camera stayed
 * dark, though another worker could run it. Pure: assignSlots with made-up members.
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { statusOf } from '../../src/cluster/admin.js';
import { assignSlots, type SlotMember } from '../../src/cluster/assign.js';
import { decodeInfo } from '../../src/cluster/kafkajs-membership.js';
import { MAX_UNREACHABLE_SLOTS } from '../../src/cluster/membership.js';
import { ClusterView } from '../../src/cluster/view.js';
import { ClusterSchema } from '../../src/config/schema.js';

const slots = (n: number) => Array.from({ length: n }, (_, i) => i);
const cost = (s: number) => (s < 6 ? 1 : 0); // 6 cameras (slots 0–5), 2 empty slots
const member = (i: number, owned: number[], unreachable: number[] = [], capacity = 1): SlotMember => ({ memberId: `m${i}`, workerId: `w${i}`, capacity, owned, unreachable });
const ownerOf = (plan: Map<string, number[]>, s: number) => [...plan].find(([, l]) => l.includes(s))?.[0];
/** The members again, each owning what the plan gave it (the next rebalance). */
const next = (ms: SlotMember[], plan: Map<string, number[]>) => ms.map((m) => ({ ...m, owned: plan.get(m.memberId)! }));

describe('assignSlots: slots a member reports unreachable', () => {
  it('a slot its owner reports goes to a member that has not reported it; nothing else moves', () => {
    const ms = [member(0, [0, 1, 2, 6], [1]), member(1, [3, 4, 7]), member(2, [5])];
    const plan = assignSlots(ms, slots(8), cost);
    expect(Object.fromEntries(plan)).toEqual({ m0: [0, 2, 6], m1: [3, 4, 7], m2: [1, 5] });
  });

  it('it does not bounce back: the next rebalance (the reporter now the less loaded) keeps it where it went, while the report stands', () => {
    const ms = [member(0, [0, 1, 2, 6], [1]), member(1, [3, 4, 5, 7])];
    const first = assignSlots(ms, slots(8), cost);
    const again = assignSlots(next(ms, first), slots(8), cost);
    expect(again).toEqual(first);
    expect(ownerOf(again, 1)).toBe('m1');
    // m2 joins: balancing gives it cameras, but slot 1 never goes back to m0.
    const three = assignSlots([...next(ms, first), member(2, [])], slots(8), cost);
    expect(ownerOf(three, 1)).not.toBe('m0');
  });

  it('where the taker is then the more loaded, the balancing gives one of its other slots to the reporter (README: a swap)', () => {
    const ms = [member(0, [0, 1, 2], [1]), member(1, [3, 4, 5])];
    expect(Object.fromEntries(assignSlots(ms, slots(6), cost))).toEqual({ m0: [0, 2, 5], m1: [1, 3, 4] });
  });

  it('the least loaded member that has not reported it takes it, among several', () => {
    const ms = [member(0, [0, 1, 2], [0]), member(1, [3, 4]), member(2, [5], [0])];
    const plan = assignSlots(ms, slots(6), cost);
    expect(ownerOf(plan, 0)).toBe('m1'); // m2 is less loaded but reported it too
  });

  it('reported by every able member (down for all): it stays where it is, and stays at the next rebalance', () => {
    const ms = [member(0, [0, 1, 2, 6], [1]), member(1, [3, 4, 5, 7], [1])];
    const plan = assignSlots(ms, slots(8), cost);
    expect(ownerOf(plan, 1)).toBe('m0');
    expect(assignSlots(next(ms, plan), slots(8), cost)).toEqual(plan);
    // Its owner now m1 (it went there before m1 reported it): it stays on m1.
    const moved = [member(0, [0, 2, 6], [1]), member(1, [1, 3, 4, 5, 7], [1])];
    expect(ownerOf(assignSlots(moved, slots(8), cost), 1)).toBe('m1');
  });

  it('a member that may not hold the slot (placement), or a drained one, does not count as able to run it: it stays with the reporter', () => {
    const pinnedToW0 = (s: number, m: SlotMember) => s !== 1 || m.workerId === 'w0';
    const ms = [member(0, [0, 1, 2], [1]), member(1, [3, 4, 5])];
    expect(ownerOf(assignSlots(ms, slots(6), cost, pinnedToW0), 1)).toBe('m0');
    const drained = [member(0, [0, 1, 2], [1]), member(1, [3, 4, 5], [], 0)];
    expect(ownerOf(assignSlots(drained, slots(6), cost), 1)).toBe('m0');
    expect(ownerOf(assignSlots([...ms, member(2, [])], slots(6), cost, pinnedToW0), 1)).toBe('m0');
    // m2 may hold it (m1 may not) and has not reported it: it goes there.
    const anywhere = [member(0, [0, 1, 2], [1]), member(1, [3, 4, 5]), member(2, [], [], 1)];
    expect(ownerOf(assignSlots(anywhere, slots(6), cost, (s, m) => s !== 1 || m.workerId !== 'w1'), 1)).toBe('m2');
  });

  it('an unowned slot (its owner left) is given to a member that has not reported it, even if that one is the more loaded', () => {
    const ms = [member(0, [0, 1], [2]), member(1, [3, 4, 5])];
    expect(ownerOf(assignSlots(ms, slots(6), cost), 2)).toBe('m1');
  });

  it('deterministic: the members in any order give the same plan; with no report, the plan is the one without reports', () => {
    const ms = [member(0, [0, 1, 2, 6], [1, 7]), member(1, [3, 4, 5]), member(2, [], [4])];
    const plan = assignSlots(ms, slots(8), cost);
    expect(assignSlots([ms[2], ms[0], ms[1]], slots(8), cost)).toEqual(plan);
    expect(assignSlots([ms[1], ms[2], ms[0]], slots(8), cost)).toEqual(plan);
    const plain = [member(0, [0, 1, 2, 6]), member(1, [3, 4, 5]), member(2, [])];
    const without = plain.map(({ unreachable: _, ...m }) => m);
    expect(assignSlots(plain, slots(8), cost)).toEqual(assignSlots(without, slots(8), cost));
  });
});

describe('a member’s report as the leader reads it (decodeInfo)', () => {
  const metadata = (userData: unknown) => AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['argus.cameras'], userData: Buffer.from(JSON.stringify(userData)) });
  const base = { workerId: 'w1', incarnation: 'i', capacity: 1, owned: [0], labels: {} };

  it('reads its slots, bounded (whoever joins the group writes it): whole non-negative numbers, each once, MAX_UNREACHABLE_SLOTS at most', () => {
    expect(decodeInfo(metadata({ ...base, unreachable: [3, 3, -1, 1.5, 'x', 7] }))).toMatchObject({ unreachable: [3, 7] });
    const many = decodeInfo(metadata({ ...base, unreachable: Array.from({ length: 100_000 }, (_, i) => i) }));
    expect(many !== 'nudge' && many?.unreachable?.length).toBe(MAX_UNREACHABLE_SLOTS);
    // An argus from before the reports: none, and no list at all (readGroup's reportsUnaware: it may lead and ignore them).
    expect(decodeInfo(metadata(base))).not.toHaveProperty('unreachable');
    expect(decodeInfo(metadata({ ...base, unreachable: { 0: 1 } }))).toMatchObject({ unreachable: [] });
  });
});

describe('argus cluster status --json: each worker’s reports', () => {
  it('names the slots each worker reported unreachable', () => {
    const t = { brokers: [], cluster: ClusterSchema.parse({}) };
    const topic = t.cluster.camerasTopic;
    const member = (workerId: string, slots: number[], unreachable?: number[]) => ({
      memberId: `${workerId}-m`,
      memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: [topic], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i', capacity: 1, owned: slots, labels: {}, placement: true, unreachable })) }),
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { [topic]: slots }, userData: Buffer.alloc(0) }),
    });
    const st = statusOf(t, { state: 'Stable', members: [member('w1', [0], [1]), member('w2', [1])] }, [], new ClusterView({} as never, { cameras: 'c', owners: 'o' }));
    expect(st.workers.map((w) => [w.worker, w.slots, w.unreachable])).toEqual([
      ['w1', [0], [1]],
      ['w2', [1], []],
    ]);
  });
});
