/**
 * Two processes with one worker id (a copied config) share one reports file
 * (cluster-unreachable.<workerId>.json): the one that sees the other runs nothing, so its own
 * reports say nothing of the cameras, yet it wrote them over the file: its stop (or its reports
 * expiring) left the file empty, and the other process's reports were gone at that one's next
 * restart. A worker that knows another live process has its id leaves the file alone.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportsFile, writeReports } from '../../src/cluster/reports.js';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';

interface Internals {
  membership: { requestRebalance: () => Promise<void> };
  reconcile: () => void;
  onMembers: (members: Set<string> | undefined) => void;
  saveReports: (force?: boolean) => Promise<void>;
}

describe('the reports file of a worker id that two processes have', () => {
  it('is not written by the process that sees its twin, not even at its stop', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
    const kept = [{ camera: 'cam0', slot: 0, offset: '4', reportedAt: Date.now(), confirmedAt: Date.now(), forgetMs: 600_000, n: 1 }];
    await writeReports(file, kept); // the other process's
    const before = readFileSync(file, 'utf8');
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } }), () => {});
    const i = w as unknown as Internals;
    i.membership = { requestRebalance: async () => {} };
    i.reconcile = () => {};
    await w.restoreReports(file);
    w.memberInfo(); // its first join: cam0 is not in its view, nothing taken back
    i.onMembers(new Set([`w1/${w.incarnation}`, 'w1/other']));
    await i.saveReports(true); // what its stop does
    expect(existsSync(file)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });
});
