import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { consume, consumeKafkaConfig, consumeTarget } from '../../src/sinks/consume.js';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { closedPort, firstBytesServer } from '../helpers/net.js';

// `argus consume` with a pipeline's Kafka settings, and against brokers that are not there. No
// Kafka is needed: a port nobody listens on, and servers that accept and never answer (a frozen
// broker) or that record the client's first bytes. Bounds only end a hang.

let silent: Server;
let silentPort: number;
const held: Socket[] = [];
let refusedPort: number;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'argus-consume-target-'));
  silent = createServer((s) => held.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as AddressInfo).port;
  refusedPort = await closedPort();
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((r) => silent.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const opts = { fromBeginning: false, window: 100, json: false };

describe('argus consume: where it reads', () => {
  it('--config: the Kafka sink\'s brokers, TLS, SASL and detections topic; --brokers and --topic override them', async () => {
    const yaml = join(dir, 'secured.yaml');
    writeFileSync(yaml, `sources:\n  - id: cam\n    uri: /x.mp4\nsinks:\n  kafka:\n    brokers: ["10.0.0.5:9093"]\n    topics: { detections: plant.detections }\n    ssl: { rejectUnauthorized: false }\n    sasl: { mechanism: scram-sha-512, username: argus, password: hunter2 }\n`);
    const t = await consumeTarget({ config: yaml });
    expect(t).toEqual({ brokers: ['10.0.0.5:9093'], topic: 'plant.detections', ssl: { rejectUnauthorized: false }, sasl: { mechanism: 'scram-sha-512', username: 'argus', password: 'hunter2' } });
    expect(consumeKafkaConfig(t)).toMatchObject({ brokers: ['10.0.0.5:9093'], ssl: { rejectUnauthorized: false }, sasl: { mechanism: 'scram-sha-512', username: 'argus', password: 'hunter2' } });
    expect(await consumeTarget({ config: yaml, brokers: ['10.0.0.6:9093'], topic: 'plant.alerts' })).toMatchObject({ brokers: ['10.0.0.6:9093'], topic: 'plant.alerts', sasl: { username: 'argus' } });
    // Without --config: the default topic, no credentials.
    expect(await consumeTarget({ brokers: ['127.0.0.1:9092'] })).toEqual({ brokers: ['127.0.0.1:9092'], topic: 'argus.detections' });
  });

  it('coded errors: no brokers anywhere, a pipeline without a Kafka sink, --brokers with credentials in it (redacted)', async () => {
    const none = await consumeTarget({}).catch((x: unknown) => x);
    expect(isArgusError(none, 'VAP_ERR_CONFIG')).toBe(true);
    expect((none as Error).message).toContain('--brokers or --config');
    const plain = join(dir, 'plain.yaml');
    writeFileSync(plain, 'sources:\n  - id: cam\n    uri: /x.mp4\n');
    const noSink = await consumeTarget({ config: plain }).catch((x: unknown) => x);
    expect(isArgusError(noSink, 'VAP_ERR_CONFIG')).toBe(true);
    expect((noSink as Error).message).toBe(`${plain}: sinks.kafka: no Kafka sink to read from (give --brokers instead)`);
    const creds = await consumeTarget({ brokers: ['admin:hunter2@10.0.0.1:9092'] }).catch((x: unknown) => x);
    expect(isArgusError(creds, 'VAP_ERR_CONFIG')).toBe(true);
    expect((creds as Error).message).toBe('--brokers: ***@10.0.0.1:9092: use host:port');
  });

  it('--config: only the Kafka sink\'s ${env:…} need be set (a camera\'s password was needed to read a topic); one of those unset is VAP_ERR_CONFIG naming it', async () => {
    const yaml = join(dir, 'env.yaml');
    writeFileSync(
      yaml,
      'sources:\n  - id: cam\n    uri: rtsp://${env:H54H_CAM_USER}:${env:H54H_CAM_PASS}@10.0.0.9/stream\n    fps: ${env:H54H_CAM_FPS}\n' +
        'sinks:\n  kafka:\n    brokers: ["${env:H54H_BROKERS}"]\n    sasl: { mechanism: plain, username: argus, password: "${env:H54H_KAFKA_PASS}" }\n',
    );
    const env = process.env;
    try {
      process.env = { ...env, H54H_BROKERS: '10.0.0.5:9093', H54H_KAFKA_PASS: 'hunter2' };
      expect(await consumeTarget({ config: yaml })).toEqual({ brokers: ['10.0.0.5:9093'], topic: 'argus.detections', sasl: { mechanism: 'plain', username: 'argus', password: 'hunter2' } });
      process.env = { ...env, H54H_BROKERS: '10.0.0.5:9093', H54H_CAM_USER: 'u', H54H_CAM_PASS: 'p', H54H_CAM_FPS: '5' };
      const unset = await consumeTarget({ config: yaml }).catch((x: unknown) => x);
      expect(isArgusError(unset, 'VAP_ERR_CONFIG')).toBe(true);
      expect((unset as Error).message).toBe(`${yaml}: sinks.kafka.sasl.password: environment variable H54H_KAFKA_PASS is not set and has no default`);
      // Brokers from the environment too, unset: named, not stood in for.
      process.env = { ...env, H54H_KAFKA_PASS: 'hunter2' };
      expect(((await consumeTarget({ config: yaml }).catch((x: unknown) => x)) as Error).message).toBe(`${yaml}: sinks.kafka.brokers[0]: environment variable H54H_BROKERS is not set and has no default`);
    } finally {
      process.env = env;
    }
  });

  it('--config: a variable unset where its field takes no stand-in (a provider\'s name) is no error either; the Kafka sink alone is then checked', async () => {
    const yaml = join(dir, 'providers.yaml');
    writeFileSync(yaml, 'sources:\n  - id: cam\n    uri: /x.mp4\nmodel:\n  providers: ["${env:H54H_PROVIDER}"]\nsinks:\n  kafka:\n    brokers: ["10.0.0.5:9093"]\n    topics: { detections: plant.detections }\n');
    expect(await consumeTarget({ config: yaml })).toEqual({ brokers: ['10.0.0.5:9093'], topic: 'plant.detections' });
    // The Kafka sink is still checked: a wrong field of it is named as in the pipeline.
    writeFileSync(yaml, 'sources:\n  - id: cam\n    uri: /x.mp4\nmodel:\n  providers: ["${env:H54H_PROVIDER}"]\nsinks:\n  kafka:\n    brokers: ["10.0.0.5:9093"]\n    topicz: {}\n');
    const bad = await consumeTarget({ config: yaml }).catch((x: unknown) => x);
    expect(isArgusError(bad, 'VAP_ERR_CONFIG')).toBe(true);
    expect((bad as Error).message).toContain('sinks.kafka');
    expect((bad as Error).message).toContain('topicz');
  });

  it('TLS from --config reaches the consumer: its first bytes to the broker are a TLS handshake (a record of type 22), not a Kafka request', async () => {
    const { port, first, close } = await firstBytesServer();
    try {
      const failed = consume({ ...opts, brokers: [`127.0.0.1:${port}`], topic: 't', ssl: true, connectTimeoutMs: 60_000 }).catch((x: unknown) => x);
      expect((await first)[0]).toBe(0x16);
      expect(isArgusError(await failed, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    } finally {
      close();
    }
  }, 120_000);
});

describe('argus consume: brokers that cannot be reached', () => {
  it('a port that refuses: VAP_ERR_KAFKA_UNREACHABLE naming the broker and ECONNREFUSED (kafkajs alone: "Connection error", no code, after 9 s of retries)', async () => {
    const e = await consume({ ...opts, brokers: [`127.0.0.1:${refusedPort}`], topic: 't', connectTimeoutMs: 60_000 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^cannot reach the Kafka broker 127\\.0\\.0\\.1:${refusedPort} \\(.*ECONNREFUSED.*\\): is Kafka running there\\?`));
  }, 120_000);

  it('the CLI against a broker that never answers: the coded error naming it, exit 2, the process does not linger on the open socket', async () => {
    const r = await runCommand(process.execPath, [ARGUS, 'consume', '--brokers', `127.0.0.1:${silentPort}`, '--count', '1'], {}, 120_000);
    expect(r.stderr).toContain(`argus: VAP_ERR_KAFKA_UNREACHABLE: cannot reach the Kafka broker 127.0.0.1:${silentPort} (`);
    expect(r.code).toBe(2);
  }, 180_000);
});
