/**
 * The group's leader reads at most MAX_LABELS of a member's labels (kafkajs-membership.ts
 * decodeInfo: whoever joins writes them), but a worker could be configured with more
 * (cluster.labels had no bound on their number). The leader then never gave a camera that asked
 * for one of the unread labels to the worker that has it, while that worker, reading its own
 * labels whole, found the slot held by no one it could run and asked for a rebalance every
 * 2 minutes, for ever: the camera ran nowhere. Such a config is now refused (the schema: argus
 * check and the worker's start), coded, naming the field.
 */
import { describe, expect, it } from 'vitest';
import { MAX_LABELS, decodeInfo } from '../../src/cluster/kafkajs-membership.js';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { AssignerProtocol } from 'kafkajs';

const config = (n: number) => PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1', labels: Object.fromEntries(Array.from({ length: n }, (_, k) => [`l${k}`, 'x'])) } });

describe('cluster.labels and what the group reads of them', () => {
  it('every label a worker may have is read by the leader', () => {
    const w = new Worker(config(MAX_LABELS));
    const info = w.memberInfo();
    const read = decodeInfo(AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['t'], userData: Buffer.from(JSON.stringify(info)) }));
    expect(read && read !== 'nudge' ? Object.keys(read.labels).length : 0).toBe(MAX_LABELS);
  });

  it('a config with more labels than the leader reads is refused, naming cluster.labels', () => {
    // What the leader would have read of them.
    const labels = Object.fromEntries(Array.from({ length: MAX_LABELS + 1 }, (_, k) => [`l${k}`, 'x']));
    const read = decodeInfo(AssignerProtocol.MemberMetadata.encode({ version: 1, topics: ['t'], userData: Buffer.from(JSON.stringify({ workerId: 'w1', incarnation: 'i', capacity: 1, owned: [], labels })) }));
    expect(read && read !== 'nudge' ? Object.keys(read.labels).length : 0).toBe(MAX_LABELS);
    const parsed = PipelineSchema.safeParse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1', labels } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['cluster.labels', expect.stringMatching(/257 labels; at most 256/)]]);
  });
});
