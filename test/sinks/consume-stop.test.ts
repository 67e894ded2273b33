// `argus consume` stopped while it waits on the brokers: connecting, looking its topic up, joining
// its group. A signal there ended nothing: the wait ran to its bound (10 s, then exit 2 with
// VAP_ERR_KAFKA_UNREACHABLE), or for ever (the topic's lookup, the group's join), and only a
// second Ctrl-C (killing it) ended it. No Kafka is needed: a fake broker answers the requests
// of the steps before the one the test stops in, and holds that one's for ever.
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { consume } from '../../src/sinks/consume.js';
import { ARGUS, ROOT } from '../helpers/cli.js';
import { until } from '../helpers/procs.js';

/** Kafka's API keys the fake answers. */
const METADATA = 3;
const FIND_COORDINATOR = 10;
const JOIN_GROUP = 11;
const API_VERSIONS = 18;

const int16 = (v: number) => Buffer.from([(v >> 8) & 0xff, v & 0xff]);
const int32 = (v: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
};
const str = (s: string) => Buffer.concat([int16(Buffer.byteLength(s)), Buffer.from(s)]);
const array = (items: Buffer[]) => Buffer.concat([int32(items.length), ...items]);

/**
 * A broker speaking just enough of Kafka's protocol (version 0 of each request) to get a kafkajs
 * consumer up to `holdAt`, whose requests it never answers; a request it does not know is held too.
 * With `refuseJoin`, the group's join is answered with that Kafka error code.
 * `seen` resolves at the first request of `holdAt`: the client waits on it from then on.
 */
