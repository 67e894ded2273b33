import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { KafkaSink, type KafkaSinkOptions } from '../../src/sinks/kafka.js';
import type { AlertMessage, Message } from '../../src/sinks/message.js';
import { Outbox } from '../../src/sinks/outbox.js';
import { testAlert } from '../helpers/kafka.js';

/**
 * An alert sent without its embedded snapshot (too large with it), against a scripted producer
 * (no broker): what is counted, and what memory it holds.
 */
const tmp = mkdtempSync(join(tmpdir(), 'argus-kafka-left-out-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Logged {
  msg: string;
  fields?: Record<string, unknown>;
  level: string;
}

/** A sink whose every producer is `sendBatch`, with its topics taken as checked. */
function scripted(sendBatch: (req: { topicMessages: { topic: string; messages: { key: string; value: string }[] }[] }) => Promise<unknown>, over: Partial<KafkaSinkOptions> = {}) {
  const logs: Logged[] = [];
  const sink = new KafkaSink({
    ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'] }),
    ssl: undefined,
    closeTimeoutMs: 200,
    log: (msg, fields, level = 'info') => logs.push({ msg, fields, level }),
    ...over,
  });
  const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch };
  Object.assign(sink as unknown as object, { producer, makeProducer: () => producer, topicsChecked: true });
  return { sink, logs };
}

function publish(sink: KafkaSink, m: Message): void {
  sink.publish(m.type === 'alert' ? 'alert' : m.type, m.source, JSON.stringify(m), m);
}

