/**
 * What a worker's view of the cluster holds is bounded: the owners topic's state of cameras that
 * are gone is forgotten (cameras added and removed over months left an entry in owners, open and
 * connected for every id ever claimed), and the cameras topic gives it at most cluster.maxCameras
 * ids (whoever could write the topic filled every worker's memory with valid records under new keys).
 * Drives the view without a broker: its consumer's batches are fed as the broker would.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkCameraCount } from '../../src/cluster/admin.js';
import { ClusterView } from '../../src/cluster/view.js';
import { ClusterSchema, PipelineSchema } from '../../src/config/schema.js';
import { Worker } from '../../src/cluster/worker.js';
import { Metrics } from '../../src/server/metrics.js';
import { brokerlessAdmin, brokerlessKafka } from '../helpers/worker.js';

const T = { cameras: 'c', owners: 'o' };
const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
const camera = (id: string) => rec({ id, uri: 'rtsp://h/x' });
const claim = (camera: string, owner = 'A') => rec({ type: 'claim', camera, owner, incarnation: 'i1', at: 1 });
const release = (camera: string, epoch: number, owner = 'A') => rec({ type: 'release', camera, owner, incarnation: 'i1', epoch, at: 2 });
const ready = (camera: string) => rec({ type: 'ready', camera, owner: 'B', incarnation: 'i2', at: 1 });

async function started(opts: { maxCameras?: number; log?: (...a: unknown[]) => void } = {}, ends: Record<string, number> = {}) {
  const k = brokerlessKafka();
  const v = new ClusterView(k.kafka, T, 'g', {}, undefined, opts);
  await v.start(brokerlessAdmin(ends));
  return { v, batch: k.batch };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('ClusterView: the owners topic’s state of cameras that are gone is forgotten', () => {
  it('20 000 cameras added, claimed, handed over, released and removed leave nothing behind', async () => {
    const { v } = await started();
    let o = 0;
    for (let i = 0; i < 20_000; i++) {
      const id = `cam${i}`;
      v.ingest('c', i % 8, id, camera(id), String(2 * i));
      const epoch = o++;
      v.ingest('o', 0, id, claim(id), String(epoch));
      v.ingest('o', 0, `ready/${id}`, ready(id), String(o++));
      v.ingest('o', 0, id, release(id, epoch), String(o++));
      v.ingest('c', i % 8, id, null, String(2 * i + 1));
    }
    expect([v.cameras.size, v.owners.size, v.open.size, v.connected.size]).toEqual([0, 0, 0, 0]);
  });

  it('a camera that stays keeps its last owner; one removed while its claim is open keeps the claim until it is released (re-added, its new owner waits for it)', async () => {
    const { v } = await started();
    v.ingest('c', 0, 'stays', camera('stays'), '0');
    v.ingest('c', 1, 'gone', camera('gone'), '0');
    v.ingest('o', 0, 'stays', claim('stays'), '0');
    v.ingest('o', 0, 'stays', release('stays', 0), '1');
    v.ingest('o', 0, 'gone', claim('gone'), '2');
    v.ingest('o', 0, 'ready/gone', ready('gone'), '3');
    v.ingest('c', 1, 'gone', null, '1');
    expect(v.owners.get('stays')).toMatchObject({ owner: 'A', state: 'released' });
    expect(v.openBefore('gone', 10)).toEqual([{ owner: 'A', incarnation: 'i1', epoch: 2 }]);
    v.ingest('c', 1, 'gone', camera('gone'), '2'); // re-added before its old owner let go
    expect(v.openBefore('gone', 10)).toHaveLength(1);
    v.ingest('c', 1, 'gone', null, '3');
    v.ingest('o', 0, 'gone', release('gone', 2), '4');
    expect([...v.owners.keys()]).toEqual(['stays']);
    expect([v.open.size, v.connected.size]).toEqual([0, 0]);
  });

  it('claims left open by cameras that are gone (their owner crashed) are kept for maxCameras cameras at most, the oldest dropped first', async () => {
    const { v } = await started({ maxCameras: 10 });
    for (let i = 0; i < 100; i++) v.ingest('o', 0, `cam${i}`, claim(`cam${i}`), String(i));
    expect(v.open.size).toBe(10);
    expect(v.owners.size).toBe(10);
    expect([...v.open.keys()]).toEqual(Array.from({ length: 10 }, (_, k) => `cam${90 + k}`));
  });

  it('nothing is forgotten before the cameras topic is read to its end (the owners topic may be read first at start), then what is gone is', async () => {
    const { v, batch } = await started({}, { 'c/0': 2, 'o/0': 4 });
    await batch('o', 0, [
      { key: 'cam1', value: claim('cam1'), offset: '0' },
      { key: 'cam1', value: release('cam1', 0), offset: '1' },
      { key: 'old', value: claim('old'), offset: '2' },
      { key: 'old', value: release('old', 2), offset: '3' },
    ]);
    expect([...v.owners.keys()].sort()).toEqual(['cam1', 'old']); // cam1's record not read yet
    await batch('c', 0, [
      { key: 'cam1', value: camera('cam1'), offset: '0' },
      { key: 'old', value: null, offset: '1' },
    ]);
    expect([...v.owners.keys()]).toEqual(['cam1']);
    expect(v.owners.get('cam1')).toMatchObject({ owner: 'A', state: 'released' });
  });

  it('a drain undone and a "ready" tombstone leave no entry', async () => {
    const { v } = await started();
    v.ingest('c', 0, 'x', camera('x'), '0');
    v.ingest('o', 0, 'drain/w1', rec({ type: 'drain', worker: 'w1', drain: true, at: 1 }), '0');
    v.ingest('o', 0, 'ready/x', ready('x'), '1');
    expect([v.drains.get('w1'), v.connected.has('x')]).toEqual([true, true]);
    v.ingest('o', 0, 'drain/w1', rec({ type: 'drain', worker: 'w1', drain: false, at: 2 }), '2');
    v.ingest('o', 0, 'ready/x', null, '3');
    expect([v.drains.size, v.connected.size]).toEqual([0, 0]);
  });

  it('a worker keeps only its own drain request: 100 000 drain records of other ids leave nothing (a million held 242 MiB in every worker); argus cluster status still reads every one', () => {
    const w = new Worker(PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'w1' } }));
    const admin = new ClusterView({} as never, T, 'g', {}, undefined, { maxCameras: Infinity });
    const drain = (worker: string, on: boolean, offset: number) => {
      for (const v of [w.view, admin]) v.ingest(w.view === v ? 'argus.owners' : 'o', 0, `drain/${worker}`, rec({ type: 'drain', worker, drain: on, at: 1 }), String(offset));
    };
    for (let i = 0; i < 100_000; i++) drain(`other-${i}`, true, i);
    drain('w1', true, 100_000);
    expect(w.view.drains.size).toBe(1);
    expect(w.view.drains.get('w1')).toBe(true);
    expect(admin.drains.size).toBe(100_001);
    drain('w1', false, 100_001);
    expect(w.view.drains.size).toBe(0);
  });
});

describe('ClusterView: at most cluster.maxCameras cameras', () => {
  it('a record of a new id past the bound is refused, counted and logged once a minute with its key and code; ids it holds are still updated and removed, and a removal makes room', async () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const log = vi.fn();
    const { v } = await started({ maxCameras: 3, log });
    for (let i = 0; i < 3; i++) v.ingest('c', i, `cam${i}`, camera(`cam${i}`), '0');
    for (let i = 3; i < 1000; i++) v.ingest('c', i % 8, `junk${i}`, camera(`junk${i}`), String(i));
    expect(v.cameras.size).toBe(3);
    expect(v.refusedCameras).toBe(997);
    expect(log).toHaveBeenCalledTimes(1);
    expect(log.mock.calls[0][0]).toMatch(/camera record "junk3" refused: this worker holds 3 cameras already \(cluster\.maxCameras\)/);
    expect(log.mock.calls[0][1]).toMatchObject({ code: 'VAP_ERR_CAMERA_LIMIT', camera: 'junk3' });
    expect(log.mock.calls[0][2]).toBe('error');
    v.ingest('c', 0, 'cam0', rec({ id: 'cam0', uri: 'rtsp://h/y' }), '5000'); // an edit of a camera it holds
    expect(v.cameras.get('cam0')!.definition!.source.uri).toBe('rtsp://h/y');
    vi.advanceTimersByTime(60_000);
    v.ingest('c', 1, 'junkA', camera('junkA'), '5000');
    expect(log).toHaveBeenCalledTimes(2);
    expect(log.mock.calls[1][0]).toMatch(/"junkA" refused.*\(997 records refused since the last such line, 998 in all\)/);
    v.ingest('c', 1, 'cam1', null, '5001');
    // The room goes to the record held aside longest (maxCameras of them at most, here 3).
    expect([...v.cameras.keys()].sort()).toEqual(['cam0', 'cam2', 'junk3']);
    v.ingest('c', 2, 'cam2', null, '5001');
    expect([...v.cameras.keys()].sort()).toEqual(['cam0', 'junk3', 'junk4']);
  });

  it('at the bound, a camera removed and another added in its place, read in either order (slots are read in any order: at start, or while argus cameras writes them): the new one runs', async () => {
    for (const newFirst of [true, false]) {
      const { v } = await started({ maxCameras: 2 });
      v.ingest('c', 0, 'old', camera('old'), '0');
      v.ingest('c', 1, 'stays', camera('stays'), '0');
      const removal = () => v.ingest('c', 0, 'old', null, '1');
      const addition = () => v.ingest('c', 1, 'new', camera('new'), '1');
      if (newFirst) {
        addition();
        expect([...v.cameras.keys()].sort()).toEqual(['old', 'stays']); // held aside, not dropped
        removal();
      } else {
        removal();
        addition();
      }
      expect([...v.cameras.keys()].sort()).toEqual(['new', 'stays']);
      expect(v.cameras.get('new')!.definition!.source.uri).toBe('rtsp://h/x');
    }
  });

  it('a record held aside and then removed (or rewritten) is taken in as its latest record says, or not at all', async () => {
    const { v } = await started({ maxCameras: 1 });
    v.ingest('c', 0, 'a', camera('a'), '0');
    v.ingest('c', 1, 'b', camera('b'), '0');
    v.ingest('c', 1, 'b', rec({ id: 'b', uri: 'rtsp://h/b2' }), '1');
    v.ingest('c', 2, 'c', camera('c'), '0');
    v.ingest('c', 2, 'c', null, '1');
    v.ingest('c', 0, 'a', null, '1');
    expect([...v.cameras.keys()]).toEqual(['b']);
    expect(v.cameras.get('b')!.definition!.source.uri).toBe('rtsp://h/b2');
    v.ingest('c', 1, 'b', null, '2');
    expect(v.cameras.size).toBe(0);
  });

  it('a key longer than a camera id may be is refused, not kept (the log names its start and length)', async () => {
    const log = vi.fn();
    const { v } = await started({ log });
    const key = 'k'.repeat(100_000);
    v.ingest('c', 0, key, camera('x'), '0');
    expect(v.cameras.size).toBe(0);
    expect(v.refusedCameras).toBe(1);
    expect(log.mock.calls[0][0]).toMatch(/k{128}… \(100000 characters\)" refused: its key has 100000 characters; a camera id has at most 128/);
  });

  it('/metrics counts the cameras held and the records refused', async () => {
    const { v } = await started({ maxCameras: 2 });
    for (let i = 0; i < 5; i++) v.ingest('c', 0, `cam${i}`, camera(`cam${i}`), String(i));
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', cluster: () => ({ worker: 'w1', cameras: [], lease: true, counters: { claims: 0, releases: 0, fencings: 0, fencedFrames: 0, forcedClaims: 0, rebalancesAsked: 0, unreachableReports: 0 }, unreachable: [], view: { cameras: v.cameras.size, refused: v.refusedCameras }, notRun: { refusedHere: 0, refusedRecord: 0, envMissing: 0 } }) });
    const text = await metrics.scrape();
    expect(text).toMatch(/^argus_cluster_cameras 2$/m);
    expect(text).toMatch(/^argus_cluster_cameras_refused_total 3$/m);
  });

  it('cluster.maxCameras defaults to 10 000 and is a positive whole number', () => {
    expect(ClusterSchema.parse({}).maxCameras).toBe(10_000);
    expect(ClusterSchema.safeParse({ maxCameras: 0 }).success).toBe(false);
    expect(ClusterSchema.safeParse({ maxCameras: 1.5 }).success).toBe(false);
  });
});

describe('argus cameras apply/add: no more cameras than a worker holds', () => {
  it('refuses, naming cluster.maxCameras, a topic that would hold more cameras than cluster.maxCameras', () => {
    expect(() => checkCameraCount(10_000, 10_000)).not.toThrow();
    expect(() => checkCameraCount(10_001, 10_000)).toThrow(expect.objectContaining({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/^cluster\.maxCameras: the cameras topic would hold 10001 cameras; a worker holds 10000 at most/) }));
  });
});
