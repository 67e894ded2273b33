import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { statusMessage, type AlertMessage, type Message, type StatusMessage } from '../../src/sinks/message.js';
import { KafkaSink, type DeliveryOutcome, type KafkaSinkOptions } from '../../src/sinks/kafka.js';
import { Outbox, recordMessage } from '../../src/sinks/outbox.js';
import { broker, BROKER_TIMEOUT_MS, createSmallTopic, createTopicsReady, readTopic, readTopicUntil, stallBroker, testAlert, testDetections, uniqueTopic } from '../helpers/kafka.js';
import { testPort } from '../helpers/ports.js';
import { assertValidMessage } from '../helpers/schema.js';

// A broker of this file's own (not 19092, which other tests share, nor 19192, which
// kafka.test.ts kills): these tests freeze it with SIGSTOP.
const PORT = testPort(19292);
let brokers: string[];
let stalled = false;
const tmp = mkdtempSync(join(tmpdir(), 'argus-kafka-faults-'));

beforeAll(async () => {
  const line = await broker('start', PORT, '--fresh');
  brokers = [/KAFKA_BROKERS=(\S+)/.exec(line)![1]];
}, BROKER_TIMEOUT_MS);
afterAll(async () => {
  if (stalled) stallBroker(PORT, false);
  await broker('stop', PORT);
  rmSync(tmp, { recursive: true, force: true });
}, BROKER_TIMEOUT_MS);

/** Bound on a wait for the broker (a JVM on a busy machine is slow): it only ends a hang. */
const BROKER_WAIT_MS = 180_000;
/** Test bound: a few broker waits in a row. */
const TIMEOUT = 4 * BROKER_WAIT_MS;

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `cond` until it holds; `ms` only bounds a hang (the caller asserts the result). */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await wait(50);
  return cond();
}

/**
 * Runs `start` and the wait for `cond` in virtual time: the sink's backoff (200 ms doubling to
 * 5 s, with jitter) is setTimeout's, so a scripted outage of a dozen failures takes no real
 * seconds. Advances 50 ms at a time until `cond` holds or `ms` of virtual time passed.
 */
async function inVirtualTime(start: () => void, cond: () => boolean, ms: number): Promise<boolean> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
  try {
    start();
    for (let t = 0; t < ms && !cond(); t += 50) await vi.advanceTimersByTimeAsync(50);
    return cond();
  } finally {
    vi.useRealTimers();
  }
}

interface Logged {
  msg: string;
  fields?: Record<string, unknown>;
  level: string;
}

