/**
 * The HTTP server, the WebSocket hub and the dashboard's snapshot URLs against a demanding (or
 * hostile) consumer: a real server on 127.0.0.1 (port 0), raw sockets and a raw `ws` client.
 */
import { connect as netConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { launchChromium } from '../helpers/browser.js';
import { startHttpServer, type HttpServerOptions, type RunningServer } from '../../src/server/http.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import type { Metrics } from '../../src/server/metrics.js';
import { WebSocketHub, type WebSocketHubOptions } from '../../src/sinks/websocket.js';
import { SCHEMA_REVISION, type AlertMessage } from '../../src/sinks/message.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function server(o: Partial<HttpServerOptions> = {}): Promise<RunningServer> {
  const s = await startHttpServer({ host: '127.0.0.1', port: 0, ...o });
  cleanups.push(() => s.close());
  return s;
}

function hub(o: Partial<WebSocketHubOptions> = {}): WebSocketHub {
  const h = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 1000, maxClientMessageBytes: 4096, sources: () => ['cam'], ...o });
  cleanups.push(() => h.close());
  return h;
}

function context(snapshot?: (id: string, key: string) => Buffer | undefined) {
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
  const metrics = { scrape: async () => 'argus_up 1\n', contentType: 'text/plain; version=0.0.4; charset=utf-8' } as unknown as Metrics;
  const rates = new RateMeter(() => []);
  cleanups.push(() => rates.close());
  return { pipeline, metrics, rates, geometry: () => ({ zones: [], lines: [] }), snapshot };
}

