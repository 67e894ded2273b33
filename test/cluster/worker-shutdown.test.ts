/**
 * A worker stopped while the broker does not answer: writing its releases (the claims it must
 * give back) waits SHUTDOWN_RELEASE_MS at most, all at once, not kafkajs's ~10 s of retries each
 * before the Kafka sink's own closeTimeoutMs (24 s in all, measured: past Docker's 10 s stop
 * timeout, then SIGKILL). Drives the worker's shutdown directly (no broker), in virtual time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
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