async function fakeBroker(holdAt: number, topic: string, refuseJoin?: number, goneAt?: number): Promise<{ port: number; seen: Promise<void>; close: () => Promise<void> }> {
  const sockets: Socket[] = [];
  let port = 0;
  let onSeen!: () => void;
  const seen = new Promise<void>((r) => (onSeen = r));
  const answer = (apiKey: number, version: number): Buffer | undefined => {
    if (apiKey === API_VERSIONS) {
      // Only version 0 (kafkajs asks 2, then 1, then 0): error 35, UNSUPPORTED_VERSION, to the others.
      if (version > 0) return int16(35);
      return Buffer.concat([int16(0), array([METADATA, FIND_COORDINATOR, JOIN_GROUP, API_VERSIONS].map((k) => Buffer.concat([int16(k), int16(0), int16(0)])))]);
    }
    if (apiKey === METADATA) {
      const partition = Buffer.concat([int16(0), int32(0), int32(0), array([int32(0)]), array([int32(0)])]);
      return Buffer.concat([array([Buffer.concat([int32(0), str('127.0.0.1'), int32(port)])]), array([Buffer.concat([int16(0), str(topic), array([partition])])])]);
    }
    if (apiKey === FIND_COORDINATOR) return Buffer.concat([int16(0), int32(0), str('127.0.0.1'), int32(port)]);
    // JoinGroup v0 refused: error_code, generation_id, group_protocol, leader_id, member_id, members.
    if (apiKey === JOIN_GROUP && refuseJoin !== undefined) return Buffer.concat([int16(refuseJoin), int32(-1), str(''), str(''), str(''), array([])]);
    return undefined;
  };
  const server: Server = createServer((s) => {
    sockets.push(s);
    let buf = Buffer.alloc(0);
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const size = buf.readInt32BE(0);
        const apiKey = buf.readInt16BE(4);
        const version = buf.readInt16BE(6);
        const correlationId = buf.readInt32BE(8);
        buf = buf.subarray(4 + size);
        if (apiKey === holdAt) onSeen();
        // The broker gone (stopped, crashed): its connections reset, new ones refused.
        if (apiKey === goneAt) {
          server.close();
          for (const c of sockets) c.resetAndDestroy();
          return;
        }
        const body = apiKey === holdAt ? undefined : answer(apiKey, version);
        if (body) s.write(Buffer.concat([int32(4 + body.length), int32(correlationId), body]));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  return {
    port,
    seen,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const opts = { fromBeginning: false, window: 100, json: false, topic: 'plant.detections' };

describe('argus consume: a stop while it waits on the brokers', () => {
  it.each([
    ['connecting', API_VERSIONS, 'connecting to the Kafka broker'],
    ['looking its topic up', METADATA, 'looking up topic plant.detections on the Kafka broker'],
    ['joining its group', JOIN_GROUP, 'joining the consumer group on the Kafka broker'],
  ])('while %s: ends at once with VAP_ERR_INTERRUPTED naming the step (it waited to its bound, or for ever)', async (_step, holdAt, doing) => {
    const b = await fakeBroker(holdAt, opts.topic);
    closers.push(b.close);
    const ac = new AbortController();
    const out: string[] = [];
    // A connect bound far beyond the test's: only the stop can end the wait.
    const ended = consume({ ...opts, brokers: [`127.0.0.1:${b.port}`], connectTimeoutMs: 600_000, signal: ac.signal, out: { write: (s: string) => out.push(s), on: () => undefined } as unknown as NodeJS.WritableStream }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await b.seen;
    ac.abort('SIGINT');
    const e = await ended;
    expect(isArgusError(e, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect((e as Error).message).toBe(`consume: SIGINT while ${doing} 127.0.0.1:${b.port}: stopped on the signal${holdAt === API_VERSIONS ? '' : ', before any record was read'}`);
    // No summary: nothing was read.
    expect(out).toEqual([]);
  }, 60_000);

  it('the CLI, SIGINT while connecting to a broker that never answers: the coded message and exit 130 (it exited 2 with VAP_ERR_KAFKA_UNREACHABLE at its 10 s bound)', async () => {
    const b = await fakeBroker(API_VERSIONS, opts.topic);
    closers.push(b.close);
    const p = spawn(process.execPath, [ARGUS, 'consume', '--brokers', `127.0.0.1:${b.port}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 120_000); // a hang bound only
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
    await b.seen;
    p.kill('SIGINT');
    const r = await exited;
    clearTimeout(bound);
    expect(r).toEqual({ code: 130, signal: null });
    expect(stderr).toBe(`argus: VAP_ERR_INTERRUPTED: consume: SIGINT while connecting to the Kafka broker 127.0.0.1:${b.port}: stopped on the signal\n`);
  }, 180_000);
});

describe('argus consume: a group the brokers refuse', () => {
  // kafkajs's run() resolves also when the join fails: it "crashes" (disconnects, emits CRASH) and
  // returns. consume read that as joined and waited for records for ever, saying nothing.
  it.each([
    ['INVALID_GROUP_ID', 24],
    ['GROUP_AUTHORIZATION_FAILED', 30],
  ])('%s at the join: VAP_ERR_KAFKA_UNREACHABLE naming the broker, the group and why (it waited for ever as if reading)', async (type, code) => {
    const b = await fakeBroker(-1, opts.topic, code);
    closers.push(b.close);
    const out: string[] = [];
    const ended = consume({ ...opts, groupId: 'ops-readers', brokers: [`127.0.0.1:${b.port}`], out: { write: (s: string) => out.push(s), on: () => undefined } as unknown as NodeJS.WritableStream }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    // A hang bound only: without the fix it never ends.
    const e = await Promise.race([ended, new Promise((r) => setTimeout(() => r('still waiting'), 30_000))]);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^consume: the Kafka broker 127\\.0\\.0\\.1:${b.port} did not let this consumer join group ops-readers \\(.*\\b${type}\\b.*\\): `));
    expect(out).toEqual([]);
  }, 60_000);

  // Waited through in silence, a coordinator that never comes (a one-broker Kafka whose
  // offsets.topic.replication.factor is above 1: COORDINATOR_NOT_AVAILABLE for ever) left the
  // command waiting for ever without a word: now said once, on stderr, as it goes on waiting.
  it('a refusal kafkajs retries (GROUP_LOAD_IN_PROGRESS: a coordinator still loading the group, as a fresh broker answers) is waited through, not an error, said once on stderr; a stop ends the wait', async () => {
    const b = await fakeBroker(-1, opts.topic, 14);
    closers.push(b.close);
    const ac = new AbortController();
    const err: string[] = [];
    const ended = consume({ ...opts, groupId: 'ops-readers', brokers: [`127.0.0.1:${b.port}`], signal: ac.signal, out: { write: () => true, on: () => undefined } as unknown as NodeJS.WritableStream, err: { write: (s: string) => err.push(s) } as unknown as NodeJS.WritableStream }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    // kafkajs's retries (3, about 2 s) and its restart after them: still waiting for the join.
    const early = await Promise.race([ended, new Promise((r) => setTimeout(() => r('still waiting'), 4000))]);
    expect(early).toBe('still waiting');
    ac.abort('SIGINT');
    const e = await ended;
    expect(isArgusError(e, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect(err.length).toBe(1);
    expect(err[0]).toMatch(new RegExp(`^argus: warning: consume: the Kafka broker 127\\.0\\.0\\.1:${b.port} has not let this consumer join group ops-readers yet \\(.*\\bGROUP_LOAD_IN_PROGRESS\\b.*\\): still trying \\(Ctrl-C ends the wait\\)\n$`));
  }, 60_000);

  it('the CLI: the coded error and exit 2', async () => {
    const b = await fakeBroker(-1, opts.topic, 30);
    closers.push(b.close);
    const p = spawn(process.execPath, [ARGUS, 'consume', '--brokers', `127.0.0.1:${b.port}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 60_000); // a hang bound only
    const r = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => p.on('close', (code, signal) => res({ code, signal })));
    clearTimeout(bound);
    expect(r).toEqual({ code: 2, signal: null });
    expect(stderr).toMatch(new RegExp(`^argus: VAP_ERR_KAFKA_UNREACHABLE: consume: the Kafka broker 127\\.0\\.0\\.1:${b.port} did not let this consumer join group argus-consume-\\d+-\\d+ \\(`));
  }, 120_000);
});

describe('argus consume: a broker gone before the join', () => {
  // kafkajs gives up on a coordinator it cannot reach with KafkaJSGroupCoordinatorNotFound (no
  // cause), which was said as a refusal: "did not let this consumer join group …".
  it('gone (its connections reset, new ones refused) after the topic\'s lookup: said unreachable, naming why, not a refused join', async () => {
    const b = await fakeBroker(-1, opts.topic, undefined, FIND_COORDINATOR);
    closers.push(b.close);
    const ended = consume({ ...opts, groupId: 'ops-readers', brokers: [`127.0.0.1:${b.port}`], out: { write: () => true, on: () => undefined } as unknown as NodeJS.WritableStream, err: { write: () => true } as unknown as NodeJS.WritableStream }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    const e = await Promise.race([ended, new Promise((r) => setTimeout(() => r('still waiting'), 30_000))]);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^consume: the Kafka broker 127\\.0\\.0\\.1:${b.port} could not be reached \\(ECONNREFUSED\\) while this consumer joined group ops-readers \\(KafkaJSGroupCoordinatorNotFound: .*\\): is Kafka running there\\? `));
  }, 60_000);

  it('gone at the join itself (kafkajs retries it): the wait is said as an unreachable broker, not a join not yet let', async () => {
    const b = await fakeBroker(-1, opts.topic, undefined, JOIN_GROUP);
    closers.push(b.close);
    const ac = new AbortController();
    const err: string[] = [];
    const ended = consume({ ...opts, groupId: 'ops-readers', brokers: [`127.0.0.1:${b.port}`], signal: ac.signal, out: { write: () => true, on: () => undefined } as unknown as NodeJS.WritableStream, err: { write: (s: string) => err.push(s) } as unknown as NodeJS.WritableStream }).then(
      () => 'resolved',
      (e: unknown) => e,
    );
    expect(await until(() => err.length > 0, 30_000)).toBe(true);
    ac.abort('SIGINT');
    expect(isArgusError(await ended, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(new RegExp(`^argus: warning: consume: the Kafka broker 127\\.0\\.0\\.1:${b.port} has not been reachable yet for this consumer to join group ops-readers \\(KafkaJSConnection.*\\): still trying \\(Ctrl-C ends the wait\\)\n$`));
  }, 60_000);
});
