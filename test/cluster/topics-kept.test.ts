import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ensureClusterTopics } from '../../src/cluster/view.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';

describe('the cluster topics, made beforehand by someone else (real broker)', () => {
  it('one that deletes records by age (Kafka\'s default cleanup.policy=delete, or compact,delete with a retention) is refused, naming the field, the topic and the fix; compacted ones are taken', async () => {
    const kafka = new Kafka({ clientId: 'argus-test-kept', brokers: await testBrokers(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const [deleting, both, kept, forever, owners, sized, infinite] = ['del', 'both', 'kept', 'forever', 'owners', 'sized', 'infinite'].map((p) => uniqueTopic(`argus-test-kept-${p}`));
      await createTopicsReady(admin, {
        topics: [
          { topic: deleting, numPartitions: 2 }, // the broker's defaults: delete after log.retention (7 days by default; 1 day on the test broker)
          { topic: both, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact,delete' }, { name: 'retention.ms', value: '86400000' }] },
          { topic: kept, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
          { topic: forever, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact,delete' }, { name: 'retention.ms', value: '-1' }] },
          { topic: owners, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
          { topic: sized, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'compact,delete' }, { name: 'retention.ms', value: '-1' }, { name: 'retention.bytes', value: '1073741824' }] },
          { topic: infinite, numPartitions: 2, configEntries: [{ name: 'cleanup.policy', value: 'delete' }, { name: 'retention.ms', value: '-1' }, { name: 'retention.bytes', value: '-1' }] },
        ],
      });
      const ensure = (cameras: string, o = owners) => ensureClusterTopics(admin, { cameras, owners: o, slots: 2, replicationFactor: 1 });
      await expect(ensure(deleting)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(new RegExp(`^cluster\\.camerasTopic: topic ${deleting.replace(/\./g, '\\.')} has cleanup\\.policy=delete: Kafka deletes its records after retention\\.ms \\(\\d+ ms\\).*--add-config cleanup\\.policy=compact`)) });
      await expect(ensure(both)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/cleanup\.policy=compact,delete: Kafka deletes its records after retention\.ms \(86400000 ms\)/) });
      await expect(ensure(kept, deleting)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/^cluster\.ownersTopic: topic /) });
      await expect(ensure(kept)).resolves.toEqual([]);
      await expect(ensure(forever)).resolves.toEqual([]);
      // Deleted by size, not age: refused; a delete topic with neither limit deletes nothing: taken.
      await expect(ensure(sized)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/cleanup\.policy=compact,delete: Kafka deletes its records past retention\.bytes \(1073741824 bytes a partition\)/) });
      await expect(ensure(infinite)).resolves.toEqual([]);
      // Made here: compacted, taken.
      await expect(ensure(uniqueTopic('argus-test-kept-new'), uniqueTopic('argus-test-kept-new-owners'))).resolves.toEqual([]);
    } finally {
      await admin.disconnect();
    }
  }, 120_000);
});

describe('argus cameras on a cameras topic made beforehand with fewer partitions than cluster.slots (real broker)', () => {
  it('says so (the cameras are placed in its slots), as the workers and check do', async () => {
    const { ClusterSchema } = await import('../../src/config/schema.js');
    const { listCameras } = await import('../../src/cluster/admin.js');
    const brokers = await testBrokers();
    const kafka = new Kafka({ clientId: 'argus-test-kept-slots', brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const [cameras, owners] = ['cams', 'owners'].map((p) => uniqueTopic(`argus-test-slots-${p}`));
    try {
      await createTopicsReady(admin, { topics: [{ topic: cameras, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
    } finally {
      await admin.disconnect();
    }
    const warned: string[] = [];
    const target = { brokers, cluster: ClusterSchema.parse({ camerasTopic: cameras, ownersTopic: owners, slots: 4 }), warn: (m: string) => void warned.push(m) };
    await expect(listCameras(target)).resolves.toEqual([]);
    expect(warned).toEqual([expect.stringMatching(new RegExp(`^cluster\\.camerasTopic: topic "${cameras.replace(/\./g, '\\.')}" has 1 partition, fewer than the 4 of cluster\\.slots`))]);
  }, 120_000);
});
