/** The pipeline stages shown per frame, and how each one's duration follows from the v1 stamps. */
import { isNum } from './numbers.js';

export const DEFAULT_STAGES = ['source', 'wait', 'preprocess', 'queue', 'infer', 'postprocess', 'emit'];

/** Each stage's duration from the v1 stamps; the same definitions as `argus bench`. */
export const STAGE_SPANS = {
  source: ['produced', 'captured'],
  wait: ['captured', 'staged'],
  preprocess: ['staged', 'preprocessed'],
  queue: ['preprocessed', 'inferStart'],
  infer: ['inferStart', 'inferEnd'],
  postprocess: ['inferEnd', 'postprocessed'],
  emit: ['postprocessed', 'emitted'],
};

/** The duration of each named stage in one message's stamps (NaN where a stamp is missing). */
export function stageDurations(stamps, names) {
  return names.map((name) => {
    const span = STAGE_SPANS[name];
    if (!span) return NaN;
    // Messages of argus before the `staged` stamp: no wait, pre-processing from `captured`.
    const at = (k) => (k === 'staged' && !isNum(stamps.staged) ? stamps.captured : stamps[k]);
    const a = at(span[0]);
    const b = at(span[1]);
    return isNum(a) && isNum(b) ? Math.max(0, b - a) : NaN;
  });
}
