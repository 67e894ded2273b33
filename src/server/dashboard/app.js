/*
 * argus dashboard: plain browser JavaScript (native ES modules under js/), no build step, no
 * dependencies. This entry module wires the modules together and starts the page.
 *
 * Data in:
 *   - WebSocket /ws (README, "WebSocket API"): hello → subscribe → v1 messages
 *     (detections, alert, status), the `frame` messages of the `frames` kind, `dropped`
 *     notices, `error` frames, `pong` (js/connection.js, js/messages.js).
 *   - GET /api/sources every 2 s: sources (state, size, fps, zones, lines, stats), model, stages (js/api.js).
 *
 * Stable hooks for tests: #status, .tile[data-source], .tile-state, .tile-frame[data-frames],
 * .tile-overlay[data-boxes][data-labels][data-seq][data-draws] (overlays drawn: only tiles on screen draw), .tile-chart, .tile-stages, #alerts .alert[data-rule][data-source],
 * img.alert-snapshot.
 */
import { initSnapshotDialog } from './js/alerts.js';
import { fetchSources, pollSources } from './js/api.js';
import { drawChart } from './js/chart.js';
import { keepAlive, PING_INTERVAL_MS, showRetryCountdown, startConnection } from './js/connection.js';
import { handleMessage } from './js/messages.js';
import { scheduleRender } from './js/render-queue.js';
import { updateStages } from './js/stage-bar.js';
import { app } from './js/store.js';
import { updateDown } from './js/tile-state.js';
import { updateStats } from './js/tile-stats.js';

/** Once a second: each tile's down banner, numbers, chart and stage bar; the retry countdown. */
function tick() {
  for (const s of app.sources.values()) {
    updateDown(s);
    updateStats(s);
    drawChart(s);
    updateStages(s);
  }
  showRetryCountdown();
}

function init() {
  initSnapshotDialog();
  // A page coming back into view redraws every overlay (animation frames pause while hidden).
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) {
      for (const s of app.sources.values()) s.overlayDirty = true;
      scheduleRender();
    }
  });
  startConnection(handleMessage);
  fetchSources();
  pollSources();
  setInterval(tick, 1000);
  setInterval(keepAlive, PING_INTERVAL_MS);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
