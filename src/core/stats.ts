/** The last `capacity` samples of a measurement; percentiles are computed on demand (not per sample). */
export class SampleWindow {
  private readonly buf: Float64Array;
  private next = 0;
  private filled = 0;

  constructor(readonly capacity = 1024) {
    this.buf = new Float64Array(capacity);
  }

  add(v: number): void {
    this.buf[this.next] = v;
    this.next = (this.next + 1) % this.capacity;
    if (this.filled < this.capacity) this.filled++;
  }

  get count(): number {
    return this.filled;
  }

  /** Sorted copy of the samples held. */
  sorted(): Float64Array {
    return this.buf.slice(0, this.filled).sort();
  }

  percentile(p: number): number {
    return percentileOfSorted(this.sorted(), p);
  }

  clear(): void {
    this.next = 0;
    this.filled = 0;
  }
}

/**
 * Every sample of a measurement, for percentiles over a whole run in bounded memory: counts per
 * bucket, the buckets 2 % apart on a log scale (a percentile is within 1 % of the nearest-rank
 * sample; values at or below 0.001 share the lowest bucket). Latencies of one source fill a few
 * hundred buckets at most, whatever the run's length.
 */
export class RunHistogram {
  private readonly buckets = new Map<number, number>();
  private n = 0;

  add(v: number): void {
    if (Number.isNaN(v)) return;
    const i = Math.floor(Math.log(Math.max(v, RUN_HISTOGRAM_FLOOR)) / LN_STEP);
    this.buckets.set(i, (this.buckets.get(i) ?? 0) + 1);
    this.n++;
  }

  get count(): number {
    return this.n;
  }

  /** Nearest-rank percentile (p in 0..100), as its bucket's geometric middle; NaN when empty. */
  percentile(p: number): number {
    if (this.n === 0) return NaN;
    const rank = Math.min(this.n - 1, Math.max(0, Math.ceil((p / 100) * this.n) - 1));
    let seen = 0;
    for (const i of [...this.buckets.keys()].sort((a, b) => a - b)) {
      seen += this.buckets.get(i)!;
      if (seen > rank) return Math.exp((i + 0.5) * LN_STEP);
    }
    return NaN; // not reached
  }
}

const LN_STEP = Math.log(1.02);
const RUN_HISTOGRAM_FLOOR = 1e-3;

/** Nearest-rank percentile (p in 0..100) of ascending samples; NaN when empty. */
export function percentileOfSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const rank = Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1));
  return sorted[rank];
}

export function percentiles(samples: readonly number[] | Float64Array, ps: readonly number[]): number[] {
  const s = Float64Array.from(samples).sort();
  return ps.map((p) => percentileOfSorted(s, p));
}
