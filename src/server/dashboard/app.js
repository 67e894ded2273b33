/*
 * argus dashboard: plain browser JavaScript, no build step, no dependencies.
 *
 * Data in:
 *   - WebSocket /ws (README, "WebSocket API"): hello → subscribe → v1 messages
 *     (detections, alert, status), the `frame` messages of the `frames` kind, `dropped`
 *     notices, `error` frames, `pong`.
 *   - GET /api/sources every 2 s: sources (state, size, fps, zones, lines, stats), model, stages.
 *
 * Stable hooks for tests: #status, .tile[data-source], .tile-state, .tile-frame[data-frames],
 * .tile-overlay[data-boxes][data-labels], .tile-chart, .tile-stages, #alerts .alert[data-rule][data-source],
 * img.alert-snapshot.
 */
'use strict';

(() => {
  const DEFAULT_STAGES = ['preprocess', 'queue', 'infer', 'postprocess', 'emit'];
  /** Each stage's duration from the v1 stamps; the same definitions as `argus bench`. */
  const STAGE_SPANS = {
    preprocess: ['captured', 'preprocessed'],
    queue: ['preprocessed', 'inferStart'],
    infer: ['inferStart', 'inferEnd'],
    postprocess: ['inferEnd', 'postprocessed'],
    emit: ['postprocessed', 'emitted'],
  };
  const STAGE_COLORS = {
    preprocess: '#5aa9e6',
    queue: '#8d99ae',
    infer: '#f4a259',
    postprocess: '#9b5de5',
    emit: '#43aa8b',
  };
  const BASE_KINDS = ['detections', 'alerts', 'status'];
  const FRAME_STALE_MS = 3000;
  const CHART_SECONDS = 120;
  const STAGE_WINDOW = 60; // frames averaged in the stage bar
  const DET_BUFFER = 150; // recent detection messages kept per source (to match frames by seq)
  const E2E_WINDOW = 600; // recent end-to-end values for the local p50/p99 fallback
  const MAX_ALERTS = 20;
  const API_INTERVAL_MS = 2000;
  const API_STATS_FRESH_MS = 6000;
  const PING_INTERVAL_MS = 15000;
  const SILENCE_LIMIT_MS = 45000;
  const BACKOFF_MIN_MS = 500;
  const BACKOFF_MAX_MS = 10000;
  const STATE_NAMES = ['starting', 'streaming', 'stalled', 'reconnecting', 'failed', 'ended', 'stopped'];

  const params = new URLSearchParams(location.search);
  const token = params.get('token');

  const $ = (sel, root = document) => root.querySelector(sel);
  const now = () => performance.now();

  const app = {
    sources: new Map(),
    stages: DEFAULT_STAGES.slice(),
    model: null,
    ws: null,
    connected: false,
    connectedAt: 0,
    attempt: 0,
    retryTimer: 0,
    retryAt: 0,
    lastMessageAt: 0,
    subscribedFrames: false,
    askedFrames: true,
    droppedTotal: 0,
    alerts: 0,
    apiTimer: 0,
    apiMissing: false,
  };

  // ---------------------------------------------------------------------------------------
  // Small helpers

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const c of children) if (c) e.append(c);
    return e;
  }

  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);

  function fmtMs(v) {
    if (!isNum(v)) return '—';
    if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
    if (v >= 100) return `${v.toFixed(0)} ms`;
    return `${v.toFixed(1)} ms`;
  }

  function fmtNum(v, digits = 1) {
    return isNum(v) ? v.toFixed(digits) : '—';
  }

  function fmtTime(ms) {
    const d = new Date(ms);
    if (Number.isNaN(d.getTime())) return '—';
    const p = (n) => String(n).padStart(2, '0');
    return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  function percentile(sorted, q) {
    if (!sorted.length) return NaN;
    const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1));
    return sorted[i];
  }

  function median(values) {
    return percentile(values.slice().sort((a, b) => a - b), 50);
  }

  function hashHue(s) {
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return h % 360;
  }

  const LABEL_COLORS = { person: '#3ddbd9', bottle: '#ffd166', car: '#f78c6b', scissors: '#ef476f' };
  function labelColor(label) {
    return LABEL_COLORS[label] || `hsl(${hashHue(label)}, 80%, 62%)`;
  }

  function base64ToBytes(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function withToken(path) {
    if (!token) return path;
    return `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
  }

  /** e2e of one message: published − captured (emitted − captured when published is absent). */
  function e2eOf(stamps) {
    if (!stamps || !isNum(stamps.captured)) return NaN;
    const end = isNum(stamps.published) && stamps.published > 0 ? stamps.published : stamps.emitted;
    return isNum(end) ? Math.max(0, end - stamps.captured) : NaN;
  }

  // ---------------------------------------------------------------------------------------
  // Sources and tiles

  let tileSeq = 0;

  function ensureSource(id) {
    let s = app.sources.get(id);
    if (s) return s;
    s = {
      id,
      state: 'unknown',
      reason: '',
      attempt: 0,
      code: '',
      detail: '',
      statusAt: -Infinity, // performance.now() of the last status message
      createdAt: now(),
      srcW: 0,
      srcH: 0,
      fps: NaN,
      zones: [],
      lines: [],
      apiStats: null,
      apiStatsAt: 0,
      // frames
      frames: 0,
      frameSeq: -1,
      jpegW: 0,
      jpegH: 0,
      lastFrameAt: 0,
      decodeToken: 0,
      shownToken: 0,
      // detections
      dets: [],
      lastDetAt: 0,
      analytics: null,
      dropped: NaN,
      e2e: [],
      seconds: new Map(), // client second → e2e values received in it
      secondP50: new Map(), // completed second → p50
      stageRecent: [],
      rate: [], // {t, seq}
      lastAlertAt: 0,
      overlayDirty: true,
      el: null,
    };
    s.el = buildTile(s);
    app.sources.set(id, s);
    const empty = $('#no-sources');
    if (empty) empty.hidden = true;
    return s;
  }

  function buildTile(s) {
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
    const [dropsBox, drops] = stat('drops', 'stat-drops', 'Frames dropped because inference was busy');
    const [p50Box, p50] = stat('p50', 'stat-p50', 'End-to-end latency, median');
    const [p99Box, p99] = stat('p99', 'stat-p99', 'End-to-end latency, 99th percentile');
    const stats = el('dl', { class: 'tile-stats' }, fpsInBox, fpsOutBox, dropsBox, p50Box, p99Box);

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

    const ro = new ResizeObserver(() => {
      s.overlayDirty = true;
      scheduleRender();
      drawChart(s);
    });
    ro.observe(media);

    return { tile, state, frame, overlay, down, downState, downReason, downDetail, waiting, media, fpsIn, fpsOut, drops, p50, p99, analytics, chart, chartLabel, stageBar, stageLegend, stages, stageSegs: null };
  }

  function setState(s, state, reason, extra) {
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
  function updateDown(s) {
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

  function applyAspect(s) {
    const w = s.jpegW || s.srcW;
    const h = s.jpegH || s.srcH;
    if (w > 0 && h > 0) {
      const ar = `${w} / ${h}`;
      if (s.el.media.style.aspectRatio !== ar) s.el.media.style.aspectRatio = ar;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Messages

  function onDetections(m) {
    const s = ensureSource(m.source);
    const t = now();
    if (m.frame && m.frame.width > 0 && m.frame.height > 0) {
      if (s.srcW !== m.frame.width || s.srcH !== m.frame.height) {
        s.srcW = m.frame.width;
        s.srcH = m.frame.height;
        applyAspect(s);
      }
    }
    s.dets.push(m);
    if (s.dets.length > DET_BUFFER) s.dets.splice(0, s.dets.length - DET_BUFFER);
    s.lastDetAt = t;
    if (m.analytics) s.analytics = m.analytics;
    if (isNum(m.dropped)) s.dropped = m.dropped;
    if (isNum(m.seq)) {
      if (s.rate.length && m.seq < s.rate[s.rate.length - 1].seq) s.rate = []; // the source restarted
      s.rate.push({ t, seq: m.seq });
      while (s.rate.length > 2 && t - s.rate[0].t > 3000) s.rate.shift();
    }
    const st = m.stamps;
    const e2e = e2eOf(st);
    if (isNum(e2e)) {
      s.e2e.push(e2e);
      if (s.e2e.length > E2E_WINDOW) s.e2e.splice(0, s.e2e.length - E2E_WINDOW);
      const sec = Math.floor(Date.now() / 1000);
      let bucket = s.seconds.get(sec);
      if (!bucket) s.seconds.set(sec, (bucket = []));
      bucket.push(e2e);
    }
    if (st) {
      const d = app.stages.map((name) => {
        const span = STAGE_SPANS[name];
        if (!span) return NaN;
        const a = st[span[0]];
        const b = st[span[1]];
        return isNum(a) && isNum(b) ? Math.max(0, b - a) : NaN;
      });
      s.stageRecent.push(d);
      if (s.stageRecent.length > STAGE_WINDOW) s.stageRecent.shift();
    }
    if (s.state === 'unknown') setState(s, 'streaming', '');
    s.overlayDirty = true;
    scheduleRender();
  }

  async function onFrame(m) {
    if (typeof m.source !== 'string' || typeof m.data !== 'string') return;
    const s = ensureSource(m.source);
    const tokenN = ++s.decodeToken;
    let bmp;
    try {
      const blob = new Blob([base64ToBytes(m.data)], { type: m.contentType || 'image/jpeg' });
      bmp = await createImageBitmap(blob);
    } catch {
      return; // an undecodable picture is skipped; the next one replaces it
    }
    if (tokenN < s.shownToken) {
      bmp.close();
      return;
    }
    s.shownToken = tokenN;
    const c = s.el.frame;
    if (c.width !== bmp.width || c.height !== bmp.height) {
      c.width = bmp.width;
      c.height = bmp.height;
    }
    c.getContext('2d').drawImage(bmp, 0, 0);
    s.jpegW = isNum(m.width) && m.width > 0 ? m.width : bmp.width;
    s.jpegH = isNum(m.height) && m.height > 0 ? m.height : bmp.height;
    // The server may say which source size the picture shows (before any detections message has).
    if (!s.srcW && isNum(m.sourceWidth) && m.sourceWidth > 0 && isNum(m.sourceHeight) && m.sourceHeight > 0) {
      s.srcW = m.sourceWidth;
      s.srcH = m.sourceHeight;
    }
    bmp.close();
    applyAspect(s);
    s.frames++;
    c.dataset.frames = String(s.frames);
    s.frameSeq = isNum(m.seq) ? m.seq : -1;
    c.dataset.seq = String(s.frameSeq);
    s.lastFrameAt = now();
    s.el.waiting.hidden = true;
    if (s.state === 'unknown') setState(s, 'streaming', '');
    else if (s.el.tile.classList.contains('down') && s.state === 'streaming') updateDown(s);
    s.overlayDirty = true;
    scheduleRender();
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

  function handleMessage(raw) {
    app.lastMessageAt = now();
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
    }
    if (Array.isArray(m.sources)) for (const id of m.sources) if (typeof id === 'string') ensureSource(id);
    // Ask for live frames when the server offers them (or does not say what it offers).
    const offered = Array.isArray(m.kinds) ? m.kinds : null;
    const kinds = BASE_KINDS.filter((k) => !offered || offered.includes(k));
    app.askedFrames = !offered || offered.includes('frames');
    if (app.askedFrames) kinds.push('frames');
    send({ type: 'subscribe', sources: ['*'], kinds });
    fetchSources();
  }

  function onDropped(m) {
    const count = isNum(m.count) ? m.count : 0;
    app.droppedTotal += count;
    const d = $('#dropped');
    d.hidden = false;
    d.textContent = `dropped ${app.droppedTotal}`;
    d.title = `Messages the server dropped for this page${m.reason ? ` (${m.reason})` : ''}; server total this connection: ${isNum(m.total) ? m.total : '?'}`;
  }

  function onServerError(m) {
    if (m.code === 'bad_subscribe' && app.askedFrames) {
      // This server has no `frames` kind: subscribe without it.
      app.askedFrames = false;
      send({ type: 'subscribe', sources: ['*'], kinds: BASE_KINDS });
      return;
    }
    showError(`${m.code || 'error'}: ${m.message || ''}`);
  }

  let errorTimer = 0;
  function showError(text) {
    const e = $('#error');
    e.hidden = false;
    e.textContent = text;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => {
      e.hidden = true;
    }, 15000);
  }

  // ---------------------------------------------------------------------------------------
  // Alerts

  function snapshotSrc(snap) {
    if (!snap) return null;
    if (typeof snap.data === 'string' && snap.data.length) return `data:${snap.contentType || 'image/jpeg'};base64,${snap.data}`;
    if (typeof snap.ref === 'string' && snap.ref.startsWith('/') && !snap.ref.startsWith('//')) return withToken(snap.ref);
    return null;
  }

  function addAlert(m) {
    const a = m.alert;
    const list = $('#alerts');
    const severity = ['info', 'warning', 'critical'].includes(a.severity) ? a.severity : 'info';
    const when = m.stamps && isNum(m.stamps.captured) ? m.stamps.captured : m.capturedAt ? Date.parse(m.capturedAt) : Date.now();
    const li = el('li', { class: `alert sev-${severity}`, 'data-rule': a.rule || '', 'data-source': m.source || '', 'data-severity': severity, 'data-id': a.id || '' });

    const src = snapshotSrc(a.snapshot);
    if (src) {
      const img = el('img', { class: 'alert-snapshot', src, alt: `Snapshot: ${a.message || a.rule}`, decoding: 'async' });
      if (a.snapshot.width && a.snapshot.height) {
        img.width = 112;
        img.height = Math.round((112 * a.snapshot.height) / a.snapshot.width);
      }
      const btn = el('button', { type: 'button', class: 'snapshot-btn', 'aria-label': `Enlarge snapshot of ${a.rule || 'alert'} on ${m.source}` }, img);
      btn.addEventListener('click', () => openSnapshot(src, m));
      li.append(btn);
    } else if (a.snapshot && a.snapshot.ref) {
      li.append(el('span', { class: 'snapshot-ref', title: 'Snapshot file', text: a.snapshot.ref }));
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
    app.alerts++;
    $('#alert-count').textContent = String(app.alerts);
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

  // ---------------------------------------------------------------------------------------
  // Overlay: zones, lines, boxes

  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      for (const s of app.sources.values()) {
        if (s.overlayDirty) {
          s.overlayDirty = false;
          drawOverlay(s);
        }
      }
    });
  }

  /** The detections that belong to the picture on screen: same seq, else the newest older one. */
  function pickDetections(s) {
    const dets = s.dets;
    if (!dets.length) return null;
    const framesLive = s.frames > 0 && now() - s.lastFrameAt < FRAME_STALE_MS && s.frameSeq >= 0;
    if (!framesLive) return dets[dets.length - 1];
    let best = null;
    for (let i = dets.length - 1; i >= 0; i--) {
      const d = dets[i];
      if (d.seq === s.frameSeq) return d;
      if (d.seq < s.frameSeq) {
        best = d;
        break;
      }
    }
    return best || dets[0];
  }

  function sizeCanvas(c, cssW, cssH) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(cssW * dpr));
    const h = Math.max(1, Math.round(cssH * dpr));
    if (c.width !== w || c.height !== h) {
      c.width = w;
      c.height = h;
    }
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function textTag(ctx, text, x, y, color, cssW, below) {
    ctx.font = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    const w = ctx.measureText(text).width + 8;
    const h = 16;
    let tx = Math.min(Math.max(0, x), Math.max(0, cssW - w));
    let ty = below ? y : y - h;
    if (ty < 0) ty = y;
    ctx.fillStyle = 'rgba(10, 14, 20, 0.78)';
    ctx.fillRect(tx, ty, w, h);
    ctx.fillStyle = color;
    ctx.fillRect(tx, ty, 3, h);
    ctx.fillStyle = '#f2f5f9';
    ctx.textBaseline = 'middle';
    ctx.fillText(text, tx + 5, ty + h / 2 + 0.5);
  }

  function sumCounts(obj) {
    let n = 0;
    if (obj && typeof obj === 'object') for (const v of Object.values(obj)) if (isNum(v)) n += v;
    return n;
  }

  function drawOverlay(s) {
    const e = s.el;
    const cssW = e.media.clientWidth;
    const cssH = e.media.clientHeight;
    const ctx = sizeCanvas(e.overlay, cssW, cssH);
    ctx.clearRect(0, 0, cssW, cssH);
    const det = pickDetections(s);
    // Boxes are in source pixels; the picture is the source's aspect, stretched to the tile.
    const sw = (det && det.frame && det.frame.width) || s.srcW || s.jpegW;
    const sh = (det && det.frame && det.frame.height) || s.srcH || s.jpegH;
    const labels = [];
    if (sw > 0 && sh > 0 && cssW > 0 && cssH > 0) {
      const kx = cssW / sw;
      const ky = cssH / sh;
      const zonesA = (s.analytics && s.analytics.zones) || {};
      const linesA = (s.analytics && s.analytics.lines) || {};

      for (const z of s.zones) {
        if (!Array.isArray(z.polygon) || z.polygon.length < 3) continue;
        const occ = zonesA[z.id] && isNum(zonesA[z.id].occupancy) ? zonesA[z.id].occupancy : 0;
        const hot = occ > 0;
        ctx.beginPath();
        z.polygon.forEach(([x, y], i) => (i ? ctx.lineTo(x * kx, y * ky) : ctx.moveTo(x * kx, y * ky)));
        ctx.closePath();
        ctx.fillStyle = hot ? 'rgba(239, 71, 111, 0.26)' : 'rgba(255, 209, 102, 0.16)';
        ctx.fill();
        ctx.lineWidth = 2;
        ctx.setLineDash([6, 4]);
        ctx.strokeStyle = hot ? 'rgba(239, 71, 111, 0.95)' : 'rgba(255, 209, 102, 0.9)';
        ctx.stroke();
        ctx.setLineDash([]);
        let minX = Infinity;
        let minY = Infinity;
        for (const [x, y] of z.polygon) {
          minX = Math.min(minX, x * kx);
          minY = Math.min(minY, y * ky);
        }
        const za = zonesA[z.id];
        const tag = za ? `${z.id}: ${occ} inside · ${za.entered ?? 0} entered` : z.id;
        textTag(ctx, tag, minX, minY, hot ? '#ef476f' : '#ffd166', cssW, true);
      }

      for (const l of s.lines) {
        if (!Array.isArray(l.from) || !Array.isArray(l.to)) continue;
        const x1 = l.from[0] * kx;
        const y1 = l.from[1] * ky;
        const x2 = l.to[0] * kx;
        const y2 = l.to[1] * ky;
        ctx.lineWidth = 3;
        ctx.strokeStyle = 'rgba(6, 214, 160, 0.95)';
        ctx.beginPath();
        ctx.moveTo(x1, y1);
        ctx.lineTo(x2, y2);
        ctx.stroke();
        // "in" side marker: the left-hand side of from→to as seen on screen.
        const len = Math.hypot(x2 - x1, y2 - y1) || 1;
        const mx = (x1 + x2) / 2;
        const my = (y1 + y2) / 2;
        const nx = (y2 - y1) / len; // left normal in screen coordinates (y down)
        const ny = -(x2 - x1) / len;
        ctx.beginPath();
        ctx.moveTo(mx, my);
        ctx.lineTo(mx + nx * 14, my + ny * 14);
        ctx.stroke();
        for (const [px, py] of [[x1, y1], [x2, y2]]) {
          ctx.beginPath();
          ctx.arc(px, py, 4, 0, Math.PI * 2);
          ctx.fillStyle = 'rgba(6, 214, 160, 1)';
          ctx.fill();
        }
        const la = linesA[l.id];
        const tag = la ? `${l.id}: in ${sumCounts(la.in)} · out ${sumCounts(la.out)}` : l.id;
        textTag(ctx, tag, mx + 6, my + 4, '#06d6a0', cssW, true);
      }

      if (det && Array.isArray(det.detections)) {
        ctx.lineWidth = 2;
        for (const d of det.detections) {
          if (!Array.isArray(d.box) || d.box.length !== 4) continue;
          const [bx1, by1, bx2, by2] = d.box;
          const x = bx1 * kx;
          const y = by1 * ky;
          const w = (bx2 - bx1) * kx;
          const h = (by2 - by1) * ky;
          const color = labelColor(String(d.label));
          ctx.strokeStyle = color;
          ctx.strokeRect(x, y, w, h);
          const text = `${d.label}${isNum(d.trackId) ? ` #${d.trackId}` : ''} ${isNum(d.score) ? d.score.toFixed(2) : ''}`.trim();
          textTag(ctx, text, x, y, color, cssW, false);
          labels.push(String(d.label));
        }
      }
    }
    e.overlay.dataset.boxes = String(labels.length);
    e.overlay.dataset.labels = labels.join(',');
    if (det && isNum(det.seq)) e.overlay.dataset.seq = String(det.seq);
  }

  // ---------------------------------------------------------------------------------------
  // Stats, chart, stage bar (once a second)

  function localStats(s) {
    const out = { fpsIn: NaN, fpsOut: NaN, dropped: s.dropped, p50: NaN, p99: NaN };
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
    return out;
  }

  function updateStats(s) {
    const local = localStats(s);
    const api = s.apiStats && now() - s.apiStatsAt < API_STATS_FRESH_MS ? s.apiStats : null;
    const pick = (k) => (api && isNum(api[k]) ? api[k] : local[k]);
    const e = s.el;
    e.fpsIn.textContent = fmtNum(pick('fpsIn'));
    e.fpsOut.textContent = fmtNum(pick('fpsOut'));
    const dropped = pick('dropped');
    e.drops.textContent = isNum(dropped) ? String(Math.round(dropped)) : '—';
    e.p50.textContent = fmtMs(pick('p50'));
    e.p99.textContent = fmtMs(pick('p99'));
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

  function chartPoints(s) {
    const nowSec = Math.floor(Date.now() / 1000);
    // Completed seconds become one p50 point each.
    for (const [sec, values] of s.seconds) {
      if (sec < nowSec) {
        s.secondP50.set(sec, median(values));
        s.seconds.delete(sec);
      }
    }
    for (const sec of s.secondP50.keys()) if (sec < nowSec - CHART_SECONDS - 1) s.secondP50.delete(sec);
    const pts = [];
    for (let sec = nowSec - CHART_SECONDS; sec < nowSec; sec++) {
      const v = s.secondP50.get(sec);
      pts.push(isNum(v) ? v : null);
    }
    return pts;
  }

  function niceCeil(v) {
    if (!(v > 0)) return 10;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function drawChart(s) {
    const pts = chartPoints(s); // also retires old seconds, so it runs even when the chart is not shown
    const c = s.el.chart;
    const cssW = c.clientWidth;
    const cssH = c.clientHeight;
    if (!cssW || !cssH) return;
    const ctx = sizeCanvas(c, cssW, cssH);
    ctx.clearRect(0, 0, cssW, cssH);
    const values = pts.filter((v) => v !== null);
    const top = niceCeil(Math.max(10, ...values) * 1.2);
    const padL = 2;
    const padR = 2;
    const padT = 4;
    const padB = 2;
    const w = cssW - padL - padR;
    const h = cssH - padT - padB;
    const xOf = (i) => padL + (i / (CHART_SECONDS - 1)) * w;
    const yOf = (v) => padT + h - (Math.min(v, top) / top) * h;

    ctx.strokeStyle = 'rgba(255,255,255,0.08)';
    ctx.lineWidth = 1;
    for (const f of [0.5, 1]) {
      const y = Math.round(yOf(top * f)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(padL, y);
      ctx.lineTo(padL + w, y);
      ctx.stroke();
    }
    ctx.fillStyle = 'rgba(200, 210, 225, 0.75)';
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    ctx.textAlign = 'left';
    ctx.fillText(fmtMs(top), padL + 4, padT);

    ctx.strokeStyle = '#5aa9e6';
    ctx.lineWidth = 1.5;
    ctx.lineJoin = 'round';
    ctx.beginPath();
    let pen = false;
    let last = -1;
    pts.forEach((v, i) => {
      if (v === null) {
        pen = false;
        return;
      }
      const x = xOf(i);
      const y = yOf(v);
      if (pen) ctx.lineTo(x, y);
      else ctx.moveTo(x, y);
      pen = true;
      last = i;
    });
    ctx.stroke();
    // Lone points (a second between two gaps) would not show as a line: mark them.
    ctx.fillStyle = '#5aa9e6';
    pts.forEach((v, i) => {
      if (v !== null && (i === 0 || pts[i - 1] === null) && (i === pts.length - 1 || pts[i + 1] === null)) {
        ctx.fillRect(xOf(i) - 1, yOf(v) - 1, 2, 2);
      }
    });
    if (last >= 0) {
      ctx.beginPath();
      ctx.arc(xOf(last), yOf(pts[last]), 2.5, 0, Math.PI * 2);
      ctx.fill();
    }
    c.dataset.points = String(values.length);
    const latest = last >= 0 ? pts[last] : NaN;
    const label = isNum(latest) ? `e2e p50 ${fmtMs(latest)} · 2 min max ${fmtMs(Math.max(...values))}` : 'e2e p50 / s — last 2 min';
    if (s.el.chartLabel.textContent !== label) s.el.chartLabel.textContent = label;
    c.setAttribute('aria-label', `End-to-end latency, p50 per second over the last 2 minutes: ${label}`);
  }

  function updateStages(s) {
    const e = s.el;
    const names = app.stages.filter((n) => STAGE_SPANS[n]);
    if (!e.stageSegs || e.stageSegs.names.join() !== names.join()) {
      e.stageBar.replaceChildren();
      e.stageLegend.replaceChildren();
      const segs = [];
      const vals = [];
      for (const n of names) {
        const seg = el('span', { class: `seg seg-${n}` });
        seg.style.background = STAGE_COLORS[n] || '#888';
        e.stageBar.append(seg);
        segs.push(seg);
        const val = el('span', { class: 'stage-ms', text: '—' });
        const sw = el('i', { class: 'swatch', 'aria-hidden': 'true' });
        sw.style.background = STAGE_COLORS[n] || '#888';
        e.stageLegend.append(el('li', { class: `stage stage-${n}`, 'data-stage': n }, sw, el('span', { class: 'stage-name', text: n }), val));
        vals.push(val);
      }
      e.stageSegs = { names, segs, vals };
    }
    const idx = names.map((n) => app.stages.indexOf(n));
    const avgs = idx.map((j) => {
      let sum = 0;
      let n = 0;
      for (const d of s.stageRecent) {
        if (isNum(d[j])) {
          sum += d[j];
          n++;
        }
      }
      return n ? sum / n : NaN;
    });
    const total = avgs.reduce((a, v) => a + (isNum(v) ? v : 0), 0);
    avgs.forEach((v, i) => {
      const seg = e.stageSegs.segs[i];
      const pct = total > 0 && isNum(v) ? (v / total) * 100 : 0;
      seg.style.width = `${pct}%`;
      seg.title = `${names[i]} ${fmtMs(v)}`;
      e.stageSegs.vals[i].textContent = fmtMs(v);
      e.stages.dataset[names[i]] = isNum(v) ? v.toFixed(2) : '';
    });
    e.stages.dataset.total = total > 0 ? total.toFixed(2) : '';
    e.stages.setAttribute('aria-label', `Average per-stage time of the last ${s.stageRecent.length} frames: ${names.map((n, i) => `${n} ${fmtMs(avgs[i])}`).join(', ')}`);
  }

  function tick() {
    for (const s of app.sources.values()) {
      updateDown(s);
      updateStats(s);
      drawChart(s);
      updateStages(s);
    }
    if (!app.connected && app.retryAt) {
      const left = Math.max(0, app.retryAt - now());
      $('#status-detail').textContent = `retry ${app.attempt} in ${(left / 1000).toFixed(0)} s`;
    }
  }

  // ---------------------------------------------------------------------------------------
  // GET /api/sources (slow path: states, sizes, zones, lines, stats)

  let apiInFlight = false;
  async function fetchSources() {
    if (apiInFlight) return;
    apiInFlight = true;
    try {
      const headers = token ? { Authorization: `Bearer ${token}` } : {};
      const res = await fetch(withToken('/api/sources'), { headers, cache: 'no-store' });
      if (!res.ok) {
        app.apiMissing = res.status === 404;
        return;
      }
      app.apiMissing = false;
      applySources(await res.json());
    } catch {
      // the WebSocket side reports the connection state; the next poll retries
    } finally {
      apiInFlight = false;
    }
  }

  function applySources(body) {
    if (!body || typeof body !== 'object') return;
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
        });
      }
      s.overlayDirty = true;
    }
    scheduleRender();
  }

  function pollSources() {
    clearTimeout(app.apiTimer);
    app.apiTimer = setTimeout(
      () => {
        if (app.connected) fetchSources().finally(pollSources);
        else pollSources();
      },
      app.apiMissing ? API_INTERVAL_MS * 5 : API_INTERVAL_MS,
    );
  }

  // ---------------------------------------------------------------------------------------
  // WebSocket connection with backoff

  function send(obj) {
    if (app.ws && app.ws.readyState === WebSocket.OPEN) app.ws.send(JSON.stringify(obj));
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
    return `${proto}//${location.host}/ws${token ? `?token=${encodeURIComponent(token)}` : ''}`;
  }

  function connect() {
    clearTimeout(app.retryTimer);
    app.retryAt = 0;
    $('#status-detail').textContent = app.attempt ? `connecting (attempt ${app.attempt})…` : 'connecting…';
    let ws;
    try {
      ws = new WebSocket(wsUrl());
    } catch (e) {
      showError(`cannot open the WebSocket: ${e && e.message}`);
      scheduleReconnect();
      return;
    }
    app.ws = ws;
    ws.onopen = () => {
      if (app.ws !== ws) return;
      app.connectedAt = now();
      app.lastMessageAt = now();
      setConnected(true, '');
    };
    ws.onmessage = (ev) => {
      if (app.ws !== ws) return;
      if (typeof ev.data === 'string') handleMessage(ev.data);
    };
    ws.onclose = (ev) => {
      if (app.ws !== ws) return;
      app.ws = null;
      const why = ev.code === 1013 ? 'server: client too slow' : ev.code === 1001 ? 'server going away' : ev.code === 1008 || ev.code === 4401 ? 'refused' : '';
      setConnected(false, why);
      for (const s of app.sources.values()) updateDown(s);
      scheduleReconnect();
    };
    ws.onerror = () => {
      // a close event follows, which schedules the reconnect
    };
  }

  function scheduleReconnect() {
    app.attempt++;
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(10, app.attempt - 1));
    const delay = Math.round(base * (0.8 + 0.4 * Math.random()));
    app.retryAt = now() + delay;
    $('#status-detail').textContent = `retry ${app.attempt} in ${(delay / 1000).toFixed(1)} s`;
    clearTimeout(app.retryTimer);
    app.retryTimer = setTimeout(connect, delay);
  }

  function keepAlive() {
    if (!app.ws || app.ws.readyState !== WebSocket.OPEN) return;
    if (now() - app.lastMessageAt > SILENCE_LIMIT_MS) {
      app.ws.close(4000, 'no message from the server');
      return;
    }
    send({ type: 'ping' });
  }

  // ---------------------------------------------------------------------------------------
  // Start

  function init() {
    const dlg = $('#snapshot-dialog');
    dlg.addEventListener('click', (ev) => {
      if (ev.target === dlg) dlg.close();
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) {
        for (const s of app.sources.values()) s.overlayDirty = true;
        scheduleRender();
      }
    });
    setConnected(false, '');
    connect();
    fetchSources();
    pollSources();
    setInterval(tick, 1000);
    setInterval(keepAlive, PING_INTERVAL_MS);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
