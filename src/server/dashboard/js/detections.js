/** Takes in a `detections` message: the boxes for the overlay, rates, latency samples and stage durations. */
import { now } from './clock.js';
import { e2eOf, isNum, pipelineOf } from './numbers.js';
import { scheduleRender } from './render-queue.js';
import { ensureSource } from './sources.js';
import { stageDurations } from './stages.js';
import { app } from './store.js';
import { applyAspect, setState } from './tile-state.js';

const DET_BUFFER = 150; // recent detection messages kept per source (to match frames by seq)
const E2E_WINDOW = 600; // recent end-to-end values for the local p50/p99 fallback
const STAGE_WINDOW = 60; // frames averaged in the stage bar

export function onDetections(m) {
  const s = ensureSource(m.source);
  const t = now();
  if (m.frame && m.frame.width > 0 && m.frame.height > 0) {
    if (s.srcW !== m.frame.width || s.srcH !== m.frame.height) {
      s.srcW = m.frame.width;
      s.srcH = m.frame.height;
      applyAspect(s);
    }
  }
  s.dets.push(m);
  if (s.dets.length > DET_BUFFER) s.dets.splice(0, s.dets.length - DET_BUFFER);
  s.lastDetAt = t;
  if (m.analytics) s.analytics = m.analytics;
  if (isNum(m.dropped)) s.dropped = m.dropped;
  if (isNum(m.seq)) {
    if (s.rate.length && m.seq < s.rate[s.rate.length - 1].seq) s.rate = []; // the source restarted
    s.rate.push({ t, seq: m.seq });
    while (s.rate.length > 2 && t - s.rate[0].t > 3000) s.rate.shift();
  }
  const st = m.stamps;
  const e2e = e2eOf(st);
  const pipe = pipelineOf(st);
  if (isNum(pipe)) {
    s.pipe.push(pipe);
    if (s.pipe.length > E2E_WINDOW) s.pipe.splice(0, s.pipe.length - E2E_WINDOW);
  }
  if (m.producedBy) s.producedBy = m.producedBy;
  if (isNum(e2e)) {
    s.e2e.push(e2e);
    if (s.e2e.length > E2E_WINDOW) s.e2e.splice(0, s.e2e.length - E2E_WINDOW);
    const sec = Math.floor(Date.now() / 1000);
    let bucket = s.seconds.get(sec);
    if (!bucket) s.seconds.set(sec, (bucket = []));
    bucket.push(e2e);
  }
  if (st) {
    s.stageRecent.push(stageDurations(st, app.stages));
    if (s.stageRecent.length > STAGE_WINDOW) s.stageRecent.shift();
  }
  if (s.state === 'unknown') setState(s, 'streaming', '');
  s.overlayDirty = true;
  scheduleRender();
}
