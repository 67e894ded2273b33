/**
 * A worker restarted under the same id keeps the refusals of its earlier process (records its
 * chain refused: a class its model lacks, here; zones outside the picture, the record's own), in
 * the file it keeps its unreachable reports in (src/cluster/reports.ts). Before, a restart forgot
 * them: each such camera was started once more after every restart (a claim, a release, an error;
 * for one refused here, its slot reported again). A record changed since, or (refused here) a
 * worker restarted with another model or tracking, tries the camera again. Driven without a broker.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { filter, Observable, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { reportsFile } from '../../src/cluster/reports.js';
import { ArgusError, ErrorCodes } from '../../src/core/errors.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  counters: { claims: number };
  saving: Promise<void> | undefined;
}

const forklift = { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] };
const outside = { uri: 'rtsp://192.0.2.12/s', zones: [{ id: 'lane', units: 'pixel', polygon: [[0, 0], [1920, 0], [1920, 1080]] }] };

/** A worker (id w1) whose model has `labels`: it refuses forklift zones where it lacks the class, and pixel zones at their first frame. */
async function worker(file: string, labels: string[]) {
  const lines: { msg: string; level?: string }[] = [];
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg, _f, level) => lines.push({ msg, level }) });
  (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
  const stats: { id: string; error?: Error }[] = [];
  i.pipeline = {
    stats,
    detector: { labels },
    attach: (src: { id: string }, stop$: Observable<void>, admit: () => boolean) => {
      if (JSON.stringify(src).includes('"units":"pixel"'))
        return new Observable<never>((o) => {
          const st: { id: string; error?: Error } = { id: src.id };
          stats.push(st);
          w.publishesStatus({ source: src.id, state: 'streaming', previous: 'starting', reason: 'first frame', at: Date.now(), attempt: 1 } as never);
          admit();
          st.error = new ArgusError(ErrorCodes.CONFIG, `camera ${src.id}.zones[0].polygon[1]: point [1920, 0] is outside the 640x480 frame`);
          o.complete();
          return () => void stats.splice(stats.indexOf(st), 1);
        });
      if (JSON.stringify(src).includes('forklift') && !labels.includes('forklift')) return throwError(() => new ArgusError(ErrorCodes.CONFIG, `camera ${src.id}: zones[0].classes[0]: unknown class "forklift"`));
      return stop$.pipe(filter(() => false));
    },
  };
  await w.restoreReports(file);
  const flushed = async () => {
    for (let k = 0; k < 3; k++) await settle();
    while (i.saving) await i.saving;
  };
  return { w, i, settle, write, lines, flushed };
}

const errors = (lines: { msg: string; level?: string }[]) => lines.filter((l) => l.level === 'error').map((l) => l.msg);

describe('a restarted worker and the records it refused', () => {
  it('does not start them again while their records (and, refused here, its model) are unchanged; an edited record is tried again', async () => {
    const file = reportsFile(mkdtempSync(join(tmpdir(), 'argus-refusals-')), 'w1');
    const a = await worker(file, ['person']);
    a.write('yard', forklift);
    a.write('gate', outside);
    await a.flushed();
    expect(a.w.metricsState().notRun).toEqual({ refusedHere: 1, refusedRecord: 1, envMissing: 0 });
    expect(errors(a.lines)).toHaveLength(2);
    const kept = JSON.parse(readFileSync(file, 'utf8'));
    expect(kept.refused).toEqual([
      { camera: 'yard', offset: '0', scope: 'here', chain: expect.any(String) },
      { camera: 'gate', offset: '1', scope: 'record' },
    ]);
    expect(JSON.stringify(kept)).not.toContain('192.0.2');

    // Restarted, the same model: neither is started (no claim), both still counted, its first join names yard's slot.
    const b = await worker(file, ['person']);
    b.write('yard', forklift);
    b.write('gate', outside);
    expect(b.w.memberInfo().unreachable).toEqual([0]);
    await b.flushed();
    expect(b.i.counters.claims).toBe(0);
    expect(errors(b.lines)).toEqual([]);
    expect(b.w.metricsState().notRun).toEqual({ refusedHere: 1, refusedRecord: 1, envMissing: 0 });
    expect(b.lines.some((l) => l.level === 'warn' && /does not run 2 camera\(s\) whose record it refused before its restart, unchanged since: yard, gate/.test(l.msg))).toBe(true);

    // Restarted with a model that has the class: yard runs; gate, the record's own, stays refused.
    const c = await worker(file, ['person', 'forklift']);
    c.write('yard', forklift);
    c.write('gate', outside);
    c.w.memberInfo();
    await c.flushed();
    expect(c.w.cameras().map((x) => x.id)).toEqual(['yard']);
    expect(c.w.metricsState().notRun).toEqual({ refusedHere: 0, refusedRecord: 1, envMissing: 0 });

    // Restarted after gate's record was written again (a new offset): tried again, refused again, said again.
    const d = await worker(file, ['person', 'forklift']);
    d.write('yard', forklift);
    d.write('gate', outside);
    d.write('gate', { ...outside, fps: 5 }); // its latest record: offset 2
    d.w.memberInfo();
    await d.flushed();
    expect(errors(d.lines)).toEqual([expect.stringMatching(/camera gate \(slot 0\) runs nowhere: its record cannot be used on any worker/)]);
  });
});
