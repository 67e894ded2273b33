import { describe, expect, it } from 'vitest';
import { AssignerProtocol } from 'kafkajs';
import { homeSlot, mixedSlots, parseLabels, placeCameras, statusOf, type CameraStatus } from '../../src/cluster/admin.js';
import { chooseSlot, placementKey, satisfies, SlotPlacements, unmet } from '../../src/cluster/placement.js';
import { ClusterView } from '../../src/cluster/view.js';
import { CameraSchema, ClusterSchema } from '../../src/config/schema.js';

const w = (workerId: string, labels: Record<string, string> = {}) => ({ workerId, labels });

describe('placement: which worker may run a camera', () => {
  it('labels must all match; a pin names the one worker; no placement runs anywhere', () => {
    expect(satisfies(undefined, w('a'))).toBe(true);
    expect(satisfies({ labels: { gpu: 'yes', site: 'dock' } }, w('a', { gpu: 'yes', site: 'dock', x: '1' }))).toBe(true);
    expect(satisfies({ labels: { gpu: 'yes', site: 'dock' } }, w('a', { gpu: 'yes' }))).toBe(false);
    expect(satisfies({ labels: { gpu: 'yes' } }, w('a', { gpu: 'no' }))).toBe(false);
    expect(satisfies({ pin: 'b' }, w('a'))).toBe(false);
    expect(satisfies({ pin: 'b', labels: { gpu: 'yes' } }, w('b', { gpu: 'yes' }))).toBe(true);
    expect(unmet({ labels: { gpu: 'yes', site: 'dock' } }, w('a', { gpu: 'yes' }))).toBe('needs site=dock');
    expect(unmet({ pin: 'b' }, w('a'))).toBe('pinned to b');
    expect(unmet({ pin: 'b', labels: { gpu: 'yes' } }, w('a'))).toBe('pinned to b; needs gpu=yes');
  });

  it('the placement key is canonical: label order does not matter; empty placement is "anywhere"', () => {
    expect(placementKey({ labels: { a: '1', b: '2' } })).toBe(placementKey({ labels: { b: '2', a: '1' } }));
    expect(placementKey({})).toBe('');
    expect(placementKey({ labels: {} })).toBe('');
    expect(placementKey({ pin: 'x' })).not.toBe(placementKey({ pin: 'y' }));
  });

  it('the schema: a camera’s placement and a worker’s labels are validated, naming the field', () => {
    expect(CameraSchema.parse({ id: 'c', uri: 'rtsp://h/x', placement: { pin: 'w1', labels: { gpu: 'yes' } } }).placement).toEqual({ pin: 'w1', labels: { gpu: 'yes' } });
    const bad = CameraSchema.safeParse({ id: 'c', uri: 'rtsp://h/x', placement: { pin: 'w 1' } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0].path).toEqual(['placement', 'pin']);
    expect(CameraSchema.safeParse({ id: 'c', uri: 'rtsp://h/x', placement: { where: 'x' } }).success).toBe(false);
    expect(ClusterSchema.parse({ labels: { site: 'dock' } }).labels).toEqual({ site: 'dock' });
    expect(ClusterSchema.parse({}).labels).toEqual({});
    expect(ClusterSchema.safeParse({ labels: { 'bad name': 'x' } }).success).toBe(false);
    expect(parseLabels(['gpu=yes', 'site=a=b'])).toEqual({ gpu: 'yes', site: 'a=b' });
    expect(() => parseLabels(['gpu'])).toThrow(/--label gpu: expected name=value/);
  });
});

