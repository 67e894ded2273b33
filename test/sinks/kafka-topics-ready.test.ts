import type { Admin } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ensureClusterTopics } from '../../src/cluster/view.js';
import { createTopicsReady } from '../../src/sinks/kafka.js';

/** A kafkajs protocol error as the admin throws it (its name, type, code and retriable flag). */
const protocolError = (type: string, code: number, retriable: boolean, message: string) => Object.assign(new Error(message), { name: 'KafkaJSProtocolError', type, code, retriable });
const unknownTopic = () => protocolError('UNKNOWN_TOPIC_OR_PARTITION', 3, true, 'This server does not host this topic-partition');

/** An admin whose metadata answers follow `answers` (an error thrown, or the leader every partition has), then leaders. */
function fakeAdmin(answers: (Error | number)[], o: { createError?: Error; existing?: string[] } = {}) {
  const calls = { create: [] as unknown[], metadata: 0 };
  const admin = {
    listTopics: async () => o.existing ?? [],
    createTopics: async (req: unknown) => {
      calls.create.push(req);
      if (o.createError) throw o.createError;
      return true;
    },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => {
      const a = answers[calls.metadata++] ?? 0;
      if (a instanceof Error) throw a;
      return { topics: topics.map((name) => ({ name, partitions: [0, 1].map((partitionId) => ({ partitionId, leader: a, replicas: [0], isr: [0], partitionErrorCode: 0 })) })) };
    },
    describeConfigs: async () => ({ resources: [] }),
  };
  return { admin: admin as unknown as Admin, calls };
}

describe('createTopicsReady: topics made and waited for until each partition has a leader', () => {
  it("retries the metadata's UNKNOWN_TOPIC_OR_PARTITION just after the creation (kafkajs's waitForLeaders threw it: a worker's start failed on a loaded broker) and a partition with no leader yet", async () => {
    const { admin, calls } = fakeAdmin([unknownTopic(), unknownTopic(), -1, 0]);
    await createTopicsReady(admin, [{ topic: 't', numPartitions: 2 }]);
    expect(calls.metadata).toBe(4);
    expect(calls.create).toEqual([{ topics: [{ topic: 't', numPartitions: 2 }], waitForLeaders: false }]);
  });

  it('an error kafkajs does not mark retriable (not authorised) is thrown at once; a retriable one past the bound is thrown as it came', async () => {
    const denied = protocolError('TOPIC_AUTHORIZATION_FAILED', 29, false, 'Not authorized to access topics: [Topic authorization failed]');
    const a = fakeAdmin([denied]);
    await expect(createTopicsReady(a.admin, [{ topic: 't' }])).rejects.toBe(denied);
    expect(a.calls.metadata).toBe(1);
    const b = fakeAdmin(Array.from({ length: 1000 }, unknownTopic));
    await expect(createTopicsReady(b.admin, [{ topic: 't' }], { withinMs: 250 })).rejects.toMatchObject({ type: 'UNKNOWN_TOPIC_OR_PARTITION' });
    const c = fakeAdmin(Array.from({ length: 1000 }, () => -1));
    await expect(createTopicsReady(c.admin, [{ topic: 't' }], { withinMs: 250 })).rejects.toThrow(/topics t: no leader for every partition within 0 s/);
  });

  it('a topic another client made at the same moment: taken with alreadyMade (two workers starting together), thrown without', async () => {
    const exists = protocolError('TOPIC_ALREADY_EXISTS', 36, false, 'Topic with this name already exists');
    const a = fakeAdmin([unknownTopic(), 0], { createError: exists });
    await createTopicsReady(a.admin, [{ topic: 't' }], { alreadyMade: true });
    expect(a.calls.metadata).toBe(2);
    await expect(createTopicsReady(fakeAdmin([], { createError: exists }).admin, [{ topic: 't' }])).rejects.toBe(exists);
  });

  it("a worker's cluster topics: made, their metadata's UNKNOWN_TOPIC_OR_PARTITION retried, not thrown", async () => {
    const { admin, calls } = fakeAdmin([unknownTopic(), 0]);
    await expect(ensureClusterTopics(admin, { cameras: 'cams', owners: 'owners', slots: 2, replicationFactor: 1 })).resolves.toEqual([]);
    expect(calls.create).toHaveLength(1);
    expect(calls.metadata).toBe(2);
  });
});
