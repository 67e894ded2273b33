/**
 * A produce request the broker wrote but whose answer was lost (a connection cut, a timeout) is
 * sent again as it was: the idempotent producer's sequence numbers were rolled back by kafkajs,
 * and the broker takes an unchanged request for the duplicate it is. Put back in the queue
 * before, it went out again with the alerts published meanwhile: the broker refused it
 * (OUT_OF_ORDER_SEQUENCE_NUMBER), a fresh producer sent it all again, and the alerts written the
 * first time were in the topic twice, in one run. Real broker, behind a proxy that lets the
 * produce requests through and loses their answers.
 */
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import { BROKER_TIMEOUT_MS, readTopicUntil, testAlert, testBrokers, uniqueTopic } from '../helpers/kafka.js';

let brokers: string[];
beforeAll(async () => {
  brokers = await testBrokers();
}, BROKER_TIMEOUT_MS);

/** Bound on a wait for the broker (a JVM on a busy machine is slow): it only ends a hang. */
const BROKER_WAIT_MS = 180_000;

const alert = (id: string): AlertMessage => testAlert('gate', id);

/**
 * A TCP proxy to the broker. While `lose` holds, a produce request (API key 0) goes through to
 * the broker, its answer is swallowed, and the connection is cut 300 ms later.
 */
