import { map, type MonoTypeOperatorFunction } from 'rxjs';
import type { FrameResult } from '../analytics/analyze.js';
import { now } from '../core/clock.js';
import { e2eMs, pipelineMs, PRODUCED_BY } from '../core/frame.js';
import type { SourceStats } from '../sources/stats.js';

/**
 * The result leaves the pipeline for the sinks: stamps `emitted`, counts the frame out, records
 * its end-to-end (produced → emitted) and pipeline (captured → emitted) latency and the source's
 * drops so far. The result of the stream's end (`streamEnd`: alerts, no frame) is stamped only.
 */
export function stamp(st: SourceStats): MonoTypeOperatorFunction<FrameResult> {
  return map((r) => {
    r.frame.stamps.emitted = now();
    // The alerts of the stream's end (analyze): no frame, nothing to count or time.
    if (r.streamEnd) {
      r.dropped = st.dropped;
      return r;
    }
    st.framesOut++;
    const e2e = e2eMs(r.frame.stamps);
    const pipeline = pipelineMs(r.frame.stamps);
    st.e2e.add(e2e);
    st.pipeline.add(pipeline);
    st.e2eRun.add(e2e);
    st.pipelineRun.add(pipeline);
    st.e2eReadRun.add(e2e);
    st.e2eRead.add(e2e);
    // The frames dropped before this one (not those dropped while it ran) went unseen until now.
    const superseded = st.superseded.drain(r.frame.seq, r.frame.stamps.emitted);
    if (superseded) {
      for (const v of superseded) {
        st.e2eReadRun.add(v);
        st.e2eRead.add(v);
      }
      r.superseded = superseded;
    }
    st.producedBy = r.frame.producedBy;
    st.e2eBy.add(r.frame.producedBy);
    st.e2eRunBy[PRODUCED_BY.indexOf(r.frame.producedBy)]++;
    r.dropped = st.dropped;
    return r;
  });
}
