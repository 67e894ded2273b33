/**
 * Bounded per-class counts: what a class-filtered zone or line saw instead of the classes it
 * counts. `add` is O(1) and allocates only when a class is seen for the first time; at most
 * `maxClasses` classes are kept, later ones go to `other`.
 */
export class LabelTally {
  private readonly counts = new Map<number, number>();
  /** Counts of classes beyond the first `maxClasses`. */
  other = 0;

  constructor(readonly maxClasses = 32) {}

  add(classId: number): void {
    const n = this.counts.get(classId);
    if (n !== undefined) this.counts.set(classId, n + 1);
    else if (this.counts.size < this.maxClasses) this.counts.set(classId, 1);
    else this.other++;
  }

  get total(): number {
    let t = this.other;
    for (const n of this.counts.values()) t += n;
    return t;
  }

  /** The `k` most frequent classes by label, most first (ties by label), and `other` when beyond the kept classes. */
  top(k: number, label: (classId: number) => string): Record<string, number> {
    const rows = [...this.counts].map(([c, n]) => [label(c), n] as const).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const out: Record<string, number> = Object.fromEntries(rows.slice(0, k));
    const rest = rows.slice(k).reduce((s, r) => s + r[1], 0) + this.other;
    if (rest > 0) out.other = rest;
    return out;
  }
}

/**
 * Track ids already tallied by a zone, so a track counts once however many frames it is seen.
 * Bounded: past `max` ids no new track is tallied (the tally then covers the first `max` tracks).
 */
export class SeenTracks {
  private readonly ids = new Set<number>();
  constructor(readonly max = 4096) {}

  /** True the first time `id` is offered (while there is room). */
  first(id: number): boolean {
    if (this.ids.has(id) || this.ids.size >= this.max) return false;
    this.ids.add(id);
    return true;
  }

  clear(): void {
    this.ids.clear();
  }
}
