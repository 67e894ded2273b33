/** Dispatches the server's WebSocket messages (README, "WebSocket API") by type, and handles the session ones: hello, subscribed, status, alert, dropped, error. */
import { addAlert, addMissed, lastAlertId, setLastAlertId } from './alerts.js';
import { fetchSources } from './api.js';
import { now } from './clock.js';
import { send } from './connection.js';
import { onDetections } from './detections.js';
import { $ } from './dom.js';
import { showError } from './error-banner.js';
import { onFrame } from './frames.js';
import { isNum } from './numbers.js';
import { ensureSource, removeSource } from './sources.js';
import { app } from './store.js';
import { setState } from './tile-state.js';

const BASE_KINDS = ['detections', 'alerts', 'status'];

let droppedTotal = 0;

/** This connection's resume (subscribe's `run` and `after`), sent with its subscribe until it is answered; null: none. */
let resume = null;
/**
 * A resume not answered yet (`subscribed`), and the run of the hello it was made on: the page is
 * on that run, and its last alert is `resume.after`, once it is answered (onResumed). A connection
 * closed before that sends the same resume again (resumeOf). Null: none pending.
 */
let pending = null;

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
      onResumed(); // taken once per connection
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
  if (Array.isArray(m.sources)) {
    // The server's sources now: one no longer listed (argus restarted without it) is taken away.
    const listed = new Set(m.sources.filter((id) => typeof id === 'string'));
    for (const id of [...app.sources.keys()]) if (!listed.has(id)) removeSource(id);
    for (const id of listed) ensureSource(id);
  }
  resume = resumeOf(m);
  // Ask for live frames when the server offers them (or does not say what it offers).
  const offered = Array.isArray(m.kinds) ? m.kinds : null;
  const kinds = BASE_KINDS.filter((k) => !offered || offered.includes(k));
  app.askedFrames = !offered || offered.includes('frames');
  if (app.askedFrames) kinds.push('frames');
  subscribe(kinds);
  fetchSources();
}

/**
 * Where this connection resumes (README, "WebSocket API"), from hello `m`: after the last alert
 * received, of the run this page was on (`run`: the server sends the alerts raised since, or says
 * it restarted or no longer holds them). A page's first connection resumes after the newest alert
 * held then (`latestAlert`), so that a page that has had no alert yet misses none raised while it
 * is away. Before, the page resumed after its last alert's id whatever the run: after argus
 * restarted, an id that came again had the new run's alerts before it skipped, unsaid.
 */
function resumeOf(m) {
  const run = typeof m.run === 'string' && m.run ? m.run : null;
  // The hub's own tag: a program that embeds argus and gives its run again starts with the same
  // run, and the page resumed after its last alert's id in the new process, whose alerts with ids
  // before it were skipped, unsaid. Named with the resume, another is a restart too.
  const instance = typeof m.instance === 'string' && m.instance ? m.instance : null;
  // The last connection's resume was never answered (closed before its `subscribed`): the same
  // again. (Made anew from that connection's hello, a restart it saw was taken as the page's run
  // already: the next connection resumed on the new run, and the restart, with the old run's
  // alerts it may have cost, went unsaid.)
  if (pending) {
    pending.run = run;
    pending.instance = instance;
    return pending.resume;
  }
  const latest = typeof m.latestAlert === 'string' && m.latestAlert ? m.latestAlert : null;
  const known = app.run; // undefined: this page's first hello; null: a server that does not say its run
  let r;
  if (known === undefined) {
    r = run ? { run, ...(instance ? { instance } : {}), ...(latest ? { after: latest } : {}) } : latest ? { after: latest } : null;
  } else if (known !== null) {
    r = { run: known, ...(app.instance ? { instance: app.instance } : {}), ...(lastAlertId ? { after: lastAlertId } : {}) };
  } else {
    r = lastAlertId ? { after: lastAlertId } : null;
  }
  pending = { run, instance, resume: r };
  return r;
}

/**
 * The subscribe is answered: the page is on its hello's run from now on. Its last alert is the
 * one it resumed after (the first hello's `latestAlert`), none when that was another run's (alert
 * ids are their run's own: the resumed ones, or the next live one, set it).
 */
function onResumed() {
  resume = null;
  if (!pending) return;
  const { run, instance, resume: r } = pending;
  pending = null;
  // The run the resume was of: its `run`, else the page's (a server that did not say it), else this one (the first hello).
  const from = r && r.run !== undefined ? r.run : app.run === undefined ? run : app.run;
  // And the hub: another one's alert ids are not this one's, even on the same run.
  const fromInstance = r && r.instance !== undefined ? r.instance : app.instance === undefined ? instance : app.instance;
  setLastAlertId(from === run && fromInstance === instance && r && r.after ? r.after : null);
  app.run = run;
  app.instance = instance;
}

/** Subscribes, with this connection's resume until it is answered. */
function subscribe(kinds) {
  send({ type: 'subscribe', sources: ['*'], kinds, ...(resume || {}) });
}

function onStatus(m) {
  const s = ensureSource(m.source);
  s.statusAt = now();
  setState(s, m.state, m.reason || '', { attempt: isNum(m.attempt) ? m.attempt : 0, code: m.code || '', detail: m.detail || '', raisedAt: s.statusAt });
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