describe('chooseSlot: the cameras of one slot share their placement', () => {
  it('home slot when it fits; the next fitting slot otherwise; the current slot is kept while it fits', () => {
    const cams = [
      { id: 'a', slot: 3, key: '' },
      { id: 'p', slot: 4, key: 'P' },
    ];
    expect(chooseSlot('new', '', 3, 8, cams)).toBe(3); // shares slot 3 with another unplaced camera
    expect(chooseSlot('new', 'P', 3, 8, cams)).toBe(4); // slot 3 holds "anywhere" cameras: next, 4, holds P
    expect(chooseSlot('new', 'Q', 3, 8, cams)).toBe(5); // an empty slot
    expect(chooseSlot('new', '', 4, 8, cams)).toBe(5); // an unplaced camera stays out of a pinned slot
    expect(chooseSlot('new', 'Q', 7, 8, [...cams, { id: 'z', slot: 7, key: '' }])).toBe(0); // wraps around
    expect(chooseSlot('a', '', 0, 8, cams)).toBe(3); // an edit stays where it is
    expect(chooseSlot('a', 'Q', 3, 8, [...cams, { id: 'b', slot: 3, key: '' }])).toBe(5); // a new placement moves it off shared slot 3
    expect(chooseSlot('a', 'Q', 3, 8, cams)).toBe(3); // alone in its slot: it stays
    const full = Array.from({ length: 4 }, (_, i) => ({ id: `c${i}`, slot: i, key: `K${i}` }));
    expect(chooseSlot('new', 'Q', 0, 4, full)).toBeUndefined();
  });

  it('placeCameras: records carry their slot; a camera that moves gets a tombstone in its old slot, written first', () => {
    const view = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
    const rec = (v: unknown) => Buffer.from(JSON.stringify(v));
    const plain = { id: 'cam', uri: 'rtsp://h/x' };
    const home = homeSlot('c', 'cam', 8);
    view.ingest('c', home, 'cam', rec(plain), '0');
    const other = (home + 1) % 8;
    view.ingest('c', home, 'mate', rec({ id: 'mate', uri: 'rtsp://h/y' }), '1');
    const pinned = JSON.stringify({ ...plain, placement: { pin: 'w2' } });
    const out = placeCameras('c', view, [{ id: 'cam', value: pinned }], 8);
    expect(out).toEqual([
      { key: 'cam', value: null, partition: home },
      { key: 'cam', value: pinned, partition: other },
    ]);
    // an edit that keeps its placement stays in its slot, with no tombstone
    expect(placeCameras('c', view, [{ id: 'mate', value: JSON.stringify({ id: 'mate', uri: 'rtsp://h/z' }) }], 8)).toEqual([{ key: 'mate', value: expect.any(String), partition: home }]);
    // two new cameras of one file with different pins land in different slots
    const two = placeCameras('c', view, [
      { id: 'x1', value: JSON.stringify({ id: 'x1', uri: 'rtsp://h/1', placement: { pin: 'w1' } }) },
      { id: 'x2', value: JSON.stringify({ id: 'x2', uri: 'rtsp://h/2', placement: { pin: 'w2' } }) },
    ], 8);
    expect(two[0].partition).not.toBe(two[1].partition);
    // homeSlot is Kafka's default partitioner (murmur2, as Java's): the same key always lands in one slot, spread over all
    const spread = new Set(Array.from({ length: 200 }, (_, i) => homeSlot('c', `cam-${i}`, 8)));
    expect(spread.size).toBe(8);
  });
});

