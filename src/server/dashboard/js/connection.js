/**
 * The WebSocket to /ws (authenticated by the session cookie, as the page was): connects, reconnects with jittered exponential
 * backoff, pings every 15 s and closes a connection the server has been silent on for 45 s.
 * Text messages go to the handler given to startConnection.
 */
import { now } from './clock.js';
import { $ } from './dom.js';
import { showError } from './error-banner.js';
import { app } from './store.js';
import { updateDown } from './tile-state.js';

export const PING_INTERVAL_MS = 15000;
const SILENCE_LIMIT_MS = 45000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10000;

let ws = null; // the current socket; events of older ones are ignored
let retryTimer = 0;
let retryAt = 0;
let lastMessageAt = 0;
/** @type {(raw: string) => void} */
let deliver = () => {};

/** Sends `obj` as JSON when the socket is open (dropped otherwise). */
export function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
}

function setConnected(on, detail) {
  app.connected = on;
  const st = $('#status');
  st.textContent = on ? 'connected' : 'disconnected';
  st.className = `status ${on ? 'status-up' : 'status-down'}`;
  $('#status-detail').textContent = detail || '';
  document.body.classList.toggle('offline', !on);
}

function wsUrl() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}/ws`;
}

function connect() {
  clearTimeout(retryTimer);
  retryAt = 0;
  $('#status-detail').textContent = app.attempt ? `connecting (attempt ${app.attempt})…` : 'connecting…';
  let sock;
  try {
    sock = new WebSocket(wsUrl());
  } catch (e) {
    showError(`cannot open the WebSocket: ${e && e.message}`);
    scheduleReconnect();
    return;
  }
  ws = sock;
  let opened = false;
  sock.onopen = () => {
    if (ws !== sock) return;
    opened = true;
    app.connectedAt = now();
    lastMessageAt = now();
    setConnected(true, '');
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return;
    if (typeof ev.data === 'string') {
      lastMessageAt = now();
      deliver(ev.data);
    }
  };
  sock.onclose = (ev) => {
    if (ws !== sock) return;
    ws = null;
    const why = ev.code === 1013 ? 'server: client too slow' : ev.code === 1001 ? 'server going away' : ev.code === 1008 || ev.code === 4401 ? 'refused' : ev.code === 4429 ? 'refused: too many connections from this address' : '';
    setConnected(false, why);
    // Closed at once for its address (sinks.websocket.maxClientsPerAddress): said, not retried in silence.
    if (ev.code === 4429) showError(`the server refused this page: ${ev.reason || 'too many connections from this address'}; close other dashboards or clients on this machine (it retries)`);
    for (const s of app.sources.values()) updateDown(s);
    scheduleReconnect();
    // A refused handshake tells the page no status (1006): ask whether the session ended.
    if (!opened) checkSession();
  };
  sock.onerror = () => {
    // a close event follows, which schedules the reconnect
  };
}

/**
 * The session cookie ends (server.sessionMaxAgeMs unused, or the server's secret changed): every
 * reconnect is then refused, and only opening the page as on the first visit (README, "The
 * dashboard's session cookie") lets it in again. Said so, not retried in silence.
 */
function checkSession() {
  fetch('/api/sources', { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' })
    .then((r) => {
      if (r.status !== 401) return;
      showError('the session has ended (unused longer than server.sessionMaxAgeMs, or the server\'s secret changed): open the dashboard as on the first visit again');
    })
    .catch(() => {
      // argus is down: the reconnects go on
    });
}

function scheduleReconnect() {
  app.attempt++;
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(10, app.attempt - 1));
  const delay = Math.round(base * (0.8 + 0.4 * Math.random()));
  retryAt = now() + delay;
  $('#status-detail').textContent = `retry ${app.attempt} in ${(delay / 1000).toFixed(1)} s`;
  clearTimeout(retryTimer);
  retryTimer = setTimeout(connect, delay);
}

/** Shows "disconnected" and opens the first connection; `onMessage` gets each text message. */
export function startConnection(onMessage) {
  deliver = onMessage;
  setConnected(false, '');
  connect();
}

/** While disconnected with a retry pending: the seconds until it, in the status line. */
export function showRetryCountdown() {
  if (!app.connected && retryAt) {
    const left = Math.max(0, retryAt - now());
    $('#status-detail').textContent = `retry ${app.attempt} in ${(left / 1000).toFixed(0)} s`;
  }
}

/** A ping (every PING_INTERVAL_MS); a connection silent for SILENCE_LIMIT_MS is closed, which reconnects. */
export function keepAlive() {
  if (!ws || ws.readyState !== WebSocket.OPEN) return;
  if (now() - lastMessageAt > SILENCE_LIMIT_MS) {
    ws.close(4000, 'no message from the server');
    return;
  }
  send({ type: 'ping' });
}
