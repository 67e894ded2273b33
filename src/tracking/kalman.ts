/**
 * Constant-velocity Kalman filter on (cx, cy, a, h) — box centre, aspect ratio w/h, height —
 * with the noise model of the ByteTrack reference (`KalmanFilter` in yolox/tracker), extended
 * to a time step `dt` measured in nominal frame periods instead of a fixed 1.
 *
 * State: mean `[cx, cy, a, h, vcx, vcy, va, vh]`, velocities per nominal frame period.
 *
 * The model is separable: the motion matrix couples each coordinate only with its own
 * velocity, and the process noise, measurement matrix, measurement noise and initial
 * covariance are all diagonal. The 8×8 covariance of the reference therefore stays
 * block-diagonal forever, with one 2×2 block per coordinate, and we keep just those blocks
 * (`cov[3k] = var(x_k)`, `cov[3k+1] = cov(x_k, v_k)`, `cov[3k+2] = var(v_k)` for k = 0..3).
 * The numbers are the ones the 8×8 reference computes (see `kalmanCovariance8`), without
 * matrix products or a Cholesky solve on the hot path.
 */

/** Position noise std per unit of box height (reference: 1/20). */
export const STD_WEIGHT_POSITION = 1 / 20;
/** Velocity noise std per unit of box height (reference: 1/160). */
export const STD_WEIGHT_VELOCITY = 1 / 160;

export interface KalmanState {
  /** `[cx, cy, a, h, vcx, vcy, va, vh]`; velocities per nominal frame period. */
  readonly mean: Float64Array;
  /** Four 2×2 blocks `[var x, cov(x,v), var v]` for cx, cy, a, h (12 numbers). */
  readonly cov: Float64Array;
}

export function createKalmanState(): KalmanState {
  return { mean: new Float64Array(8), cov: new Float64Array(12) };
}

/** Starts a track at measurement (cx, cy, a, h) with zero velocity (reference `initiate`). */
export function kalmanInitiate(s: KalmanState, cx: number, cy: number, a: number, h: number): void {
  const m = s.mean;
  m[0] = cx;
  m[1] = cy;
  m[2] = a;
  m[3] = h;
  m[4] = m[5] = m[6] = m[7] = 0;
  const p = 2 * STD_WEIGHT_POSITION * h;
  const v = 10 * STD_WEIGHT_VELOCITY * h;
  setBlock(s.cov, 0, p * p, v * v);
  setBlock(s.cov, 1, p * p, v * v);
  setBlock(s.cov, 2, 1e-2 * 1e-2, 1e-5 * 1e-5);
  setBlock(s.cov, 3, p * p, v * v);
}

/**
 * The same state in a picture scaled by `sx` horizontally and `sy` vertically (a camera that
 * changed its resolution): positions and their velocities scale with their axis, the aspect
 * ratio w/h by sx/sy, and each coordinate's covariance block by the square of its factor.
 */
export function kalmanScale(s: KalmanState, sx: number, sy: number): void {
  const f = [sx, sy, sx / sy, sy];
  for (let k = 0; k < 4; k++) {
    s.mean[k] *= f[k];
    s.mean[k + 4] *= f[k];
    const f2 = f[k] * f[k];
    s.cov[3 * k] *= f2;
    s.cov[3 * k + 1] *= f2;
    s.cov[3 * k + 2] *= f2;
  }
}

/**
 * Moves the state `dt` nominal frame periods ahead: x += dt·v, P = F P Fᵀ + dt·Q.
 *
 * Q is the reference's per-frame process noise (std 1/20 of the height for positions, 1/160
 * for velocities, taken at the current height). Scaling its variance linearly with `dt`
 * treats the noise as a random walk: a 4-period gap adds as much uncertainty as four frames
 * would, and `dt = 1` reproduces the reference exactly. `dt <= 0` leaves the state alone.
 */
export function kalmanPredict(s: KalmanState, dt: number): void {
  if (!(dt > 0)) return;
  const m = s.mean;
  const c = s.cov;
  const h = m[3];
  const qp = STD_WEIGHT_POSITION * h * (STD_WEIGHT_POSITION * h) * dt;
  const qv = STD_WEIGHT_VELOCITY * h * (STD_WEIGHT_VELOCITY * h) * dt;
  const qpA = 1e-2 * 1e-2 * dt;
  const qvA = 1e-5 * 1e-5 * dt;
  for (let k = 0; k < 4; k++) {
    m[k] += dt * m[k + 4];
    const o = 3 * k;
    const pxx = c[o];
    const pxv = c[o + 1];
    const pvv = c[o + 2];
    const isAspect = k === 2;
    c[o] = pxx + 2 * dt * pxv + dt * dt * pvv + (isAspect ? qpA : qp);
    c[o + 1] = pxv + dt * pvv;
    c[o + 2] = pvv + (isAspect ? qvA : qv);
  }
}

/**
 * Corrects the state with measurement (cx, cy, a, h) (reference `update`): measurement noise
 * std is 1/20 of the predicted height for cx, cy, h and 0.1 for the aspect ratio.
 */
export function kalmanUpdate(s: KalmanState, cx: number, cy: number, a: number, h: number): void {
  const m = s.mean;
  const r = STD_WEIGHT_POSITION * m[3] * (STD_WEIGHT_POSITION * m[3]);
  correct(s, 0, cx, r);
  correct(s, 1, cy, r);
  correct(s, 2, a, 1e-1 * 1e-1);
  correct(s, 3, h, r);
}

/** One coordinate's 2×2 block: S = P_xx + r, K = [P_xx, P_xv] / S, P -= K S Kᵀ. */
function correct(s: KalmanState, k: number, z: number, r: number): void {
  const m = s.mean;
  const c = s.cov;
  const o = 3 * k;
  const pxx = c[o];
  const pxv = c[o + 1];
  const pvv = c[o + 2];
  const sInv = 1 / (pxx + r);
  const kx = pxx * sInv;
  const kv = pxv * sInv;
  const y = z - m[k];
  m[k] += kx * y;
  m[k + 4] += kv * y;
  c[o] = pxx - kx * pxx;
  c[o + 1] = pxv - kx * pxv;
  c[o + 2] = pvv - kv * pxv;
}

function setBlock(c: Float64Array, k: number, varX: number, varV: number): void {
  c[3 * k] = varX;
  c[3 * k + 1] = 0;
  c[3 * k + 2] = varV;
}

/** The full 8×8 covariance (row-major), as the reference would hold it. For tests and debugging. */
export function kalmanCovariance8(s: KalmanState, out: Float64Array = new Float64Array(64)): Float64Array {
  out.fill(0);
  for (let k = 0; k < 4; k++) {
    const o = 3 * k;
    out[k * 8 + k] = s.cov[o];
    out[k * 8 + k + 4] = s.cov[o + 1];
    out[(k + 4) * 8 + k] = s.cov[o + 1];
    out[(k + 4) * 8 + k + 4] = s.cov[o + 2];
  }
  return out;
}

/** Writes the state's box as x1 y1 x2 y2 into `out` at box index `i`. */
export function kalmanBoxXyxy(s: KalmanState, out: Float32Array | Float64Array, i: number): void {
  const m = s.mean;
  const w = m[2] * m[3];
  const o = i * 4;
  out[o] = m[0] - w / 2;
  out[o + 1] = m[1] - m[3] / 2;
  out[o + 2] = m[0] + w / 2;
  out[o + 3] = m[1] + m[3] / 2;
}
