/**
 * Requests Node's parser refuses before any route sees them (its `clientError`: headers over
 * maxHeaderBytes, a malformed head, a header timeout) and refused upgrades: answered as every
 * other error of the server is, through raw sockets. Before, a bare status line
 * (`Content-Length: 0`): no reason, no DATA_HEADERS, and no CORS, so a page of an allowed origin
 * whose cookie or query grew too large read a network error, which it took for "down".
 */
import { connect as netConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OriginPolicy } from '../../src/core/http.js';
import { RAW_HEAD_MAX_LINES, rawRequestHead, startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const ALLOWED = 'http://viewer.example:8080';

interface Raw {
  status?: number;
  headers: Record<string, string>;
  body: string;
  closed: boolean;
}

/** Writes each chunk (a tick apart) and collects the answer until the server closes (or `stop` holds); `ms` only bounds a hang. */
function raw(port: number, chunks: (string | Buffer)[], ms = 60_000, stop?: (text: string) => boolean): Promise<Raw> {
  return new Promise((resolve) => {
    const got: Buffer[] = [];
    const s = netConnect(port, '127.0.0.1');
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const text = Buffer.concat(got).toString('utf8');
      const cut = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, cut < 0 ? text.length : cut).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0] ?? '');
      resolve({ status: m ? Number(m[1]) : undefined, headers, body: cut < 0 ? '' : text.slice(cut + 4), closed });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('connect', async () => {
      for (const c of chunks) {
        if (!s.writable) return;
        s.write(c);
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    s.on('data', (d) => {
      got.push(d);
      if (stop?.(Buffer.concat(got).toString('latin1'))) finish(false);
    });
    s.on('error', () => finish(true));
    s.on('close', () => finish(true));
  });
}

async function server(o: Partial<HttpServerOptions> = {}): Promise<RunningServer> {
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, maxHeaderBytes: 2048, token: 'sekrit', ...o });
  cleanups.push(() => s.close());
  const origins = new OriginPolicy([ALLOWED]);
  s.route('/api/things', (_q, r) => void r.end('things'), { cors: (q) => origins.crossOrigin(q) });
  s.route('/own', (_q, r) => void r.end('own'));
  return s;
}

const head = (path: string, headers: string[]) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;
const BIG = `Cookie: c=${'a'.repeat(4096)}`;

/** What every answer of the server's own carries, its errors included. */
function expectPlain(r: Raw, status: number, words: RegExp): void {
  expect(r.status).toBe(status);
  expect(r.body).toMatch(words);
  expect(r.headers['content-length']).toBe(String(Buffer.byteLength(r.body)));
  expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
  expect(r.headers['cache-control']).toBe('no-store');
  expect(r.headers['x-content-type-options']).toBe('nosniff');
  expect(r.headers['cross-origin-resource-policy']).toBe('same-origin');
  expect(r.closed).toBe(true);
}

