import { describe, expect, it } from 'vitest';
import {
  createKalmanState,
  kalmanBoxXyxy,
  kalmanCovariance8,
  kalmanInitiate,
  kalmanPredict,
  kalmanUpdate,
} from '../../src/tracking/kalman.js';

/** The ByteTrack reference filter written out with plain 8×8 matrices, for comparison. */
class Reference {
  mean: number[];
  cov: number[][];
  constructor(cx: number, cy: number, a: number, h: number) {
    this.mean = [cx, cy, a, h, 0, 0, 0, 0];
    const std = [2 * h / 20, 2 * h / 20, 1e-2, 2 * h / 20, 10 * h / 160, 10 * h / 160, 1e-5, 10 * h / 160];
    this.cov = diag(std.map((s) => s * s));
  }
  predict(dt = 1): void {
    const h = this.mean[3];
    const std = [h / 20, h / 20, 1e-2, h / 20, h / 160, h / 160, 1e-5, h / 160];
    const F = eye(8);
    for (let i = 0; i < 4; i++) F[i][i + 4] = dt;
    this.mean = mulVec(F, this.mean);
    this.cov = add(mul(mul(F, this.cov), transpose(F)), diag(std.map((s) => s * s * dt)));
  }
  update(z: number[]): void {
    const h = this.mean[3];
    const std = [h / 20, h / 20, 1e-1, h / 20];
    const H = eye(8).slice(0, 4);
    const S = add(mul(mul(H, this.cov), transpose(H)), diag(std.map((s) => s * s)));
    const K = mul(mul(this.cov, transpose(H)), inverse(S));
    const projected = mulVec(H, this.mean);
    const innovation = z.map((v, i) => v - projected[i]);
    const corr = mulVec(K, innovation);
    this.mean = this.mean.map((v, i) => v + corr[i]);
    this.cov = sub(this.cov, mul(mul(K, S), transpose(K)));
  }
}

