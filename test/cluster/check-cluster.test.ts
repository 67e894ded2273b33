/**
 * `argus check --connect` of a worker YAML checks the cluster topics where the workers find them:
 * on `cluster.brokers` with `cluster.ssl`/`.sasl` where given, else on the Kafka sink's. Before,
 * only a cluster on the sink's very brokers and credentials was checked, for the cameras topic's
 * partitions only: with `cluster.brokers` written out (even the same address), a cameras topic with
 * fewer partitions than cluster.slots passed without the warning the worker gives, a
 * `cluster.brokers` nothing listened on passed (its worker waited for it for ever), and a cluster
 * topic that deletes records (which every worker refuses at start) passed anywhere (real broker).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { checkPipeline, type CheckReport } from '../../src/tools/check.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-check-cluster-'));
let n = 0;
const workerYaml = (sink: string[], cluster: string) => {
  const file = join(dir, `w${n++}.yaml`);
  writeFileSync(file, `name: w\nsinks:\n  kafka: {brokers: ${JSON.stringify(sink)}, topics: {detections: ${uniqueTopic('check-cluster-det')}, alerts: ${uniqueTopic('check-cluster-alerts')}}}\ncluster: ${cluster}\n`);
  return file;
};
const check = (file: string) => checkPipeline(file, { connect: true, timeoutMs: 15_000, loadDetector: async () => Promise.reject(new Error('not loaded in this test')) });
// The sink's own topics' warnings (argus.status, shared by the tests) are not what is checked here.
const kafkaItems = (r: CheckReport) => r.items.filter((i) => i.check === 'kafka' && i.field !== 'sinks.kafka.partitions').map((i) => ({ ok: i.ok, warning: i.warning === true, code: i.code, field: i.field }));

/** A port nothing listens on (refused). */
async function refusedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function makeTopics(brokers: string[], topics: { topic: string; numPartitions: number; configEntries?: { name: string; value: string }[] }[]): Promise<void> {
  const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await createTopicsReady(admin, { topics });
  } finally {
    await admin.disconnect();
  }
}

