import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadPipeline } from '../../src/config/load.js';
import { adminKafkaConfig, clusterTarget, drainWorker, listCameras, reach, type ClusterTarget } from '../../src/cluster/admin.js';
import { ClusterSchema } from '../../src/config/schema.js';
import { isArgusError } from '../../src/core/errors.js';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { firstBytesServer } from '../helpers/net.js';

// `argus cameras` / `argus cluster` against brokers that are not there. No Kafka is needed: a
// port nobody listens on, and a server that accepts connections and never answers (a frozen
// broker, a load balancer in front of a dead one). Bounds only end a hang.

let silent: Server;
let silentPort: number;
const held: Socket[] = [];
let refusedPort: number;
beforeAll(async () => {
  silent = createServer((s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as AddressInfo).port;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  refusedPort = (probe.address() as AddressInfo).port;
  await new Promise((r) => probe.close(r));
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((r) => silent.close(r));
});

const target = (brokers: string[], connectTimeoutMs?: number): ClusterTarget => ({ brokers, cluster: ClusterSchema.parse({}), connectTimeoutMs });

describe('argus cameras / cluster: brokers that cannot be reached', () => {
  it('a port that refuses: VAP_ERR_KAFKA_UNREACHABLE naming the broker and why', async () => {
    const e = await listCameras(target([`127.0.0.1:${refusedPort}`])).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^cannot reach the Kafka broker 127\\.0\\.0\\.1:${refusedPort} \\(.*ECONNREFUSED.*\\)`));
  });

  it('a broker that accepts and never answers: VAP_ERR_KAFKA_UNREACHABLE naming both brokers once the connect timeout has passed', async () => {
    // kafkajs alone waited 30 s and then said "Broker not connected", naming no broker.
    const e = await listCameras(target([`127.0.0.1:${silentPort}`, `127.0.0.1:${silentPort}`], 300)).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toContain(`cannot reach the Kafka brokers 127.0.0.1:${silentPort}, 127.0.0.1:${silentPort} (`);
  });

  it('--config of a secured cluster: its TLS and SASL reach the admin client (it spoke plain Kafka to a TLS broker before)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-admin-auth-'));
    try {
      const yaml = join(dir, 'worker.yaml');
      writeFileSync(yaml, `sinks:\n  kafka:\n    brokers: ["127.0.0.1:${silentPort}"]\n    ssl: true\n    sasl: { mechanism: scram-sha-512, username: argus, password: hunter2 }\ncluster:\n  workerId: w1\n`);
      const t = await clusterTarget({ config: yaml });
      expect(t.ssl).toBe(true);
      expect(t.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'argus', password: 'hunter2' });
      expect(adminKafkaConfig(t)).toMatchObject({ ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'argus' } });
      // --brokers given as well: other brokers, the same credentials; checked as without --config.
      expect((await clusterTarget({ config: yaml, brokers: ['10.0.0.9:9093'] })).sasl?.username).toBe('argus');
      const bad = await clusterTarget({ config: yaml, brokers: ['admin:hunter2@127.0.0.1:1'] }).catch((x: unknown) => x);
      expect(isArgusError(bad, 'VAP_ERR_CONFIG')).toBe(true);
      expect((bad as Error).message).not.toContain('hunter2');
      // The client's first bytes to the broker are a TLS handshake (a record of type 22), not a Kafka request.
      const { port, first, close } = await firstBytesServer();
      try {
        const failed = listCameras({ ...t, brokers: [`127.0.0.1:${port}`], connectTimeoutMs: 60_000 }).catch((x: unknown) => x);
        expect((await first)[0]).toBe(0x16);
        expect(isArgusError(await failed, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
      } finally {
        close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--config: a variable only the workers need (the HTTP token) may be unset here; one of the brokers, the cluster section or the Kafka sink\'s TLS and SASL may not (named, as a worker names it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-admin-env-'));
    const names = ['ARGUS_T_WS_TOKEN', 'ARGUS_T_SASL_PASSWORD', 'ARGUS_T_GROUP'];
    for (const n of names) delete process.env[n];
    try {
      const yaml = join(dir, 'worker.yaml');
      const write = (kafka: string, cluster = '') =>
        writeFileSync(yaml, `sinks:\n  kafka:\n    brokers: ["127.0.0.1:1"]\n${kafka}server:\n  token: \${env:ARGUS_T_WS_TOKEN}\ncluster:\n  workerId: w1\n${cluster}`);
      write('');
      // The HTTP token is the workers' (it stopped `argus cameras` with "ARGUS_T_WS_TOKEN is not set").
      expect((await clusterTarget({ config: yaml })).brokers).toEqual(['127.0.0.1:1']);
      write('    sasl: { mechanism: plain, username: ops, password: "${env:ARGUS_T_SASL_PASSWORD}" }\n');
      const sasl = await clusterTarget({ config: yaml }).catch((x: unknown) => x);
      expect(isArgusError(sasl, 'VAP_ERR_CONFIG')).toBe(true);
      expect((sasl as Error).message).toBe(`${yaml}: sinks.kafka.sasl.password: environment variable ARGUS_T_SASL_PASSWORD is not set and has no default`);
      write('', '  group: ${env:ARGUS_T_GROUP}\n');
      expect((await clusterTarget({ config: yaml }).catch((x: unknown) => x) as Error).message).toMatch(/cluster\.group: environment variable ARGUS_T_GROUP is not set/);
      // A worker still needs every one of them.
      await expect(loadPipeline(yaml)).rejects.toThrow(/ARGUS_T_(WS_TOKEN|GROUP) is not set/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--config: a variable only the workers need, unset here, in a field that would not take the stand-in 1 (model.providers): still no error; a field past its schema elsewhere with every variable set still is one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-admin-env-'));
    delete process.env.ARGUS_T_PROVIDER;
    try {
      const yaml = join(dir, 'worker.yaml');
      writeFileSync(yaml, 'model:\n  providers: ["${env:ARGUS_T_PROVIDER}"]\nsinks:\n  kafka:\n    brokers: ["127.0.0.1:1"]\ncluster:\n  workerId: w1\n  group: g7\n');
      const t = await clusterTarget({ config: yaml });
      expect(t.brokers).toEqual(['127.0.0.1:1']);
      expect(t.cluster.group).toBe('g7');
      writeFileSync(yaml, 'model:\n  providers: ["gpu"]\nsinks:\n  kafka:\n    brokers: ["127.0.0.1:1"]\ncluster:\n  workerId: w1\n');
      const bad = await clusterTarget({ config: yaml }).catch((x: unknown) => x);
      expect(isArgusError(bad, 'VAP_ERR_CONFIG')).toBe(true);
      expect((bad as Error).message).toMatch(/model\.providers\[0\]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cluster.ssl and cluster.sasl: the cluster topics on brokers of their own, with credentials of their own (false: none); without them, the sink\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-cluster-auth-'));
    try {
      const sink = 'sinks:\n  kafka:\n    brokers: ["10.0.0.1:9093"]\n    ssl: true\n    sasl: { mechanism: scram-sha-512, username: sink, password: s1 }\n';
      const write = (name: string, cluster: string) => {
        const f = join(dir, name);
        writeFileSync(f, `${sink}cluster:\n  workerId: w1\n${cluster}`);
        return f;
      };
      const own = await clusterTarget({ config: write('own.yaml', '  brokers: ["10.0.0.2:9092"]\n  ssl: false\n  sasl: { mechanism: plain, username: ops, password: s2 }\n') });
      expect(own).toMatchObject({ brokers: ['10.0.0.2:9092'], ssl: false, sasl: { mechanism: 'plain', username: 'ops' } });
      expect(adminKafkaConfig(own)).toMatchObject({ ssl: false, sasl: { username: 'ops' } });
      const none = await clusterTarget({ config: write('none.yaml', '  brokers: ["10.0.0.2:9092"]\n  ssl: false\n  sasl: false\n') });
      expect(none.ssl).toBe(false);
      expect(none.sasl).toBeUndefined();
      const inherited = await clusterTarget({ config: write('inherited.yaml', '') });
      expect(inherited).toMatchObject({ brokers: ['10.0.0.1:9093'], ssl: true, sasl: { username: 'sink' } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('credentials the broker refused: the hint is about them, not about where Kafka runs', async () => {
    const refusing = { connect: () => Promise.reject(Object.assign(new Error('SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512'), { name: 'KafkaJSSASLAuthenticationError' })), disconnect: async () => {} };
    const e = await reach(target(['10.0.0.9:9093']), refusing).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toMatch(/authentication failed.*: check cluster\.sasl \(or sinks\.kafka\.sasl\) of --config$/);
    const down = { connect: () => Promise.reject(new Error('Connection error: connect ECONNREFUSED 10.0.0.9:9093')), disconnect: async () => {} };
    expect(((await reach(target(['10.0.0.9:9093']), down).catch((x: unknown) => x)) as Error).message).toMatch(/is Kafka running there\?/);
  });

  it('--brokers with credentials in it: VAP_ERR_CONFIG naming it with the credentials redacted', async () => {
    for (const [given, shown] of [
      ['admin:hunter2@10.0.0.1:9092', '***@10.0.0.1:9092'],
      ['kafka://admin:hunter2@10.0.0.1:9092', 'kafka://***@10.0.0.1:9092'],
    ]) {
      const e = await clusterTarget({ brokers: [given] }).catch((x: unknown) => x);
      expect(isArgusError(e, 'VAP_ERR_CONFIG')).toBe(true);
      expect((e as Error).message).toMatch(new RegExp(`^--brokers: ${shown.replace(/[.*/]/g, '\\$&')}: use host:port`));
      expect((e as Error).message).not.toContain('hunter2');
    }
  });

  it('the CLI: `argus cameras ls` against a broker that never answers prints the coded error naming it and exits 2 (the process does not linger on the open socket)', async () => {
    const r = await runCommand(process.execPath, [ARGUS, 'cameras', 'ls', '--brokers', `127.0.0.1:${silentPort}`], {}, 120_000);
    expect(r.stderr).toContain(`argus: VAP_ERR_KAFKA_UNREACHABLE: cannot reach the Kafka broker 127.0.0.1:${silentPort} (`);
    expect(r.code).toBe(2);
  }, 180_000);
});

describe('argus cluster drain: the worker named', () => {
  it('a name no worker can have is refused before Kafka is asked (the request is kept: it drained no one, said nothing, and would drain any later worker of that name)', async () => {
    const t: ClusterTarget = { brokers: [`127.0.0.1:${refusedPort}`], cluster: ClusterSchema.parse({}) };
    for (const bad of ['wü', 'a/b', 'x'.repeat(129), '..', '']) {
      const e = await drainWorker(t, bad).catch((x: unknown) => x);
      expect(isArgusError(e, 'VAP_ERR_USAGE'), bad).toBe(true);
      expect((e as Error).message).not.toContain(bad || '\u0000'); // not echoed
    }
    // A valid one goes on to Kafka (here: none there).
    expect(isArgusError(await drainWorker({ ...t, connectTimeoutMs: 1000 }, 'w1').catch((x: unknown) => x), 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
  }, 60_000);
});