describe('SlotPlacements: placing many cameras', () => {
  /** chooseSlot as first written: every camera placed so far read for each choice. */
  function naive(id: string, key: string, home: number, slots: number, cameras: { id: string; slot: number; key: string }[]): number | undefined {
    const keys = new Map<number, Set<string>>();
    for (const c of cameras) if (c.id !== id) keys.set(c.slot, (keys.get(c.slot) ?? new Set()).add(c.key));
    const fits = (s: number) => !keys.get(s) || (keys.get(s)!.size === 1 && keys.get(s)!.has(key));
    const cur = cameras.find((c) => c.id === id);
    if (cur && cur.slot < slots && fits(cur.slot)) return cur.slot;
    for (let i = 0; i < slots; i++) if (fits((home + i) % slots)) return (home + i) % slots;
    return undefined;
  }

  it('chooses as reading every camera would, through adds, edits and moves', () => {
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const list: { id: string; slot: number; key: string }[] = [];
    const placed = new SlotPlacements();
    for (let step = 0; step < 3000; step++) {
      const id = `c${rnd(400)}`;
      const key = ['', '', 'P', 'Q', 'R'][rnd(5)];
      const home = rnd(16);
      const want = naive(id, key, home, 16, list);
      expect(placed.choose(id, key, home, 16)).toBe(want);
      if (want === undefined) continue;
      const at = list.findIndex((c) => c.id === id);
      if (at >= 0) list.splice(at, 1);
      list.push({ id, slot: want, key });
      placed.put({ id, slot: want, key });
    }
  });

  it('argus cameras apply of 20 000 cameras places them in time linear in their number (each choice read every camera placed so far: 4.4 s for 10 000)', () => {
    const cameras = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `cam${i}`, value: JSON.stringify({ id: `cam${i}`, uri: `rtsp://h/${i}`, ...(i % 10 === 0 ? { placement: { labels: { gpu: 'yes' } } } : {}) }) }));
    /** placeCameras of `cams` on a fresh view, and the CPU time it took, ms (this process's: not another's on a busy machine). */
    const placed = (cams: ReturnType<typeof cameras>) => {
      const view = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
      const t0 = process.cpuUsage();
      const out = placeCameras('c', view, cams, 32);
      const t = process.cpuUsage(t0);
      return { out, ms: (t.user + t.system) / 1000 };
    };
    placed(cameras(1000)); // (the JIT warmed)
    const small = placed(cameras(5000));
    const { out, ms } = placed(cameras(20_000));
    // Four times the cameras, side by side: linear, about 4 times the time (0.17 and 0.7 s here);
    // quadratic, 16. Before, a wall-clock bound of 8 s: a run with five agents beside it took 8.5 s.
    expect(ms / Math.max(small.ms, 1), `${small.ms.toFixed(0)} ms for 5000, ${ms.toFixed(0)} ms for 20 000`).toBeLessThan(9);
    expect(out).toHaveLength(20_000);
    const keysBySlot = new Map<number, Set<boolean>>();
    out.forEach((m, i) => keysBySlot.set(m.partition!, (keysBySlot.get(m.partition!) ?? new Set()).add(i % 10 === 0)));
    expect([...keysBySlot.values()].every((k) => k.size === 1)).toBe(true); // no slot mixes placements
  });
});

