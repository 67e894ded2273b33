import { mkdirSync, readdirSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.js';
import { pipelineBaseDir } from '../../src/pipeline/pipeline.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { sessionValue } from '../../src/core/http.js';
import { startHttpServer } from '../../src/server/http.js';
import type { Metrics } from '../../src/server/metrics.js';
import { DASHBOARD_MODULES, RateMeter, registerRoutes, type RouteContext } from '../../src/server/routes.js';
import type { Message } from '../../src/sinks/message.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';
import '../helpers/assets.js';
import { launchChromium } from '../helpers/browser.js';

const ROOT = resolve(__dirname, '../..');
let browser: Browser;
let html: Server;
let htmlUrl: string;
beforeAll(async () => {
  browser = await launchChromium();
  // A "camera" that answers with a login page: ffmpeg cannot read it, so that source stays down.
  html = createServer((_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>'));
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}/cam`;
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => html.close(r));
});

describe('dashboard in headless Chromium', () => {
  it('connects, shows live frames with boxes and the zone, lists the safety-zone alert, and shows a down source’s state', async () => {
    const file = resolve(ROOT, 'pipelines/safety-zone.yaml');
    const config = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'native' });
    config.server = { host: '127.0.0.1', port: 0 };
    config.sources.push({ ...config.sources[0], id: 'dock', uri: htmlUrl, zones: [], lines: [], rules: [], reconnect: { ...config.sources[0].reconnect, initialDelayMs: 1000, maxDelayMs: 2000 } });
    const ac = new AbortController();
    let running: RunningPipeline | undefined;
    const done = runPipeline(config, { baseDir: pipelineBaseDir(file), status: false, signal: ac.signal, onReady: (r) => (running = r) });
    try {
      while (!running) await new Promise((r) => setTimeout(r, 50));
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // The page's Content-Security-Policy refuses nothing it needs (frames, snapshots, the WebSocket).
      page.on('console', (m) => void (m.type() === 'error' && /Content Security Policy/i.test(m.text()) && errors.push(m.text())));
      await page.goto(running.server!.url + '/');
      await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });

      const tile = '.tile[data-source="lobby"]';
      await page.waitForSelector(tile, { timeout: 15_000 });
      const frames1 = Number(await page.getAttribute(`${tile} .tile-frame`, 'data-frames'));
      await page.waitForFunction((sel) => Number(document.querySelector(sel)?.getAttribute('data-frames')) >= 5, `${tile} .tile-frame`, { timeout: 15_000 });
      const frames2 = Number(await page.getAttribute(`${tile} .tile-frame`, 'data-frames'));
      expect(frames2).toBeGreaterThan(frames1); // the live frame updates

      // The first person walks in at about 6 s: a person box is drawn on the live frame.
      await page.waitForFunction((sel) => (document.querySelector(sel)?.getAttribute('data-labels') ?? '').split(',').includes('person'), `${tile} .tile-overlay`, { timeout: 30_000 });
      expect(Number(await page.getAttribute(`${tile} .tile-overlay`, 'data-boxes'))).toBeGreaterThan(0);

      // …and steps into the zone at about 7.6 s: the alert is listed, with its snapshot.
      const alert = '#alerts .alert[data-rule="person-in-zone"][data-source="lobby"]';
      await page.waitForSelector(alert, { timeout: 30_000 });
      expect(await page.locator(`${alert} img.alert-snapshot`).count()).toBeGreaterThan(0);
      await page.waitForFunction((sel) => ((document.querySelector(sel) as HTMLImageElement | null)?.naturalWidth ?? 0) > 0, `${alert} img.alert-snapshot`, { timeout: 15_000 }); // the data: URL is shown

      // The source that cannot be read shows its state.
      await page.waitForFunction(() => {
        const s = document.querySelector('.tile[data-source="dock"] .tile-state')?.textContent ?? '';
        return s === 'reconnecting' || s === 'failed' || s === 'starting';
      }, undefined, { timeout: 15_000 });
      expect(await page.locator('.tile[data-source="dock"].down').count()).toBe(1);
      // Per-stage breakdown and the latency chart are filled in.
      expect(Number(await page.getAttribute(`${tile} .tile-stages`, 'data-infer'))).toBeGreaterThan(0);
      await page.waitForFunction((sel) => Number(document.querySelector(sel)?.getAttribute('data-points')) >= 2, `${tile} .tile-chart`, { timeout: 15_000 });

      mkdirSync(resolve(ROOT, '.test-results'), { recursive: true });
      await page.screenshot({ path: resolve(ROOT, '.test-results/dashboard.png') });
      expect(errors).toEqual([]);
      await page.close();
    } finally {
      ac.abort();
      await done;
    }
  }, 120_000);
});

/** The status of a GET sent with exactly this request target (no client-side normalisation of `..` or escapes). */
function status(port: number, path: string): Promise<number> {
  return new Promise((done, fail) => {
    get({ host: '127.0.0.1', port, path }, (r) => {
      r.resume();
      done(r.statusCode ?? 0);
    }).on('error', fail);
  });
}

/** The routes alone on a server of their own (no pipeline): a fake pipeline with no sources, the WebSocket hub, and `extra` route context. */
async function bareServer(token: string | undefined, sources: string[], extra: Partial<RouteContext> = {}) {
  const hub = new WebSocketHub({ token, maxBufferedBytes: 1 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => sources });
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, token, upgrades: { '/ws': (req, sock, head) => hub.handleUpgrade(req, sock, head) } });
  const rates = new RateMeter(() => []);
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as RouteContext['pipeline'];
  registerRoutes(s, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }), ...extra });
  return {
    s,
    hub,
    async close() {
      rates.close();
      await hub.close();
      await s.close();
    },
  };
}

describe('dashboard modules', () => {
  it('with a token, the page at /?token= trades it for a session cookie and drops it from its URL; app.js and every module in js/ load by the cookie (200, text/javascript), it connects and polls; unknown and traversal paths are 404, no token 401', async () => {
    const token = 's3cr=t/+';
    const q = `?token=${encodeURIComponent(token)}`;
    const server = await bareServer(token, ['lobby']);
    const s = server.s;
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      page.on('console', (m) => void (m.type() === 'error' && problems.push(`console: ${m.text()}`)));
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
      const scripts = new Map<string, { status: number; type: string }>();
      const withToken: string[] = []; // every request the page made after the first that still held the token
      page.on('request', (r) => void (r.url().includes('token') && !r.url().endsWith(q) && withToken.push(r.url())));
      page.on('response', (r) => {
        const u = new URL(r.url());
        if (u.pathname.endsWith('.js')) scripts.set(u.pathname, { status: r.status(), type: r.headers()['content-type'] ?? '' });
      });
      await page.goto(`${s.url}/${q}#x`); // resolves on the load event, which waits for the whole module graph
      expect(page.url()).toBe(`${s.url}/#x`); // the token is in no history entry, bookmark or address bar
      expect(await page.evaluate(() => document.cookie)).toBe(''); // HttpOnly: no script of the page reads it
      expect((await context.cookies()).map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, expires: Math.round((c.expires - Date.now() / 1000) / 60) }))).toEqual([{ name: `argus_session_${s.port}`, httpOnly: true, sameSite: 'Strict', expires: 12 * 60 }]); // Max-Age 12 h

      const files = readdirSync(resolve(ROOT, 'src/server/dashboard/js')).sort();
      expect([...DASHBOARD_MODULES].sort()).toEqual(files); // every module file is served, and nothing else
      expect([...scripts.keys()].sort()).toEqual(['/app.js', ...files.map((f) => `/js/${f}`)].sort()); // …and the page imports each one
      for (const [path, r] of scripts) {
        expect(r.status, path).toBe(200);
        expect(r.type, path).toMatch(/^text\/javascript/);
      }
      // Connected: the WebSocket carried the cookie; the model's name shown: so did the /api/sources poll.
      await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });
      await page.waitForFunction(() => document.querySelector('#model')?.textContent === 'model m 1', undefined, { timeout: 15_000 });
      expect(await page.locator('.tile[data-source="lobby"]').count()).toBe(1); // from the hello message
      expect(withToken).toEqual([]);
      expect(problems).toEqual([]);
      // Reloaded (the address bar's URL, no token): the cookie keeps it open.
      await page.reload();
      await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });

      // Opened with the token as pasted, its + unencoded (not form encoding's space), it connects and polls too.
      const fresh = await browser.newContext();
      try {
        const pasted = await fresh.newPage();
        await pasted.goto(`${s.url}/?token=${token}`);
        expect(pasted.url()).toBe(`${s.url}/`);
        await pasted.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });
        await pasted.waitForFunction(() => document.querySelector('#model')?.textContent === 'model m 1', undefined, { timeout: 15_000 });
      } finally {
        await fresh.close();
      }
      // A wrong token: 401, no cookie.
      const other = await browser.newContext();
      try {
        const p = await other.newPage();
        const r = await p.goto(`${s.url}/?token=wrong`);
        expect(r?.status()).toBe(401);
        expect(await other.cookies()).toEqual([]);
      } finally {
        await other.close();
      }

      // Opened from a link on another site (localhost is another site than 127.0.0.1): the browser keeps
      // the SameSite=Strict cookie off the redirect after it; the page reloads itself once, and connects.
      const linked = await browser.newContext();
      try {
        const p = await linked.newPage();
        await p.goto(htmlUrl.replace('127.0.0.1', 'localhost'));
        await p.setContent(`<a id="l" href="${s.url}/${q}">dashboard</a>`);
        await p.click('#l');
        await p.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });
        expect(p.url()).toBe(`${s.url}/`);
      } finally {
        await linked.close();
      }

      // Another page cannot frame it (clickjacking): the frame is refused, the dashboard never runs in it.
      const framer = await context.newPage();
      try {
        // setContent resolves on the load event, which waits for the frame's own load (or its refusal).
        await framer.setContent(`<iframe src="${s.url}/" width="800" height="600"></iframe>`);
        const child = framer.frames().find((f) => f !== framer.mainFrame());
        const loaded = child ? await child.evaluate(() => document.querySelector('#status') !== null).catch(() => false) : false;
        expect(loaded).toBe(false);
      } finally {
        await framer.close();
      }

      // Only the listed names are served, and only with the token.
      expect(await status(s.port, `/js/api.js${q}`)).toBe(200);
      expect(await status(s.port, '/js/api.js')).toBe(401);
      for (const path of ['/js/nope.js', '/js/', '/js/API.JS', '/js/..%2froutes.ts', '/js/%2e%2e/routes.ts', '/js/../routes.ts', '/js/../../../package.json', '/dashboard/app.js', '/js/api.js/..%2f..%2fhttp.ts']) {
        expect(await status(s.port, `${path}${q}`), path).toBe(404);
      }
    } finally {
      await context.close();
      await server.close();
    }
  }, 60_000);

  it('a session that ended (the cookie past server.sessionMaxAgeMs, or the token changed) is said so when the WebSocket is refused, not retried in silence', async () => {
    const server = await bareServer('s3cret', ['lobby']);
    const s = server.s;
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${s.url}/?token=s3cret`);
      await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 15_000 });
      expect(await page.locator('#error').isHidden()).toBe(true);
      // The laptop slept for 13 h: the browser still holds the cookie, the server refuses it.
      const [c] = await context.cookies();
      await context.addCookies([{ ...c, value: sessionValue('s3cret', Date.now() / 1000 - 13 * 3600) }]);
      for (const client of (server.hub as unknown as { clients: Set<{ ws: { terminate(): void } }> }).clients) client.ws.terminate();
      await page.waitForFunction(() => /session has ended/.test(document.querySelector('#error')?.textContent ?? '') && !(document.querySelector('#error') as HTMLElement).hidden, undefined, { timeout: 15_000 });
      expect(await page.locator('#status').textContent()).toBe('disconnected');
    } finally {
      await context.close();
      await server.close();
    }
  }, 60_000);
});

describe('dashboard of an argus worker: the cluster panel', () => {
  it('shows the worker, its lease and every camera with the worker that runs it (its own marked), follows the next poll, renders Kafka-borne names as text; hidden without a cluster', async () => {
    const evil = '<img src=x onerror="window.pwned=1">';
    let cluster: Record<string, unknown> | undefined = {
      worker: 'w1',
      group: 'g',
      lease: true,
      heartbeatAgoMs: 120,
      labels: { site: 'dock' },
      slots: [0, 1, 2],
      cameras: [{ id: 'cam1', slot: 1, epoch: 7 }],
      notHere: [{ id: 'gpu', reason: 'needs gpu=yes' }],
      map: [
        { camera: 'cam1', slot: 1, enabled: true, owner: 'w1', epoch: 7, state: 'claimed', here: true },
        { camera: 'cam2', slot: 5, enabled: true, owner: evil, epoch: 9, state: 'claimed', here: false },
        { camera: 'gpu', slot: 2, enabled: true, owner: null, epoch: null, state: null, here: false },
        { camera: 'old', slot: 6, enabled: true, owner: 'w3', epoch: 3, state: 'released', here: false },
      ],
    };
    const server = await bareServer(undefined, [], { health: () => (cluster ? { cluster } : {}) });
    const s = server.s;
    const page = await browser.newPage();
    try {
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${s.url}/`);
      await page.waitForSelector('#cluster:not([hidden])', { timeout: 15_000 });
      const rows = () =>
        page.$$eval('#cluster-map tbody tr', (trs) => trs.map((tr) => ({ camera: tr.getAttribute('data-camera'), worker: tr.getAttribute('data-worker'), here: tr.classList.contains('here'), cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) })));
      expect(await rows()).toEqual([
        { camera: 'cam1', worker: 'w1', here: true, cells: ['cam1', 'w1', '7', 'running'] },
        { camera: 'cam2', worker: evil, here: false, cells: ['cam2', evil, '9', 'running'] },
        { camera: 'gpu', worker: null, here: false, cells: ['gpu', '—', '', 'not here: needs gpu=yes'] },
        { camera: 'old', worker: null, here: false, cells: ['old', '—', '', 'unassigned'] }, // released: nobody runs it now
      ]);
      expect(await page.textContent('#cluster-summary')).toBe('worker w1 · group g · 3 slots · 1 camera here · site=dock');
      expect(await page.textContent('#cluster-lease')).toBe('lease held');
      expect(await page.locator('#cluster img').count()).toBe(0); // the owner name is text, not markup
      expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

      // The next poll: cam1 moved to w2, the lease lost.
      cluster = { ...cluster, lease: false, cameras: [], map: [{ camera: 'cam1', slot: 1, enabled: true, owner: 'w2', epoch: 11, state: 'claimed', here: false }] };
      await page.waitForFunction(() => document.querySelector('#cluster-map tbody tr')?.getAttribute('data-worker') === 'w2', undefined, { timeout: 15_000 });
      expect(await page.textContent('#cluster-lease')).toBe('no lease');
      expect(await page.locator('#cluster-map tr.here').count()).toBe(0);

      // argus run (no cluster object): the panel hides.
      cluster = undefined;
      await page.waitForSelector('#cluster[hidden]', { state: 'attached', timeout: 15_000 });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);
});

