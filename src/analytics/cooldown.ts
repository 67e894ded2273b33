/** Per-key cooldown: `allow(key, t)` is true at most once per `cooldownMs` for each key. Keys unused for a while are forgotten. */
export class Cooldown {
  private readonly last = new Map<string, number>();
  constructor(readonly cooldownMs: number) {}

  allow(key: string, tMs: number): boolean {
    const prev = this.last.get(key);
    if (prev !== undefined && tMs - prev < this.cooldownMs) return false;
    this.last.set(key, tMs);
    if (this.last.size > 10_000) {
      for (const [k, t] of this.last) if (tMs - t >= this.cooldownMs) this.last.delete(k);
    }
    return true;
  }
}
