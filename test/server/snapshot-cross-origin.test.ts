/**
 * /api/snapshot for the pages server.allowedOrigins admits: such a page gets its alerts on /ws,
 * each with its picture's URL, and could not show one: every answer was sent with
 * `Cross-Origin-Resource-Policy: same-origin` and no CORS header, so an <img src> was blocked
 * (CORP) and a fetch too (CORS). An allowed origin now may load them (CORP cross-origin, and
 * `Access-Control-Allow-Origin: <it>` with `Vary`); any other origin, none.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startHttpServer, type RunningServer } from '../../src/server/http.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import type { Metrics } from '../../src/server/metrics.js';
import { WebSocketHub, type WebSocketHubOptions } from '../../src/sinks/websocket.js';
import type { Message } from '../../src/sinks/message.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ALLOWED = 'http://viewer.example:8080';
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 9, 8, 7, 6]);

/** A server with the WebSocket hub's routes as run.ts wires them, and one alert's picture held. */
async function setup(o: Partial<WebSocketHubOptions> = {}, jpeg: Buffer = JPEG): Promise<{ s: RunningServer; url: string }> {
  const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['cam'], allowedOrigins: [ALLOWED], token: 's3cret', ...o });
  cleanups.push(() => hub.close());
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, token: 's3cret', upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } } });
  cleanups.push(() => s.close());
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
  const metrics = { scrape: async () => '', contentType: 'text/plain' } as unknown as Metrics;
  const rates = new RateMeter(() => []);
  cleanups.push(() => rates.close());
  registerRoutes(s, { pipeline, metrics, rates, geometry: () => ({ zones: [], lines: [] }), snapshot: (id, key) => hub.snapshot(id, key), snapshotOrigin: (req) => hub.crossOrigin(req) });
  const alert = { id: 'cam:r:run-1:1', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg', data: jpeg.toString('base64'), width: 2, height: 2 } };
  const m = { type: 'alert', version: 1, source: 'cam', alert } as unknown as Message;
  hub.publish('alert', 'cam', JSON.stringify(m), m);
  const url = hub.snapshotUrl(alert.id);
  expect(url).toMatch(/^\/api\/snapshot\?id=.*&key=/);
  return { s, url: url! };
}

function get(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    r.on('error', reject);
    r.setTimeout(30_000, () => r.destroy(new Error('no answer in 30 s')));
    r.end();
  });
}

