/**
 * A worker's own maps keyed by camera id keep no entry for a camera it no longer runs or wants:
 * cameras added and removed over months (or moved to other workers) left one behind each in its
 * claims, and a handoff cut short by a fence left the tick reconciling 10 times a second for good.
 * Drives the worker without a broker: its owners log writes straight into its view.
 */
import { filter, mergeAll, type Observable, type Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ClusterView } from '../../src/cluster/view.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { Worker } from '../../src/cluster/worker.js';
import { brokerlessAdmin, brokerlessKafka, joinedWithCam0 } from '../helpers/worker.js';

interface Internals {
  pipeline: unknown;
  membership: unknown;
  joined: boolean;
  assigned: Set<number>;
  view: ClusterView;
  owners: unknown;
  step: Promise<void>;
  running: Map<string, unknown>;
  claims: Map<string, unknown>;
  pending: Map<string, number>;
  waits: Map<string, number>;
  handoffs: Set<string>;
  heldStatus: Map<string, unknown>;
  reconcile: () => void;
  chains$: Subject<Observable<unknown>>;
}

const rec = (v: unknown) => Buffer.from(JSON.stringify(v));

async function worker() {
  const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
  const w = new Worker(config);
  const i = w as unknown as Internals;
  const t = { cameras: config.cluster!.camerasTopic, owners: config.cluster!.ownersTopic };
  i.view = new ClusterView(brokerlessKafka().kafka, t, 'g', {}, undefined, {});
  await i.view.start(brokerlessAdmin());
  joinedWithCam0(i);
  i.view.cameras.clear();
  (i.membership as { lastAlive: number }).lastAlive = Infinity; // the lease holds however long the test takes
  // A camera's chain ends when it is stopped (frames in flight: none).
  i.pipeline = { attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
  i.chains$.pipe(mergeAll()).subscribe(); // what runPipeline subscribes to
  let offset = 0;
  i.owners = {
    claim: async (ids: string[]) =>
      ids.map((camera) => {
        const epoch = offset++;
        i.view.ingest(t.owners, 0, camera, rec({ type: 'claim', camera, owner: 'w1', incarnation: w.incarnation, at: 1 }), String(epoch));
        return epoch;
      }),
    release: async (camera: string, epoch: number) => i.view.ingest(t.owners, 0, camera, rec({ type: 'release', camera, owner: 'w1', incarnation: w.incarnation, epoch, at: 2 }), String(offset++)),
    ready: async () => {},
  };
  let camOffset = 0;
  const settle = async () => {
    for (let k = 0; k < 3; k++) {
      i.reconcile();
      await i.step;
    }
  };
  return {
    w,
    i,
    settle,
    add: (id: string) => i.view.ingest(t.cameras, 0, id, rec({ id, uri: 'rtsp://h/x' }), String(camOffset++)),
    remove: (id: string) => i.view.ingest(t.cameras, 0, id, null, String(camOffset++)),
  };
}

describe('Worker: cameras that come and go leave nothing behind', () => {
  it('500 cameras started here and removed again: no claim, pending claim, wait or owners-topic entry is left; a camera still running keeps its claim', async () => {
    const { w, i, settle, add, remove } = await worker();
    add('stays');
    await settle();
    expect(w.claimOf('stays')).toMatchObject({ owner: 'w1' });
    for (let k = 0; k < 500; k++) {
      add(`cam${k}`);
      await settle();
      expect(w.cameras().map((c) => c.id)).toContain(`cam${k}`); // it ran here under its claim
      remove(`cam${k}`);
      await settle();
    }
    expect(w.cameras().map((c) => c.id)).toEqual(['stays']);
    expect([...i.claims.keys()]).toEqual(['stays']);
    expect([i.running.size, i.pending.size, i.waits.size, i.handoffs.size, i.heldStatus.size]).toEqual([1, 0, 0, 0, 0]);
    expect([...i.view.owners.keys()]).toEqual(['stays']);
    expect([i.view.open.size, i.view.connected.size]).toEqual([1, 0]);
  });

  it('cameras whose slot went to another worker are forgotten once stopped here', async () => {
    const { i, settle, add } = await worker();
    for (let k = 0; k < 50; k++) add(`cam${k}`);
    await settle();
    expect(i.claims.size).toBe(50);
    i.assigned = new Set([1]); // slot 0 is another worker's now (it read no "ready": the handoff runs out)
    (i as unknown as { c: { releaseWaitMs: number } }).c.releaseWaitMs = 0;
    await settle();
    expect([i.running.size, i.claims.size, i.handoffs.size]).toEqual([0, 0, 0]);
  });

  it('a handoff whose camera a fence stopped is dropped', async () => {
    const { i, settle } = await worker();
    i.handoffs.add('gone');
    await settle();
    expect(i.handoffs.size).toBe(0);
  });
});
