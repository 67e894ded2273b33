/**
 * Issue 15's figures: argus workers sharing cameras by Kafka's group protocol. Prints figures;
 * asserts nothing.
 *
 *   npm run bench:cluster -- --json FILE [--kills 10] [--cameras 6] [--workers 3] [--overhead-seconds 30]
 *
 * A real broker ($KAFKA_BROKERS, else scripts/kafka-broker.sh on port 19592), the real RTSP
 * server (scripts/rtsp-server.sh on port 18654) publishing the shared person video (10 fps, a
 * key frame every second) on N paths, and `argus worker` processes with default cluster
 * settings (session 6 s), each camera analysed at 2 fps. Everything is measured from the
 * messages read back from Kafka (owner, epoch, stamps) and from the workers' own records:
 *
 * - failover: kill -9 of the worker running the most cameras → each of its cameras' first
 *   frame (stamps.captured) on another worker; --kills times, the killed worker restarted
 *   (same id) after each.
 * - plannedGap: the restarted worker rejoining takes cameras from the others (a planned move):
 *   the old owner's last frame → the new owner's first.
 * - unmovedLost: frames lost by the cameras that did not move while a worker rejoined (seq
 *   gaps not counted as dropped).
 * - duplicates: epochs with two owners plus pairs of owners whose processing of one camera
 *   overlapped in time (checkOwnership), over every message of the run.
 * - control: a camera added, edited and removed by writing its record → the owner's claim (or
 *   the stop) and the first frame.
 * - overheadRatio: frames/s of one worker running 2 cameras at their full 10 fps with the
 *   cluster on, ÷ `argus run` on the same 2 cameras; interleaved, 2 rounds each, medians.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { PACKAGE_ROOT } from '../src/assets/paths.js';
import { checkOwnership, clusterNames, Collector, currentOwners, firstFrameAfter, lostFrames, pct, sleep, until, WorkerProcess, writeCamerasYaml, writeWorkerYaml } from '../src/bench/cluster.js';
import { numberFlag } from './lib/flags.js';

const log = (m: string) => process.stderr.write(`bench:cluster: ${m}\n`);
const arg = (name: string, def: number, min = 1) => numberFlag(process.argv, name, def, { min });
const jsonOut = (() => {
  const i = process.argv.indexOf('--json');
  return i >= 0 ? process.argv[i + 1] : undefined;
})();
const KILLS = arg('kills', 10, 0);
const CAMERAS = arg('cameras', 6);
const WORKERS = arg('workers', 3);
const OVERHEAD_S = arg('overhead-seconds', 30);
const RTSP_PORT = '18654';
const MIRROR = process.env.ARGUS_MIRROR ?? resolve(PACKAGE_ROOT, '../shared');
process.env.ARGUS_MIRROR = MIRROR;
const VIDEO = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
const ARGUS = resolve(PACKAGE_ROOT, 'bin/argus.js');

const sh = (script: string, args: string[], env: NodeJS.ProcessEnv = {}) => execFileSync('bash', [resolve(PACKAGE_ROOT, 'scripts', script), ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 600_000 });

async function main(): Promise<void> {
  const load: number[] = [loadavg()[0]];
  let brokers = process.env.KAFKA_BROKERS?.split(',');
  let ownBroker = false;
  if (!brokers) {
    log('starting a broker on 127.0.0.1:19592');
    const line = sh('kafka-broker.sh', ['start'], { KAFKA_PORT: '19592' });
    brokers = [/KAFKA_BROKERS=(\S+)/.exec(line)![1]];
    ownBroker = true;
  }
  sh('rtsp-server.sh', ['start'], { RTSP_PORT });
  const urls: string[] = [];
  for (let i = 0; i < CAMERAS; i++) urls.push(/RTSP_URL=(\S+)/.exec(sh('rtsp-server.sh', ['publish', `b${i}`, VIDEO, '--loop'], { RTSP_PORT }))![1]);

  const dir = mkdtempSync(join(tmpdir(), 'argus-bench-cluster-'));
  const names = clusterNames('bench15');
  const yaml = writeWorkerYaml(dir, brokers, names);
  const camerasFile = join(dir, 'cameras.yaml');
  writeCamerasYaml(camerasFile, urls.map((uri, i) => ({ id: `cam${i}`, uri, fps: 2 })));
  const cli = (...a: string[]) => execFileSync(process.execPath, [ARGUS, ...a, '--config', yaml], { env: { ...process.env, W: 'cli' }, encoding: 'utf8' });
  log(cli('cameras', 'apply', camerasFile).trim());

  const collector = new Collector(brokers, names.detections);
  await collector.start();
  const workers = new Map<string, WorkerProcess>();
  for (let i = 1; i <= WORKERS; i++) {
    const w = new WorkerProcess(`w${i}`, yaml);
    workers.set(w.id, w);
    w.start();
  }
  const ids = Array.from({ length: CAMERAS }, (_, i) => `cam${i}`);
  const owners = () => currentOwners(collector.seen, Date.now(), 2500);
  const allRunning = () => ids.every((id) => owners().has(id));
  const byOwner = () => {
    const m = new Map<string, string[]>();
    for (const [cam, o] of owners()) m.set(o.owner, [...(m.get(o.owner) ?? []), cam]);
    return m;
  };
  if (!(await until(() => allRunning() && byOwner().size === WORKERS, 300_000, 250))) throw new Error('the cameras did not all start');
  log(`all ${CAMERAS} cameras running on ${WORKERS} workers`);

  const failover: number[] = [];
  const planned: number[] = [];
  let unmovedLost = 0;
  let kills = 0;
  for (let k = 0; k < KILLS; k++) {
    await sleep(3000);
    const [victim, cams] = [...byOwner().entries()].sort((a, b) => b[1].length - a[1].length)[0];
    const w = workers.get(victim)!;
    const t = Date.now();
    w.signal('SIGKILL');
    await w.exited;
    kills++;
    if (!(await until(() => cams.every((c) => firstFrameAfter(collector.seen, c, t, victim)), 120_000, 100))) log(`kill ${k + 1}: not every camera came back`);
    const times = cams.map((c) => firstFrameAfter(collector.seen, c, t, victim)).filter((m) => m).map((m) => m!.captured - t);
    failover.push(...times);
    log(`kill ${k + 1}/${KILLS}: ${victim}'s ${cams.length} camera(s) back after ${times.map((x) => Math.round(x)).join(', ')} ms`);
    // The killed worker comes back: a planned rebalance moves cameras to it.
    await sleep(1000);
    const before = owners();
    const tj = Date.now();
    w.start();
    if (!(await until(() => byOwner().has(victim) && allRunning(), 180_000, 250))) log(`kill ${k + 1}: ${victim} got no camera back`);
    await sleep(3000);
    const after = owners();
    for (const c of ids) {
      const b = before.get(c);
      const a = after.get(c);
      if (!a || !b) continue;
      if (a.owner !== b.owner) {
        const last = collector.seen.filter((m) => m.source === c && m.owner === b.owner && m.epoch === b.epoch).reduce((x, m) => Math.max(x, m.captured), 0);
        const first = collector.seen.filter((m) => m.source === c && m.epoch === a.epoch).reduce((x, m) => Math.min(x, m.captured), Infinity);
        if (last && Number.isFinite(first)) planned.push(first - last);
      } else unmovedLost += lostFrames(collector.seen, c, tj - 1000, Date.now());
    }
  }
  load.push(loadavg()[0]);

  // Control: a record written → the owner's claim and first frame; edited; removed.
  const kafka = new Kafka({ clientId: 'bench-cluster', brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const control: Record<string, number> = {};
  const tAdd = Date.now();
  await producer.send({ topic: names.cameras, acks: -1, messages: [{ key: 'extra', value: JSON.stringify({ id: 'extra', uri: urls[0], fps: 2 }) }] });
  await until(() => owners().has('extra'), 60_000, 50);
  control.addToFirstFrameMs = (firstFrameAfter(collector.seen, 'extra', tAdd)?.captured ?? NaN) - tAdd;
  const e0 = owners().get('extra')?.epoch ?? -1;
  const tEdit = Date.now();
  await producer.send({ topic: names.cameras, acks: -1, messages: [{ key: 'extra', value: JSON.stringify({ id: 'extra', uri: urls[0], fps: 1 }) }] });
  await until(() => (owners().get('extra')?.epoch ?? -1) > e0, 60_000, 50);
  control.editToFirstFrameMs = collector.seen.filter((m) => m.source === 'extra' && m.epoch > e0).reduce((x, m) => Math.min(x, m.captured), Infinity) - tEdit;
  await producer.send({ topic: names.cameras, acks: -1, messages: [{ key: 'extra', value: null }] });
  const tRm = Date.now();
  await sleep(4000);
  const lastExtra = collector.seen.filter((m) => m.source === 'extra').reduce((x, m) => Math.max(x, m.emitted), 0);
  control.removeToLastFrameMs = lastExtra - tRm;
  // The owners' own records: when each worker claimed or released (their log lines carry the time).
  const claimTimes = [...workers.values()].flatMap((w) => [...w.log.matchAll(/"time":(\d+),"worker":"[^"]+","camera":"extra","slot":\d+,"epoch":\d+,"msg":"cluster: \S+ starts extra/g)].map((m) => Number(m[1])));
  const stopTimes = [...workers.values()].flatMap((w) => [...w.log.matchAll(/"time":(\d+),"worker":"[^"]+","camera":"extra","epoch":\d+,"msg":"cluster: \S+ stopped extra/g)].map((m) => Number(m[1])));
  claimTimes.sort((a, b) => a - b);
  stopTimes.sort((a, b) => a - b);
  if (claimTimes[0]) control.addToStartMs = claimTimes[0] - tAdd;
  if (claimTimes[1]) control.editToRestartMs = claimTimes[1] - tEdit;
  const lastStop = stopTimes.filter((t) => t >= tRm)[0];
  if (lastStop) control.removeToStopMs = lastStop - tRm;
  await producer.disconnect();

  const own = checkOwnership(collector.seen);
  log(`${own.messages} messages checked: ${own.sharedEpochs.length} shared epochs, ${own.overlaps.length} overlaps`);
  const counters: Record<string, unknown> = {};
  for (const w of workers.values()) counters[w.id] = ((await w.health()) as { cluster?: { counters?: unknown } } | undefined)?.cluster?.counters;
  log(`workers' counters: ${JSON.stringify(counters)}`);
  await Promise.all([...workers.values()].map((w) => w.stop()));

  // Overhead: one worker with 2 cameras at their full rate vs argus run on the same 2.
  const two = urls.slice(0, 2);
  const runYaml = join(dir, 'run.yaml');
  // The same YAML as the worker's (model, Kafka sink, outbox, server), its cluster section
  // swapped for the two sources: the ratio is the cost of the cluster alone.
  const names2 = clusterNames('bench15o');
  const yaml2 = writeWorkerYaml(join(dir, 'o'), brokers, names2);
  const workerText = readFileSync(yaml2, 'utf8');
  writeFileSync(runYaml, workerText.replace(/\ncluster:\n(  .*\n)+/, `\nsources:\n${two.map((u, i) => `  - { id: o${i}, uri: "${u}" }`).join('\n')}\n`).replace('name: cluster-${env:W}', 'name: bench-run-${env:W}'));
  const cams2 = join(dir, 'cams2.yaml');
  writeFileSync(cams2, `cameras:\n${two.map((u, i) => `  - { id: o${i}, uri: "${u}" }`).join('\n')}\n`);
  execFileSync(process.execPath, [ARGUS, 'cameras', 'apply', cams2, '--config', yaml2], { env: { ...process.env, W: 'cli' } });
  const rates: { run: number[]; worker: number[] } = { run: [], worker: [] };
  for (let round = 0; round < 2; round++) {
    for (const mode of round % 2 === 0 ? (['run', 'worker'] as const) : (['worker', 'run'] as const)) {
      const r = await framesPerSecond(mode === 'run' ? ['run', runYaml, '--jsonl', join(dir, `${mode}${round}.jsonl`), '--no-status'] : ['worker', yaml2, '--jsonl', join(dir, `${mode}${round}.jsonl`), '--no-status'], join(dir, `${mode}${round}.jsonl`), OVERHEAD_S);
      rates[mode].push(r);
      log(`overhead round ${round + 1}: ${mode} ${r.toFixed(2)} frames/s (2 cameras)`);
    }
  }
  load.push(loadavg()[0]);
  const median = (v: number[]) => pct(v, 50);
  const result = {
    machine: { cpus: (await import('node:os')).cpus().length, load1: load.map((x) => Math.round(x * 100) / 100) },
    settings: { cameras: CAMERAS, workers: WORKERS, fps: 2, sessionTimeoutMs: 6000, keyframeIntervalS: 1 },
    failover: { p50: pct(failover, 50), p95: pct(failover, 95), max: Math.max(...failover), samples: failover.length },
    duplicates: own.sharedEpochs.length + own.overlaps.length,
    plannedGap: { p50: pct(planned, 50), p95: pct(planned, 95), samples: planned.length },
    unmovedLost,
    overheadRatio: median(rates.worker) / median(rates.run),
    overhead: { workerFps: rates.worker, runFps: rates.run },
    kills,
    control,
    workerCounters: counters,
    messages: own.messages,
  };
  const flat = { 'failover.p50': result.failover.p50, 'failover.p95': result.failover.p95, duplicates: result.duplicates, 'plannedGap.p95': result.plannedGap.p95, unmovedLost, overheadRatio: result.overheadRatio, kills };
  const text = JSON.stringify({ ...result, flat }, null, 2);
  process.stdout.write(`\nfailover after kill -9 (first frame on the new owner): p50 ${Math.round(result.failover.p50)} ms, p95 ${Math.round(result.failover.p95)} ms over ${failover.length} camera moves in ${kills} kills (target p95 ≤ 10 000)\n`);
  process.stdout.write(`planned moves (a worker rejoining): gap p50 ${Math.round(result.plannedGap.p50)} ms, p95 ${Math.round(result.plannedGap.p95)} ms over ${planned.length} moves (target p95 ≤ 2000)\n`);
  process.stdout.write(`frames processed by two owners: ${result.duplicates} (target 0); unmoved cameras' lost frames: ${unmovedLost} (target 0)\n`);
  process.stdout.write(`overhead: worker ${median(rates.worker).toFixed(2)} vs argus run ${median(rates.run).toFixed(2)} frames/s → ${result.overheadRatio.toFixed(3)} (target ≥ 0.97)\n`);
  process.stdout.write(`control: ${JSON.stringify(control)}\nload average ${result.machine.load1.join(' → ')}\n`);
  if (jsonOut) writeFileSync(jsonOut, text + '\n');
  await collector.stop();
  sh('rtsp-server.sh', ['stop'], { RTSP_PORT });
  if (ownBroker) sh('kafka-broker.sh', ['stop'], { KAFKA_PORT: '19592' });
}

/** Runs argus (run or worker) and counts the JSONL frames between its first result and `seconds` later. */
async function framesPerSecond(args: string[], jsonl: string, seconds: number): Promise<number> {
  const child = spawn(process.execPath, [ARGUS, ...args], { cwd: PACKAGE_ROOT, env: { ...process.env, W: 'ow' }, stdio: ['ignore', 'ignore', 'ignore'] });
  const lines = () => {
    try {
      return readFileSync(jsonl, 'utf8').split('\n').filter((l) => l.startsWith('{"type":"detections"')).length;
    } catch {
      return 0;
    }
  };
  await until(() => lines() >= 20, 120_000, 200); // both cameras streaming
  const n0 = lines();
  const t0 = Date.now();
  await sleep(seconds * 1000);
  const n1 = lines();
  const t1 = Date.now();
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  return ((n1 - n0) * 1000) / (t1 - t0);
}

main().catch((e) => {
  process.stderr.write(`bench:cluster: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
