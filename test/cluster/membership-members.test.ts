/**
 * Who is in the group, as a worker reads it after each assignment (describeGroups). A new owner
 * waits for the release of a camera's former owner only while that owner's process is in the
 * group: members read wrong (none) let it start at once, beside the former owner.
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeInfo, KafkajsMembership } from '../../src/cluster/kafkajs-membership.js';
import type { MemberInfo } from '../../src/cluster/membership.js';
import { MAX_WEIGHT } from '../../src/config/schema/cluster.js';

const info = (workerId: string, slots: number[]) => ({
  memberId: `${workerId}-m`,
  memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i1', capacity: 1, owned: slots, labels: {}, placement: true })) }),
  memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { cams: slots }, userData: Buffer.alloc(0) }),
});
/** What the broker describes while the group rebalances: the members, without their metadata or assignment. */
const bare = (workerId: string) => ({ memberId: `${workerId}-m`, memberMetadata: Buffer.alloc(0), memberAssignment: Buffer.alloc(0) });

function membership(group: { state: string; members: unknown[] }) {
  const m = new KafkajsMembership({ kafka: {} as never, group: 'g', topic: 'cams', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, info: () => ({ workerId: 'w1', incarnation: 'i1', capacity: 1, owned: [], labels: {} }), slots: () => ({ cost: () => 1, accepts: () => true }), onAssigned: () => {} });
  (m as unknown as { admin: unknown }).admin = { describeGroups: async () => ({ groups: [group] }) };
  return (m as unknown as { members: () => Promise<{ ids: Set<string>; held?: Set<number> } | undefined> }).members();
}

describe('KafkajsMembership: the members read after an assignment', () => {
  it('a settled group: every worker with its process, and the slots given out', async () => {
    const r = await membership({ state: 'Stable', members: [info('w1', [0, 2]), info('w2', [1])] });
    expect(r && [...r.ids].sort()).toEqual(['w1/i1', 'w2/i1']);
    expect(r && [...r.held!].sort()).toEqual([0, 1, 2]);
  });

  it.each(['PreparingRebalance', 'CompletingRebalance'])('a group caught rebalancing (%s: the next rebalance began, e.g. a rebalance request\'s member leaving): unknown, not "nobody" (a new owner then started a camera beside its former owner)', async (state) => {
    expect(await membership({ state, members: [bare('w1'), bare('w2')] })).toBeUndefined();
  });
});

/** A worker w1 starting (incarnation i2) with the group as `describe` says, call by call; resolves with the describes made before it joined. */
async function start(describe: (call: number) => { state: string; members: unknown[] }, sessionTimeoutMs = 6000) {
  const logs: string[] = [];
  const m = new KafkajsMembership({ kafka: {} as never, group: 'g', topic: 'cams', sessionTimeoutMs, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, info: () => ({ workerId: 'w1', incarnation: 'i2', capacity: 1, owned: [], labels: {} }), slots: () => ({ cost: () => 1, accepts: () => true }), onAssigned: () => {}, log: (msg) => void logs.push(msg) });
  let calls = 0;
  const joined = new Promise<number>((resolve) => {
    const i = m as unknown as { admin: unknown; join: () => Promise<void> };
    i.admin = { connect: async () => undefined, describeGroups: async () => ({ groups: [describe(++calls)] }) };
    i.join = async () => resolve(calls);
  });
  void m.start();
  return { describes: await joined, logs };
}
const self = (workerId: string, incarnation: string) => ({
  memberId: `${workerId}-${incarnation}`,
  memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId, incarnation, capacity: 1, owned: [0], labels: {}, placement: true })) }),
  memberAssignment: Buffer.alloc(0),
});

describe('KafkajsMembership: a worker started again before its killed process left the group', () => {
  it('joins once the group has dropped its former process (a join beside it made every live worker wait in a rebalance until that session expired, and fence all cameras)', async () => {
    // The former process (i1) for three reads, then the group rebalancing without it, then settled.
    const r = await start((n) => (n <= 3 ? { state: 'Stable', members: [self('w1', 'i1'), self('w2', 'a')] } : n === 4 ? { state: 'PreparingRebalance', members: [bare('w2')] } : { state: 'Stable', members: [self('w2', 'a')] }));
    expect(r.describes).toBe(5);
    expect(r.logs.filter((l) => l.includes('still holds a member with this worker\'s id "w1"'))).toHaveLength(1);
  });

  it('a group caught rebalancing (workers started together): waited for until it settles, without saying that a former process of its id was seen', async () => {
    const r = await start((n) => (n === 1 ? { state: 'PreparingRebalance', members: [bare('w2')] } : { state: 'Stable', members: [self('w2', 'a')] }));
    expect(r.describes).toBe(2);
    expect(r.logs.filter((l) => l.includes('still holds a member'))).toEqual([]);
  });

  it('joins at once when no other process of its id is there (an empty group, other workers only)', async () => {
    expect((await start(() => ({ state: 'Empty', members: [] }))).describes).toBe(1);
    expect((await start(() => ({ state: 'Stable', members: [self('w2', 'a'), self('w1', 'i2')] }))).describes).toBe(1);
  });

  it('waits no longer than the session and 2 s: a live process with its id (a mistake reported once joined) is joined beside', async () => {
    const t0 = performance.now();
    const r = await start(() => ({ state: 'Stable', members: [self('w1', 'i1')] }), 1000);
    expect(r.describes).toBeGreaterThan(1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(2900);
    expect(performance.now() - t0, 'a bound that only ends a hang').toBeLessThan(60_000);
  });
});

describe('decodeInfo: another worker’s capacity', () => {
  it('is held to MAX_WEIGHT, as this version’s own config is: an older worker’s 1e308 beside another summed to Infinity in the assigner during a rolling upgrade', () => {
    const meta = (capacity: number) => AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId: 'w9', incarnation: 'i', capacity, owned: [], labels: {}, placement: true })) });
    const info = (capacity: number) => decodeInfo(meta(capacity)) as MemberInfo;
    expect(info(1e308).capacity).toBe(MAX_WEIGHT);
    expect(info(1e308).capacity + info(1e308).capacity).toBe(2 * MAX_WEIGHT);
    expect(info(3).capacity).toBe(3);
    expect(info(-1).capacity).toBe(0);
  });
});
