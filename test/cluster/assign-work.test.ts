/**
 * The group leader's assignment reads the cameras once, not once per slot and question: with
 * 1 000 slots and 10 000 cameras each slot's cost and each member's acceptance scanned every
 * camera, again and again while balancing (8 s on the leader's event loop at every rebalance,
 * while every worker waited for the assignment without a heartbeat, past its lease).
 */
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { assignSlots } from '../../src/cluster/assign.js';
import { slotAssigner } from '../../src/cluster/kafkajs-membership.js';
import { Worker } from '../../src/cluster/worker.js';
import type { CameraEntry } from '../../src/cluster/view.js';
import { PipelineSchema } from '../../src/config/schema.js';

const SLOTS = 1000;
const CAMERAS = 10_000;

const member = (workerId: string, owned: number[]) => ({
  memberId: `${workerId}-m`,
  memberMetadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['cams'], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i1', capacity: 1, owned, labels: {}, placement: true })) }),
});

describe('the leader’s assignment: work in the number of cameras, not cameras × slots', () => {
  it('assignSlots asks each slot’s cost once, and whether a member accepts a slot once per member', () => {
    const costAsked = new Map<number, number>();
    const acceptAsked = new Map<string, number>();
    const members = [0, 1, 2, 3].map((i) => ({ memberId: `m${i}`, workerId: `w${i}`, capacity: 1, owned: i < 3 ? Array.from({ length: SLOTS }, (_, s) => s).filter((s) => s % 3 === i) : [] }));
    const plan = assignSlots(
      members,
      Array.from({ length: SLOTS }, (_, s) => s),
      (s) => (costAsked.set(s, (costAsked.get(s) ?? 0) + 1), 1 + (s % 7)),
      (s, m) => (acceptAsked.set(`${s}/${m.memberId}`, (acceptAsked.get(`${s}/${m.memberId}`) ?? 0) + 1), true),
    );
    expect([...plan.values()].flat()).toHaveLength(SLOTS);
    expect(plan.get('m3')!.length).toBeGreaterThan(100); // the newcomer took its share
    expect(Math.max(...costAsked.values())).toBe(1);
    expect(Math.max(...acceptAsked.values())).toBe(1);
  });

  it('a worker leading the group reads its view of the cameras once per assignment', async () => {
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w0', slots: SLOTS } }));
    const cameras = w.view.cameras;
    for (let i = 0; i < CAMERAS; i++) cameras.set(`c${i}`, { id: `c${i}`, slot: i % SLOTS, text: '{}', offset: '0', active: true, definition: { cost: 1, source: { enabled: true } } } as unknown as CameraEntry);
    let reads = 0;
    const values = cameras.values.bind(cameras);
    cameras.values = () => (reads++, values());
    const o = { slots: () => (w as unknown as { slotTable: () => never }).slotTable(), info: () => ({ workerId: 'w0', incarnation: 'i1', capacity: 1, owned: [], labels: {} }) };
    const assigner = slotAssigner(o)({ cluster: { findTopicPartitionMetadata: () => Array.from({ length: SLOTS }, (_, partitionId) => ({ partitionId })) } } as never);
    const owned = (i: number) => Array.from({ length: SLOTS }, (_, s) => s).filter((s) => s % 3 === i);
    const out = await assigner.assign({ members: [member('w0', owned(0)), member('w1', owned(1)), member('w2', owned(2)), member('w3', [])], topics: ['cams'] } as never);
    const given = out.map((a) => AssignerProtocol.MemberAssignment.decode(a.memberAssignment)!.assignment.cams ?? []);
    expect(given.flat()).toHaveLength(SLOTS);
    expect(given[3].length).toBeGreaterThan(100);
    expect(reads).toBe(1);
  });
});
