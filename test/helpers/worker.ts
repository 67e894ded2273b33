import { NEVER } from 'rxjs';

/** The parts of a Worker (src/cluster/worker.ts) that joinedWithCam0 sets. */
export interface JoinableWorker {
  pipeline: unknown;
  membership: unknown;
  joined: boolean;
  assigned: Set<number>;
  view: { cameras: Map<string, unknown> };
}

/**
 * Makes a Worker, driven without a broker, one that has joined its group, holds slot 0 and sees
 * camera cam0 in it (whose chain never ends): its next reconcile() claims cam0 from its owners.
 */
export function joinedWithCam0(i: JoinableWorker): void {
  i.pipeline = { attach: () => NEVER };
  i.membership = { lastAlive: performance.now(), requestRebalance: async () => {}, rejoin: async () => {}, stop: async () => {} };
  i.joined = true;
  i.assigned = new Set([0]);
  i.view.cameras.set('cam0', { id: 'cam0', slot: 0, text: '{}', offset: '0', definition: { source: { enabled: true } } });
}

/** A Kafka client for a ClusterView driven without a broker: its consumer reads nothing; `batch` feeds it as the broker would. */
export function brokerlessKafka(): { kafka: never; batch: (topic: string, partition: number, messages: { key: string; value: Buffer | null; offset: string }[]) => Promise<void> } {
  let eachBatch: ((p: { batch: unknown }) => Promise<void>) | undefined;
  const consumer = {
    events: { END_BATCH_PROCESS: 'end' },
    on: () => {},
    connect: async () => {},
    subscribe: async () => {},
    run: async (o: { eachBatch: typeof eachBatch }) => void (eachBatch = o.eachBatch),
    disconnect: async () => {},
  };
  return {
    kafka: { consumer: () => consumer } as never,
    batch: async (topic, partition, messages) => {
      const last = messages[messages.length - 1].offset;
      await eachBatch!({ batch: { topic, partition, messages: messages.map((m) => ({ ...m, key: Buffer.from(m.key) })), lastOffset: () => last } });
    },
  };
}

/** An admin client whose topics end at `ends` (`topic/partition` → the end offset; empty topics otherwise). */
export function brokerlessAdmin(ends: Record<string, number> = {}): never {
  return {
    fetchTopicOffsets: async (topic: string) =>
      Object.entries(ends)
        .filter(([k]) => k.startsWith(`${topic}/`))
        .map(([k, high]) => ({ partition: Number(k.slice(topic.length + 1)), high: String(high), low: '0' })),
  } as never;
}
