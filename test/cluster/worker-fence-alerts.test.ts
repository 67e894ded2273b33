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
import { Detections } from '../../src/core/detections.js';
import { AlertPublisher } from '../../src/sinks/alerts.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { publish } from '../../src/sinks/publish.js';
import { Publisher } from '../../src/sinks/publisher.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

interface Internals extends DrivenInternals {
  membership: { lastAlive: number };
  fencedClaims: Map<number, string>;
  outputs: unknown;
  stopCamera: (run: unknown, planned: boolean) => Promise<void>;
  stopBudget: () => number;
}

const result = (seq: number, alerts: unknown[], released: number[]) => ({ frame: { source: 'cam0', seq, release: () => released.push(seq) }, detections: {}, dropped: 0, alerts }) as unknown as FrameResult;

describe('Worker: results in flight at a lease lapse', () => {
  it('publish only their alerts (marked alertsOnly), under the claim they were admitted with; results without alerts are dropped as before', async () => {
    const passed: FrameResult[] = [];
    const released: number[] = [];
    const results = new Subject<FrameResult>();
    const { w, i, settle, write } = await drivenWorker<Internals>({ onResult: (r) => passed.push(r as FrameResult) });
    i.pipeline = { stats: [], attach: () => results };
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

describe('Worker: a result in flight past the stop budget, once the worker has claimed its camera again', () => {
  it("raises its alert under the claim its frame was admitted under, not the camera's new one (it took the new epoch)", async () => {
    const sent: AlertMessage[] = [];
    const chains: Subject<FrameResult>[] = [];
    const { w, i, settle, write } = await drivenWorker<Internals>({ onResult: (r) => alerts.raise(r as FrameResult) });
    // The sinks as runWorker wires them: the publisher asks the worker for a message's claim.
    const publisher = new Publisher([{ name: 'test', publish: (_k, _s, _j, m) => void sent.push(m as AlertMessage), close: async () => {} }], { name: 'm', version: '1' }, ['x'], undefined, (s, f) => w.claimOf(s, f));
    const alerts = new AlertPublisher(publisher, { snapshot: { mode: 'none', dir: 'snapshots' } } as never, {} as never, '/tmp', () => {});
    // Each attachment's frames; none ends when its camera is stopped (a frame still in inference).
    i.pipeline = { stats: [], attach: () => chains[chains.push(new Subject<FrameResult>()) - 1] };
    i.stopBudget = () => 0; // the stop gives up on the frames in flight at once (else after up to 10 s)
    write('cam0', { uri: 'rtsp://h/x' });
    await settle();
    const first = w.claimOf('cam0')!.epoch;
    write('cam0', { uri: 'rtsp://h/y' }); // edited: stopped (planned), released, claimed again
    await settle();
    const second = w.claimOf('cam0')!.epoch;
    expect(second).toBeGreaterThan(first);
    expect(chains).toHaveLength(2);
    const frame = { source: 'cam0', seq: 9, pts: 0.3, stamps: { captured: 1, produced: 1 }, producedBy: 'captured', letterbox: { srcWidth: 32, srcHeight: 16 }, release: () => {} };
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
    // The first attachment's frame, admitted under the first claim, is done now.
    chains[0].next({ frame, detections: none, dropped: 0, alerts: [{ rule: 'door', severity: 'warning', event: 'zone.enter', message: 'm', row: 0 }] } as unknown as FrameResult);
    await alerts.drain();
    expect(w.counters.fencedAlerts).toBe(1);
    expect(sent.map((m) => [m.seq, m.epoch])).toEqual([[9, first]]); // before: [9, second]
    // The new attachment's own frames carry the new claim.
    chains[1].next({ frame: { ...frame, seq: 10 }, detections: none, dropped: 0, alerts: [{ rule: 'door', severity: 'warning', event: 'zone.enter', message: 'm', row: 0 }] } as unknown as FrameResult);
    await alerts.drain();
    expect(sent.map((m) => [m.seq, m.epoch])).toEqual([
      [9, first],
      [10, second],
    ]);
  });
});

describe("Worker: a chain cut off with its stream's end's alerts (handed over past the fence filter)", () => {
  it('passes the fence it gives attach: counted fenced, and raised under the claim its frames were admitted under, not the camera\'s new one', async () => {
    const sent: AlertMessage[] = [];
    const chains: Subject<FrameResult>[] = [];
    const fences: (((r: FrameResult) => boolean) | undefined)[] = [];
    const { w, i, settle, write } = await drivenWorker<Internals>();
    const publisher = new Publisher([{ name: 'test', publish: (_k, _s, _j, m) => void sent.push(m as AlertMessage), close: async () => {} }], { name: 'm', version: '1' }, ['x'], undefined, (s, f) => w.claimOf(s, f));
    const alerts = new AlertPublisher(publisher, { snapshot: { mode: 'none', dir: 'snapshots' } } as never, {} as never, '/tmp', () => {});
    // pipeline.attach's fence: what the chain's hand-over (its end's result, the chain cut off by the
    // run's drain timeout) passes before the alert path, as each of its results passes the filter.
    i.pipeline = {
      stats: [],
      attach: (_src: unknown, _stop: unknown, _admit: unknown, fence?: (r: FrameResult) => boolean) => {
        fences.push(fence);
        return chains[chains.push(new Subject<FrameResult>()) - 1];
      },
    };
    i.stopBudget = () => 0;
    write('cam0', { uri: 'rtsp://h/x' });
    await settle();
    const first = w.claimOf('cam0')!.epoch;
    write('cam0', { uri: 'rtsp://h/y' }); // edited: stopped (planned; its chain still holds a frame), released, claimed again
    await settle();
    const second = w.claimOf('cam0')!.epoch;
    expect(second).toBeGreaterThan(first);
    expect(fences).toHaveLength(2);
    const frame = { source: 'cam0', seq: 9, pts: 0.9, stamps: { captured: 1, produced: 1 }, producedBy: 'captured', letterbox: { srcWidth: 32, srcHeight: 16 }, release: () => {} };
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
    // The first chain is cut off now (the run's drain timeout at the stop): its end's result, handed over.
    const end = { frame, detections: none, dropped: 0, alerts: [{ rule: 'door', severity: 'warning', event: 'line.cross', message: 'm', row: -1, trackId: 3 }], alertsOnly: true, streamEnd: true } as unknown as FrameResult;
    // Before: attach was given no fence; the hand-over went straight to the alert publisher,
    // under the camera's latest claim here (the second epoch), not counted fenced.
    expect(fences[0]).toBeTypeOf('function');
    expect(fences[0]!(end)).toBe(true);
    expect(alerts.handOver(end)).toBe(true);
    await alerts.drain();
    expect(w.counters).toMatchObject({ fencedFrames: 1, fencedAlerts: 1 });
    expect(sent.map((m) => [m.seq, m.epoch])).toEqual([[9, first]]);
  });

  it('drops it where the filter would (a chain that never held its claim): nothing handed over', async () => {
    const fences: (((r: FrameResult) => boolean) | undefined)[] = [];
    const { i, settle, write } = await drivenWorker<Internals>();
    i.pipeline = { stats: [], attach: (_src: unknown, _stop: unknown, _admit: unknown, fence?: (r: FrameResult) => boolean) => (fences.push(fence), new Subject<FrameResult>()) };
    write('cam0', { uri: 'rtsp://h/x' });
    await settle();
    const run = i.running.get('cam0') as { claim?: unknown };
    run.claim = undefined; // as a camera still waiting for its claim here (its frames gated: none analysed)
    const released: number[] = [];
    expect(fences[0]!({ ...result(5, [{ rule: 'door' }], released), streamEnd: true } as FrameResult)).toBe(false);
    expect(released).toEqual([5]);
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
