/**
 * A worker's stop writes its unreachable reports (reports.ts) once more, bounded: a folder on a
 * disk that does not answer (a network share) does not hold the stop past 1 s.
 */
import { describe, expect, it, vi } from 'vitest';
import { drivenWorker } from '../helpers/worker.js';

vi.mock('../../src/cluster/reports.js', async (orig) => ({
  ...(await orig<typeof import('../../src/cluster/reports.js')>()),
  writeReports: () => new Promise<void>(() => {}), // a write that never ends
}));

describe('Worker.close with a reports folder that hangs', () => {
  it('ends within about 1 s', async () => {
    const { w, i } = await drivenWorker();
    await w.restoreReports('/nonexistent-argus/cluster-unreachable.w1.json');
    (i as unknown as { membership: { stop: () => Promise<void> } }).membership.stop = async () => {};
    (i as unknown as { view: { stop: () => Promise<void> } }).view.stop = async () => {};
    const t0 = Date.now();
    await w.close();
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
  });
});
