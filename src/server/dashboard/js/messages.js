/** Dispatches the server's WebSocket messages (README, "WebSocket API") by type, and handles the session ones: hello, subscribed, status, alert, dropped, error. */
import { addAlert, addMissed, lastAlertId } from './alerts.js';
import { fetchSources } from './api.js';
import { now } from './clock.js';
import { send } from './connection.js';
import { onDetections } from './detections.js';
import { $ } from './dom.js';
import { showError } from './error-banner.js';
import { onFrame } from './frames.js';
import { isNum } from './numbers.js';
import { ensureSource } from './sources.js';
import { app } from './store.js';
import { setState } from './tile-state.js';

const BASE_KINDS = ['detections', 'alerts', 'status'];

let droppedTotal = 0;

export function handleMessage(raw) {
  let m;
  try {
    m = JSON.parse(raw);
  } catch {
    showError('the server sent a message that is not JSON');
    return;
  }
  if (!m || typeof m !== 'object') return;
  switch (m.type) {
    case 'hello':
      onHello(m);
      break;
    case 'subscribed':
      app.subscribedFrames = Array.isArray(m.kinds) && m.kinds.includes('frames');
      break;
    case 'detections':
      onDetections(m);
      break;
    case 'frame':
      onFrame(m);
      break;
    case 'alert':
      onAlert(m);
      break;
    case 'missed':
      addMissed(m);
      break;
    case 'status':
      onStatus(m);
      break;
    case 'dropped':
      onDropped(m);
      break;
    case 'error':
      onServerError(m);
      break;
    case 'pong':
      break;
    default:
      break;
  }
}

function onHello(m) {
  app.attempt = 0;
  // A new connection may be to a restarted pipeline: sequence numbers start over.
  for (const s of app.sources.values()) {
    s.dets = [];
    s.rate = [];
    s.frameSeq = -1;
    s.pendingFrame = null; // the last connection's
  }
  if (Array.isArray(m.sources)) for (const id of m.sources) if (typeof id === 'string') ensureSource(id);
  // Ask for live frames when the server offers them (or does not say what it offers).
  const offered = Array.isArray(m.kinds) ? m.kinds : null;
  const kinds = BASE_KINDS.filter((k) => !offered || offered.includes(k));
  app.askedFrames = !offered || offered.includes('frames');
  if (app.askedFrames) kinds.push('frames');
  subscribe(kinds);
  fetchSources();
}

/** Subscribes; after a reconnect, resuming after the last alert received (the server sends those raised meanwhile, or says it no longer holds them). */
function subscribe(kinds) {
  send(lastAlertId ? { type: 'subscribe', sources: ['*'], kinds, after: lastAlertId } : { type: 'subscribe', sources: ['*'], kinds });
}

function onStatus(m) {
  const s = ensureSource(m.source);
  s.statusAt = now();
  setState(s, m.state, m.reason || '', { attempt: isNum(m.attempt) ? m.attempt : 0, code: m.code || '', detail: m.detail || '' });
}

function onAlert(m) {
  const a = m.alert;
  if (!a) return;
  const s = ensureSource(m.source);
  s.lastAlertAt = now();
  s.el.tile.classList.add('alerting');
  addAlert(m);
}

function onDropped(m) {
  const count = isNum(m.count) ? m.count : 0;
  droppedTotal += count;
  const d = $('#dropped');
  d.hidden = false;
  d.textContent = `dropped ${droppedTotal}`;
  d.title = `Messages the server dropped for this page${m.reason ? ` (${m.reason})` : ''}; server total this connection: ${isNum(m.total) ? m.total : '?'}`;
}

function onServerError(m) {
  if (m.code === 'bad_subscribe' && app.askedFrames) {
    // This server has no `frames` kind: subscribe without it.
    app.askedFrames = false;
    subscribe(BASE_KINDS);
    return;
  }
  showError(`${m.code || 'error'}: ${m.message || ''}`);
}
