import { describe, expect, it } from 'vitest';
import { pointInPolygon, polygonArea, segmentsIntersect, selfIntersection, type Point } from '../../src/core/polygon.js';

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
