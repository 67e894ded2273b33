/**
 * A worker stopped while the broker does not answer: writing its releases (the claims it must
 * give back) waits SHUTDOWN_RELEASE_MS at most, all at once, not kafkajs's ~10 s of retries each
 * before the Kafka sink's own closeTimeoutMs (24 s in all, measured: past Docker's 10 s stop
 * timeout, then SIGKILL). Drives the worker's shutdown directly (no broker), in virtual time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { joinedWithCam0 } from '../helpers/worker.js';
import { SHUTDOWN_RELEASE_MS, Worker } from '../../src/cluster/worker.js';

interface Internals {
  owners: { release: (camera: string, epoch: number) => Promise<void> };
  membership: { stop: () => Promise<void> };
  pending: Map<string, number>;
  shutdown: () => Promise<void>;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Worker shutdown with the broker not answering', () => {
  it('gives up on the releases after SHUTDOWN_RELEASE_MS, all of them together, and says which were not written', async () => {
    vi.useFakeTimers();
    const log = vi.fn();
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
    const w = new Worker(config, log);
    const i = w as unknown as Internals;
    const asked: string[] = [];
    i.owners = {
      release: (camera) => {
        asked.push(camera);
        return new Promise(() => {}); // a broker that never answers
      },
    };
    i.membership = { stop: async () => {} };
    i.pending.set('cam0', 7);
    i.pending.set('cam1', 8);
    i.pending.set('cam2', 9);
    let done = false;
    void i.shutdown().then(() => (done = true));
    await vi.advanceTimersByTimeAsync(SHUTDOWN_RELEASE_MS - 1);
    expect(done).toBe(false);
    expect(asked).toEqual(['cam0', 'cam1', 'cam2']); // all asked at once
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
    const warned = log.mock.calls.filter(([m]) => /could not write the release/.test(m)).map(([m]) => m);
    expect(warned).toHaveLength(3);
    expect(warned[0]).toMatch(/cam0: no answer within 2000 ms, shutting down/);
  });

  it('outside a shutdown a release waits for the broker as long as kafkajs retries', async () => {
    vi.useFakeTimers();
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
    const w = new Worker(config, () => {});
    const i = w as unknown as Internals & { release: (camera: string, epoch: number) => Promise<void> };
    let answer: () => void = () => {};
    i.owners = { release: () => new Promise<void>((r) => (answer = r)) };
    let done = false;
    void i.release('cam0', 7).then(() => (done = true));
    await vi.advanceTimersByTimeAsync(10 * SHUTDOWN_RELEASE_MS);
    expect(done).toBe(false);
    answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
  });
});

describe('Worker shutdown while a reconciliation waits on the broker', () => {
  it('a claim being written when the stop comes (the owners topic\'s leader not answering) holds the stop SHUTDOWN_RELEASE_MS at most, and once answered is released, its camera not started', async () => {
    vi.useFakeTimers();
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
    const w = new Worker(config, () => {});
    const i = w as unknown as Omit<Internals, 'owners' | 'membership'> & {
      owners: unknown;
      joined: boolean;
      assigned: Set<number>;
      pipeline: unknown;
      membership: unknown;
      running: Map<string, unknown>;
      reconcile: () => void;
      view: { cameras: Map<string, unknown> };
    };
    let answer: (epochs: number[]) => void = () => {};
    const released: [string, number][] = [];
    i.owners = {
      claim: () => new Promise<number[]>((r) => (answer = r)),
      release: async (camera: string, epoch: number) => void released.push([camera, epoch]),
    };
    joinedWithCam0(i);
    i.reconcile();
    await vi.advanceTimersByTimeAsync(0);
    let done = false;
    void i.shutdown().then(() => (done = true));
    await vi.advanceTimersByTimeAsync(SHUTDOWN_RELEASE_MS);
    expect(done).toBe(true);
    // The broker answers later: the claim is given back, and nothing starts on a stopped worker.
    answer([5]);
    await vi.advanceTimersByTimeAsync(0);
    expect(released).toEqual([['cam0', 5]]);
    expect(i.running.size).toBe(0);
  });
});

describe('Worker shutdown: a reconciliation that outlives the wait for it', () => {
  it('starts no camera once the stop has begun (one attached then held the stop’s drain)', () => {
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
    const w = new Worker(config, () => {});
    const i = w as unknown as { closing: boolean; running: Map<string, unknown>; startCamera: (pipeline: unknown, cam: unknown, claim: unknown) => void };
    i.closing = true;
    const attach = vi.fn();
    i.startCamera({ attach }, { id: 'cam0', slot: 0, text: '{}' }, { owner: 'w1', epoch: 3 });
    expect(i.running.size).toBe(0);
    expect(attach).not.toHaveBeenCalled();
  });
});