/** One GET on a fresh connection: status, headers (lower case) and body bytes. */
function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('connect', () => s.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${'connection' in headers ? '' : 'Connection: close\r\n'}${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`));
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      const head = all.subarray(0, end).toString('latin1').split('\r\n');
      const h: Record<string, string> = {};
      for (const l of head.slice(1)) {
        const i = l.indexOf(':');
        if (i > 0) h[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      let body = all.subarray(end + 4);
      if (h['transfer-encoding'] === 'chunked') {
        const parts: Buffer[] = [];
        for (let i = 0; ; ) {
          const eol = body.indexOf('\r\n', i);
          const n = parseInt(body.subarray(i, eol).toString('latin1'), 16);
          if (!(n > 0)) break;
          parts.push(body.subarray(eol + 2, eol + 2 + n));
          i = eol + 2 + n + 2;
        }
        body = Buffer.concat(parts);
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '')?.[1]), headers: h, body });
    });
    setTimeout(() => s.destroy(), 30_000).unref();
  });
}

const alert = (id: string, picture: Buffer): AlertMessage =>
  ({ v: 1, type: 'alert', source: 'cam', seq: 1, pts: 0, ts: 1, detections: [], alert: { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg', data: picture.toString('base64'), width: 4, height: 3 } } }) as unknown as AlertMessage;

/** The snapshot URL the hub sends with an alert (what a consumer fetches). */
function publishAlert(h: WebSocketHub, id: string, picture: Buffer): string {
  const m = alert(id, picture);
  h.publish('alert', 'cam', JSON.stringify(m), m);
  const url = h.snapshotUrl(id);
  if (!url) throw new Error('no snapshot url');
  return url;
}

describe('snapshot URLs name one picture only', () => {
  it('a URL of one argus process (or hub) never answers another alert of the same id: a run given again across processes', async () => {
    const id = 'cam:r:samerun-1:1';
    const first = Buffer.from([0xff, 0xd8, 1, 1, 1]);
    const second = Buffer.from([0xff, 0xd8, 2, 2, 2]);
    // The first process: its dashboard (or a Kafka consumer, snapshotOmitted.url) keeps the URL.
    const a = hub({ run: 'samerun' });
    const oldUrl = publishAlert(a, id, first);
    // The program starts again with the same run: the same alert id, another picture.
    const b = hub({ run: 'samerun' });
    const newUrl = publishAlert(b, id, second);
    const s = await server();
    registerRoutes(s, context((i, k) => b.snapshot(i, k)));
    const fresh = await get(s.port, newUrl);
    expect(fresh.status).toBe(200);
    expect(fresh.body.equals(second)).toBe(true);
    const stale = await get(s.port, oldUrl);
    expect(stale.status, 'the old URL names the first picture, which this process does not hold').toBe(404);
    expect(stale.body.toString()).not.toContain('\u0002');
    expect(newUrl).not.toBe(oldUrl);
  });
});

/** A server with the hub at /ws, wired as the run wires it (its checks before a plain request's 426). */
async function wsServer(token?: string, o: Partial<WebSocketHubOptions> = {}) {
  const h = hub({ token, ...o });
  const s = await server({ token, upgrades: { '/ws': { upgrade: (q, k, b) => h.handleUpgrade(q, k, b), refusal: (q, u) => h.refusal(q, u) } } });
  registerRoutes(s, context());
  return { s, h };
}

describe('a plain GET to /ws', () => {
  it('answers 426 Upgrade Required with Upgrade: websocket, after the Origin and token checks; the WebSocket itself still connects', async () => {
    const { s } = await wsServer('s3cret');
    const bearer = { authorization: 'Bearer s3cret' };
    // The token first: without it, 401 (nothing says a WebSocket is here).
    const noToken = await get(s.port, '/ws');
    expect([noToken.status, noToken.headers['www-authenticate']]).toEqual([401, 'Bearer realm="argus"']);
    expect((await get(s.port, '/ws?token=wrong')).status).toBe(401);
    // A foreign Origin: 403, as its upgrade would be, the token or not.
    expect((await get(s.port, '/ws', { ...bearer, origin: 'http://evil.example' })).status).toBe(403);
    expect((await get(s.port, '/ws', { origin: 'http://evil.example' })).status).toBe(403);
    for (const method of ['GET', 'HEAD']) {
      const r = await get(s.port, '/ws', bearer, method);
      expect([r.status, r.headers.upgrade, r.headers.connection?.toLowerCase()], method).toEqual([426, 'websocket', 'upgrade, close']);
      expect(r.headers['cache-control']).toBe('no-store');
    }
    expect((await get(s.port, '/ws?token=s3cret', { origin: s.url })).status).toBe(426);
    expect((await get(s.port, '/ws', bearer, 'DELETE')).status).toBe(405);
    // Other paths are still 404; the WebSocket still connects.
    expect((await get(s.port, '/wsx', bearer)).status).toBe(404);
    expect((await get(s.port, '/ws/', bearer)).status).toBe(404);
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws`, { headers: bearer });
    const hello = await new Promise<Record<string, unknown>>((resolve, reject) => {
      ws.once('message', (d) => resolve(JSON.parse(String(d)) as Record<string, unknown>));
      ws.once('error', reject);
    });
    expect(hello.type).toBe('hello');
    ws.close();
  });

  it('without a token: 426 to anyone of the server\'s own origin or none, 403 to a foreign one; an upgrade handler given as a function is 426 after the server\'s token', async () => {
    const { s } = await wsServer(undefined);
    expect((await get(s.port, '/ws')).status).toBe(426);
    expect((await get(s.port, '/ws', { origin: 'http://evil.example' })).status).toBe(403);
    const f = await server({ token: 't0k', upgrades: { '/ws': () => {} } });
    expect((await get(f.port, '/ws')).status).toBe(401);
    expect((await get(f.port, '/ws?token=t0k')).status).toBe(426);
  });
});

