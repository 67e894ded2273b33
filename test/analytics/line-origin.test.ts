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

describe('a track confirmed on this frame, its earlier sightings', () => {
  // A vertical count line at x = 60 drawn downwards ("in" is rightwards), box centres, 640 × 480 picture.
  const belt = () => new LineCounter('belt', [60, 0], [60, 480], { marginPx: 10, anchor: 'center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });
  const row = (box: number[], before?: number[][]) =>
    new Detections(new Float32Array(box), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([7]), before ? new Map([[7, { box: new Float32Array(before[0]), ms: 0, before: before.map((b, k) => ({ box: new Float32Array(b), ms: k * 100 })) }]]) : undefined);

  it('an item entering the picture at its left border is counted: first seen cut off there (a third of its size), its whole box was further left', () => {
    // Items 100 px wide: first seen as [0, 30] (centre 15), then [0, 70], confirmed whole at [10, 110] (centre 60: on the line).
    // Before, none: the first box was not trusted (a third of the item's size), and the item was
    // on the line when confirmed, past it on the next frame: its side was learned there.
    const l = belt();
    expect(l.update(row([10, 200, 110, 260], [[0, 200, 30, 260], [0, 200, 70, 260]]), 200)).toEqual([]);
    expect(l.update(row([50, 200, 150, 260]), 300).map((e) => e.direction)).toEqual(['in']);
  });

  it('a box cut off at a border is trusted when the whole box would put its anchor further from the line, on the same side; not when it may lie across it', () => {
    const at = (x: number) => new LineCounter('v', [x, 0], [x, 480], { marginPx: 10, anchor: 'center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });
    // Line x = 580, an item first seen cut off at the right border (centre 625; whole, further right), then left of the line.
    expect(at(580).update(row([500, 200, 600, 260], [[610, 200, 640, 260]]), 100).map((e) => e.direction)).toEqual(['out']);
    // Cut off at the bottom too: a centre further down is as far from a vertical line.
    expect(at(60).update(row([50, 380, 150, 480], [[0, 400, 30, 480]]), 100).map((e) => e.direction)).toEqual(['in']);
    // Line x = 20, an item first seen cut off at the left border right of the line (centre 40): whole,
    // its centre may have been left of the line. Leaving at the left, it crossed nothing sure.
    expect(at(20).update(row([0, 200, 20, 260], [[0, 200, 80, 260]]), 100)).toEqual([]);
  });

  it('the first sure one counts: a person first seen in part (behind a pillar), then whole before the line', () => {
    // Horizontal line y = 240 drawn right to left ("in" downwards), feet. First seen as the head over
    // a pillar (box 40 × 40, feet 150), then whole (feet at 220, above the line), confirmed on the
    // line (feet 245, in the margin), then below. Before, the first box decided (not trusted): no
    // side, and the side learned below the line.
    const l = line();
    const head = [300, 110, 340, 150], whole = [300, 120, 340, 220];
    const d = new Detections(new Float32Array([300, 145, 340, 245]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([7]), new Map([[7, { box: new Float32Array(head), ms: 0, before: [{ box: new Float32Array(head), ms: 0 }, { box: new Float32Array(whole), ms: 100 }] }]]));
    expect(l.update(d, 200)).toEqual([]);
    expect(l.update(frame([300, 170, 340, 270]), 300).map((e) => e.direction)).toEqual(['in']);
  });
});