const tooLarge = () => Object.assign(new Error('The request included a message larger than the max message size the server will accept'), { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE' });

/** Runs until `cond` in virtual time (the sink's linger and backoff are setTimeout's). */
async function inVirtualTime(cond: () => boolean, ms: number): Promise<boolean> {
  for (let t = 0; t < ms && !cond(); t += 10) await vi.advanceTimersByTimeAsync(10);
  return cond();
}

describe('Kafka sink: alerts sent without their snapshot are counted once, as what became of them', () => {
  it('an alert refused with and without its snapshot is parked, not also counted as delivered without it (snapshotsLeftOut, argus_kafka_undeliverable_total{outcome="snapshot_left_out"})', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    try {
      // A broker that takes no record over 10 000 bytes (a topic's max.message.bytes).
      const acked: string[] = [];
      const { sink } = scripted(async ({ topicMessages }) => {
        const msgs = topicMessages.flatMap((t) => t.messages);
        if (msgs.some((m) => m.value.length > 10_000)) throw tooLarge();
        for (const m of msgs) acked.push((JSON.parse(m.value) as AlertMessage).alert.id);
        return [];
      });
      const wordy = testAlert('dock', 'wordy', 20_000);
      wordy.alert.message = 'x'.repeat(30_000); // too large without its picture too
      publish(sink, testAlert('dock', 'pictured', 20_000)); // too large only with its picture
      publish(sink, wordy);
      publish(sink, testAlert('dock', 'small'));
      expect(await inVirtualTime(() => sink.stats.alertsSent === 2 && sink.stats.parked === 1, 60_000)).toBe(true);
      expect(acked).toEqual(['pictured', 'small']);
      // One sent without its picture; one parked (with it): each counted as what became of it.
      expect(sink.stats).toMatchObject({ alertsSent: 2, snapshotsLeftOut: 1, parked: 1, alertsParked: 1 });
      await sink.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Kafka sink with the outbox: the pictures of alerts sent without them are in the memory bound', () => {
  it('alerts held in flight with their original JSON (to park it, picture and all, if they are refused) count it: new alerts wait on disk past alertBufferBytes', async () => {
    const dir = mkdtempSync(join(tmp, 'outbox-'));
    const outbox = await Outbox.open({ dir, maxBytes: 64 << 20, maxAgeMs: 3_600_000, fsync: false });
    // A broker that never answers: the first request stays in flight.
    let requests = 0;
    let fail!: (e: Error) => void;
    const { sink } = scripted(
      () => {
        requests++;
        return new Promise((_, reject) => (fail = reject));
      },
      { spill: outbox.spill(), maxMessageBytes: 50_000, alertBufferBytes: 300_000, lingerMs: 0 },
    );
    const a = Array.from({ length: 10 }, (_, i) => testAlert('dock', `a${i}`, 100_000));
    const put = async (m: AlertMessage) => {
      const json = JSON.stringify(m);
      await outbox.append(m, json);
      sink.publish('alert', m.source, json, m);
    };
    await put(a[0]);
    // Taken into a request without its picture (over maxMessageBytes), in flight: its ~100 KB JSON as published is held, to be parked as such if the stripped one is refused too.
    await vi.waitFor(() => expect(requests).toBe(1));
    expect(sink.stats.alertsBuffered).toBe(1);
    for (const m of a.slice(1)) await put(m);
    // 300 KB of room: a0 (its ~100 KB as published) and a1 (~100 KB) in memory; a third would take it past the bound.
    expect(sink.stats.alertsBuffered).toBe(2);
    expect(sink.stats.alertsOnDisk).toBe(8);
    fail(Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9'), { name: 'KafkaJSConnectionError' }));
    await sink.close();
    await outbox.close();
  });
});

describe('Kafka sink: the check of the alerts topic cleanup policy at start (scripted client)', () => {
  it('is not waited for: a DescribeConfigs answered late neither holds the start (startWaitMs, "no answer") nor the connection; a compacted topic is still said when the answer comes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] });
    try {
      const logs: Logged[] = [];
      const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'] }), ssl: undefined, closeTimeoutMs: 200, startWaitMs: 3000, log: (msg, fields, level = 'info') => logs.push({ msg, fields, level }) });
      const topics = ['argus.detections', 'argus.alerts', 'argus.status'];
      // The broker answers the topic list at once, the DescribeConfigs only when the test says (a slow controller).
      const answers = new Map<string, (r: unknown) => void>();
      let disconnected = false;
      const admin = {
        connect: async () => undefined,
        disconnect: async () => void (disconnected = true),
        listTopics: async () => topics,
        createTopics: async () => true,
        describeConfigs: ({ resources }: { resources: { name: string }[] }) => new Promise((r) => answers.set(resources.map((x) => x.name).join(), r)),
      };
      const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch: async () => [] };
      Object.assign(sink as unknown as object, { kafka: { admin: () => admin, producer: () => producer }, producer, makeProducer: () => producer });
      let started = false;
      void sink.start().then(() => (started = true));
      for (let t = 0; t < 100 && !started; t += 10) await vi.advanceTimersByTimeAsync(10);
      expect(started).toBe(true);
      expect(sink.stats.connected).toBe(true);
      expect(logs.filter((l) => /no answer/.test(l.msg))).toEqual([]);
      // The answer, later: said then, and the admin connection let go.
      answers.get('argus.alerts')!({ resources: [{ configEntries: [{ configName: 'cleanup.policy', configValue: 'compact' }] }] });
      answers.get('argus.status')!({ resources: [{ configEntries: [{ configName: 'cleanup.policy', configValue: 'compact' }] }] });
      await vi.advanceTimersByTimeAsync(10);
      expect(logs.filter((l) => /is compacted/.test(l.msg)).map((l) => l.level)).toEqual(['error']);
      expect(disconnected).toBe(true);
      await sink.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Kafka sink: the cleanup-policy check, where the broker lets argus describe some topics only (scripted client)', () => {
  it("says a compacted alerts topic though the status topic's configs may not be described (an ACL per topic): one DescribeConfigs for both failed as a whole, and the alerts topic's error went unsaid", async () => {
    const logs: Logged[] = [];
    const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'] }), ssl: undefined, closeTimeoutMs: 200, log: (msg, fields, level = 'info') => logs.push({ msg, fields, level }) });
    const asked: string[][] = [];
    const admin = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => ['argus.detections', 'argus.alerts', 'argus.status'],
      createTopics: async () => true,
      // As kafkajs answers (protocol/requests/describeConfigs/v0/response.js): a request any of whose
      // resources has an error is thrown as that error, the others' answers with it.
      describeConfigs: async ({ resources }: { resources: { name: string }[] }) => {
        asked.push(resources.map((r) => r.name));
        if (resources.some((r) => r.name === 'argus.status')) throw Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), { type: 'TOPIC_AUTHORIZATION_FAILED', retriable: false });
        return { resources: resources.map((r) => ({ resourceName: r.name, configEntries: [{ configName: 'cleanup.policy', configValue: 'compact' }] })) };
      },
    };
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch: async () => [] };
    Object.assign(sink as unknown as object, { kafka: { admin: () => admin, producer: () => producer }, producer, makeProducer: () => producer });
    await sink.start();
    await vi.waitFor(() => expect(asked.flat().sort()).toEqual(['argus.alerts', 'argus.status']));
    await vi.waitFor(() => expect(logs.filter((l) => /is compacted/.test(l.msg)).map((l) => [l.level, l.fields?.topic])).toEqual([['error', 'argus.alerts']]));
    // The status topic's policy is not known: nothing said of it.
    expect(logs.filter((l) => /is not compacted/.test(l.msg))).toEqual([]);
    await sink.close();
  });
});

describe('Kafka sink: the topics argus creates (scripted client)', () => {
  it('get their cleanup policy said, not the broker default: the alerts and detections topics delete, the status topic compact (a broker whose default is compact made an alerts topic that kept only each camera\'s latest alert)', async () => {
    const created: { topic: string; configEntries?: { name: string; value: string }[] }[] = [];
    const admin = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => [],
      createTopics: async (r: { topics: typeof created }) => void created.push(...r.topics),
      fetchTopicMetadata: async ({ topics }: { topics: string[] }) => ({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 0 }] })) }),
      describeConfigs: async () => ({ resources: [] }),
    };
    const producer = { connect: async () => undefined, disconnect: async () => undefined, on: () => undefined, events: { DISCONNECT: 'producer.disconnect' }, sendBatch: async () => [] };
    for (const [topics, want] of [
      [{ detections: 'd', alerts: 'a', status: 's' }, { d: 'delete', a: 'delete', s: 'compact' }],
      [{ detections: 'd', alerts: 'shared', status: 'shared' }, { d: 'delete', shared: 'delete' }],
    ] as const) {
      created.length = 0;
      const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], topics }), ssl: undefined, closeTimeoutMs: 200 });
      Object.assign(sink as unknown as object, { kafka: { admin: () => admin, producer: () => producer }, producer, makeProducer: () => producer });
      await sink.start();
      await sink.close();
      expect(Object.fromEntries(created.map((t) => [t.topic, t.configEntries?.find((c) => c.name === 'cleanup.policy')?.value]))).toEqual(want);
    }
  });
});

