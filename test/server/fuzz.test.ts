/**
 * Fuzz: a real server (startHttpServer + the pipeline's routes + the WebSocket hub on /ws) on
 * loopback takes 10 000 malformed HTTP requests — random bytes, bad request lines, URLs that
 * cannot be parsed, huge headers, methods it does not serve, truncated and reset requests,
 * broken upgrades — and a few thousand malformed WebSocket messages and frames. Afterwards
 * no exception has escaped, /healthz still answers, and the open sockets and file
 * descriptors are back down. Bounded: ~20 connections at a time, small payloads.
 * FUZZ_SEED=<n> replays a run (the seed is printed).
 */
import { readdirSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startHttpServer, type RunningServer } from '../../src/server/http.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import type { Metrics } from '../../src/server/metrics.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';

const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
function mulberry32(a: number) {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
const bytes = (n: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = int(256);
  return b;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fds = () => readdirSync('/proc/self/fd').length;

const TOKEN = 'fuzz-t0ken';
const escaped: unknown[] = [];
const onEscape = (e: unknown) => escaped.push(e);

let server: RunningServer;
let hub: WebSocketHub;
let rates: RateMeter;
beforeAll(async () => {
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
  // Every fuzzed client is of 127.0.0.1: the handshake rate (handshakeBurstPerAddress) would refuse most with 429 before a message was fuzzed,
  // and the request rate (requestBurstPerAddress) most requests before their route ran.
  hub = new WebSocketHub({ token: TOKEN, maxBufferedBytes: 256 * 1024, maxAlertBacklog: 100, maxClientMessageBytes: 4096, maxClients: 64, handshakeBurstPerAddress: 10_000, heartbeatMs: 2000, sources: () => ['lobby'] });
  server = await startHttpServer({ host: '127.0.0.1', port: 0, token: TOKEN, requestBurstPerAddress: 1_000_000, headersTimeoutMs: 2000, requestTimeoutMs: 4000, keepAliveTimeoutMs: 1000, upgrades: { '/ws': (q, s, h) => hub.handleUpgrade(q, s, h) } });
  const e2e = { sorted: () => [1, 2, 3] };
  const e2eBy = { counts: [3, 0, 0, 0] }; // camera
  const pipeline = {
    stats: [{ id: 'lobby', state: 'streaming', framesOut: 5, reconnects: 0, dropped: 0, width: 640, height: 480, fps: 25, e2e, e2eBy, lastTransition: { reason: 'up rtsp://a:b@cam/x', at: 1 } }],
    detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined },
  } as unknown as Pipeline;
  rates = new RateMeter(() => []);
  registerRoutes(server, { pipeline, metrics: { scrape: async () => 'argus_up 1\n', contentType: 'text/plain' } as unknown as Metrics, rates, geometry: () => ({ zones: [], lines: [] }) });
});
afterAll(async () => {
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
  rates?.close();
  await hub?.close();
  await server?.close();
});

// ---------------------------------------------------------------------------------------------
// HTTP cases

const PATHS = ['/', '/healthz', '/readyz', '/metrics', '/api/sources', '/app.js', '/style.css', '/index.html', '/ws', '/nope', '//x:99999', '//[::1', 'http://[zz]/', '/%', '/%%zz', '/a?token=', `/api/sources?token=${TOKEN}`, '*', '/\u00ff\u00fe', '/..%2f..%2fetc/passwd', 'x'.repeat(300), '/?' + 'a=1&'.repeat(200)];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'FOO', 'get', 'G E T', '', 'GET\x00'];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9', 'HTTP/1.1 extra', '', 'http/1.1'];
const junkHeader = () => pick([`X-${int(1e6)}: ${bytes(int(40)).toString('latin1')}`, 'NoColon', ': empty-name', `Content-Length: ${pick(['-1', 'abc', '99999999999999999999', '5, 6'])}`, 'Transfer-Encoding: chunked', 'Transfer-Encoding: gzip, chunked', `Authorization: Bearer ${pick([TOKEN, 'wrong', '', 'x'.repeat(500)])}`, `Authorization: ${bytes(20).toString('latin1')}`, `Origin: ${pick(['http://evil.example', 'null', '::::', ''])}`, 'Host:', 'Host: a\r\nHost: b', 'Upgrade: websocket', 'Connection: upgrade']);

