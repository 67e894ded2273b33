/**
 * `argus cameras apply` of a record whose source is unchanged, only its cost or placement (the
 * assigner's fields), on the worker that runs the camera: it runs on under its claim. Before, any
 * change of the record restarted the camera under a new claim: a gap in its frames (ffmpeg's
 * connect and first key frame), its tracker and counts from 0 again, and a crossing under way lost,
 * for an operator who only re-weighed the cameras. Drives the worker without a broker.
 */
import { describe, expect, it } from 'vitest';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  counters: { claims: number; releases: number };
}

describe('Worker: a camera whose record changed only in cost or placement', () => {
  it('runs on under its claim, its chain not restarted; an edit of its source (a zone) restarts it under a new claim', async () => {
    const { w, i, settle, write } = await drivenWorker<Internals>();
    let attached = 0;
    const attach = (i.pipeline as { attach: (...a: unknown[]) => unknown }).attach;
    i.pipeline = { stats: [], attach: (...a: unknown[]) => (attached++, attach(...a)) };
    write('dock', { uri: 'rtsp://192.0.2.10/s', cost: 1 });
    await settle();
    const [first] = w.cameras();
    const run = i.running.get('dock');
    expect([attached, i.counters.claims]).toEqual([1, 1]);
    write('dock', { uri: 'rtsp://192.0.2.10/s', cost: 4 });
    await settle();
    write('dock', { uri: 'rtsp://192.0.2.10/s', cost: 4, placement: { labels: {} } });
    await settle();
    expect(w.cameras()).toEqual([first]);
    expect(i.running.get('dock')).toBe(run);
    expect([attached, i.counters.claims, i.counters.releases]).toEqual([1, 1, 0]);
    // Its source edited: restarted, a new epoch.
    write('dock', { uri: 'rtsp://192.0.2.10/s', cost: 4, zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]] }] });
    await settle();
    expect(w.cameras().map((c) => c.epoch)).not.toEqual([first.epoch]);
    expect([attached, i.counters.claims, i.counters.releases]).toEqual([2, 2, 1]);
    // …and a cost edit after it keeps that one.
    const second = w.cameras();
    write('dock', { uri: 'rtsp://192.0.2.10/s', cost: 2, zones: [{ id: 'lane', polygon: [[0, 0], [1, 0], [1, 1]] }] });
    await settle();
    expect(w.cameras()).toEqual(second);
    expect(attached).toBe(2);
  });
});
