/**
 * argus behind a reverse proxy that rewrites `Host` (nginx's default `proxy_pass
 * http://127.0.0.1:8080`): the browser's page is https://argus.example.com, its requests reach
 * argus with `Host: 127.0.0.1:8080`, so the dashboard's own `/ws` (which always sends Origin) was
 * a foreign origin: 403, or with allowedOrigins listing it, 401 (the session cookie is the own
 * pages'). server.publicOrigins names the origins argus is reached by; X-Forwarded-Host is never
 * believed (any client can send it).
 */
import { connect as netConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionValue } from '../../src/core/http.js';
import { ServerSchema } from '../../src/config/schema/server.js';
import { startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { PERSON_VIDEO } from '../helpers/assets.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const TOKEN = 's3cret';
const PUBLIC = 'https://argus.example.com';

async function setup(o: Partial<HttpServerOptions> = {}): Promise<RunningServer> {
  const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 10, maxClientMessageBytes: 4096, sources: () => ['cam'], token: TOKEN, publicOrigins: o.publicOrigins });
  cleanups.push(() => hub.close());
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, token: TOKEN, upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } }, ...o });
  cleanups.push(() => s.close());
  s.route('/api/sources', (_q, r) => void r.end('[]'));
  return s;
}

/** The status of a request written as is (its Host included), read from the first line of the answer. */
function statusOf(port: number, path: string, headers: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1');
    let got = '';
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join('')}Connection: close\r\n\r\n`));
    s.on('data', (d) => {
      got += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(got);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on('error', reject);
    s.on('close', () => reject(new Error(`closed without an answer: ${JSON.stringify(got)}`)));
  });
}

const WS = ['Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];

/** The dashboard's requests as the proxy forwards them: Host rewritten to argus's address, the page's Origin, its session cookie. */
function behindProxy(s: RunningServer, extra: string[] = [], origin = PUBLIC): string[] {
  const cookie = `argus_session_${s.port}=${sessionValue(TOKEN, Date.now() / 1000)}`;
  return [`Host: 127.0.0.1:${s.port}`, `Origin: ${origin}`, `Cookie: ${cookie}`, 'Sec-Fetch-Site: same-origin', ...extra];
}

describe('server.publicOrigins: argus behind a proxy that rewrites Host', () => {
  it("without it, the dashboard's own /ws and API calls through the proxy are a foreign page's (403, 401); X-Forwarded-Host changes nothing", async () => {
    const s = await setup();
    expect(await statusOf(s.port, '/ws', [...behindProxy(s), 'Connection: Upgrade', ...WS])).toBe(403);
    expect(await statusOf(s.port, '/api/sources', behindProxy(s))).toBe(401);
    const forged = behindProxy(s, ['X-Forwarded-Host: argus.example.com', 'Forwarded: host=argus.example.com;proto=https']);
    expect(await statusOf(s.port, '/ws', [...forged, 'Connection: Upgrade', ...WS])).toBe(403);
    expect(await statusOf(s.port, '/api/sources', forged)).toBe(401);
  });

  it('with it, a page of that origin is the server\'s own: its cookie opens /ws (101) and the API; any other origin is refused as before', async () => {
    const s = await setup({ publicOrigins: ['HTTPS://Argus.example.com:443'] });
    expect(await statusOf(s.port, '/ws', [...behindProxy(s), 'Connection: Upgrade', ...WS])).toBe(101);
    expect(await statusOf(s.port, '/api/sources', behindProxy(s))).toBe(200);
    // Another origin, and the same host over http (another origin), are foreign still.
    for (const other of ['https://evil.example', 'http://argus.example.com', 'https://argus.example.com:8443']) {
      expect(await statusOf(s.port, '/ws', [...behindProxy(s, [], other), 'Connection: Upgrade', ...WS]), other).toBe(403);
      expect(await statusOf(s.port, '/api/sources', behindProxy(s, [], other)), other).toBe(401);
    }
    // The cookie is still needed: the origin alone opens nothing.
    expect(await statusOf(s.port, '/api/sources', [`Host: 127.0.0.1:${s.port}`, `Origin: ${PUBLIC}`])).toBe(401);
  });

  it('on a loopback address its host names are served (a proxy that passes Host through); other names still 403; allowedHosts, when set, decides alone', async () => {
    const s = await setup({ publicOrigins: [PUBLIC] });
    expect(await statusOf(s.port, `/api/sources?token=${TOKEN}`, ['Host: argus.example.com'])).toBe(200);
    expect(await statusOf(s.port, `/api/sources?token=${TOKEN}`, ['Host: evil.example'])).toBe(403);
    const listed = await setup({ publicOrigins: [PUBLIC], allowedHosts: ['localhost'] });
    expect(await statusOf(listed.port, `/api/sources?token=${TOKEN}`, ['Host: argus.example.com'])).toBe(403);
    const without = await setup();
    expect(await statusOf(without.port, `/api/sources?token=${TOKEN}`, ['Host: argus.example.com'])).toBe(403);
  });

  it('a run wires server.publicOrigins to the server and the WebSocket hub', async () => {
    const config = PipelineSchema.parse({
      sources: [{ id: 'lobby', uri: PERSON_VIDEO, rate: 'fast' }],
      model: { warmupRuns: 1 },
      server: { port: 0, token: TOKEN, publicOrigins: [PUBLIC] },
      alerts: { snapshot: { mode: 'none' } },
    });
    const ac = new AbortController();
    let done: Promise<unknown> | undefined;
    const running = await new Promise<RunningPipeline>((resolve, reject) => {
      done = runPipeline(config, { status: false, signal: ac.signal, onReady: resolve });
      done.catch(reject);
    });
    try {
      const s = running.server!;
      expect(await statusOf(s.port, '/ws', [...behindProxy(s), 'Connection: Upgrade', ...WS])).toBe(101);
      expect(await statusOf(s.port, '/ws', [...behindProxy(s, [], 'https://evil.example'), 'Connection: Upgrade', ...WS])).toBe(403);
      expect(await statusOf(s.port, `/api/sources?token=${TOKEN}`, ['Host: argus.example.com'])).toBe(200);
    } finally {
      ac.abort();
      await done?.catch(() => {});
    }
  }, 120_000);

  it('the configuration takes origins only: no "*", no path, no null', () => {
    expect(ServerSchema.parse({ publicOrigins: [PUBLIC, 'http://10.0.0.5:8080/'] }).publicOrigins).toEqual([PUBLIC, 'http://10.0.0.5:8080/']);
    for (const bad of ['*', 'null', 'https://argus.example.com/argus', 'argus.example.com', 'ftp://x']) {
      const r = ServerSchema.safeParse({ publicOrigins: [bad] });
      expect(r.success, bad).toBe(false);
    }
    // A wildcard in the host matched no browser's Origin (which names one host): taken for
    // "every subdomain", it was loaded and admitted nothing. Refused, in allowedOrigins too.
    for (const key of ['publicOrigins', 'allowedOrigins']) {
      const r = ServerSchema.safeParse({ [key]: ['https://*.example.com'] });
      expect(r.success, key).toBe(false);
    }
  });
});
