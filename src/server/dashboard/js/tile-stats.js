/** A tile's numbers (fps in and out, drops, p50/p99) and its zone, line and rate text; refreshed once a second. */
import { now } from './clock.js';
import { fmtMs, fmtNum } from './format.js';
import { isNum, percentile, sumCounts } from './numbers.js';
import { FRAME_STALE_MS } from './store.js';

/** /api/sources figures older than this give way to those computed from the messages. */
const API_STATS_FRESH_MS = 6000;

/** The figures computed from the messages this page received. */
function localStats(s) {
  const out = { fpsIn: NaN, fpsOut: NaN, dropped: s.dropped, p50: NaN, p99: NaN, pipelineP50: NaN, producedBy: s.producedBy };
  const r = s.rate;
  if (r.length >= 2) {
    const dt = (r[r.length - 1].t - r[0].t) / 1000;
    if (dt > 0.2) {
      out.fpsOut = (r.length - 1) / dt;
      out.fpsIn = (r[r.length - 1].seq - r[0].seq) / dt;
    }
  }
  if (now() - s.lastDetAt > FRAME_STALE_MS) {
    out.fpsIn = 0;
    out.fpsOut = 0;
  }
  const recent = s.e2e.slice(-300).sort((a, b) => a - b);
  out.p50 = percentile(recent, 50);
  out.p99 = percentile(recent, 99);
  out.pipelineP50 = percentile(s.pipe.slice(-300).sort((a, b) => a - b), 50);
  return out;
}

/** Shows the server's figures while fresh, else the local ones; data-stats-from says which. */
export function updateStats(s) {
  const local = localStats(s);
  const api = s.apiStats && now() - s.apiStatsAt < API_STATS_FRESH_MS ? s.apiStats : null;
  const pick = (k) => (api && isNum(api[k]) ? api[k] : local[k]);
  const e = s.el;
  e.fpsIn.textContent = fmtNum(pick('fpsIn'));
  e.fpsOut.textContent = fmtNum(pick('fpsOut'));
  const dropped = pick('dropped');
  // The server's split (/api/sources): a failed inference is no overload, and is said apart.
  const failed = api && isNum(api.inferenceErrors) ? api.inferenceErrors : 0;
  e.drops.textContent = isNum(dropped) ? `${Math.round(dropped)}${failed > 0 ? ` (${failed} failed)` : ''}` : '—';
  if (api && isNum(api.stale)) e.drops.title = `${api.stale} stale (inference busy, a newer frame kept), ${failed} inference failed`;
  else e.drops.removeAttribute('title');
  e.p50.textContent = fmtMs(pick('p50'));
  // Where the source dropped frames, the p99 over every frame read beside the emitted frames'
  // (/api/sources' readP99): a slow spell shows there as the few frames that came out of it.
  const readP99 = api && isNum(api.readP99) && isNum(api.dropped) && api.dropped > 0 ? api.readP99 : NaN;
  e.p99.textContent = isNum(readP99) ? `${fmtMs(pick('p99'))} (${fmtMs(readP99)} read)` : fmtMs(pick('p99'));
  if (isNum(readP99)) e.p99.title = `over every frame read, dropped ones until a newer frame's result: p99 ${fmtMs(readP99)}`;
  else e.p99.removeAttribute('title');
  e.pipe.textContent = fmtMs(pick('pipelineP50'));
  // The kinds the server's percentiles are over (e2eFrom: `camera`, or a mix), else the latest message's.
  const by = (api && (api.e2eFrom || api.producedBy)) || local.producedBy;
  e.p50Box.title = `End-to-end latency, median, from ${by ? `stamps.produced (${by})` : 'the source'}`;
  e.tile.dataset.statsFrom = api ? 'api' : 'messages';

  // Zone occupancy and line counts as text too (the overlay shows them on the picture).
  const parts = [];
  const a = s.analytics;
  if (a && a.zones) for (const [id, z] of Object.entries(a.zones)) parts.push(`${id}: ${z.occupancy ?? 0} inside, ${z.entered ?? 0} entered`);
  if (a && a.lines) for (const [id, l] of Object.entries(a.lines)) parts.push(`${id}: in ${sumCounts(l.in)}, out ${sumCounts(l.out)}`);
  if (a && a.rates) for (const [id, v] of Object.entries(a.rates)) parts.push(`${id}: ${fmtNum(v)}/min`);
  const text = parts.join(' · ');
  if (e.analytics.textContent !== text) e.analytics.textContent = text;
  e.analytics.hidden = !text;

  if (s.lastAlertAt && now() - s.lastAlertAt > 5000) e.tile.classList.remove('alerting');
}
