/**
 * A camera whose chain cannot start on this worker for its record (VAP_ERR_CONFIG from the chain's
 * set-up: a class the worker's model lacks, lines with tracking disabled in the worker YAML),
 * written by `argus cameras apply` beside healthy cameras: `apply` has no model to check it by.
 * Before, the worker started it again every 10 s (a claim and a release each time, an error and a
 * warning in its log) and counted each start as a failed connection: 30 s on, the camera was
 * reported unreachable and its slot, with the healthy cameras in it, moved to another worker, which
 * failed the same way where it ran the same model, and on. Now it runs nowhere on that worker until its
 * record changes, said once, and its slot is reported to the group once, as a slot it cannot run
 * (a worker with another model or YAML may; where every worker refuses it, the slot stays).
 * Drives the worker without a broker, on a virtual clock.
 */
import { Observable, throwError, filter } from 'rxjs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ArgusError, ErrorCodes } from '../../src/core/errors.js';
import { Metrics } from '../../src/server/metrics.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  counters: { claims: number; releases: number; unreachableReports: number; rebalancesAsked: number };
}

let now = 1_000_000;
beforeEach(() => {
  now = 1_000_000;
  vi.spyOn(performance, 'now').mockImplementation(() => now);
});
afterEach(() => vi.restoreAllMocks());

