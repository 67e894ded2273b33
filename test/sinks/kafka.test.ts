import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaSinkSchema, PipelineSchema, type PipelineConfig } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { isArgusError } from '../../src/core/errors.js';
import type { Frame } from '../../src/core/frame.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { MODEL_RUN_TIMEOUT_MS } from '../helpers/cli.js';
import { broker, BROKER_TIMEOUT_MS, createTopicsReady, readTopic, testBrokers, uniqueTopic } from '../helpers/kafka.js';
import { assertValidMessage } from '../helpers/schema.js';
import { testPort } from '../helpers/ports.js';

let brokers: string[];
beforeAll(async () => {
  brokers = await testBrokers();
}, BROKER_TIMEOUT_MS);

const pipeline = (kafka: Record<string, unknown>, source: Record<string, unknown> = {}): PipelineConfig =>
  PipelineSchema.parse({ sources: [{ id: 'lobby', uri: PERSON_VIDEO, rate: 'fast', ...source }], model: { warmupRuns: 1 }, sinks: { kafka } });

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `cond` until it holds; `ms` only bounds a hang (the caller asserts the result). */
async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await wait(50);
  return cond();
}

describe('Kafka sink against a real broker', () => {
  it('publishes a valid, ordered detections message for every processed frame', async () => {
    const topic = uniqueTopic('det');
    const summary = await runPipeline(pipeline({ brokers, topics: { detections: topic, alerts: `${topic}.alerts` } }), { maxFrames: 120, status: false });
    expect(summary.frames).toBe(120);
    expect(summary.kafka).toMatchObject({ sent: 120, dropped: 0 });
    const got = await readTopic(brokers, topic, 120);
    expect(got).toHaveLength(120);
    const msgs = got.map((g) => JSON.parse(g.value));
    for (const [i, m] of msgs.entries()) {
      assertValidMessage(m);
      expect(got[i].key).toBe('lobby');
      expect(m.stamps.published).toBeGreaterThanOrEqual(m.stamps.emitted);
      expect(m.stamps.emitted).toBeGreaterThanOrEqual(m.stamps.captured);
      expect(m.model).toEqual({ name: 'yolox-nano', version: '0.1.1rc0' });
      expect(m.frame).toEqual({ width: 768, height: 432 });
    }
    // One key → one partition → the source's order is kept.
    expect(new Set(got.map((g) => g.partition)).size).toBe(1);
    expect(msgs.map((m) => m.seq)).toEqual([...Array(120).keys()]);
    expect(msgs.some((m) => m.detections.some((d: { label: string }) => d.label === 'person'))).toBe(true);
  }, 2 * MODEL_RUN_TIMEOUT_MS);

  it('a missing topic with createTopics false is an error naming it', async () => {
    const topic = uniqueTopic('absent');
    const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, createTopics: false, topics: { detections: topic, alerts: 'argus.alerts' } }), ssl: undefined, closeTimeoutMs: 1000, startWaitMs: 120_000 });
    const e = await sink.start().catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_SINK_TOPIC')).toBe(true);
    expect((e as Error).message).toContain(`"${topic}"`);
    expect((e as Error).message).toMatch(/not exist on .* and sinks\.kafka\.createTopics is false/);
    await sink.close();
  });

  it('creates the status topic compacted (each camera\'s latest state stays), the detections and alerts topics with the broker\'s delete policy', async () => {
    const topic = uniqueTopic('policy');
    const topics = { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` };
    const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, topics }), ssl: undefined, closeTimeoutMs: 1000, startWaitMs: 120_000 });
    await sink.start();
    await sink.close();
    const { Kafka, ConfigResourceTypes, logLevel } = await import('kafkajs');
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { resources } = await admin.describeConfigs({ includeSynonyms: false, resources: Object.values(topics).map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['cleanup.policy'] })) });
      const policy = Object.fromEntries(resources.map((r) => [r.resourceName, r.configEntries[0]?.configValue]));
      expect(policy).toEqual({ [topics.detections]: 'delete', [topics.alerts]: 'delete', [topics.status]: 'compact' });
    } finally {
      await admin.disconnect();
    }
  }, BROKER_TIMEOUT_MS);

  it('an alerts topic someone made compacted is said at start (VAP_ERR_ALERT_UNDELIVERED): the broker keeps only the latest alert of each camera; a topic with the delete policy is not', async () => {
    const topic = uniqueTopic('compacted');
    const topics = { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` };
    const { Kafka, logLevel } = await import('kafkajs');
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await createTopicsReady(admin, { topics: [{ topic: topics.alerts, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
    await admin.disconnect();
    for (const [alerts, said] of [[topics.alerts, true], [`${topic}.other`, false]] as const) {
      const logs: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
      const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, topics: { ...topics, alerts } }), ssl: undefined, closeTimeoutMs: 1000, startWaitMs: 120_000, log: (msg, fields, level) => logs.push({ msg, fields, level }) });
      await sink.start();
      await sink.close();
      const found = logs.filter((l) => /is compacted/.test(l.msg));
      expect(found, alerts).toEqual(said ? [{ level: 'error', msg: expect.stringContaining(`the alerts topic "${alerts}" is compacted (cleanup.policy compact): the broker keeps only the latest alert of each camera`), fields: { topic: alerts, cleanupPolicy: 'compact', code: 'VAP_ERR_ALERT_UNDELIVERED' } }] : []);
    }
  }, BROKER_TIMEOUT_MS);

  it('a status topic that existed with the delete policy (a consumer subscribed first, and the broker made it with its defaults) is said at start, a warning; one argus makes compacted, or shared with detections, is not', async () => {
    const topic = uniqueTopic('status-kept');
    const made = `${topic}.made`;
    const { Kafka, logLevel } = await import('kafkajs');
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    // As the broker's auto-creation makes it for a consumer's metadata request: its defaults.
    await createTopicsReady(admin, { topics: [{ topic: `${topic}.status`, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] });
    await admin.disconnect();
    for (const [status, said] of [[`${topic}.status`, true], [`${made}.status`, false], [topic, false]] as const) {
      const logs: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
      const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, topics: { detections: topic, alerts: `${topic}.alerts`, status } }), ssl: undefined, closeTimeoutMs: 1000, startWaitMs: 120_000, log: (msg, fields, level) => logs.push({ msg, fields, level }) });
      await sink.start();
      await sink.close();
      const found = logs.filter((l) => /is not compacted/.test(l.msg));
      expect(found, status).toEqual(
        said
          ? [{ level: 'warn', msg: expect.stringContaining(`the status topic "${status}" is not compacted (cleanup.policy delete`), fields: { topic: status, cleanupPolicy: 'delete' } }]
          : [],
      );
      if (said) expect(found[0].msg).toContain(`--entity-name ${status} --add-config cleanup.policy=compact`);
    }
  }, BROKER_TIMEOUT_MS);

  it('a topic that existed with fewer partitions than sinks.kafka.partitions (a broker auto-created it with 1) is said at start, a warning naming the topic and both counts; the ones argus makes are not', async () => {
    const topic = uniqueTopic('few-partitions');
    const { Kafka, logLevel } = await import('kafkajs');
    const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    // As a broker that creates the topics it is asked for makes one (num.partitions: 1).
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
    const logs: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
    const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers, topics: { detections: topic, alerts: `${topic}.alerts`, status: `${topic}.status` }, partitions: 3 }), ssl: undefined, closeTimeoutMs: 1000, startWaitMs: 120_000, log: (msg, fields, level) => logs.push({ msg, fields, level }) });
    await sink.start();
    await sink.close();
    const found = logs.filter((l) => /fewer than/.test(l.msg));
    expect(found).toEqual([{ level: 'warn', msg: expect.stringContaining(`kafka: topic "${topic}" has 1 partition, fewer than the 3 of sinks.kafka.partitions: it existed before`), fields: { topic, partitions: 1, wanted: 3 } }]);
  }, BROKER_TIMEOUT_MS);

  it('argus consume prints each message with its source → consumption latency and p50/p99', async () => {
    const topic = uniqueTopic('consume');
    await runPipeline(pipeline({ brokers, topics: { detections: topic, alerts: `${topic}.alerts` } }), { maxFrames: 10, status: false });
    const out = await new Promise<string>((res, rej) => {
      const p = spawn(process.execPath, [resolve(__dirname, '../../bin/argus.js'), 'consume', '--brokers', brokers.join(','), '--topic', topic, '--from-beginning', '--count', '10', '--window', '5'], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let s = '';
      p.stdout.setEncoding('utf8').on('data', (d: string) => (s += d));
      p.on('error', rej);
      p.on('close', (code) => (code === 0 ? res(s) : rej(new Error(`exit ${code}: ${s}`))));
    });
    const lines = out.trim().split('\n');
    expect(lines.filter((l) => /^detections lobby #[0-9a-z]{6}-\d+ p\d+ \d+ detections {2}source→consume [\d.]+ ms$/.test(l))).toHaveLength(10);
    expect(lines.filter((l) => /^window 5: source→consume p50 [\d.]+ ms {2}p99 [\d.]+ ms$/.test(l))).toHaveLength(2);
    expect(lines.at(-1)).toMatch(/^10 records: source→consume p50 [\d.]+ ms {2}p99 [\d.]+ ms$/);
  }, 2 * MODEL_RUN_TIMEOUT_MS);
});

describe('Kafka broker killed (SIGKILL) and restarted while the pipeline runs', () => {
  // A broker of its own, so stopping it disturbs no other test.
  const PORT = testPort(19192);
  let outageBrokers: string[];
  beforeAll(async () => {
    const line = await broker('start', PORT, '--fresh');
    outageBrokers = [/KAFKA_BROKERS=(\S+)/.exec(line)![1]];
  }, BROKER_TIMEOUT_MS);
  afterAll(async () => {
    await broker('stop', PORT);
  }, BROKER_TIMEOUT_MS);

  it('keeps processing, counts dropped detections, and delivers every alert raised during the outage after the broker returns', async () => {
    const topic = uniqueTopic('outage');
    const alertsTopic = `${topic}.alerts`;
    const config = pipeline({ brokers: outageBrokers, topics: { detections: topic, alerts: alertsTopic } }, { rate: 'native', loop: true });
    const ac = new AbortController();
    let running: RunningPipeline | undefined;
    let lastFrame: Frame | undefined;
    const done = runPipeline(config, { status: false, signal: ac.signal, onReady: (r) => (running = r), onResult: (r) => (lastFrame = r.frame) });
    expect(await until(() => (running?.kafka?.stats.sent ?? 0) >= 10, MODEL_RUN_TIMEOUT_MS)).toBe(true);

    await broker('kill', PORT); // SIGKILL: a crash, not a clean shutdown
    const framesAtStop = running!.pipeline.stats[0].framesOut;
    const k = running!.kafka!.stats;
    // The sink notices the outage (a send fails) and drops detections, counting them.
    expect(await until(() => !k.connected && k.dropped > 0, MODEL_RUN_TIMEOUT_MS)).toBe(true);
    // Three alerts raised during the outage, one after the other: each resolves once handed to the sink.
    const raised: string[] = [];
    for (let i = 0; i < 3; i++) {
      const id = `outage-alert-${i}`;
      raised.push(id);
      await running!.publisher.alert(lastFrame!, Detections.empty(), 0, { id, rule: 'test', severity: 'critical', event: 'test.outage', message: `raised during the outage (${i})` });
    }
    expect(k.alertsBuffered).toBeGreaterThanOrEqual(3); // alerts (and any status change) wait
    // The pipeline does not wait for Kafka: 20 more frames are processed while it is down.
    expect(await until(() => running!.pipeline.stats[0].framesOut > framesAtStop + 20, MODEL_RUN_TIMEOUT_MS)).toBe(true);
    expect(k.connected).toBe(false);
    expect(k.alertsSent).toBe(0);

    await broker('start', PORT);
    expect(await until(() => running!.kafka!.stats.alertsSent >= 3, MODEL_RUN_TIMEOUT_MS)).toBe(true);
    ac.abort();
    const summary = await done;
    expect(summary.kafka!.alertsDropped).toBe(0);
    const alerts = (await readTopic(outageBrokers, alertsTopic, 3)).map((g) => JSON.parse(g.value));
    for (const a of alerts) assertValidMessage(a);
    expect(alerts.map((a) => a.alert.id)).toEqual(raised);
  }, 4 * MODEL_RUN_TIMEOUT_MS + BROKER_TIMEOUT_MS);
});
