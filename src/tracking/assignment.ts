/**
 * Linear assignment (minimum-cost bipartite matching) with a cost limit, as ByteTrack's
 * `matching.linear_assignment` does with `lap.lapjv(cost, extend_cost=True, cost_limit=thresh)`.
 *
 * With a finite `costLimit` L, leaving a row or a column unmatched costs L/2 each, so pairing
 * (i, j) pays off exactly when `cost[i][j] < L`. That is the same as minimising
 * Σ min(cost[i][j] − L, 0) over complete assignments of the smaller side and then dropping
 * the pairs whose cost is not below L — which is what we solve, with the shortest augmenting
 * path Hungarian algorithm (Kuhn–Munkres with potentials, as in Jonker–Volgenant's
 * augmentation phase), O(n²·m) for n ≤ m. Costs that are NaN or ±Infinity never match.
 *
 * With `costLimit = Infinity` it is a plain rectangular assignment: as many allowed (finite)
 * pairs as possible, and among those the cheapest.
 */
export class LinearAssignment {
  private a = new Float64Array(0);
  private u = new Float64Array(0);
  private v = new Float64Array(0);
  private minv = new Float64Array(0);
  private p = new Int32Array(0);
  private way = new Int32Array(0);
  private used = new Uint8Array(0);

  /**
   * Solves the `rows`×`cols` row-major `cost` matrix. Writes the matched column of each row
   * to `rowToCol` (−1 if none) and the matched row of each column to `colToRow`, and returns
   * the number of matched pairs. Scratch space is kept between calls.
   */
  solve(
    cost: ArrayLike<number>,
    rows: number,
    cols: number,
    costLimit: number,
    rowToCol: Int32Array,
    colToRow: Int32Array,
  ): number {
    if (cost.length < rows * cols) {
      throw new RangeError(`LinearAssignment: cost has ${cost.length} values, expected ${rows * cols}`);
    }
    if (rowToCol.length < rows || colToRow.length < cols) {
      throw new RangeError(`LinearAssignment: output arrays are shorter than ${rows} rows / ${cols} columns`);
    }
    rowToCol.fill(-1, 0, rows);
    colToRow.fill(-1, 0, cols);
    if (rows === 0 || cols === 0) return 0;

    // Work on n ≤ m: transpose when there are more rows than columns.
    const transpose = rows > cols;
    const n = transpose ? cols : rows;
    const m = transpose ? rows : cols;
    this.reserve(n, m);
    const a = this.a;
    const limited = costLimit < Infinity;
    let maxAbs = 0;
    let forbidden = false;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < m; j++) {
        const c = transpose ? cost[j * cols + i] : cost[i * cols + j];
        let w: number;
        if (limited) {
          w = c < costLimit ? c - costLimit : 0;
        } else if (Number.isFinite(c)) {
          w = c;
          if (Math.abs(c) > maxAbs) maxAbs = Math.abs(c);
        } else {
          w = NaN;
          forbidden = true;
        }
        a[i * m + j] = w;
      }
    }
    if (forbidden) {
      // Any assignment with fewer forbidden pairs must beat any with more.
      const big = (2 * maxAbs + 1) * (n + 1);
      for (let k = 0; k < n * m; k++) if (Number.isNaN(a[k])) a[k] = big;
    }

    this.hungarian(n, m);

    let matched = 0;
    const p = this.p;
    for (let j = 1; j <= m; j++) {
      const i = p[j];
      if (i === 0) continue;
      const r = transpose ? j - 1 : i - 1;
      const c = transpose ? i - 1 : j - 1;
      const x = cost[r * cols + c];
      if (limited ? !(x < costLimit) : !Number.isFinite(x)) continue;
      rowToCol[r] = c;
      colToRow[c] = r;
      matched++;
    }
    return matched;
  }

  /** Shortest augmenting paths with potentials on the n×m matrix in `a` (1-based p/way). */
  private hungarian(n: number, m: number): void {
    const { a, u, v, minv, p, way, used } = this;
    u.fill(0, 0, n + 1);
    v.fill(0, 0, m + 1);
    p.fill(0, 0, m + 1);
    way.fill(0, 0, m + 1);
    for (let i = 1; i <= n; i++) {
      p[0] = i;
      let j0 = 0;
      minv.fill(Infinity, 0, m + 1);
      used.fill(0, 0, m + 1);
      do {
        used[j0] = 1;
        const i0 = p[j0];
        const row = (i0 - 1) * m;
        const ui0 = u[i0];
        let delta = Infinity;
        let j1 = 0;
        for (let j = 1; j <= m; j++) {
          if (used[j]) continue;
          const cur = a[row + j - 1] - ui0 - v[j];
          if (cur < minv[j]) {
            minv[j] = cur;
            way[j] = j0;
          }
          if (minv[j] < delta) {
            delta = minv[j];
            j1 = j;
          }
        }
        for (let j = 0; j <= m; j++) {
          if (used[j]) {
            u[p[j]] += delta;
            v[j] -= delta;
          } else {
            minv[j] -= delta;
          }
        }
        j0 = j1;
      } while (p[j0] !== 0);
      do {
        const j1 = way[j0];
        p[j0] = p[j1];
        j0 = j1;
      } while (j0 !== 0);
    }
  }

  private reserve(n: number, m: number): void {
    if (this.a.length < n * m) this.a = new Float64Array(n * m);
    if (this.u.length < n + 1) this.u = new Float64Array(n + 1);
    if (this.v.length < m + 1) {
      this.v = new Float64Array(m + 1);
      this.minv = new Float64Array(m + 1);
      this.p = new Int32Array(m + 1);
      this.way = new Int32Array(m + 1);
      this.used = new Uint8Array(m + 1);
    }
  }
}

export interface AssignmentResult {
  /** Matched (row, column) pairs, by row. */
  readonly matches: Array<[row: number, col: number]>;
  readonly unmatchedRows: number[];
  readonly unmatchedCols: number[];
}

/**
 * Convenience form of {@link LinearAssignment.solve} that allocates its results: pairs with
 * `cost < costLimit` only, like ByteTrack's `linear_assignment(cost, thresh)`.
 */
export function linearAssignment(
  cost: ArrayLike<number>,
  rows: number,
  cols: number,
  costLimit = Infinity,
): AssignmentResult {
  const rowToCol = new Int32Array(rows);
  const colToRow = new Int32Array(cols);
  new LinearAssignment().solve(cost, rows, cols, costLimit, rowToCol, colToRow);
  const matches: Array<[number, number]> = [];
  const unmatchedRows: number[] = [];
  const unmatchedCols: number[] = [];
  for (let r = 0; r < rows; r++) {
    if (rowToCol[r] >= 0) matches.push([r, rowToCol[r]]);
    else unmatchedRows.push(r);
  }
  for (let c = 0; c < cols; c++) if (colToRow[c] < 0) unmatchedCols.push(c);
  return { matches, unmatchedRows, unmatchedCols };
}
