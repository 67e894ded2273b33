import { describe, expect, it } from 'vitest';
import { LineCounter } from '../../src/analytics/line.js';
import { Detections } from '../../src/core/detections.js';

/** One tracked row (id 7), confirmed on this frame with the given first box (or none). */
function frame(box: number[], origin?: number[]): Detections {
  return new Detections(new Float32Array(box), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([7]), origin ? new Map([[7, { box: new Float32Array(origin), ms: -100 }]]) : undefined);
}

// A horizontal line at y = 240 drawn right to left ("in" is downwards), feet as the anchor.
const line = (from: [number, number] = [640, 240]) => new LineCounter('l', from, [0, 240], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 });

describe('a line and a track confirmed on this frame', () => {
  it('counts the crossing made since the tracker first saw it (same object, path across the segment)', () => {
    const l = line();
    expect(l.update(frame([300, 160, 340, 260], [300, 120, 340, 220]), 0).map((e) => e.direction)).toEqual(['in']);
  });

  it('without a first box it only learns its side', () => {
    const l = line();
    expect(l.update(frame([300, 160, 340, 260]), 0)).toEqual([]);
  });

  it('does not trust a first box much smaller than the object (its top seen over an occluder): no crossing is invented', () => {
    const l = line();
    // The upper body (bottom at 200, above the line), then the whole person (feet at 300, below): it never moved.
    expect(l.update(frame([300, 40, 340, 300], [300, 100, 340, 200]), 0)).toEqual([]);
  });

  it('does not count a path that passes the line beyond its end', () => {
    const l = line([640, 240]);
    const short = new LineCounter('s', [640, 240], [320, 240], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 });
    // From x = 120 above the line to x = 330 below it: the path meets y = 240 at x ≈ 225, outside 320–640.
    expect(short.update(frame([310, 160, 350, 260], [100, 120, 140, 220]), 0)).toEqual([]);
    expect(l.update(frame([310, 160, 350, 260], [100, 120, 140, 220]), 0).map((e) => e.direction)).toEqual(['in']);
  });

  it('confirmed while on the line (inside the margin): the side it came from is kept, and the crossing counts when it leaves the margin', () => {
    const l = line();
    // First seen above (feet at 220), confirmed with feet at 245 (within the 10 px margin), then below.
    expect(l.update(frame([300, 145, 340, 245], [300, 120, 340, 220]), 0)).toEqual([]);
    expect(l.update(frame([300, 170, 340, 270]), 100).map((e) => e.direction)).toEqual(['in']);
  });
});

describe('a crossing near an end of the line', () => {
  // A 400 px line from (100, 240) to (500, 240), centre of a 40 px box as the anchor.
  const gate = (marginPx = 10) => new LineCounter('gate', [100, 240], [500, 240], { marginPx, anchor: 'center', forgetAfterMs: 2000 });
  /** Directions counted along a path of centres, one frame each 100 ms. */
  const walk = (l: LineCounter, path: [number, number][]) =>
    path.flatMap(([x, y], k) => l.update(new Detections(new Float32Array([x - 20, y - 20, x + 20, y + 20]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([7])), k * 100).map((e) => e.direction));
  const diagonal = (x0: number, y0: number, dx: number, dy: number, n = 20) => Array.from({ length: n }, (_, k) => [x0 + dx * k, y0 + dy * k] as [number, number]);

  it('is judged where the path met the line, not where the track first left the margin', () => {
    // Walking at 45°, the path meets y = 240 at x = 490 (inside the segment) and leaves the margin at x = 510 (past its end).
    expect(walk(gate(), diagonal(400, 150, 10, 10))).toEqual(['out']);
    // Mirrored: it meets the line at x = 510 (past the end) and leaves the margin at x = 490 (inside).
    expect(walk(gate(), diagonal(600, 150, -10, 10))).toEqual([]);
    // A wide margin: the path meets the line at x = 480.
    expect(walk(gate(30), diagonal(390, 150, 10, 10))).toEqual(['out']);
  });

  it('with frames dropped, from the last sighting beyond the margin to the first one past it', () => {
    // 40 px steps: seen at (460, 220) then (500, 260); the path meets the line at x = 480.
    expect(walk(gate(), diagonal(300, 60, 40, 40, 8))).toEqual(['out']);
    // Seen at (520, 220) then (480, 260): it met the line at x = 500, the segment's end (counted), and at 540 it would not.
    expect(walk(gate(), diagonal(680, 60, -40, 40, 8))).toEqual(['out']);
    expect(walk(gate(), diagonal(720, 60, -40, 40, 8))).toEqual([]);
  });
});