async function answerLosingProxy(target: string) {
  const state = { lose: false, lost: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((c) => {
    const [host, port] = target.split(':');
    const u = connect(Number(port), host);
    sockets.add(c);
    sockets.add(u);
    let swallow = false;
    let pending = Buffer.alloc(0);
    const cut = () => {
      c.destroy();
      u.destroy();
    };
    c.on('error', cut);
    u.on('error', cut);
    c.on('close', cut);
    u.on('close', cut);
    c.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      // Whole requests only: [int32 size][int16 api key]…
      while (pending.length >= 6 && pending.length >= 4 + pending.readInt32BE(0)) {
        const size = 4 + pending.readInt32BE(0);
        const frame = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (!swallow) u.write(frame);
        if (frame.readInt16BE(4) === 0 && state.lose && !swallow) {
          swallow = true;
          state.lost++;
          setTimeout(cut, 300);
        }
      }
    });
    u.on('data', (d: Buffer) => {
      if (!swallow) c.write(d);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    state,
    at: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

/**
 * Every connection of `sink` through the proxy at `at`, also those to the broker the metadata
 * names (its own address): the sink's Kafka client as it makes it (src/sinks/kafka.ts), with a
 * socket factory.
 */
function throughProxy(sink: KafkaSink, at: string): void {
  const internals = sink as unknown as { kafka: Kafka; producer: unknown; makeProducer: () => unknown };
  const [, proxyPort] = at.split(':');
  internals.kafka = new Kafka({
    clientId: 'argus-retry-test',
    brokers: [at],
    connectionTimeout: 3000,
    requestTimeout: 5000,
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    socketFactory: ({ onConnect }) => connect(Number(proxyPort), '127.0.0.1', onConnect),
  });
  internals.producer = internals.makeProducer();
}

describe('Kafka sink: a request written by the broker whose answer was lost', () => {
  it('is sent again as it was, so the broker knows it for a duplicate: alerts published meanwhile go after it, and each alert is in the topic once', async () => {
    const proxy = await answerLosingProxy(brokers[0]);
    const topic = uniqueTopic('retry');
    const logs: string[] = [];
    let sink!: KafkaSink;
    const publish = (id: string) => {
      const m = alert(id);
      sink.publish('alert', m.source, JSON.stringify(m), m);
    };
    sink = new KafkaSink({
      ...KafkaSinkSchema.parse({ brokers: [proxy.at], topics: { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` } }),
      ssl: undefined,
      lingerMs: 5,
      closeTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      log: (msg) => {
        logs.push(msg);
        // The first failure: alerts published now are in the queue when the request is tried
        // again, and the answers are no longer lost.
        if (msg.startsWith('kafka: publishing failed') && proxy.state.lose) {
          proxy.state.lose = false;
          for (const id of ['a4', 'a5', 'a6']) publish(id);
        }
      },
    });
    throughProxy(sink, proxy.at);
    try {
      await sink.start();
      publish('a0');
      expect(await until(() => sink.stats.alertsSent === 1, BROKER_WAIT_MS)).toBe(true);
      proxy.state.lose = true;
      for (const id of ['a1', 'a2', 'a3']) publish(id);
      expect(await until(() => sink.stats.alertsSent === 7, BROKER_WAIT_MS)).toBe(true);
      expect(proxy.state.lost).toBeGreaterThan(0);
      expect(sink.stats.failures).toBeGreaterThan(0);
      // Every message of the topic: read until more than the 7 came (a duplicate), or 10 s after the 7 acks.
      const all = await readTopicUntil(brokers, `${topic}.alerts`, (v) => v.length > 7, 10_000);
      // Before: a1, a2 and a3 twice (the regrouped retry was refused as out of order, and a fresh producer sent them again).
      expect(all.map((v) => JSON.parse(v.value).alert.id as string)).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
      expect(logs.filter((l) => /starting a new producer/.test(l))).toEqual([]);
    } finally {
      await sink.close();
      proxy.close();
    }
  }, 4 * BROKER_WAIT_MS);
});

describe('Kafka sink: a status request written by the broker whose answer was lost, on the topic the alerts share (real broker)', () => {
  it('is sent again before the alert published meanwhile: the alert is in the topic, not answered as the status\'s duplicate', async () => {
    const proxy = await answerLosingProxy(brokers[0]);
    const topic = uniqueTopic('shared');
    let sink!: KafkaSink;
    const publishStatus = (state: string) => {
      const m = { type: 'status', version: 1, source: 'gate', state, previous: 'starting', reason: 'r', at: Date.now(), attempt: 0, published: Date.now() };
      sink.publish('status', 'gate', JSON.stringify(m), m as never);
    };
    sink = new KafkaSink({
      ...KafkaSinkSchema.parse({ brokers: [proxy.at], topics: { detections: `${topic}.detections`, alerts: topic, status: topic } }),
      ssl: undefined,
      lingerMs: 5,
      closeTimeoutMs: 5000,
      requestTimeoutMs: 5000,
      log: (msg) => {
        // The status request failed (written, its answer lost): an alert of the same camera comes now.
        if (msg.startsWith('kafka: publishing failed') && proxy.state.lose) {
          proxy.state.lose = false;
          const m = alert('a1');
          sink.publish('alert', m.source, JSON.stringify(m), m);
        }
      },
    });
    throughProxy(sink, proxy.at);
    try {
      await sink.start();
      publishStatus('s0');
      expect(await until(() => sink.stats.statusSent === 1, BROKER_WAIT_MS)).toBe(true);
      proxy.state.lose = true;
      publishStatus('s1');
      expect(await until(() => sink.stats.alertsSent === 1 && sink.stats.statusSent === 2, BROKER_WAIT_MS)).toBe(true);
      expect(proxy.state.lost).toBeGreaterThan(0);
      const all = await readTopicUntil(brokers, topic, (v) => v.length >= 3, 10_000);
      // Before: s0, s1, s1. The alert went first with the status's rolled-back sequence number, was
      // answered as its duplicate (acked: alertsSent 1) and never written; the status then went again.
      expect(all.map((v) => { const m = JSON.parse(v.value); return m.type === 'alert' ? m.alert.id : m.state; })).toEqual(['s0', 's1', 'a1']);
    } finally {
      await sink.close();
      proxy.close();
    }
  }, 4 * BROKER_WAIT_MS);
});

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  return cond();
}

describe('Kafka sink: failed requests of two kinds waiting at once (scripted producer)', () => {
  it('a detections request that fails while a failed alert request waits for its turn leaves that one waiting: the alert is sent once the broker answers', async () => {
    const kinds: string[] = [];
    let calls = 0;
    let sink!: KafkaSink;
    const refused = () => Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' });
    const sendBatch = async ({ topicMessages }: { topicMessages: { topic: string }[] }) => {
      const kind = topicMessages[0].topic.endsWith('.alerts') ? 'alert' : 'detections';
      kinds.push(kind);
      if (calls++ === 0) {
        // The alert request fails; a frame's detections come meanwhile, and go first next time (the failed kind goes last).
        const d = { type: 'detections', version: 1, source: 'gate', seq: 1, stamps: { emitted: Date.now() } };
        sink.publish('detections', 'gate', JSON.stringify(d), d as never);
        throw refused();
      }
      if (calls === 2) throw refused(); // the detections request fails too
      return [];
    };
    sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], topics: { detections: 'd', alerts: 'd.alerts', status: 'd.status' } }), ssl: undefined, lingerMs: 1, closeTimeoutMs: 500 });
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch };
    Object.assign(sink as unknown as object, { producer, makeProducer: () => producer, topicsChecked: true });
    const a = alert('waits');
    sink.publish('alert', a.source, JSON.stringify(a), a);
    expect(await until(() => sink.stats.alertsSent === 1, 30_000)).toBe(true); // before: the detections' failure dropped the waiting alert request
    expect(kinds).toEqual(['alert', 'detections', 'alert']);
    expect(sink.stats).toMatchObject({ alertsDropped: 0, alertsBuffered: 0 });
    await sink.close();
  }, 60_000);
});

describe('Kafka sink: a failed request waiting while another kind shares its topic (scripted producer)', () => {
  it('is sent again before a request of the other kind to that topic: sent in between, that one would have the failed request\'s sequence numbers', async () => {
    // kafkajs rolls back the sequence numbers of a failed request's partitions. A status request
    // the broker wrote (its answer lost) and an alert request of the same source (same key, same
    // partition of the shared topic) sent before it came again got that request's sequence
    // numbers: the broker takes it for the duplicate of what it wrote (one record each: the same
    // first and last sequence) and answers with that one's offset. The alert was acked, forgotten
    // by the outbox, and never written.
    const requests: string[][] = [];
    let sink!: KafkaSink;
    const refused = () => Object.assign(new Error('Connection error: read ECONNRESET'), { name: 'KafkaJSConnectionError' });
    const sendBatch = async ({ topicMessages }: { topicMessages: { topic: string; messages: { value: string }[] }[] }) => {
      requests.push(topicMessages.flatMap((t) => t.messages.map((m) => `${t.topic}:${(JSON.parse(m.value) as { type: string }).type}`)));
      if (requests.length === 1) {
        // The status request's answer is lost; an alert of the same camera comes meanwhile.
        const a = alert('after-status');
        sink.publish('alert', a.source, JSON.stringify(a), a);
        throw refused();
      }
      return [];
    };
    sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], topics: { detections: 'd', alerts: 'events', status: 'events' } }), ssl: undefined, lingerMs: 1, closeTimeoutMs: 500 });
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch };
    Object.assign(sink as unknown as object, { producer, makeProducer: () => producer, topicsChecked: true });
    const s = { type: 'status', version: 1, source: 'gate', state: 'streaming', published: Date.now() };
    sink.publish('status', 'gate', JSON.stringify(s), s as never);
    expect(await until(() => sink.stats.alertsSent === 1 && sink.stats.statusSent === 1, 30_000)).toBe(true);
    // Before: the status request, the alert (the failed kind goes last), then the status again.
    expect(requests).toEqual([['events:status'], ['events:status'], ['events:alert']]);
    await sink.close();
  }, 60_000);
});

describe('Kafka sink: a failed detections request on a topic the alerts share (scripted producer)', () => {
  it('is dropped with its producer: the alert request after it goes out under a new producer id, not with the sequence numbers kafkajs rolled back', async () => {
    // A detections request is not sent again (dropped, counted). One the broker wrote (its answer
    // lost) left its sequence numbers rolled back, and the next request to its partitions reused
    // them: with `topics.detections` and `topics.alerts` the same, an alert of that camera (one
    // record after one record) was answered as the duplicate of those detections, acked, and never written.
    const requests: string[] = [];
    let producers = 0;
    let sink!: KafkaSink;
    const refused = () => Object.assign(new Error('Connection error: read ECONNRESET'), { name: 'KafkaJSConnectionError' });
    const makeProducer = () => {
      const id = ++producers;
      const sendBatch = async ({ topicMessages }: { topicMessages: { topic: string; messages: { value: string }[] }[] }) => {
        requests.push(`${(JSON.parse(topicMessages[0].messages[0].value) as { type: string }).type}@${id}`);
        if (requests.length === 1) {
          const a = alert('after-detections');
          sink.publish('alert', a.source, JSON.stringify(a), a);
          throw refused();
        }
        return [];
      };
      return { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch };
    };
    sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], topics: { detections: 'events', alerts: 'events', status: 'events.status' } }), ssl: undefined, lingerMs: 1, closeTimeoutMs: 500 });
    Object.assign(sink as unknown as object, { producer: makeProducer(), makeProducer, topicsChecked: true });
    const d = { type: 'detections', version: 1, source: 'gate', seq: 1, stamps: { emitted: Date.now() } };
    sink.publish('detections', 'gate', JSON.stringify(d), d as never);
    expect(await until(() => sink.stats.alertsSent === 1, 30_000)).toBe(true);
    // Before: ['detections@1', 'alert@1'].
    expect(requests).toEqual(['detections@1', 'alert@2']);
    expect(sink.stats.dropped).toBe(1);
    await sink.close();
  }, 60_000);
});

describe('Kafka sink: topics shared by two kinds of message', () => {
  it('are created once: each topic named once in the request (kafkajs refuses a topic named twice, and no topic was ever created)', async () => {
    const created: string[][] = [];
    const admin = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => [],
      createTopics: async ({ topics }: { topics: { topic: string }[] }) => {
        const names = topics.map((t) => t.topic);
        // As kafkajs's admin.createTopics does.
        if (new Set(names).size !== names.length) throw new Error('Invalid topics array, it cannot have multiple entries for the same topic');
        created.push(names);
        return true;
      },
      // Each partition led at once (createTopicsReady waits for that).
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 0 }] })) }),
    };
    const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], topics: { detections: 'events.detections', alerts: 'events', status: 'events' } }), ssl: undefined, closeTimeoutMs: 500, startWaitMs: 1000 });
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch: async () => [] };
    Object.assign(sink as unknown as object, { producer, makeProducer: () => producer, kafka: { admin: () => admin } });
    await sink.start();
    // Before: "Invalid topics array…" at start and at every retry, and every request failed with UNKNOWN_TOPIC_OR_PARTITION.
    expect(created).toEqual([['events.detections', 'events']]);
    expect((sink as unknown as { topicsChecked: boolean }).topicsChecked).toBe(true);
    await sink.close();
  });
});