describe('HTTP: what Node refuses before any route is answered as the server answers', () => {
  it('headers over maxHeaderBytes: 431 saying the setting and its value; CORS to an allowed origin of an API path (route or typo), none to another origin or a path of the own pages', async () => {
    const s = await server();
    const allowed = await raw(s.port, [head('/api/things', [`Origin: ${ALLOWED}`, BIG])]);
    expectPlain(allowed, 431, /over 2048 bytes \(server\.maxHeaderBytes\)/);
    expect(allowed.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(allowed.headers['access-control-expose-headers']).toBe('WWW-Authenticate, Retry-After');
    expect(allowed.headers.vary).toBe('Origin, Referer');
    // A query too long: the same, and a path with no route under /api/ as its routes do.
    const query = await raw(s.port, [head(`/api/thingz?q=${'q'.repeat(4096)}`, [`Origin: ${ALLOWED}`])]);
    expect(query.status).toBe(431);
    expect(query.headers['access-control-allow-origin']).toBe(ALLOWED);
    // An <img>'s Referer names its page as on any request.
    const referer = await raw(s.port, [head('/api/things', [`Referer: ${ALLOWED}/wall.html`, BIG])]);
    expect(referer.headers['access-control-allow-origin']).toBe(ALLOWED);
    for (const [path, origin] of [
      ['/api/things', 'http://evil.example'],
      ['/api/things', 'null'],
      ['/own', ALLOWED],
    ]) {
      const r = await raw(s.port, [head(path, [`Origin: ${origin}`, BIG])]);
      expectPlain(r, 431, /server\.maxHeaderBytes/);
      expect(r.headers['access-control-allow-origin'], `${path} ${origin}`).toBeUndefined();
    }
    // Origin sent twice reads as Node reads it, `a, b`: no origin.
    const twice = await raw(s.port, [head('/api/things', [`Origin: ${ALLOWED}`, `Origin: ${ALLOWED}`, BIG])]);
    expect(twice.headers['access-control-allow-origin']).toBeUndefined();
    // The head in several reads: its start is gone when Node refuses it. 431 all the same, no CORS.
    const split = await raw(s.port, [`GET /api/things HTTP/1.1\r\nOrigin: ${ALLOWED}\r\nCookie: c=`, 'a'.repeat(1500), `${'a'.repeat(1500)}\r\n\r\n`]);
    expectPlain(split, 431, /server\.maxHeaderBytes/);
    expect(split.headers['access-control-allow-origin']).toBeUndefined();
    // The server answers on.
    expect((await raw(s.port, [head('/api/things?token=sekrit', ['Connection: close'])])).body).toBe('things');
  });

  it('a header value with a bare CR or LF past where Node stopped (a request line too long) is no origin: the answer holds no header it injected', async () => {
    // Under allowedOrigins "*" an Origin of any scheme is admitted, and a 431 reads the bytes Node
    // never parsed: `Origin: foo:x<LF>Set-Cookie: pwn=1` was answered
    // `access-control-allow-origin: foo:x<LF>set-cookie: pwn=1`, a header line of the attacker's
    // (response splitting: a proxy or cache in front that reads a bare LF as a line end).
    const s = await server();
    const any = new OriginPolicy(['*']);
    s.route('/api/any', (_q, r) => void r.end('any'), { cors: (q) => any.crossOrigin(q) });
    for (const sep of ['\n', '\r', '\x00']) {
      const r = await raw(s.port, [`GET /api/any?q=${'q'.repeat(4096)} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: foo:x${sep}Set-Cookie: pwn=1\r\n\r\n`]);
      expectPlain(r, 431, /server\.maxHeaderBytes/);
      expect(r.headers['set-cookie'], JSON.stringify(sep)).toBeUndefined();
      expect(r.headers['access-control-allow-origin'], JSON.stringify(sep)).toBeUndefined();
    }
    // A well-formed one of another scheme is still answered as "*" admits it.
    const ok = await raw(s.port, [`GET /api/any?q=${'q'.repeat(4096)} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://any.example\r\n\r\n`]);
    expect(ok.headers['access-control-allow-origin']).toBe('http://any.example');
  });

  it('a malformed head: 400 naming the parser\'s code; CORS only from the headers Node read before the fault', async () => {
    const s = await server();
    const before = await raw(s.port, [head('/api/things', [`Origin: ${ALLOWED}`, 'bad header'])]);
    expectPlain(before, 400, /^bad request: the request cannot be read as HTTP\/1\.1 \(HPE_INVALID_HEADER_TOKEN\)\n$/);
    expect(before.headers['access-control-allow-origin']).toBe(ALLOWED);
    const after = await raw(s.port, [head('/api/things', ['bad header', `Origin: ${ALLOWED}`])]);
    expectPlain(after, 400, /HPE_INVALID_HEADER_TOKEN/);
    expect(after.headers['access-control-allow-origin']).toBeUndefined();
    for (const bad of ['GARBAGE\r\n\r\n', 'GET / HTTP/9.9\r\n\r\n', '\x00\x01\x02\r\n\r\n', `GET /api/things\x00 HTTP/1.1\r\nOrigin: ${ALLOWED}\r\n\r\n`]) {
      const r = await raw(s.port, [bad]);
      expectPlain(r, 400, /^bad request: the request cannot be read as HTTP\/1\.1( \(HPE_[A-Z_]+\))?\n$/);
      expect(r.headers['access-control-allow-origin'], JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('after valid requests on the same connection (pipelined), the refusal comes after their answers, which arrive whole; then closed', async () => {
    // The route answers later than the fault is found: the refusal was written at once, and the
    // client read it as the first request's answer (whose own came after, on a closed socket).
    const s = await server();
    s.route('/late', (_q, r) => void setTimeout(() => r.end('late answer'), 100));
    const first = 'GET /late?token=sekrit HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    for (const [second, status] of [
      ['GARBAGE\r\n\r\n', 400],
      [head('/own', [BIG]), 431],
    ] as const) {
      const r = await raw(s.port, [first + second]);
      const statuses = [...(r.status === undefined ? [] : [r.status]), ...[...r.body.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))];
      expect(statuses, second.slice(0, 20)).toEqual([200, status]);
      expect(r.body.startsWith('late answerHTTP/1.1')).toBe(true);
      expect(r.closed).toBe(true);
    }
  });

  it('an upgrade after a request on the same connection waits for its answer: h2c no longer throws out of the server (argus stopped), a WebSocket\'s 101 or refusal comes after it', async () => {
    // Node hands an upgrade over as soon as it is parsed, its first request's answer unsent: the
    // h2c one, answered as a plain request, threw ERR_HTTP_SOCKET_ASSIGNED out of the 'upgrade'
    // listener (an uncaught exception: argus shut down, exit 4), from one write of anyone who
    // could reach the port; a WebSocket's 101 or refusal was written ahead of that answer.
    const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 10, maxClientMessageBytes: 4096, sources: () => [], token: 'sekrit' });
    cleanups.push(() => hub.close());
    const s = await server({ upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } } });
    s.route('/late', (_q, r) => void setTimeout(() => r.end('late answer'), 100));
    const statuses = (r: Raw) => [...(r.status === undefined ? [] : [r.status]), ...[...r.body.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]))];
    const ws = ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
    for (const first of ['/own?token=sekrit', '/late?token=sekrit']) {
      const h2c = await raw(s.port, [head(first, []) + head('/own?token=sekrit', ['Connection: Upgrade, HTTP2-Settings', 'Upgrade: h2c', 'HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA'])]);
      expect(statuses(h2c), first).toEqual([200, 200]);
      expect(h2c.body.endsWith('own')).toBe(true);
      expect(h2c.closed).toBe(true);
    }
    const refused = await raw(s.port, [head('/late?token=sekrit', []) + head('/nows', ws)]);
    expect(statuses(refused)).toEqual([200, 404]);
    expect(refused.body.startsWith('late answerHTTP/1.1 404')).toBe(true);
    const opened = await raw(s.port, [head('/late?token=sekrit', []) + head('/ws?token=sekrit', ws)], 60_000, (t) => t.includes('101 Switching Protocols'));
    expect(statuses(opened)).toEqual([200, 101]);
    expect(opened.body.startsWith('late answerHTTP/1.1 101')).toBe(true);
    // The server answers on.
    expect((await raw(s.port, [head('/own?token=sekrit', ['Connection: close'])])).body).toBe('own');
  });

  it("a fault of the socket itself (EPIPE, ETIMEDOUT) is not answered 400: the peer sent nothing wrong; the socket is let go", async () => {
    const s = await server();
    for (const code of ['EPIPE', 'ETIMEDOUT', 'ECONNRESET']) {
      const accepted = new Promise<import('node:net').Socket>((r) => s.server.once('connection', r));
      const answer = raw(s.port, []);
      const socket = await accepted;
      s.server.emit('clientError', Object.assign(new Error(code), { code }), socket);
      const r = await answer;
      expect([r.status, r.closed], code).toEqual([undefined, true]);
    }
  });

  it('headers not complete within headersTimeoutMs: 408 naming both timeouts', async () => {
    const s = await server({ headersTimeoutMs: 500, requestTimeoutMs: 5000 });
    // Bounded by 20 s only against a hang: Node's check runs every ~125 ms here.
    const r = await raw(s.port, [`GET /api/things HTTP/1.1\r\nOrigin: ${ALLOWED}\r\n`], 20_000);
    expectPlain(r, 408, /within 500 ms \(server\.headersTimeoutMs\), or the whole request within 5000 ms \(server\.requestTimeoutMs\)/);
  });

  it("a refused upgrade says why as a plain request's answer would (404, 403 of a Host not served, 400 of a URL)", async () => {
    const s = await server();
    const ws = ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
    expectPlain(await raw(s.port, [head('/nows', ws)]), 404, /^not found\n$/);
    expectPlain(await raw(s.port, [head('/nows', ws).replace('Host: 127.0.0.1', 'Host: evil.example')]), 403, /^forbidden: this Host is not served \(server\.allowedHosts\)\n$/);
    expectPlain(await raw(s.port, [head('http://x:99999/', ws)]), 400, /^bad request: the URL cannot be parsed\n$/);
  });
});

