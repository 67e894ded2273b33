/** A tile's state badge, its "down" banner (state not streaming, or no frames) and its picture's aspect ratio. */
import { now } from './clock.js';
import { app, FRAME_STALE_MS } from './store.js';

/** Every source state the server sends (sources/health.ts, SOURCE_STATES), each with its style in style.css; any other is shown as `unknown`. */
export const STATE_NAMES = ['starting', 'streaming', 'stalled', 'stuck', 'reconnecting', 'failed', 'ended', 'stopped'];

/**
 * A reconnecting source's reason says when the next try is after the camera's error, on its first
 * line (sources/supervised-source.ts): `…; retry 3 in 4.0 s` (a named pipe's words may follow).
 * The last such words on that line: the camera's own error text before them could say the same
 * (and was counted down instead).
 */
const RETRY = /retry (\d+) in (\d+(?:\.\d+)?) s(?![^\n]*retry \d+ in \d)/;
/** A stalled source's reason: how long it had had no frame when it was said (`no frame for 2.0 s`). */
const SILENT = /no frame for (\d+(?:\.\d+)?) s/;

/**
 * Records the source's state (and reason, attempt, code, detail where given) and shows it.
 * `extra.raisedAt`: when the transition was raised, on this page's clock (now()): a status
 * message's arrival, a poll's answer less the transition's age (`stateAgeMs`). The times a reason
 * gives are counted from it (liveReason).
 */
export function setState(s, state, reason, extra) {
  s.state = state || 'unknown';
  const before = s.reason;
  if (reason !== undefined) s.reason = reason || '';
  if (extra) {
    if (extra.attempt !== undefined) s.attempt = extra.attempt;
    if (extra.code !== undefined) s.code = extra.code || '';
    if (extra.detail !== undefined) s.detail = extra.detail || '';
  }
  // When the reason was said. It was shown as written for as long as the state held: "retry 3 in
  // 4.0 s" a minute later, after the retry had started (its connection attempt can take the start
  // timeout, 10 s and more), and "no frame for 2.0 s" of a camera silent for an hour.
  if (extra && typeof extra.raisedAt === 'number' && Number.isFinite(extra.raisedAt)) s.reasonAt = extra.raisedAt;
  else if (s.reason !== before || !s.reasonAt) s.reasonAt = now();
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
    reason = liveReason(s.state, s.reason, t - s.reasonAt);
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

/**
 * A source's reason as it stands `ageMs` after it was said: a reconnecting source's `retry 3 in
 * 2 s`, counting down (the tiles are brought up to date once a second), then `retry 3 under way`
 * (the source is connecting again; a failure brings the next reason, a frame `streaming`); a
 * stalled one's `no frame for 62 s`, counting up.
 */
export function liveReason(state, reason, ageMs) {
  if (!(ageMs >= 0)) return reason;
  if (state === 'reconnecting') {
    return reason.replace(RETRY, (_all, n, s) => {
      const left = Number(s) * 1000 - ageMs;
      return left > 0 ? `retry ${n} in ${Math.ceil(left / 1000)} s` : `retry ${n} under way`;
    });
  }
  if (state === 'stalled') return reason.replace(SILENT, (_all, s) => `no frame for ${Math.floor((Number(s) * 1000 + ageMs) / 1000)} s`);
  return reason;
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
