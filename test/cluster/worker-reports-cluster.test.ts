/**
 * A reports file names cameras by id, slot and record offset: two workers of one id in two
 * clusters (two sites' groups run from one machine, one outbox folder) have cameras alike in all
 * three (each site's first record of `cam0` in slot 0 at offset 0). The file now says whose
 * cluster it is (its group, cameras topic and brokers, by a hash), and a worker of another
 * cluster takes nothing from it: before, it took the other site's report as its own and kept
 * its healthy cam0's slot off itself for up to 160 minutes.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Observable } from 'rxjs';
import { filter } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { reportsFile } from '../../src/cluster/reports.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  assigned: Set<number>;
  saving: Promise<void> | undefined;
  c: { group: string };
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
});
afterEach(() => vi.restoreAllMocks());

async function worker(file: string, group: string) {
  const lines: string[] = [];
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg) => lines.push(msg) });
  i.c.group = group; // (drivenWorker's config: group argus-workers)
  (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
  i.pipeline = { stats: [], attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
  await w.restoreReports(file);
  const at = async (ms: number) => {
    now = 1_000_000 + ms;
    await settle();
    while (i.saving) await i.saving;
  };
  return { w, i, write, at, lines };
}

describe('a reports file of another cluster', () => {
  it('gives a worker of this one nothing (same camera id, slot and offset), and says why', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
    const a = await worker(file, 'site-a');
    a.write('cam0', { uri: 'rtsp://10.1.0.9/x' });
    await a.at(0);
    const refused = () => a.w.publishesStatus({ source: 'cam0', state: 'reconnecting', previous: 'starting', reason: 'refused', at: Date.now(), attempt: 1 });
    refused();
    await a.at(31_000);
    refused();
    await a.at(31_500);
    a.i.assigned = new Set([1]);
    await a.at(32_000);
    now = 5_000;
    const b = await worker(file, 'site-b');
    b.write('cam0', { uri: 'rtsp://10.2.0.9/x' }); // site b's own cam0: slot 0, offset 0
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([]);
    expect(b.lines.some((l) => /ignores .*: of another cluster/.test(l))).toBe(true);
    // Its own cluster's worker still takes it back.
    const a2 = await worker(file, 'site-a');
    a2.write('cam0', { uri: 'rtsp://10.1.0.9/x' });
    a2.i.assigned = new Set([1]);
    expect(a2.w.memberInfo().unreachable).toEqual([0]);
  });
});
