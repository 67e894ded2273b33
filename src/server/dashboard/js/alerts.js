/** The alerts list (newest first, at most 20) and the dialog that shows a snapshot enlarged. */
import { $, el } from './dom.js';
import { fmtMs, fmtTime } from './format.js';
import { e2eOf, isNum } from './numbers.js';
import { omittedNote, refName, snapshotSrc } from './snapshot.js';

const MAX_ALERTS = 20;

let alertCount = 0;

/**
 * The id of the last alert received on the run this page is on (or the newest the server held when
 * the page connected to it, hello's `latestAlert`): a reconnect resumes after it (subscribe's
 * `after`), so none raised meanwhile is missed. Null: none of this run.
 */
export let lastAlertId = null;

/** Sets where a reconnect resumes from (null: from the start of the run). */
export function setLastAlertId(id) {
  lastAlertId = id;
}

/** Lists the alert of message `m` at the top and counts it. */
export function addAlert(m) {
  const a = m.alert;
  if (typeof a.id === 'string' && a.id) lastAlertId = a.id;
  const list = $('#alerts');
  const severity = ['info', 'warning', 'critical'].includes(a.severity) ? a.severity : 'info';
  const when = m.stamps && isNum(m.stamps.captured) ? m.stamps.captured : m.capturedAt ? Date.parse(m.capturedAt) : Date.now();
  const li = el('li', { class: `alert sev-${severity}`, 'data-rule': a.rule || '', 'data-source': m.source || '', 'data-severity': severity, 'data-id': a.id || '' });

  const src = snapshotSrc(a.snapshot);
  if (src) {
    // Lazy (set before src, which starts an eager load): only a listed picture on screen is fetched.
    // Many alerts at once (a crowd in a zone, the held alerts a reconnect resumes after) fetched a
    // picture each, those let go from the list at once included, and the server's per-address
    // request pace (server.requestBurstPerAddress) refused the newest: said "no longer held".
    const img = el('img', { class: 'alert-snapshot', loading: 'lazy', src, alt: `Snapshot: ${a.message || a.rule}`, decoding: 'async' });
    if (a.snapshot.width && a.snapshot.height) {
      img.width = 112;
      img.height = Math.round((112 * a.snapshot.height) / a.snapshot.width);
    }
    const btn = el('button', { type: 'button', class: 'snapshot-btn', 'aria-label': `Enlarge snapshot of ${a.rule || 'alert'} on ${m.source}` }, img);
    btn.addEventListener('click', () => openSnapshot(src, m));
    img.addEventListener('error', () => pictureFailed(img, btn, src));
    li.append(btn);
  } else if (a.snapshot && a.snapshot.ref) {
    li.append(el('span', { class: 'snapshot-ref', title: `Snapshot file on the argus host: ${a.snapshot.ref}`, text: refName(a.snapshot.ref) }));
  } else if (omittedNote(a.snapshotOmitted)) {
    const note = omittedNote(a.snapshotOmitted);
    li.append(el('span', { class: 'snapshot-none', title: note.title, text: note.text }));
  } else {
    li.append(el('span', { class: 'snapshot-none', 'aria-hidden': 'true' }));
  }

  const headLine = el(
    'div',
    { class: 'alert-head' },
    el('time', { class: 'alert-time', datetime: new Date(when).toISOString(), text: fmtTime(when) }),
    el('span', { class: 'alert-source', text: m.source }),
    el('span', { class: `alert-severity sev-${severity}`, text: severity }),
  );
  const msg = el('p', { class: 'alert-message', text: a.message || a.event || a.rule || 'alert' });
  const metaParts = [a.rule && `rule ${a.rule}`, a.event, a.zone && `zone ${a.zone}`, isNum(a.trackId) && `track #${a.trackId}`];
  const e2e = e2eOf(m.stamps);
  if (isNum(e2e)) metaParts.push(`capture → alert ${fmtMs(e2e)}`);
  const meta = el('p', { class: 'alert-meta', text: metaParts.filter(Boolean).join(' · ') });
  li.append(el('div', { class: 'alert-body' }, headLine, msg, meta));

  list.prepend(li);
  while (list.children.length > MAX_ALERTS) list.lastElementChild.remove();
  alertCount++;
  $('#alert-count').textContent = String(alertCount);
  $('#no-alerts').hidden = true;
}

