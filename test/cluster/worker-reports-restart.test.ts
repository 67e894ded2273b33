/**
 * A worker restarted under the same id (a rolling restart, a crash) takes back the unreachable
 * reports its earlier process kept in its outbox folder (src/cluster/reports.ts), so that its first
 * join tells the group the slots it cannot run. Before, it forgot them: the leader could hand it
 * back such a slot, dark there for unreachableAfterMs again. Driven without a broker, on a virtual
 * monotonic clock; the reports' times on disk are by the wall clock.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Observable } from 'rxjs';
import { filter } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clusterTag, MAX_STORED_BYTES, readReports, reportsFile, writeReports } from '../../src/cluster/reports.js';
import { UNREACHABLE_FORGET_MAX_MS } from '../../src/cluster/worker.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  assigned: Set<number>;
  saving: Promise<void> | undefined;
  close: () => Promise<void>;
}

/** drivenWorker's cluster (its brokers, group and cameras topic), as its reports file names it. */
const ITS_CLUSTER = clusterTag(['127.0.0.1:1'], 'argus-workers', 'argus.cameras');

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
});
afterEach(() => vi.restoreAllMocks());

async function worker(file: string) {
  const lines: string[] = [];
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg) => lines.push(msg) });
  (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
  i.pipeline = { stats: [], attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
  await w.restoreReports(file);
  const state = (source: string) => w.publishesStatus({ source, state: 'reconnecting', previous: 'starting', reason: 'refused', at: Date.now(), attempt: 1 });
  const at = async (ms: number) => {
    now = 1_000_000 + ms;
    await settle();
  };
  const flushed = async () => {
    await settle();
    while (i.saving) await i.saving;
  };
  const abs = async (t: number) => {
    now = t;
    await settle();
  };
  return { w, i, write, state, at, abs, flushed, lines };
}

describe('a restarted worker and its unreachable reports', () => {
  it('takes them back at its first join (its member data names the slot), and keeps them as long as they had left', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
    const a = await worker(file);
    a.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await a.at(0);
    a.state('cam0');
    await a.at(31_000);
    a.state('cam0');
    await a.at(31_500);
    expect(a.w.memberInfo().unreachable).toEqual([0]);
    a.i.assigned = new Set([1]); // its slot went to another worker
    await a.at(32_000);
    await a.flushed();
    expect(JSON.parse(readFileSync(file, 'utf8')).reports).toMatchObject([{ camera: 'cam0', slot: 0, n: 1, forgetMs: 600_000 }]);
    // No credentials on disk: the record by its hash.
    expect(readFileSync(file, 'utf8')).not.toContain('10.9.9.9');

    // Restarted (a new process, its clock anew): the group is told at its first join.
    now = 5_000;
    const b = await worker(file);
    b.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    expect(b.lines.some((l) => /w1 reports slot\(s\) 0 unreachable again, as before its restart/.test(l))).toBe(true);
    // It expires when it would have: 10 min after it was last confirmed, not 10 min after the restart.
    await b.abs(5_000 + 599_000);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    await b.abs(5_000 + 600_000);
    expect(b.w.memberInfo().unreachable).toEqual([]);
  });

  it('a report of a record edited since, or of a camera now in another slot, is not taken back', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
    const t = Date.now();
    const b0 = await worker(file);
    b0.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    const offset = (b0.i.view.cameras.get('cam0') as { offset: string }).offset;
    expect(offset).toBe('0');
    await writeReports(file, [
      { camera: 'cam0', slot: 0, offset, reportedAt: t - 1000, confirmedAt: t - 1000, forgetMs: 600_000, n: 1 },
      { camera: 'cam1', slot: 0, offset: '7', reportedAt: t - 1000, confirmedAt: t - 1000, forgetMs: 600_000, n: 1 },
    ], ITS_CLUSTER);
    const b = await worker(file);
    b.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    b.write('cam1', { uri: 'rtsp://10.9.9.10/x' }); // edited since
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    expect(b.w.unreachableNow().map((u) => u.id)).toEqual(['cam0']);
  });
});

describe('readReports: bounded and expiring', () => {
  it('drops expired reports, reads none from a file too long or not its own, and at most MAX_STORED_REPORTS', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-reports-'));
    const file = join(dir, 'r.json');
    const t = 10_000_000;
    const r = (camera: string, confirmedAt: number, forgetMs = 600_000) => ({ camera, slot: 1, offset: '12', reportedAt: confirmedAt, confirmedAt, forgetMs, n: 2 });
    await writeReports(file, [r('a', t - 1000), r('b', t - 700_000), r('c', t - 700_000, 1_200_000), r('d', t + 3_600_000)]);
    expect((await readReports(file, t)).map((x) => x.camera)).toEqual(['a', 'c', 'd']);
    // A time ahead of the clock (the clock set back) is read as now.
    expect((await readReports(file, t)).find((x) => x.camera === 'd')!.confirmedAt).toBe(t);
    const bad: string[] = [];
    for (const junk of ['not json', '[]', '{"version":1,"reports":[]}', '{"version":2,"reports":{}}']) {
      writeFileSync(file, junk);
      expect(await readReports(file, t, (why) => bad.push(why))).toEqual([]);
    }
    expect(bad.length).toBe(4);
    writeFileSync(file, JSON.stringify({ version: 2, reports: [r('a', t)], pad: 'x'.repeat(MAX_STORED_BYTES) }));
    expect(await readReports(file, t)).toEqual([]);
    await writeReports(file, Array.from({ length: 5000 }, (_, k) => r(`c${k}`, t)));
    expect((await readReports(file, t)).length).toBe(4096);
    writeFileSync(file, JSON.stringify({ version: 2, reports: [{ ...r('a', t), slot: -1 }, { ...r('b', t), n: 0 }, { ...r('e', t), offset: 'x' }, r('c', t), r('c', t)] }));
    expect((await readReports(file, t)).map((x) => x.camera)).toEqual(['c']);
    expect(await readReports(join(dir, 'missing.json'), t, (why) => bad.push(why))).toEqual([]);
    expect(bad.length).toBe(4);
  });
});

describe('a kept report read back with a longer life than any report has', () => {
  it('is kept at most UNREACHABLE_FORGET_MAX_MS after its last confirmation, not for ever', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
    const b0 = await worker(file);
    b0.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    const t = Date.now();
    // Another release's, or a file edited by hand: 30 years.
    await writeReports(file, [{ camera: 'cam0', slot: 0, offset: '0', reportedAt: t, confirmedAt: t, forgetMs: 1e12, n: 1 }], ITS_CLUSTER);
    now = 5_000;
    const b = await worker(file);
    b.write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    await b.abs(5_000 + UNREACHABLE_FORGET_MAX_MS - 1000);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    await b.abs(5_000 + UNREACHABLE_FORGET_MAX_MS + 1000);
    expect(b.w.memberInfo().unreachable).toEqual([]);
  });
});
