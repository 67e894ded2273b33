/**
 * A camera of the worker's slots, enabled as written, whose record the worker cannot use (a
 * `${env:ARGUS_CAMERA_…}` its environment lacks) runs nowhere; `argus cameras ls`, which reads the
 * records without the workers' environments, can only call it waiting. The worker says why, once
 * per record: before, it said nothing, and an edit that added an unset variable stopped a running
 * camera without a word. Drives the worker without a broker.
 */
import { filter, mergeAll, type Observable, type Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ClusterView } from '../../src/cluster/view.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { Worker } from '../../src/cluster/worker.js';
import type { LogLevel } from '../../src/core/log.js';
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
  reconcile: () => void;
  chains$: Subject<Observable<unknown>>;
}

const rec = (v: unknown) => Buffer.from(JSON.stringify(v));

async function worker() {
  const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } });
  const lines: { msg: string; fields?: Record<string, unknown>; level?: LogLevel }[] = [];
  const w = new Worker(config, (msg, fields, level) => lines.push({ msg, fields, level }));
  const i = w as unknown as Internals;
  const t = { cameras: config.cluster!.camerasTopic, owners: config.cluster!.ownersTopic };
  // This worker's environment: the dock camera's user, not its password.
  i.view = new ClusterView(brokerlessKafka().kafka, t, 'g', { ARGUS_CAMERA_DOCK_USER: 'viewer' }, undefined, {});
  await i.view.start(brokerlessAdmin());
  joinedWithCam0(i);
  i.view.cameras.clear();
  (i.membership as { lastAlive: number }).lastAlive = Infinity;
  i.pipeline = { attach: (_src: unknown, stop$: Observable<void>) => stop$.pipe(filter(() => false)) };
  i.chains$.pipe(mergeAll()).subscribe();
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
  const write = (id: string, v: Record<string, unknown>) => i.view.ingest(t.cameras, 0, id, rec({ id, ...v }), String(camOffset++));
  const said = () => lines.filter((l) => l.level === 'error' && /runs nowhere/.test(l.msg));
  return { i, settle, write, said };
}

describe('Worker: a camera of its slots whose record it cannot use', () => {
  it('is logged once, coded, naming the camera and the variable; again only when its record changes', async () => {
    const { i, settle, write, said } = await worker();
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    await settle();
    expect(i.running.has('dock')).toBe(false);
    expect(said()).toHaveLength(1);
    expect(said()[0].msg).toMatch(/camera dock \(slot 0\) runs nowhere.*ARGUS_CAMERA_DOCK_PASSWORD/);
    expect(said()[0].fields).toMatchObject({ camera: 'dock', code: 'VAP_ERR_CONFIG' });
    write('dock', { uri: 'rtsp://${env:ARGUS_CAMERA_DOCK_USER}:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.11/s' });
    await settle();
    expect(said()).toHaveLength(2);
  });

  it('an edit that makes a running camera unusable stops it and says why', async () => {
    const { i, settle, write, said } = await worker();
    write('dock', { uri: 'rtsp://192.0.2.10/s' });
    await settle();
    expect(i.running.has('dock')).toBe(true);
    expect(said()).toHaveLength(0);
    write('dock', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    expect(i.running.has('dock')).toBe(false);
    expect(said()).toHaveLength(1);
  });

  it('says nothing of a disabled camera, nor of one in a slot it does not hold', async () => {
    const { settle, write, said, i } = await worker();
    write('off', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s', enabled: false });
    await settle();
    i.assigned = new Set([1]);
    write('elsewhere', { uri: 'rtsp://viewer:${env:ARGUS_CAMERA_DOCK_PASSWORD}@192.0.2.10/s' });
    await settle();
    expect(said()).toHaveLength(0);
  });
});
