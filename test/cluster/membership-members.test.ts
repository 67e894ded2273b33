/**
 * Who is in the group, as a worker reads it after each assignment (describeGroups). A new owner
 * waits for the release of a camera's former owner only while that owner's process is in the
 * group: members read wrong (none) let it start at once, beside the former owner.
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkajsMembership } from '../../src/cluster/kafkajs-membership.js';

const info = (workerId: string, slots: number[]) => ({
  memberId: `${workerId}-m`,
  memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i1', capacity: 1, owned: slots, labels: {}, placement: true })) }),
  memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { cams: slots }, userData: Buffer.alloc(0) }),
});
/** What the broker describes while the group rebalances: the members, without their metadata or assignment. */
const bare = (workerId: string) => ({ memberId: `${workerId}-m`, memberMetadata: Buffer.alloc(0), memberAssignment: Buffer.alloc(0) });

function membership(group: { state: string; members: unknown[] }) {
  const m = new KafkajsMembership({ kafka: {} as never, group: 'g', topic: 'cams', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, info: () => ({ workerId: 'w1', incarnation: 'i1', capacity: 1, owned: [], labels: {} }), slotCost: () => 1, onAssigned: () => {} });
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
