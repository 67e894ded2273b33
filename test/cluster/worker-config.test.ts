import { describe, expect, it } from 'vitest';
import { runWorker } from '../../src/cluster/worker.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';

describe('argus worker: a worker YAML without brokers', () => {
  it('is a config error naming the file and the field (the file was not named)', async () => {
    const config = parseConfigText('cluster: {}\n', PipelineSchema, 'w.yaml', {});
    await expect(runWorker(config, { configFile: 'w.yaml' })).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: 'w.yaml: cluster.brokers: a worker needs Kafka brokers (cluster.brokers, or sinks.kafka.brokers)' });
  });
});

describe('cluster.unreachableAfterMs', () => {
  it('defaults to 30 s; 0 turns the reports off; between 1 and 999 ms is a config error naming the field (a camera\'s connect takes longer)', () => {
    const parse = (c: string) => () => parseConfigText(`cluster: {brokers: ["k:9092"]${c}}\n`, PipelineSchema, 'w.yaml', {});
    expect(parse('')().cluster!.unreachableAfterMs).toBe(30_000);
    expect(parse(', unreachableAfterMs: 0')().cluster!.unreachableAfterMs).toBe(0);
    expect(parse(', unreachableAfterMs: 5000')().cluster!.unreachableAfterMs).toBe(5000);
    expect(parse(', unreachableAfterMs: 500')).toThrow(/cluster\.unreachableAfterMs.*0 \(never\) or at least 1000/);
    expect(parse(', unreachableAfterMs: -1')).toThrow(/cluster\.unreachableAfterMs/);
  });
});
