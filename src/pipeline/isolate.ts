import { catchError, EMPTY, type MonoTypeOperatorFunction } from 'rxjs';
import type { LogFn } from '../core/log.js';
import { redact } from '../core/redact.js';
import type { SourceStats } from '../sources/stats.js';

/**
 * A source that fails ends alone: the error is logged and kept in its stats, the other sources go
 * on. `said`: whether its caller says this failure itself (an argus worker: a camera's record
 * refused at its first frame, said once with what the worker does about it), not logged here.
 */
export function isolate<T>(st: SourceStats, log: LogFn, said?: (source: string, e: Error) => boolean): MonoTypeOperatorFunction<T> {
  return catchError((err: Error) => {
    st.error = err;
    if (!said?.(st.id, err)) log(redact(`source ${st.id} failed: ${err.message}`), { source: st.id, code: (err as { code?: string }).code }, 'error');
    return EMPTY;
  });
}