describe('placement as every worker reads it: from the record as written', () => {
  const rec = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
  it('a worker lacking a camera’s ${env:} variable still reads its placement and that it is meant to run (the leader assigns by it); a placement reading the environment is refused', () => {
    const text = { id: 'dock', uri: 'rtsp://u:${env:ARGUS_CAMERA_PW}@h/x', placement: { labels: { site: 'dock' } } };
    const without = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
    const saved = process.env.ARGUS_CAMERA_PW;
    delete process.env.ARGUS_CAMERA_PW;
    try {
      without.ingest('c', 1, 'dock', rec(text), '0');
    } finally {
      if (saved !== undefined) process.env.ARGUS_CAMERA_PW = saved;
    }
    const e = without.cameras.get('dock')!;
    expect(e.definition).toBeUndefined(); // it cannot run here…
    expect(e.error).toMatch(/ARGUS_CAMERA_PW/);
    expect(e.placement).toEqual({ labels: { site: 'dock' } }); // …but its placement is known
    expect(e.active).toBe(true);
    const v = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
    v.ingest('c', 2, 'sneaky', rec({ id: 'sneaky', uri: 'rtsp://h/x', placement: { pin: '${env:ARGUS_CAMERA_WHO}' } }), '0');
    expect(v.cameras.get('sneaky')).toMatchObject({ active: false, error: expect.stringMatching(/placement: may not read \$\{env:/) });
    v.ingest('c', 3, 'off', rec({ id: 'off', uri: 'rtsp://h/x', enabled: false, placement: { pin: 'w1' } }), '0');
    expect(v.cameras.get('off')).toMatchObject({ active: false, placement: { pin: 'w1' } });
  });

  it('a hand-written YAML record’s placement counts (argus cameras keeps other cameras out of its slot); mixed slots are found', () => {
    const v = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
    const home = homeSlot('c', 'plain', 8);
    v.ingest('c', home, 'gpu', rec('id: gpu\nuri: rtsp://h/x\nplacement:\n  labels: { gpu: "yes" }\n'), '0');
    expect(v.cameras.get('gpu')!.placement).toEqual({ labels: { gpu: 'yes' } });
    const out = placeCameras('c', v, [{ id: 'plain', value: JSON.stringify({ id: 'plain', uri: 'rtsp://h/y' }) }], 8);
    expect(out).toEqual([{ key: 'plain', value: expect.any(String), partition: (home + 1) % 8 }]);
    expect(mixedSlots(v).size).toBe(0);
    // two admins at once put different placements in one slot: found, so apply places them anew
    v.ingest('c', home, 'pin2', rec({ id: 'pin2', uri: 'rtsp://h/z', placement: { pin: 'w2' } }), '1');
    expect(mixedSlots(v)).toEqual(new Map([[home, ['gpu', 'pin2']]]));
    const again = placeCameras('c', v, [{ id: 'gpu', value: v.cameras.get('gpu')!.text }, { id: 'pin2', value: v.cameras.get('pin2')!.text }], 8);
    const slotOf = (id: string) => again.find((m) => m.key === id && m.value !== null)!.partition;
    expect(slotOf('gpu')).not.toBe(slotOf('pin2'));
    expect(again.filter((m) => m.value === null)).toHaveLength(1); // the one that moved leaves a tombstone
  });

  it('cluster status: a slot nobody satisfies is named with why; a group caught mid-rebalance (the broker describes no slots then) names no camera unassigned', () => {
    const t = { brokers: [], cluster: ClusterSchema.parse({}) };
    const topic = t.cluster.camerasTopic;
    const member = (workerId: string, slots: number[] | null, labels: Record<string, string> = {}) => ({
      memberId: `${workerId}-m`,
      memberMetadata: slots ? AssignerProtocol.MemberMetadata.encode({ version: 1, topics: [topic], userData: Buffer.from(JSON.stringify({ workerId, incarnation: 'i', capacity: 8, owned: slots, labels, placement: true })) }) : Buffer.alloc(0),
      memberAssignment: slots ? AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { [topic]: slots }, userData: Buffer.alloc(0) }) : Buffer.alloc(0),
    });
    const cams: CameraStatus[] = [
      { id: 'a', slot: 0, cost: 1, enabled: true, owner: 'w1', state: 'claimed' },
      { id: 'b', slot: 1, cost: 1, enabled: true, owner: 'w2', state: 'claimed' },
      { id: 'gpu', slot: 2, cost: 1, enabled: true, placement: { labels: { role: 'gpu' } } },
    ];
    const v = new ClusterView({} as never, { cameras: 'c', owners: 'o' });
    const stable = statusOf(t, { state: 'Stable', members: [member('w1', [0], { role: 'none' }), member('w2', [1])] }, cams, v);
    expect(stable).toMatchObject({ state: 'Stable', rebalancing: false, unassigned: ['gpu'], unplaceable: { gpu: 'needs role=gpu: no worker in the group has that' } });
    expect(stable.workers.map((w) => [w.worker, w.slots, w.cameras])).toEqual([['w1', [0], ['a']], ['w2', [1], ['b']]]);
    // what describeGroups returns while the group rebalances: members without metadata or assignment
    for (const state of ['PreparingRebalance', 'CompletingRebalance']) {
      const mid = statusOf(t, { state, members: [member('w1', null), member('w2', null)] }, cams, v);
      expect(mid).toMatchObject({ state, rebalancing: true, unassigned: [], unplaceable: {} });
    }
    // no worker at all: every enabled camera is truly unassigned
    expect(statusOf(t, { state: 'Empty', members: [] }, cams, v).unassigned).toEqual(['a', 'b', 'gpu']);
  });
});
