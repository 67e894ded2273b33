// subscribe's `run` (README, "WebSocket API"): a client resumes after its last alert of the run it
// was on. The hub resumed after an `after` whatever the run: after a restart of argus whose alert
// ids came again (a program that embeds argus and gives its run again), it resumed after the new
// run's alert of that id and the client never got the new run's alerts before it, nor a `missed`.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startHttpServer, type RunningServer } from '../../src/server/http.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';

let server: RunningServer | undefined;
let hub: WebSocketHub | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const s of sockets) s.terminate();
  sockets.length = 0;
  await hub?.close();
  await server?.close();
});

async function setup(run: string | undefined, ids: string[]): Promise<string> {
  hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 1000, maxClientMessageBytes: 4096, sources: () => ['lobby'], run, replayAlerts: 3 });
  server = await startHttpServer({ host: '127.0.0.1', port: 0, upgrades: { '/ws': (q, s, h) => hub!.handleUpgrade(q, s, h) } });
  for (const id of ids) raise(id);
  return `${server.url.replace('http', 'ws')}/ws`;
}

function raise(id: string): void {
  const m = { type: 'alert', version: 1, source: 'lobby', alert: { id, rule: 'r', severity: 'info', event: 'zone.enter', message: id } };
  hub!.publish('alert', 'lobby', JSON.stringify(m), m as unknown as AlertMessage);
}

/** Connects, sends `subscribe` and collects what comes until a ping's pong (every reply to the subscribe is before it). */
async function exchange(url: string, subscribe: Record<string, unknown>, extra?: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const ws = new WebSocket(url);
  sockets.push(ws);
  const msgs: Record<string, unknown>[] = [];
  const done = new Promise<void>((res) => ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    msgs.push(m);
    if (m.type === 'hello') {
      ws.send(JSON.stringify({ type: 'subscribe', kinds: ['alerts'], ...subscribe }));
      if (extra) ws.send(JSON.stringify(extra));
      ws.send(JSON.stringify({ type: 'ping' }));
    }
    if (m.type === 'pong') res();
  }));
  await done;
  return msgs;
}

const alertIds = (msgs: Record<string, unknown>[]) => msgs.filter((m) => m.type === 'alert').map((m) => (m.alert as { id: string }).id);

describe('WebSocket resume across runs (subscribe `run`)', () => {
  it('hello says the newest held alert (latestAlert); null with none', async () => {
    let url = await setup('runa', []);
    expect((await exchange(url, {}))[0]).toMatchObject({ type: 'hello', run: 'runa', latestAlert: null });
    raise('x:1');
    raise('x:2');
    url = `${server!.url.replace('http', 'ws')}/ws`;
    expect((await exchange(url, {}))[0]).toMatchObject({ type: 'hello', latestAlert: 'x:2' });
  });

  it('another run: every held alert of this run after a `missed` that says it restarted, even when `after` is an id this run has too', async () => {
    const url = await setup('runb', ['x:1', 'x:2', 'x:3']);
    const msgs = await exchange(url, { run: 'runa', after: 'x:2' });
    expect(msgs.find((m) => m.type === 'missed')).toMatchObject({ after: 'x:2', oldest: 'x:1', restarted: true, run: 'runb' });
    expect(alertIds(msgs)).toEqual(['x:1', 'x:2', 'x:3']);
  });

  it('the same run: resumes after `after`, and with `run` alone sends every held alert; one let go is said missed', async () => {
    const url = await setup('runa', ['x:1', 'x:2']);
    let msgs = await exchange(url, { run: 'runa', after: 'x:1' });
    expect(msgs.some((m) => m.type === 'missed')).toBe(false);
    expect(alertIds(msgs)).toEqual(['x:2']);
    msgs = await exchange(url, { run: 'runa' });
    expect(msgs.some((m) => m.type === 'missed')).toBe(false);
    expect(alertIds(msgs)).toEqual(['x:1', 'x:2']);
    raise('x:3');
    raise('x:4'); // replayAlerts 3: x:1 let go
    msgs = await exchange(url, { run: 'runa' });
    expect(msgs.find((m) => m.type === 'missed')).toMatchObject({ after: null, oldest: 'x:2' });
    expect(alertIds(msgs)).toEqual(['x:2', 'x:3', 'x:4']);
  });

  it('a `run` not a run tag, or a second resume on a connection, is a bad_subscribe', async () => {
    const url = await setup('runa', ['x:1']);
    let msgs = await exchange(url, { run: 'RUN A' });
    expect(msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'bad_subscribe' });
    expect(String(msgs.find((m) => m.type === 'error')!.message)).toContain('"run"');
    msgs = await exchange(url, { run: 'runa' }, { type: 'subscribe', kinds: ['alerts'], run: 'runa' });
    expect(msgs.find((m) => m.type === 'error')).toMatchObject({ code: 'bad_subscribe' });
    expect(alertIds(msgs)).toEqual(['x:1']);
  });
});