describe("WebSocket: the hub's refusals say why", () => {
  it('a foreign Origin (403), no token (401), a subprotocol not spoken (400), the handshake rate (429): each a body naming what to change, with the data headers', async () => {
    const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 10, maxClientMessageBytes: 4096, sources: () => [], token: 'sekrit', handshakeBurstPerAddress: 1, handshakesPerAddressPerSecond: 0.001 });
    cleanups.push(() => hub.close());
    const s = await server({ upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } } });
    const ws = ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
    expectPlain(await raw(s.port, [head('/ws', [...ws, 'Origin: http://evil.example'])]), 403, /^forbidden: a page of this origin may not open \/ws \(server\.allowedOrigins, server\.publicOrigins\)\n$/);
    const noToken = await raw(s.port, [head('/ws', ws)]);
    expectPlain(noToken, 401, /^unauthorized: send Authorization: Bearer <token> or \?token=<token>\n$/);
    expect(noToken.headers['www-authenticate']).toBe('Bearer realm="argus"');
    expectPlain(await raw(s.port, [head('/ws?token=sekrit', [...ws, 'Sec-WebSocket-Protocol: mqtt'])]), 400, /^bad request: WebSocket subprotocol not spoken here; ask for .+ or none\n$/);
    // The one handshake of the bucket spent (the 400 above did not take it), the next is 429.
    const first = await raw(s.port, [head('/ws?token=sekrit', ws)], 60_000, (t) => t.includes('\r\n\r\n'));
    expect(first.status).toBe(101);
    expectPlain(await raw(s.port, [head('/ws?token=sekrit', ws)]), 429, /handshakesPerAddressPerSecond/);
    // A plain request to /ws says the same as the upgrade.
    expectPlain(await raw(s.port, [head('/ws', ['Origin: http://evil.example', 'Connection: close'])]), 403, /server\.allowedOrigins/);
  });
});

