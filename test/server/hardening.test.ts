/**
 * The HTTP server and the WebSocket hub against a hostile client: every test talks to a real
 * server on 127.0.0.1 (port 0) through raw sockets or a raw `ws` client. The timeouts are Node's
 * own timers, which virtual time cannot drive: each test checks that the configured value is in
 * force on the server, and that the socket is really closed. A wall-clock bound is only used
 * where nothing else tells two mechanisms apart, and then it is far from both (e.g. an idle
 * socket closed after ~1 s, or after Node's 30 s check interval if it were left at its default).
 */
import { createHash } from 'node:crypto';
import { connect as netConnect, createServer as createNetServer, type Server as NetServer } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { MAX_SESSION_COOKIES, sessionAge, sessionValue, SESSION_MAX_AGE_MS, tokenMatches } from '../../src/core/http.js';
import { hostAllowed, MAX_PIPELINED, startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import type { Metrics } from '../../src/server/metrics.js';
import { WebSocketHub, type WebSocketHubOptions } from '../../src/sinks/websocket.js';
import type { Message } from '../../src/sinks/message.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `f` until it holds; `ms` only bounds a hang. */
async function until(f: () => boolean, ms = 60_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Settles with the promise, or rejects after ms (so a regression fails fast instead of at the test timeout). */
function within<T>(p: Promise<T>, ms = 60_000, what = 'it'): Promise<T> {
  return Promise.race([p, new Promise<T>((_r, rej) => setTimeout(() => rej(new Error(`timed out waiting for ${what}`)), ms).unref())]);
}

interface Raw {
  text: string;
  status?: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed (or reset) the connection. */
  closed: boolean;
}

/** Sends raw bytes (or nothing) and collects what comes back until the server closes, `until` holds, or timeoutMs (a hang bound). */
function raw(port: number, payload: string | Buffer | null, o: { timeoutMs?: number; until?: (text: string) => boolean } = {}): Promise<Raw> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = netConnect(port, '127.0.0.1');
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const [head, ...rest] = text.split('\r\n\r\n');
      const lines = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '');
      let body = rest.join('\r\n\r\n');
      if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
      resolve({ text, status: m ? Number(m[1]) : undefined, headers, body, closed });
    };
    const timer = setTimeout(() => finish(false), o.timeoutMs ?? 60_000);
    s.on('connect', () => {
      if (payload !== null) s.write(payload);
    });
    s.on('data', (d) => {
      chunks.push(d);
      if (o.until?.(Buffer.concat(chunks).toString('latin1'))) finish(false);
    });
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
  });
}
function dechunk(s: string): string {
  let out = '';
  for (;;) {
    const i = s.indexOf('\r\n');
    const n = parseInt(s.slice(0, i), 16);
    if (!(n > 0)) return out;
    out += s.slice(i + 2, i + 2 + n);
    s = s.slice(i + 2 + n + 2);
  }
}
const req = (method: string, path: string, headers: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

async function server(o: Partial<HttpServerOptions> = {}): Promise<RunningServer> {
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, ...o });
  cleanups.push(() => s.close());
  return s;
}

const SECRET_URL = 'rtsp://admin:hunter2@cam.local/stream?token=abc123';
/** registerRoutes on a pipeline stand-in whose sources carry credentials in their reasons and errors. */
function fakeContext(publicMetrics = false, stopping = () => false, stuckRun: () => { ms: number; stuck: number; workers: number } | undefined = () => undefined) {
  const e2e = { sorted: () => [10, 20, 30] };
  const e2eBy = { counts: [0, 0, 3, 0] }; // arrival
  const stats = [
    { id: 'lobby', state: 'streaming', framesOut: 10, reconnects: 0, dropped: 0, width: 640, height: 480, fps: 25, e2e, pipeline: e2e, e2eBy, lastTransition: { reason: `connected to ${SECRET_URL}`, at: 1 } },
    { id: 'dock', state: 'failed', framesOut: 0, reconnects: 3, dropped: 0, width: 0, height: 0, fps: 0, e2e: { sorted: () => [] }, pipeline: { sorted: () => [] }, e2eBy: { counts: [0, 0, 0, 0] }, lastTransition: { reason: `cannot open ${SECRET_URL}`, at: 2 }, error: Object.assign(new Error(`ffmpeg: ${SECRET_URL}: 401 Unauthorized\nmore`), { code: 'VAP_ERR_SOURCE_EXIT' }) },
  ];
  const pipeline = { stats, detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun } } as unknown as Pipeline;
  const metrics = { scrape: async () => 'argus_up 1\n', contentType: 'text/plain; version=0.0.4; charset=utf-8' } as unknown as Metrics;
  const rates = new RateMeter(() => []);
  cleanups.push(() => rates.close());
  return { pipeline, metrics, rates, geometry: () => ({ zones: [], lines: [] }), publicMetrics, stopping };
}

describe('HTTP: nothing a client sends throws out of a handler', () => {
  it('a URL that cannot be parsed answers 400 (request and upgrade); a throwing route answers 500; the server keeps answering', async () => {
    const s = await server({
      routes: {
        '/ok': (_q, r) => void r.end('ok'),
        '/throws': () => {
          throw new Error('boom rtsp://u:p@h/x');
        },
        '/rejects': async () => {
          throw new Error('async boom');
        },
      },
      upgrades: { '/ws': () => {
        throw new Error('upgrade boom');
      } },
    });
    // Absolute-form targets: a path (origin-form) always parses, `//x:99999` as the path it is.
    for (const path of ['http://x:99999/', 'http://[::1/', 'http://[zz]/']) {
      const r = await raw(s.port, req('GET', path));
      expect(r.status, path).toBe(400);
    }
    const up = await raw(s.port, `GET http://x:99999/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    expect(up.status).toBe(400);
    expect(up.closed).toBe(true);
    const sync = await raw(s.port, req('GET', '/throws'));
    expect(sync.status).toBe(500);
    expect(sync.body).not.toContain('u:p@'); // no internals (and never credentials) in the answer
    expect((await raw(s.port, req('GET', '/rejects'))).status).toBe(500);
    const upThrows = await raw(s.port, `GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    expect(upThrows.status).toBe(500);
    expect(upThrows.closed).toBe(true);
    const noUpgrade = await raw(s.port, `GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    expect(noUpgrade.status).toBe(404);
    expect((await raw(s.port, req('GET', '/ok'))).body).toBe('ok');
  });

  it('a path the URL parser would rewrite (a dot segment, plain or encoded; a backslash) names no route (404, 401 first without the token), request and upgrade: it reached the route it resolved to, past a proxy that admits a prefix as sent', async () => {
    let metrics = 0;
    let upgraded = 0;
    const s = await server({ token: 'sekrit', routes: { '/metrics': (_q, r) => void (metrics++, r.end('m')), '/api/x': (_q, r) => void r.end('x') }, upgrades: { '/ws': (_q, so) => void (upgraded++, so.destroy()) } });
    for (const path of ['/api/../metrics', '/api/%2e%2e/metrics', '/api/%2E./metrics', '/api/./x', '/api\\x', '/api/x/.', 'http://x/api/../metrics', '*/../metrics', '*/%2e%2e/metrics']) {
      expect((await raw(s.port, req('GET', `${path}?token=sekrit`))).status, path).toBe(404);
      expect((await raw(s.port, req('GET', path))).status, path).toBe(401);
    }
    const up = await raw(s.port, `GET /api/../ws?token=sekrit HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    expect(up.status).toBe(404);
    const plainWs = await raw(s.port, req('GET', '/x/../ws?token=sekrit'));
    expect(plainWs.status).toBe(404); // not the 426 of /ws
    expect([metrics, upgraded]).toEqual([0, 0]);
    // As the URL writes them, the same paths are served; `//`, `%2f` and `*` are no such rewrite.
    for (const [path, status] of [['/metrics', 200], ['http://x/metrics', 200], ['/api/x?q=/../', 200], ['//metrics', 404], ['/api%2fx', 404]] as const) {
      expect((await raw(s.port, req('GET', path.includes('?') ? `${path}&token=sekrit` : `${path}?token=sekrit`))).status, path).toBe(status);
    }
    expect((await raw(s.port, req('OPTIONS', '*'))).status).toBe(204);
  });

  it('WebSocketHub.handleUpgrade answers 400 to a URL that cannot be parsed, even when called directly', async () => {
    const hub = new WebSocketHub({ maxBufferedBytes: 65536, maxAlertBacklog: 10, maxClientMessageBytes: 4096, sources: () => [], token: 't' });
    cleanups.push(() => hub.close());
    const ns: NetServer = createNetServer((sock) =>
      hub.handleUpgrade({ url: 'http://x:99999/ws', headers: { host: '127.0.0.1' } } as unknown as IncomingMessage, sock, Buffer.alloc(0)),
    );
    await new Promise<void>((r) => ns.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => ns.close(r)));
    const r = await raw((ns.address() as AddressInfo).port, null);
    expect(r.status).toBe(400);
    expect(r.closed).toBe(true);
    expect(hub.stats.refused).toBe(1);
  });
});

describe('HTTP: close', () => {
  it('close() returns, and the client is cut off, with an upgraded socket still open: it waited for every such client to leave', async () => {
    const s = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      // An upgrade handler that keeps its socket (as a WebSocket admitted while its hub was closing did).
      upgrades: { '/ws': (_q, sock) => void sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n') },
    });
    let closed = false;
    cleanups.push(() => (closed ? undefined : s.close()));
    const client = netConnect(s.port, '127.0.0.1');
    cleanups.push(() => client.destroy());
    client.on('error', () => undefined);
    const gone = new Promise<void>((r) => client.once('close', () => r()));
    client.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    const answer = await within(new Promise<string>((r) => client.once('data', (d) => r(d.toString('latin1')))), 10_000, 'the 101');
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    await within(s.close(), 5000, 'close()');
    closed = true;
    await within(gone, 5000, 'the client cut off');
  });
});

