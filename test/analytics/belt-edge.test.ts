/**
 * Items on a belt entering the picture at its border, a count line near it: the tracker and
 * the line together, in virtual time (a frame every 100 ms).
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

/** In/out counts of a vertical line at `lineX` over 10 items, 100 px wide, entering from the left border at `speed` px a frame, one every 40 frames. */
function belt(lineX: number, speed: number) {
  const a = new SourceAnalyzer(SourceSchema.parse({ id: 'belt', uri: '/x.mp4', lines: [{ id: 'count', from: [lineX, 0], to: [lineX, 480], units: 'pixel' }] }), ['item'], 'sources[0]');
  a.init(640, 480);
  const tracker = new ByteTracker({ frameRateHint: 10 });
  for (let k = 0; k < 400; k++) {
    const left = -100 + speed * (k % 40);
    // Cut off by the picture's border, as the detector's boxes are; seen once 15 px of it are in.
    const x1 = Math.max(0, left), x2 = Math.min(640, left + 100);
    const seen = x2 - x1 >= 15 && x1 < 640;
    const d = seen ? new Detections(Float32Array.of(x1, 200, x2, 260), Float32Array.of(0.9), Int32Array.of(0)) : Detections.empty();
    a.process(tracker.update(d, k * 100), k * 100);
  }
  const { in: inn, out } = a.report().lines.count;
  return [inn, out];
}

describe('a count line near the border items enter at', () => {
  it('counts every item, though each is first seen cut off by the border', () => {
    // Before: 0 of 10 at 40 px a frame for a line at x 50 or 80 (each item was confirmed on the line or
    // past it, its first box cut off to under half its size and not trusted), 0 at 25 px a frame at x 30.
    expect(belt(80, 40)).toEqual([10, 0]);
    expect(belt(50, 40)).toEqual([10, 0]);
    expect(belt(30, 25)).toEqual([10, 0]);
    expect(belt(200, 60)).toEqual([10, 0]);
  });
});
