/**
 * The cluster panel of a worker's dashboard (`argus worker`): this worker, its lease and slots,
 * and every camera of the cluster with the worker that runs it, from the `cluster` object of
 * GET /api/sources (README, "Many machines"). Hidden for `argus run`, which has none.
 * Everything shown comes from Kafka records: set as text, never as markup.
 */
import { $, el } from './dom.js';
import { isNum } from './numbers.js';

const str = (v) => (typeof v === 'string' ? v : '');

/** Applies one poll's `cluster` object (absent: the panel stays hidden). */
export function applyCluster(c) {
  const panel = $('#cluster');
  if (!panel) return;
  if (!c || typeof c !== 'object' || typeof c.worker !== 'string') {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  const slots = Array.isArray(c.slots) ? c.slots.length : 0;
  const here = Array.isArray(c.cameras) ? c.cameras.length : 0;
  const labels = c.labels && typeof c.labels === 'object' ? Object.entries(c.labels).filter(([, v]) => typeof v === 'string').map(([k, v]) => `${k}=${v}`) : [];
  const summary = $('#cluster-summary');
  summary.textContent = `worker ${c.worker} · group ${str(c.group)} · ${slots} slot${slots === 1 ? '' : 's'} · ${here} camera${here === 1 ? '' : 's'} here${labels.length ? ` · ${labels.join(', ')}` : ''}${c.draining ? ' · draining' : ''}`;
  const lease = $('#cluster-lease');
  lease.textContent = c.lease ? 'lease held' : 'no lease';
  lease.className = `cluster-lease ${c.lease ? 'ok' : 'lost'}`;
  lease.title = isNum(c.heartbeatAgoMs) ? `last heartbeat answered ${c.heartbeatAgoMs} ms ago` : 'no heartbeat answered';

  const notHere = new Map();
  if (Array.isArray(c.notHere)) for (const n of c.notHere) if (n && typeof n.id === 'string') notHere.set(n.id, str(n.reason));
  const body = $('#cluster-map tbody');
  const rows = [];
  for (const m of Array.isArray(c.map) ? c.map : []) {
    if (!m || typeof m.camera !== 'string') continue;
    const owner = typeof m.owner === 'string' && m.state === 'claimed' ? m.owner : '';
    const mine = m.here === true;
    let state = m.error ? 'invalid' : m.enabled === false ? 'disabled' : owner ? 'running' : 'unassigned';
    if (notHere.has(m.camera)) state = `not here: ${notHere.get(m.camera)}`;
    rows.push(
      el(
        'tr',
        { class: mine ? 'here' : undefined, 'data-camera': m.camera, 'data-worker': owner || undefined },
        el('td', { text: m.camera }),
        el('td', { text: owner || '—' }),
        el('td', { class: 'num', text: isNum(m.epoch) && owner ? String(m.epoch) : '' }),
        el('td', { text: state, title: m.error ? str(m.error) : undefined }),
      ),
    );
  }
  body.replaceChildren(...rows);
  $('#cluster-empty').hidden = rows.length > 0;
}