describe('argus check --connect: a worker YAML\'s cluster topics, on the cluster\'s brokers', () => {
  it('cluster.brokers and cluster.ssl written out: the cameras topic with fewer partitions than cluster.slots is a WARNING, as the worker says', async () => {
    const brokers = await testBrokers();
    const cameras = uniqueTopic('check-cluster-cameras');
    await makeTopics(brokers, [{ topic: cameras, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }]);
    const r = await check(workerYaml(brokers, `{brokers: ${JSON.stringify(brokers)}, ssl: false, sasl: false, camerasTopic: ${cameras}, ownersTopic: ${cameras}.owners, slots: 8}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: true, warning: false, code: undefined, field: 'cluster.brokers' },
      { ok: true, warning: true, code: undefined, field: 'cluster.slots' },
    ]);
    expect(r.items.find((i) => i.field === 'cluster.slots')?.message).toMatch(new RegExp(`^cluster\\.camerasTopic: topic "${cameras}" has 2 partitions, fewer than the 8 of cluster\\.slots: `));
  }, 120_000);

  it('cluster.brokers where nothing answers, beside a sink that answers: VAP_ERR_KAFKA_UNREACHABLE naming cluster.brokers', async () => {
    const brokers = await testBrokers();
    const port = await refusedPort();
    const r = await check(workerYaml(brokers, `{brokers: ["127.0.0.1:${port}"], camerasTopic: ${uniqueTopic('check-cluster-none')}}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: false, warning: false, code: 'VAP_ERR_KAFKA_UNREACHABLE', field: 'cluster.brokers' },
    ]);
    expect(r.items.find((i) => i.field === 'cluster.brokers')?.message).toContain(`127.0.0.1:${port}`);
  }, 120_000);

  it('a cluster topic made beforehand that deletes records (cleanup.policy=delete), on the sink\'s brokers: VAP_ERR_CONFIG naming the topic, as the worker refuses it', async () => {
    const brokers = await testBrokers();
    const cameras = uniqueTopic('check-cluster-del');
    await makeTopics(brokers, [{ topic: cameras, numPartitions: 2 }]);
    const r = await check(workerYaml(brokers, `{camerasTopic: ${cameras}, ownersTopic: ${cameras}.owners, slots: 2}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: false, warning: false, code: 'VAP_ERR_CONFIG', field: 'cluster.camerasTopic' },
    ]);
    expect(r.items.find((i) => i.field === 'cluster.camerasTopic')?.message).toContain(`topic ${cameras} has cleanup.policy=delete`);
  }, 120_000);

  it('a cluster.sessionTimeoutMs the brokers refuse (below group.min.session.timeout.ms): VAP_ERR_CONFIG naming it, as the worker refuses it at start', async () => {
    // The test broker keeps Kafka's default range, 6 s – 30 min. Before, the check passed (exit 0)
    // and `argus worker` of the same file stopped at once with this very error.
    const brokers = await testBrokers();
    const r = await check(workerYaml(brokers, `{camerasTopic: ${uniqueTopic('check-cluster-session')}, sessionTimeoutMs: 5000, fenceMarginMs: 1000, heartbeatIntervalMs: 1000}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: false, warning: false, code: 'VAP_ERR_CONFIG', field: 'cluster.sessionTimeoutMs' },
    ]);
    expect(r.ok).toBe(false);
    expect(r.items.find((i) => i.field === 'cluster.sessionTimeoutMs')?.message).toMatch(/^cluster\.sessionTimeoutMs: 5000 is outside what the brokers accept, 6000–1800000 ms/);
  }, 120_000);

  it('a cluster.sessionTimeoutMs within the brokers\' range, on cluster.brokers written out: no item for it', async () => {
    const brokers = await testBrokers();
    const r = await check(workerYaml(brokers, `{brokers: ${JSON.stringify(brokers)}, camerasTopic: ${uniqueTopic('check-cluster-session-ok')}, sessionTimeoutMs: 6000}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: true, warning: false, code: undefined, field: 'cluster.brokers' },
    ]);
  }, 120_000);

  it('the sink\'s brokers with the cluster\'s own TLS (cluster.ssl), which they do not speak: the problem names cluster.ssl, not where Kafka runs', async () => {
    // Before: "broker …: answered" for the sink, then the same broker "cannot be reached: check
    // cluster.brokers and that Kafka runs there", under cluster.brokers, a field the file lacks.
    const brokers = await testBrokers();
    const r = await check(workerYaml(brokers, `{ssl: true, camerasTopic: ${uniqueTopic('check-cluster-tls')}}`));
    expect(kafkaItems(r)).toEqual([
      { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
      { ok: false, warning: false, code: 'VAP_ERR_KAFKA_UNREACHABLE', field: 'cluster.ssl' },
    ]);
    const message = r.items.find((i) => i.field === 'cluster.ssl')?.message;
    expect(message).toMatch(/: they answered the Kafka sink \(sinks\.kafka\.brokers\) with its TLS and SASL: check cluster\.ssl$/);
  }, 120_000);

  it('cluster.brokers at a server that accepts connections and never answers: VAP_ERR_KAFKA_UNREACHABLE within the --timeout, no password in the report', async () => {
    const brokers = await testBrokers();
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((sock) => void sockets.push(sock.on('error', () => {})));
    const port = await new Promise<number>((r) => silent.listen(0, '127.0.0.1', () => r((silent.address() as AddressInfo).port)));
    try {
      const file = workerYaml(brokers, `{brokers: ["127.0.0.1:${port}"], sasl: {mechanism: plain, username: alice, password: s3cretPW}, camerasTopic: ${uniqueTopic('check-cluster-silent')}}`);
      const t0 = performance.now();
      const r = await checkPipeline(file, { connect: true, timeoutMs: 1500, loadDetector: async () => Promise.reject(new Error('not loaded in this test')) });
      expect(kafkaItems(r)).toEqual([
        { ok: true, warning: false, code: undefined, field: 'sinks.kafka.brokers' },
        { ok: false, warning: false, code: 'VAP_ERR_KAFKA_UNREACHABLE', field: 'cluster.brokers' },
      ]);
      expect(r.items.find((i) => i.field === 'cluster.brokers')?.message).toMatch(/no answer within 1\.5 s/);
      expect(JSON.stringify(r)).not.toContain('s3cretPW');
      // The sink's check and the cluster's, each within its 1.5 s (the model is not loaded here).
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  }, 120_000);

  it('the sink\'s brokers, which the cluster uses, do not answer: said once, under sinks.kafka.brokers', async () => {
    const port = await refusedPort();
    const r = await check(workerYaml([`127.0.0.1:${port}`], `{camerasTopic: ${uniqueTopic('check-cluster-down')}}`));
    expect(kafkaItems(r)).toEqual([{ ok: false, warning: false, code: 'VAP_ERR_KAFKA_UNREACHABLE', field: 'sinks.kafka.brokers' }]);
  }, 120_000);
});
