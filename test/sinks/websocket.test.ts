import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { now } from '../../src/core/clock.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { startHttpServer, type RunningServer } from '../../src/server/http.js';
import { Publisher } from '../../src/sinks/publisher.js';
import { addressKey } from '../../src/core/http.js';
import { WebSocketHub, type WebSocketHubOptions } from '../../src/sinks/websocket.js';
import { assertValidMessage } from '../helpers/schema.js';

let server: RunningServer | undefined;
let hub: WebSocketHub | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const s of sockets) s.terminate();
  sockets.length = 0;
  await hub?.close();
  await server?.close();
  hub = undefined;
  server = undefined;
});

async function setup(o: Partial<WebSocketHubOptions> = {}) {
  hub = new WebSocketHub({ maxBufferedBytes: 256 * 1024, maxAlertBacklog: 1000, maxClientMessageBytes: 4096, sources: () => ['a', 'b'], ...o });
  server = await startHttpServer({ host: '127.0.0.1', port: 0, upgrades: { '/ws': (q, s, h) => hub!.handleUpgrade(q, s, h) } });
  const publisher = new Publisher([hub], { name: 'm', version: '1' }, ['person', 'car']);
  return { url: `${server.url.replace('http', 'ws')}/ws`, publisher };
}

interface Client {
  ws: WebSocket;
  msgs: Record<string, unknown>[];
  next(pred: (m: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  send(m: unknown): void;
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const ws = new WebSocket(url, { headers });
  sockets.push(ws);
  const msgs: Record<string, unknown>[] = [];
  const waiters: { pred: (m: Record<string, unknown>) => boolean; res: (m: Record<string, unknown>) => void }[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    msgs.push(m);
    for (const w of [...waiters]) if (w.pred(m)) waiters.splice(waiters.indexOf(w), 1) && w.res(m);
  });
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
    ws.once('unexpected-response', (_q, r) => rej(new Error(`HTTP ${r.statusCode}`)));
  });
  const c: Client = {
    ws,
    msgs,
    // The bound only ends a hang; a message is waited for, not timed.
    next: (pred, ms = 60_000) =>
      new Promise((res, rej) => {
        const found = msgs.find(pred);
        if (found) return res(found);
        const t = setTimeout(() => rej(new Error('timed out waiting for a message')), ms);
        waiters.push({ pred, res: (m) => (clearTimeout(t), res(m)) });
      }),
    send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
  };
  await c.next((m) => m.type === 'hello');
  return c;
}

let seq = 0;
function frame(source: string, padBytes = 0): { frame: Frame; dets: Detections } {
  const t = now();
  const stamps = { ...emptyStamps(t - 5), preprocessed: t - 4, inferStart: t - 4, inferEnd: t - 1, postprocessed: t - 0.5, emitted: t };
  const n = Math.max(1, Math.floor(padBytes / 60));
  const dets = new Detections(new Float32Array(n * 4).fill(1), new Float32Array(n).fill(0.5), new Int32Array(n));
  return { frame: { source, seq: seq++, pts: 0, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 416, 416), stamps, producedBy: 'captured' as const, release: () => {} }, dets };
}

const subscribe = async (c: Client, sources: string[], kinds: string[]) => {
  c.send({ type: 'subscribe', sources, kinds });
  await c.next((m) => m.type === 'subscribed');
};

/**
 * A barrier: a ping answered means the client has received every message the hub sent it
 * before that ping arrived (one socket, in order). Messages published before `synced()` was
 * called have all arrived when it resolves, so the test can say what a client did *not* get.
 */
const synced = async (c: Client) => {
  const pongs = () => c.msgs.filter((m) => m.type === 'pong').length;
  const before = pongs();
  c.send({ type: 'ping' });
  await c.next((m) => m.type === 'pong' && pongs() > before);
};

