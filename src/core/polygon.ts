/** Points as [x, y] pairs. */
export type Point = readonly [number, number];

/**
 * True when (x, y) lies inside the polygon or on its boundary. Boundary points count as
 * inside on every edge: boxes are clipped to the frame, so a person cut off by the bottom of
 * the picture has feet exactly on a zone edge drawn along the frame's border (y = height),
 * and the ray casting test alone counts bottom and right edges as outside.
 */
export function pointInPolygon(x: number, y: number, poly: readonly Point[]): boolean {
  let inside = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i];
    const [xj, yj] = poly[j];
    // On edge j→i: collinear with it and within its bounding box.
    if ((xj - xi) * (y - yi) === (yj - yi) * (x - xi) && Math.min(xi, xj) <= x && x <= Math.max(xi, xj) && Math.min(yi, yj) <= y && y <= Math.max(yi, yj)) return true;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** Half a unit in the last place, and the float filter's bound on orient's rounding (Shewchuk's ccwerrboundA). */
const EPSILON = 2 ** -53;
const ORIENT_BOUND = (3 + 16 * EPSILON) * EPSILON;
/** Below this, products may have lost bits to underflow: the exact path decides. */
const TINY = 2 ** -900;

/**
 * The turn a → b → c: 1 to the left (counter-clockwise), -1 to the right, 0 on one line. Exact
 * for any finite coordinates: the float determinant where its rounding cannot change the sign,
 * else integers (BigInt). The sweep in selfIntersection is correct only with exact answers
 * (rounding could order the same two edges differently at two points).
 */
export function orient(a: Point, b: Point, c: Point): number {
  const l = (b[0] - a[0]) * (c[1] - a[1]);
  const r = (b[1] - a[1]) * (c[0] - a[0]);
  const det = l - r;
  const sum = Math.abs(l) + Math.abs(r);
  if (sum > TINY && sum < Infinity) {
    const bound = ORIENT_BOUND * sum;
    if (det > bound) return 1;
    if (-det > bound) return -1;
  }
  return exactOrient(a, b, c);
}

const F64 = new Float64Array(1);
const U64 = new BigUint64Array(F64.buffer);

/** A finite double as m · 2^e, m an integer (BigInt). */
function split(x: number): { m: bigint; e: number } {
  F64[0] = x;
  const bits = U64[0];
  const exp = Number((bits >> 52n) & 0x7ffn);
  const frac = bits & 0xfffffffffffffn;
  const m = exp === 0 ? frac : frac | 0x10000000000000n;
  return { m: x < 0 ? -m : m, e: (exp === 0 ? 1 : exp) - 1075 };
}

function exactOrient(a: Point, b: Point, c: Point): number {
  // Whole numbers below 2^26 (pixels): the float determinant is exact.
  if ([a[0], a[1], b[0], b[1], c[0], c[1]].every((v) => Number.isInteger(v) && Math.abs(v) < 2 ** 26)) {
    const det = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    return det > 0 ? 1 : det < 0 ? -1 : 0;
  }
  const parts = [a[0], a[1], b[0], b[1], c[0], c[1]].map(split);
  const e = Math.min(...parts.map((p) => p.e));
  const [ax, ay, bx, by, cx, cy] = parts.map((p) => p.m << BigInt(p.e - e));
  const det = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
  return det > 0n ? 1 : det < 0n ? -1 : 0;
}

function onSegment(a: Point, b: Point, p: Point): boolean {
  return Math.min(a[0], b[0]) <= p[0] && p[0] <= Math.max(a[0], b[0]) && Math.min(a[1], b[1]) <= p[1] && p[1] <= Math.max(a[1], b[1]);
}

/** True when segments ab and cd share a point. */
export function segmentsIntersect(a: Point, b: Point, c: Point, d: Point): boolean {
  const o1 = orient(a, b, c), o2 = orient(a, b, d), o3 = orient(c, d, a), o4 = orient(c, d, b);
  if (o1 !== o2 && o3 !== o4) return true;
  return (o1 === 0 && onSegment(a, b, c)) || (o2 === 0 && onSegment(a, b, d)) || (o3 === 0 && onSegment(c, d, a)) || (o4 === 0 && onSegment(c, d, b));
}

/** Points in sweep order: by x, then y. */
const byXY = (p: Point, q: Point) => p[0] - q[0] || p[1] - q[1];

/**
 * The first pair of non-adjacent edges that cross or touch, as edge indices (edge i runs from
 * point i to point i + 1), or undefined for a simple polygon. A polygon of n points takes
 * O(n log n) comparisons plus a splice per point (a sweep line: Shamos and Hoey), where testing
 * every pair took 13.6 s for 40 000 points; the schema also caps a zone's points (MAX_ZONE_POINTS).
 *
 * The sweep moves across the points from left to right, keeping the edges it crosses ordered
 * bottom to top; two edges that meet are neighbours in that order at some point before they
 * meet (or pass through the same point), and are tested then. Adjacent edges share a point and
 * do not count, unless the second doubles back along the first: for four points or more that
 * always means a non-adjacent pair touches too (the edge after, or the one before, starts or ends
 * on the other), which is the pair returned, as testing every pair found.
 */
export function selfIntersection(poly: readonly Point[]): [number, number] | undefined {
  const n = poly.length;
  if (n < 4) return undefined; // every two edges of a triangle are adjacent
  const next = (i: number) => (i + 1 === n ? 0 : i + 1);
  // Each edge with its left end (by x, then y) first.
  const lo: Point[] = new Array(n);
  const hi: Point[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const p = poly[i];
    const q = poly[next(i)];
    if (byXY(p, q) <= 0) (lo[i] = p), (hi[i] = q);
    else (lo[i] = q), (hi[i] = p);
  }
  const adjacent = (i: number, j: number) => next(i) === j || next(j) === i;
  /** Edge j starts where edge i ends: does it go back along it? */
  const foldsBack = (i: number, j: number) => {
    const p = poly[i];
    const q = poly[j];
    const r = poly[next(j)];
    if (byXY(p, q) === 0 || byXY(r, q) === 0 || orient(p, q, r) !== 0) return false;
    return p[0] !== q[0] ? p[0] > q[0] === r[0] > q[0] : p[1] > q[1] === r[1] > q[1];
  };
  const meet = (i: number, j: number) => (adjacent(i, j) ? (next(i) === j ? foldsBack(i, j) : foldsBack(j, i)) : segmentsIntersect(poly[i], poly[next(i)], poly[j], poly[next(j)]));
  /** The pair to name: a non-adjacent one (see above). */
  const found = (i: number, j: number): [number, number] => {
    if (adjacent(i, j)) {
      const [a, b] = next(i) === j ? [i, j] : [j, i]; // b starts where a ends, and doubles back
      const before = (a + n - 1) % n;
      const after = next(b);
      if (segmentsIntersect(poly[a], poly[next(a)], poly[after], poly[next(after)])) [i, j] = [a, after];
      else if (segmentsIntersect(poly[before], poly[next(before)], poly[b], poly[next(b)])) [i, j] = [before, b];
    }
    return i < j ? [i, j] : [j, i];
  };

  const starts = Array.from({ length: n }, (_, i) => i).sort((i, j) => byXY(lo[i], lo[j]));
  const points = [...lo, ...hi].sort(byXY);
  const status: number[] = []; // edges crossing the sweep line, bottom to top
  let s = 0;
  for (let k = 0; k < points.length; k++) {
    const p = points[k];
    if (k > 0 && byXY(points[k - 1], p) === 0) continue;
    // The first edge that p is on or below; from there, the edges through p (ending there, or,
    // were the polygon not simple, passing through it).
    let a = 0;
    let b = status.length;
    while (a < b) {
      const m = (a + b) >> 1;
      if (orient(lo[status[m]], hi[status[m]], p) > 0) a = m + 1;
      else b = m;
    }
    let end = a;
    while (end < status.length && orient(lo[status[end]], hi[status[end]], p) === 0) end++;
    const through = status.slice(a, end);
    const begin: number[] = [];
    while (s < n && byXY(lo[starts[s]], p) === 0) begin.push(starts[s++]);
    // Every two edges at p: non-adjacent ones touch here.
    const here = [...through, ...begin];
    for (let i = 0; i < here.length; i++) for (let j = i + 1; j < here.length; j++) if (meet(here[i], here[j])) return found(here[i], here[j]);
    // No two edges meet at p, so at most one ends here, or two adjacent ones do; an edge
    // passing through p would have met the one that ends or starts at p.
    if (through.some((e) => byXY(hi[e], p) !== 0)) return bruteForce(poly); // unreachable; kept correct rather than fast
    // The edges starting at p (not those of no length), bottom to top just right of p.
    const rising = begin.filter((e) => byXY(hi[e], p) !== 0).sort((e, f) => orient(p, hi[f], hi[e]));
    status.splice(a, through.length, ...rising);
    const below = status[a - 1];
    const above = status[a + rising.length];
    if (rising.length === 0) {
      if (below !== undefined && above !== undefined && meet(below, above)) return found(below, above);
    } else {
      if (below !== undefined && meet(below, rising[0])) return found(below, rising[0]);
      if (above !== undefined && meet(rising[rising.length - 1], above)) return found(rising[rising.length - 1], above);
    }
  }
  return undefined;
}

/** Every pair of non-adjacent edges (quadratic): the sweep's fallback. */
function bruteForce(poly: readonly Point[]): [number, number] | undefined {
  const n = poly.length;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      if (j === i + 1 || (i === 0 && j === n - 1)) continue; // adjacent edges share a vertex
      if (segmentsIntersect(poly[i], poly[(i + 1) % n], poly[j], poly[(j + 1) % n])) return [i, j];
    }
  }
  return undefined;
}

/** Shoelace area (absolute). */
export function polygonArea(poly: readonly Point[]): number {
  let s = 0;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) s += (poly[j][0] + poly[i][0]) * (poly[j][1] - poly[i][1]);
  return Math.abs(s) / 2;
}