async function worker() {
  const lines: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
  const { w, i, settle, write } = await drivenWorker<Internals>({ log: (msg, fields, level) => lines.push({ msg, fields, level }) });
  (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
  // The worker's model knows no forklift: the chain's set-up refuses that camera's record (as
  // Pipeline.attach's checkClasses). The others stream: each chain's gate, called at every step, is a frame.
  const gates = new Map<string, () => boolean>();
  const stats: { id: string; error?: Error }[] = [];
  i.pipeline = {
    stats,
    attach: (src: { id: string }, stop$: Observable<void>, admit: () => boolean) => {
      if (JSON.stringify(src).includes('no-such-ca')) {
        // A source's tls.ca this machine lacks: its attempt fails (`failed`), then the chain ends with the error.
        w.publishesStatus({ source: src.id, state: 'failed', previous: 'starting', reason: 'tls.ca: /etc/argus/no-such-ca.pem: no such file', at: Date.now(), attempt: 1 });
        return throwError(() => new ArgusError(ErrorCodes.CONFIG, 'tls.ca: /etc/argus/no-such-ca.pem: no such file'));
      }
      if (JSON.stringify(src).includes('"units":"pixel"')) {
        // Zones in pixels of a larger picture than the camera gives (no frameSize): the source
        // streams, its first frame reaches the analyzer, which refuses the points
        // (analyzer.ts init); the chain ends as isolate ends it: the error kept in the source's
        // stats, and the chain complete.
        return new Observable<never>((o) => {
          const st: { id: string; error?: Error } = { id: src.id };
          stats.push(st);
          w.publishesStatus({ source: src.id, state: 'streaming', previous: 'starting', reason: 'first frame', at: Date.now(), attempt: 1 } as never);
          admit();
          st.error = new ArgusError(ErrorCodes.CONFIG, `camera ${src.id}.zones[0].polygon[1]: point [1920, 0] is outside the 640x480 frame (give the size of the picture the points were read from as frameSize, and they are scaled from it)`);
          o.complete();
          return () => void stats.splice(stats.indexOf(st), 1);
        });
      }
      if (JSON.stringify(src).includes('forklift')) return throwError(() => new ArgusError(ErrorCodes.CONFIG, `camera ${src.id}: zones[0].classes[0]: unknown class "forklift"`));
      gates.set(src.id, admit);
      return stop$.pipe(filter(() => false));
    },
  };
  const at = async (ms: number) => {
    now = 1_000_000 + ms;
    for (const admit of gates.values()) admit();
    await settle();
  };
  return { w, i, settle, write, at, lines };
}

describe('Worker: a camera whose record its chain cannot start with', () => {
  it('runs nowhere here until its record changes: no start every 10 s, no failed connection counted, the healthy cameras run on', async () => {
    const h = await worker();
    h.write('dock', { uri: 'rtsp://192.0.2.10/s' });
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] });
    await h.settle();
    expect(h.w.cameras().map((c) => c.id)).toEqual(['dock']);
    const claims = h.i.counters.claims;
    // Two minutes on (past unreachableAfterMs, 30 s, many times over), a second at a time.
    for (let t = 1000; t <= 120_000; t += 1000) await h.at(t);
    expect(h.i.counters.claims - claims).toBe(0);
    expect(h.w.unreachableNow()).toEqual([]);
    expect(h.i.counters.unreachableReports).toBe(0);
    expect(h.w.cameras().map((c) => c.id)).toEqual(['dock']);
    const said = h.lines.filter((l) => l.level === 'error' && /yard/.test(l.msg));
    expect(said).toHaveLength(1);
    expect(said[0].msg).toMatch(/camera yard \(slot 0\) runs nowhere here: its record cannot be used on w1: camera yard: zones\[0\]\.classes\[0\]: unknown class "forklift"/);
    expect(said[0].fields).toMatchObject({ camera: 'yard', code: 'VAP_ERR_CONFIG' });
    // Its claim was given back once: `argus cameras ls` does not show it held.
    expect(h.i.view.owners.get('yard')?.state).not.toBe('claimed');
    // /healthz says why it does not run here.
    expect((h.w.health().cluster as { notHere: unknown[] }).notHere).toEqual([{ id: 'yard', reason: 'its record cannot be used here: camera yard: zones[0].classes[0]: unknown class "forklift"' }]);
    // Fixed: started at once.
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['person'] }] });
    await h.at(121_000);
    expect(h.w.cameras().map((c) => c.id).sort()).toEqual(['dock', 'yard']);
    expect((h.w.health().cluster as { notHere: unknown[] }).notHere).toEqual([]);
  });

  it('tells the group, so that a worker whose model or YAML can run it takes its slot: its member data names the slot while the record is unchanged, one rebalance asked', async () => {
    // Workers need not run one model (a GPU worker with a larger one, a model rolled out one worker
    // at a time) nor one tracking setting. Before, the refusing worker kept the slot and said so
    // only in its own log and /healthz: the camera ran nowhere in the cluster for good, though
    // another worker could run it; `argus cluster status` showed nothing.
    const h = await worker();
    let asked = 0;
    (h.i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => void asked++;
    h.write('dock', { uri: 'rtsp://192.0.2.10/s' });
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] });
    await h.settle();
    expect(h.w.memberInfo().unreachable).toEqual([0]);
    // Kept while the record stays as it is (past the 10 min a connection's report is kept once its
    // slot has left: this worker would refuse it again), and asked for once.
    h.i.assigned = new Set();
    for (let t = 10_000; t <= 1_300_000; t += 10_000) await h.at(t);
    expect(h.w.memberInfo().unreachable).toEqual([0]);
    expect(asked).toBe(1);
    expect(h.i.counters.claims).toBe(2); // dock's and yard's one claim
    // Edited: no longer reported (the new record is tried afresh where its slot is).
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['person'] }] });
    await h.at(1_301_000);
    expect(h.w.memberInfo().unreachable).toEqual([]);
  });

  it('an edit of its cost or placement alone changes nothing: not tried again (no claim, no second error), its slot still reported', async () => {
    // Its chain refuses its source (what cost and placement leave out), as a running camera so
    // edited runs on (worker-cost-edit.test.ts). Before, the edit was tried: a claim, a release
    // and an error again, and the report withdrawn, so that the slot could come back here at the
    // next rebalance, to be refused and reported again.
    const h = await worker();
    const zones = [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }];
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones });
    await h.settle();
    expect(h.i.counters.claims).toBe(1);
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones, cost: 3 });
    for (let t = 1000; t <= 30_000; t += 1000) await h.at(t);
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones, cost: 3, placement: { labels: {} } });
    for (let t = 31_000; t <= 60_000; t += 1000) await h.at(t);
    expect(h.i.counters.claims).toBe(1);
    expect(h.lines.filter((l) => l.level === 'error' && /yard/.test(l.msg))).toHaveLength(1);
    expect(h.w.memberInfo().unreachable).toEqual([0]);
    expect((h.w.health().cluster as { notHere: unknown[] }).notHere).toHaveLength(1);
  });

  it('an edit that is still unusable is said again, once', async () => {
    const h = await worker();
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] });
    await h.settle();
    h.write('yard', { uri: 'rtsp://192.0.2.12/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] });
    for (let t = 1000; t <= 30_000; t += 1000) await h.at(t);
    expect(h.lines.filter((l) => l.level === 'error' && /yard/.test(l.msg))).toHaveLength(2);
    expect(h.i.counters.claims).toBe(2);
  });

  it('a source that failed for a file of this machine (its tls.ca) is started again as before: the file may be put back', async () => {
    const h = await worker();
    h.write('gate', { uri: 'rtsps://192.0.2.13/s', tls: { ca: '/etc/argus/no-such-ca.pem' } });
    await h.settle();
    const claims = h.i.counters.claims;
    for (let t = 1000; t <= 30_000; t += 1000) await h.at(t);
    expect(h.i.counters.claims - claims).toBeGreaterThan(0);
    expect((h.w.health().cluster as { notHere: unknown[] }).notHere).toEqual([]);
  });

  it("a zone whose points lie outside the frame (refused at its first frame, the source streaming) is the record's: not started again, its slot not moved, said once", async () => {
    // Its own geometry: every worker refuses it alike (the camera gives each the same picture).
    // Before, the chain ended at its first frame as a source that failed: started again every
    // 10 s (a claim and a release each time), and 30 s on reported unreachable, its slot (with
    // the slot's healthy cameras) moved to a worker that refused it the same way, and on.
    const h = await worker();
    let asked = 0;
    (h.i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => void asked++;
    h.write('dock', { uri: 'rtsp://192.0.2.10/s' });
    const zones = [{ id: 'lane', units: 'pixel', polygon: [[0, 0], [1920, 0], [1920, 1080]] }];
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones });
    await h.settle();
    const claims = h.i.counters.claims;
    for (let t = 1000; t <= 120_000; t += 1000) await h.at(t);
    expect(h.i.counters.claims - claims).toBe(0);
    expect(h.i.counters.releases).toBe(1);
    expect(h.i.counters.unreachableReports).toBe(0);
    expect(h.w.unreachableNow()).toEqual([]);
    expect(h.w.memberInfo().unreachable).toEqual([]);
    expect(asked).toBe(0);
    expect(h.w.cameras().map((c) => c.id)).toEqual(['dock']);
    const said = h.lines.filter((l) => l.level === 'error' && /yard/.test(l.msg));
    expect(said).toHaveLength(1);
    expect(said[0].msg).toMatch(/camera yard \(slot 0\) runs nowhere: its record cannot be used on any worker: camera yard\.zones\[0\]\.polygon\[1\]: point \[1920, 0\] is outside the 640x480 frame/);
    expect(said[0].fields).toMatchObject({ camera: 'yard', code: 'VAP_ERR_CONFIG' });
    expect((h.w.health().cluster as { notHere: unknown[] }).notHere).toEqual([{ id: 'yard', reason: expect.stringMatching(/^its record cannot be used on any worker: camera yard\.zones\[0\]\.polygon\[1\]/) }]);
    // A cost edit alone: still refused, not tried.
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones, cost: 2 });
    for (let t = 121_000; t <= 150_000; t += 1000) await h.at(t);
    expect(h.i.counters.claims - claims).toBe(0);
    // Its points given as fractions: tried at once.
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]] }], cost: 2 });
    await h.at(151_000);
    expect(h.w.cameras().map((c) => c.id).sort()).toEqual(['dock', 'yard']);
  });

  it('/metrics and /healthz count the cameras it does not run for their record: refused here, refused for their geometry, a variable missing here', async () => {
    // Before, only the log and /healthz notHere (the slots it holds) said so: a Prometheus alert had nothing to read.
    const h = await worker();
    h.write('dock', { uri: 'rtsp://192.0.2.10/s' });
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['forklift'] }] });
    h.write('gate', { uri: 'rtsp://192.0.2.12/s', zones: [{ id: 'lane', units: 'pixel', polygon: [[0, 0], [1920, 0], [1920, 1080]] }] });
    h.write('pier', { uri: 'rtsp://admin:${env:ARGUS_CAMERA_PIER_PW}@192.0.2.13/s' });
    for (let t = 1000; t <= 5000; t += 1000) await h.at(t);
    const counts = { refusedHere: 1, refusedRecord: 1, envMissing: 1 };
    expect((h.w.health().cluster as { notRun: unknown }).notRun).toEqual(counts);
    const text = await new Metrics({ stats: () => [], provider: 'cpu', cluster: () => h.w.metricsState() }).scrape();
    expect(text).toMatch(/^argus_cluster_cameras_unusable\{scope="here"\} 1$/m);
    expect(text).toMatch(/^argus_cluster_cameras_unusable\{scope="record"\} 1$/m);
    expect(text).toMatch(/^argus_cluster_cameras_env_missing 1$/m);
    // Fixed records leave the counts.
    h.write('yard', { uri: 'rtsp://192.0.2.11/s', zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]], classes: ['person'] }] });
    h.write('pier', { uri: 'rtsp://192.0.2.13/s' });
    await h.at(6000);
    expect(h.w.metricsState().notRun).toEqual({ refusedHere: 0, refusedRecord: 1, envMissing: 0 });
  });
});
