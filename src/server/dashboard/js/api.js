/** Polls GET /api/sources every 2 s while connected (the slow path: states, sizes, zones, lines, server-side stats, model, stages). */
import { now } from './clock.js';
import { applyCluster } from './cluster.js';
import { $ } from './dom.js';
import { isNum } from './numbers.js';
import { scheduleRender } from './render-queue.js';
import { ensureSource } from './sources.js';
import { STAGE_SPANS } from './stages.js';
import { app } from './store.js';
import { applyAspect, setState } from './tile-state.js';

const API_INTERVAL_MS = 2000;

let apiInFlight = false;
let apiTimer = 0;
let apiMissing = false; // the server has no /api/sources: poll 5× less often

/** One poll (none while another is in flight); a failure waits for the next. */
export async function fetchSources() {
  if (apiInFlight) return;
  apiInFlight = true;
  try {
    // Same origin: the session cookie (README, "HTTP server: access and limits") goes with it.
    const res = await fetch('/api/sources', { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) {
      apiMissing = res.status === 404;
      return;
    }
    apiMissing = false;
    applySources(await res.json());
  } catch {
    // the WebSocket side reports the connection state; the next poll retries
  } finally {
    apiInFlight = false;
  }
}

function applySources(body) {
  if (!body || typeof body !== 'object') return;
  applyCluster(body.cluster);
  if (body.model && body.model.name) {
    app.model = body.model;
    $('#model').textContent = `model ${body.model.name}${body.model.version ? ` ${body.model.version}` : ''}`;
  }
  if (Array.isArray(body.stages) && body.stages.length) {
    const known = body.stages.filter((n) => typeof n === 'string' && STAGE_SPANS[n]);
    if (known.length && known.join() !== app.stages.join()) {
      app.stages = known;
      for (const s of app.sources.values()) s.stageRecent = [];
    }
  }
  if (!Array.isArray(body.sources)) return;
  for (const x of body.sources) {
    if (!x || typeof x.id !== 'string') continue;
    const s = ensureSource(x.id);
    if (x.width > 0 && x.height > 0 && !s.dets.length) {
      s.srcW = x.width;
      s.srcH = x.height;
      applyAspect(s);
    }
    if (isNum(x.fps)) s.fps = x.fps;
    if (Array.isArray(x.zones)) s.zones = x.zones.filter((z) => z && typeof z.id === 'string');
    if (Array.isArray(x.lines)) s.lines = x.lines.filter((l) => l && typeof l.id === 'string');
    if (x.stats && typeof x.stats === 'object') {
      s.apiStats = x.stats;
      s.apiStatsAt = now();
    }
    // A status message is fresher than a poll that may have been answered before it.
    if (typeof x.state === 'string' && now() - s.statusAt > 3000) {
      const changed = x.state !== s.state;
      const reason = typeof x.reason === 'string' ? x.reason : changed ? '' : undefined;
      setState(s, x.state, reason, {
        attempt: isNum(x.attempt) ? x.attempt : changed ? 0 : undefined,
        code: typeof x.code === 'string' ? x.code : changed ? '' : undefined,
        detail: typeof x.detail === 'string' ? x.detail : changed ? '' : undefined,
        // The transition's age by the server's clock: no skew between the two clocks counts.
        raisedAt: isNum(x.stateAgeMs) && x.stateAgeMs >= 0 ? now() - x.stateAgeMs : undefined,
      });
    }
    s.overlayDirty = true;
  }
  scheduleRender();
}

/** Schedules the next poll (the next after that follows it); skipped while the WebSocket is down. */
export function pollSources() {
  clearTimeout(apiTimer);
  apiTimer = setTimeout(
    () => {
      if (app.connected) fetchSources().finally(pollSources);
      else pollSources();
    },
    apiMissing ? API_INTERVAL_MS * 5 : API_INTERVAL_MS,
  );
}