describe('WebSocket API', () => {
  it('two clients with different subscriptions each get exactly their messages', async () => {
    const { url, publisher } = await setup();
    const c1 = await connect(url);
    const c2 = await connect(url);
    await subscribe(c1, ['a'], ['detections']);
    await subscribe(c2, ['b'], ['detections', 'alerts']);
    const f = (s: string) => frame(s);
    const a1 = f('a'), b1 = f('b'), a2 = f('a');
    publisher.detections(a1.frame, a1.dets, 0);
    publisher.detections(b1.frame, b1.dets, 0);
    publisher.alert(a2.frame, a2.dets, 0, { id: 'x1', rule: 'r', severity: 'warning', event: 'zone.enter', message: 'm' });
    const b2 = f('b');
    publisher.alert(b2.frame, b2.dets, 0, { id: 'x2', rule: 'r', severity: 'warning', event: 'zone.enter', message: 'm' });
    // Everything published has reached both clients once each answers a ping sent after it.
    await synced(c1);
    await synced(c2);
    const data = (c: Client) => c.msgs.filter((m) => m.type === 'detections' || m.type === 'alert');
    expect(data(c1).map((m) => [m.type, m.source, m.seq])).toEqual([['detections', 'a', a1.frame.seq]]);
    expect(data(c2).map((m) => [m.type, m.source, m.seq])).toEqual([['detections', 'b', b1.frame.seq], ['alert', 'b', b2.frame.seq]]);
    for (const m of [...data(c1), ...data(c2)]) assertValidMessage(m);
  });

  it.each([
    ['malformed JSON', '{"type": "subscribe",', 'bad_json'],
    ['not an object', '[1,2]', 'bad_message'],
    ['an unknown type', { type: 'hack' }, 'unknown_type'],
    ['bad kinds', { type: 'subscribe', sources: ['a'], kinds: ['everything'] }, 'bad_subscribe'],
    ['null sources (absent means all; null is not a list)', { type: 'subscribe', sources: null }, 'bad_subscribe'],
  ])('%s gets an error frame and the connection stays usable', async (_n, msg, code) => {
    const { url } = await setup();
    const c = await connect(url);
    c.send(msg);
    const e = await c.next((m) => m.type === 'error');
    expect(e.code).toBe(code);
    expect(e.message).toBeTypeOf('string');
    c.send({ type: 'ping' });
    await c.next((m) => m.type === 'pong');
  });

  it('a message over maxClientMessageBytes (announced in the hello message) closes the socket with 1009', async () => {
    const { url } = await setup();
    const c = await connect(url);
    expect(c.msgs.find((m) => m.type === 'hello')).toMatchObject({ maxMessageBytes: 4096 });
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    c.send({ type: 'subscribe', sources: ['x'.repeat(5000)] });
    expect(await closed).toBe(1009);
  });

  it('with a token configured, a client without it (or with a wrong one) is refused; with it, admitted', async () => {
    const { url } = await setup({ token: 's3cret' });
    await expect(connect(url)).rejects.toThrow('HTTP 401');
    await expect(connect(`${url}?token=wrong!`)).rejects.toThrow('HTTP 401');
    await expect(connect(`${url}?token=s3cret`)).resolves.toBeTruthy();
    await expect(connect(url, { authorization: 'Bearer s3cret' })).resolves.toBeTruthy();
    expect(hub!.stats.refused).toBe(2);
  });

  it('a client that stops reading loses detections (counted, told) but never alerts, and does not hold the others up', async () => {
    const { url, publisher } = await setup({ maxBufferedBytes: 64 * 1024 });
    const healthy = await Promise.all([connect(url), connect(url), connect(url)]);
    for (const h of healthy) await subscribe(h, ['*'], ['detections', 'alerts']);
    const st = await connect(url);
    await subscribe(st, ['a'], ['detections', 'alerts']);
    (st.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const alertIds: string[] = [];
    // 150 messages of ~30 KB: far more than a stalled socket's kernel buffers hold. A timer
    // between them lets the healthy clients (in this process) read as they come.
    for (let i = 0; i < 150; i++) {
      const f = frame('a', 30_000);
      publisher.detections(f.frame, f.dets, 0);
      if (i % 50 === 10) {
        const id = `al-${i}`;
        alertIds.push(id);
        publisher.alert(f.frame, f.dets, 0, { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm' });
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    // While the stalled client still reads nothing, the healthy ones have every message: the
    // hub never waits for a slow client. (How much a stalled client costs the others in latency
    // is a figure, not a pass/fail: `npm run bench:sinks` prints the p99 ratio.)
    for (const h of healthy) await synced(h);
    for (const h of healthy) {
      expect(h.msgs.filter((m) => m.type === 'detections')).toHaveLength(150);
      expect(h.msgs.filter((m) => m.type === 'alert').map((m) => (m.alert as { id: string }).id)).toEqual(alertIds);
      expect(h.msgs.some((m) => m.type === 'dropped')).toBe(false);
    }
    expect(hub!.stats.dropped).toBeGreaterThan(0);
    // Resume reading: the client is told how many detections it lost, and gets every alert.
    (st.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const told = await st.next((m) => m.type === 'dropped');
    expect(told.count).toBeGreaterThan(0);
    expect(told.reason).toBe('client too slow');
    await st.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === alertIds.at(-1));
    expect(st.msgs.filter((m) => m.type === 'alert').map((m) => (m.alert as { id: string }).id)).toEqual(alertIds);
    // Every detection is accounted for: delivered, or in a `dropped` count it was told (the
    // last count may come with a later flush of its buffer: wait for it).
    const delivered = () => st.msgs.filter((m) => m.type === 'detections').length;
    const dropped = () => st.msgs.filter((m) => m.type === 'dropped').reduce((n, m) => n + (m.count as number), 0);
    await st.next(() => delivered() + dropped() >= 150);
    expect(delivered() + dropped()).toBe(150);
    expect(dropped()).toBe(hub!.stats.dropped); // the only client that fell behind
  }, 180_000);

  it('a client that is behind holds at most maxAlertBacklogBytes of alerts (they embed snapshots): beyond it, it is closed (1013), the others unaffected', async () => {
    const { url } = await setup({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 1000, maxAlertBacklogBytes: 1024 * 1024 });
    const healthy = await connect(url);
    await subscribe(healthy, ['*'], ['alerts']);
    const st = await connect(url);
    await subscribe(st, ['*'], ['alerts']);
    (st.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    // 200 alerts of 50 KB (a snapshot each): 10 MB, a fifth of the count bound; what the stalled socket's kernel buffers do not take was held for it.
    let held = 0;
    for (let i = 0; i < 200; i++) {
      hub!.publish('alert', 'a', JSON.stringify({ type: 'alert', version: 1, alert: { id: `al-${i}` }, snapshot: 'x'.repeat(50_000) }), {} as never);
      held = Math.max(held, ...hub!.clientStats().map((c) => c.backlog));
      await new Promise((r) => setTimeout(r, 10)); // the healthy client (in this process) reads as they come
    }
    expect(held * 50_000).toBeLessThanOrEqual(1024 * 1024);
    await new Promise<void>((r) => {
      const t = setInterval(() => hub!.stats.connected === 1 && (clearInterval(t), r()), 20);
    });
    await synced(healthy);
    expect(healthy.msgs.filter((m) => m.type === 'alert')).toHaveLength(200);
  }, 120_000);

  it('a client that stops reading still gets every status change (a camera that failed meanwhile), in order', async () => {
    // A status message is a camera's state: one lost leaves a client showing "streaming" for a
    // camera that failed, for good (the next change may never come). It used to be dropped like a
    // detection while the client was behind, and counted in a `dropped` notice about detections.
    const { url, publisher } = await setup({ maxBufferedBytes: 64 * 1024 });
    const st = await connect(url);
    await subscribe(st, ['a'], ['detections', 'alerts', 'status']);
    (st.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const states = ['stalled', 'reconnecting', 'failed'] as const;
    for (const [i, state] of states.entries()) {
      // Detections until the hub drops one: the client is behind when its camera's state changes.
      const before = hub!.stats.dropped;
      for (let n = 0; n < 2000 && hub!.stats.dropped === before; n++) {
        const f = frame('a', 30_000);
        publisher.detections(f.frame, f.dets, 0);
        await new Promise((r) => setTimeout(r, 1));
      }
      expect(hub!.stats.dropped).toBeGreaterThan(before);
      await publisher.status({ source: 'a', state, previous: 'streaming', reason: `r${i}`, at: now(), attempt: i });
    }
    (st.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await st.next((m) => m.type === 'status' && m.state === 'failed', 20_000);
    expect(st.msgs.filter((m) => m.type === 'status').map((m) => m.state)).toEqual(states);
    for (const m of st.msgs.filter((x) => x.type === 'status')) assertValidMessage(m);
  }, 120_000);

  it("every reply to a subscribe or unsubscribe has the README's shape: sources, kinds and unknownSources", async () => {
    // A client with a typed model of `subscribed` (unknownSources required) failed on the answer
    // to unsubscribe, which had no unknownSources.
    const { url } = await setup();
    const c = await connect(url);
    c.send({ type: 'subscribe', sources: ['a', 'nope'] });
    expect(await c.next((m) => m.type === 'subscribed')).toEqual({ type: 'subscribed', sources: ['a', 'nope'], kinds: ['detections', 'alerts'], unknownSources: ['nope'] });
    c.msgs.length = 0;
    c.send({ type: 'unsubscribe' });
    expect(await c.next((m) => m.type === 'subscribed')).toEqual({ type: 'subscribed', sources: [], kinds: [], unknownSources: [] });
  });

  it('a closing hub admits no client (503): one admitted while close() waited for the others was never closed, and held the server\'s close and the exit for as long as it stayed', async () => {
    const { url } = await setup();
    const slow = await connect(url);
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause(); // does not answer the close: close() waits for it
    const closing = hub!.close();
    const late = new WebSocket(url);
    sockets.push(late);
    const answer = await new Promise<number | string>((r) => {
      late.once('open', () => r('open'));
      late.once('unexpected-response', (_q, res) => r(res.statusCode ?? 0));
      late.once('error', (e) => r(e.message));
    });
    expect(answer).toBe(503);
    await closing;
    hub = undefined;
  });

  it('closing the hub closes clients with 1001', async () => {
    const { url } = await setup();
    const c = await connect(url);
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    await hub!.close();
    hub = undefined;
    expect(await closed).toBe(1001);
  });
});

describe('WebSocket API: the message rate on a clock that steps', () => {
  it('maxMessagesPerSecond is counted on the monotonic clock: the system clock stepped back an hour (NTP, an operator) does not close every client with 1008', async () => {
    // On Date.now, the second's window began again only once the system clock passed its start
    // again: for an hour every message counted in one window, and a dashboard (a ping and a pong
    // each 15 s) was closed with "more than 5 messages per second" after a few of them.
    let t = 0; // the hub's monotonic clock, moved by hand
    const { url } = await setup({ maxMessagesPerSecond: 5, now: () => t });
    const c = await connect(url);
    const closed = new Promise<number>((r) => c.ws.once('close', (code) => r(code)));
    const answered = () => Promise.race([synced(c), closed.then((code) => Promise.reject(new Error(`closed with ${code}`)))]);
    try {
      for (let i = 0; i < 5; i++) await answered();
      vi.spyOn(Date, 'now').mockReturnValue(Date.now() - 3_600_000);
      for (let second = 0; second < 3; second++) {
        t += 1000;
        for (let i = 0; i < 5; i++) await answered();
      }
      expect(c.ws.readyState).toBe(WebSocket.OPEN);
      // Over the rate within one second of that clock: closed, as before.
      for (let i = 0; i < 6; i++) c.send({ type: 'ping' });
      expect(await closed).toBe(1008);
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe('WebSocket API: one address cannot hold every slot', () => {
  /** Opens /ws from `localAddress`: its close code when the server closes it at once, else 'open' (the hello came). */
  function attempt(url: string, localAddress: string): Promise<{ ws: WebSocket; outcome: number | 'open'; reason?: string }> {
    const ws = new WebSocket(url, { localAddress });
    sockets.push(ws);
    return new Promise((resolve, reject) => {
      ws.once('message', () => resolve({ ws, outcome: 'open' }));
      ws.once('close', (code, reason) => resolve({ ws, outcome: code, reason: reason.toString() }));
      ws.once('unexpected-response', (_q, r) => resolve({ ws, outcome: r.statusCode ?? 0 }));
      ws.once('error', reject);
    });
  }

  it('beyond maxClientsPerAddress a new client of that address is closed with 4429 (saying why), the held ones stay, and another address still gets in', async () => {
    const { url } = await setup({ maxClients: 4, maxClientsPerAddress: 2 });
    const held = [await attempt(url, '127.0.0.1'), await attempt(url, '127.0.0.1')];
    expect(held.map((h) => h.outcome)).toEqual(['open', 'open']);
    const third = await attempt(url, '127.0.0.1');
    expect(third.outcome).toBe(4429);
    expect(third.reason).toMatch(/maxClientsPerAddress/);
    expect(hub!.stats.refused).toBe(1);
    // The dashboard from another machine: admitted (it was 503 once one client held every slot).
    expect((await attempt(url, '127.0.0.2')).outcome).toBe('open');
    expect(held.every((h) => h.ws.readyState === WebSocket.OPEN)).toBe(true);
    // A slot of the address freed: the address gets it back.
    held[0].ws.close();
    await new Promise((r) => held[0].ws.once('close', r));
    for (let i = 0; hub!.stats.connected !== 2; i++) {
      if (i > 6000) throw new Error('the closed client was never let go');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await attempt(url, '127.0.0.1')).outcome).toBe('open');
  });
});

describe('WebSocket API: one address cannot open connections without end', () => {
  /** Opens /ws from `localAddress`: 'open' once the hello came, else the refusal's status and Retry-After, or the close code. */
  function attempt(url: string, localAddress: string): Promise<{ ws: WebSocket; outcome: number | 'open'; retryAfter?: string }> {
    const ws = new WebSocket(url, { localAddress });
    sockets.push(ws);
    return new Promise((resolve, reject) => {
      ws.once('message', () => resolve({ ws, outcome: 'open' }));
      ws.once('close', (code) => resolve({ ws, outcome: code }));
      ws.once('unexpected-response', (_q, r) => resolve({ ws, outcome: r.statusCode ?? 0, retryAfter: r.headers['retry-after'] }));
      ws.once('error', reject);
    });
  }

  it('beyond handshakeBurstPerAddress new connections of an address answer 429 with Retry-After until the bucket refills (virtual time); another address is not held up', async () => {
    let t = 1_000_000; // the hub's clock, moved by hand
    const { url } = await setup({ handshakeBurstPerAddress: 3, handshakesPerAddressPerSecond: 0.5, maxClientsPerAddress: 2, now: () => t });
    // Connect and close in a loop: each a handshake, a session, a hello.
    for (let i = 0; i < 3; i++) {
      const a = await attempt(url, '127.0.0.1');
      expect(a.outcome).toBe('open');
      a.ws.close();
    }
    const refused = await attempt(url, '127.0.0.1');
    expect(refused).toMatchObject({ outcome: 429, retryAfter: '2' }); // 0.5 a second: the next in 2 s
    expect(hub!.stats).toMatchObject({ handshakesLimited: 1, refused: 1 });
    expect((await attempt(url, '127.0.0.2')).outcome).toBe('open');
    t += 1999;
    expect((await attempt(url, '127.0.0.1')).outcome).toBe(429);
    t += 1;
    expect((await attempt(url, '127.0.0.1')).outcome).toBe('open');
    expect((await attempt(url, '127.0.0.1')).outcome).toBe(429);
    // A refusal takes no token: after 2 s one is there again, however many were refused meanwhile.
    for (let i = 0; i < 5; i++) expect((await attempt(url, '127.0.0.1')).outcome).toBe(429);
    t += 2000;
    expect((await attempt(url, '127.0.0.1')).outcome).toBe('open');
    // One that holds maxClientsPerAddress and loops one more is paced too: the extra ones cost a 429, not a handshake and a 4429.
    t += 60_000;
    const held = [await attempt(url, '127.0.0.3'), await attempt(url, '127.0.0.3')];
    expect(held.map((h) => h.outcome)).toEqual(['open', 'open']);
    expect((await attempt(url, '127.0.0.3')).outcome).toBe(4429);
    expect((await attempt(url, '127.0.0.3')).outcome).toBe(429);
  });
});

describe('addressKey: the unit maxClientsPerAddress bounds', () => {
  it('an IPv4 address as it is (mapped into IPv6 too); an IPv6 one by its /64, however it is written', () => {
    expect(addressKey('10.0.0.7')).toBe('10.0.0.7');
    expect(addressKey('::ffff:10.0.0.7')).toBe('10.0.0.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff:0:0:9')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey(undefined)).toBe('?');
  });
});

describe('WebSocket API: alerts reach a slow or reconnecting consumer', () => {
  const picture = (i: number) => Buffer.alloc(150_000, i); // a snapshot's JPEG: ~200 KB in base64
  const alertBody = (i: number) => ({ id: `cam:r:run-${i}:1`, rule: 'r', severity: 'critical' as const, event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg' as const, data: picture(i).toString('base64'), width: 64, height: 48 } });
  const alertIds = (c: Client) => c.msgs.filter((m) => m.type === 'alert').map((m) => (m.alert as { id: string }).id);

  it('a client on a slow link gets every alert with a snapshot (as its URL, ~1 KB), not closed after ~80 of them; the picture is held for /api/snapshot', async () => {
    const { url, publisher } = await setup({ snapshotCacheBytes: 10 * 1024 * 1024 }); // the backlog's defaults: 16 MiB, 1000 alerts
    const st = await connect(url);
    await subscribe(st, ['*'], ['alerts']);
    (st.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    // 200 alerts with a 200 KB snapshot each: 40 MB, what a remote dashboard fell behind by.
    for (let i = 0; i < 200; i++) {
      const f = frame('a');
      await publisher.alert(f.frame, f.dets, 0, alertBody(i));
      await new Promise((r) => setTimeout(r, 5));
    }
    (st.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await st.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'cam:r:run-199:1');
    expect(alertIds(st)).toEqual(Array.from({ length: 200 }, (_, i) => `cam:r:run-${i}:1`));
    expect(st.ws.readyState).toBe(WebSocket.OPEN);
    const last = st.msgs.filter((m) => m.type === 'alert').at(-1)!;
    assertValidMessage(last);
    const snap = (last.alert as { snapshot: Record<string, unknown> }).snapshot;
    expect(snap).toEqual({ contentType: 'image/jpeg', width: 64, height: 48, url: expect.stringMatching(/^\/api\/snapshot\?id=cam%3Ar%3Arun-199%3A1&key=[\w-]{16}$/) });
    const key = new URL(snap.url as string, 'http://x').searchParams.get('key')!;
    expect(hub!.snapshot('cam:r:run-199:1', key)!.equals(picture(199))).toBe(true);
    // The pictures held are bounded (snapshotCacheBytes): the oldest are let go.
    const held = (id: string) => {
      const url = hub!.snapshotUrl(id);
      return url === undefined ? undefined : hub!.snapshot(id, new URL(url, 'http://x').searchParams.get('key')!);
    };
    expect(held('cam:r:run-0:1')).toBeUndefined();
    expect(held('cam:r:run-150:1')).toBeDefined();
  }, 120_000);

  it('a client that reconnects and subscribes with "after" (the last alert it got) is sent the alerts raised meanwhile, in order; one whose alert is no longer held is told (missed) first', async () => {
    const { url, publisher } = await setup({ replayAlerts: 6 });
    const raise = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const f = frame(i % 2 ? 'b' : 'a');
        await publisher.alert(f.frame, f.dets, 0, { id: `al-${i}`, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
      }
    };
    const first = await connect(url);
    await subscribe(first, ['*'], ['alerts']);
    await raise(0, 4);
    await first.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-3');
    first.ws.close();
    await raise(4, 8); // while it was away
    const back = await connect(url);
    back.send({ type: 'subscribe', sources: ['*'], kinds: ['alerts'], after: 'al-3' });
    await back.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-7');
    expect(back.msgs.some((m) => m.type === 'missed')).toBe(false);
    expect(alertIds(back)).toEqual(['al-4', 'al-5', 'al-6', 'al-7']);
    // Its sources only; then live as before.
    const onlyB = await connect(url);
    onlyB.send({ type: 'subscribe', sources: ['b'], kinds: ['alerts'], after: 'al-3' });
    await onlyB.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-7');
    expect(alertIds(onlyB)).toEqual(['al-5', 'al-7']);
    // Away longer than the hub holds (6 alerts): told what it cannot be sent, then every held one.
    const late = await connect(url);
    late.send({ type: 'subscribe', sources: ['*'], kinds: ['alerts'], after: 'al-1' });
    await late.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-7');
    const missed = late.msgs.find((m) => m.type === 'missed')!;
    expect(missed).toMatchObject({ after: 'al-1', oldest: 'al-2', held: 6 });
    expect(late.msgs.filter((m) => m.type === 'missed' || m.type === 'alert').map((m) => (m.type === 'missed' ? 'missed' : (m.alert as { id: string }).id))).toEqual(['missed', 'al-2', 'al-3', 'al-4', 'al-5', 'al-6', 'al-7']);
    // Of some sources: `oldest` is the next it gets, its own (al-3), not the oldest held of all (al-2, a's), which it never gets.
    const lateB = await connect(url);
    lateB.send({ type: 'subscribe', sources: ['b'], kinds: ['alerts'], after: 'al-1' });
    await lateB.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-7');
    expect(lateB.msgs.find((m) => m.type === 'missed')).toMatchObject({ after: 'al-1', oldest: 'al-3', held: 6 });
    expect(alertIds(lateB)).toEqual(['al-3', 'al-5', 'al-7']);
    // None of its sources held: null.
    const lateNone = await connect(url);
    lateNone.send({ type: 'subscribe', sources: ['c'], kinds: ['alerts'], after: 'al-1' });
    expect(await lateNone.next((m) => m.type === 'missed')).toMatchObject({ after: 'al-1', oldest: null });
    await raise(8, 9);
    await back.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-8');
    // A bad "after" is refused like any bad subscribe.
    const fresh = await connect(url);
    fresh.send({ type: 'subscribe', kinds: ['alerts'], after: 7 });
    expect((await fresh.next((m) => m.type === 'error')).code).toBe('bad_subscribe');
    // A connection resumes once: again, each ~100-byte subscribe had the hub send every held alert once more.
    const sent = hub!.stats.sent;
    for (let i = 0; i < 20; i++) back.send({ type: 'subscribe', kinds: ['alerts'], after: 'al-2' });
    await back.next((m) => m.type === 'error' && /once per connection/.test(String(m.message)));
    await synced(back);
    expect(back.msgs.filter((m) => m.type === 'error' && /once per connection/.test(String(m.message)))).toHaveLength(20);
    expect(hub!.stats.sent).toBe(sent);
  }, 60_000);

  it('a resume longer than the backlog is paced by the client\'s reading, not queued at once: it was closed (1013) mid-resume, and again at each reconnect', async () => {
    const { url, publisher } = await setup({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 10, replayAlerts: 300, replayAlertBytes: 64 * 1024 * 1024 });
    for (let i = 0; i < 300; i++) {
      const f = frame('a', 30_000); // ~30 KB each: 9 MB in all, more than a stalled socket's kernel buffers take
      await publisher.alert(f.frame, f.dets, 0, { id: `al-${i}`, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
    }
    const back = await connect(url);
    (back.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    back.send({ type: 'subscribe', sources: ['*'], kinds: ['alerts'], after: 'al-0' });
    const closed: number[] = [];
    back.ws.on('close', (code) => closed.push(code));
    // The server's side fills while the client reads nothing; then an alert is raised live.
    for (let i = 0; i < 50; i++) await new Promise((r) => setTimeout(r, 10));
    const f = frame('a');
    await publisher.alert(f.frame, f.dets, 0, { id: 'al-300', rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
    (back.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await back.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-300');
    expect(closed).toEqual([]);
    expect(alertIds(back)).toEqual(Array.from({ length: 300 }, (_, i) => `al-${i + 1}`));
  }, 120_000);

  /** Until the hub holds more than maxBufferedBytes for its one client (the client reads nothing): a condition, not a time. */
  const serverSideFull = async (maxBufferedBytes: number) => {
    for (let i = 0; !(hub!.clientStats()[0]?.buffered > maxBufferedBytes); i++) {
      if (i > 6000) throw new Error('the client\'s send buffer never filled');
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const kindsOf = (c: Client) => c.msgs.filter((m) => m.type === 'alert' || m.type === 'status' || m.type === 'missed').map((m) => (m.type === 'alert' ? (m.alert as { id: string }).id : m.type === 'status' ? `status:${m.source}:${m.state}` : 'missed'));

  it('a status change during a resume comes after every alert raised before it, not before the held ones still to be sent (it overtook them: a camera shown failed before its earlier alerts)', async () => {
    const { url, publisher } = await setup({ maxBufferedBytes: 64 * 1024, replayAlerts: 300, replayAlertBytes: 64 * 1024 * 1024 });
    for (let i = 0; i < 200; i++) {
      const f = frame(i % 2 ? 'b' : 'a', 60_000); // ~60 KB each: 12 MB, more than a stalled socket's kernel buffers take
      await publisher.alert(f.frame, f.dets, 0, { id: `al-${i}`, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
    }
    const back = await connect(url);
    (back.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    back.send({ type: 'subscribe', sources: ['*'], kinds: ['alerts', 'status'], after: 'al-0' });
    await serverSideFull(64 * 1024);
    // Mid-resume: a's camera fails, then an alert is raised live, then b's camera stalls.
    await publisher.status({ source: 'a', state: 'failed', previous: 'streaming', reason: 'gone', at: now(), attempt: 1 });
    const f = frame('b');
    await publisher.alert(f.frame, f.dets, 0, { id: 'al-200', rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
    await publisher.status({ source: 'b', state: 'stalled', previous: 'streaming', reason: 'slow', at: now(), attempt: 1 });
    (back.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await back.next((m) => m.type === 'status' && m.source === 'b');
    await back.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-200'); // the last alert: its send buffer is empty, a ping is answered
    await synced(back);
    const ids = Array.from({ length: 199 }, (_, i) => `al-${i + 1}`);
    expect(kindsOf(back)).toEqual([...ids, 'status:a:failed', 'al-200', 'status:b:stalled']);
    for (const m of back.msgs.filter((x) => x.type === 'status')) assertValidMessage(m);
  }, 120_000);

  it('status changes held back by a resume count in the backlog\'s bound (beyond it: closed, 1013), and are sent, not lost, when a subscribe ends the resume', async () => {
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const { url, publisher } = await setup({ maxBufferedBytes: 64 * 1024, maxAlertBacklog: 3, replayAlerts: 300, replayAlertBytes: 64 * 1024 * 1024, log: (m, f) => lines.push([m, f]) });
    for (let i = 0; i < 200; i++) {
      const f = frame('a', 60_000); // 12 MB in all: more than a stalled socket's kernel buffers take
      await publisher.alert(f.frame, f.dets, 0, { id: `al-${i}`, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
    }
    const status = (i: number) => publisher.status({ source: 'a', state: i % 2 ? 'stalled' : 'reconnecting', previous: 'streaming', reason: `r${i}`, at: now(), attempt: i });
    const c = await connect(url);
    (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    c.send({ type: 'subscribe', sources: ['a'], kinds: ['alerts', 'status'], after: 'al-0' });
    await serverSideFull(64 * 1024);
    await status(0);
    await status(1);
    // A subscribe without "after" ends the resume: the two held back go out (here: queued, the client reads nothing).
    c.send({ type: 'subscribe', sources: ['a'], kinds: ['status'] });
    for (let i = 0; hub!.clientStats()[0].backlog !== 2; i++) {
      if (i > 6000) throw new Error('the held status changes were never queued');
      await new Promise((r) => setTimeout(r, 10));
    }
    (c.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await c.next((m) => m.type === 'status' && m.reason === 'r1');
    expect(c.msgs.filter((m) => m.type === 'status').map((m) => m.reason)).toEqual(['r0', 'r1']);
    // Another resumes and reads nothing while 4 status changes come: the fourth is over maxAlertBacklog (3).
    c.ws.terminate();
    for (let i = 0; hub!.stats.connected !== 0; i++) {
      if (i > 6000) throw new Error('the closed client was never let go');
      await new Promise((r) => setTimeout(r, 10));
    }
    const d = await connect(url);
    (d.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    d.send({ type: 'subscribe', sources: ['a'], kinds: ['alerts', 'status'], after: 'al-0' });
    await serverSideFull(64 * 1024);
    for (let i = 2; i < 5; i++) await status(i);
    expect(lines.filter(([m]) => m.includes('closing a client'))).toEqual([]);
    await status(5);
    expect(lines.filter(([m]) => m.includes('closing a client')).map(([, f]) => f?.code)).toEqual([1013]);
  }, 120_000);

  it('a client that reads so slowly during a resume that the held alerts pass it by is told exactly what it missed (after: the last it got, oldest: the next it gets), and holds no more than a send buffer meanwhile', async () => {
    const max = 64 * 1024;
    const { url, publisher } = await setup({ maxBufferedBytes: max, replayAlerts: 300, replayAlertBytes: 64 * 1024 * 1024 });
    const raise = async (from: number, to: number, during?: () => void) => {
      for (let i = from; i < to; i++) {
        const f = frame('a', 60_000); // 42 MB in all, 18 MB held: more than a stalled socket's kernel buffers take
        await publisher.alert(f.frame, f.dets, 0, { id: `al-${i}`, rule: 'r', severity: 'info', event: 'zone.enter', message: 'm' });
        during?.();
      }
    };
    await raise(0, 300);
    const back = await connect(url);
    (back.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    back.send({ type: 'subscribe', sources: ['*'], kinds: ['alerts', 'status'], after: 'al-0' });
    await serverSideFull(max);
    // While it reads nothing, 400 more are raised (and a status change among them): the 300 held
    // alerts pass it by. What the hub holds for it stays one send buffer: nothing is queued.
    const seen: { buffered: number; backlog: number }[] = [];
    await raise(300, 350, () => seen.push(hub!.clientStats()[0]));
    await publisher.status({ source: 'a', state: 'failed', previous: 'streaming', reason: 'gone', at: now(), attempt: 1 });
    await raise(350, 700, () => seen.push(hub!.clientStats()[0]));
    expect(Math.max(...seen.map((x) => x.backlog))).toBe(0);
    expect(Math.max(...seen.map((x) => x.buffered))).toBeLessThanOrEqual(max + 256 * 1024); // one alert (~60 KB) past the bound at most, never the ~24 MB raised meanwhile
    (back.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await back.next((m) => m.type === 'alert' && (m.alert as { id: string }).id === 'al-699');
    expect(back.ws.readyState).toBe(WebSocket.OPEN);
    const got = kindsOf(back);
    const at = got.indexOf('missed');
    expect(at).toBeGreaterThan(0);
    expect(got.filter((x) => x === 'missed')).toHaveLength(1);
    // Before it: the held alerts in order from the one after `after`; after it: the status change, then every alert from the oldest held.
    expect(got.slice(0, at)).toEqual(Array.from({ length: at }, (_, i) => `al-${i + 1}`));
    expect(got.slice(at + 1)).toEqual(['status:a:failed', ...Array.from({ length: 300 }, (_, i) => `al-${i + 400}`)]);
    expect(back.msgs.find((m) => m.type === 'missed')).toMatchObject({ after: got[at - 1], oldest: 'al-400', held: 300 });
  }, 120_000);
});
