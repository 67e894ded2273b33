/** A tile's state badge, its "down" banner (state not streaming, or no frames) and its picture's aspect ratio. */
import { now } from './clock.js';
import { app, FRAME_STALE_MS } from './store.js';

const STATE_NAMES = ['starting', 'streaming', 'stalled', 'reconnecting', 'failed', 'ended', 'stopped'];

/** Records the source's state (and reason, attempt, code, detail where given) and shows it. */
export function setState(s, state, reason, extra) {
  s.state = state || 'unknown';
  if (reason !== undefined) s.reason = reason || '';
  if (extra) {
    if (extra.attempt !== undefined) s.attempt = extra.attempt;
    if (extra.code !== undefined) s.code = extra.code || '';
    if (extra.detail !== undefined) s.detail = extra.detail || '';
  }
  const badge = s.el.state;
  badge.textContent = s.state;
  badge.className = `tile-state state-${STATE_NAMES.includes(s.state) ? s.state : 'unknown'}`;
  s.el.tile.dataset.state = s.state;
  updateDown(s);
}

/** A source is down when its state is not streaming, or no frame came for more than 3 s. */
export function updateDown(s) {
  const t = now();
  const lastSeen = Math.max(s.lastFrameAt, s.lastDetAt);
  const since = lastSeen || Math.max(s.createdAt, app.connectedAt);
  const silentMs = t - since;
  let down = false;
  let head = '';
  let reason = '';
  if (s.state !== 'streaming' && s.state !== 'unknown') {
    down = true;
    head = s.state;
    reason = s.reason;
    if (s.state === 'reconnecting' && s.attempt && !/retry/.test(reason)) reason += `${reason ? '; ' : ''}attempt ${s.attempt}`;
  } else if (app.connected && silentMs > FRAME_STALE_MS) {
    down = true;
    head = 'no frames';
    reason = lastSeen ? `none for ${(silentMs / 1000).toFixed(1)} s` : `none since ${s.state === 'unknown' ? 'connecting' : `the source went ${s.state}`}`;
  } else if (!app.connected && s.frames + s.dets.length > 0) {
    down = true;
    head = 'disconnected';
    reason = 'the page lost its connection to the pipeline';
  }
  const e = s.el;
  e.tile.classList.toggle('down', down);
  e.down.hidden = !down;
  if (down) {
    e.downState.textContent = head;
    e.downReason.textContent = reason ? ` — ${reason}` : '';
    e.downDetail.textContent = s.code && s.state !== 'streaming' ? s.code : '';
    e.down.title = s.detail || '';
    e.down.className = `tile-down down-${STATE_NAMES.includes(head) ? head : 'stale'}`;
  }
  e.waiting.hidden = down || s.frames > 0;
  const waitText = app.askedFrames ? 'waiting for frames…' : 'no live picture (detections only)';
  if (e.waiting.textContent !== waitText) e.waiting.textContent = waitText;
  e.waiting.classList.toggle('no-picture', !app.askedFrames);
}

/** The tile's picture area takes the picture's aspect (the JPEG's size, else the source's). */
export function applyAspect(s) {
  const w = s.jpegW || s.srcW;
  const h = s.jpegH || s.srcH;
  if (w > 0 && h > 0) {
    const ar = `${w} / ${h}`;
    if (s.el.media.style.aspectRatio !== ar) s.el.media.style.aspectRatio = ar;
  }
}
