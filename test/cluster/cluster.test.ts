import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOwnership, clusterNames, Collector, currentOwners, firstFrameAfter, lostFrames, sleep, until, WorkerProcess, writeCamerasYaml, writeWorkerYaml, type ClusterNames } from '../../src/bench/cluster.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { ARGUS, runCommand } from '../helpers/cli.js';
import { testBrokers } from '../helpers/kafka.js';
import { rtspServer } from '../helpers/rtsp.js';
import { testPort } from '../helpers/ports.js';

const { rtsp, publish } = rtspServer(testPort(18574));

/**
 * Issue 15: three (then four) `argus worker` processes, six RTSP cameras from the real RTSP
 * server, one real broker. Every check of exclusivity is made from the owner and epoch of the
 * messages read back from Kafka (src/bench/cluster.ts, checkOwnership). Timings are printed,
 * and asserted only with bounds that end a hang (the figures are npm run bench:cluster's).
 */

const CAMERAS = 6;
let dir: string;
let brokers: string[];
let names: ClusterNames;
let yaml: string;
let camerasFile: string;
let collector: Collector;
const workers = new Map<string, WorkerProcess>();
const urls: string[] = [];

const argus = (...args: string[]) => runCommand(process.execPath, [ARGUS, ...args, '--config', yaml], { W: 'cli' }, 120_000);
const owners = (windowMs = 2500) => currentOwners(collector.seen, Date.now(), windowMs);
/** Every camera delivered within the last windowMs. */
const allRunning = (ids: string[], windowMs = 2500) => {
  const o = owners(windowMs);
  return ids.every((id) => o.has(id));
};
const camIds = () => Array.from({ length: CAMERAS }, (_, i) => `cam${i}`);
const byOwner = () => {
  const m = new Map<string, string[]>();
  for (const [cam, o] of owners()) m.set(o.owner, [...(m.get(o.owner) ?? []), cam]);
  return m;
};
/** Waits until no camera changed owner or epoch for 4 s (moves of an earlier step have ended). */
async function settled(): Promise<void> {
  const key = () => [...owners()].map(([c, o]) => `${c}:${o.owner}:${o.epoch}`).sort().join(',');
  for (let i = 0; i < 30; i++) {
    const a = key();
    await sleep(4000);
    if (key() === a && allRunning(camIds())) return;
  }
}
/** Every message of `topic` (parsed JSON), read from its start up to its end offsets now. */
async function readTopic<T>(brokers: string[], topic: string): Promise<T[]> {
  const kafka = new Kafka({ clientId: 'argus-topic-reader', brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  await admin.disconnect();
  const out: T[] = [];
  const consumer = kafka.consumer({ groupId: `topic-reader-${Date.now()}-${Math.random().toString(36).slice(2)}`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const done = new Set<number>([...ends].filter(([, end]) => end === 0n).map(([p]) => p));
  await new Promise<void>((resolve) => {
    if (done.size === ends.size) return resolve();
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (message.value) out.push(JSON.parse(message.value.toString('utf8')) as T);
        if (BigInt(message.offset) + 1n >= ends.get(partition)!) done.add(partition);
        if (done.size === ends.size) resolve();
      },
    });
  });
  await consumer.disconnect();
  return out;
}
/** The last status message of each source in `topic`. */
async function lastStatuses(brokers: string[], topic: string): Promise<Map<string, { state: string; owner?: string; epoch?: number }>> {
  const last = new Map<string, { state: string; owner?: string; epoch?: number }>();
  for (const m of await readTopic<{ source: string; state: string; owner?: string; epoch?: number }>(brokers, topic)) last.set(m.source, { state: m.state, owner: m.owner, epoch: m.epoch });
  return last;
}
const printLog = (w: WorkerProcess) => w.log.split('\n').filter((l) => l.includes('cluster:')).slice(-30).join('\n');

beforeAll(async () => {
  brokers = await testBrokers();
  dir = mkdtempSync(join(tmpdir(), 'argus-cluster-'));
  names = clusterNames('t15');
  yaml = writeWorkerYaml(dir, brokers, names);
  await rtsp('start');
  for (let i = 0; i < CAMERAS; i++) urls.push(await publish(`k${i}`, PERSON_VIDEO)); // 10 fps, a key frame every second
  camerasFile = join(dir, 'cameras.yaml');
  writeCamerasYaml(
    camerasFile,
    urls.map((uri, i) => ({ id: `cam${i}`, uri, fps: 2 })),
  );
  collector = new Collector(brokers, names.detections);
  const applied = await argus('cameras', 'apply', camerasFile);
  expect(applied.stderr).toBe('');
  expect(applied.stdout).toMatch(/added 6, changed 0, unchanged 0, removed 0/);
  await collector.start();
  for (const id of ['w1', 'w2', 'w3']) {
    const w = new WorkerProcess(id, yaml);
    workers.set(id, w);
    w.start();
  }
}, 300_000);

afterAll(async () => {
  await Promise.all([...workers.values()].map((w) => w.stop()));
  await collector?.stop();
  await rtsp('stop');
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('cameras spread over argus workers by the consumer-group protocol (real broker, RTSP server, ffmpeg)', () => {
  it('six cameras on three workers: each runs on exactly one, every worker runs some; /healthz and cluster status say which', async () => {
    const ok = await until(() => allRunning(camIds()) && byOwner().size === 3, 180_000, 250);
    if (!ok) for (const w of workers.values()) console.log(w.id, printLog(w));
    expect(ok).toBe(true);
    for (const cams of byOwner().values()) expect(cams.length).toBeGreaterThanOrEqual(1);
    // The group's membership at one moment: on a loaded machine a worker's session may lapse and
    // the group rebalance (or even empty) while its cameras still ran a moment ago, and the status
    // says so. Asked again (a bound that only ends a hang) until it shows the three.
    type Status = { workers: { worker: string; cameras: string[]; slots: number[] }[]; unassigned: string[]; state?: string };
    let st!: Status;
    let statusText = '';
    const three = await until(async () => {
      const status = await argus('cluster', 'status', '--json');
      expect(status.code, `argus cluster status: ${status.stderr}`).toBe(0); // what went wrong, not "Unexpected end of JSON input"
      statusText = status.stdout;
      st = JSON.parse(status.stdout) as Status;
      return st.workers.length === 3 && st.workers.flatMap((w) => w.cameras).length === CAMERAS;
    }, 120_000, 1000);
    if (!three) console.log(`cluster status: ${statusText}`);
    expect(st.workers.map((w) => w.worker).sort()).toEqual(['w1', 'w2', 'w3']);
    expect(st.workers.flatMap((w) => w.cameras).sort()).toEqual(camIds().sort());
    expect(st.unassigned).toEqual([]);
    expect(st.workers.flatMap((w) => w.slots).length).toBe(32);
    const w1 = workers.get('w1')!;
    expect(await until(() => w1.port > 0, 10_000)).toBe(true);
    const h = (await w1.health()) as { cluster: { worker: string; cameras: { id: string; epoch: number }[] }; sources: { id: string }[] };
    expect(h.cluster.worker).toBe('w1');
    expect(h.cluster.cameras.map((c) => c.id).sort()).toEqual(st.workers.find((w) => w.worker === 'w1')!.cameras.sort());
    expect(h.sources.map((s) => s.id).sort()).toEqual(h.cluster.cameras.map((c) => c.id).sort());
    expect(collector.unowned).toBe(0);
  });

  it('a camera added, edited and removed with argus cameras starts, restarts (a new epoch) and stops on its owner', async () => {
    const t0 = Date.now();
    expect((await argus('cameras', 'add', '--id', 'extra', '--uri', urls[0], '--fps', '2')).stdout).toMatch(/added 1/);
    expect(await until(() => owners().has('extra'), 60_000)).toBe(true);
    const first = owners().get('extra')!;
    console.log(`cluster: camera added (CLI call included) → first frame on ${first.owner} in ${Math.round(firstFrameAfter(collector.seen, 'extra', t0)!.captured - t0)} ms`);
    const ls = JSON.parse((await argus('cameras', 'ls', '--json')).stdout) as { id: string; owner?: string; epoch?: number; state?: string }[];
    expect(ls.find((c) => c.id === 'extra')).toMatchObject({ owner: first.owner, epoch: first.epoch, state: 'claimed' });

    // edit: the same owner restarts it under a new claim
    const t1 = Date.now();
    expect((await argus('cameras', 'add', '--id', 'extra', '--uri', urls[0], '--fps', '1')).stdout).toMatch(/changed 1/);
    expect(await until(() => (owners().get('extra')?.epoch ?? -1) > first.epoch, 60_000)).toBe(true);
    expect(owners().get('extra')!.owner).toBe(first.owner);
    const restarted = collector.seen.filter((m) => m.source === 'extra' && m.epoch > first.epoch).reduce((a, m) => Math.min(a, m.captured), Infinity);
    console.log(`cluster: camera edited (CLI call included) → first frame of the new epoch in ${Math.round(restarted - t1)} ms`);

    // remove: its messages stop
    expect((await argus('cameras', 'rm', 'extra')).stdout).toMatch(/removed 1/);
    const removedAt = Date.now();
    await sleep(4000);
    expect(collector.seen.filter((m) => m.source === 'extra' && m.readAt > removedAt + 2500)).toEqual([]);
    const unknown = await argus('cameras', 'rm', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toMatch(/not found: nope/);
  });

  it('placement: a pinned camera runs on its worker (and moves with its pin); one asking for a label no worker has runs nowhere, and cluster status and /healthz say why', async () => {
    try {
      await placement();
    } finally {
      // the next steps count on the six cameras alone
      await argus('cameras', 'rm', 'pinned', 'gpu');
    }
  });

  async function placement(): Promise<void> {
    const t0 = Date.now();
    expect((await argus('cameras', 'add', '--id', 'pinned', '--uri', urls[1], '--fps', '2', '--pin', 'w2')).stdout).toMatch(/added 1/);
    expect((await argus('cameras', 'add', '--id', 'gpu', '--uri', urls[2], '--fps', '2', '--label', 'role=gpu')).stdout).toMatch(/added 1/);
    const onW2 = await until(() => owners().get('pinned')?.owner === 'w2', 90_000, 250);
    if (!onW2) for (const w of workers.values()) console.log(w.id, printLog(w));
    expect(onW2).toBe(true);
    console.log(`cluster: camera pinned to w2 (CLI calls included) → first frame on w2 in ${Math.round(firstFrameAfter(collector.seen, 'pinned', t0)!.captured - t0)} ms`);
    expect(collector.seen.filter((m) => m.source === 'pinned' && m.owner !== 'w2')).toEqual([]);
    // The worker holding gpu's slot asks for a rebalance once the disagreement has lasted 1 s
    // (later still if it asked for one a moment ago): the slot then goes to nobody.
    type Status = { unassigned: string[]; unplaceable: Record<string, string>; workers: { worker: string; labels: Record<string, string> }[] };
    let st: Status | undefined;
    const unplaced = await until(async () => {
      st = JSON.parse((await argus('cluster', 'status', '--json')).stdout) as Status;
      return st.unassigned.includes('gpu');
    }, 90_000, 1000);
    if (!unplaced) for (const w of workers.values()) console.log(w.id, printLog(w));
    expect(st!.unassigned).toEqual(['gpu']);
    expect(st!.unplaceable.gpu).toMatch(/needs role=gpu: no worker in the group has that/);
    expect(st!.workers.find((w) => w.worker === 'w1')!.labels).toEqual({ role: 'none' });
    expect(collector.seen.filter((m) => m.source === 'gpu')).toEqual([]);
    // every worker's /healthz carries the cluster's map: which worker runs which camera
    const h = (await workers.get('w1')!.health()) as { cluster: { map: { camera: string; owner: string | null; here: boolean }[] } };
    expect(h.cluster.map.find((c) => c.camera === 'pinned')).toMatchObject({ owner: 'w2', here: false });
    expect(h.cluster.map.find((c) => c.camera === 'gpu')).toMatchObject({ owner: null });

    // a new pin moves it (to another slot: argus cameras writes the old slot's tombstone)
    const t1 = Date.now();
    expect((await argus('cameras', 'add', '--id', 'pinned', '--uri', urls[1], '--fps', '2', '--pin', 'w3')).stdout).toMatch(/changed 1/);
    expect(await until(() => owners().get('pinned')?.owner === 'w3', 90_000, 250)).toBe(true);
    console.log(`cluster: pin changed to w3 → first frame on w3 in ${Math.round(firstFrameAfter(collector.seen, 'pinned', t1, 'w2')!.captured - t1)} ms`);
    expect(collector.seen.filter((m) => m.source === 'pinned' && m.owner !== 'w2' && m.owner !== 'w3')).toEqual([]);
    const ls = JSON.parse((await argus('cameras', 'ls', '--json')).stdout) as { id: string; error?: string; placement?: unknown }[];
    expect(ls.find((c) => c.id === 'pinned')).toMatchObject({ placement: { pin: 'w3' } });
    expect(ls.find((c) => c.id === 'pinned')!.error).toBeUndefined();
    expect((await argus('cameras', 'rm', 'pinned', 'gpu')).stdout).toMatch(/removed 2/);
  }

  it('kill -9 of a worker: its cameras run on the others (failover time per camera printed)', async () => {
    await settled();
    const before = byOwner();
    const [victim, cams] = [...before.entries()].sort((a, b) => b[1].length - a[1].length)[0];
    const w = workers.get(victim)!;
    const t = Date.now();
    w.signal('SIGKILL');
    await w.exited;
    const ok = await until(() => cams.every((c) => firstFrameAfter(collector.seen, c, t, victim)), 90_000, 200);
    expect(ok).toBe(true);
    const times = cams.map((c) => firstFrameAfter(collector.seen, c, t, victim)!.captured - t);
    console.log(`cluster: kill -9 of ${victim}: its ${cams.length} camera(s) back on other workers after ${times.join(', ')} ms`);
    // every camera runs (read in the last 2.5 s): waited for, as everywhere else here, since a
    // busy machine can hold a surviving worker's frames back for a moment right after the failover
    expect(await until(() => allRunning(camIds()), 60_000, 250)).toBe(true);
    // it comes back under the same id and gets a share again
    w.start();
    expect(await until(() => byOwner().has(victim) && allRunning(camIds()), 120_000, 250)).toBe(true);
  });

  it('SIGSTOP longer than the session (a zombie): it stops its cameras before another worker starts them; after SIGCONT it rejoins without overlap', async () => {
    await settled();
    const [zombie, cams] = [...byOwner().entries()].sort((a, b) => b[1].length - a[1].length)[0];
    const w = workers.get(zombie)!;
    const t = Date.now();
    w.signal('SIGSTOP');
    expect(await until(() => cams.every((c) => firstFrameAfter(collector.seen, c, t, zombie)), 90_000, 200)).toBe(true);
    await sleep(2000);
    w.signal('SIGCONT');
    const resumed = Date.now();
    // It fences itself (its log says so) and later runs cameras again.
    expect(await until(() => /no heartbeat answered for \d+ ms; stopping/.test(w.log), 30_000)).toBe(true);
    expect(await until(() => byOwner().has(zombie) && allRunning(camIds()), 120_000, 250)).toBe(true);
    // Nothing the zombie emitted after it resumed carries its old claims.
    const oldEpochs = new Map(cams.map((c) => [c, currentOwnersAt(c, t)]));
    for (const [c, epoch] of oldEpochs) {
      const late = collector.seen.filter((m) => m.source === c && m.owner === zombie && m.epoch === epoch && m.emitted > resumed);
      expect(late, `${c}: results of the stale claim ${epoch} after SIGCONT`).toEqual([]);
    }
    const own = checkOwnership(collector.seen);
    expect(own.sharedEpochs).toEqual([]);
    expect(own.overlaps).toEqual([]);
    // Once back in the group, it released the claims its fence had stopped (left open, every later
    // owner of those cameras waited releaseWaitMs for them).
    const released = async () => {
      const recs = await readTopic<{ type: string; camera?: string; owner?: string; epoch?: number }>(brokers, names.owners);
      return [...oldEpochs].every(([c, epoch]) => recs.some((r) => r.type === 'release' && r.camera === c && r.owner === zombie && r.epoch === epoch));
    };
    expect(await until(released, 60_000, 1000), `releases of ${JSON.stringify([...oldEpochs])} by ${zombie}`).toBe(true);
  });

  it('a fourth worker joins: about a quarter of the cameras move, none between the others, and the cameras that stay lose no frame; drain empties it again', async () => {
    await settled();
    const before = owners();
    const old = [...workers.values()];
    // Detections batches the old workers' Kafka sinks drop (a produce timeout on a starved
    // machine) are counted drops by design, not frames the join lost: at most that many gaps
    // are excused below. Fenced frames (the slot filter) are not.
    const sinkDropped = async () => {
      let n = 0;
      for (const w of old) n += (await w.kafkaDropped()) ?? 0;
      return n;
    };
    const droppedBefore = await sinkDropped();
    const w4 = new WorkerProcess('w4', yaml);
    workers.set('w4', w4);
    const t = Date.now();
    w4.start();
    const joined = await until(() => byOwner().has('w4') && allRunning(camIds()), 180_000, 250);
    if (!joined) for (const w of workers.values()) console.log(w.id, printLog(w));
    expect(joined).toBe(true);
    await sleep(3000);
    // Every camera delivering again (owners() sees those with a frame in the last 2.5 s: on a
    // machine at load 20 one went 2.5 s without and was missing here).
    expect(await until(() => allRunning(camIds()), 60_000, 250)).toBe(true);
    const after = owners();
    const moved = camIds().filter((c) => after.get(c)!.owner !== before.get(c)!.owner);
    console.log(`cluster: w4 joined: ${moved.length} of ${CAMERAS} cameras moved (${moved.join(', ')})`);
    expect(moved.length).toBeGreaterThanOrEqual(1);
    expect(moved.length).toBeLessThanOrEqual(3);
    for (const c of moved) expect(after.get(c)!.owner).toBe('w4');
    // The status topic's last word on a moved camera is the new owner's: streaming, under its
    // claim (the old owner's "stopped" was the last, as the new owner held its state changes
    // back while it waited for the claim).
    const statuses = await lastStatuses(brokers, names.status);
    for (const c of moved) expect(statuses.get(c), `${c}: last status`).toMatchObject({ state: 'streaming', owner: 'w4', epoch: after.get(c)!.epoch });
    let excusable = (await sinkDropped()) - droppedBefore;
    if (excusable > 0) console.log(`cluster: the old workers' Kafka sinks dropped ${excusable} detections message(s) during the join`);
    for (const c of camIds().filter((x) => !moved.includes(x))) {
      expect(after.get(c)!.epoch, `${c} stayed under its claim`).toBe(before.get(c)!.epoch);
      const gaps = lostFrames(collector.seen, c, t - 2000, Date.now());
      const excused = Math.min(gaps, excusable);
      excusable -= excused;
      const lost = gaps - excused;
      if (gaps) {
        console.log(c, JSON.stringify(collector.seen.filter((m) => m.source === c && m.captured >= t - 2000).map((m) => [m.epoch, m.seq, m.dropped, Math.round(m.captured - t)])));
        for (const w of workers.values()) console.log(w.id, JSON.stringify(((await w.health()) as { cluster?: unknown })?.cluster), printLog(w));
      }
      expect(lost, `${c}: frames lost while w4 joined`).toBe(0);
    }
    for (const c of moved) {
      const gap = firstFrameAfter(collector.seen, c, t, before.get(c)!.owner);
      const last = collector.seen.filter((m) => m.source === c && m.owner === before.get(c)!.owner).reduce((a, m) => Math.max(a, m.captured), 0);
      console.log(`cluster: ${c} planned move to w4: gap ${gap ? Math.round(gap.captured - last) : '?'} ms between the old owner's last frame and the new owner's first`);
    }

    const drained = Date.now();
    expect((await argus('cluster', 'drain', 'w4')).stdout).toMatch(/drain of w4 requested/);
    expect(await until(() => !byOwner().has('w4') && allRunning(camIds()), 120_000, 250)).toBe(true);
    const st = JSON.parse((await argus('cluster', 'status', '--json')).stdout) as { workers: { worker: string; cameras: string[]; slots: number[]; draining: boolean }[] };
    const s4 = st.workers.find((w) => w.worker === 'w4')!;
    expect(s4).toMatchObject({ cameras: [], slots: [], draining: true });
    console.log(`cluster: drain of w4: its cameras on other workers within ${Date.now() - drained} ms`);
    // Restarted while drained, it joins with capacity 0: no camera moves to it, not even for a moment.
    await w4.stop();
    const restarted = Date.now();
    w4.start();
    expect(await until(() => /cluster: w4 holds \d+ slot/.test(w4.log), 120_000, 250)).toBe(true);
    expect(w4.log).toMatch(/w4 is drained/);
    expect(w4.log).toMatch(/cluster: w4 holds 0 slot/);
    expect(w4.log).not.toMatch(/cluster: w4 holds [1-9]/);
    await sleep(3000);
    expect(collector.seen.filter((m) => m.owner === 'w4' && m.readAt > restarted)).toEqual([]);
    const own = checkOwnership(collector.seen);
    expect(own.sharedEpochs).toEqual([]);
    expect(own.overlaps).toEqual([]);
    console.log(`cluster: ${own.messages} detections messages checked: no epoch with two owners, no overlapping owners`);
    for (const w of workers.values()) console.log(`cluster: ${w.id} counters ${JSON.stringify(((await w.health()) as { cluster?: { counters?: unknown } } | undefined)?.cluster?.counters)}`);
  });
});

/** The epoch `cam` ran under at time `t` (its latest message before t). */
function currentOwnersAt(cam: string, t: number): number {
  let best = -1;
  let at = -Infinity;
  for (const m of collector.seen) if (m.source === cam && m.captured <= t && m.captured > at) [best, at] = [m.epoch, m.captured];
  return best;
}