function makeSink(topic: string, over: Partial<KafkaSinkOptions> = {}) {
  const logs: Logged[] = [];
  const delivered: { messages: Message[]; outcome: DeliveryOutcome }[] = [];
  const sink = new KafkaSink({
    ...KafkaSinkSchema.parse({ brokers, topics: { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` } }),
    ssl: undefined,
    closeTimeoutMs: 5000,
    log: (msg, fields, level = 'info') => logs.push({ msg, fields, level }),
    onDelivered: (messages, outcome) => delivered.push({ messages, outcome }),
    ...over,
  });
  const acked = () => delivered.filter((d) => d.outcome === 'acked').flatMap((d) => d.messages);
  const deadLettered = () => delivered.filter((d) => d.outcome === 'dead-lettered').flatMap((d) => d.messages);
  return { sink, logs, delivered, acked, deadLettered };
}

/** An alert as argus publishes it (test/helpers/kafka.ts). */
const alert = testAlert;

/** A detections message (test/helpers/kafka.ts). */
const detections = testDetections;

function status(source: string, i: number): StatusMessage {
  const m = statusMessage({ source, state: i % 2 ? 'reconnecting' : 'streaming', previous: i % 2 ? 'streaming' : 'reconnecting', reason: `flap ${i}`, at: Date.now() + i, attempt: i });
  m.published = Date.now();
  return m;
}

function publish(sink: KafkaSink, m: Message): void {
  sink.publish(m.type === 'alert' ? 'alert' : m.type, m.source, JSON.stringify(m), m);
}

const ids = (values: { value: string }[]) => values.map((v) => JSON.parse(v.value).alert.id as string);

/** An alert whose `message` is `chars` long: too large without a snapshot too (`snapshotBytes` of one as well, when given). */
function wordyAlert(source: string, id: string, chars: number, snapshotBytes = 0) {
  const m = alert(source, id, snapshotBytes);
  m.alert.message = 'x'.repeat(chars);
  return m;
}

describe('Kafka sink: messages too large for the broker', () => {
  it('a backlog of alerts with embedded snapshots (more than the 1 MB message.max.bytes) goes out in byte-cut batches, and later alerts still arrive', async () => {
    const topic = uniqueTopic('bytes');
    const { sink, acked } = makeSink(topic);
    await sink.start();
    // 12 alerts of ~150 KB queued at once, as an outage leaves them: ~1.8 MB, one produce
    // request by count (batchSize 500), which the broker refuses as too large.
    const backlog = Array.from({ length: 12 }, (_, i) => alert('dock', `backlog-${i}`, 150_000));
    for (const m of backlog) publish(sink, m);
    expect(await until(() => sink.stats.alertsSent >= 12, BROKER_WAIT_MS)).toBe(true);
    const later = alert('dock', 'later-0', 1000);
    publish(sink, later);
    expect(await until(() => sink.stats.alertsSent >= 13, BROKER_WAIT_MS)).toBe(true);
    const got = await readTopic(brokers, `${topic}.alerts`, 13);
    expect(ids(got)).toEqual([...backlog, later].map((m) => m.alert.id));
    expect(sink.stats).toMatchObject({ parked: 0, alertsDropped: 0, alertsBuffered: 0 });
    // onDelivered got the very Message objects, in order, once each.
    expect(acked()).toHaveLength(13);
    acked().forEach((m, i) => expect(m).toBe([...backlog, later][i]));
    await sink.close();
  }, TIMEOUT);

  it('a topic with a small max.message.bytes: refused batches are split, a message too large on its own is parked (dead-letter file, error log, onDelivered) and never blocks the queue', async () => {
    const topic = uniqueTopic('split');
    const alertsTopic = `${topic}.alerts`;
    await createSmallTopic(brokers, alertsTopic, 60_000);

    const deadLetterPath = join(tmp, 'split', 'dead-letter.jsonl');
    const { sink, logs, acked, deadLettered } = makeSink(topic, { maxMessageBytes: 100_000, deadLetterPath });
    await sink.start();
    const a = [
      alert('dock', 'a0'),
      alert('dock', 'a1', 25_000),
      alert('dock', 'a2', 25_000),
      alert('dock', 'a3', 25_000),
      wordyAlert('dock', 'a4-refused', 70_000), // over the topic's 60000: the broker refuses it alone
      alert('dock', 'a5'),
      wordyAlert('dock', 'a6-oversize', 120_000), // over maxMessageBytes: never sent
      alert('dock', 'a7'),
    ];
    const dets = Array.from({ length: 10 }, (_, i) => detections('dock', i));
    // One tick: one batch of alerts and detections (other partitions, which the broker writes).
    for (const m of a) publish(sink, m);
    for (const m of dets) publish(sink, m);
    const delivered = [a[0], a[1], a[2], a[3], a[5], a[7]];
    expect(await until(() => sink.stats.alertsSent >= delivered.length && sink.stats.parked >= 2, BROKER_WAIT_MS)).toBe(true);
    // The queue keeps moving after the parked ones, detections too: the producer's sequence
    // numbers for the detections partition (written by the refused request) are not stale.
    const after = alert('dock', 'after');
    const laterDets = Array.from({ length: 5 }, (_, i) => detections('dock', 10 + i));
    publish(sink, after);
    for (const m of laterDets) publish(sink, m);
    expect(await until(() => sink.stats.alertsSent >= delivered.length + 1 && sink.stats.sent >= 15, BROKER_WAIT_MS)).toBe(true);

    const got = await readTopic(brokers, alertsTopic, delivered.length + 1);
    expect(ids(got)).toEqual([...delivered, after].map((m) => m.alert.id));
    // Every detection is in the topic at least once: read until all 15 seqs were seen.
    const wantSeqs = new Set([...dets, ...laterDets].map((d) => d.seq));
    const seqsIn = (got: { value: string }[]) => new Set(got.map((g) => JSON.parse(g.value).seq as number));
    const gotDets = await readTopicUntil(brokers, topic, (got) => seqsIn(got).size >= wantSeqs.size, BROKER_WAIT_MS);
    expect(seqsIn(gotDets)).toEqual(wantSeqs);
    expect(sink.stats).toMatchObject({ parked: 2, deadLettered: 2, alertsDropped: 0, alertsBuffered: 0 });

    // Dead-letter file: one JSON line each, the message as it would have been published.
    const lines = readFileSync(deadLetterPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => JSON.parse(l.value).alert.id)).toEqual(['a6-oversize', 'a4-refused']);
    for (const l of lines) {
      expect(l).toMatchObject({ topic: alertsTopic, key: 'dock' });
      expect(typeof l.reason).toBe('string');
      expect(Number.isNaN(Date.parse(l.at))).toBe(false);
    }
    expect(lines[0].reason).toMatch(/maxMessageBytes/);
    expect(lines[1].reason).toMatch(/MESSAGE_TOO_LARGE/);
    // Each parked alert is an error naming its source and id.
    const parkedLogs = logs.filter((l) => l.level === 'error' && /parked/.test(l.msg));
    expect(parkedLogs.map((l) => l.fields?.alertId)).toEqual(['a6-oversize', 'a4-refused']);
    for (const l of parkedLogs) expect(l.msg).toMatch(/from dock .*too large/);
    for (const l of parkedLogs) expect(l.fields?.code).toBe('VAP_ERR_ALERT_UNDELIVERED');
    expect(logs.some((l) => /refused a batch as too large/.test(l.msg))).toBe(true);
    // onDelivered: acked in order, each once; the parked ones as dead-lettered.
    expect(acked()).toEqual([...delivered, after]);
    acked().forEach((m, i) => expect(m).toBe([...delivered, after][i]));
    expect(deadLettered()).toEqual([a[6], a[4]]);
    await sink.close();
  }, TIMEOUT);

  it('an alert too large with its embedded snapshot reaches consumers without it (snapshotOmitted: why, and the URL that serves it), in its place; its outbox record is replaced and acknowledged once; only one still too large without it is parked, picture and all', async () => {
    const topic = uniqueTopic('omit');
    const alertsTopic = `${topic}.alerts`;
    await createSmallTopic(brokers, alertsTopic, 60_000);
    const dir = mkdtempSync(join(tmp, 'outbox-'));
    const outbox = await Outbox.open({ dir, maxBytes: 64 << 20, maxAgeMs: 3_600_000, fsync: false });
    const deadLetterPath = join(tmp, 'omit', 'dead-letter.jsonl');
    const outcomes: [string, DeliveryOutcome][] = [];
    const { sink, logs } = makeSink(topic, {
      maxMessageBytes: 100_000,
      deadLetterPath,
      spill: outbox.spill(),
      // A replayed alert's id is served too (a process that gives its run again raises the same ids): not its picture.
      snapshotUrl: (id) => (id.endsWith('-served') || id.includes('replayed') ? `/api/snapshot?id=${id}` : undefined),
      onDelivered: (messages, outcome) => {
        for (const m of messages) outcomes.push([(m as AlertMessage).alert.id, outcome]);
        outbox.ack(messages);
      },
    });
    await sink.start();
    const a = [
      alert('dock', 'b0'),
      alert('dock', 'b1', 25_000), // fits: sent with its picture
      alert('dock', 'b2-refused-served', 70_000), // the broker refuses it (topic: 60000): sent again at once without
      alert('dock', 'b3'),
      alert('dock', 'b4-over', 120_000), // over maxMessageBytes: sent without, never with
      wordyAlert('dock', 'b5-wordy', 70_000), // no picture to leave out: the broker refuses it, parked
      wordyAlert('dock', 'b6-refused-wordy', 70_000, 20_000), // refused with and without its picture: parked with it
      wordyAlert('dock', 'b7-over-wordy', 110_000, 20_000), // over maxMessageBytes without its picture too: parked with it
      alert('dock', 'b8'),
      // Replayed from the outbox (as a start does: the message only its id, recordMessage), both ways.
      alert('dock', 'b9-replayed-refused', 70_000),
      alert('dock', 'b10-replayed-over', 120_000),
    ];
    const replayed = (m: AlertMessage) => m.alert.id.includes('replayed');
    // Journaled first, as the publisher does; one tick: one batch.
    const jsons = a.map((m) => JSON.stringify(m));
    await Promise.all(a.map((m, i) => outbox.append(m, jsons[i])));
    a.forEach((m, i) => sink.publish('alert', m.source, jsons[i], replayed(m) ? recordMessage(outbox.get(`alert:${m.alert.id}`)!) : m, replayed(m)));
    const sent = ['b0', 'b1', 'b2-refused-served', 'b3', 'b4-over', 'b8', 'b9-replayed-refused', 'b10-replayed-over'];
    expect(await until(() => sink.stats.alertsSent >= sent.length && sink.stats.parked >= 3 && outcomes.length === a.length, BROKER_WAIT_MS)).toBe(true);

    // In the topic, in their order, each once: the two too large with their picture without it, saying why.
    const got = (await readTopic(brokers, alertsTopic, sent.length)).map((g) => JSON.parse(g.value) as AlertMessage);
    expect(got.map((m) => m.alert.id)).toEqual(sent);
    expect(got[1].alert.snapshot?.data).toBe(a[1].alert.snapshot?.data);
    expect(got[2].alert.snapshot).toBeUndefined();
    expect(got[2].alert.snapshotOmitted).toEqual({ reason: 'too-large', detail: expect.stringMatching(/MESSAGE_TOO_LARGE/), url: '/api/snapshot?id=b2-refused-served' });
    expect(got[4].alert.snapshot).toBeUndefined();
    expect(got[4].alert.snapshotOmitted).toEqual({ reason: 'too-large', detail: expect.stringMatching(/bytes > maxMessageBytes 100000/) });
    // Otherwise the alert as published.
    const { snapshot: _s, ...rest } = a[4].alert;
    expect(got[4]).toEqual({ ...a[4], alert: { ...rest, snapshotOmitted: got[4].alert.snapshotOmitted } });
    for (const m of got.slice(6)) {
      expect(m.alert.snapshotOmitted?.reason).toBe('too-large');
      // An earlier run's: this process does not hold its picture (a URL of the same id would serve another's).
      expect(m.alert.snapshotOmitted?.url).toBeUndefined();
    }
    for (const m of got) assertValidMessage(m); // the message schema has the field
    expect(sink.stats).toMatchObject({ alertsSent: sent.length, alertsReplayed: 2, snapshotsLeftOut: 4, parked: 3, deadLettered: 3, alertsDropped: 0, alertsBuffered: 0 });
    // Said once a minute at most (it may be every alert), the first one named.
    const said = logs.filter((l) => /too large for the broker with its snapshot/.test(l.msg));
    expect(said).toEqual([{ level: 'warn', msg: expect.stringMatching(/^kafka: alert b4-over from dock is too large for the broker with its snapshot \(\d+ bytes > maxMessageBytes 100000\); sent without it/), fields: expect.objectContaining({ alertId: 'b4-over' }) }]);

    // Parked: the three too large without a picture, as published (pictures included).
    const lines = readFileSync(deadLetterPath, 'utf8').trim().split('\n').map((l) => JSON.parse(JSON.parse(l).value) as AlertMessage);
    expect(lines.map((m) => m.alert.id).sort()).toEqual(['b5-wordy', 'b6-refused-wordy', 'b7-over-wordy']);
    for (const m of lines) expect(m).toEqual(a.find((x) => x.alert.id === m.alert.id));

    // Each told to the outbox once, and the outbox holds none of them.
    expect(outcomes.map(([id]) => id).sort()).toEqual(a.map((m) => m.alert.id).sort());
    expect(outbox.pendingAlerts).toBe(0);
    await sink.close();
    // The journal (before close compacts it): a record replaced under its key, never a second key; one ack each.
    const journal = readFileSync(join(dir, 'outbox.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l.slice(9)) as { op: string; key: string; value?: string });
    const puts = (id: string) => journal.filter((r) => r.op === 'put' && r.key === `alert:${id}`).map((r) => ('snapshotOmitted' in JSON.parse(r.value!).alert ? 'without' : 'with'));
    expect(puts('b2-refused-served')).toEqual(['with', 'without']);
    expect(puts('b4-over')).toEqual(['with', 'without']);
    expect(puts('b9-replayed-refused')).toEqual(['with', 'without']);
    expect(puts('b10-replayed-over')).toEqual(['with', 'without']);
    expect(puts('b6-refused-wordy')).toEqual(['with', 'without', 'with']); // parked as published
    expect(puts('b7-over-wordy')).toEqual(['with']);
    expect(puts('b1')).toEqual(['with']);
    for (const m of a) expect(journal.filter((r) => r.op === 'ack' && r.key === `alert:${m.alert.id}`)).toHaveLength(1);
    expect(new Set(journal.map((r) => r.key)).size).toBe(a.length);
    await outbox.close();
  }, TIMEOUT);
});

describe('Kafka sink: one topic refused (deleted) while the broker is up', () => {
  it('a deleted detections topic holds up only detections: alerts, sent in requests of their own, keep arriving while detections are still published', async () => {
    const topic = uniqueTopic('hol');
    const { sink, acked } = makeSink(topic, { lingerMs: 5 });
    await sink.start();
    publish(sink, detections('dock', 0));
    publish(sink, alert('dock', 'h0'));
    expect(await until(() => acked().length === 1, BROKER_WAIT_MS)).toBe(true);
    const kafka = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] });
    await admin.disconnect();
    // Detections every 50 ms, as a camera's frames come, and 8 alerts 250 ms apart among them.
    let s = 1;
    const frames = setInterval(() => publish(sink, detections('dock', s++)), 50);
    try {
      for (let i = 1; i <= 8; i++) {
        publish(sink, alert('dock', `h${i}`));
        await wait(250);
      }
      // While detections still come and fail: every alert is acknowledged (in one request with the detections, 4 of 44 were in 40 s).
      expect(await until(() => acked().length === 9, BROKER_WAIT_MS)).toBe(true);
      expect(sink.stats.failures).toBeGreaterThan(0); // the detections' requests did fail
    } finally {
      clearInterval(frames);
    }
    expect(ids(await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 9, BROKER_WAIT_MS))).toEqual(Array.from({ length: 9 }, (_, i) => `h${i}`));
    await sink.close();
  }, TIMEOUT);
});

describe('Kafka sink: the alerts topic deleted while the broker is up', () => {
  it('is created again (createTopics) and every alert arrives without a restart, while detections go through; the outage is said once, not at each detections request', async () => {
    const topic = uniqueTopic('gone');
    const { sink, acked, logs } = makeSink(topic, { lingerMs: 5 });
    await sink.start();
    publish(sink, alert('dock', 'g0'));
    expect(await until(() => acked().length === 1, BROKER_WAIT_MS)).toBe(true);
    const kafka = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [`${topic}.alerts`] });
    // Gone from the broker's metadata before g1: while the deletion was still being applied, g1
    // could be written to the old log, acknowledged, and deleted with it (a busy machine: 182 s).
    const end = Date.now() + BROKER_WAIT_MS; // only ends a hang
    while ((await admin.listTopics()).includes(`${topic}.alerts`) && Date.now() < end) await wait(50);
    expect(await admin.listTopics()).not.toContain(`${topic}.alerts`);
    await admin.disconnect();
    let s = 1;
    const frames = setInterval(() => publish(sink, detections('dock', s++)), 50);
    try {
      for (let i = 1; i <= 6; i++) {
        publish(sink, alert('dock', `g${i}`));
        await wait(250);
      }
      expect(await until(() => acked().length === 7, BROKER_WAIT_MS)).toBe(true);
    } finally {
      clearInterval(frames);
    }
    expect(ids(await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 6, BROKER_WAIT_MS))).toEqual(Array.from({ length: 6 }, (_, i) => `g${i + 1}`));
    expect(logs.some((l) => l.msg.includes(`created topics ${topic}.alerts`))).toBe(true);
    // Before: "publishing failed" and "broker back" at every detections request that went through (87 and 86 in 45 s).
    expect(logs.filter((l) => /publishing failed/.test(l.msg)).length).toBeLessThanOrEqual(2);
    expect(logs.filter((l) => /broker back/.test(l.msg)).length).toBeLessThanOrEqual(2);
    await sink.close();
  }, TIMEOUT);
});

describe('Kafka sink: a broker that accepts connections and never answers, then recovers', () => {
  it('the sink recovers once new connections are answered: the topics are created then, and every alert raised meanwhile arrives', async () => {
    // A TCP proxy to the broker that black-holes the connections made while `blackHole` holds.
    let blackHole = true;
    const held: Socket[] = [];
    const proxy = createServer((c) => {
      c.on('error', () => undefined);
      if (blackHole) {
        held.push(c);
        c.on('data', () => undefined);
        return;
      }
      const [host, port] = brokers[0].split(':');
      const u = connect(Number(port), host);
      u.on('error', () => c.destroy());
      c.on('close', () => u.destroy());
      c.pipe(u).pipe(c);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const at = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const topic = uniqueTopic('blackhole');
      // requestTimeoutMs 2 s (default 10 s): each unanswered request fails after 2 s.
      const { sink, logs, acked } = makeSink(topic, { brokers: [at], lingerMs: 5, requestTimeoutMs: 2000 });
      // The broker does not answer: the sink starts after startWaitMs and buffers. It waited for
      // two of kafkajs's 10 s requests (20 s in which no camera ran).
      const t0 = performance.now();
      await sink.start();
      expect(performance.now() - t0).toBeLessThan(8000);
      expect(logs.some((l) => /^kafka: no answer from 127\.0\.0\.1:\d+ within 3 s; starting without it/.test(l.msg))).toBe(true);
      // The check and the connection go on in the background, and fail as before.
      expect(await until(() => logs.some((l) => l.msg.startsWith('kafka: broker not reachable at start')), BROKER_WAIT_MS)).toBe(true);
      // After two unanswered 2 s requests (6 s here); with the default 10 s, 20 s at the least
      // (30 s measured).
      expect(performance.now() - t0).toBeLessThan(18_000);
      for (let i = 0; i < 5; i++) publish(sink, alert('dock', `b${i}`));
      expect(await until(() => sink.stats.failures >= 2, BROKER_WAIT_MS)).toBe(true);
      blackHole = false;
      for (let i = 5; i < 10; i++) publish(sink, alert('dock', `b${i}`));
      // Before, no new connection was ever tried and nothing arrived (55 s after the broker answered again).
      expect(await until(() => acked().length === 10, BROKER_WAIT_MS)).toBe(true);
      expect(ids(await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length >= 10, BROKER_WAIT_MS))).toEqual(Array.from({ length: 10 }, (_, i) => `b${i}`));
      await sink.close();
    } finally {
      for (const c of held) c.destroy();
      proxy.close();
    }
  }, TIMEOUT);
});

describe('Kafka sink: failure reasons in the log', () => {
  it('logs the failure reason each time it changes (ECONNREFUSED → not leader → ECONNREFUSED), not only the first, and not again while it repeats', async () => {
    const { sink, logs } = makeSink(uniqueTopic('reasons'), { brokers: ['127.0.0.1:9'], closeTimeoutMs: 500 });
    // No broker: the producer is replaced by one that fails as scripted, then works.
    const refused = Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' });
    const notLeader = Object.assign(new Error('This server is not the leader for that topic-partition'), { name: 'KafkaJSProtocolError', type: 'NOT_LEADER_FOR_PARTITION' });
    const script = [refused, refused, notLeader, notLeader, refused];
    let calls = 0;
    const producer = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      on: () => undefined,
      events: { DISCONNECT: 'producer.disconnect' },
      sendBatch: async () => {
        const e = script[calls++];
        if (e) throw e;
        return [];
      },
    };
    // The scripted producer stands for every producer the sink makes, and its topics count as checked.
    Object.assign(sink as unknown as object, { producer, makeProducer: () => producer, topicsChecked: true });
    expect(await inVirtualTime(() => publish(sink, alert('gate', 'r0')), () => sink.stats.alertsSent === 1, 60_000)).toBe(true);
    expect(calls).toBe(script.length + 1);
    const failures = logs.filter((l) => l.level === 'warn' && !/new producer/.test(l.msg)).map((l) => l.msg);
    expect(failures).toHaveLength(3);
    expect(failures[0]).toMatch(/publishing failed \(Connection error: connect ECONNREFUSED/);
    expect(failures[1]).toMatch(/still failing, now: This server is not the leader .*NOT_LEADER_FOR_PARTITION/);
    expect(failures[2]).toMatch(/still failing, now: Connection error: connect ECONNREFUSED/);
    expect(logs.some((l) => /broker back/.test(l.msg))).toBe(true);
    expect(sink.stats.failures).toBe(script.length);
    await sink.close();
  }, TIMEOUT);
});

describe('Kafka sink: a topic that cannot be created', () => {
  it('does not hold back the topics that exist: alerts are published while the status topic cannot be created (replication factor 3 on one broker)', async () => {
    const topic = uniqueTopic('cannot');
    const kafka = new Kafka({ clientId: 'argus-test', brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, { topics: [topic, `${topic}.alerts`].map((t) => ({ topic: t, numPartitions: 1 })) });
    await admin.disconnect();
    const { sink, logs, acked } = makeSink(topic, { replicationFactor: 3, lingerMs: 5 });
    await sink.start();
    expect(logs.some((l) => /the topics could not be checked or created/.test(l.msg))).toBe(true);
    for (let i = 0; i < 5; i++) publish(sink, alert('dock', `c${i}`));
    // Before, every request waited on the topic check, which failed each time: 0 alerts in 20 s.
    expect(await until(() => acked().length === 5, BROKER_WAIT_MS)).toBe(true);
    await sink.close();
  }, TIMEOUT);
});

describe('Kafka sink: scripted failures (no broker)', () => {
  /** A sink whose every producer is `sendBatch`, with its topics taken as checked. */
  const scripted = (sendBatch: (req: { topicMessages: { topic: string }[] }) => Promise<unknown>) => {
    const s = makeSink(uniqueTopic('scripted'), { brokers: ['127.0.0.1:9'], closeTimeoutMs: 500 });
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch };
    Object.assign(s.sink as unknown as object, { producer, makeProducer: () => producer, topicsChecked: true });
    return s;
  };

  it('an alert whose request failed is first again once any request went through, however many detections keep coming', async () => {
    let failAlert = true;
    const sent: string[] = [];
    const { sink } = scripted(async ({ topicMessages }) => {
      await wait(3);
      const topic = topicMessages[0].topic;
      if (topic.endsWith('.alerts') && failAlert) {
        failAlert = false;
        throw Object.assign(new Error('This server is not the leader for that topic-partition'), { name: 'KafkaJSProtocolError', type: 'NOT_LEADER_FOR_PARTITION' });
      }
      sent.push(topic.endsWith('.alerts') ? 'alert' : 'detections');
      return [];
    });
    // A detection every millisecond (33 cameras at 30 fps), from before the alert to after it is sent.
    let k = 0;
    const frames = setInterval(() => publish(sink, detections('dock', k++)), 1);
    try {
      publish(sink, alert('dock', 'first'));
      expect(await until(() => sink.stats.alertsSent === 1, BROKER_WAIT_MS)).toBe(true);
    } finally {
      clearInterval(frames);
    }
    // Behind at most one detections request (before, it waited for as long as detections came).
    expect(sent.indexOf('alert')).toBeLessThanOrEqual(1);
    await sink.close();
  }, TIMEOUT);

  it("a fresh producer after 5 failed connections in a row, not after a topic's own errors", async () => {
    const run = async (error: () => Error, failures: number) => {
      let calls = 0;
      const { sink, logs } = scripted(async () => {
        if (calls++ < failures) throw error();
        return [];
      });
      expect(await inVirtualTime(() => publish(sink, alert('gate', 'p0')), () => sink.stats.alertsSent === 1, 120_000)).toBe(true);
      expect(calls).toBe(failures + 1);
      await sink.close();
      return logs.filter((l) => /starting a new producer/.test(l.msg)).map((l) => l.msg);
    };
    const refused = () => Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' });
    const unknownTopic = () => Object.assign(new Error('This server does not host this topic-partition'), { name: 'KafkaJSProtocolError', type: 'UNKNOWN_TOPIC_OR_PARTITION' });
    expect(await run(refused, 5)).toEqual([expect.stringMatching(/^kafka: starting a new producer \(5 failed connections in a row: Connection error: connect ECONNREFUSED/)]);
    expect(await run(unknownTopic, 6)).toEqual([]); // a deleted topic made 6 new producers a minute
  }, TIMEOUT);
});

describe('Kafka sink: status messages during an outage (broker stalled with SIGSTOP)', () => {
  it('a flapping camera keeps only its latest status, pushes no alert out, and counts no lost alerts', async () => {
    const topic = uniqueTopic('status');
    const { sink, acked } = makeSink(topic, { alertBufferSize: 5 });
    await sink.start();
    const warm = alert('dock', 'warm');
    const s0 = status('dock', 0);
    publish(sink, warm);
    publish(sink, s0);
    expect(await until(() => sink.stats.alertsSent === 1 && sink.stats.statusSent === 1, BROKER_WAIT_MS)).toBe(true);

    stallBroker(PORT, true);
    stalled = true;
    const alerts = Array.from({ length: 5 }, (_, i) => alert('dock', `outage-${i}`));
    const dock: StatusMessage[] = [];
    const yard: StatusMessage[] = [];
    try {
      publish(sink, alerts[0]);
      // That batch leaves the queue and is stuck in flight (the stalled broker never answers).
      expect(await until(() => sink.pending === 0, BROKER_WAIT_MS)).toBe(true);
      for (let i = 1; i <= 50; i++) {
        dock.push(status('dock', i));
        publish(sink, dock.at(-1)!);
        if (i % 10 === 0) {
          yard.push(status('yard', i));
          publish(sink, yard.at(-1)!);
          if (i < 50) publish(sink, alerts[i / 10]);
        }
      }
      await wait(200); // a send may start meanwhile: it changes none of the counts below
      expect(sink.stats.alertsDropped).toBe(0);
      expect(sink.stats.statusDropped).toBe(0);
      expect(sink.stats.statusSuperseded).toBeGreaterThanOrEqual(49 + 4);
      expect(sink.stats.statusBuffered).toBeLessThanOrEqual(3); // one per source waiting (+ one in flight at most)
    } finally {
      stallBroker(PORT, false);
      stalled = false;
    }
    expect(await until(() => sink.stats.alertsSent >= 1 + 5 && sink.stats.statusSent >= 3, BROKER_WAIT_MS)).toBe(true);
    await sink.close();
    expect(sink.stats.alertsDropped).toBe(0);

    const got = await readTopic(brokers, `${topic}.alerts`, 6);
    expect(ids(got)).toEqual([warm, ...alerts].map((m) => m.alert.id));
    // Exactly the statuses the broker acknowledged are in the topic (3, or 4 if the first flap
    // was in flight): read that many, however long the consumer takes to join.
    const statuses = (await readTopic(brokers, `${topic}.status`, sink.stats.statusSent)).map((g) => JSON.parse(g.value) as StatusMessage);
    expect(statuses).toHaveLength(sink.stats.statusSent);
    const reasons = (source: string) => statuses.filter((s) => s.source === source).map((s) => s.reason);
    // dock: the one sent before the outage (and the first flap, if it was in flight), then the latest.
    expect(reasons('dock')[0]).toBe('flap 0');
    expect(reasons('dock').at(-1)).toBe('flap 50');
    expect(reasons('dock').length).toBeLessThanOrEqual(3);
    expect(reasons('yard')).toEqual(['flap 50']);
    // onDelivered saw the delivered statuses (not the superseded ones).
    const ackedStatus = acked().filter((m) => m.type === 'status');
    expect(ackedStatus).toContain(dock.at(-1));
    expect(ackedStatus).toContain(yard.at(-1));
    expect(ackedStatus).not.toContain(dock[10]);
  }, TIMEOUT);
});

describe('Kafka sink with the outbox: alerts beyond the memory bounds wait on disk (broker stalled)', () => {
  it('none is dropped; all arrive in order once the broker is back, and memory holds at most the bound', async () => {
    const topic = uniqueTopic('spill');
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmp, 'outbox-')), maxBytes: 64 << 20, maxAgeMs: 3_600_000, fsync: false });
    // 20 alerts with 40 KB snapshots: 800 KB, over both bounds (5 alerts, 120 KB).
    const { sink } = makeSink(topic, { alertBufferSize: 5, alertBufferBytes: 120_000, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m) });
    await sink.start();
    stallBroker(PORT, true);
    stalled = true;
    const alerts = Array.from({ length: 20 }, (_, i) => alert('dock', `spill-${i}`, 40_000));
    try {
      for (const a of alerts) {
        const json = JSON.stringify(a);
        await outbox.append(a, json);
        sink.publish('alert', a.source, json, a);
      }
      expect(sink.stats.alertsDropped).toBe(0);
      expect(sink.stats.alertsSpilled).toBeGreaterThanOrEqual(20 - 5);
      expect(sink.stats.alertsBuffered).toBeLessThanOrEqual(5 + 1);
    } finally {
      stallBroker(PORT, false);
      stalled = false;
    }
    expect(await until(() => sink.stats.alertsSent === 20, BROKER_WAIT_MS)).toBe(true);
    expect(sink.stats.alertsOnDisk).toBe(0);
    await sink.close();
    expect(sink.stats.alertsDropped).toBe(0);
    expect(ids(await readTopic(brokers, `${topic}.alerts`, 20))).toEqual(alerts.map((m) => m.alert.id));
    expect(outbox.pendingAlerts).toBe(0); // every ack reached the journal
    await outbox.close();
  }, TIMEOUT);
});

describe('Kafka sink with the outbox: a long outage (no broker at all)', () => {
  it('the keys of alerts waiting on disk are no more than the outbox holds: those it dropped past its bound are forgotten too', async () => {
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmp, 'outbox-')), maxBytes: 256 * 1024, maxAgeMs: 3_600_000, fsync: false });
    const { sink } = makeSink(uniqueTopic('long'), { brokers: ['127.0.0.1:9'], alertBufferSize: 5, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m), closeTimeoutMs: 200 });
    await sink.start();
    // 3000 alerts of about 1 KB: the 256 KiB outbox keeps the newest ~200 and drops the rest (each logged).
    for (let i = 0; i < 3000; i++) {
      const a = alert('dock', `long-${i}`, 1000);
      const json = JSON.stringify(a);
      await outbox.append(a, json);
      sink.publish('alert', a.source, json, a);
    }
    expect(outbox.stats.evicted).toBeGreaterThan(2500);
    const onDisk = (sink as unknown as { spilled: { length: number } }).spilled.length;
    expect(onDisk).toBeLessThanOrEqual(outbox.pendingAlerts); // before: 2995 keys for ~200 alerts
    expect(sink.stats.alertsOnDisk).toBe(onDisk);
    await sink.close();
    await outbox.close();
  }, TIMEOUT);
});

describe('Kafka sink: shutdown while the broker is stalled (SIGSTOP)', () => {
  it('close() returns at closeTimeoutMs (virtual time) and reports the undelivered alerts', async () => {
    const topic = uniqueTopic('stall');
    const closeTimeoutMs = 3000;
    const { sink, logs } = makeSink(topic, { closeTimeoutMs });
    await sink.start();
    publish(sink, alert('dock', 'before'));
    expect(await until(() => sink.stats.alertsSent === 1, BROKER_WAIT_MS)).toBe(true);

    stallBroker(PORT, true);
    stalled = true;
    let closedAt: number | undefined;
    try {
      for (let i = 0; i < 3; i++) publish(sink, alert('dock', `stalled-${i}`));
      // The batch is in flight, waiting for an answer that does not come.
      expect(await until(() => sink.pending === 0, BROKER_WAIT_MS)).toBe(true);
      // From here the sink's clock (performance.now) and timers are virtual: close() must give
      // up on the stalled broker exactly at its deadline, whatever this machine's load. (The
      // request already in flight keeps kafkajs's real 10 s timeout, which virtual time never
      // reaches; before the deadline existed, close() waited for it: 60 s with retries.)
      expect(sink.stats.alertsSent).toBe(1); // the stalled broker acknowledged none of the three
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      const t0 = performance.now();
      const closing = sink.close().then(() => (closedAt = performance.now() - t0));
      await vi.advanceTimersByTimeAsync(closeTimeoutMs - 1);
      expect(closedAt).toBeUndefined(); // still trying to deliver until the deadline
      await vi.advanceTimersByTimeAsync(1 + 250); // the deadline, then at most 250 ms for the disconnect
      await Promise.race([closing, new Promise((r) => setImmediate(r))]); // settled by now (or the checks below fail)
    } finally {
      vi.useRealTimers();
      stallBroker(PORT, false);
      stalled = false;
    }
    console.log(`close() with a stalled broker returned after ${closedAt} ms of virtual time (closeTimeoutMs ${closeTimeoutMs})`);
    expect(closedAt).toBeDefined();
    expect(closedAt).toBeGreaterThanOrEqual(closeTimeoutMs);
    expect(closedAt).toBeLessThanOrEqual(closeTimeoutMs + 250);
    expect(sink.stats.alertsDropped).toBe(3);
    expect(logs.some((l) => l.level === 'error' && /3 alerts could not be delivered before shutdown/.test(l.msg))).toBe(true);
  }, TIMEOUT);
});
