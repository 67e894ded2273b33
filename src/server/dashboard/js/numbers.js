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

/** Milliseconds from stamp `from` to the message's hand-off: published (emitted when published is absent). */
function toHandOff(stamps, from) {
  if (!stamps || !isNum(from)) return NaN;
  const end = isNum(stamps.published) && stamps.published > 0 ? stamps.published : stamps.emitted;
  return isNum(end) ? Math.max(0, end - from) : NaN;
}

/** End-to-end latency of one message: from `produced` at the source (`captured` in messages without it) to the hand-off. */
export function e2eOf(stamps) {
  return toHandOff(stamps, stamps && isNum(stamps.produced) ? stamps.produced : stamps?.captured);
}

/** The pipeline's part of it: from `captured` (ffmpeg delivered the frame) to the hand-off. */
export function pipelineOf(stamps) {
  return toHandOff(stamps, stamps?.captured);
}
