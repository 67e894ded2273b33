/** Per-key cooldown: `allow(key, t)` is true at most once per `cooldownMs` for each key. Keys unused for a while are forgotten. */
export class Cooldown {
  private readonly last = new Map<string, number>();
  constructor(readonly cooldownMs: number) {}

  allow(key: string, tMs: number): boolean {
    const prev = this.last.get(key);
    // `tMs` is when the thing alerted happened (SourceAnalyzer: an event's atMs, up to a second or
    // more before its frame), which may come before the last one allowed: within the cooldown either
    // side, held back; the key goes on from the later of the two. Before, any earlier time was held
    // back (under a cooldown of 0 too, the default), and one allowed set the key back.
    if (prev !== undefined && tMs - prev < this.cooldownMs && prev - tMs < this.cooldownMs) return false;
    if (prev === undefined || tMs > prev) this.last.set(key, tMs);
    if (this.last.size > 10_000) {
      for (const [k, t] of this.last) if (tMs - t >= this.cooldownMs) this.last.delete(k);
    }
    return true;
  }

  /** Whether key `key` has an alert on record (allowed once, not forgotten since). */
  has(key: string): boolean {
    return this.last.has(key);
  }

  /** Key `key` counts as allowed at `tMs` (the later of that and where it stands): a cooldown carried over from another chain of the source (SourceAnalyzer.takeOver). */
  seed(key: string, tMs: number): void {
    const prev = this.last.get(key);
    if (prev === undefined || prev < tMs) this.last.set(key, tMs);
  }

  /** The keys and their last allowed times (SourceAnalyzer.handover). */
  entries(): IterableIterator<[string, number]> {
    return this.last.entries();
  }

  /**
   * Key `to` goes on from where key `from` stands (the later of the two): the same object under
   * a new key (a zone stay taken over by a track's new id) is not alerted again within the
   * cooldown of its alert under the old one.
   */
  carry(from: string, to: string): void {
    const t = this.last.get(from);
    if (t === undefined) return;
    const prev = this.last.get(to);
    if (prev === undefined || prev < t) this.last.set(to, t);
  }
}
