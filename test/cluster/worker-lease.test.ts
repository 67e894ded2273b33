/**
 * The worker's fence against a lapse it did not see: a process frozen longer than its session
 * (SIGSTOP, a long pause) may, on waking, complete its rejoin before the 100 ms fence check
 * runs. The join alone must not let its old claims publish: another worker may hold the cameras.
 * Drives the worker's assignment handler directly (no broker), as its membership calls it.
 */
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { Worker } from '../../src/cluster/worker.js';

interface Internals {
  joined: boolean;
  running: Map<string, { id: string; slot: number; claim: { epoch: number } | undefined; fenced: boolean; stopping: boolean; stop$: Subject<void>; done: Promise<void> }>;
  counters: { fencings: number };
  reconcile: () => void;
  onAssigned: (a: { slots: number[]; aliveBefore: number }) => void;
}

function joinedWorker() {
  const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w2', sessionTimeoutMs: 6000, fenceMarginMs: 1500 } });
  const w = new Worker(config) as unknown as Internals;
  w.joined = true;
  w.reconcile = () => {}; // no broker here: what the join would start is not under test
  const run = { id: 'cam5', slot: 3, claim: { epoch: 3 }, fenced: false, stopping: false, stop$: new Subject<void>(), done: new Promise<void>(() => {}) };
  w.running.set('cam5', run);
  return { w, run };
}

describe('Worker: a join after an unseen lease lapse', () => {
  it.each([
    // The last proof of membership 10 s before this join: longer than the 4.5 s lease. The old
    // claims may be another worker's now: fenced before the new slots are taken.
    ['after the lease lapsed: fences the cameras it ran', 10_000, true],
    // 1 s: a rebalance among live workers; the cameras run on.
    ['within the lease: keeps the cameras running', 1000, false],
  ])('%s', (_name, sinceAlive, fenced) => {
    const { w, run } = joinedWorker();
    w.onAssigned({ slots: [3], aliveBefore: performance.now() - sinceAlive });
    expect(run.fenced).toBe(fenced);
    expect(run.stopping).toBe(fenced);
    expect(w.counters.fencings).toBe(fenced ? 1 : 0);
  });
});