describe('HTTP: methods', () => {
  it('only GET and HEAD: others answer 405 with Allow: GET, HEAD; HEAD answers without a body', async () => {
    const s = await server();
    registerRoutes(s, fakeContext());
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH']) {
      const r = await raw(s.port, req(m, '/healthz', m === 'POST' ? { 'content-length': '2' } : {}) + (m === 'POST' ? '{}' : ''));
      expect(r.status, m).toBe(405);
      expect(r.headers.allow, m).toBe('GET, HEAD');
    }
    expect((await raw(s.port, req('FOO', '/healthz'))).status).toBe(400); // not a method the parser knows
    expect((await raw(s.port, req('CONNECT', '127.0.0.1:1'))).closed).toBe(true);
    const head = await raw(s.port, req('HEAD', '/healthz'));
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('application/json');
    expect(head.body).toBe('');
    const get = await raw(s.port, req('GET', '/healthz'));
    expect(JSON.parse(get.body).status).toBe('ok');
  });
});

describe('HTTP: limits', () => {
  it('pipelined requests: up to MAX_PIPELINED in one write are answered in order; a connection sending more before reading is closed, none of its routes run, and the server answers others', async () => {
    // A 27 KB answer, as /metrics: 20 000 of them queued for a client that never reads grew the process by 500 MB.
    let runs = 0;
    const s = await server({
      routes: {
        '/m': (_q, r) => {
          runs++;
          r.end('x'.repeat(27_000));
        },
      },
    });
    const get = (close = false) => `GET /m HTTP/1.1\r\nHost: 127.0.0.1\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
    const ok = await raw(s.port, get().repeat(MAX_PIPELINED - 1) + get(true));
    expect(ok.text.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(MAX_PIPELINED);
    expect(runs).toBe(MAX_PIPELINED);
    runs = 0;
    const flood = await raw(s.port, get().repeat(20_000));
    expect(flood.closed).toBe(true);
    expect(flood.text).toBe('');
    expect(runs).toBe(0);
    const after = await raw(s.port, get(true));
    expect(after.status).toBe(200);
    expect(runs).toBe(1);
  });

  it('headers over maxHeaderBytes answer 431; a malformed request 400; both close the connection', async () => {
    const s = await server({ maxHeaderBytes: 2048, routes: { '/ok': (_q, r) => void r.end('ok') } });
    const big = await raw(s.port, req('GET', '/ok', { 'x-big': 'a'.repeat(4096) }));
    expect(big.status).toBe(431);
    expect(big.text).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large/);
    expect(big.closed).toBe(true);
    const longUrl = await raw(s.port, req('GET', '/ok?' + 'q'.repeat(4096)));
    expect(longUrl.status).toBe(431);
    expect((await raw(s.port, req('GET', '/ok', { 'x-small': 'a'.repeat(512) }))).body).toBe('ok');
    for (const bad of ['GARBAGE\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', 'GET /ok HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n', '\x00\x01\x02\r\n\r\n']) {
      const r = await raw(s.port, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.closed).toBe(true);
    }
  });

  it('a socket that sends nothing is closed within headersTimeout (408); so is one that sends its headers a byte at a time', async () => {
    const s = await server({ headersTimeoutMs: 1000, requestTimeoutMs: 5000 });
    expect(s.server.headersTimeout).toBe(1000); // the configured value, not the default (10 s)
    // Closed after ~1 s. The bound (20 s) tells that from Node checking the timeouts only every
    // 30 s by default (the server sets connectionsCheckingInterval), with room for a busy machine.
    const idle = await raw(s.port, null, { timeoutMs: 20_000 });
    expect(idle.closed).toBe(true);
    expect(idle.status).toBe(408);

    // Slowloris: a header byte every 100 ms, never finishing: the server closes it (same bound).
    const closed = await new Promise<boolean>((resolve) => {
      const sock = netConnect(s.port, '127.0.0.1');
      const text = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(1000);
      let i = 0;
      const drip = setInterval(() => sock.writable && sock.write(text[i++ % text.length]), 100);
      const end = (byServer: boolean) => (clearInterval(drip), sock.destroy(), resolve(byServer));
      sock.on('error', () => end(true));
      sock.on('close', () => end(true));
      setTimeout(() => end(false), 20_000);
    });
    expect(closed).toBe(true);
  }, 120_000);

  it.each([
    // Chunks of 64 KiB, each framed, for as long as the connection is open.
    ['a chunked body', 'Transfer-Encoding: chunked', Buffer.concat([Buffer.from('10000\r\n'), Buffer.alloc(0x10000, 0x61), Buffer.from('\r\n')])],
    ['a Content-Length body', 'Content-Length: 1000000000000', Buffer.alloc(0x10000, 0x61)],
  ])('a request with %s answers 413 and is closed while its body still streams; no route runs (any route: 401 and 404 too)', async (_n, header, chunk) => {
    // Node read and discarded such a body after the answer: one client streaming a chunked body
    // kept the event loop reading ~1 GB/s for requestTimeoutMs (30 s), 60 % of a core.
    let ran = 0;
    const s = await server({ token: 'sekrit', requestTimeoutMs: 600_000, routes: { '/ok': (_q, r) => void (ran++, r.end('ok')) } });
    for (const path of ['/ok?token=sekrit', '/ok', '/nope?token=sekrit']) {
      const r = await within(
        new Promise<{ head: string; sent: number }>((resolve) => {
          const sock = netConnect(s.port, '127.0.0.1');
          let head = '';
          let sent = 0;
          let open = true;
          const pump = () => {
            while (open && sock.write(chunk)) sent += chunk.length;
          };
          sock.on('connect', () => (sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${header}\r\n\r\n`), pump()));
          sock.on('drain', pump);
          sock.on('data', (d) => (head += d.toString('latin1')));
          const end = () => ((open = false), sock.destroy(), resolve({ head, sent }));
          sock.on('error', end);
          sock.on('close', end);
        }),
        60_000,
        `the server to close ${path}`,
      );
      expect(r.head).toMatch(/^HTTP\/1\.1 413 /);
      expect(r.head.toLowerCase()).toContain('connection: close');
    }
    expect(ran).toBe(0);
  }, 240_000);

  it('a request whose body never completes is closed within requestTimeout; an idle keep-alive socket within keepAliveTimeout', async () => {
    const s = await server({ headersTimeoutMs: 500, requestTimeoutMs: 1500, keepAliveTimeoutMs: 300, routes: { '/ok': (_q, r) => void r.end('ok') } });
    expect([s.server.requestTimeout, s.server.keepAliveTimeout]).toEqual([1500, 300]); // configured, not the defaults (30 s, 5 s)
    // A body dripping a byte every 100 ms (so the socket is never idle) is cut off after ~1.5 s;
    // the bound (20 s) tells that from Node's 30 s check interval. Node's own default is 300 s.
    const bodyClosed = await new Promise<boolean>((resolve) => {
      const sock = netConnect(s.port, '127.0.0.1', () => sock.write('GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n'));
      const drip = setInterval(() => sock.writable && sock.write('x'), 100);
      const end = (byServer: boolean) => (clearInterval(drip), sock.destroy(), resolve(byServer));
      sock.on('error', () => end(true));
      sock.on('close', () => end(true));
      setTimeout(() => end(false), 20_000);
    });
    expect(bodyClosed).toBe(true);

    // An idle keep-alive socket is closed by the server (after the configured 300 ms, checked above).
    const ka = await raw(s.port, 'GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    expect(ka.status).toBe(200);
    expect(ka.closed).toBe(true);
  }, 120_000);

  it('a client that stops reading a large answer is cut off after requestTimeout without traffic', async () => {
    const big = Buffer.alloc(64 * 1024 * 1024, 0x61); // far more than loopback socket buffers hold
    const s = await server({ headersTimeoutMs: 500, requestTimeoutMs: 1500, routes: { '/big': (_q, r) => void r.end(big) } });
    expect(s.server.timeout).toBe(1500); // a socket without traffic for requestTimeout is closed (Node's default: never)
    const sock = netConnect(s.port, '127.0.0.1', () => sock.write(req('GET', '/big')));
    sock.on('error', () => {});
    cleanups.push(() => sock.destroy());
    await new Promise<void>((r) => sock.once('data', () => (sock.pause(), r()))); // reads the first bytes, then never again
    const connections = () => new Promise<number>((r) => s.server.getConnections((_e, n) => r(n)));
    expect(await connections()).toBe(1);
    // The paused client would not notice the close: watch the server's side until it lets go
    // (after ~1.5 s without traffic; the bound only ends a hang, as the default never closes it).
    const t0 = Date.now();
    let n = 1;
    while (n > 0 && Date.now() - t0 < 60_000) {
      await sleep(100);
      n = await connections();
    }
    expect(n).toBe(0);
  }, 120_000);

  /** Opens a raw connection and resolves once connected; `first` is written at once (e.g. half a request line). */
  const open = (port: number, first?: string) =>
    new Promise<ReturnType<typeof netConnect> & { gone: boolean; text: string }>((r) => {
      const sock = Object.assign(netConnect(port, '127.0.0.1'), { gone: false, text: '' });
      sock.on('connect', () => {
        if (first) sock.write(first);
        r(sock);
      });
      sock.on('data', (d) => (sock.text += d.toString('latin1')));
      sock.on('close', () => (sock.gone = true));
      sock.on('error', () => {});
      cleanups.push(() => sock.destroy());
    });
  const count = (s: RunningServer) => new Promise<number>((r) => s.server.getConnections((_e, n) => r(n)));

  it('beyond maxConnections a new connection takes the place of the one idle longest: sockets that send nothing or half a request cannot keep a probe out', async () => {
    // Timeouts far beyond the test: only making room can close a connection here.
    const s = await server({ maxConnections: 3, headersTimeoutMs: 120_000, requestTimeoutMs: 120_000, routes: { '/healthz': (_q, r) => void r.end('ok') } });
    // A slowloris client: one connection sends nothing, two half a request (each would be let be until the header timeout).
    const held = [await open(s.port), await open(s.port, 'GET /healthz HTTP/1.1\r\nX-a: '), await open(s.port, 'GET /healthz HTTP/1.1\r\nX-a: ')];
    await until(() => (s.server as unknown as { _connections: number })._connections === 3, 60_000, 'three connections');
    expect(await count(s)).toBe(3);
    // A probe gets its answer, in the place of the oldest; the other two are still open.
    const probe = await raw(s.port, req('GET', '/healthz'));
    expect(probe.status).toBe(200);
    expect(probe.body).toBe('ok');
    await until(() => held[0].gone, 60_000, 'the oldest to be closed');
    expect(held[0].text).toBe('');
    expect([held[1].gone, held[2].gone]).toEqual([false, false]);
    // Full again (the probe closed its own): the next one takes the place of the next oldest.
    const filler = await open(s.port);
    await until(() => (s.server as unknown as { _connections: number })._connections === 3, 60_000, 'full again');
    expect((await raw(s.port, req('GET', '/healthz'))).status).toBe(200);
    await until(() => held[1].gone, 60_000, 'the next oldest to be closed');
    expect([held[2].gone, filler.gone]).toEqual([false, false]);
  });

  it('none idle: a connection whose client does not read its answer gives its place to a new one; one whose answer is still being made does not', async () => {
    // A few clients asking for a large answer and never reading it held the server full (each
    // busy) for requestTimeoutMs, every new connection, a probe's too, closed at once.
    const big = Buffer.alloc(32 << 20, 0x61); // more than the kernel's buffers take: the rest waits in the socket
    let ran = 0;
    const release: (() => void)[] = [];
    const s = await server({
      maxConnections: 3,
      headersTimeoutMs: 120_000,
      requestTimeoutMs: 120_000,
      routes: { '/big': (_q, r) => void (ran++, r.end(big)), '/slow': (_q, r) => void release.push(() => r.end('slow')), '/ok': (_q, r) => void r.end('ok') },
    });
    const slow = await open(s.port, req('GET', '/slow'));
    await until(() => release.length === 1, 60_000, 'the slow request in flight');
    const stalled = [await open(s.port), await open(s.port)];
    for (const x of stalled) {
      x.pause(); // reads nothing more
      x.write(req('GET', '/big'));
    }
    await until(() => ran === 2, 60_000, 'both large answers under way');
    const probe = await raw(s.port, req('GET', '/ok'));
    expect(probe.body).toBe('ok');
    // Read again: the first (the longest there) was cut off; the other gets its whole answer.
    stalled.forEach((x) => x.resume());
    await until(() => stalled[0].gone, 60_000, 'the first stalled one to be closed');
    expect(stalled[0].text.length).toBeLessThan(big.length);
    await until(() => stalled[1].gone, 60_000, "the other's whole answer (Connection: close)");
    const whole = stalled[1].text;
    expect(whole.length - whole.indexOf('\r\n\r\n') - 4).toBe(big.length);
    expect(slow.gone).toBe(false);
    release.forEach((f) => f());
    await until(() => slow.gone, 60_000, 'the slow answer');
    expect(slow.text.endsWith('slow')).toBe(true);
  });

  it('a keep-alive connection counts as idle from its last answer; connections answering a request and WebSockets are never closed for room', async () => {
    let release: (() => void)[] = [];
    const s = await server({
      maxConnections: 3,
      headersTimeoutMs: 120_000,
      requestTimeoutMs: 120_000,
      keepAliveTimeoutMs: 120_000,
      routes: {
        '/ok': (_q, r) => void r.end('ok'),
        '/slow': (_q, r) => void release.push(() => r.end('slow')),
      },
      upgrades: {
        '/ws': (_q, sock) => {
          cleanups.push(() => sock.destroy());
          sock.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
        },
      },
    });
    // a, b, c connect in that order; then b asks and is answered (keep-alive): the order of idleness is a, c, b.
    const a = await open(s.port);
    const b = await open(s.port);
    const c = await open(s.port);
    b.write('GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await until(() => b.text.includes('\r\n\r\nok'), 60_000, "b's answer");
    const d = await open(s.port);
    await until(() => a.gone, 60_000, 'a to be closed');
    const e = await open(s.port);
    await until(() => c.gone, 60_000, 'c to be closed');
    expect([b.gone, d.gone, e.gone]).toEqual([false, false, false]);
    [b, d, e].forEach((x) => x.destroy());
    await until(() => (s.server as unknown as { _connections: number })._connections === 0, 60_000, 'all closed');

    // Three busy: two requests in flight and a WebSocket. A new connection is closed at once, with no answer.
    const w = await open(s.port, 'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    await until(() => w.text.startsWith('HTTP/1.1 101'), 60_000, 'the upgrade');
    const slow = [await open(s.port, req('GET', '/slow')), await open(s.port, req('GET', '/slow'))];
    await until(() => release.length === 2, 60_000, 'two requests in flight');
    const refused = await raw(s.port, req('GET', '/ok'));
    expect(refused.closed).toBe(true);
    expect(refused.text).toBe('');
    expect([w.gone, ...slow.map((x) => x.gone)]).toEqual([false, false, false]);
    // Answered, they free their places (Connection: close); the WebSocket stays.
    release.forEach((f) => f());
    release = [];
    await until(() => slow.every((x) => x.gone), 60_000, 'the slow answers');
    expect(slow.map((x) => x.text.endsWith('slow'))).toEqual([true, true]);
    expect((await raw(s.port, req('GET', '/ok'))).body).toBe('ok');
    expect(w.gone).toBe(false);
  });
});

describe('HTTP: DNS rebinding (a foreign page whose name now points at 127.0.0.1)', () => {
  it('on loopback, a request or upgrade naming another Host is refused (403); loopback names and allowedHosts are served', async () => {
    const s = await server({ routes: { '/healthz': (_q, r) => void r.end('ok') }, upgrades: { '/ws': (_q, sock) => sock.end('HTTP/1.1 101 Switching Protocols\r\n\r\n') } });
    const get = (host: string) => raw(s.port, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nOrigin: http://${host}\r\nConnection: close\r\n\r\n`);
    expect((await get(`evil.example:${s.port}`)).status).toBe(403);
    const up = await raw(s.port, `GET /ws HTTP/1.1\r\nHost: evil.example:${s.port}\r\nOrigin: http://evil.example:${s.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    expect(up.status).toBe(403);
    for (const ok of [`127.0.0.1:${s.port}`, `localhost:${s.port}`, '[::1]']) expect((await get(ok)).status, ok).toBe(200);
    const named = await server({ allowedHosts: ['cams.example'], routes: { '/healthz': (_q, r) => void r.end('ok') } });
    expect((await raw(named.port, `GET /healthz HTTP/1.1\r\nHost: cams.example:${named.port}\r\nConnection: close\r\n\r\n`)).status).toBe(200);
    expect((await raw(named.port, `GET /healthz HTTP/1.1\r\nHost: localhost:${named.port}\r\nConnection: close\r\n\r\n`)).status).toBe(403);
  });

  it('the probes answer any Host (an orchestrator names the address it probes), with only what a request without the token gets', async () => {
    // A kubelet's httpGet probe sends Host: <pod IP>:<port>, Docker's healthcheck 127.0.0.1: with
    // allowedHosts set to the names browsers use they were 403, and argus restarted in a loop.
    for (const token of [undefined, 's3cret']) {
      const s = await server({ allowedHosts: ['cams.example'], token });
      const probe = (req: IncomingMessage, res: import('node:http').ServerResponse) => void res.end(s.authorized(req) ? 'details' : 'status');
      s.route('/healthz', probe, { public: true, probe: true });
      s.route('/readyz', probe, { public: true, probe: true });
      s.route('/api/sources', (_q, r) => void r.end('sources'));
      const get = (path: string, host: string) => raw(s.port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${token ? `Authorization: Bearer ${token}\r\n` : ''}Connection: close\r\n\r\n`);
      for (const host of [`10.1.2.3:${s.port}`, `127.0.0.1:${s.port}`, `evil.example:${s.port}`]) {
        for (const path of ['/healthz', '/readyz']) {
          const r = await get(path, host);
          expect([r.status, r.body], `${path} ${host} ${token}`).toEqual([200, 'status']);
        }
        // Every other route still refuses a Host that is not served, with the token too.
        expect((await get('/api/sources', host)).status, host).toBe(403);
      }
      expect((await get('/healthz', `cams.example:${s.port}`)).body).toBe('details');
      expect((await get('/api/sources', `cams.example:${s.port}`)).body).toBe('sources');
    }
  });

  it('hostAllowed: any name when bound beyond loopback (set allowedHosts or a token there); "*" allows any', () => {
    expect(hostAllowed('evil.example', '0.0.0.0')).toBe(true);
    expect(hostAllowed('evil.example', '127.0.0.1')).toBe(false);
    expect(hostAllowed('evil.example', '::1')).toBe(false);
    expect(hostAllowed('[::1]:8080', '::1')).toBe(true);
    expect(hostAllowed(undefined, '127.0.0.1')).toBe(true);
    expect(hostAllowed('x.example', '127.0.0.1', ['*'])).toBe(true);
  });
});

describe('HTTP: the token guards every route but /healthz and /readyz', () => {
  it('401 with WWW-Authenticate: Bearer without it or with a wrong one; Bearer or ?token= admits; /metrics public only with publicMetrics', async () => {
    const s = await server({ token: 's3cret' });
    registerRoutes(s, fakeContext());
    for (const path of ['/api/sources', '/metrics', '/', '/index.html', '/app.js', '/style.css', '/nope']) {
      const r = await raw(s.port, req('GET', path));
      expect(r.status, path).toBe(401);
      expect(r.headers['www-authenticate'], path).toMatch(/^Bearer/);
    }
    for (const wrong of ['s3cre', 's3cret!', 'S3CRET', '']) {
      expect((await raw(s.port, req('GET', `/api/sources?token=${wrong}`))).status, wrong).toBe(401);
      expect((await raw(s.port, req('GET', '/api/sources', { authorization: `Bearer ${wrong}` }))).status, wrong).toBe(401);
    }
    expect((await raw(s.port, req('GET', '/api/sources', { authorization: 'Basic czNjcmV0' }))).status).toBe(401);
    expect((await raw(s.port, req('GET', '/api/sources', { authorization: 'Bearer s3cret' }))).status).toBe(200);
    expect((await raw(s.port, req('GET', '/api/sources?token=s3cret'))).status).toBe(200);
    expect((await raw(s.port, req('GET', '/metrics?token=s3cret'))).status).toBe(200);
    expect((await raw(s.port, req('GET', '/healthz'))).status).toBe(200);
    expect((await raw(s.port, req('GET', '/readyz'))).status).toBe(200); // public (lobby delivered, dock failed)
    // Without the token the probes say only their status: no source ids, reasons, errors (or a worker's cluster map).
    const bare = JSON.parse((await raw(s.port, req('GET', '/healthz'))).body) as Record<string, unknown>;
    expect(Object.keys(bare).sort()).toEqual(['status', 'uptimeSeconds']);
    expect(JSON.parse((await raw(s.port, req('GET', '/readyz?token=wrong'))).body)).toEqual({ ready: true });
    const full = JSON.parse((await raw(s.port, req('GET', '/healthz', { authorization: 'Bearer s3cret' }))).body) as { sources: { id: string }[] };
    expect(full.sources.map((x) => x.id)).toEqual(['lobby', 'dock']);
    expect(JSON.parse((await raw(s.port, req('GET', '/readyz?token=s3cret'))).body)).toMatchObject({ ready: true, waitingFor: [], sources: [{ id: 'lobby' }, { id: 'dock' }] });
    // The dashboard's assets load with the token too (a script may fetch them).
    expect((await raw(s.port, req('GET', '/app.js?token=s3cret'))).status).toBe(200);
    expect((await raw(s.port, req('GET', '/js/api.js', { authorization: 'Bearer s3cret' }))).status).toBe(200);

    const p = await server({ token: 's3cret' });
    registerRoutes(p, fakeContext(true));
    expect((await raw(p.port, req('GET', '/metrics'))).status).toBe(200);
    expect((await raw(p.port, req('GET', '/api/sources'))).status).toBe(401);
  });

  it('/api/snapshot?id=&key= answers a held alert picture (image/jpeg, kept in no cache) with the token only; 404 for one not held', async () => {
    const s = await server({ token: 's3cret' });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    registerRoutes(s, { ...fakeContext(), snapshot: (id, key) => (id === 'cam:r:1-2:3' && key === 'k1' ? jpeg : undefined) });
    expect((await raw(s.port, req('GET', '/api/snapshot?id=cam%3Ar%3A1-2%3A3&key=k1'))).status).toBe(401);
    const r = await raw(s.port, req('GET', '/api/snapshot?id=cam%3Ar%3A1-2%3A3&key=k1', { authorization: 'Bearer s3cret' }));
    expect([r.status, r.headers['content-type'], r.headers['content-length'], r.headers['cache-control'], r.headers['x-content-type-options'], r.headers['cross-origin-resource-policy']]).toEqual([200, 'image/jpeg', '7', 'no-store', 'nosniff', 'same-origin']);
    for (const q of ['?id=other&key=k1', '?id=cam%3Ar%3A1-2%3A3&key=k2', '?id=cam%3Ar%3A1-2%3A3', '?id=&key=k1', '?id=', '']) expect((await raw(s.port, req('GET', `/api/snapshot${q}`, { authorization: 'Bearer s3cret' }))).status, q).toBe(404);
  });

  it('the dashboard page forbids framing and foreign scripts (CSP, X-Frame-Options, no inline script) and, like /metrics, is kept in no cache', async () => {
    const s = await server({ token: 's3cret' });
    registerRoutes(s, fakeContext());
    const page = await raw(s.port, req('GET', '/', { authorization: 'Bearer s3cret' }));
    expect(page.status).toBe(200);
    // A page the operator visits cannot frame the dashboard under its own buttons (clickjacking).
    expect(page.headers['x-frame-options']).toBe('DENY');
    const csp = page.headers['content-security-policy'] ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    // No inline script at all (the page holds no token, so no import map carries one).
    expect(/script-src ([^;]*)/.exec(csp)?.[1]).toBe("'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.body).not.toContain('<script type="importmap"');
    expect(page.headers['cache-control']).toBe('no-store');
    // Data (JSON, /metrics, errors): in no cache, never sniffed, and no script would run were it rendered as a page.
    for (const [path, want] of [['/metrics', 200], ['/api/sources', 200], ['/healthz', 200], ['/readyz', 200], ['/nope', 404], ['/metrics?token=wrong', 401]] as const) {
      const r = await raw(s.port, req('GET', path, path.includes('?') ? {} : { authorization: 'Bearer s3cret' }));
      expect(r.status, path).toBe(want);
      expect(r.headers['cache-control'], path).toBe('no-store');
      expect(r.headers['x-content-type-options'], path).toBe('nosniff');
      expect(r.headers['content-security-policy'], path).toBe("default-src 'none'; frame-ancestors 'none'");
      // No page of another origin may load it (one of another port of the host is sent the session cookie).
      expect(r.headers['cross-origin-resource-policy'], path).toBe('same-origin');
    }
  });

  it("a token's + may be written as is in the query (a base64 token pasted into the address bar), as %2B, or sent as Bearer", async () => {
    const s = await server({ token: 'ab+cd/e==' });
    registerRoutes(s, fakeContext());
    for (const q of ['ab+cd/e==', 'ab%2Bcd%2Fe%3D%3D']) {
      expect((await raw(s.port, req('GET', `/api/sources?token=${q}`))).status, q).toBe(200);
      const page = await raw(s.port, req('GET', `/?token=${q}`));
      expect(page.status, q).toBe(303); // traded for the session cookie
      expect(page.headers['set-cookie'], q).toMatch(/^argus_session=/);
    }
    expect((await raw(s.port, req('GET', '/api/sources', { authorization: 'Bearer ab+cd/e==' }))).status).toBe(200);
    for (const wrong of ['abcd/e==', 'ab++cd/e==', 'ab+cd/e=']) expect((await raw(s.port, req('GET', `/api/sources?token=${encodeURIComponent(wrong)}`))).status, wrong).toBe(401);
  });

  it('tokens compare by digest: equal only when equal', () => {
    expect(tokenMatches('s3cret', 's3cret')).toBe(true);
    for (const t of ['s3cre', 's3cret ', '', 'x'.repeat(10_000), undefined]) expect(tokenMatches(t, 's3cret')).toBe(false);
  });

  it('/readyz answers 503 while the run stops (a signal came), to anyone, and says so; /healthz still 200', async () => {
    let stopping = false;
    const s = await server({ token: 's3cret' });
    registerRoutes(s, fakeContext(false, () => stopping));
    expect((await raw(s.port, req('GET', '/readyz'))).status).toBe(200);
    stopping = true;
    const bare = await raw(s.port, req('GET', '/readyz'));
    expect(bare.status).toBe(503);
    expect(JSON.parse(bare.body)).toEqual({ ready: false, stopping: true });
    const full = await raw(s.port, req('GET', '/readyz?token=s3cret'));
    expect(full.status).toBe(503);
    expect(JSON.parse(full.body)).toMatchObject({ ready: false, stopping: true, waitingFor: [] });
    expect((await raw(s.port, req('GET', '/healthz'))).status).toBe(200);
  });

  it('/healthz answers 503 `stuck` while a model run has been in flight past the stuck bound (no frame gets results: an orchestrator restarts argus), to anyone; 200 again once it returns', async () => {
    let stuck: { ms: number; stuck: number; workers: number } | undefined;
    const s = await server({ token: 's3cret' });
    registerRoutes(s, fakeContext(false, () => false, () => stuck));
    expect((await raw(s.port, req('GET', '/healthz'))).status).toBe(200);
    stuck = { ms: 31_234.5, stuck: 1, workers: 1 };
    const bare = await raw(s.port, req('GET', '/healthz'));
    expect(bare.status).toBe(503);
    expect(JSON.parse(bare.body)).toEqual({ status: 'stuck', uptimeSeconds: expect.any(Number), inferenceRunMs: 31_235, stuckWorkers: 1, workers: 1 });
    const full = await raw(s.port, req('GET', '/healthz?token=s3cret'));
    expect(full.status).toBe(503);
    expect(JSON.parse(full.body)).toMatchObject({ status: 'stuck', inferenceRunMs: 31_235, sources: [{ id: 'lobby' }, { id: 'dock' }] });
    // One of two workers stuck: the body says so (the other still runs frames); 503 all the same.
    stuck = { ms: 40_000, stuck: 1, workers: 2 };
    const some = await raw(s.port, req('GET', '/healthz'));
    expect(some.status).toBe(503);
    expect(JSON.parse(some.body)).toMatchObject({ status: 'stuck', inferenceRunMs: 40_000, stuckWorkers: 1, workers: 2 });
    stuck = undefined;
    const again = await raw(s.port, req('GET', '/healthz'));
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body).status).toBe('ok');
  });

  it('/healthz, /readyz and /api/sources never return credentials from source URLs or errors', async () => {
    const s = await server();
    registerRoutes(s, fakeContext());
    for (const path of ['/healthz', '/readyz', '/api/sources']) {
      const r = await raw(s.port, req('GET', path));
      expect(r.body, path).toContain('cam.local');
      expect(r.body, path).not.toContain('hunter2');
      expect(r.body, path).not.toContain('abc123');
    }
  });
});

