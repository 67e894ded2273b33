/**
 * Two `argus worker` processes, one real broker, one RTSP camera whose address comes from each
 * worker's own environment (`${env:ARGUS_CAMERA_K0_HOST}`), set on one worker only (a worker
 * added later, a secret rolled out one machine at a time). The camera is written into the slot of
 * the worker without the variable. Before, that worker kept the slot and the camera ran nowhere
 * for good, said only in its own log and /healthz. Now it names the slot in its member data and
 * asks the group once to rebalance: the slot moves to the worker that has the variable, where it
 * stays. Timings are printed, and asserted only with bounds that end a hang.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOwnership, clusterNames, Collector, sleep, until, WorkerProcess, writeWorkerYaml, type ClusterNames } from '../../src/bench/cluster.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { testBrokers } from '../helpers/kafka.js';
import { rtspServer } from '../helpers/rtsp.js';
import { testPort } from '../helpers/ports.js';

const { rtsp, publish } = rtspServer(testPort(18597));

let dir: string;
let brokers: string[];
let names: ClusterNames;
let collector: Collector;
const workers: WorkerProcess[] = [];

/** The lines of a worker's log (JSON) whose message matches `re`. */
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
const clusterLog = (w: WorkerProcess) => w.log.split('\n').filter((l) => l.includes('cluster:')).slice(-30).join('\n');

beforeAll(async () => {
  brokers = await testBrokers();
  dir = mkdtempSync(join(tmpdir(), 'argus-env-missing-'));
  names = clusterNames('t-envmiss');
  await rtsp('start');
  const url = new URL(await publish('k0', PERSON_VIDEO));
  const yaml = writeWorkerYaml(dir, brokers, names, { slots: 2 });
  collector = new Collector(brokers, names.detections);
  await collector.start();
  workers.push(new WorkerProcess('bare', yaml, {}), new WorkerProcess('set', yaml, { ARGUS_CAMERA_K0_HOST: url.host }));
  for (const w of workers) w.start();
}, 300_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await collector?.stop();
  await rtsp('stop');
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('a camera whose variable one worker lacks (real broker, RTSP server, ffmpeg)', () => {
  it('moves to the worker that has the variable, and stays there', async () => {
    const [bare, set] = workers;
    const slotOf = (w: WorkerProcess) => {
      const s = logged(w, new RegExp(`^cluster: ${w.id} holds \\d+ slot`)).pop()?.slots;
      return s?.length === 1 ? s[0] : undefined;
    };
    const split = await until(() => slotOf(bare) !== undefined && slotOf(set) !== undefined && slotOf(bare) !== slotOf(set), 180_000, 250);
    if (!split) for (const w of workers) console.log(w.id, clusterLog(w));
    expect(split).toBe(true);
    const slot = slotOf(bare)!;

    const kafka = new Kafka({ clientId: 'argus-env-missing-test', brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    const written = Date.now();
    await producer.send({ topic: names.cameras, messages: [{ key: 'cam0', value: JSON.stringify({ id: 'cam0', uri: 'rtsp://${env:ARGUS_CAMERA_K0_HOST}/k0', fps: 2 }), partition: slot }] });
    await producer.disconnect();

    const moved = await until(() => collector.seen.some((m) => m.source === 'cam0' && m.owner === 'set'), 120_000, 200);
    if (!moved) for (const w of workers) console.log(w.id, clusterLog(w));
    expect(moved).toBe(true);
    const first = collector.seen.filter((m) => m.source === 'cam0' && m.owner === 'set').reduce((a, m) => (m.captured < a.captured ? m : a));
    console.log(`env-missing: cam0 dark ${Math.round(first.captured - written)} ms from its record to its first frame on the worker with the variable`);
    expect(logged(bare, /camera cam0 \(slot \d+\) runs nowhere here: .*ARGUS_CAMERA_K0_HOST/)).toHaveLength(1);

    await sleep(6000);
    const late = collector.seen.filter((m) => m.source === 'cam0' && m.readAt > Date.now() - 2500);
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((m) => m.owner === 'set' && m.epoch === first.epoch)).toBe(true);
    expect(bare.log.match(/reports slot\(s\) \d+ unreachable; asking the group to rebalance/g)?.length).toBe(1);
    expect(collector.seen.filter((m) => m.source === 'cam0' && m.owner !== 'set')).toEqual([]);
    const own = checkOwnership(collector.seen);
    expect(own.sharedEpochs).toEqual([]);
    expect(own.overlaps).toEqual([]);
  });
});
