import { filter, mergeAll, NEVER, type Observable, type Subject } from 'rxjs';
import { ClusterView, RELEASE_KEY_PREFIX } from '../../src/cluster/view.js';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { LogFn } from '../../src/core/log.js';

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
  i.pipeline = { stats: [], attach: () => NEVER };
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

/** The parts of a Worker that drivenWorker reaches into. */
export interface DrivenInternals extends JoinableWorker {
  view: ClusterView;
  owners: unknown;
  step: Promise<void>;
  running: Map<string, unknown>;
  reconcile: () => void;
  chains$: Subject<Observable<unknown>>;
}

/**
 * A Worker (worker id w1) driven without a broker: it has joined its group and holds slot 0, its
 * lease holds however long a test takes, a camera's chain ends when the camera is stopped, and
 * its owners log writes straight into its view. `write(id, value)` puts a camera record (null:
 * removes it); `settle()` reconciles until the worker has acted on what it sees. `env` is the
 * worker's environment (its cameras' `${env:ARGUS_CAMERA_…}`); `onResult` is given each result
 * that leaves a camera's chain (what the sinks would get).
 */
export async function drivenWorker<I extends DrivenInternals = DrivenInternals>(o: { env?: Record<string, string>; log?: LogFn; onResult?: (r: unknown) => void } = {}) {
  const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
  const w = new Worker(config, o.log);
  const i = w as unknown as I;
  const t = { cameras: config.cluster!.camerasTopic, owners: config.cluster!.ownersTopic };
  i.view = new ClusterView(brokerlessKafka().kafka, t, 'g', o.env ?? {}, undefined, {});
  await i.view.start(brokerlessAdmin());
  joinedWithCam0(i);
  i.view.cameras.clear();
  (i.membership as { lastAlive: number }).lastAlive = Infinity; // the lease holds however long the test takes
  // A camera's chain ends when it is stopped (frames in flight: none).
  i.pipeline = { stats: [], attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
  i.chains$.pipe(mergeAll()).subscribe((r) => o.onResult?.(r)); // what runPipeline subscribes to
  const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
  let offset = 0;
  i.owners = {
    claim: async (ids: string[]) =>
      ids.map((camera) => {
        const epoch = offset++;
        i.view.ingest(t.owners, 0, camera, rec({ type: 'claim', camera, owner: 'w1', incarnation: w.incarnation, at: 1 }), String(epoch));
        return epoch;
      }),
    release: async (camera: string, epoch: number) => i.view.ingest(t.owners, 0, `${RELEASE_KEY_PREFIX}${camera}`, rec({ type: 'release', camera, owner: 'w1', incarnation: w.incarnation, epoch, at: 2 }), String(offset++)),
    ready: async () => {},
  };
  let camOffset = 0;
  const settle = async () => {
    for (let k = 0; k < 3; k++) {
      i.reconcile();
      await i.step;
    }
  };
  const write = (id: string, v: Record<string, unknown> | null) => i.view.ingest(t.cameras, 0, id, v === null ? null : rec({ id, ...v }), String(camOffset++));
  return { w, i, settle, write };
}
