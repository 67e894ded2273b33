import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clusterNames, until, WorkerProcess, writeWorkerYaml } from '../../src/bench/cluster.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { Kafka, logLevel } from 'kafkajs';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { testBrokers } from '../helpers/kafka.js';
import { closedPort } from '../helpers/net.js';


describe('argus worker at start', () => {
  it('Kafka unreachable: the worker waits for it, trying again and saying so, and a SIGTERM ends the wait at once (it exited after 12 s, uncoded)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-worker-start-'));
    const yaml = writeWorkerYaml(dir, [`127.0.0.1:${await closedPort()}`], clusterNames('down'));
    const w = new WorkerProcess('down', yaml);
    w.start();
    try {
      // Each try is kafkajs's own retries (about 10 s); two tries logged, and still running.
      expect(await until(() => (w.log.match(/cluster: cannot reach Kafka \(.*?\); trying again in \d+ s/g) ?? []).length >= 2, 120_000), w.log.slice(-2000)).toBe(true);
      expect(w.child!.exitCode).toBeNull();
      const t0 = Date.now();
      w.signal('SIGTERM');
      const code = await w.exited;
      expect(code).toBe(0);
      expect(Date.now() - t0, 'a bound that only ends a hang').toBeLessThan(30_000);
      expect(w.log).toContain('stopped before it had read the cluster');
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('a session timeout outside the brokers\' range is refused at start, naming the field (it looped on "group consumer crashed" for ever)', async () => {
    const brokers = await testBrokers();
    const dir = mkdtempSync(join(tmpdir(), 'argus-worker-start-'));
    const yaml = writeWorkerYaml(dir, brokers, clusterNames('st'), { sessionTimeoutMs: 3000 });
    const w = new WorkerProcess('st', yaml);
    w.start();
    try {
      expect(await w.exited).toBe(2);
      expect(w.log).toMatch(/VAP_ERR_CONFIG: \S+worker\.yaml: cluster\.sessionTimeoutMs: 3000 is outside what the brokers accept, 6000–1800000 ms/);
      expect(w.log).toContain(`${yaml}: cluster.sessionTimeoutMs`); // the file is named
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('a slot holding only an aborted transaction\'s records (the end offset past them, no record to read): the cluster\'s state is still read at start (it hung for ever)', async () => {
    const brokers = await testBrokers();
    const dir = mkdtempSync(join(tmpdir(), 'argus-worker-start-'));
    const names = clusterNames('txn');
    const yaml = writeWorkerYaml(dir, brokers, names, { slots: 4 });
    const ls = () => runCommand(process.execPath, [ARGUS, 'cameras', 'ls', '--config', yaml], { W: 'cli' }, 120_000);
    expect((await ls()).code).toBe(0); // creates the topics
    const kafka = new Kafka({ clientId: 'txn-test', brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ transactionalId: `argus-test-${Date.now()}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const txn = await producer.transaction();
      await txn.send({ topic: names.cameras, messages: [{ key: 'ghost', value: JSON.stringify({ id: 'ghost', uri: 'rtsp://h/x' }), partition: 2 }] });
      await txn.abort();
    } finally {
      await producer.disconnect();
    }
    const r = await ls();
    expect(r.stderr).not.toMatch(/could not read the cluster topics/);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('ghost');
  }, 240_000);

  it('cluster.brokers and sinks.kafka.brokers are host:port with a port of 1–65535; ids are at most 128 characters', () => {
    const base = { sinks: { kafka: { brokers: ['127.0.0.1:9092'] } }, cluster: { workerId: 'w1' } };
    expect(PipelineSchema.safeParse(base).success).toBe(true);
    const issues = (o: unknown) => PipelineSchema.safeParse(o).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(issues({ ...base, cluster: { brokers: ['127.0.0.1'] } })).toEqual(['cluster.brokers.0: use host:port']);
    expect(issues({ ...base, sinks: { kafka: { brokers: ['127.0.0.1:99999'] } } })).toEqual(['sinks.kafka.brokers.0: the port is 1–65535']);
    expect(issues({ ...base, cluster: { workerId: 'w'.repeat(129) } })).toEqual(['cluster.workerId: at most 128 characters']);
    expect(issues({ sinks: base.sinks, sources: [{ id: 'c'.repeat(129), uri: 'rtsp://h/x' }] })).toEqual(['sources.0.id: at most 128 characters']);
  });
});
