/**
 * A worker's start reads back its unreachable reports (reports.ts) from its outbox folder, bounded:
 * a folder on a disk that does not answer (a network share that hangs) held the start for ever
 * (the read came before the worker joined its group: no camera ran), where the stop's write was
 * already bounded to 1 s. It now starts without them after 1 s, with a warning.
 */
import { describe, expect, it, vi } from 'vitest';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';

vi.mock('../../src/cluster/reports.js', async (orig) => ({
  ...(await orig<typeof import('../../src/cluster/reports.js')>()),
  readStored: () => new Promise<never>(() => {}), // a read that never ends (its reports and refusals)
}));

describe('Worker.restoreReports with a reports folder that hangs', () => {
  it('ends within about 1 s, with a warning, and the worker keeps no report of it', async () => {
    const lines: string[] = [];
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } }), (msg) => lines.push(msg));
    const t0 = Date.now();
    const done = await Promise.race([w.restoreReports('/hung-share/cluster-unreachable.w1.json').then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 5000))]);
    expect(done).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(lines.some((l) => /could not read its unreachable reports and refusals from \/hung-share\/cluster-unreachable\.w1\.json within 1 s/.test(l))).toBe(true);
    expect(w.memberInfo().unreachable).toEqual([]);
  });
});
