import { describe, expect, it } from 'vitest';
import { checkOwnership, lostFrames, type Seen } from '../../src/bench/cluster.js';
import { EpochGate } from '../../src/sinks/consume.js';

describe('EpochGate (argus consume’s rule for worker cameras)', () => {
  it('skips detections of a camera with a lower epoch than one seen; keeps alerts, status, other cameras and messages without an epoch', () => {
    const g = new EpochGate();
    expect(g.accept({ type: 'detections', source: 'a', epoch: 5 })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'a', epoch: 9 })).toBe(true); // a new owner
    expect(g.accept({ type: 'detections', source: 'a', epoch: 5 })).toBe(false); // the former owner's, late
    expect(g.accept({ type: 'alert', source: 'a', epoch: 5 })).toBe(true); // an alert is never dropped
    expect(g.accept({ type: 'status', source: 'a', epoch: 5 })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'b', epoch: 1 })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'a' })).toBe(true); // argus run: no epochs
    expect(g.accept({ type: 'detections', source: 'a', epoch: 9 })).toBe(true);
    expect(g.stale).toBe(1);
  });

  it('remembers only a real epoch (a Kafka offset: a non-negative safe integer): one record with 1e308 no longer makes the camera\'s later detections stale', () => {
    const g = new EpochGate();
    for (const epoch of [1e308, Infinity, -1, 2.5, 2 ** 53, '99', null]) expect(g.accept({ type: 'status', source: 'lobby', epoch })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'lobby', epoch: 4 })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'lobby', epoch: 1e308 })).toBe(true); // not a worker's: shown, not remembered
    expect(g.accept({ type: 'detections', source: 'lobby', epoch: 4 })).toBe(true);
    expect(g.accept({ type: 'detections', source: 'lobby', epoch: 0 })).toBe(false); // a real, lower epoch is still stale
    expect(g.accept({ type: 'detections', source: { toString: 1 }, epoch: 1 })).toBe(true);
    expect(g.stale).toBe(1);
  });
});

const seen = (source: string, owner: string, epoch: number, seq: number, emitted: number, dropped = 0): Seen => ({ source, owner, epoch, seq, dropped, emitted, captured: emitted - 10, readAt: emitted + 5 });

describe('checkOwnership and lostFrames (what the cluster test and bench read from Kafka)', () => {
  it('one owner per epoch, epochs one after another: clean; an epoch with two owners or overlapping owners: reported', () => {
    const clean = [seen('a', 'w1', 3, 1, 1000), seen('a', 'w1', 3, 2, 1500), seen('a', 'w2', 8, 1, 2500), seen('a', 'w2', 8, 2, 3000), seen('b', 'w1', 4, 1, 1200)];
    expect(checkOwnership(clean)).toMatchObject({ sharedEpochs: [], overlaps: [], messages: 5 });
    const shared = [...clean, seen('a', 'w3', 8, 3, 3500)];
    expect(checkOwnership(shared).sharedEpochs).toEqual([{ source: 'a', epoch: 8, owners: ['w2', 'w3'] }]);
    const overlap = [...clean, seen('a', 'w1', 3, 3, 2600)]; // w1 still processing after w2 began
    expect(checkOwnership(overlap).overlaps).toHaveLength(1);
    // one worker restarting a camera (an edit) is not an overlap
    expect(checkOwnership([seen('c', 'w1', 1, 1, 100), seen('c', 'w1', 2, 1, 90)]).overlaps).toEqual([]);
  });

  it('lostFrames: seq gaps not covered by the dropped count', () => {
    const l = [seen('a', 'w1', 3, 10, 1000, 0), seen('a', 'w1', 3, 11, 1500, 0), seen('a', 'w1', 3, 14, 2000, 2), seen('a', 'w1', 3, 15, 2500, 2)];
    expect(lostFrames(l, 'a', 0, 10_000)).toBe(0); // 12 and 13 missing: the 2 dropped on purpose
    expect(lostFrames(l.filter((m) => m.seq !== 14), 'a', 0, 10_000)).toBe(1); // 12, 13, 14 missing, 2 dropped
    expect(lostFrames(l.map((m) => ({ ...m, dropped: 0 })), 'a', 0, 10_000)).toBe(2); // nothing dropped: 12 and 13 lost
    expect(lostFrames(l.slice(0, 2), 'a', 0, 10_000)).toBe(0);
    // 113 was dropped while 112 was still in inference: 112's message already counts it
    const inFlight = [seen('b', 'w1', 3, 111, 1000, 0), seen('b', 'w1', 3, 112, 1500, 1), seen('b', 'w1', 3, 114, 2000, 1), seen('b', 'w1', 3, 115, 2500, 1)];
    expect(lostFrames(inFlight, 'b', 0, 10_000)).toBe(0);
  });

  it('lostFrames: a window that starts at a frame whose message already counts the next one as dropped loses nothing', () => {
    // 112 was in inference when 113 was dropped; the window starts at 112 (captured 1490).
    const inFlight = [seen('b', 'w1', 3, 111, 1000, 0), seen('b', 'w1', 3, 112, 1500, 1), seen('b', 'w1', 3, 114, 2000, 1), seen('b', 'w1', 3, 115, 2500, 1)];
    expect(lostFrames(inFlight, 'b', 1400, 10_000)).toBe(0);
    // A frame really lost inside the window is still seen.
    expect(lostFrames(inFlight.filter((m) => m.seq !== 114), 'b', 1400, 10_000)).toBe(1);
    // Only the same epoch's message before counts: after a restart the new epoch's first message is its own base.
    const restarted = [seen('b', 'w1', 3, 111, 1000, 0), seen('b', 'w1', 4, 0, 1500, 5), seen('b', 'w1', 4, 2, 2000, 5)];
    expect(lostFrames(restarted, 'b', 1400, 10_000)).toBe(1);
  });
});
