import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import type { Message } from '../../src/sinks/message.js';
import { KafkaSink } from '../../src/sinks/kafka.js';

// The sink's outage bookkeeping over a stand-in for kafkajs (its producer and admin client):
// which requests fail is the test's to say, with kafkajs's own error names and types.
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
const kafkaError = (msg: string, type?: string, name = 'KafkaJSProtocolError') => Object.assign(new Error(msg), { name, type });

function stubSink(over: Record<string, unknown>, send: (topics: string[]) => void, topics: () => string[]) {
  const logs: { msg: string; level: string }[] = [];
  const counts = { admin: 0 };
  const sink = new KafkaSink({
    ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:1'], topics: { detections: 't', alerts: 't.alerts', status: 't.status' }, ...over }),
    ssl: undefined,
    closeTimeoutMs: 500,
    lingerMs: 5,
    log: (msg: string, _f?: unknown, level = 'info') => logs.push({ msg, level }),
    onDelivered: () => {},
  } as unknown as ConstructorParameters<typeof KafkaSink>[0]);
  const producer = () => ({ events: { DISCONNECT: 'd' }, on() {}, connect: async () => {}, disconnect: async () => {}, sendBatch: async (b: { topicMessages: { topic: string }[] }) => send(b.topicMessages.map((t) => t.topic)) });
  const inner = sink as unknown as { kafka: unknown; producer: unknown };
  inner.kafka = {
    producer,
    admin: () => ({ connect: async () => void counts.admin++, disconnect: async () => {}, listTopics: async () => topics(), createTopics: async () => {} }),
  };
  inner.producer = producer();
  return { sink, logs, counts };
}
const alert = (id: string) => ({ type: 'alert', source: 'cam', alert: { id }, stamps: { emitted: Date.now() } }) as unknown as Message;
const detections = (seq: number) => ({ type: 'detections', source: 'cam', seq, stamps: { emitted: Date.now() } }) as unknown as Message;
const publish = (sink: KafkaSink, m: Message) => sink.publish(m.type, (m as { source: string }).source, JSON.stringify(m), m);

describe('Kafka sink: the end of an outage, and a topic that may not be created', () => {
  it('an outage ends when what is left to send goes through: a camera whose last detections failed and that sends none after does not keep it open ("broker back" said, connected again), and the next outage is said again', async () => {
    let down = false;
    const { sink, logs } = stubSink({}, () => {
      if (down) throw kafkaError('Connection error: ECONNREFUSED', undefined, 'KafkaJSConnectionError');
    }, () => ['t', 't.alerts', 't.status']);
    await sink.start();
    down = true;
    publish(sink, detections(1)); // the camera's last frame
    await wait(500);
    publish(sink, alert('a1'));
    await wait(1000);
    down = false; // the broker is back; only alerts from now on
    const end = Date.now() + 20_000;
    while (!logs.some((l) => l.msg.includes('broker back')) && Date.now() < end) await wait(100);
    expect(logs.some((l) => l.msg.includes('broker back'))).toBe(true);
    expect((sink as unknown as { stats: { connected: boolean } }).stats.connected).toBe(true);
    const before = logs.length;
    down = true; // a second outage, with the same reason
    publish(sink, alert('a2'));
    const end2 = Date.now() + 20_000;
    while (!logs.slice(before).some((l) => /publishing failed/.test(l.msg)) && Date.now() < end2) await wait(100);
    expect(logs.slice(before).some((l) => /publishing failed/.test(l.msg))).toBe(true);
    down = false;
    await sink.close();
  }, 60_000);

  it('createTopics: false and the alerts topic deleted: the check is not repeated at every failed request (at most once per 5 s) and its error is said once', async () => {
    let deleted = false;
    const { sink, logs, counts } = stubSink({ createTopics: false }, (t) => {
      if (deleted && t.includes('t.alerts')) throw kafkaError('This server does not host this topic-partition', 'UNKNOWN_TOPIC_OR_PARTITION');
    }, () => (deleted ? ['t', 't.status'] : ['t', 't.alerts', 't.status']));
    await sink.start();
    const admin0 = counts.admin;
    deleted = true;
    publish(sink, alert('x1'));
    await wait(11_000);
    expect(counts.admin - admin0).toBeGreaterThanOrEqual(2); // checked again after the error, and again 5 s later…
    expect(counts.admin - admin0).toBeLessThanOrEqual(3); // …within TOPICS_RETRY_MS of the last check at the soonest (6 in 15 s before)
    expect(logs.filter((l) => l.msg.includes('createTopics is false'))).toHaveLength(1);
    await sink.close();
  }, 60_000);
});
