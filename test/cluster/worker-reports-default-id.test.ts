/**
 * A worker without cluster.workerId is named `<host>-<pid>` (defaultWorkerId): no later process
 * has its id, so none would ever read its unreachable reports back. Before, it still wrote
 * `cluster-unreachable.<host>-<pid>.json` into its outbox folder at every stop (an empty list
 * included): one more file per restart, never read and never removed (a worker under a supervisor
 * that restarts it, a crash loop: thousands). It now keeps none; and a worker with an id whose
 * reports have all ended removes its file rather than leaving an empty one.
 */
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportsFile, writeReports } from '../../src/cluster/reports.js';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';

type Saving = { saveReports: (force?: boolean) => Promise<void>; unreachable: Map<string, unknown> };

describe('unreachable reports on disk and the worker id', () => {
  it('a worker with the default id (host and pid) writes no reports file, not even at its stop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-reports-'));
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'] } }), () => {});
    expect(w.id).toMatch(new RegExp(`-${process.pid}$`));
    await w.restoreReports(reportsFile(dir, w.id));
    const i = w as unknown as Saving;
    i.unreachable.set('cam0', { slot: 0, text: '{}', reportedAt: 0, confirmedAt: 0, forgetMs: 600_000 });
    await i.saveReports(true); // what its stop does
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a worker with an id removes its file once it has no report left (no empty file kept)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-reports-'));
    const file = reportsFile(dir, 'w1');
    await writeReports(file, [{ camera: 'cam0', slot: 0, offset: '3', reportedAt: 0, confirmedAt: Date.now(), forgetMs: 600_000, n: 1 }]);
    expect(existsSync(file)).toBe(true);
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } }), () => {});
    await w.restoreReports(file);
    await (w as unknown as Saving).saveReports(true); // cam0 is not in its view: no report taken back
    expect(readdirSync(dir)).toEqual([]);
  });
});