describe('/api/snapshot for the origins server.allowedOrigins admits', () => {
  it('a fetch (or <img crossorigin>) from an allowed origin, with the token, may read the picture: Access-Control-Allow-Origin names it, Vary: Origin, CORP cross-origin; no credentials are allowed', async () => {
    const { s, url } = await setup();
    const r = await get(s.port, `${url}&token=s3cret`, { origin: ALLOWED, 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' });
    expect(r.status).toBe(200);
    expect(r.body.equals(JPEG)).toBe(true);
    expect([r.headers['access-control-allow-origin'], r.headers['cross-origin-resource-policy'], r.headers['access-control-allow-credentials']]).toEqual([ALLOWED, 'cross-origin', undefined]);
    expect(r.headers.vary).toMatch(/\bOrigin\b/);
    // The data headers stay: no cache, no sniffing.
    expect([r.headers['cache-control'], r.headers['x-content-type-options']]).toEqual(['no-store', 'nosniff']);
    // A picture no longer held: the allowed page may read the 404 too (it says "no longer held").
    const gone = await get(s.port, '/api/snapshot?id=other&key=k&token=s3cret', { origin: ALLOWED });
    expect([gone.status, gone.headers['access-control-allow-origin']]).toEqual([404, ALLOWED]);
  });

  it('a plain <img src> of an allowed origin\'s page (no Origin: its Referer) is not blocked: CORP cross-origin', async () => {
    const { s, url } = await setup();
    const r = await get(s.port, `${url}&token=s3cret`, { referer: `${ALLOWED}/wall/index.html`, 'sec-fetch-mode': 'no-cors', 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'image' });
    expect([r.status, r.headers['cross-origin-resource-policy']]).toEqual([200, 'cross-origin']);
    // Chromium sends no Sec-Fetch-* to a plain-http address that is not loopback: the Referer alone.
    const bare = await get(s.port, `${url}&token=s3cret`, { referer: `${ALLOWED}/` });
    expect([bare.status, bare.headers['cross-origin-resource-policy']]).toEqual([200, 'cross-origin']);
  });

  it('any other origin gets the same-origin answer as before: CORP same-origin, no CORS; with allowedOrigins empty, an allowed-looking origin too', async () => {
    const { s, url } = await setup();
    const foreign: Record<string, string>[] = [
      { origin: 'http://evil.example:8080' },
      { origin: 'http://viewer.example:8081' },
      { origin: 'null' },
      { referer: 'http://evil.example/x', 'sec-fetch-mode': 'no-cors', 'sec-fetch-site': 'cross-site' },
      { referer: 'not a URL' },
      {},
    ];
    for (const h of foreign) {
      const r = await get(s.port, `${url}&token=s3cret`, h);
      expect([r.status, r.headers['cross-origin-resource-policy'], r.headers['access-control-allow-origin']], JSON.stringify(h)).toEqual([200, 'same-origin', undefined]);
      expect(r.headers.vary).toMatch(/\bOrigin\b/);
    }
    // The server's own page: same-origin serves it.
    const own = await get(s.port, `${url}&token=s3cret`, { origin: `http://127.0.0.1:${s.port}` });
    expect([own.headers['cross-origin-resource-policy'], own.headers['access-control-allow-origin']]).toEqual(['same-origin', undefined]);
    const closed = await setup({ allowedOrigins: [] });
    const r = await get(closed.s.port, `${closed.url}&token=s3cret`, { origin: ALLOWED });
    expect([r.status, r.headers['cross-origin-resource-policy'], r.headers['access-control-allow-origin']]).toEqual([200, 'same-origin', undefined]);
    // "*" admits any origin (as /ws does), but not an opaque one (null).
    const any = await setup({ allowedOrigins: ['*'] });
    expect((await get(any.s.port, `${any.url}&token=s3cret`, { origin: 'http://other.example' })).headers['access-control-allow-origin']).toBe('http://other.example');
    expect((await get(any.s.port, `${any.url}&token=s3cret`, { origin: 'null' })).headers['access-control-allow-origin']).toBeUndefined();
  });

  it('the token is still needed: an allowed origin without it is 401', async () => {
    const { s, url } = await setup();
    expect((await get(s.port, url, { origin: ALLOWED })).status).toBe(401);
  });
});

describe('/api/snapshot in Chromium: a page of an allowed origin shows its alerts\' pictures, another origin\'s cannot', () => {
  let browser: Browser;
  beforeAll(async () => void (browser = await launchChromium()), 60_000);
  afterAll(async () => void (await browser?.close()));

  /** A page server on 127.0.0.1 (another port: another origin of the same site, which the session cookie reaches). */
  async function pageServer(): Promise<string> {
    const srv = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>wall</title>'));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
    return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  }

  it('<img src>, <img crossorigin> and fetch load the picture from the allowed page; from another page all three are blocked', async () => {
    const allowed = await pageServer();
    const foreign = await pageServer();
    const jpeg = await sharp({ create: { width: 4, height: 3, channels: 3, background: { r: 200, g: 0, b: 0 } } }).jpeg().toBuffer();
    const { s, url } = await setup({ allowedOrigins: [allowed] }, jpeg);
    const picture = `http://127.0.0.1:${s.port}${url}&token=s3cret`;
    const tryAll = async (origin: string) => {
      const page = await browser.newPage();
      try {
        await page.goto(`${origin}/`);
        return await page.evaluate(async (src) => {
          const img = (cors: boolean) =>
            new Promise<number>((resolve) => {
              const i = new Image();
              if (cors) i.crossOrigin = 'anonymous';
              i.onload = () => resolve(i.naturalWidth);
              i.onerror = () => resolve(-1);
              i.src = `${src}&v=${cors}`;
            });
          const fetched = await fetch(src).then((r) => r.arrayBuffer().then((b) => b.byteLength), () => -1);
          return { img: await img(false), imgCors: await img(true), fetched };
        }, picture);
      } finally {
        await page.close();
      }
    };
    expect(await tryAll(allowed)).toEqual({ img: 4, imgCors: 4, fetched: jpeg.length });
    expect(await tryAll(foreign)).toEqual({ img: -1, imgCors: -1, fetched: -1 });
  }, 120_000);
});
