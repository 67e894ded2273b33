/**
 * What a source's zones and lines counted over the run, for the end-of-run summary and
 * /api/sources: entries, exits, crossings per direction, alerts per rule, and, for a
 * class-filtered zone or line that counted nothing, the labels seen there instead.
 */

/** How many labels "seen instead" lists (the rest are summed under `other`). */
export const SEEN_INSTEAD_TOP = 5;

export interface ZoneReport {
  /** The zone's class filter, when it has one. */
  classes?: string[];
  entered: number;
  exited: number;
  /** Tracks inside now. */
  occupancy: number;
  /** Entries taken as id switches (reentrySuppressMs) and not counted. */
  reidentified: number;
  /** Alerts raised by the rules on this zone, by rule id. */
  alerts: Record<string, number>;
  /**
   * Filtered zones that counted no entry: tracks of other classes whose anchor was inside
   * on at least one frame, each track once, by label (top 5, then `other`).
   */
  seenInstead?: Record<string, number>;
}

export interface LineReport {
  classes?: string[];
  /** Crossings in each direction, all counted classes together. */
  in: number;
  out: number;
  /** The same by class label. */
  byClass: { in: Record<string, number>; out: Record<string, number> };
  /** Alerts raised by the rules on this line, by rule id. */
  alerts: Record<string, number>;
  /**
   * Filtered lines that counted no crossing: crossings by tracks of other classes (same
   * margin and segment test), by label (top 5, then `other`).
   */
  seenInstead?: Record<string, number>;
}

export interface SourceAnalyticsReport {
  zones: Record<string, ZoneReport>;
  lines: Record<string, LineReport>;
  /** Alerts raised per rule id, every rule of the source (0 included). */
  alerts: Record<string, number>;
  /** One sentence per class-filtered zone or line that counted nothing, saying what was seen there instead. */
  notes: string[];
}

const list = (seen: Record<string, number>) =>
  Object.entries(seen)
    .map(([label, n]) => `${label} ×${n}`)
    .join(', ');

/** The notes of a report: for each filtered zone or line that counted nothing, what was seen instead. */
export function explain(zones: Record<string, ZoneReport>, lines: Record<string, LineReport>): string[] {
  const notes: string[] = [];
  for (const [id, z] of Object.entries(zones)) {
    if (!z.seenInstead) continue;
    const what = Object.keys(z.seenInstead).length ? `seen inside instead: ${list(z.seenInstead)}` : 'no tracked object of another class was inside it either';
    notes.push(`zone '${id}' (classes: ${z.classes!.join(', ')}) counted 0 entries; ${what}`);
  }
  for (const [id, l] of Object.entries(lines)) {
    if (!l.seenInstead) continue;
    const what = Object.keys(l.seenInstead).length ? `seen crossing instead: ${list(l.seenInstead)}` : 'no tracked object of another class crossed it either';
    notes.push(`line '${id}' (classes: ${l.classes!.join(', ')}) counted 0; ${what}`);
  }
  return notes;
}

/** `a` and `b` added up, key by key (built as own properties: a key may be `__proto__`). */
function addCounts(a: Record<string, number> | undefined, b: Record<string, number> | undefined): Record<string, number> {
  const sum = new Map(Object.entries(a ?? {}));
  for (const [k, n] of Object.entries(b ?? {})) sum.set(k, (sum.get(k) ?? 0) + n);
  return Object.fromEntries(sum);
}

/**
 * What two runs of one source counted, added up (a worker's camera attached again: what its
 * earlier attachments counted, `before`, and what the one that ended counted, `last`): entries,
 * exits, crossings and alerts summed; occupancy 0 (the source is no longer watched); the
 * labels seen instead summed, kept only while the sum counted nothing; the notes said again.
 * The zones, lines and rules of either config are kept.
 */
export function addReports(before: SourceAnalyticsReport | undefined, last: SourceAnalyticsReport): SourceAnalyticsReport {
  const zones = new Map(Object.entries(before?.zones ?? {}).map(([id, z]): [string, ZoneReport] => [id, { ...z, occupancy: 0 }]));
  for (const [id, z] of Object.entries(last.zones)) {
    const b = zones.get(id);
    const entered = (b?.entered ?? 0) + z.entered;
    const seen = b?.seenInstead || z.seenInstead ? addCounts(b?.seenInstead, z.seenInstead) : undefined;
    zones.set(id, {
      ...(z.classes ? { classes: z.classes } : {}),
      entered,
      exited: (b?.exited ?? 0) + z.exited,
      occupancy: 0,
      reidentified: (b?.reidentified ?? 0) + z.reidentified,
      alerts: addCounts(b?.alerts, z.alerts),
      ...(seen && z.classes && entered === 0 ? { seenInstead: seen } : {}),
    });
  }
  const lines = new Map(Object.entries(before?.lines ?? {}));
  for (const [id, l] of Object.entries(last.lines)) {
    const b = lines.get(id);
    const inn = (b?.in ?? 0) + l.in;
    const out = (b?.out ?? 0) + l.out;
    const seen = b?.seenInstead || l.seenInstead ? addCounts(b?.seenInstead, l.seenInstead) : undefined;
    lines.set(id, {
      ...(l.classes ? { classes: l.classes } : {}),
      in: inn,
      out,
      byClass: { in: addCounts(b?.byClass.in, l.byClass.in), out: addCounts(b?.byClass.out, l.byClass.out) },
      alerts: addCounts(b?.alerts, l.alerts),
      ...(seen && l.classes && inn + out === 0 ? { seenInstead: seen } : {}),
    });
  }
  const z = Object.fromEntries(zones), l = Object.fromEntries(lines);
  return { zones: z, lines: l, alerts: addCounts(before?.alerts, last.alerts), notes: explain(z, l) };
}
