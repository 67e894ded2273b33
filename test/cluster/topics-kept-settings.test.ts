// Which settings of a cluster topic made beforehand are refused (ensureClusterTopics), read from
// the broker's answer to DescribeConfigs: a stand-in admin answers with the settings under test.
import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ensureClusterTopics } from '../../src/cluster/view.js';

/** An admin whose two topics exist, each with `settings` (config name → value, as the broker gives them). */
function adminWith(settings: Record<string, string>): Admin {
  return {
    listTopics: async () => ['cams', 'owners'],
    createTopics: async () => true,
    describeConfigs: async ({ resources }: { resources: { name: string; configNames: string[] }[] }) => ({
      throttleTime: 0,
      resources: resources.map((r) => ({
        resourceName: r.name,
        resourceType: 2,
        errorCode: 0,
        errorMessage: null,
        configEntries: r.configNames.filter((n) => n in settings).map((n) => ({ configName: n, configValue: settings[n], readOnly: false, isDefault: false, isSensitive: false })),
      })),
    }),
  } as unknown as Admin;
}
const ensure = (settings: Record<string, string>) => ensureClusterTopics(adminWith(settings), { cameras: 'cams', owners: 'owners', slots: 2, replicationFactor: 1 });

describe('cluster topics made beforehand: what they may delete', () => {
  it('compact,delete without an age limit but with a size limit (retention.bytes) deletes records: refused, naming it', async () => {
    await expect(ensure({ 'cleanup.policy': 'compact,delete', 'retention.ms': '-1', 'retention.bytes': '1073741824' })).rejects.toMatchObject({
      code: 'VAP_ERR_CONFIG',
      message: expect.stringMatching(/^cluster\.camerasTopic: topic cams has cleanup\.policy=compact,delete: Kafka deletes its records past retention\.bytes \(1073741824 bytes a partition\)/),
    });
  });

  it('delete with neither limit (a managed Kafka\'s infinite retention) deletes nothing: taken', async () => {
    await expect(ensure({ 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' })).resolves.toEqual([]);
  });

  it('delete after an age, compact,delete with one, and a size alone are refused; compact and compact,delete without limits are taken', async () => {
    await expect(ensure({ 'cleanup.policy': 'delete', 'retention.ms': '604800000', 'retention.bytes': '-1' })).rejects.toMatchObject({ message: expect.stringMatching(/cleanup\.policy=delete: Kafka deletes its records after retention\.ms \(604800000 ms\),/) });
    await expect(ensure({ 'cleanup.policy': 'compact,delete', 'retention.ms': '86400000' })).rejects.toMatchObject({ message: expect.stringMatching(/after retention\.ms \(86400000 ms\),/) });
    await expect(ensure({ 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '5000' })).rejects.toMatchObject({ message: expect.stringMatching(/past retention\.bytes \(5000 bytes a partition\)/) });
    await expect(ensure({ 'cleanup.policy': 'compact', 'retention.ms': '604800000', 'retention.bytes': '5000' })).resolves.toEqual([]);
    await expect(ensure({ 'cleanup.policy': 'compact,delete', 'retention.ms': '-1' })).resolves.toEqual([]);
  });

  it('a cameras topic that existed with fewer partitions than cluster.slots: said (the slots are its partitions: no more workers than that run cameras), naming the topic and both counts', async () => {
    const admin = adminWith({ 'cleanup.policy': 'compact' }) as unknown as Record<string, unknown>;
    admin.fetchTopicMetadata = async ({ topics }: { topics: string[] }) => ({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0 }] })) });
    const said = await ensureClusterTopics(admin as unknown as Admin, { cameras: 'cams', owners: 'owners', slots: 4, replicationFactor: 1 });
    expect(said).toEqual([expect.stringMatching(/^cluster\.camerasTopic: topic "cams" has 1 partition, fewer than the 4 of cluster\.slots: it existed before .*no more workers than that run cameras/)]);
    expect(await ensureClusterTopics(admin as unknown as Admin, { cameras: 'cams', owners: 'owners', slots: 1, replicationFactor: 1 })).toEqual([]);
  });
});
