/**
 * Token buckets by key (an address): each holds up to `burst` tokens and gains `perSecond` a
 * second; an event of a key takes one of its tokens, or is refused while it has none. Time is
 * the caller's (a monotonic clock in ms, a fake one in tests). Memory is bounded: a bucket that
 * has filled up again is the same as none and is let go (prune), and beyond `maxKeys` the one
 * used longest ago is.
 */
export class KeyedTokenBuckets {
  /** Insertion order is use order: a bucket moves to the end when it is used. */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly burst: number,
    readonly perSecond: number,
    private readonly maxKeys = 4096,
  ) {}

  /** Takes a token of `key` at `nowMs`: 0 when it was taken, else the ms until one will be there (≥ 1). */
  take(key: string, nowMs: number): number {
    let b = this.buckets.get(key);
    if (b) {
      this.buckets.delete(key);
      b.tokens = this.level(b, nowMs);
      b.at = Math.max(b.at, nowMs);
    } else {
      if (this.buckets.size >= this.maxKeys) this.prune(nowMs);
      if (this.buckets.size >= this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
      b = { tokens: this.burst, at: nowMs };
    }
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - b.tokens) * 1000) / this.perSecond - 1e-9)); // (less float noise: 1.0000000001 ms is 1)
  }

  /** Lets go of every bucket that is full again at `nowMs`. */
  prune(nowMs: number): void {
    for (const [key, b] of this.buckets) if (this.level(b, nowMs) >= this.burst) this.buckets.delete(key);
  }

  /** Buckets held (for tests and figures). */
  get size(): number {
    return this.buckets.size;
  }

  private level(b: { tokens: number; at: number }, nowMs: number): number {
    // A clock that went back adds nothing (never a negative refill).
    return Math.min(this.burst, b.tokens + (Math.max(0, nowMs - b.at) * this.perSecond) / 1000);
  }
}
