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
