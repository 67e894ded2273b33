import { describe, expect, it, vi } from 'vitest';
import { fromWallClock, ObservedTime, OUTAGE_MS, STALL_GAP_FACTOR, STALL_GAP_MIN_MS } from '../../src/core/clock.js';

/** Observed times for frames at `times`. */
const observe = (times: number[]) => {
  const o = new ObservedTime();
  return times.map((t) => o.advance(t));
};

describe('ObservedTime', () => {
  it('runs with the frames while they come at their usual spacing, and with frames dropped in between', () => {
    expect(observe([0, 100, 200, 300, 700, 800])).toEqual([0, 100, 200, 300, 700, 800]);
  });

  it('a stall (no frame for longer than 1 s and 4 usual gaps) counts as one usual gap', () => {
    expect(observe([0, 100, 200, 300, 5300, 5400])).toEqual([0, 100, 200, 300, 400, 500]);
    expect(STALL_GAP_MIN_MS).toBe(1000);
    expect(STALL_GAP_FACTOR).toBe(4);
  });

  it('with an outage bound, a gap longer than it counts in full and leaves the pace as it was; a stall within it is still one usual gap', () => {
    const o = new ObservedTime(OUTAGE_MS);
    const times = [0, 100, 200, 300, 300 + OUTAGE_MS + 1, 400 + OUTAGE_MS + 1, 5400 + OUTAGE_MS + 1];
    const outage: boolean[] = [];
    const observed = times.map((t) => {
      const v = o.advance(t);
      outage.push(o.afterOutage);
      return v;
    });
    expect(observed).toEqual([0, 100, 200, 300, 300 + OUTAGE_MS + 1, 400 + OUTAGE_MS + 1, 500 + OUTAGE_MS + 1]);
    expect(outage).toEqual([false, false, false, false, true, false, false]);
    expect(OUTAGE_MS).toBe(10_000);
  });

  it('a source slower than one frame a second is not stalling at its own pace', () => {
    // Frames every 2 s (fps: 0.5): gaps count in full; a 10 s gap (5 usual ones) is a stall.
    expect(observe([0, 2000, 4000, 6000, 8000, 18_000])).toEqual([0, 2000, 4000, 6000, 8000, 10_000]);
  });

  it('a pace that slows down for good is learned in a few frames: each stall moves the usual gap by up to 4 of them', () => {
    // 30 frames a second for 5 s, then one frame every 1.2 s (inference fell behind for good).
    const o = new ObservedTime();
    let t = 0;
    for (let k = 0; k <= 150; k++) o.advance((t = (k * 1000) / 30));
    const counted: number[] = [];
    for (let k = 1; k <= 10; k++) {
      const before = o.advance(t);
      counted.push(Math.round(o.advance((t += 1200)) - before));
    }
    expect(counted.slice(0, 3)).toEqual([33, 46, 63]); // stalls, each counted as the usual gap, which grows
    expect(counted.slice(7)).toEqual([1200, 1200, 1200]); // the new pace counts in full
  });

  it('a first gap of seconds (frames dropped at the start) is forgotten in a few frames: a stall a second later is still one', () => {
    const times = [0, 6000, ...Array.from({ length: 10 }, (_, k) => 6100 + 100 * k), 12_000];
    const obs = observe(times);
    expect(obs[1]).toBe(6000); // the first gap counts in full
    expect(obs.at(-1)! - obs.at(-2)!).toBeLessThan(200); // the 5 s stall after 10 frames at 10 fps: about one frame
  });

  it('the first gap counts in full (there is no usual gap yet); time that goes back adds nothing', () => {
    expect(observe([0, 3000, 3100])).toEqual([0, 3000, 3100]);
    expect(observe([0, 100, 200, 50, 150])).toEqual([0, 100, 200, 200, 300]);
  });
});

describe('fromWallClock', () => {
  it('a process descheduled between its reads of the two clocks (a busy machine) sees no step of the system clock', () => {
    // `now` and the system clock agree here; the first read of the system clock comes 8 ms late,
    // as when the process waits for a CPU between the two reads.
    const wall = Date.now.bind(Date);
    let calls = 0;
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => {
      if (calls++ === 0) for (const end = performance.now() + 8; performance.now() < end; );
      return wall();
    });
    try {
      const t = wall();
      expect(Math.abs(fromWallClock(t) - t)).toBeLessThan(1e-9);
    } finally {
      spy.mockRestore();
    }
  });

  it('a real step is applied: the system clock 5 s ahead of `now`', () => {
    const wall = Date.now.bind(Date);
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => wall() + 5000);
    try {
      const t = wall() + 5000;
      expect(fromWallClock(t) - (t - 5000)).toBeLessThan(5);
      expect(fromWallClock(t) - (t - 5000)).toBeGreaterThan(-5);
    } finally {
      spy.mockRestore();
    }
  });
});
