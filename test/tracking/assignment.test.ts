import { describe, expect, it } from 'vitest';
import { LinearAssignment, linearAssignment } from '../../src/tracking/assignment.js';
import { mulberry32 } from './helpers.js';

const I = Infinity;

describe('linearAssignment', () => {
  it.each<[string, number[][], number, number, Array<[number, number]>]>([
    // [name, cost rows, columns, cost limit, expected matches]
    ['empty: no rows, no columns', [], 0, I, []],
    ['no rows, three columns', [], 3, I, []],
    ['three rows, no columns', [[], [], []], 0, I, []],
    ['1×1 below the limit', [[0.3]], 1, 0.8, [[0, 0]]],
    ['1×1 at the limit is not a match', [[0.8]], 1, 0.8, []],
    ['1×1 above the limit', [[0.9]], 1, 0.8, []],
    ['3×3 with a known optimum of 5', [[4, 1, 3], [2, 0, 5], [3, 2, 2]], 3, I, [[0, 1], [1, 0], [2, 2]]],
    ['greedy would take the cheapest cell and pay 101; optimum is 4', [[1, 2], [2, 100]], 2, I, [[0, 1], [1, 0]]],
    ['2×3: one column stays free', [[10, 1, 5], [1, 10, 5]], 3, I, [[0, 1], [1, 0]]],
    ['3×2: one row stays free (solved transposed)', [[10, 1], [1, 10], [5, 5]], 2, I, [[0, 1], [1, 0]]],
    ['without a limit the crossed pairs are cheapest (1.0 < 1.05)', [[0.1, 0.5], [0.5, 0.95]], 2, I, [[0, 1], [1, 0]]],
    ['with limit 0.8 one good pair beats two mediocre ones', [[0.1, 0.5], [0.5, 0.95]], 2, 0.8, [[0, 0]]],
    ['Infinity never matches, even without a limit', [[I, 1], [I, 2]], 2, I, [[0, 1]]],
    ['NaN never matches', [[NaN, 0.2], [0.3, NaN]], 2, 0.8, [[0, 1], [1, 0]]],
    ['nothing below the limit', [[0.9, 0.95], [1, 1]], 2, 0.8, []],
  ])('%s', (_name, rows, cols, limit, expected) => {
    const r = linearAssignment(rows.flat(), rows.length, cols, limit);
    expect(r.matches).toEqual(expected);
    const matchedRows = new Set(expected.map(([a]) => a));
    const matchedCols = new Set(expected.map(([, b]) => b));
    expect(r.unmatchedRows).toEqual([...Array(rows.length).keys()].filter((i) => !matchedRows.has(i)));
    expect(r.unmatchedCols).toEqual([...Array(cols).keys()].filter((j) => !matchedCols.has(j)));
  });

  it('rejects a cost array that is too short', () => {
    expect(() => linearAssignment([1, 2, 3], 2, 2)).toThrow(/cost has 3 values, expected 4/);
  });

  it('finds the optimum of random rectangular matrices (brute force check)', () => {
    const rand = mulberry32(7);
    const solver = new LinearAssignment();
    for (let trial = 0; trial < 400; trial++) {
      const rows = Math.floor(rand() * 6);
      const cols = Math.floor(rand() * 6);
      const limit = trial % 2 === 0 ? 0.8 : I;
      const cost = Array.from({ length: rows * cols }, () => (rand() < 0.1 ? I : rand()));
      const rowToCol = new Int32Array(rows);
      const colToRow = new Int32Array(cols);
      solver.solve(cost, rows, cols, limit, rowToCol, colToRow);
      const got = objective(cost, cols, Array.from(rowToCol), limit);
      expect(got).toBeCloseTo(bruteForce(cost, rows, cols, limit), 9);
      for (let r = 0; r < rows; r++) if (rowToCol[r] >= 0) expect(colToRow[rowToCol[r]]).toBe(r);
    }
  });
});

/**
 * Score of an assignment, lexicographic: matched pairs count most when there is no limit
 * (maximum cardinality over allowed pairs, then cost); with a limit, Σ (cost − limit).
 */
function objective(cost: number[], cols: number, rowToCol: number[], limit: number): number {
  let s = 0;
  let count = 0;
  rowToCol.forEach((c, r) => {
    if (c < 0) return;
    const x = cost[r * cols + c];
    if (!(limit < I ? x < limit : Number.isFinite(x))) throw new Error(`pair (${r}, ${c}) costs ${x}, not allowed`);
    s += limit < I ? x - limit : x;
    count++;
  });
  return limit < I ? s : s - count * 1000;
}

function bruteForce(cost: number[], rows: number, cols: number, limit: number): number {
  let best = Infinity;
  const used = new Array<boolean>(cols).fill(false);
  const pick: number[] = [];
  const go = (r: number) => {
    if (r === rows) {
      best = Math.min(best, objective(cost, cols, pick, limit));
      return;
    }
    pick[r] = -1;
    go(r + 1);
    for (let c = 0; c < cols; c++) {
      const x = cost[r * cols + c];
      if (used[c] || !(limit < I ? x < limit : Number.isFinite(x))) continue;
      used[c] = true;
      pick[r] = c;
      go(r + 1);
      used[c] = false;
    }
    pick[r] = -1;
  };
  go(0);
  return best === Infinity ? 0 : best;
}
