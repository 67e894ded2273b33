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
