import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { outboxDir } from '../../src/pipeline/run.js';
import { loadPipeline } from '../../src/config/load.js';

const ROOT = resolve(__dirname, '../..');
const compose = parse(readFileSync(resolve(ROOT, 'docker-compose.yml'), 'utf8'));
const script = readFileSync(resolve(ROOT, 'scripts/kafka-broker.sh'), 'utf8');

describe('docker-compose.yml (docker does not run here: its structure and settings are checked)', () => {
  it('runs Kafka from the official Apache image in KRaft combined mode, like the test broker', () => {
    const k = compose.services.kafka;
    expect(k.image).toMatch(/^apache\/kafka:3\.9\.\d+$/);
    expect(k.environment.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(k.environment.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe(`${k.environment.KAFKA_NODE_ID}@kafka:9093`);
    expect(k.environment.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR).toBe(1);
    // The test broker uses the same roles and replication settings.
    expect(script).toMatch(/process\.roles=broker,controller/);
    expect(script).toMatch(/offsets\.topic\.replication\.factor=1/);
    // The version the image runs is the test broker's default version.
    expect(script).toContain(`KAFKA_VERSION:-${k.image.split(':')[1]}`);
  });

  it('runs the pipeline on demo-kafka.yaml against that broker, after it is healthy', async () => {
    const p = compose.services.pipeline;
    expect(p.command).toEqual(['run', 'pipelines/demo-kafka.yaml']);
    expect(p.depends_on.kafka.condition).toBe('service_healthy');
    expect(compose.services.kafka.healthcheck.test.join(' ')).toContain('kafka-broker-api-versions.sh');
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), { ...p.environment });
    expect(cfg.sinks.kafka!.brokers).toEqual([compose.services.kafka.environment.KAFKA_ADVERTISED_LISTENERS.replace('PLAINTEXT://', '')]);
    expect(cfg.sinks.kafka!.replicationFactor).toBe(compose.services.kafka.environment.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR);
    expect(cfg.sinks.kafka!.createTopics).toBe(true);
    expect(cfg.server).toMatchObject({ host: '0.0.0.0', port: 8080 });
    expect(p.ports).toContain(`127.0.0.1:${p.environment.ARGUS_HTTP_PORT}:8080`);
    expect(p.build).toBe('.');
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/CMD \["run", "pipelines\/demo-kafka\.yaml"\]/);
  });

  it('keeps the alert outbox and the broker\'s data on named volumes (a recreated container loses no alert)', async () => {
    const p = compose.services.pipeline;
    const k = compose.services.kafka;
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), { ...p.environment });
    const dir = outboxDir(cfg, resolve(ROOT, 'pipelines'), p.environment);
    expect(dir.startsWith(`${p.environment.ARGUS_STATE_DIR}/`)).toBe(true);
    const mounted = (svc: { volumes: string[] }, path: string) => svc.volumes.some((v) => { const [name, at] = v.split(':'); return path.startsWith(at) && name in compose.volumes; });
    expect(mounted(p, dir)).toBe(true);
    expect(mounted(k, k.environment.KAFKA_LOG_DIRS)).toBe(true);
    expect(readFileSync(resolve(ROOT, 'Dockerfile'), 'utf8')).toMatch(/ARGUS_STATE_DIR=\/var\/lib\/argus/);
  });

  it('defaults to the loopback test broker outside compose', async () => {
    const cfg = await loadPipeline(resolve(ROOT, 'pipelines/demo-kafka.yaml'), {});
    expect(cfg.sinks.kafka!.brokers).toEqual(['127.0.0.1:19092']);
    expect(script).toContain('KAFKA_PORT:-19092');
    expect(cfg.server!.host).toBe('127.0.0.1');
  });

  it('has a commented GPU variant using the NVIDIA runtime and the CUDA provider', () => {
    const text = readFileSync(resolve(ROOT, 'docker-compose.yml'), 'utf8');
    expect(compose.services['pipeline-gpu']).toBeUndefined();
    expect(text).toMatch(/^ {2}# pipeline-gpu:/m);
    expect(text).toMatch(/^ {2}# {3}runtime: nvidia/m);
    expect(text).toMatch(/^ {2}# {5}ARGUS_PROVIDER: cuda/m);
    expect(text).toMatch(/capabilities: \[gpu\]/);
  });
});
