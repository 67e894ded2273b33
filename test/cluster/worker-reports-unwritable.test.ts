/**
 * A worker whose outbox folder cannot be written (a read-only volume: the outbox itself then runs
 * unprotected) warns once that its unreachable reports last only as long as the process, and tries
 * again at most once a minute. Before, a failed write marked the reports unsaved, so every
 * reconcile (each second, each 100 ms tick while a camera moves) tried again: mkdir, open and a
 * failure on that volume, for as long as a report stood, and once more for the empty list after.
 */
import type { Observable } from 'rxjs';
import { filter } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

const writes: number[] = [];
let failing = true;
vi.mock('../../src/cluster/reports.js', async (orig) => ({
  ...(await orig<typeof import('../../src/cluster/reports.js')>()),
  writeReports: async () => {
    writes.push(performance.now());
    if (failing) throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
  },
}));

interface Internals extends DrivenInternals {
  assigned: Set<number>;
  saving: Promise<void> | undefined;
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  writes.length = 0;
  failing = true;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
});
afterEach(() => vi.restoreAllMocks());

describe('unreachable reports and an outbox folder that cannot be written', () => {
  it('warns once and tries at most once a minute, and writes once the folder takes it', async () => {
    const lines: string[] = [];
    const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg) => lines.push(msg) });
    (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
    i.pipeline = { stats: [], attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
    await w.restoreReports('/read-only/cluster-unreachable.w1.json');
    const at = async (ms: number) => {
      now = 1_000_000 + ms;
      await settle();
      while (i.saving) await i.saving;
    };
    write('cam0', { uri: 'rtsp://10.9.9.9/x' });
    await at(0);
    const refused = () => w.publishesStatus({ source: 'cam0', state: 'reconnecting', previous: 'starting', reason: 'refused', at: Date.now(), attempt: 1 });
    refused();
    await at(31_000);
    refused();
    await at(31_500);
    expect(w.memberInfo().unreachable).toEqual([0]);
    expect(writes.length).toBe(1);
    for (let t = 32_000; t < 91_000; t += 1000) await at(t);
    expect(writes.length).toBe(1); // not once a second
    await at(91_500);
    expect(writes.length).toBe(2); // a minute on
    expect(lines.filter((l) => /could not keep its unreachable reports/.test(l)).length).toBe(1);
    failing = false; // the folder writable again: written at the next minute's try
    for (let t = 92_000; t < 151_000; t += 1000) await at(t);
    expect(writes.length).toBe(2);
    for (let t = 151_000; t < 200_000; t += 1000) await at(t);
    expect(writes.length).toBe(3); // then only its times change: once a minute, as before
  });
});
