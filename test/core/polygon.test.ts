import { describe, expect, it } from 'vitest';
import { orient, pointInPolygon, polygonArea, segmentsIntersect, selfIntersection, type Point } from '../../src/core/polygon.js';

const square: Point[] = [[0, 0], [10, 0], [10, 10], [0, 10]];
// A "C" opening to the right: the notch (x 4–10, y 4–6) is outside.
const concave: Point[] = [[0, 0], [10, 0], [10, 4], [4, 4], [4, 6], [10, 6], [10, 10], [0, 10]];

describe('pointInPolygon', () => {
  it.each([
    ['centre of a square', 5, 5, square, true],
    ['beyond the right edge', 11, 5, square, false],
    ['above the square', 5, -1, square, false],
    ['inside the arm of a concave polygon', 7, 2, concave, true],
    ['in the notch of a concave polygon', 7, 5, concave, false],
    ['in the spine of a concave polygon', 2, 5, concave, true],
    // Boundary points are inside on every edge (boxes clipped to the frame end exactly on it).
    ['on the bottom edge', 5, 10, square, true],
    ['on the right edge', 10, 5, square, true],
    ['on the top edge', 5, 0, square, true],
    ['on the left edge', 0, 5, square, true],
    ['on a corner', 10, 10, square, true],
    ['on an edge of the notch', 7, 4, concave, true],
    ['on a slanted edge', 2.5, 2.5, [[0, 0], [10, 10], [0, 10]] as Point[], true],
    ['just below the bottom edge', 5, 10.001, square, false],
    ['on the line of an edge, past its end', 12, 10, square, false],
  ] as const)('%s', (_n, x, y, poly, want) => {
    expect(pointInPolygon(x, y, poly)).toBe(want);
  });
});

describe('segmentsIntersect', () => {
  it.each([
    ['crossing', [0, 0], [10, 10], [0, 10], [10, 0], true],
    ['parallel', [0, 0], [10, 0], [0, 1], [10, 1], false],
    ['touching at an end', [0, 0], [5, 5], [5, 5], [10, 0], true],
    ['collinear and overlapping', [0, 0], [6, 0], [4, 0], [10, 0], true],
    ['collinear and apart', [0, 0], [3, 0], [4, 0], [10, 0], false],
    ['one would cross the other only if extended', [0, 0], [4, 4], [10, 0], [6, 4], false],
  ] as const)('%s', (_n, a, b, c, d, want) => {
    expect(segmentsIntersect(a, b, c, d)).toBe(want);
  });
});

describe('selfIntersection', () => {
  it('names the first two edges that cross in a bow tie', () => {
    expect(selfIntersection([[0, 0], [1, 1], [1, 0], [0, 1]])).toEqual([0, 2]);
  });

  it('finds nothing in a simple polygon, convex or concave', () => {
    expect(selfIntersection(square)).toBeUndefined();
    expect(selfIntersection(concave)).toBeUndefined();
  });
});

/** Every pair of non-adjacent edges: what selfIntersection answered before its sweep line. */
function everyPair(poly: readonly Point[]): [number, number] | undefined {
  const n = poly.length;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      if (j === i + 1 || (i === 0 && j === n - 1)) continue;
      if (segmentsIntersect(poly[i], poly[(i + 1) % n], poly[j], poly[(j + 1) % n])) return [i, j];
    }
  }
  return undefined;
}

/** A seeded random generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A circle of n points (simple), in fractions of the frame. */
const circle = (n: number): Point[] => Array.from({ length: n }, (_, i) => [0.5 + 0.4 * Math.cos((2 * Math.PI * i) / n), 0.5 + 0.4 * Math.sin((2 * Math.PI * i) / n)] as const);

