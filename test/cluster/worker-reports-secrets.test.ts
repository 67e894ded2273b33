/**
 * What a worker keeps of its unreachable reports on disk (reports.ts) holds nothing derived from a
 * camera's credentials. Before, each report named its camera's record by an unsalted SHA-256 of
 * the record's text, password included: with the rest of the record known (its redacted form is
 * in the logs, `argus cameras ls`), the file was an offline brute-force target for a camera
 * password (billions of guesses a second). The record is now named by its offset in the cameras
 * topic: any write of the record since (a password edit included) is a new offset.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
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
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
  vi.spyOn(Date, 'now').mockImplementation(() => 1_700_000_000_000 + now);
});
afterEach(() => vi.restoreAllMocks());

async function worker(file: string) {
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: () => {} });
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
  return { w, i, write, state, at, flushed };
}

/** The file a worker leaves after reporting cam0, whose record holds `password`. */
async function reportedWith(password: string): Promise<{ text: string; file: string }> {
  const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-reports-')), 'w1');
  const a = await worker(file);
  a.write('cam0', { uri: `rtsp://admin:${password}@10.9.9.9/x` });
  await a.at(0);
  a.state('cam0');
  await a.at(31_000);
  a.state('cam0');
  await a.at(31_500);
  expect(a.w.memberInfo().unreachable).toEqual([0]);
  a.i.assigned = new Set([1]);
  await a.at(32_000);
  await a.flushed();
  return { text: readFileSync(file, 'utf8'), file };
}

describe('the unreachable reports on disk and a camera password', () => {
  it('hold nothing that depends on the password (no hash of the record text), and are still taken back', async () => {
    const one = await reportedWith('S3cret-1');
    const two = await reportedWith('hunter22');
    expect(one.text).not.toContain('S3cret-1');
    // Byte for byte the same file whatever the password: nothing to test guesses against.
    expect(one.text).toBe(two.text);

    // Restarted with the record unchanged: taken back.
    now = 5_000;
    const b = await worker(one.file);
    b.write('cam0', { uri: 'rtsp://admin:S3cret-1@10.9.9.9/x' });
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
  });

  it('a record written again while the worker was down (a new password) is not taken back', async () => {
    const { file } = await reportedWith('old-pass');
    now = 5_000;
    const b = await worker(file);
    b.write('cam0', { uri: 'rtsp://admin:old-pass@10.9.9.9/x' });
    b.write('cam0', { uri: 'rtsp://admin:new-pass@10.9.9.9/x' }); // its edit, a later offset
    b.i.assigned = new Set([1]);
    expect(b.w.memberInfo().unreachable).toEqual([]);
  });
});
