/**
 * argus against what a Python user writes instead (issue 13, point 4). Prints figures; asserts nothing.
 *
 *   npm run bench:peer -- --json FILE [--rounds 3] [--seconds 20] [--threads 2]
 *
 * Peer A is the official YOLOX ONNX Runtime demo in a loop, Peer B the same behind a reader
 * thread that keeps the newest frame (scripts/peers/peer.py, in a private Python environment
 * from PyPI made by scripts/peers/setup.sh). argus runs as `npm ci` installs it: `node dist/src/cli.js run`
 * on a pipeline YAML with one file source and a JSONL sink. All three get the same model file
 * (models/yolox-nano.yaml, resolved like argus does: ARGUS_MIRROR, the cache, the download),
 * the same clips and the same intra-op thread count.
 *
 * Each round runs live1080 (the derived 1080p30 clip at its native rate), fast1080 and fast432
 * (the shared 432p person video as fast as possible), each with the three programs one after
 * another, their order rotated every round. A run is stopped (SIGTERM) --seconds after its first
 * result. While it runs, /proc is read every 100 ms: the summed RSS of the process and its
 * descendants (argus's ffmpeg), and their CPU time (utime + stime, with the children they have
 * waited for); CPU per frame is the CPU between the first sample after the first result and
 * the last before the stop, over the results emitted in between. The machine's load average is
 * recorded at each run's start and end. The table shows medians over rounds; the JSON has the
 * issue's keys (live1080.dueToEmitted.p50, …, each { argus, peerA, peerB }) and every run's figures.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelManifest, resolveModelFile, resolveStream } from '../src/assets/catalog.js';
import { PACKAGE_ROOT } from '../src/assets/paths.js';
import {
  argusPipelineYaml,
  checkYoloxDemo,
  parsePeerBenchArgs,
  PEER_BENCH_USAGE,
  peerOutput,
  peerTable,
  peerTargets,
  schedule,
  SCENARIOS,
  rssLines,
  summarize,
  type PeerJson,
  type RunSample,
} from '../src/bench/peer.js';
import { isArgusError } from '../src/core/errors.js';
import { argusLaunch, buildArgus, measure, type Launch } from './lib/measure.js';
import { defaultFfmpegPath } from '../src/sources/ffmpeg-path.js';

const log = (m: string) => process.stderr.write(`bench:peer: ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${PEER_BENCH_USAGE}\n`);
    return;
  }
  const o = parsePeerBenchArgs(argv);
  if (o.rounds < 3) log(`${o.rounds} round(s): the issue's figures are medians of at least 3`);

  const ffmpeg = defaultFfmpegPath();
  const { manifest } = await loadModelManifest('yolox-nano');
  const model = await resolveModelFile(manifest, { log });
  const clips = new Map<string, string>();
  for (const s of SCENARIOS) if (!clips.has(s.clip)) clips.set(s.clip, await resolveStream(s.clip, ffmpeg, { log }));

  log('Python environment (scripts/peers/setup.sh)');
  const venv = execFileSync('bash', [join(PACKAGE_ROOT, 'scripts', 'peers', 'setup.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!;
  const demo = join(venv, 'yolox-demo');
  await checkYoloxDemo(demo);
  const python = join(venv, 'bin', 'python');
  const peerPy = join(PACKAGE_ROOT, 'scripts', 'peers', 'peer.py');

  log('argus: compiling (npm run build), so that the compiled CLI is measured');
  buildArgus();
  const tmp = await mkdtemp(join(tmpdir(), 'argus-bench-peer-'));
  const samples: RunSample[] = [];
  const failures: string[] = [];
  const warnings = new Set<string>();
  let argusDue: 'produced' | 'captured' = 'produced';
  try {
    const plan = schedule(o.rounds);
    for (const [i, run] of plan.entries()) {
      const s = SCENARIOS.find((x) => x.name === run.scenario)!;
      const video = clips.get(s.clip)!;
      const base = join(tmp, `${i}-${run.scenario}-${run.program}`);
      let launch: Launch;
      if (run.program === 'argus') {
        const yaml = `${base}.yaml`;
        const jsonl = `${base}.jsonl`;
        await writeFile(yaml, argusPipelineYaml({ video, rate: s.rate, model, threads: o.threads, jsonl }));
        launch = argusLaunch(yaml, jsonl, tmp);
      } else {
        const json = `${base}.json`;
        launch = {
          cmd: python,
          // --seconds is only peer.py's own bound; the run is stopped like argus's, --seconds after its first result.
          args: [peerPy, '--mode', run.program === 'peerA' ? 'A' : 'B', '--model', model, '--video', video, '--rate', s.rate, '--threads', String(o.threads), '--seconds', String(o.seconds + 30), '--json', json, '--demo', demo],
          firstResult: (stdout) => stdout.includes('first-result'),
          output: async () => peerOutput(JSON.parse(await readFile(json, 'utf8')) as PeerJson),
        };
      }
      log(`round ${run.round + 1}/${o.rounds}, ${run.scenario}, ${run.program} (${i + 1}/${plan.length})`);
      const r = await measure(run, o.seconds, launch);
      if ('error' in r) {
        failures.push(`round ${run.round + 1} ${run.scenario} ${run.program}: ${r.error}`);
        log(`FAILED: ${r.error}`);
        continue;
      }
      samples.push(r.sample);
      if (run.program === 'argus') {
        if (r.due === 'captured') argusDue = 'captured';
        if (run.scenario === 'live1080' && (r.due === 'captured' || r.producedBy === 'captured'))
          warnings.add("argus's live due → emitted is decoder-output based: its messages carry no source stamp (stamps.produced with producedBy due), so `captured` stands in for the due time and the figure is lower than the truth");
      }
      await sleep(1000);
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }

  const result = summarize(samples, { seconds: o.seconds, threads: o.threads, argusDue });
  const out = [
    `bench:peer — ${result.rounds.count} round(s) of ${o.seconds} s per run, ${o.threads} intra-op threads, medians over rounds; load average ${result.load.min}–${result.load.max}`,
    '',
    peerTable(result),
    '',
    'peak RSS by process, resident anonymous + file-backed (the executable and libraries it touched):',
    ...rssLines(result),
    '',
    'targets (issue 13):',
    ...peerTargets(result).map((t) => `  ${t.met === null ? '?' : t.met ? 'met' : 'NOT met'}  ${t.target}`),
    ...[...warnings].map((w) => `\nwarning: ${w}`),
    ...failures.map((f) => `\nfailed run: ${f}`),
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  await writeFile(o.json, `${JSON.stringify({ ...result, failures, warnings: [...warnings] }, null, 2)}\n`);
  log(`figures written to ${o.json}`);
  if (failures.length) process.exitCode = 1;
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:peer: ${isArgusError(e) ? `${e.code}: ` : ''}${(e as Error).message ?? e}\n`);
  process.exitCode = 1;
});