describe('Kalman filter (cx, cy, a, h)', () => {
  it('initiate: measured position, zero velocity, reference variances', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    expect(Array.from(s.mean)).toEqual([100, 200, 0.5, 80, 0, 0, 0, 0]);
    const P = kalmanCovariance8(s);
    // Diagonal: (2·h/20)² = 64 for positions, (10·h/160)² = 25 for velocities.
    close([0, 1, 2, 3, 4, 5, 6, 7].map((i) => P[i * 8 + i]), [64, 64, 1e-4, 64, 25, 25, 1e-10, 25]);
    expect(P.filter((_, k) => k % 9 !== 0).every((v) => v === 0)).toBe(true);
  });

  it('predict one frame: x += v, P = F P Fᵀ + Q worked by hand', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    s.mean[4] = 3; // vcx, px per frame
    kalmanPredict(s, 1);
    close([s.mean[0]], [103]);
    // var(cx) = 64 + 2·0 + 25 + (80/20)² = 105; cov(cx, vcx) = 0 + 25; var(vcx) = 25 + (80/160)² = 25.25.
    close(s.cov.subarray(0, 3), [105, 25, 25.25]);
  });

  it('predict over dt frame periods moves dt times as far and adds dt times the process noise', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    s.mean[4] = 3;
    s.mean[5] = -2;
    kalmanPredict(s, 4);
    close([s.mean[0], s.mean[1]], [112, 192]);
    // var(cx) = 64 + 16·25 + 4·16 = 528; cov = 4·25 = 100; var(v) = 25 + 4·0.25 = 26.
    close(s.cov.subarray(0, 3), [528, 100, 26]);
  });

  it.each([
    // [name, dt]
    ['no time elapsed', 0],
    ['time went backwards', -3],
  ])('predict with %s changes nothing', (_name, dt) => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    s.mean[4] = 3;
    const before = [Array.from(s.mean), Array.from(s.cov)];
    kalmanPredict(s, dt);
    expect([Array.from(s.mean), Array.from(s.cov)]).toEqual(before);
  });

  it('update one coordinate by hand: gain P/(P+R), variance shrinks', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    kalmanPredict(s, 1); // var(cx) 105, cov 25, var(v) 25.25
    kalmanUpdate(s, 110, 200, 0.5, 80);
    // R = (80/20)² = 16, S = 121, K = [105, 25] / 121.
    expect(s.mean[0]).toBeCloseTo(100 + (105 / 121) * 10, 12);
    expect(s.mean[4]).toBeCloseTo((25 / 121) * 10, 12);
    expect(s.cov[0]).toBeCloseTo(105 - (105 * 105) / 121, 12);
    expect(s.cov[1]).toBeCloseTo(25 - (105 * 25) / 121, 12);
    expect(s.cov[2]).toBeCloseTo(25.25 - (25 * 25) / 121, 12);
    // Measured exactly where predicted: no correction, but the variance still shrinks.
    expect(s.mean[1]).toBe(200);
    expect(s.cov[3]).toBeLessThan(105);
  });

  it('matches the 8×8 reference over a sequence of predicts (various dt) and updates', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 50, 60, 0.4, 120);
    const ref = new Reference(50, 60, 0.4, 120);
    const steps: Array<[number, number[] | null]> = [
      // [dt, measurement or null for a missed frame]
      [1, [55, 61, 0.41, 121]],
      [1, [61, 62, 0.4, 122]],
      [2, [72, 64, 0.39, 125]],
      [1, null],
      [3.5, [95, 70, 0.42, 130]],
      [0.5, [97, 70.5, 0.42, 130.5]],
    ];
    for (const [dt, z] of steps) {
      kalmanPredict(s, dt);
      ref.predict(dt);
      if (z) {
        kalmanUpdate(s, z[0], z[1], z[2], z[3]);
        ref.update(z);
      }
      Array.from(s.mean).forEach((v, i) => expect(v).toBeCloseTo(ref.mean[i], 9));
      const P = kalmanCovariance8(s);
      for (let i = 0; i < 8; i++) for (let j = 0; j < 8; j++) expect(P[i * 8 + j]).toBeCloseTo(ref.cov[i][j], 9);
    }
  });

  it('learns the velocity of a box moving at constant speed', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 0, 0, 0.5, 100);
    for (let k = 1; k <= 30; k++) {
      kalmanPredict(s, 1);
      kalmanUpdate(s, 6 * k, -2 * k, 0.5, 100);
    }
    expect(s.mean[4]).toBeCloseTo(6, 1);
    expect(s.mean[5]).toBeCloseTo(-2, 1);
  });

  it('box out is the state as x1 y1 x2 y2', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 100, 200, 0.5, 80);
    const out = new Float64Array(8);
    kalmanBoxXyxy(s, out, 1);
    expect(Array.from(out)).toEqual([0, 0, 0, 0, 80, 160, 120, 240]);
  });
});

function close(actual: ArrayLike<number>, expected: number[]): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((v, i) => expect(actual[i]).toBeCloseTo(v, 9));
}
function eye(n: number): number[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
}
function diag(v: number[]): number[][] {
  return v.map((x, i) => v.map((_, j) => (i === j ? x : 0)));
}
function transpose(A: number[][]): number[][] {
  return A[0].map((_, j) => A.map((row) => row[j]));
}
function mul(A: number[][], B: number[][]): number[][] {
  return A.map((row) => B[0].map((_, j) => row.reduce((s, a, k) => s + a * B[k][j], 0)));
}
function mulVec(A: number[][], x: number[]): number[] {
  return A.map((row) => row.reduce((s, a, k) => s + a * x[k], 0));
}
function add(A: number[][], B: number[][]): number[][] {
  return A.map((row, i) => row.map((a, j) => a + B[i][j]));
}
function sub(A: number[][], B: number[][]): number[][] {
  return A.map((row, i) => row.map((a, j) => a - B[i][j]));
}
/** Gauss–Jordan inverse with partial pivoting. */
function inverse(A: number[][]): number[][] {
  const n = A.length;
  const M = A.map((row, i) => [...row, ...eye(n)[i]]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r][c]) > Math.abs(M[p][c])) p = r;
    [M[c], M[p]] = [M[p], M[c]];
    const d = M[c][c];
    for (let j = 0; j < 2 * n; j++) M[c][j] /= d;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = M[r][c];
      for (let j = 0; j < 2 * n; j++) M[r][j] -= f * M[c][j];
    }
  }
  return M.map((row) => row.slice(n));
}
