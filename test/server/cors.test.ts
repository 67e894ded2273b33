/**
 * CORS for the pages server.allowedOrigins admits (a dashboard or a consumer on another origin):
 * - its errors (401, 429, 404 of a picture, 405, 500) carry the same CORS headers as its successes:
 *   a 401 without them was a network error to the page, which could not tell "log in" from "down";
 * - a preflight (a fetch with `Authorization: Bearer …`) is answered for the API routes from an
 *   allowed origin, without the token, and never reaches a route; any other origin gets 403 and
 *   no CORS header, so the token had to go in the URL (and into proxy logs);
 * - `OPTIONS *` answers 204 with Allow;
 * - the hostile cases: a `null` origin, an origin in another case or with its default port, HEAD,
 *   a body, Vary on every answer of such a route.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
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
const TOKEN = 's3cret';
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 9, 8, 7, 6]);

/** A server with the routes and the WebSocket hub as run.ts wires them, and one alert's picture held. */
async function setup(o: Partial<WebSocketHubOptions> = {}, server: Partial<HttpServerOptions> = {}): Promise<{ s: RunningServer; url: string; hub: WebSocketHub }> {
  const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['cam'], allowedOrigins: [ALLOWED], token: TOKEN, ...o });
  cleanups.push(() => hub.close());
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, token: TOKEN, upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } }, ...server });
  cleanups.push(() => s.close());
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
  const metrics = { scrape: async () => '', contentType: 'text/plain' } as unknown as Metrics;
  const rates = new RateMeter(() => []);
  cleanups.push(() => rates.close());
  registerRoutes(s, { pipeline, metrics, rates, geometry: () => ({ zones: [], lines: [] }), snapshot: (id, key) => hub.snapshot(id, key), snapshotOrigin: (req) => hub.crossOrigin(req) });
  const alert = { id: 'cam:r:run-1:1', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg', data: JPEG.toString('base64'), width: 2, height: 2 } };
  const m = { type: 'alert', version: 1, source: 'cam', alert } as unknown as Message;
  hub.publish('alert', 'cam', JSON.stringify(m), m);
  return { s, url: hub.snapshotUrl(alert.id)!, hub };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    r.on('error', reject);
    r.setTimeout(30_000, () => r.destroy(new Error('no answer in 30 s')));
    r.end(body);
  });
}

const cors = (a: Answer) => a.headers['access-control-allow-origin'];
const preflight = (origin: string, method = 'GET', headers = 'authorization') => ({ origin, 'access-control-request-method': method, 'access-control-request-headers': headers });

