import { Kafka, logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { CLAIMS_PER_WRITE, OwnerLog } from '../../src/cluster/view.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';

describe('OwnerLog (real broker)', () => {
  it('claims many cameras in one write: each epoch returned is the offset its claim record got', async () => {
    const brokers = await testBrokers();
    const kafka = new Kafka({ clientId: 'argus-test-owners', brokers, logLevel: logLevel.NOTHING });
    const topic = uniqueTopic('argus-test-owners');
    const admin = kafka.admin();
    await admin.connect();
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const consumer = kafka.consumer({ groupId: `${topic}-reader` });
    try {
      const log = new OwnerLog(producer, topic, 'w1', 'inc1');
      expect(await log.claim([])).toEqual([]);
      await log.release('cam-x', 0);
      // More than one write's worth: CLAIMS_PER_WRITE a batch, offsets still in order.
      const cams = Array.from({ length: CLAIMS_PER_WRITE + 40 }, (_, i) => `cam${i}`);
      const epochs = await log.claim(cams);
      expect(epochs).toEqual(cams.map((_, i) => epochs[0] + i));
      expect(epochs[0]).toBe(1); // after the one release: nothing else was written
      // The offsets read back: what a ClusterView takes as each claim's epoch.
      const seen = new Map<string, { offset: number; type: string; owner: string }>();
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 60_000);
        void consumer.run({
          eachMessage: async ({ message }) => {
            const rec = JSON.parse(message.value!.toString()) as { type: string; camera: string; owner: string };
            if (rec.type === 'claim') seen.set(rec.camera, { offset: Number(message.offset), type: rec.type, owner: rec.owner });
            if (seen.size === cams.length) {
              clearTimeout(t);
              resolve();
            }
          },
        });
      });
      expect(cams.map((c) => seen.get(c)?.offset)).toEqual(epochs);
      expect([...seen.values()].every((r) => r.owner === 'w1')).toBe(true);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
    }
  }, 180_000);
});
