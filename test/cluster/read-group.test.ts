/**
 * What a worker reads of its settled group after an assignment (readGroup, KafkajsMembership):
 * the members, the slots given out, and the slots whose holder reports them unreachable (down for
 * every able member: the other workers keep their own reports of them, worker.ts darkHeld).
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { decodeInfo, MAX_MEMBER_DATA_BYTES, readGroup } from '../../src/cluster/kafkajs-membership.js';

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
    expect(g.reportsUnaware).toBe(false);
  });

  it('a member of a release before unreachable reports (no `unreachable` in its data; it may lead and ignore them): no slot is dark, and the group says so', () => {
    const older = {
      memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId: 'old', incarnation: 'i', capacity: 1, owned: [5], labels: {}, placement: true })) }),
      memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { cams: [5] }, userData: Buffer.alloc(0) }),
    };
    // w0 holds slot 1 and reports it: an older leader left it there whatever the others could do,
    // so the others' own reports of slot 1 keep their own time, not the 160 min of a slot dark for all.
    const g = readGroup([member('w0', [0, 1], [1]), member('w1', [2, 3], []), older], 'cams');
    expect([...g.ids].sort()).toEqual(['old/i', 'w0/i', 'w1/i']);
    expect([...g.held].sort()).toEqual([0, 1, 2, 3, 5]);
    expect([...g.dark]).toEqual([]);
    expect(g.reportsUnaware).toBe(true);
    // Once it has left (its leave is a rebalance): as before.
    const after = readGroup([member('w0', [0, 1], [1]), member('w1', [2, 3], [])], 'cams');
    expect([...after.dark]).toEqual([1]);
    expect(after.reportsUnaware).toBe(false);
  });
});

describe('decodeInfo: member data from another release, or not argus’s, read bounded', () => {
  const metadata = (userData: unknown) => AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(typeof userData === 'string' ? userData : JSON.stringify(userData)) });
  const base = { workerId: 'w1', incarnation: 'i', capacity: 1, owned: [0], labels: {} };

  it('user data longer than MAX_MEMBER_DATA_BYTES is not parsed (the leader parsed any size at every rebalance)', () => {
    const big = decodeInfo(metadata({ ...base, extra: 'x'.repeat(MAX_MEMBER_DATA_BYTES) }));
    expect(big).toBeUndefined();
    // A newer release's extra fields within the bound: read, the extra ignored.
    expect(decodeInfo(metadata({ ...base, newField: { a: [1, 2] } }))).toMatchObject({ workerId: 'w1', owned: [0] });
  });

  it('unreachable: absent (a release before reports) is not an empty list; junk is an empty list', () => {
    expect(decodeInfo(metadata(base))).not.toHaveProperty('unreachable');
    expect(decodeInfo(metadata({ ...base, unreachable: 'junk' }))).toMatchObject({ unreachable: [] });
    expect(decodeInfo(metadata({ ...base, unreachable: [3, 3, -1] }))).toMatchObject({ unreachable: [3] });
  });

  it('owned slots: whole, not negative, each once, bounded; labels: strings, bounded; ids: bounded; junk: no member', () => {
    const info = decodeInfo(metadata({ ...base, owned: [2, 2, -1, 1.5, 'x', 3], labels: { site: 'dock', n: 5, long: 'v'.repeat(1000) } }));
    expect(info).toMatchObject({ owned: [2, 3], labels: { site: 'dock' } });
    const many = decodeInfo(metadata({ ...base, owned: Array.from({ length: 20_000 }, (_, i) => i), labels: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, 'v'])) }));
    expect(many !== 'nudge' && many?.owned.length).toBe(10_000);
    expect(many !== 'nudge' && Object.keys(many?.labels ?? {}).length).toBe(256);
    expect(decodeInfo(metadata({ ...base, workerId: 'w'.repeat(1000) }))).toBeUndefined();
    expect(decodeInfo(metadata({ ...base, incarnation: 'i'.repeat(1000) }))).toMatchObject({ incarnation: '' });
    for (const junk of ['null', '[]', '7', '"w1"', '{"workerId":"w1"}', 'not json']) expect(decodeInfo(metadata(junk))).toBeUndefined();
  });
});
