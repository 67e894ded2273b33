// argus bench's live frame rates: counted over the span its results cover.
import { describe, expect, it } from 'vitest';
import { liveRates } from '../../src/bench/bench.js';

describe('bench: live frames per second', () => {
  it('a 30 fps clip whose every frame came out reads 30 fps, in and out, not 30.1 (the results counted over one interval fewer)', () => {
    // 10 s of results: frames 0 to 300, captured 1000/30 ms apart.
    const first = { captured: 5000, seq: 0 };
    const last = { captured: 5000 + (300 * 1000) / 30, seq: 300 };
    const r = liveRates(first, last, 301);
    expect(r.seconds).toBeCloseTo(10, 9);
    expect(r.fps).toBeCloseTo(30, 9);
    expect(r.fpsIn).toBeCloseTo(30, 9);
  });

  it('every other frame dropped: 15 out, 30 in; the frames read after the last result (the run stopped) are not in it', () => {
    const r = liveRates({ captured: 0, seq: 7 }, { captured: 10_000, seq: 307 }, 151);
    expect(r.fps).toBeCloseTo(15, 9);
    expect(r.fpsIn).toBeCloseTo(30, 9);
  });

  it('fewer than two results: no rate', () => {
    expect(liveRates({ captured: 0, seq: 0 }, { captured: 0, seq: 0 }, 1)).toEqual({ seconds: 0, fps: 0, fpsIn: 0 });
  });
});