describe('a request offering another protocol (Upgrade: h2c, curl --http2)', () => {
  const h2c = { connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAARAAAAAAAIAAAAA' };
  it('is answered as a plain request (it was 404 from every route, taken for a failed WebSocket), its checks included, and closed', async () => {
    const { s } = await wsServer('s3cret');
    const ok = await get(s.port, '/api/sources', { ...h2c, authorization: 'Bearer s3cret' });
    expect([ok.status, ok.headers['content-type'], ok.headers.connection]).toEqual([200, 'application/json', 'close']);
    expect(JSON.parse(ok.body.toString())).toMatchObject({ model: { name: 'm' }, sources: [] });
    const head = await get(s.port, '/healthz', h2c, 'HEAD');
    expect([head.status, head.body.length]).toEqual([200, 0]);
    expect((await get(s.port, '/api/sources', h2c)).status).toBe(401);
    expect((await get(s.port, '/nope', { ...h2c, authorization: 'Bearer s3cret' })).status).toBe(404);
    // /ws offered h2c: the 426 that says which upgrade it takes.
    const ws = await get(s.port, '/ws', { ...h2c, authorization: 'Bearer s3cret' });
    expect([ws.status, ws.headers.upgrade]).toEqual([426, 'websocket']);
    expect((await get(s.port, '/ws', { ...h2c, authorization: 'Bearer s3cret', origin: 'http://evil.example' })).status).toBe(403);
  });
  it('is not closed for room while it is answered (server.maxConnections): a plain request in flight is kept, and so is this one', async () => {
    // A route that answers late (a scrape, a snapshot read): the connection is busy meanwhile.
    let started = () => {};
    let release = () => {};
    const s = await server({
      maxConnections: 2,
      routes: {
        '/slow': async (_q, r) => {
          const gate = new Promise<void>((w) => (release = w));
          started();
          await gate;
          r.end('done');
        },
      },
    });
    for (const headers of [{}, h2c]) {
      const inRoute = new Promise<void>((w) => (started = w));
      const answer = get(s.port, '/slow', headers);
      // Its request is being answered, then new connections arrive, more than the room left.
      await inRoute;
      const others = [netConnect(s.port, '127.0.0.1'), netConnect(s.port, '127.0.0.1')];
      for (const o of others) o.on('error', () => {});
      await Promise.all(others.map((o) => new Promise((w) => o.once('connect', w))));
      await new Promise((w) => setTimeout(w, 200));
      release();
      const r = await answer;
      for (const o of others) o.destroy();
      expect([r.status, r.body.toString()], JSON.stringify(headers)).toEqual([200, 'done']);
    }
  });
});

describe('a subscribe while a resume is under way', () => {
  it('keeps the resume going (the held alerts after "after" are all sent, of the new subscription\'s sources); it ended it, and those not yet sent were never sent nor said missed', async () => {
    const { s, h } = await wsServer(undefined, { sources: () => ['cam', 'dock'], replayAlerts: 3000, replayAlertBytes: 64 << 20 });
    // 1500 held alerts of ~10 KB: 15 MB, more than the send buffer and the socket's take at once.
    const text = 'x'.repeat(10_000);
    const ids: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const id = `cam:r:run-${i}:1`;
      ids.push(id);
      const m = { type: 'alert', version: 1, source: 'cam', alert: { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: text } } as unknown as AlertMessage;
      h.publish('alert', 'cam', JSON.stringify(m), m);
    }
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws`);
    const got: string[] = [];
    const other: Record<string, unknown>[] = [];
    let lastAt = Date.now();
    ws.on('message', (d) => {
      lastAt = Date.now();
      const m = JSON.parse(String(d)) as Record<string, unknown>;
      if (m.type === 'alert') got.push((m.alert as { id: string }).id);
      else other.push(m);
    });
    await new Promise<void>((r) => ws.once('open', () => r()));
    // The resume, and at once another subscribe (more sources): both in one read of the server's.
    ws.send(JSON.stringify({ type: 'subscribe', sources: ['cam'], kinds: ['alerts'], after: ids[0] }));
    ws.send(JSON.stringify({ type: 'subscribe', sources: ['cam', 'dock'], kinds: ['alerts', 'status'] }));
    const deadline = Date.now() + 60_000;
    // Until every held one came, or nothing came for 5 s (the resume ended short).
    while (got.length < ids.length - 1 && Date.now() < deadline && Date.now() - lastAt < 5000) await new Promise((r) => setTimeout(r, 100));
    const missed = other.filter((m) => m.type === 'missed');
    expect(missed, 'nothing was let go: no missed to say').toEqual([]);
    expect(got).toEqual(ids.slice(1));
    ws.close();
  }, 90_000);
});

describe('a resume names the hub as well as the run', () => {
  it('another process of the same run (a program that gives its run again) is a restart: every held alert, and missed saying so; the same hub resumes; a malformed instance is refused', async () => {
    const raise = (h: WebSocketHub, id: string) => {
      const m = { type: 'alert', version: 1, source: 'cam', run: 'samerun', alert: { id, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' } } as unknown as AlertMessage;
      h.publish('alert', 'cam', JSON.stringify(m), m);
    };
    const first = hub({ run: 'samerun' });
    const { s, h } = await wsServer(undefined, { run: 'samerun' });
    expect(h.instance).not.toBe(first.instance);
    for (const id of ['x:1', 'x:2', 'x:3', 'x:4']) raise(h, id);
    const session = async (subscribe: Record<string, unknown>) => {
      const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws`);
      const msgs: Record<string, unknown>[] = [];
      ws.on('message', (d) => msgs.push(JSON.parse(String(d)) as Record<string, unknown>));
      await new Promise<void>((r) => ws.once('open', () => r()));
      ws.send(JSON.stringify({ type: 'subscribe', kinds: ['alerts'], ...subscribe }));
      const end = Date.now() + 10_000;
      while (!msgs.some((m) => m.type === 'subscribed' || m.type === 'error') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      ws.close();
      return msgs;
    };
    const alerts = (msgs: Record<string, unknown>[]) => msgs.filter((m) => m.type === 'alert').map((m) => (m.alert as { id: string }).id);
    expect((await session({}))[0]).toMatchObject({ type: 'hello', schemaRevision: SCHEMA_REVISION, run: 'samerun', instance: h.instance });
    // The client's last alert was x:2 of the first process: all of this one's, and the restart said.
    const other = await session({ after: 'x:2', run: 'samerun', instance: first.instance });
    expect(other.find((m) => m.type === 'missed')).toMatchObject({ after: 'x:2', restarted: true, run: 'samerun', instance: h.instance });
    expect(alerts(other)).toEqual(['x:1', 'x:2', 'x:3', 'x:4']);
    // Of this hub: after x:2.
    const same = await session({ after: 'x:2', run: 'samerun', instance: h.instance });
    expect(same.some((m) => m.type === 'missed')).toBe(false);
    expect(alerts(same)).toEqual(['x:3', 'x:4']);
    expect((await session({ after: 'x:2', instance: 'NOT-A-TAG' })).find((m) => m.type === 'error')).toMatchObject({ code: 'bad_subscribe' });
  });
  it('a second resume naming only the instance is refused, and the error names what it sent (it said "after" and "run", which it had not sent)', async () => {
    const { s, h } = await wsServer(undefined, { run: 'samerun' });
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws`);
    const msgs: Record<string, unknown>[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(String(d)) as Record<string, unknown>));
    await new Promise<void>((r) => ws.once('open', () => r()));
    ws.send(JSON.stringify({ type: 'subscribe', kinds: ['alerts'], run: 'samerun', instance: h.instance }));
    ws.send(JSON.stringify({ type: 'subscribe', kinds: ['alerts'], instance: h.instance }));
    const end = Date.now() + 10_000;
    while (!msgs.some((m) => m.type === 'error') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    ws.close();
    const e = msgs.find((m) => m.type === 'error') as { code: string; message: string } | undefined;
    expect(e?.code).toBe('bad_subscribe');
    expect(e?.message).toContain('"instance"');
  });
});

describe('an alert whose picture is larger than snapshotCacheBytes', () => {
  it('carries no URL (it answered 404 from the start) but snapshotOmitted too-large saying why; a smaller one keeps its URL', async () => {
    const h = hub({ snapshotCacheBytes: 8 });
    const s = await server();
    registerRoutes(s, context((i, k) => h.snapshot(i, k)));
    const sent: string[] = [];
    // What a client receives: the hub's held form (a resume sends the same JSON).
    const big = alert('cam:r:run-1:1', Buffer.alloc(9, 0xff));
    h.publish('alert', 'cam', JSON.stringify(big), big);
    const small = alert('cam:r:run-2:1', Buffer.alloc(8, 0xfe));
    h.publish('alert', 'cam', JSON.stringify(small), small);
    for (const x of (h as unknown as { held: { json: string }[] }).held) sent.push(x.json);
    const [bigSent, smallSent] = sent.map((j) => JSON.parse(j) as AlertMessage);
    expect(h.snapshotUrl('cam:r:run-1:1')).toBeUndefined();
    expect(bigSent.alert.snapshot).toBeUndefined();
    expect(bigSent.alert.snapshotOmitted).toMatchObject({ reason: 'too-large' });
    expect(bigSent.alert.snapshotOmitted?.detail).toContain('snapshotCacheBytes');
    expect(bigSent.alert.snapshotOmitted?.url).toBeUndefined();
    const url = smallSent.alert.snapshot?.url;
    expect(url).toBe(h.snapshotUrl('cam:r:run-2:1'));
    expect((await get(s.port, url!)).status).toBe(200);
  });
});

describe('an alert whose picture is larger than snapshotCacheBytes, for the other sinks', () => {
  it('leaves the message the other sinks send as it was, and its detail does not send the consumer to a Kafka that took it without either', () => {
    const h = hub({ snapshotCacheBytes: 8 });
    const big = alert('cam:r:run-1:1', Buffer.alloc(9, 0xff));
    const data = big.alert.snapshot?.data;
    h.publish('alert', 'cam', JSON.stringify(big), big);
    // Kafka and the JSON lines serialize the same object after the hub.
    expect(big.alert.snapshot?.data).toBe(data);
    expect(big.alert.snapshotOmitted).toBeUndefined();
    const sent = JSON.parse((h as unknown as { held: { json: string }[] }).held[0].json) as AlertMessage;
    // Kafka takes 1 MB by default, the WebSocket 32 MiB: a picture over the one is over the
    // other, and Kafka sent it without too (its own snapshotOmitted). "Kafka and the JSON lines
    // embed it" sent a safety team looking for it where it was not.
    expect(sent.alert.snapshotOmitted?.detail).toContain('sinks.kafka.maxMessageBytes');
    expect(sent.alert.snapshotOmitted?.detail).not.toContain('Kafka and the JSON lines embed it');
  });
});

describe('WebSocket subprotocols (Sec-WebSocket-Protocol)', () => {
  it('argus.v1 is named back; none asked, none named; a list without it is refused with 400 naming the one spoken (ws named back whatever was asked first)', async () => {
    const logged: string[] = [];
    const { s } = await wsServer(undefined, { log: (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields)}`) });
    const open = (protocols?: string | string[]) =>
      new Promise<{ protocol?: string; status?: number; reason?: string; header?: string }>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ws`, protocols);
        ws.once('open', () => {
          resolve({ protocol: ws.protocol });
          ws.close();
        });
        ws.once('unexpected-response', (_q, res) => {
          resolve({ status: res.statusCode, reason: res.statusMessage, header: res.headers['sec-websocket-protocol'] as string | undefined });
          res.destroy();
        });
        ws.once('error', () => resolve({}));
      });
    expect(await open('argus.v1')).toEqual({ protocol: 'argus.v1' });
    expect(await open(['mqtt', 'argus.v1'])).toEqual({ protocol: 'argus.v1' });
    expect(await open()).toEqual({ protocol: '' });
    // A browser's WebSocket sets no header but this one: a client may put its token there. Not logged
    // (the first refusal: the log is throttled).
    expect((await open(['Bearer.s3cret-t0ken'])).status).toBe(400);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join('\n')).not.toContain('s3cret-t0ken');
    const refused = await open('mqtt');
    expect(refused.status).toBe(400);
    expect(refused.reason).toContain('argus.v1');
    expect(refused.header).toBe('argus.v1');
  });
});

describe('a malformed Sec-WebSocket-Protocol', () => {
  it('is refused with 400 saying so, before the handshake, as a list without argus.v1 is: it passed the check, took a handshake of the address\'s, and ws answered a bare 400 (429 once those were spent)', async () => {
    const { s } = await wsServer(undefined, { handshakeBurstPerAddress: 2, handshakesPerAddressPerSecond: 0.001 });
    const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    for (const p of ['', 'argus.v1,', ',argus.v1', 'argus.v1,,mqtt', 'argus.v1, argus.v1', 'argus.v1;q=1, argus.v1']) {
      const r = await get(s.port, '/ws', { ...upgrade, 'sec-websocket-protocol': p });
      expect(r.status, JSON.stringify(p)).toBe(400);
      expect(r.headers['sec-websocket-protocol'], JSON.stringify(p)).toBe('argus.v1');
    }
    // Odd spacing around well-formed items is no fault (RFC 9110's list: optional whitespace).
    const answer = await new Promise<string>((resolve) => {
      const sock = netConnect(s.port, '127.0.0.1');
      let got = '';
      sock.on('connect', () => sock.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\n${Object.entries(upgrade).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Sec-WebSocket-Protocol: \tmqtt ,\targus.v1 \r\n\r\n`));
      sock.on('data', (d) => {
        got += d.toString('latin1');
        if (got.includes('\r\n\r\n')) sock.destroy();
      });
      sock.on('error', () => {});
      sock.on('close', () => resolve(got));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
    expect(answer).toContain('Sec-WebSocket-Protocol: argus.v1\r\n');
  });
});