describe('sessionAge: the session cookie\'s value', () => {
  const now = 1_800_000_000_000;
  it('is its age within the lifetime, for the token that issued it; undefined past it, for another token, a moved issued-at, a value from far ahead, or junk', () => {
    const v = (agoMs: number, token = 't') => sessionValue(token, (now - agoMs) / 1000);
    expect(sessionAge(v(0), 't', SESSION_MAX_AGE_MS, now)).toBe(0);
    expect(sessionAge(v(3_600_000), 't', SESSION_MAX_AGE_MS, now)).toBe(3_600_000);
    expect(sessionAge(v(SESSION_MAX_AGE_MS), 't', SESSION_MAX_AGE_MS, now)).toBe(SESSION_MAX_AGE_MS);
    expect(sessionAge(v(SESSION_MAX_AGE_MS + 1000), 't', SESSION_MAX_AGE_MS, now)).toBeUndefined();
    expect(sessionAge(v(120_000), 't', 60_000, now)).toBeUndefined();
    expect(sessionAge(v(0, 'u'), 't', SESSION_MAX_AGE_MS, now)).toBeUndefined();
    expect(sessionAge(v(-60_000), 't', SESSION_MAX_AGE_MS, now)).toBe(0); // a clock stepped back a minute
    // Issued by a process whose clock was an hour ahead (the system clock stepped back, then a
    // restart): new, not refused (it ended every open session); from further ahead than a lifetime: refused.
    expect(sessionAge(v(-3_600_000), 't', SESSION_MAX_AGE_MS, now)).toBe(0);
    expect(sessionAge(v(-SESSION_MAX_AGE_MS + 1000), 't', SESSION_MAX_AGE_MS, now)).toBe(0);
    expect(sessionAge(v(-SESSION_MAX_AGE_MS - 1000), 't', SESSION_MAX_AGE_MS, now)).toBeUndefined();
    expect(sessionAge(v(-600_000), 't', 60_000, now)).toBeUndefined();
    const old = v(SESSION_MAX_AGE_MS * 2);
    expect(sessionAge(`${now / 1000}${old.slice(old.indexOf('.'))}`, 't', SESSION_MAX_AGE_MS, now)).toBeUndefined();
    for (const junk of ['', '.', '1.', `.${old.split('.')[1]}`, `-1${old.slice(old.indexOf('.'))}`, `1e9${old.slice(old.indexOf('.'))}`, '9'.repeat(400) + old.slice(old.indexOf('.')), old.split('.')[1]]) {
      expect(sessionAge(junk, 't', SESSION_MAX_AGE_MS, now), junk).toBeUndefined();
    }
  });
});