describe('WebSocket: what ws itself refuses', () => {
  it('a handshake without its key or of another version: 400 saying which, with the data headers (ws answered text/html without them)', async () => {
    const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 10, maxClientMessageBytes: 4096, sources: () => [], token: 'sekrit' });
    cleanups.push(() => hub.close());
    const s = await server({ upgrades: { '/ws': { upgrade: (q, so, h) => hub.handleUpgrade(q, so, h), refusal: (q, u) => hub.refusal(q, u) } } });
    const bare = ['Connection: Upgrade', 'Upgrade: websocket'];
    expectPlain(await raw(s.port, [head('/ws?token=sekrit', [...bare, 'Sec-WebSocket-Version: 13'])]), 400, /^bad request: Missing or invalid Sec-WebSocket-Key header \(a WebSocket handshake/);
    const version = await raw(s.port, [head('/ws?token=sekrit', [...bare, 'Sec-WebSocket-Version: 7', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='])]);
    expectPlain(version, 400, /Sec-WebSocket-Version/);
    expect(version.headers['sec-websocket-version']).toBe('13, 8');
    expect(hub.stats.refused).toBe(2);
  });
});

describe('HTTP: requests Node handles apart from the others', () => {
  it('CONNECT (argus taken for a forward proxy) answers 405 with Allow, and is closed; it was closed without a word', async () => {
    const s = await server();
    const r = await raw(s.port, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']);
    expectPlain(r, 405, /^method not allowed\n$/);
    expect(r.headers.allow).toBe('GET, HEAD');
  });

  it('Expect: 100-continue invites no body (no route takes one: 413 at once); without a body the request is served as any; another expectation 417, closed', async () => {
    const s = await server();
    const body = await raw(s.port, [head('/own?token=sekrit', ['Expect: 100-continue', 'Content-Length: 10'])]);
    expect(body.status).toBe(413); // the first line: no `100 Continue` before it
    expect(body.closed).toBe(true);
    const none = await raw(s.port, [head('/own?token=sekrit', ['Expect: 100-continue', 'Connection: close'])]);
    expect(none.status).toBe(200);
    expect(none.body).toBe('own');
    // Kept alive as any request (Node closed it when no `100 Continue` had been sent): the request
    // sent after it on the connection is answered too, not dropped.
    const kept = await raw(s.port, [head('/own?token=sekrit', ['Expect: 100-continue']) + head('/own?token=sekrit', ['Connection: close'])]);
    expect([...`${kept.status} ${kept.body}`.matchAll(/HTTP\/1\.1 (\d{3})|^(\d{3})/g)].map((m) => m[1] ?? m[2])).toEqual(['200', '200']);
    expect(kept.body.endsWith('own')).toBe(true);
    const other = await raw(s.port, [head('/own?token=sekrit', ['Expect: teapot'])]);
    expectPlain(other, 417, /^expectation failed: only Expect: 100-continue is understood/);
    // Checked as any request first: an unserved Host is 403 (it was 417 to any name), and the
    // address's rate counts it (it took no token: 429 never came).
    expectPlain(await raw(s.port, [head('/own?token=sekrit', ['Expect: teapot']).replace('Host: 127.0.0.1', 'Host: evil.example')]), 403, /server\.allowedHosts/);
    const paced = await server({ requestBurstPerAddress: 1, requestsPerAddressPerSecond: 0.001 });
    expect((await raw(paced.port, [head('/own?token=sekrit', ['Expect: teapot'])])).status).toBe(417);
    expect((await raw(paced.port, [head('/own?token=sekrit', ['Expect: teapot'])])).status).toBe(429);
  });
});

describe('rawRequestHead', () => {
  it('reads the target and the CORS headers of whole lines up to where the parser stopped; nothing without a request line', () => {
    const b = Buffer.from(`GET /a?b HTTP/1.1\r\nORIGIN: http://o.example\r\nX: y\r\nReferer: http://r.example/p\r\nHost: h:1\r\nOrigin: http://p.exa`, 'latin1');
    expect(rawRequestHead(b)).toEqual({ url: '/a?b', headers: { origin: 'http://o.example', referer: 'http://r.example/p', host: 'h:1' } });
    expect(rawRequestHead(b, b.indexOf('Referer'))).toEqual({ url: '/a?b', headers: { origin: 'http://o.example' } });
    expect(rawRequestHead(Buffer.from('aaaa\r\nOrigin: http://o.example\r\n\r\n'))).toBeUndefined();
    expect(rawRequestHead(undefined)).toBeUndefined();
    expect(rawRequestHead('GET / HTTP/1.1\r\n\r\n')).toBeUndefined();
    // The first RAW_HEAD_MAX_LINES header lines only: past a request line too long Node parsed
    // nothing, and each of ~16 000 lines without a colon was scanned to the end (12 ms a request).
    const lines = (n: number) => Buffer.from(`GET / HTTP/1.1\r\n${'a\r\n'.repeat(n)}Origin: http://o.example\r\n\r\n`, 'latin1');
    expect(rawRequestHead(lines(RAW_HEAD_MAX_LINES - 1))?.headers.origin).toBe('http://o.example');
    expect(rawRequestHead(lines(RAW_HEAD_MAX_LINES))).toEqual({ url: '/', headers: {} });
    // A colon on a later line is not this line's.
    expect(rawRequestHead(Buffer.from('GET / HTTP/1.1\r\nOrigin\r\nx: http://o.example\r\n\r\n', 'latin1'))).toEqual({ url: '/', headers: {} });
    // A bare LF, CR or NUL in a line: bytes no parser checked, no head.
    for (const c of ['\n', '\r', '\x00']) expect(rawRequestHead(Buffer.from(`GET / HTTP/1.1\r\nOrigin: foo:x${c}Set-Cookie: a=b\r\n\r\n`, 'latin1')), JSON.stringify(c)).toBeUndefined();
  });
});
