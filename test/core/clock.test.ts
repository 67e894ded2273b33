import { describe, expect, it } from 'vitest';
import { ObservedTime, STALL_GAP_FACTOR, STALL_GAP_MIN_MS } from '../../src/core/clock.js';

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

  it('a source slower than one frame a second is not stalling at its own pace', () => {
    // Frames every 2 s (fps: 0.5): gaps count in full; a 10 s gap (5 usual ones) is a stall.
    expect(observe([0, 2000, 4000, 6000, 8000, 18_000])).toEqual([0, 2000, 4000, 6000, 8000, 10_000]);
  });

  it('the first gap counts in full (there is no usual gap yet); time that goes back adds nothing', () => {
    expect(observe([0, 3000, 3100])).toEqual([0, 3000, 3100]);
    expect(observe([0, 100, 200, 50, 150])).toEqual([0, 100, 200, 200, 300]);
  });
});