describe('CORS: an allowed origin reads the errors of the API routes', () => {
  it('401 (no token, a wrong one) carries Access-Control-Allow-Origin and exposes WWW-Authenticate; another origin gets none', async () => {
    const { s, url } = await setup();
    for (const path of ['/api/sources', url, '/api/sources?token=wrong']) {
      const r = await send(s.port, 'GET', path, { origin: ALLOWED });
      expect([r.status, cors(r)], path).toEqual([401, ALLOWED]);
      expect(r.headers['access-control-expose-headers'], path).toMatch(/WWW-Authenticate/i);
      expect(r.headers['access-control-allow-credentials'], path).toBeUndefined();
      expect(r.headers.vary, path).toMatch(/\bOrigin\b/);
      const wrong = await send(s.port, 'GET', path, { origin: ALLOWED, authorization: 'Bearer nope' });
      expect([wrong.status, cors(wrong)], path).toEqual([401, ALLOWED]);
      const foreign = await send(s.port, 'GET', path, { origin: 'http://evil.example' });
      expect([foreign.status, cors(foreign)], path).toEqual([401, undefined]);
      expect(foreign.headers.vary, path).toMatch(/\bOrigin\b/);
    }
  });

  it('/api/sources with the token: 200 with CORS to the allowed origin, none to another or the own origin', async () => {
    const { s } = await setup();
    const ok = await send(s.port, 'GET', '/api/sources', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([ok.status, cors(ok)]).toEqual([200, ALLOWED]);
    expect(JSON.parse(ok.body).model.name).toBe('m');
    // Not a no-cors resource of another origin: CORP stays same-origin (an <img>/<script> of it is still blocked).
    expect(ok.headers['cross-origin-resource-policy']).toBe('same-origin');
    const foreign = await send(s.port, 'GET', '/api/sources', { origin: 'http://evil.example', authorization: `Bearer ${TOKEN}` });
    expect([foreign.status, cors(foreign)]).toEqual([200, undefined]);
    const own = await send(s.port, 'GET', '/api/sources', { origin: `http://127.0.0.1:${s.port}`, authorization: `Bearer ${TOKEN}` });
    expect([own.status, cors(own)]).toEqual([200, undefined]);
    // The routes that are not the API's stay same-origin only.
    const metrics = await send(s.port, 'GET', '/metrics', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([metrics.status, cors(metrics)]).toEqual([200, undefined]);
  });

  it('429 carries CORS and exposes Retry-After to the allowed origin', async () => {
    let t = 0;
    const { s } = await setup({}, { requestBurstPerAddress: 1, requestsPerAddressPerSecond: 0.01, now: () => t });
    expect((await send(s.port, 'GET', '/api/sources', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const r = await send(s.port, 'GET', '/api/sources', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([r.status, cors(r)]).toEqual([429, ALLOWED]);
    expect(r.headers['access-control-expose-headers']).toMatch(/Retry-After/i);
    const foreign = await send(s.port, 'GET', '/api/sources', { origin: 'http://evil.example', authorization: `Bearer ${TOKEN}` });
    expect([foreign.status, cors(foreign)]).toEqual([429, undefined]);
    t += 1;
  });

  it('405 (a body, another method) and 500 (a failing route) carry CORS too', async () => {
    const { s } = await setup();
    const post = await send(s.port, 'POST', '/api/sources', { origin: ALLOWED, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, '{"a":1}');
    expect([post.status, cors(post)]).toEqual([405, ALLOWED]);
    const del = await send(s.port, 'DELETE', '/api/sources', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([del.status, cors(del)]).toEqual([405, ALLOWED]);
    s.route('/api/broken', () => {
      throw new Error('boom');
    }, { cors: () => ALLOWED });
    const fail = await send(s.port, 'GET', '/api/broken', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([fail.status, cors(fail)]).toEqual([500, ALLOWED]);
  });
});

describe('CORS: preflight', () => {
  it('an allowed origin\'s preflight is 204 with the methods, Authorization and a bounded Max-Age, without the token', async () => {
    const { s, url } = await setup();
    for (const path of ['/api/sources', url]) {
      const r = await send(s.port, 'OPTIONS', path, preflight(ALLOWED));
      expect([r.status, cors(r)], path).toEqual([204, ALLOWED]);
      expect(r.headers['access-control-allow-methods']).toBe('GET, HEAD');
      expect(String(r.headers['access-control-allow-headers']).toLowerCase().split(/,\s*/).sort()).toEqual(['authorization', 'content-type']);
      const age = Number(r.headers['access-control-max-age']);
      expect(age > 0 && age <= 7200, String(age)).toBe(true);
      expect(r.headers['access-control-allow-credentials']).toBeUndefined();
      expect(r.headers.vary).toMatch(/\bOrigin\b/);
      expect(r.body).toBe('');
      expect(r.headers['access-control-allow-private-network']).toBeUndefined();
    }
    // Chromium's Private Network Access: a public page's preflight to a LAN address asks whether it may.
    const pna = await send(s.port, 'OPTIONS', '/api/sources', { ...preflight(ALLOWED), 'access-control-request-private-network': 'true' });
    expect([pna.status, pna.headers['access-control-allow-private-network']]).toEqual([204, 'true']);
    const foreign = await send(s.port, 'OPTIONS', '/api/sources', { ...preflight('http://evil.example'), 'access-control-request-private-network': 'true' });
    expect([foreign.status, foreign.headers['access-control-allow-private-network']]).toEqual([403, undefined]);
  });

  it('another origin, a null origin, a route that is not the API\'s: 403 without CORS headers', async () => {
    const { s } = await setup();
    for (const [path, origin] of [['/api/sources', 'http://evil.example'], ['/api/sources', 'null'], ['/api/sources', 'http://viewer.example:8081'], ['/metrics', ALLOWED], ['/', ALLOWED], ['/nothing', ALLOWED], ['/ws', ALLOWED]] as const) {
      const r = await send(s.port, 'OPTIONS', path, preflight(origin));
      expect([r.status, cors(r)], `${path} ${origin}`).toEqual([403, undefined]);
      expect(r.headers['access-control-allow-methods'], path).toBeUndefined();
    }
  });

  it('the preflight never runs the route, and an OPTIONS that is no preflight still needs the token', async () => {
    let runs = 0;
    const { s } = await setup();
    s.route('/api/counted', (_q, r) => void (runs++, r.end('ran')), { cors: () => ALLOWED });
    const r = await send(s.port, 'OPTIONS', '/api/counted', preflight(ALLOWED));
    expect([r.status, r.body, runs]).toEqual([204, '', 0]);
    // No Access-Control-Request-Method: not a preflight, an OPTIONS request like any: 401 without the token.
    const plainOptions = await send(s.port, 'OPTIONS', '/api/counted', { origin: ALLOWED });
    expect([plainOptions.status, runs]).toEqual([401, 0]);
    const withToken = await send(s.port, 'OPTIONS', '/api/counted', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([withToken.status, runs]).toEqual([405, 0]);
    // The GET after it needs the token as ever.
    expect((await send(s.port, 'GET', '/api/counted', { origin: ALLOWED })).status).toBe(401);
    expect(runs).toBe(0);
  });

  it('a path under /api/ with no route (a typo) answers an allowed origin with CORS: its preflight, its 401 and its 404; another origin none', async () => {
    const { s } = await setup();
    // A page that misspells the route reads why (404, or 401 without the token), not a network error it takes for "server down".
    const pre = await send(s.port, 'OPTIONS', '/api/sourcs', preflight(ALLOWED));
    expect([pre.status, cors(pre), pre.headers['access-control-allow-methods']]).toEqual([204, ALLOWED, 'GET, HEAD']);
    const noToken = await send(s.port, 'GET', '/api/sourcs', { origin: ALLOWED });
    expect([noToken.status, cors(noToken), noToken.headers.vary]).toEqual([401, ALLOWED, 'Origin, Referer']);
    const missing = await send(s.port, 'GET', '/api/sourcs', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([missing.status, cors(missing)]).toEqual([404, ALLOWED]);
    for (const origin of ['http://evil.example', 'null']) {
      const p = await send(s.port, 'OPTIONS', '/api/sourcs', preflight(origin));
      expect([p.status, cors(p)], origin).toEqual([403, undefined]);
      const g = await send(s.port, 'GET', '/api/sourcs', { origin, authorization: `Bearer ${TOKEN}` });
      expect([g.status, cors(g)], origin).toEqual([404, undefined]);
    }
    // Outside /api/ a path with no route stays the server's own pages'.
    const other = await send(s.port, 'GET', '/nothing', { origin: ALLOWED, authorization: `Bearer ${TOKEN}` });
    expect([other.status, cors(other)]).toEqual([404, undefined]);
  });

  it('OPTIONS * answers 204 with Allow, not 404 or 401', async () => {
    const { s } = await setup();
    const r = await send(s.port, 'OPTIONS', '*');
    expect([r.status, r.headers.allow]).toEqual([204, 'GET, HEAD']);
  });
});

describe('CORS: a hostile consumer\'s origins', () => {
  it('an origin in upper case or with its default port is the allowed one, and the answer names it as a browser writes it', async () => {
    const { s } = await setup({ allowedOrigins: ['https://Wall.Example:443/'] });
    for (const origin of ['https://wall.example', 'HTTPS://WALL.EXAMPLE', 'https://wall.example:443']) {
      const r = await send(s.port, 'GET', '/api/sources', { origin, authorization: `Bearer ${TOKEN}` });
      expect([r.status, cors(r)], origin).toEqual([200, 'https://wall.example']);
    }
    for (const origin of ['http://wall.example', 'https://wall.example:8443', 'https://wall.example.evil', 'https://evilwall.example', 'https://wall.example/ https://evil.example', 'https://wall.example/', 'https://user@wall.example']) {
      const r = await send(s.port, 'GET', '/api/sources', { origin, authorization: `Bearer ${TOKEN}` });
      expect([r.status, cors(r)], origin).toEqual([200, undefined]);
    }
  });

  it('/ws compares the Origin the same way: one with a path or a trailing slash is no origin (403), the allowed one in upper case is admitted', async () => {
    const { s } = await setup();
    const ws = (origin: string) => send(s.port, 'GET', `/ws?token=${TOKEN}`, { origin });
    // A plain GET to /ws: the hub's Origin check (403), then 426 for a client that may connect.
    expect((await ws(ALLOWED)).status).toBe(426);
    expect((await ws(ALLOWED.toUpperCase())).status).toBe(426);
    for (const origin of [`${ALLOWED}/`, `${ALLOWED}/x`, `${ALLOWED}/ http://evil.example`, `http://127.0.0.1:${s.port}/x`, `http://u@viewer.example:8080`]) expect((await ws(origin)).status, origin).toBe(403);
  });

  it('a null origin (a sandboxed frame, a file) is admitted by "*" neither on /ws nor on the API routes', async () => {
    const { s } = await setup({ allowedOrigins: ['*'] });
    expect((await send(s.port, 'GET', `/ws?token=${TOKEN}`, { origin: 'http://any.example' })).status).toBe(426);
    expect((await send(s.port, 'GET', `/ws?token=${TOKEN}`, { origin: 'null' })).status).toBe(403);
    const api = await send(s.port, 'GET', '/api/sources', { origin: 'null', authorization: `Bearer ${TOKEN}` });
    expect([api.status, cors(api)]).toEqual([200, undefined]);
    expect((await send(s.port, 'OPTIONS', '/api/sources', preflight('null'))).status).toBe(403);
  });

  it('the session cookie opens the API routes for the server\'s own pages only: an allowed page of the same site (its <img>) must present the token', async () => {
    const { s, url } = await setup();
    const traded = await send(s.port, 'GET', `/?token=${TOKEN}`);
    expect(traded.status).toBe(303);
    const cookie = String((traded.headers['set-cookie'] as string[])[0]).split(';')[0];
    // The server's own page (no Referer: the dashboard sends none; or its own Origin): the cookie opens both.
    expect((await send(s.port, 'GET', url, { cookie })).status).toBe(200);
    expect((await send(s.port, 'GET', '/api/sources', { cookie, origin: `http://127.0.0.1:${s.port}` })).status).toBe(200);
    // An allowed page's <img src> (no Origin, its Referer) or fetch with credentials: the browser
    // sends the SameSite=Strict cookie to a same-site origin, and the picture loaded with it (CORP
    // cross-origin) without the token.
    for (const h of [{ referer: `${ALLOWED}/wall` }, { origin: ALLOWED }] as Record<string, string>[]) {
      expect((await send(s.port, 'GET', url, { cookie, ...h })).status, JSON.stringify(h)).toBe(401);
      expect((await send(s.port, 'GET', '/api/sources', { cookie, ...h })).status, JSON.stringify(h)).toBe(401);
      expect((await send(s.port, 'GET', `${url}&token=${TOKEN}`, { cookie, ...h })).status, JSON.stringify(h)).toBe(200);
    }
  });

  it('the session cookie opens no data route to a page of the same site that nothing admits (another port, a sandboxed frame): 401, as on /ws', async () => {
    const { s, url } = await setup();
    const traded = await send(s.port, 'GET', `/?token=${TOKEN}`);
    const cookie = String((traded.headers['set-cookie'] as string[])[0]).split(';')[0];
    const sibling = `http://127.0.0.1:${s.port + 1}`;
    // A fetch with credentials (its Origin), an <img> (its Referer), a sandboxed frame (null): the
    // browser sends the SameSite=Strict cookie from any page of the site; it ran the route with it.
    // An <img referrerpolicy="no-referrer"> names no page, but a browser says where it comes from (to loopback and https).
    for (const h of [{ origin: sibling }, { referer: `${sibling}/page` }, { origin: 'null' }, { 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      for (const path of [url, '/api/sources', '/metrics']) {
        const r = await send(s.port, 'GET', path, { cookie, ...h });
        expect([r.status, cors(r), r.headers['set-cookie']], `${path} ${JSON.stringify(h)}`).toEqual([401, undefined, undefined]);
      }
      // With the token it is what it was: answered, for the browser to keep from that page (no CORS, CORP same-origin).
      const t = await send(s.port, 'GET', '/api/sources', { ...h, authorization: `Bearer ${TOKEN}` });
      expect([t.status, cors(t), t.headers['cross-origin-resource-policy']], JSON.stringify(h)).toEqual([200, undefined, 'same-origin']);
    }
    // The server's own pages: no Origin nor Referer, or their own (http or https: a proxy in front), and the dashboard itself from a link on that sibling.
    for (const h of [{}, { origin: `http://127.0.0.1:${s.port}` }, { referer: `http://127.0.0.1:${s.port}/` }, { 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'none' }] as Record<string, string>[]) {
      expect((await send(s.port, 'GET', '/api/sources', { cookie, ...h })).status, JSON.stringify(h)).toBe(200);
    }
    expect((await send(s.port, 'GET', '/', { cookie, referer: `${sibling}/page`, 'sec-fetch-site': 'same-site' })).status).toBe(200);
    // /healthz answers anyone its status, and its details (source ids, states) to the token or the session, not to that page's cookie.
    expect(Object.keys(JSON.parse((await send(s.port, 'GET', '/healthz', { cookie })).body))).toContain('sources');
    expect(Object.keys(JSON.parse((await send(s.port, 'GET', '/healthz', { cookie, origin: sibling })).body))).not.toContain('sources');
  });

  it('HEAD from an allowed origin: the headers of the GET, no body', async () => {
    const { s, url } = await setup();
    const r = await send(s.port, 'HEAD', `${url}&token=${TOKEN}`, { origin: ALLOWED });
    expect([r.status, cors(r), r.headers['content-length'], r.body]).toEqual([200, ALLOWED, String(JPEG.length), '']);
  });
});

describe('CORS in Chromium: a page on an allowed origin fetches with Authorization: Bearer', () => {
  let browser: Browser;
  beforeAll(async () => void (browser = await launchChromium()), 60_000);
  afterAll(async () => void (await browser?.close()));

  async function pageServer(): Promise<string> {
    const srv = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>wall</title>'));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => srv.close(() => r())));
    return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  }

  it('the right token reads /api/sources and the picture, a wrong one reads its 401; another origin\'s page gets a network error', async () => {
    const allowed = await pageServer();
    const foreign = await pageServer();
    const { s, url } = await setup({ allowedOrigins: [allowed] });
    const base = `http://127.0.0.1:${s.port}`;
    const tryFetch = async (origin: string, token: string) => {
      const page = await browser.newPage();
      try {
        await page.goto(`${origin}/`);
        return await page.evaluate(
          async ({ base, picture, token }) => {
            const one = (u: string) =>
              fetch(u, { headers: { Authorization: `Bearer ${token}` } }).then(
                async (r) => `${r.status} ${r.headers.get('www-authenticate') ?? ''}`.trim(),
                () => 'network error',
              );
            return { sources: await one(`${base}/api/sources`), picture: await one(`${base}${picture}`) };
          },
          { base, picture: url, token },
        );
      } finally {
        await page.close();
      }
    };
    expect(await tryFetch(allowed, TOKEN)).toEqual({ sources: '200', picture: '200' });
    expect(await tryFetch(allowed, 'wrong')).toEqual({ sources: '401 Bearer realm="argus"', picture: '401 Bearer realm="argus"' });
    expect(await tryFetch(foreign, TOKEN)).toEqual({ sources: 'network error', picture: 'network error' });
  }, 120_000);
});
