/**
 * What a worker reads of its settled group after an assignment (readGroup, KafkajsMembership):
 * the members, the slots given out, and the slots whose holder reports them unreachable (down for
 * every able member: the other workers keep their own reports of them, worker.ts darkHeld).
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { readGroup } from '../../src/cluster/kafkajs-membership.js';

const member = (workerId: string, slots: number[], unreachable: unknown) => ({
  memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i', capacity: 1, owned: slots, labels: {}, placement: true, unreachable })) }),
  memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { cams: slots }, userData: Buffer.alloc(0) }),
});

describe('readGroup', () => {
  it('dark: the slots held by a member that reports them itself; not those reported by a member that does not hold them', () => {
    const g = readGroup([member('w0', [0, 1], [1]), member('w1', [2, 3], [0, 9]), member('w2', [4], 'junk')], 'cams');
    expect([...g.ids].sort()).toEqual(['w0/i', 'w1/i', 'w2/i']);
    expect([...g.held].sort()).toEqual([0, 1, 2, 3, 4]);
    expect([...g.dark]).toEqual([1]);
  });
});