function httpCase(): { payload: Buffer[]; reset?: boolean } {
  const kind = int(10);
  const head = (method: string, path: string, version = 'HTTP/1.1', extra: string[] = []) => `${method} ${path} ${version}\r\nHost: 127.0.0.1\r\n${extra.map((h) => h + '\r\n').join('')}`;
  switch (kind) {
    case 0: // random bytes
      return { payload: [bytes(1 + int(512))] };
    case 1: // bad request line
      return { payload: [Buffer.from(`${pick(METHODS)} ${pick(PATHS)} ${pick(VERSIONS)}\r\n${junkHeader()}\r\n\r\n`, 'latin1')] };
    case 2: // URLs that do not parse, on real routes
      return { payload: [Buffer.from(head(pick(['GET', 'HEAD']), pick(['//x:99999', '//[::1', 'http://[zz]/', '//a:b@:0', '//x:-1/healthz']), 'HTTP/1.1', ['Connection: close']) + '\r\n')] };
    case 3: // huge headers (over the 16 KiB default), occasionally
      return { payload: [Buffer.from(head('GET', '/healthz', 'HTTP/1.1', ['Connection: close', `X-Big: ${'a'.repeat(rnd() < 0.3 ? 20_000 : 1000 + int(4000))}`]) + '\r\n')] };
    case 4: // methods not served, with bodies
      return { payload: [Buffer.from(head(pick(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']), pick(PATHS.slice(0, 8)), 'HTTP/1.1', ['Connection: close', 'Content-Length: 8', `Authorization: Bearer ${TOKEN}`]) + '\r\n' + '{"a":1}\n')] };
    case 5: {
      // truncated: a valid request cut anywhere (then closed, or reset)
      const full = Buffer.from(head('GET', pick(PATHS.slice(0, 8)), 'HTTP/1.1', [junkHeader(), `Authorization: Bearer ${TOKEN}`]) + '\r\n');
      return { payload: [full.subarray(0, int(full.length))], reset: rnd() < 0.5 };
    }
    case 6: {
      // junk headers on real routes, pipelined, sometimes split in chunks
      const n = 1 + int(3);
      const parts: Buffer[] = [];
      for (let i = 0; i < n; i++) parts.push(Buffer.from(head(pick(['GET', 'HEAD', 'POST']), pick(PATHS), 'HTTP/1.1', [junkHeader(), junkHeader(), ...(i === n - 1 ? ['Connection: close'] : [])]) + '\r\n', 'latin1'));
      const all = Buffer.concat(parts);
      const cut = int(all.length);
      return { payload: rnd() < 0.5 ? [all] : [all.subarray(0, cut), all.subarray(cut)] };
    }
    case 7: // broken upgrades
      return {
        payload: [
          Buffer.from(
            head('GET', pick(['/ws', `/ws?token=${TOKEN}`, '/nope', '//x:99999', '/ws?token=bad']), 'HTTP/1.1', [
              'Connection: Upgrade',
              'Upgrade: websocket',
              pick(['Sec-WebSocket-Version: 13', 'Sec-WebSocket-Version: 99', '']),
              pick(['Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Key: short', '']),
              pick(['', 'Origin: http://evil.example', 'Origin: null']),
            ].filter(Boolean)) + '\r\n',
          ),
          ...(rnd() < 0.5 ? [bytes(int(64))] : []),
        ],
      };
    case 8: // valid requests, with and without the token
      return { payload: [Buffer.from(head(pick(['GET', 'HEAD']), pick(PATHS.slice(0, 8)) + (rnd() < 0.5 ? `?token=${TOKEN}` : ''), 'HTTP/1.1', ['Connection: close']) + '\r\n')] };
    default: // bytes after a valid start line
      return { payload: [Buffer.from(`GET /healthz HTTP/1.1\r\n`), bytes(int(256))], reset: rnd() < 0.3 };
  }
}

/** One connection: writes the payload, then waits until the server closes or goes quiet (40 ms, 3 s at most). */
function runHttpCase(port: number): Promise<void> {
  const c = httpCase();
  return new Promise((resolve) => {
    const s: Socket = netConnect(port, '127.0.0.1');
    let quiet: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(quiet);
      clearTimeout(cap);
      s.destroy();
      resolve();
    };
    const cap = setTimeout(done, 3000);
    const arm = () => {
      clearTimeout(quiet);
      quiet = setTimeout(done, 40);
    };
    s.on('error', done);
    s.on('close', done);
    s.on('data', arm);
    s.on('connect', async () => {
      for (const p of c.payload) {
        if (s.destroyed) return;
        s.write(p);
        if (c.payload.length > 1) await sleep(int(5));
      }
      if (c.reset) s.resetAndDestroy();
      else arm();
    });
  });
}

// ---------------------------------------------------------------------------------------------
// WebSocket cases

function wsMessage(): string | Buffer {
  switch (int(9)) {
    case 0:
      return '{not json' + bytes(int(20)).toString('latin1');
    case 1:
      return bytes(1 + int(200)); // binary
    case 2:
      return 'x'.repeat(4097 + int(2000)); // over maxClientMessageBytes
    case 3:
      return JSON.stringify(pick([null, 1, 'str', [], [1, 2], { type: null }, { type: ['ping'] }, { type: 'x'.repeat(3000) }, { type: { toString: 1 } }, { __proto__: { type: 'ping' } }]));
    case 4:
      return JSON.stringify({ type: 'subscribe', sources: pick([['*'], 'lobby', [1], [null], Array(200).fill('s'), ['lobby']]), kinds: pick([['frames'], ['detections', 'alerts'], 'all', [{}], ['nope']]) });
    case 5:
      return JSON.stringify({ type: pick(['ping', 'unsubscribe', 'PING', 'constructor', '__proto__', 'hasOwnProperty']) });
    case 6:
      return '['.repeat(1000) + ']'.repeat(1000);
    case 7:
      return bytes(int(100)).toString('latin1');
    default:
      return '';
  }
}

async function runWsClient(url: string, messages: number): Promise<number> {
  let sent = 0;
  const ws = new WebSocket(url, { headers: rnd() < 0.2 ? { origin: 'http://evil.example' } : {} });
  ws.on('error', () => {});
  const opened = await new Promise<boolean>((r) => {
    ws.once('open', () => r(true));
    ws.once('unexpected-response', () => r(false));
    ws.once('error', () => r(false));
    ws.once('close', () => r(false));
    setTimeout(() => r(false), 5000);
  });
  if (opened) {
    for (let i = 0; i < messages && ws.readyState === WebSocket.OPEN; i++) {
      if (rnd() < 0.05) ws.ping(bytes(int(125)));
      else ws.send(wsMessage());
      sent++;
      if (i % 10 === 9) await sleep(5); // under the per-client rate limit, mostly
    }
    if (rnd() < 0.02) ws.send('y'.repeat(70 * 1024)); // over maxPayload: 1009
  }
  if (rnd() < 0.5) ws.terminate();
  else ws.close();
  await new Promise((r) => (ws.readyState === WebSocket.CLOSED ? r(null) : (ws.once('close', r), setTimeout(r, 2000))));
  ws.terminate();
  return sent;
}

/** A handshake by hand, then random bytes as frames: bad opcodes, unmasked frames, lengths of 2^63, … */
function runRawFrames(port: number): Promise<number> {
  return new Promise((resolve) => {
    let sent = 0;
    const s = netConnect(port, '127.0.0.1');
    const done = () => {
      clearTimeout(cap);
      s.destroy();
      resolve(sent);
    };
    const cap = setTimeout(done, 3000);
    s.on('error', done);
    s.on('close', done);
    let upgraded = false;
    s.on('data', async (d) => {
      if (upgraded || !d.toString('latin1').startsWith('HTTP/1.1 101')) return;
      upgraded = true;
      for (let i = 0; i < 10 && !s.destroyed; i++) {
        const frame = pick([
          () => bytes(1 + int(64)),
          () => Buffer.from([0x80 | int(16), 0x80 | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4]), // 2^63-1 bytes announced
          () => Buffer.concat([Buffer.from([0x81, 5]), Buffer.from('hello')]), // unmasked
          () => Buffer.from([0x80 | (3 + int(5)), 0x80, 0, 0, 0, 0]), // reserved opcode
          () => Buffer.from([0x01 | 0x70, 0x80, 0, 0, 0, 0]), // RSV bits
          () => Buffer.from([0x89, 0x80 | 126, 0, 200, 0, 0, 0, 0]), // control frame over 125 bytes
        ])();
        s.write(frame);
        sent++;
        await sleep(int(3));
      }
      setTimeout(done, 50);
    });
    s.on('connect', () =>
      s.write(`GET /ws?token=${TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`),
    );
  });
}

async function pool<T>(n: number, concurrency: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

const connections = () => new Promise<number>((r) => server.server.getConnections((_e, n) => r(n)));
async function healthz(): Promise<number> {
  const r = await fetch(`${server.url}/healthz`, { headers: { connection: 'close' } });
  await r.text();
  return r.status;
}

describe('fuzz: malformed HTTP and WebSocket input', () => {
  it('10 000 malformed requests and thousands of bad frames: nothing escapes, /healthz answers, sockets and fds come back down', async () => {
    const fds0 = fds();
    const t0 = performance.now();
    const HTTP = 10_000;
    await pool(HTTP, 20, () => runHttpCase(server.port));
    const tHttp = performance.now() - t0;

    const wsUrl = `ws://127.0.0.1:${server.port}/ws?token=${TOKEN}`;
    const wsSent = (await pool(120, 20, () => runWsClient(wsUrl, 25))).reduce((a, b) => a + b, 0);
    const rawSent = (await pool(150, 20, () => runRawFrames(server.port))).reduce((a, b) => a + b, 0);
    const wall = performance.now() - t0;

    expect(escaped).toEqual([]);
    expect(await healthz()).toBe(200);
    // Sockets close: ours are all closed, the server's follow (some wait for their 2 s refusal
    // timer). The bound only ends a hang: the loops stop as soon as the counts are back down.
    const end = Date.now() + 120_000;
    while (((await connections()) > 0 || hub.stats.connected > 0) && Date.now() < end) await sleep(100);
    const left = await connections();
    expect(left).toBe(0);
    expect(hub.stats.connected).toBe(0);
    while (fds() > fds0 + 5 && Date.now() < end) await sleep(100);
    const fds1 = fds();
    expect(fds1).toBeLessThanOrEqual(fds0 + 5);
    expect(await healthz()).toBe(200);
    expect(escaped).toEqual([]);
    console.log(
      `fuzz (seed ${SEED}): ${HTTP} malformed HTTP requests in ${(tHttp / 1000).toFixed(1)} s; ` +
        `${wsSent} WebSocket messages on 120 clients and ${rawSent} raw frames on 150 sockets; ${(wall / 1000).toFixed(1)} s in all; ` +
        `hub refused ${hub.stats.refused}, rate-limited ${hub.stats.rateLimited}; fds ${fds0} → ${fds1}`,
    );
  }, 900_000); // ~8 s idle; the bound only ends a hang on a busy machine
});
