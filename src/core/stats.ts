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
