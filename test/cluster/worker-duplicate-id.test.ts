/**
 * Two processes with one worker id (a copied config, ARGUS_WORKER_ID forgotten on two machines):
 * both run nothing, as before, and now also take no slot, so the cameras of the slots the group
 * gave them run on the other workers (they ran nowhere for as long as the ids were alike).
 * Drives the worker's members handler directly (no broker), as its membership calls it.
 */
import { describe, expect, it, vi } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { joinedWithCam0 } from '../helpers/worker.js';
import { Worker } from '../../src/cluster/worker.js';

interface Internals {
  membership: { requestRebalance: () => Promise<void> };
  pending: Map<string, number>;
  fencedClaims: Map<number, string>;
  reconcile: () => void;
  onMembers: (members: Set<string> | undefined) => void;
}

function worker() {
  const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w2', capacity: 3 } });
  const w = new Worker(config);
  const i = w as unknown as Internals;
  let asked = 0;
  i.membership = {
    requestRebalance: async () => {
      asked++;
    },
  };
  i.reconcile = () => {}; // no broker here
  const capacity = () => (w.health().cluster as { capacity: number }).capacity;
  return { w, i, capacity, asked: () => asked };
}

describe('Worker: another live process with its id', () => {
  it('takes no slot while the id is shared (capacity 0, a rebalance asked for), and its capacity back once the other has left', () => {
    const { w, i, capacity, asked } = worker();
    const self = `w2/${w.incarnation}`;
    i.onMembers(new Set([self, 'w1/a']));
    expect([capacity(), asked()]).toEqual([3, 0]);
    // A twin joins: the group must give its slots to others, since neither twin runs a camera.
    i.onMembers(new Set([self, 'w1/a', 'w2/other']));
    expect([capacity(), asked()]).toEqual([0, 1]);
    // Still shared at the next generation (the rebalance asked for): nothing more is asked.
    i.onMembers(new Set([self, 'w1/a', 'w2/other']));
    expect([capacity(), asked()]).toEqual([0, 1]);
    // Members that could not be read change nothing.
    i.onMembers(undefined);
    expect([capacity(), asked()]).toEqual([0, 1]);
    // The twin has left: capacity back, told the group by another rebalance.
    i.onMembers(new Set([self, 'w1/a']));
    expect([capacity(), asked()]).toEqual([3, 2]);
  });

  it('a claim written and not started yet when the twin is seen is released (with the fenced ones), not left open: the worker given the slot waited 6 s for it', () => {
    const { w, i } = worker();
    i.pending.set('cam0', 148);
    i.onMembers(new Set([`w2/${w.incarnation}`, 'w2/other']));
    expect(i.pending.size).toBe(0);
    expect([...i.fencedClaims]).toEqual([[148, 'cam0']]);
  });
});

describe('Worker: a twin seen while a claim is being written', () => {
  it('the claim the broker answers after the twin was seen is released with the fenced ones, not left pending: no reconciliation runs while the id is shared, and the worker given the slot waited releaseWaitMs for it', async () => {
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w2' } });
    const w = new Worker(config);
    const i = w as unknown as Omit<Internals, 'membership'> & {
      joined: boolean;
      assigned: Set<number>;
      pipeline: unknown;
      owners: unknown;
      membership: unknown;
      step: Promise<void>;
      view: { cameras: Map<string, unknown> };
    };
    let answer: (epochs: number[]) => void = () => {};
    const claimed: string[][] = [];
    i.owners = {
      claim: (ids: string[]) => {
        claimed.push(ids);
        return new Promise<number[]>((r) => (answer = r));
      },
      release: async () => {},
    };
    joinedWithCam0(i);
    i.reconcile();
    await vi.waitFor(() => expect(claimed).toEqual([['cam0']]));
    // The twin is seen while the broker has not answered yet.
    i.onMembers(new Set([`w2/${w.incarnation}`, 'w2/other']));
    answer([148]);
    await i.step;
    expect(i.pending.size).toBe(0);
    expect([...i.fencedClaims]).toEqual([[148, 'cam0']]);
  });
});
