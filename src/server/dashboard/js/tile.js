/** Builds a source's tile (picture, overlay, stats, chart, stage bar) in #tiles and returns its elements. */
import { drawChart } from './chart.js';
import { $, el } from './dom.js';
import { scheduleRender } from './render-queue.js';

let tileSeq = 0;

/** The source of each observed tile. */
const sourceOf = new WeakMap();

/**
 * Which tiles are on screen (or within 100 px of it, so a tile scrolled in is drawn before it
 * shows): only those draw their overlay and chart. A tile coming into view draws its latest
 * state at once (the render queue kept it dirty meanwhile).
 */
const onScreen =
  typeof IntersectionObserver === 'function'
    ? new IntersectionObserver(
        (entries) => {
          for (const entry of entries) {
            const s = sourceOf.get(entry.target);
            if (!s || s.visible === entry.isIntersecting) continue;
            s.visible = entry.isIntersecting;
            if (!s.visible) continue;
            s.onVisible?.(s);
            s.overlayDirty = true;
            scheduleRender();
            if (s.chartDirty) drawChart(s);
          }
        },
        { rootMargin: '100px 0px' },
      )
    : null;

export function buildTile(s) {
  const n = ++tileSeq;
  const titleId = `tile-title-${n}`;
  const state = el('span', { class: 'tile-state state-unknown', text: 'unknown', title: 'Source state' });
  const frame = el('canvas', { class: 'tile-frame', 'data-frames': '0', role: 'img', 'aria-label': `Live picture of ${s.id}`, width: 16, height: 9 });
  const overlay = el('canvas', { class: 'tile-overlay', 'data-boxes': '0', 'data-labels': '', 'aria-hidden': 'true' });
  const downState = el('strong', { class: 'tile-down-state' });
  const downReason = el('span', { class: 'tile-down-reason' });
  const downDetail = el('span', { class: 'tile-down-detail' });
  const down = el('div', { class: 'tile-down' }, downState, downReason, downDetail);
  down.hidden = true;
  const waiting = el('div', { class: 'tile-waiting', text: 'waiting for frames…' });
  const media = el('div', { class: 'tile-media' }, frame, overlay, waiting, down);

  const stat = (label, cls, title) => {
    const dd = el('dd', { class: cls, text: '—' });
    return [el('div', { class: 'stat', title }, el('dt', { text: label }), dd), dd];
  };
  const [fpsInBox, fpsIn] = stat('fps in', 'stat-fps-in', 'Frames read from the source per second');
  const [fpsOutBox, fpsOut] = stat('fps out', 'stat-fps-out', 'Frames processed per second');
  const [dropsBox, drops] = stat('drops', 'stat-drops', 'Frames dropped: inference was busy (a newer frame was kept) or failed on them');
  const [p50Box, p50] = stat('p50', 'stat-p50', 'End-to-end latency, median');
  const [p99Box, p99] = stat('p99', 'stat-p99', 'End-to-end latency, 99th percentile');
  const [pipeBox, pipe] = stat('pipeline p50', 'stat-pipe-p50', 'Pipeline latency (ffmpeg delivered the frame → result handed off), median');
  const stats = el('dl', { class: 'tile-stats' }, fpsInBox, fpsOutBox, dropsBox, p50Box, p99Box, pipeBox);

  const analytics = el('div', { class: 'tile-analytics' });

  const chart = el('canvas', { class: 'tile-chart', role: 'img', 'aria-label': 'End-to-end latency, p50 per second, last 2 minutes', 'data-points': '0' });
  const chartLabel = el('span', { class: 'chart-label', text: 'e2e p50 / s — last 2 min' });
  const chartWrap = el('div', { class: 'tile-chart-wrap' }, chartLabel, chart);

  const stageBar = el('div', { class: 'stage-bar', 'aria-hidden': 'true' });
  const stageLegend = el('ul', { class: 'stage-legend' });
  const stages = el('div', { class: 'tile-stages', role: 'group', 'aria-label': 'Average per-stage time of recent frames' }, stageBar, stageLegend);

  const title = el('h3', { class: 'tile-title', id: titleId, text: s.id });
  const head = el('header', { class: 'tile-head' }, title, state);
  const tile = el('article', { class: 'tile', 'data-source': s.id, 'data-state': 'unknown', 'aria-labelledby': titleId }, head, media, stats, analytics, chartWrap, stages);
  $('#tiles').append(tile);

  // A resized tile redraws its overlay and chart at the new size.
  const ro = new ResizeObserver(() => {
    s.overlayDirty = true;
    scheduleRender();
    drawChart(s);
  });
  ro.observe(media);
  sourceOf.set(tile, s);
  if (onScreen) onScreen.observe(tile);
  else s.visible = true; // no IntersectionObserver: every tile draws, as before it

  return { tile, state, frame, overlay, down, downState, downReason, downDetail, waiting, media, fpsIn, fpsOut, drops, p50, p99, pipe, pipeBox, p50Box, analytics, chart, chartLabel, stageBar, stageLegend, stages, stageSegs: null, resizes: ro };
}

/** Takes a source's tile off the page, and out of the observers. */
export function dropTile(s) {
  const e = s.el;
  e.resizes.disconnect();
  onScreen?.unobserve(e.tile);
  sourceOf.delete(e.tile);
  e.tile.remove();
  s.visible = false;
  s.pendingFrame = null;
}