describe('HTTP: the dashboard trades ?token= for a session cookie', () => {
  /** A server with the token, the routes and the WebSocket hub at /ws. */
  async function dashboard() {
    const hub = new WebSocketHub({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['lobby'], token: 's3cret' });
    const s = await server({ token: 's3cret', upgrades: { '/ws': (q, sock, h) => hub.handleUpgrade(q, sock, h) } });
    cleanups.push(() => hub.close());
    registerRoutes(s, fakeContext());
    return { s, hub, host: `127.0.0.1:${s.port}` };
  }
  /** A GET with the Host a browser sends (with the port), and `headers`. */
  const get = (port: number, path: string, headers: Record<string, string> = {}) => raw(port, req('GET', path, { ...headers }).replace('Host: 127.0.0.1\r\n', `Host: 127.0.0.1:${port}\r\n`));
  /** Whether a WebSocket upgrade is admitted (101) or refused (its status). */
  function upgrade(port: number, headers: Record<string, string>): Promise<number | undefined> {
    return new Promise((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
      cleanups.push(() => ws.terminate());
      ws.on('error', () => resolve(undefined));
      ws.once('open', () => resolve(101));
      ws.once('unexpected-response', (_q, r) => resolve(r.statusCode));
    });
  }

  it('/?token= answers 303 to the same URL without the token and a session cookie (HttpOnly, SameSite=Strict, Path=/, Max-Age 12 h, not the token); a wrong token sets none; a foreign navigation to the page reloads once', async () => {
    const { s } = await dashboard();
    const first = await get(s.port, '/?token=s3cret');
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe('/');
    expect(first.headers['referrer-policy']).toBe('no-referrer');
    expect(first.headers['cache-control']).toBe('no-store');
    const cookie = first.headers['set-cookie'] ?? '';
    const [pair, ...attrs] = cookie.split(/;\s*/);
    expect(pair).toMatch(new RegExp(`^argus_session_${s.port}=\\d{10}\\.[A-Za-z0-9_-]{43}$`)); // named by the port: another argus on the host keeps its own; issued-at.mac
    expect(pair).not.toContain('s3cret');
    expect(attrs.sort()).toEqual(['HttpOnly', 'Max-Age=43200', 'Path=/', 'SameSite=Strict']); // no Secure over plain HTTP
    // Other query parameters stay, in order; the token's place anywhere in the query, and /index.html.
    expect((await get(s.port, '/index.html?a=1&token=s3cret&b=2')).headers.location).toBe('/index.html?a=1&b=2');
    expect((await get(s.port, '/?token=s3cret', { 'x-forwarded-proto': 'https' })).headers['set-cookie']).toMatch(/; Secure$/); // behind a TLS proxy
    expect((await get(s.port, '/?token=s3cret', { forwarded: 'for=1.2.3.4;proto=https' })).headers['set-cookie']).toMatch(/; Secure$/);
    // A navigation another site started comes without the SameSite=Strict cookie (redirects after it too): the page
    // answers 401 with a reload, started by this origin, which carries it. Only a page, only such a navigation, no token in it.
    const nav = (site: string) => ({ 'sec-fetch-site': site, 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' });
    for (const path of ['/', '/index.html?a=1']) {
      const r = await get(s.port, path, nav('cross-site'));
      expect([r.status, r.headers.refresh], path).toEqual([401, '0']);
      // …once: a browser that took the reload for a foreign navigation too, carrying the marker, is not reloaded again.
      const marker = (r.headers['set-cookie'] ?? '').split(';')[0];
      expect(r.headers['set-cookie'], path).toBe(`argus_session_${s.port}_reload=1; Path=/; Max-Age=10; HttpOnly; SameSite=Lax`);
      const again = await get(s.port, path, { ...nav('cross-site'), cookie: marker });
      expect([again.status, again.headers.refresh, again.headers['set-cookie']], path).toEqual([401, undefined, undefined]);
    }
    for (const [path, headers] of [['/', nav('same-origin')], ['/', nav('none')], ['/', {}], ['/api/sources', nav('cross-site')], ['/?token=nope', nav('cross-site')]] as const) {
      const r = await get(s.port, path, headers);
      expect([r.status, r.headers.refresh], `${path} ${JSON.stringify(headers)}`).toEqual([401, undefined]);
    }
    // A wrong (or empty) token: 401 and no cookie.
    for (const path of ['/?token=s3cre', '/?token=', '/index.html?token=S3CRET']) {
      const r = await get(s.port, path);
      expect(r.status, path).toBe(401);
      expect(r.headers['set-cookie'], path).toBeUndefined();
    }
  });

  it('the page\'s scripts and style carry an ETag: asked again with it, 304 and no body (26 files a reload not sent again); another tag, 200; the page itself is never cached; without the cookie, 401 whatever the tag', async () => {
    const { s } = await dashboard();
    const cookie = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
    for (const path of ['/app.js', '/style.css', '/js/api.js']) {
      const first = await get(s.port, path, { cookie });
      expect(first.status, path).toBe(200);
      const etag = first.headers.etag;
      expect(etag, path).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      expect(first.headers['cache-control'], path).toBe('no-cache');
      expect(first.body.length, path).toBeGreaterThan(100);
      for (const tag of [etag, `W/${etag}`, `"x", ${etag}`, '*']) {
        const again = await get(s.port, path, { cookie, 'If-None-Match': tag });
        expect(again.status, `${path} ${tag}`).toBe(304);
        expect(again.body, `${path} ${tag}`).toBe('');
        expect(again.headers.etag, path).toBe(etag);
      }
      const other = await get(s.port, path, { cookie, 'If-None-Match': '"stale"' });
      expect(other.status, path).toBe(200);
      expect(other.body, path).toBe(first.body);
      expect((await get(s.port, path, { 'If-None-Match': etag })).status, path).toBe(401);
    }
    expect((await get(s.port, '/app.js', { cookie })).headers.etag).not.toBe((await get(s.port, '/style.css', { cookie })).headers.etag);
    const page = await get(s.port, '/', { cookie, 'If-None-Match': '*' });
    expect(page.status).toBe(200);
    expect(page.headers.etag).toBeUndefined();
    expect(page.headers['cache-control']).toBe('no-store');
  });

  it('the cookie authenticates the page, its assets, /api/sources, the probes\' details and /ws from the same origin; a wrong cookie, another port\'s, or a foreign origin is refused', async () => {
    const { s, hub, host } = await dashboard();
    const cookie = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
    const page = await get(s.port, '/', { cookie });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="module" src="app.js"></script>');
    expect(page.body).not.toContain('s3cret');
    for (const path of ['/app.js', '/style.css', '/js/api.js', '/js/connection.js', '/api/sources', '/metrics']) expect((await get(s.port, path, { cookie: `other=1; ${cookie}` })).status, path).toBe(200);
    expect(JSON.parse((await get(s.port, '/healthz', { cookie })).body).sources).toHaveLength(2);
    // The page's scripts send nothing of a token: the cookie goes by itself.
    expect((await get(s.port, '/js/api.js', { cookie })).body).not.toMatch(/token/i);
    expect((await get(s.port, '/js/connection.js', { cookie })).body).not.toMatch(/token/i);

    const value = cookie.slice(cookie.indexOf('=') + 1);
    const wrong = [`${cookie}x`, `${cookie.slice(0, -1)}`, `argus_session_${s.port}=s3cret`, `argus_session_${s.port + 1}=${value}`, `argus_session=${value}`, ''];
    for (const c of wrong) {
      expect((await get(s.port, '/api/sources', c ? { cookie: c } : {})).status, c).toBe(401);
      expect(await upgrade(s.port, { host, origin: `http://${host}`, ...(c ? { cookie: c } : {}) }), c).toBe(401);
    }
    // A token presented decides on its own: a wrong ?token= beside a good cookie is refused.
    expect((await get(s.port, '/api/sources?token=nope', { cookie })).status).toBe(401);
    expect(JSON.parse((await get(s.port, '/healthz', { cookie: `argus_session_${s.port}=s3cret` })).body)).not.toHaveProperty('sources');

    // /ws: the same origin with the cookie is admitted; a foreign origin (another port too) is refused with it.
    expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie })).toBe(101);
    expect(await upgrade(s.port, { host, origin: 'http://evil.example', cookie })).toBe(403);
    expect(await upgrade(s.port, { host, origin: `http://127.0.0.1:${s.port + 1 === 65536 ? 1 : s.port + 1}`, cookie })).toBe(403);
    await until(() => hub.stats.connected === 1, 60_000, 'the admitted client');
  });

  it('the cookie ends: one issued longer ago than its lifetime opens nothing (page, /api/sources, /ws, the probes\' details), whatever the browser kept; one in use is renewed once a tenth of its lifetime has passed', async () => {
    const { s, host } = await dashboard();
    const nowS = Date.now() / 1000;
    const issued = (agoS: number, token = 's3cret') => `argus_session_${s.port}=${sessionValue(token, nowS - agoS)}`;
    // Past its 12 h: refused everywhere the cookie counts. It opened argus for as long as the token stayed the same.
    for (const cookie of [issued(12 * 3600 + 60), issued(30 * 86_400)]) {
      for (const path of ['/', '/api/sources', '/app.js']) expect((await get(s.port, path, { cookie })).status, `${path} ${cookie}`).toBe(401);
      expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie }), cookie).toBe(401);
      expect(JSON.parse((await get(s.port, '/healthz', { cookie })).body)).not.toHaveProperty('sources');
    }
    // Its issued-at is in the mac: moved forward, the value is refused; nor does another token's cookie open it.
    const old = issued(13 * 3600).split('=')[1];
    const moved = `${Math.floor(nowS)}${old.slice(old.indexOf('.'))}`;
    expect((await get(s.port, '/api/sources', { cookie: `argus_session_${s.port}=${moved}` })).status).toBe(401);
    expect((await get(s.port, '/api/sources', { cookie: issued(10, 'other') })).status).toBe(401);
    // New (under a tenth of its lifetime): admitted, not renewed on every poll.
    const fresh = await get(s.port, '/api/sources', { cookie: issued(60) });
    expect([fresh.status, fresh.headers['set-cookie']]).toEqual([200, undefined]);
    // Older than a tenth: admitted, and renewed with a fresh issued-at and the full Max-Age, which then opens it.
    const used = await get(s.port, '/api/sources', { cookie: issued(2 * 3600) });
    expect(used.status).toBe(200);
    const renewed = used.headers['set-cookie'] ?? '';
    expect(renewed).toMatch(new RegExp(`^argus_session_${s.port}=\\d{10}\\.[A-Za-z0-9_-]{43}; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict$`));
    const at = Number(/=(\d+)\./.exec(renewed)![1]);
    expect(at).toBeGreaterThanOrEqual(Math.floor(nowS));
    expect((await get(s.port, '/api/sources', { cookie: renewed.split(';')[0] })).status).toBe(200);
    // A request with the token is not a session's use: no cookie beside it (but the page's trade).
    expect((await get(s.port, '/api/sources', { authorization: 'Bearer s3cret', cookie: issued(2 * 3600) })).headers['set-cookie']).toBeUndefined();
  });

  it('the system clock stepped back a day does not end open sessions (page, /api/sources, /ws), nor renew them early; the session clock runs on', async () => {
    const { s, host } = await dashboard();
    const cookie = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
    expect((await get(s.port, '/api/sources', { cookie })).status).toBe(200);
    const real = Date.now;
    Date.now = () => real() - 86_400_000; // more than a lifetime: no tolerance of cookies from ahead covers it
    try {
      for (const path of ['/', '/api/sources']) {
        const r = await get(s.port, path, { cookie });
        expect([r.status, r.headers['set-cookie']], path).toEqual([200, undefined]);
      }
      expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie })).toBe(101);
      // A cookie issued now is not a day older than the one before.
      const again = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
      expect(Number(/=(\d+)\./.exec(again)![1])).toBeGreaterThanOrEqual(Number(/=(\d+)\./.exec(cookie)![1]));
    } finally {
      Date.now = real;
    }
  });

  it('server.sessionMaxAgeMs sets the lifetime: its Max-Age, and the server refuses a cookie older than it (the hub too)', async () => {
    const hub = new WebSocketHub({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['lobby'], token: 's3cret', sessionMaxAgeMs: 600_000 });
    const s = await server({ token: 's3cret', sessionMaxAgeMs: 600_000, upgrades: { '/ws': (q, sock, h) => hub.handleUpgrade(q, sock, h) } });
    cleanups.push(() => hub.close());
    registerRoutes(s, fakeContext());
    const host = `127.0.0.1:${s.port}`;
    expect((await get(s.port, '/?token=s3cret')).headers['set-cookie']).toContain('; Max-Age=600;');
    const nowS = Date.now() / 1000;
    const old = `argus_session_${s.port}=${sessionValue('s3cret', nowS - 700)}`;
    const young = `argus_session_${s.port}=${sessionValue('s3cret', nowS - 300)}`;
    expect((await get(s.port, '/api/sources', { cookie: old })).status).toBe(401);
    expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie: old })).toBe(401);
    expect((await get(s.port, '/api/sources', { cookie: young })).status).toBe(200);
    expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie: young })).toBe(101);
  });

  it("/ws with allowedOrigins (\"*\", or listed): another origin must present the token; the session cookie, which a browser sends from any same-site page (another port, another subdomain: SameSite=Strict does not tell them apart), opens it from the server's own origin only", async () => {
    for (const allowedOrigins of [['*'], ['http://wiki.example:3000']]) {
      const hub = new WebSocketHub({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['lobby'], token: 's3cret', allowedOrigins });
      const s = await server({ token: 's3cret', upgrades: { '/ws': (q, sock, h) => hub.handleUpgrade(q, sock, h) } });
      cleanups.push(() => hub.close());
      registerRoutes(s, fakeContext());
      const host = `127.0.0.1:${s.port}`;
      const cookie = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
      expect(await upgrade(s.port, { host, origin: 'http://wiki.example:3000', cookie }), String(allowedOrigins)).toBe(401);
      expect(await upgrade(s.port, { host, origin: 'http://wiki.example:3000', authorization: 'Bearer s3cret' }), String(allowedOrigins)).toBe(101);
      expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie }), String(allowedOrigins)).toBe(101);
    }
  });

  it("a cookie of the same name ahead of the session's (set for the host by a page of another port, cookies not being kept per port, with a longer Path so the browser sends it first) does not lock the dashboard out", async () => {
    const { s, host } = await dashboard();
    const cookie = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
    const tossed = `argus_session_${s.port}=junk; ${cookie}`;
    expect((await get(s.port, '/api/sources', { cookie: tossed })).status).toBe(200);
    expect((await get(s.port, '/', { cookie: tossed })).status).toBe(200);
    expect(await upgrade(s.port, { host, origin: `http://${host}`, cookie: tossed })).toBe(101);
    // Only wrong ones: still refused.
    expect((await get(s.port, '/api/sources', { cookie: `argus_session_${s.port}=junk; argus_session_${s.port}=more` })).status).toBe(401);
  });

  it('only the first MAX_SESSION_COOKIES session cookies of a request are looked at (a browser sends a few; ~200 well-formed ones in 16 KB of headers cost an HMAC each, ~4 ms of the event loop per refused request)', async () => {
    const { s } = await dashboard();
    const good = ((await get(s.port, '/?token=s3cret')).headers['set-cookie'] ?? '').split(';')[0];
    // Well-formed, recent, wrong: each would take an HMAC.
    const decoy = `argus_session_${s.port}=${sessionValue('not the token', Date.now() / 1000)}`;
    const behind = (n: number) => [...Array.from({ length: n }, () => decoy), good].join('; ');
    expect((await get(s.port, '/api/sources', { cookie: behind(MAX_SESSION_COOKIES - 1) })).status).toBe(200);
    expect((await get(s.port, '/api/sources', { cookie: behind(MAX_SESSION_COOKIES) })).status).toBe(401);
    expect((await get(s.port, '/api/sources', { cookie: behind(150) })).status).toBe(401);
  });
});