describe('WebSocket subprotocols in a browser (Chromium)', () => {
  it('new WebSocket(url, "argus.v1") opens with that protocol; one asking for another fails (it opened, told argus spoke it)', async () => {
    const { s } = await wsServer();
    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const page = await browser.newPage();
    // The dashboard's page: its Content-Security-Policy lets it open /ws (an API route's would not).
    await page.goto(`${s.url}/`);
    // A string: the test's own WebSocket (ws) would be rewritten into the page's function.
    const tryOpen = (protocol: string) =>
      page.evaluate(`new Promise((resolve) => {
        const ws = new WebSocket('ws://' + location.host + '/ws', ${JSON.stringify(protocol)});
        ws.onopen = () => { resolve('open ' + ws.protocol); ws.close(); };
        ws.onclose = (e) => resolve('closed ' + e.code);
      })`);
    expect(await tryOpen('argus.v1')).toBe('open argus.v1');
    expect(await tryOpen('mqtt')).toBe('closed 1006');
  }, 60_000);
});

describe('a request target that begins with two slashes', () => {
  it('is a path (404), not a host and a path: //healthz was answered the dashboard page with 200, //x/metrics was /metrics', async () => {
    const { s } = await wsServer();
    // A backslash is a slash to a URL parser: `/\\healthz` was //healthz too. `*` (OPTIONS's) is no path here.
    for (const path of ['//healthz', '//x/metrics', '//x/api/sources', '/\\healthz', '/\\x/metrics', '*']) {
      const r = await get(s.port, path);
      expect([r.status, r.body.toString()], path).toEqual([404, 'not found\n']);
    }
    const up = await get(s.port, '//x/ws', { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' });
    expect(up.status).toBe(404);
    // The paths themselves, and the absolute form, are as they were.
    expect((await get(s.port, '/healthz')).status).toBe(200);
    expect((await get(s.port, `http://127.0.0.1:${s.port}/healthz`)).status).toBe(200);
  });
});

describe('HEAD on every route', () => {
  it('says the Content-Length the GET sends, without a body (it said none, and every GET came chunked)', async () => {
    const { s } = await wsServer();
    for (const path of ['/', '/index.html', '/app.js', '/style.css', '/js/alerts.js', '/metrics', '/healthz', '/readyz', '/api/sources']) {
      const g = await get(s.port, path);
      const h = await get(s.port, path, {}, 'HEAD');
      expect([g.status, h.status], path).toEqual([200, 200]);
      expect(g.headers['content-length'], path).toBe(String(g.body.length));
      expect(h.body.length, path).toBe(0);
      // /healthz's uptime may gain a digit between the two.
      if (path !== '/healthz') expect(h.headers['content-length'], path).toBe(g.headers['content-length']);
      else expect(Number(h.headers['content-length'])).toBeGreaterThan(0);
    }
  });
});

describe('the server\'s own answers (errors, refusals, the token\'s redirect)', () => {
  it('say their Content-Length too, GET and HEAD alike: 404, 401, 405, 426, a snapshot no longer held, the 303 (they came chunked, and a HEAD of them said no length)', async () => {
    const token = 'tok';
    const h = hub({ token });
    const s = await server({ token, upgrades: { '/ws': { upgrade: (q, k, b) => h.handleUpgrade(q, k, b), refusal: (q, u) => h.refusal(q, u) } } });
    registerRoutes(s, context(() => undefined));
    const bearer = { authorization: `Bearer ${token}` };
    const cases: [string, string, Record<string, string>, number][] = [
      ['GET', '/nope', bearer, 404],
      ['GET', '/api/sources', {}, 401],
      ['GET', '/api/snapshot?id=a&key=b', bearer, 404],
      ['GET', '/api/snapshot?id=a', bearer, 404],
      ['GET', '/ws', bearer, 426],
      ['GET', `/?token=${token}`, {}, 303],
      ['DELETE', '/healthz', {}, 405],
    ];
    for (const [method, path, headers, status] of cases) {
      const g = await get(s.port, path, headers, method);
      expect([g.status, g.headers['transfer-encoding']], `${method} ${path}`).toEqual([status, undefined]);
      expect(g.headers['content-length'], `${method} ${path}`).toBe(String(g.body.length));
      expect(g.body.length, `${method} ${path}`).toBeGreaterThan(0);
      if (method !== 'GET') continue;
      const hd = await get(s.port, path, headers, 'HEAD');
      expect([hd.status, hd.headers['content-length'], hd.body.length], `HEAD ${path}`).toEqual([status, g.headers['content-length'], 0]);
    }
  });
});