describe('selfIntersection: a sweep line, the same answers as testing every pair', () => {
  it('agrees with every-pair testing on random polygons, degenerate ones above all (points on a 4×4 grid: shared points, collinear and vertical edges)', () => {
    const rnd = random(1);
    const disagree: string[] = [];
    for (let t = 0; t < 60_000 && disagree.length < 5; t++) {
      const n = 4 + Math.floor(rnd() * 6);
      const side = t % 3 === 0 ? 3 : t % 3 === 1 ? 5 : 1000;
      const poly = Array.from({ length: n }, () => [Math.floor(rnd() * side), Math.floor(rnd() * side)] as const);
      const sweep = selfIntersection(poly);
      const pairs = everyPair(poly);
      if (!sweep !== !pairs) disagree.push(`${JSON.stringify(poly)}: sweep ${JSON.stringify(sweep)}, every pair ${JSON.stringify(pairs)}`);
      // The pair named is a pair that meets, not adjacent.
      else if (sweep) {
        const [i, j] = sweep;
        if (j === i + 1 || (i === 0 && j === n - 1) || !segmentsIntersect(poly[i], poly[(i + 1) % n], poly[j], poly[(j + 1) % n])) disagree.push(`${JSON.stringify(poly)}: names ${i}, ${j}`);
      }
    }
    expect(disagree).toEqual([]);
  });

  it('agrees on star-shaped polygons (simple) and the same with one point moved (often not)', () => {
    const rnd = random(2);
    const disagree: string[] = [];
    for (let t = 0; t < 3000; t++) {
      const n = 4 + Math.floor(rnd() * 60);
      const angles = Array.from({ length: n }, () => rnd() * 2 * Math.PI).sort((a, b) => a - b);
      const poly: Point[] = angles.map((a) => [0.5 + (0.1 + 0.3 * rnd()) * Math.cos(a), 0.5 + (0.1 + 0.3 * rnd()) * Math.sin(a)] as const);
      if (t % 2) poly[Math.floor(rnd() * n)] = [rnd(), rnd()];
      if (!selfIntersection(poly) !== !everyPair(poly)) disagree.push(JSON.stringify(poly));
    }
    expect(disagree).toEqual([]);
  });

  it('a 40 000-point zone is checked either way: a simple one passes, one crossing anywhere is found (every pair took 13.6 s)', () => {
    const round = circle(40_000);
    expect(selfIntersection(round)).toBeUndefined();
    // Two neighbouring points swapped near the end: edges 39 996 and 39 998 cross.
    const crossed = [...round];
    [crossed[39_997], crossed[39_998]] = [crossed[39_998], crossed[39_997]];
    expect(selfIntersection(crossed)).toEqual([39_996, 39_998]);
    // A comb of 10 000 teeth: every tooth's long edges overlap in x, which defeats a sort by x
    // alone (and keeps 20 000 edges in the sweep's order at once).
    const teeth: Point[] = [[-1, 0]];
    for (let i = 0; i < 10_000; i++) teeth.push([1000, 2 * i], [1000, 2 * i + 1], [0, 2 * i + 1], [0, 2 * i + 2]);
    teeth.push([-1, 2 * 10_000]);
    expect(selfIntersection(teeth)).toBeUndefined();
    teeth[20_001] = [-2, 20_000.5]; // a tooth's corner pulled across the spine (the last edge)
    expect(selfIntersection(teeth)).toEqual([20_000, 40_001]);
  });

  it('orient is exact: rounding does not make near-collinear points collinear, or collinear ones not', () => {
    // 0.1, 0.2, 0.3 are not on one line in binary (0.1 + 0.2 !== 0.3), and a float determinant says 0.
    expect(orient([0, 0], [0.1, 0.1], [0.3, 0.3])).toBe(0);
    expect(orient([0.1, 0.2], [0.2, 0.4], [0.3, 0.6000000000000001])).not.toBe(0);
    expect(orient([0, 0], [1e-200, 1e-200], [3e-200, 3e-200 + 1e-215])).toBe(1);
    expect(orient([0, 0], [2 ** 60, 1], [2 ** 61, 2])).toBe(0);
    expect(orient([0, 0], [2 ** 60, 1], [2 ** 61, 2 + 2 ** -40])).toBe(1);
  });
});

describe('polygonArea', () => {
  it.each([
    ['a square', square, 100],
    ['the same square wound the other way', [...square].reverse(), 100],
    ['a concave polygon (the notch is not counted)', concave, 100 - 6 * 2],
    ['a right triangle', [[0, 0], [4, 0], [0, 3]] as Point[], 6],
    ['collinear points', [[0, 0], [1, 1], [2, 2]] as Point[], 0],
  ])('%s', (_n, poly, want) => {
    expect(polygonArea(poly)).toBe(want);
  });
});