describe('WebSocket: origin, clients, heartbeat, buffers, rate', () => {
  async function hubServer(o: Partial<WebSocketHubOptions> = {}) {
    const hub = new WebSocketHub({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['a'], ...o });
    const s = await startHttpServer({ host: '127.0.0.1', port: 0, upgrades: { '/ws': (q, sock, h) => hub.handleUpgrade(q, sock, h) } });
    cleanups.push(() => s.close());
    cleanups.push(() => hub.close());
    return { hub, s, url: `ws://127.0.0.1:${s.port}/ws` };
  }
  /** Opens a client; resolves with it once open, or with the HTTP status that refused it. */
  function open(url: string, o: WebSocket.ClientOptions = {}): Promise<{ ws?: WebSocket; status?: number }> {
    return new Promise((resolve) => {
      const ws = new WebSocket(url, o);
      cleanups.push(() => ws.terminate());
      ws.on('error', () => resolve({}));
      ws.once('open', () => resolve({ ws }));
      ws.once('unexpected-response', (_q, r) => resolve({ status: r.statusCode }));
    });
  }

  it('a foreign Origin is refused with 403 (counted); no Origin, the same origin and allowedOrigins are admitted', async () => {
    const { hub, url, s } = await hubServer();
    expect((await open(url, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await open(url, { origin: `http://127.0.0.1:${s.port + 1 === 65536 ? 1 : s.port + 1}` })).status).toBe(403); // another port is another origin
    expect((await open(url, { origin: 'null' })).status).toBe(403);
    expect((await open(url, { headers: { origin: 'not a url' } })).status).toBe(403);
    expect(hub.stats.refused).toBe(4);
    expect((await open(url)).ws).toBeDefined(); // no Origin: not a browser
    expect((await open(url, { origin: `http://127.0.0.1:${s.port}` })).ws).toBeDefined();

    const listed = await hubServer({ allowedOrigins: ['https://dash.example:8443'] });
    expect((await open(listed.url, { origin: 'https://dash.example:8443' })).ws).toBeDefined();
    expect((await open(listed.url, { origin: 'https://dash.example' })).status).toBe(403);
    const any = await hubServer({ allowedOrigins: ['*'] });
    expect((await open(any.url, { origin: 'http://evil.example' })).ws).toBeDefined();
  });

  it('beyond maxClients an upgrade answers 503; a slot frees when a client leaves', async () => {
    const { hub, url } = await hubServer({ maxClients: 2 });
    const a = await open(url);
    const b = await open(url);
    expect(a.ws && b.ws).toBeDefined();
    expect((await open(url)).status).toBe(503);
    a.ws!.close();
    await until(() => hub.stats.connected === 1, 60_000, 'a client to leave');
    expect((await open(url)).ws).toBeDefined();
  });

  it('a client that does not answer pings is terminated at a heartbeat; one that answers stays', async () => {
    // 1.5 s: long enough that a busy machine's event-loop stall never makes the live client miss a pong.
    const { hub, url } = await hubServer({ heartbeatMs: 1500 });
    const live = await open(url);
    let livePings = 0;
    live.ws!.on('ping', () => livePings++);
    const deaf = await open(url, { autoPong: false });
    const deafClosed = new Promise<void>((r) => deaf.ws!.once('close', () => r()));
    // A client that sends pongs of its own (not the ping's payload) every 300 ms proves nothing.
    const faker = await open(url, { autoPong: false });
    const fakerClosed = new Promise<void>((r) => faker.ws!.once('close', () => r()));
    const fake = setInterval(() => faker.ws!.readyState === WebSocket.OPEN && faker.ws!.pong(Buffer.from('alive')), 300);
    cleanups.push(() => clearInterval(fake));
    // Without a heartbeat nothing would ever close them: the bound only ends a hang.
    await within(deafClosed, 60_000, 'the deaf client to be closed');
    await within(fakerClosed, 60_000, 'the client with pongs of its own to be closed');
    expect(hub.stats.heartbeatTimeouts).toBe(2);
    // Three more heartbeats reach the live client (it answers each): it is still open.
    const after = livePings;
    await until(() => livePings >= after + 3, 60_000, 'three more heartbeats');
    expect(live.ws!.readyState).toBe(WebSocket.OPEN);
    expect(hub.stats.heartbeatTimeouts).toBe(2);
  }, 180_000);

  it('replies to a client that does not read are not queued; one that keeps sending while that far behind is closed', async () => {
    const { hub, url } = await hubServer({ maxBufferedBytes: 64 * 1024 });
    const { ws } = await open(url);
    ws!.send(JSON.stringify({ type: 'subscribe', sources: ['*'], kinds: ['detections'] }));
    await until(() => hub.wants('detections', 'a'), 60_000, 'the subscription');
    (ws as unknown as { _socket: { pause(): void } })._socket.pause();
    // Fill the kernel buffers and then the server's send buffer for this client.
    const big = JSON.stringify({ type: 'detections', pad: 'x'.repeat(100_000) });
    const end = Date.now() + 20_000;
    while (hub.clientStats()[0].buffered <= 64 * 1024 && Date.now() < end) {
      hub.publish('detections', 'a', big, {} as Message);
      await sleep(5);
    }
    const behind = hub.clientStats()[0].buffered;
    expect(behind).toBeGreaterThan(64 * 1024);
    // It keeps sending pings, bad JSON, ping frames: nothing more is queued for it.
    for (let i = 0; i < 3; i++) ws!.send(JSON.stringify({ type: 'ping' }));
    ws!.send('{not json');
    ws!.ping();
    await until(() => hub.stats.controlSkipped >= 5, 60_000, 'skipped replies');
    expect(hub.clientStats()[0].buffered).toBeLessThanOrEqual(behind);
    // …and past 10 messages in a row while that far behind it is closed.
    for (let i = 0; i < 10; i++) ws!.send(JSON.stringify({ type: 'ping' }));
    await until(() => hub.stats.notReading === 1 && hub.stats.connected === 0, 60_000, 'the client to be closed');
  }, 180_000);

  it('more than maxMessagesPerSecond messages, ping or pong frames close the client with 1008; a message over maxClientMessageBytes 1009, in one frame or in fragments', async () => {
    const { hub, url } = await hubServer({ maxMessagesPerSecond: 50 });
    const a = (await open(url)).ws!;
    const aClosed = new Promise<number>((r) => a.once('close', (code) => r(code)));
    for (let i = 0; i < 300; i++) a.send('{"type":"ping"}');
    expect(await within(aClosed, 60_000, 'the close')).toBe(1008);
    const b = (await open(url)).ws!;
    const bClosed = new Promise<number>((r) => b.once('close', (code) => r(code)));
    for (let i = 0; i < 300; i++) b.ping();
    expect(await within(bClosed, 60_000, 'the close')).toBe(1008);
    const p = (await open(url, { autoPong: false })).ws!;
    const pClosed = new Promise<number>((r) => p.once('close', (code) => r(code)));
    for (let i = 0; i < 300; i++) p.pong();
    expect(await within(pClosed, 60_000, 'the close')).toBe(1008);
    expect(hub.stats.rateLimited).toBe(3);
    const c = (await open(url)).ws!;
    const cClosed = new Promise<number>((r) => c.once('close', (code) => r(code)));
    c.send('x'.repeat(4097));
    expect(await within(cClosed, 60_000, 'the close')).toBe(1009);
    // 1-byte fragments of one message: closed once they pass 4096 bytes together (ws holds each until the last).
    const f = (await open(url)).ws!;
    const fClosed = new Promise<number>((r) => f.once('close', (code) => r(code)));
    for (let i = 0; i < 5000 && f.readyState === WebSocket.OPEN; i++) f.send('x', { fin: false });
    expect(await within(fClosed, 60_000, 'the close')).toBe(1009);
    expect(hub.stats.rateLimited).toBe(3); // fragments are one message: the rate limit did not close it
  });

  it('refused upgrades are logged at most once per 10 s (the summary line that follows: test/core/log.test.ts); all are counted', async () => {
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const { hub, url } = await hubServer({ log: (m, f) => lines.push([m, f]) });
    for (let i = 0; i < 30; i++) expect((await open(url, { origin: 'http://evil.example' })).status).toBe(403);
    expect(hub.stats.refused).toBe(30);
    expect(lines.filter(([m]) => m.includes('foreign origin'))).toHaveLength(1);
  });
});
