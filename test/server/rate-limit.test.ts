// The HTTP server's per-address request rate (server.requestBurstPerAddress,
// requestsPerAddressPerSecond): a token bucket on a fake clock, so no test depends on how fast
// the machine answers.
import { request, Agent } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerSchema } from '../../src/config/schema.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import { MAX_PIPELINED, PROBE_RATE, SERVER_DEFAULTS, startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
import { Metrics } from '../../src/server/metrics.js';
import { DASHBOARD_MODULES, RateMeter, registerRoutes } from '../../src/server/routes.js';

const TOKEN = 'rate-t0ken';
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server with the real routes on a stand-in pipeline, its rate on the clock `t` (ms) the test moves. */
async function server(o: Partial<HttpServerOptions> = {}): Promise<{ s: RunningServer; clock: { t: number }; logs: string[] }> {
  const clock = { t: 0 };
  const logs: string[] = [];
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, token: TOKEN, now: () => clock.t, log: (m) => void logs.push(m), ...o });
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
  const rates = new RateMeter(() => []);
  registerRoutes(s, { pipeline, metrics: new Metrics({ stats: () => [], provider: 'cpu', http: s }), rates, geometry: () => ({ zones: [], lines: [] }) });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  cleanups.push(() => s.close(), () => rates.close(), () => agent.destroy());
  agents.set(s, agent);
  return { s, clock, logs };
}
const agents = new Map<RunningServer, Agent>();

/** GET `path` on a keep-alive connection (with the token unless `token` is false): status, Retry-After, body. */
function get(s: RunningServer, path: string, token = true): Promise<{ status: number; retryAfter?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port: s.port, path, agent: agents.get(s), headers: token ? { authorization: `Bearer ${TOKEN}` } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined, body }));
    });
    r.on('error', reject).end();
  });
}

async function statuses(s: RunningServer, path: string, n: number, token = true): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await get(s, path, token)).status);
  return out;
}

