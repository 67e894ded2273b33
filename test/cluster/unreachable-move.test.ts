/**
 * Two `argus worker` processes, one real broker, one RTSP camera that only one worker can reach:
 * the camera's address comes from each worker's own environment (`${env:ARGUS_CAMERA_K0_HOST}`),
 * and the cut-off worker's points at a closed port (a firewall, a VLAN it is not on). The camera
 * is written into the cut-off worker's slot. Before, that worker kept the slot and retried for
 * ever (argus moved no camera for its connection's health): the camera stayed dark. Now, once it
 * has had no frame for cluster.unreachableAfterMs, the worker reports the slot and the group
 * moves it to the worker that reaches the camera, where it stays. Timings are printed, and
 * asserted only with bounds that end a hang (two CPU-bound processes may run beside it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOwnership, clusterNames, Collector, sleep, until, WorkerProcess, writeWorkerYaml, type ClusterNames } from '../../src/bench/cluster.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { testBrokers } from '../helpers/kafka.js';
import { rtspServer } from '../helpers/rtsp.js';
import { testPort } from '../helpers/ports.js';

const { rtsp, publish } = rtspServer(testPort(18594));
const UNREACHABLE_AFTER_MS = 4000;

let dir: string;
let brokers: string[];
let names: ClusterNames;
let collector: Collector;
let closed: Server;
const workers: WorkerProcess[] = [];

/** A worker's log lines (JSON) whose message matches `re`. */
function logged(w: WorkerProcess, re: RegExp): { time: number; msg: string; slots?: number[] }[] {
  const out: { time: number; msg: string; slots?: number[] }[] = [];
  for (const line of w.log.split('\n')) {
    if (!line.includes('cluster:')) continue;
    try {
      const l = JSON.parse(line) as { time: number; msg: string; slots?: number[] };
      if (re.test(l.msg)) out.push(l);
    } catch {
      // not a JSON line
    }
  }
  return out;
}
/** The time (epoch ms) of the first line of a worker's log whose message matches `re`. */
const loggedAt = (w: WorkerProcess, re: RegExp) => logged(w, re)[0]?.time;
const clusterLog = (w: WorkerProcess) => w.log.split('\n').filter((l) => l.includes('cluster:')).slice(-30).join('\n');

beforeAll(async () => {
  brokers = await testBrokers();
  dir = mkdtempSync(join(tmpdir(), 'argus-unreachable-'));
  names = clusterNames('t-unreach');
  await rtsp('start');
  const url = new URL(await publish('k0', PERSON_VIDEO)); // 10 fps, a key frame every second
  // A port that refuses connections (held, then closed: nothing listens there).
  closed = await new Promise<Server>((r) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => r(s));
  });
  const closedPort = (closed.address() as { port: number }).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const yaml = writeWorkerYaml(dir, brokers, names, { slots: 2, unreachableAfterMs: UNREACHABLE_AFTER_MS });
  collector = new Collector(brokers, names.detections);
  await collector.start();
  workers.push(new WorkerProcess('cut', yaml, { ARGUS_CAMERA_K0_HOST: `127.0.0.1:${closedPort}` }), new WorkerProcess('ok', yaml, { ARGUS_CAMERA_K0_HOST: url.host }));
  for (const w of workers) w.start();
}, 300_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await collector?.stop();
  await rtsp('stop');
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('a camera its worker cannot reach (real broker, RTSP server, ffmpeg)', () => {
  it('moves to the worker that reaches it, within unreachableAfterMs and a move, and stays there', async () => {
    const [cut, ok] = workers;
    // Both in the group, one slot each.
    const slotOf = (w: WorkerProcess) => {
      const s = logged(w, new RegExp(`^cluster: ${w.id} holds \\d+ slot`)).pop()?.slots;
      return s?.length === 1 ? s[0] : undefined;
    };
    const split = await until(() => slotOf(cut) !== undefined && slotOf(ok) !== undefined && slotOf(cut) !== slotOf(ok), 180_000, 250);
    if (!split) for (const w of workers) console.log(w.id, clusterLog(w));
    expect(split).toBe(true);
    const slot = slotOf(cut)!;

    // The camera, into the cut-off worker's slot (as `argus cameras` writes a record).
    const kafka = new Kafka({ clientId: 'argus-unreachable-test', brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const uri = 'rtsp://${env:ARGUS_CAMERA_K0_HOST}/k0';
    await producer.send({ topic: names.cameras, messages: [{ key: 'cam0', value: JSON.stringify({ id: 'cam0', uri, fps: 2 }), partition: slot }] });
    await producer.disconnect();

    const started = await until(() => loggedAt(cut, /cluster: cut starts cam0/) !== undefined, 120_000, 100);
    if (!started) for (const w of workers) console.log(w.id, clusterLog(w));
    expect(started).toBe(true);
    const slotStart = loggedAt(cut, /cluster: cut starts cam0/)!;

    const moved = await until(() => collector.seen.some((m) => m.source === 'cam0' && m.owner === 'ok'), 120_000, 200);
    if (!moved) for (const w of workers) console.log(w.id, clusterLog(w));
    expect(moved).toBe(true);
    const first = collector.seen.filter((m) => m.source === 'cam0' && m.owner === 'ok').reduce((a, m) => (m.captured < a.captured ? m : a));
    const reported = loggedAt(cut, /reported unreachable from here/)!;
    console.log(`unreachable: cam0 dark ${Math.round(first.captured - slotStart)} ms, from its start on the cut-off worker to its first frame on the other (reported after ${Math.round(reported - slotStart)} ms; unreachableAfterMs ${UNREACHABLE_AFTER_MS})`);
    expect(reported - slotStart).toBeGreaterThanOrEqual(UNREACHABLE_AFTER_MS - 50);
    // A new owner, a new epoch: the cut-off worker published nothing of it.
    expect(collector.seen.filter((m) => m.source === 'cam0' && m.owner !== 'ok')).toEqual([]);

    // It stays: the cut-off worker's report stands, and it asks for no more rebalances.
    await sleep(3 * UNREACHABLE_AFTER_MS);
    const late = collector.seen.filter((m) => m.source === 'cam0' && m.readAt > Date.now() - 2500);
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((m) => m.owner === 'ok' && m.epoch === first.epoch)).toBe(true);
    expect(cut.log.match(/reports slot\(s\) \d+ unreachable; asking the group to rebalance/g)?.length).toBe(1);
    const h = (await cut.health()) as { cluster: { unreachable: { id: string; slot: number; here: boolean }[]; slots: number[] } };
    expect(h.cluster.unreachable).toEqual([{ id: 'cam0', slot, here: false }]);
    expect(h.cluster.slots).not.toContain(slot);
    const own = checkOwnership(collector.seen);
    expect(own.sharedEpochs).toEqual([]);
    expect(own.overlaps).toEqual([]);
  });
});