/** Times a listed picture is fetched again (pictureFailed) before it is said not to have loaded. */
const PICTURE_TRIES = 5;

/**
 * A listed picture that did not load. The server holds the latest pictures only
 * (sinks.websocket.snapshotCacheBytes): one it let go (404) is said so, not a broken image. One
 * refused for the address's request pace (429, server.requestsPerAddressPerSecond: many alerts
 * at once, other pages behind the same address) or not reached is held, not let go: it is fetched
 * again after Retry-After while it is listed. An image's error does not tell why, a HEAD does.
 */
function pictureFailed(img, btn, src) {
  const say = (text, title) => btn.replaceWith(el('span', { class: 'snapshot-none', title, text }));
  const gone = () => say('no longer held', 'The server no longer holds this snapshot (Kafka and the JSON lines embed it)');
  if (!src.startsWith('/')) return gone(); // inline data that does not decode
  if (!img.isConnected) return; // let go from the list meanwhile
  const tries = Number(img.dataset.tries || 0) + 1;
  img.dataset.tries = String(tries);
  if (tries > PICTURE_TRIES) return say('not loaded', 'The server did not send this snapshot (Kafka and the JSON lines embed it)');
  const again = (seconds) => {
    const wait = (Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 1000 * tries) + Math.random() * 1000;
    setTimeout(() => {
      if (img.isConnected) img.src = src;
    }, wait);
  };
  fetch(src, { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' }).then(
    (r) => (r.status === 404 ? gone() : again(r.status === 429 ? Number(r.headers.get('retry-after')) : NaN)),
    () => again(NaN),
  );
}

/**
 * The server said that alerts were raised while this page was away that it no longer holds
 * (`missed`): listed as such, where they would have been.
 */
export function addMissed(m) {
  const list = $('#alerts');
  const since = m.after ? `after ${m.after}` : 'since this page connected';
  const text = m.restarted
    ? `argus restarted while this page was disconnected (run ${m.run || '?'} now): alerts raised ${since}, before the restart${m.oldest ? ` or before ${m.oldest}` : ''}, may be missing here. Kafka and the JSON lines output have them.`
    : `Alerts raised while this page was disconnected, ${since}${m.oldest ? ` and before ${m.oldest}` : ''}, may be missing here: the server no longer holds them. Kafka and the JSON lines output have them.`;
  const attrs = { class: 'alert alert-missed sev-warning', 'data-missed': String(m.after || '') };
  if (m.restarted) attrs['data-restarted'] = String(m.run || '');
  list.prepend(el('li', attrs, el('p', { class: 'alert-message', text })));
  while (list.children.length > MAX_ALERTS) list.lastElementChild.remove();
  $('#no-alerts').hidden = true;
}

function openSnapshot(src, m) {
  const dlg = $('#snapshot-dialog');
  const img = $('#snapshot-large');
  img.src = src;
  img.alt = `Snapshot: ${m.alert.message || m.alert.rule}`;
  $('#snapshot-title').textContent = `${m.source} — ${m.alert.rule || 'alert'}`;
  const when = m.stamps && isNum(m.stamps.captured) ? fmtTime(m.stamps.captured) : '';
  $('#snapshot-caption').textContent = [when, m.alert.severity, m.alert.message].filter(Boolean).join(' · ');
  if (typeof dlg.showModal === 'function') {
    if (!dlg.open) dlg.showModal();
  } else {
    dlg.setAttribute('open', '');
  }
}

/** A click on the snapshot dialog's backdrop closes it. */
export function initSnapshotDialog() {
  const dlg = $('#snapshot-dialog');
  dlg.addEventListener('click', (ev) => {
    if (ev.target === dlg) dlg.close();
  });
}