describe('Kafka sink with the outbox: an alert an earlier run left undelivered, replayed', () => {
  it('goes without the earlier run\'s picture url also when it waited on disk (spilled) before it was sent, as one sent from memory does', async () => {
    const dir = mkdtempSync(join(tmp, 'outbox-replay-'));
    const earlier = await Outbox.open({ dir, maxBytes: 64 << 20, maxAgeMs: 3_600_000, fsync: false });
    // Taken by Kafka without its picture in the earlier run, which served it at its url: journaled so.
    const ids = ['r0', 'r1', 'r2', 'r3'];
    for (const id of ids) {
      const m = testAlert('dock', id);
      (m.alert as unknown as Record<string, unknown>).snapshotOmitted = { reason: 'too_large', detail: 'over maxMessageBytes', url: `http://127.0.0.1:8080/api/snapshot?id=${id}` };
      await earlier.append(m, JSON.stringify(m));
    }
    await earlier.close();
    const outbox = await Outbox.open({ dir, maxBytes: 64 << 20, maxAgeMs: 3_600_000, fsync: false });
    const sent: string[] = [];
    const { sink } = scripted(
      async ({ topicMessages }) => {
        for (const t of topicMessages) for (const m of t.messages) sent.push(m.value);
        return [];
      },
      { spill: outbox.spill(), alertBufferSize: 1, lingerMs: 0, onDelivered: (m) => outbox.ack(m) },
    );
    const { replayedAlertJson } = await import('../../src/analytics/published.js');
    const { recordMessage } = await import('../../src/sinks/outbox.js');
    // As run.ts replays them: more than the memory holds (alertBufferSize 1), the rest wait on disk.
    for (const r of outbox.takeRecovered()) sink.publish('alert', r.source, replayedAlertJson(r.value), recordMessage(r), true);
    await vi.waitFor(() => expect(sent.length).toBe(ids.length), { timeout: 20_000 });
    for (const v of sent) {
      const omitted = (JSON.parse(v) as { alert: { snapshotOmitted: { url?: string; detail: string } } }).alert.snapshotOmitted;
      expect(omitted.url).toBeUndefined();
      expect(omitted.detail).toMatch(/held by the argus run that raised the alert, which has ended/);
    }
    await sink.close();
    await outbox.close();
  });
});