describe('dashboard with more tiles than the screen holds', () => {
  const ids = Array.from({ length: 24 }, (_, i) => `cam${String(i).padStart(2, '0')}`);
  /** The dashboard with 24 tiles (4 on screen), connected, on a server of its own; fails on any page error. */
  async function withTiles(f: (server: Awaited<ReturnType<typeof bareServer>>, page: Page) => Promise<void>): Promise<void> {
    const server = await bareServer(undefined, ids);
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    try {
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${server.s.url}/`);
      await page.waitForFunction((n) => document.querySelectorAll('.tile').length === n && document.querySelector('#status')?.textContent === 'connected', ids.length, { timeout: 15_000 });
      await f(server, page);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await server.close();
    }
  }
  /** A detections message with `boxes` boxes on a 1280 × 720 picture. */
  const detections = (source: string, seq: number, boxes = 20) =>
    JSON.stringify({
      v: 1,
      type: 'detections',
      source,
      seq,
      frame: { width: 1280, height: 720 },
      detections: Array.from({ length: boxes }, (_, i) => ({ box: [10 + i * 50, 20, 50 + i * 50, 120], label: 'person', classId: 0, score: 0.9, trackId: i + 1 })),
      dropped: 0,
    });

  it('draws the overlays of the tiles on screen only; a tile scrolled into view draws its latest detections at once, and the one scrolled out stops', () =>
    withTiles(async (server, page) => {
      const first = '.tile[data-source="cam00"] .tile-overlay';
      const last = '.tile[data-source="cam23"] .tile-overlay';
      const attr = (sel: string, name: string) => page.getAttribute(sel, name);
      const publish = (seq: number, only = ids) => {
        // cam00 last: the messages come in order, so once its tile shows a round, the page has taken all of it.
        for (const id of [...only].reverse()) server.hub.publish('detections', id, detections(id, seq), undefined as unknown as Message);
      };
      for (let seq = 1; seq <= 10; seq++) {
        publish(seq);
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(r)));
      }
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-seq') === '10', first, { timeout: 15_000 });
      expect(await attr(first, 'data-boxes')).toBe('20');
      // The last tile, below the fold, was never drawn: no boxes, no seq, no draw.
      expect(await page.$eval(last, (e) => e.getBoundingClientRect().top > window.innerHeight + 100)).toBe(true);
      expect(await attr(last, 'data-seq')).toBeNull();
      expect(await attr(last, 'data-boxes')).toBe('0');
      expect(await attr(last, 'data-draws')).toBeNull();
      expect(Number(await attr(first, 'data-draws'))).toBeGreaterThan(0);

      // Scrolled into view: its latest detections are drawn without a new message.
      await page.$eval('.tile[data-source="cam23"]', (e) => e.scrollIntoView({ block: 'end' }));
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-seq') === '10', last, { timeout: 15_000 });
      expect(await attr(last, 'data-boxes')).toBe('20');
      expect(await attr(last, 'data-draws')).toBe('1');
      // And the first tile, now off screen, is not drawn again while messages go on.
      const firstDraws = await attr(first, 'data-draws');
      publish(11);
      publish(12, ['cam23']); // after cam00's round 11: once it is drawn, cam00's was taken and a frame went by
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-seq') === '12', last, { timeout: 15_000 });
      expect(await page.$eval(first, (e) => e.getBoundingClientRect().bottom < -100)).toBe(true);
      expect(await attr(first, 'data-seq')).toBe('10');
      expect(await attr(first, 'data-draws')).toBe(firstDraws);
    }), 60_000);

  it('decodes the live pictures of the tiles on screen only; a tile scrolled into view decodes its newest picture at once', () =>
    withTiles(async (server, page) => {
      const jpeg = (await sharp({ create: { width: 64, height: 36, channels: 3, background: '#808080' } }).jpeg().toBuffer()).toString('base64');
      const publish = (seq: number, only = ids) => {
        for (const id of [...only].reverse()) server.hub.publishFrame(id, JSON.stringify({ type: 'frame', version: 1, source: id, seq, contentType: 'image/jpeg', data: jpeg, width: 64, height: 36 }));
      };
      const first = '.tile[data-source="cam00"] .tile-frame';
      const last = '.tile[data-source="cam23"] .tile-frame';
      for (let seq = 1; seq <= 6; seq++) {
        publish(seq);
        // cam00's picture of this round decoded: the page has taken the whole round (cam00 comes last).
        await page.waitForFunction(([sel, n]) => document.querySelector(sel as string)?.getAttribute('data-seq') === String(n), [first, seq], { timeout: 15_000 });
      }
      expect(await page.getAttribute(first, 'data-frames')).toBe('6');
      // Below the fold: six pictures came, none decoded.
      expect(await page.$eval(last, (e) => e.getBoundingClientRect().top > window.innerHeight + 100)).toBe(true);
      expect(await page.getAttribute(last, 'data-frames')).toBe('0');
      // Scrolled into view: its newest picture, and only that one, without a new message.
      await page.$eval('.tile[data-source="cam23"]', (e) => e.scrollIntoView({ block: 'end' }));
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-frames') === '1', last, { timeout: 15_000 });
      expect(await page.getAttribute(last, 'data-seq')).toBe('6');
      // Now on screen, it decodes as pictures come; cam00, scrolled out, does not. (Each picture is
      // waited for: two decoded at once, the older one finishing last is dropped, newest wins.)
      publish(7);
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-seq') === '7', last, { timeout: 15_000 });
      publish(8, ['cam23']);
      await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('data-seq') === '8', last, { timeout: 15_000 });
      expect(await page.getAttribute(last, 'data-frames')).toBe('3');
      expect(await page.getAttribute(first, 'data-frames')).toBe('6');
    }), 60_000);

  it('a tile off screen whose pictures come is not "no frames"; scrolled in after they stopped, its held picture shows as old as it is (down), not as live', () =>
    withTiles(async (server, page) => {
      const jpeg = (await sharp({ create: { width: 64, height: 36, channels: 3, background: '#808080' } }).jpeg().toBuffer()).toString('base64');
      const tile = '.tile[data-source="cam23"]';
      expect(await page.$eval(tile, (e) => e.getBoundingClientRect().top > window.innerHeight + 100)).toBe(true);
      // 4 s of pictures for the tile below the fold (more than the 3 s after which a silent tile is "no frames").
      for (let seq = 1; seq <= 20; seq++) {
        server.hub.publishFrame('cam23', JSON.stringify({ type: 'frame', version: 1, source: 'cam23', seq, contentType: 'image/jpeg', data: jpeg, width: 64, height: 36 }));
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await page.$eval(tile, (e) => e.classList.contains('down'))).toBe(false);
      expect(await page.getAttribute(`${tile} .tile-frame`, 'data-frames')).toBe('0');
      // Then nothing: once silent for 3 s it is down, off screen as well.
      await page.waitForFunction((sel) => document.querySelector(sel)?.classList.contains('down'), tile, { timeout: 15_000 });
      // Scrolled in: the held picture is drawn, and the tile stays down (it is that old).
      await page.$eval(tile, (e) => e.scrollIntoView({ block: 'end' }));
      const shown = await page.waitForFunction((sel) => {
        const t = document.querySelector(sel);
        return t?.querySelector('.tile-frame')?.getAttribute('data-frames') === '1' ? { down: t.classList.contains('down'), seq: t.querySelector('.tile-frame')?.getAttribute('data-seq') } : null;
      }, tile, { timeout: 15_000 });
      expect(await shown.jsonValue()).toEqual({ down: true, seq: '20' });
    }), 60_000);
});
