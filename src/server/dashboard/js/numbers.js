/** Number checks and order statistics over plain arrays. */

export const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

/** The q-th percentile (nearest rank) of an ascending array; NaN when empty. */
export function percentile(sorted, q) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1));
  return sorted[i];
}

export function median(values) {
  return percentile(values.slice().sort((a, b) => a - b), 50);
}

/** The sum of an object's numeric values (line counts by label). */
export function sumCounts(obj) {
  let n = 0;
  if (obj && typeof obj === 'object') for (const v of Object.values(obj)) if (isNum(v)) n += v;
  return n;
}

/** e2e of one message: published − captured (emitted − captured when published is absent). */
export function e2eOf(stamps) {
  if (!stamps || !isNum(stamps.captured)) return NaN;
  const end = isNum(stamps.published) && stamps.published > 0 ? stamps.published : stamps.emitted;
  return isNum(end) ? Math.max(0, end - stamps.captured) : NaN;
}
