/**
 * A lease lapse (the fence) stops every camera and publishes none of the detections still in
 * flight: another worker may hold the camera by now. The alerts those frames raised are kept:
 * each frame was admitted while the claim held (the gate lets no other in), so its alerts are
 * real, raised under that claim's epoch. Dropped, a crossing seen just before the lapse raised no
 * alert anywhere (the new owner starts with the object already past the line). And they are
 * journaled before the fenced claim's release is written, as a planned stop's are.
 * Drives the worker without a broker (its owners log writes straight into its view).
 */
import { Subject } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { publish } from '../../src/sinks/publish.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  membership: { lastAlive: number };
  fencedClaims: Map<number, string>;
  outputs: unknown;
  stopCamera: (run: unknown, planned: boolean) => Promise<void>;
}

const result = (seq: number, alerts: unknown[], released: number[]) => ({ frame: { source: 'cam0', seq, release: () => released.push(seq) }, detections: {}, dropped: 0, alerts }) as unknown as FrameResult;

describe('Worker: results in flight at a lease lapse', () => {
  it('publish only their alerts (marked alertsOnly), under the claim they were admitted with; results without alerts are dropped as before', async () => {
    const passed: FrameResult[] = [];
    const released: number[] = [];
    const results = new Subject<FrameResult>();
    const { w, i, settle, write } = await drivenWorker<Internals>({ onResult: (r) => passed.push(r as FrameResult) });
    i.pipeline = { attach: () => results };
    write('cam0', { uri: 'rtsp://h/x' });
    await settle();
    const epoch = w.claimOf('cam0')!.epoch;
    expect(w.cameras()).toMatchObject([{ id: 'cam0', epoch }]);
    results.next(result(1, [], released));
    results.next(result(2, [{ rule: 'door' }], released));
    i.membership.lastAlive = -Infinity; // the lease lapsed (a broker restart, the process frozen) with frames 3 and 4 in flight
    results.next(result(3, [], released));
    results.next(result(4, [{ rule: 'door' }], released)); // a line crossed just before the lapse
    expect(passed.map((r) => [r.frame.seq, r.alertsOnly ?? false])).toEqual([
      [1, false],
      [2, false],
      [4, true], // before: dropped, its alert raised nowhere
    ]);
    expect(released).toEqual([3]);
    expect(w.counters).toMatchObject({ fencedFrames: 2, fencedByLease: 2, fencedAlerts: 1 });
    expect(w.claimOf('cam0')?.epoch).toBe(epoch); // what its alert is published with
  });

  it('a fenced camera\'s claim is released only once the alerts raised so far are journaled (the outbox drained)', async () => {
    const { i, settle, write } = await drivenWorker<Internals>();
    write('cam0', { uri: 'rtsp://h/x' });
    await settle();
    let drained!: () => void;
    const drain = vi.fn(() => new Promise<void>((r) => (drained = r)));
    i.outputs = { alerts: { drain }, publisher: { flush: async () => {} } };
    const run = i.running.get('cam0')!;
    const stopped = i.stopCamera(run, false);
    await vi.waitFor(() => expect(drain).toHaveBeenCalled());
    expect(i.fencedClaims.size).toBe(0); // before: set at once, the release written before the alerts were on disk
    drained();
    await stopped;
    expect([...i.fencedClaims.values()]).toEqual(['cam0']);
  });
});

describe('publish: a result marked alertsOnly', () => {
  it('raises its alerts, publishes no detections message and tells no side consumer (metrics, live view, annotation), and releases its frame', () => {
    const released: number[] = [];
    const detections = vi.fn();
    const raise = vi.fn();
    const side = vi.fn();
    const op = publish({ publisher: { detections } as never, alerts: { raise } as never, side: [side] });
    const r = { ...result(7, [{ rule: 'door' }], released), alertsOnly: true };
    const s = new Subject<FrameResult>();
    s.pipe(op).subscribe();
    s.next(r);
    expect(raise).toHaveBeenCalledWith(r);
    expect(detections).not.toHaveBeenCalled();
    expect(side).not.toHaveBeenCalled();
    expect(released).toEqual([7]);
    s.next(result(8, [], released)); // an ordinary result: as before
    expect(detections).toHaveBeenCalledTimes(1);
    expect(side).toHaveBeenCalledTimes(1);
  });
});