describe('HTTP: requests of one address are paced (server.requestBurstPerAddress, requestsPerAddressPerSecond)', () => {
  it('the burst is answered, the next request is 429 with Retry-After, counted and logged once; the bucket refills on the clock', async () => {
    const { s, clock, logs } = await server({ requestBurstPerAddress: 3, requestsPerAddressPerSecond: 0.5 });
    expect(await statuses(s, '/api/sources', 3)).toEqual([200, 200, 200]);
    const refused = await get(s, '/metrics');
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('2');
    expect(refused.body).toMatch(/server\.requestsPerAddressPerSecond/);
    expect(await statuses(s, '/api/sources', 5)).toEqual([429, 429, 429, 429, 429]);
    expect(s.stats.requestsLimited).toBe(6);
    expect(logs.filter((m) => m.includes('refused with 429'))).toHaveLength(1);
    clock.t += 1999;
    expect((await get(s, '/api/sources')).status).toBe(429);
    clock.t += 1;
    expect(await statuses(s, '/api/sources', 2)).toEqual([200, 429]);
    // /metrics counts them.
    clock.t += 2000;
    expect((await get(s, '/metrics')).body).toMatch(/^argus_http_requests_limited_total 8$/m);
  });

  it('a flood without the token gets 429, not a 401 each (or a 404)', async () => {
    const { s } = await server({ requestBurstPerAddress: 2, requestsPerAddressPerSecond: 1 });
    expect(await statuses(s, '/api/sources', 4, false)).toEqual([401, 401, 429, 429]);
    expect(await statuses(s, '/nope', 4, false)).toEqual([429, 429, 429, 429]);
  });

  it('requests without the token are paced apart from those with it: a flood without it from a shared address (a NAT, a proxy) leaves the operator its requests', async () => {
    const { s, clock } = await server({ requestBurstPerAddress: 3, requestsPerAddressPerSecond: 1 });
    for (let second = 0; second < 30; second++) {
      clock.t += 1000;
      // Someone behind the operator's address, without the token, as fast as answered…
      expect(await statuses(s, '/api/sources', 5, false)).toContain(429);
      // …and the operator's dashboard polling, with its token (or session), is answered.
      expect((await get(s, '/api/sources')).status).toBe(200);
    }
    // The operator's own requests are paced all the same.
    expect(await statuses(s, '/api/sources', 4)).toContain(429);
  }, 60_000);

  it('the defaults: four dashboards loading at once (27 files, /api/sources and 20 alert pictures each: a module refused leaves a page blank), then two polling every 2 s, with Prometheus scraping every 5 s, are never refused for ten minutes', async () => {
    const { s, clock } = await server();
    const page = ['/', '/app.js', '/style.css', ...DASHBOARD_MODULES.map((m) => `/js/${m}`), '/api/sources', ...Array.from({ length: 20 }, () => '/api/snapshot?id=a')];
    expect(page.length).toBeGreaterThan(45);
    const seen = new Set<number>();
    // Four screens (or tabs reloaded) together, then ten minutes of two polling and a scrape every 5 s.
    for (const p of [...page, ...page, ...page, ...page]) seen.add((await get(s, p)).status);
    for (let i = 0; i < 600 / 2; i++) {
      clock.t += 2000;
      seen.add((await get(s, '/api/sources')).status);
      seen.add((await get(s, '/api/sources')).status);
      if (i % 3 === 0) seen.add((await get(s, '/metrics')).status);
    }
    expect(seen.has(429)).toBe(false);
    expect(s.stats.requestsLimited).toBe(0);
  }, 60_000);

  it("probes have a bucket of their own: a kubelet probing every second is never refused while another client of its address floods the routes; a flood of probes is paced too", async () => {
    const { s, clock } = await server({ requestBurstPerAddress: 5, requestsPerAddressPerSecond: 1 });
    const probes: number[] = [];
    for (let second = 0; second < 60; second++) {
      clock.t += 1000;
      // The flood uses up the address's requests each second…
      await statuses(s, '/metrics', 3);
      // …and the liveness and readiness probes of that second are answered.
      probes.push((await get(s, '/healthz', false)).status, (await get(s, '/readyz', false)).status);
    }
    expect(new Set(probes)).toEqual(new Set([200]));
    expect(s.stats.requestsLimited).toBeGreaterThan(60);
    // A flood of probes: their own bucket (at least PROBE_RATE) runs out too.
    const flood = await statuses(s, '/healthz', PROBE_RATE.burst + 5, false);
    expect(flood.filter((x) => x === 429).length).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("a connection closed for pipelining too many takes none of its address's requests: the requests Node parsed after it were each counted and refused", async () => {
    const { s } = await server();
    const flood = `GET /api/sources HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`.repeat(20_000);
    await new Promise<void>((resolve) => {
      const sock = connect(s.port, '127.0.0.1', () => sock.end(flood));
      sock.on('error', () => resolve()).on('close', () => resolve()).resume();
    });
    expect(s.stats.requestsLimited).toBe(0);
    // The address has its burst but the requests of the connection up to the one that closed it.
    expect(await statuses(s, '/api/sources', SERVER_DEFAULTS.requestBurstPerAddress - (MAX_PIPELINED + 1))).not.toContain(429);
  });

  it('behind a proxy every client has one address: raised, its clients are not refused', async () => {
    const { s } = await server({ requestBurstPerAddress: 1000, requestsPerAddressPerSecond: 500 });
    expect(new Set(await statuses(s, '/api/sources', 300))).toEqual(new Set([200]));
  }, 60_000);

  it('server.requestBurstPerAddress and requestsPerAddressPerSecond are settings (whole burst from 1; rate above 0)', () => {
    expect(ServerSchema.parse({ requestBurstPerAddress: 5000, requestsPerAddressPerSecond: 0.5 })).toMatchObject({ requestBurstPerAddress: 5000, requestsPerAddressPerSecond: 0.5 });
    expect(ServerSchema.safeParse({ requestBurstPerAddress: 0 }).success).toBe(false);
    expect(ServerSchema.safeParse({ requestsPerAddressPerSecond: 0 }).success).toBe(false);
  });
});
