/**
 * How argus should share the CPU between decoding and inference (issue 13, point 3). Prints
 * figures; asserts nothing.
 *
 *   npm run bench:cores -- [--rounds 3] [--seconds 15] [--json FILE]
 *
 * Runs `node dist/src/cli.js run` (the compiled CLI) as bench:peer does (one file source, a JSONL sink, the same
 * model, the demo's NMS settings), once per setting below on each clip: the 432p person video
 * as fast as possible, the derived 1080p30 clip as fast as possible and at its native rate.
 * Settings and clips are interleaved, the order of the settings rotated every round, so load
 * changes on the machine spread over all of them. Medians over rounds.
 */
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModelManifest, resolveModelFile, resolveStream } from '../src/assets/catalog.js';
import { argusPipelineYaml, medianOf, runFigures, SCENARIOS, type RunFigures } from '../src/bench/peer.js';
import { defaultFfmpegPath } from '../src/sources/ffmpeg-path.js';
import { argusLaunch, buildArgus, measure } from './lib/measure.js';
import { numberFlag } from './lib/flags.js';

/** The settings compared: the old defaults first, then one change at a time, then the new defaults. */
const SETTINGS: { name: string; decodeThreads: number; spinning: boolean; spinMicros?: number; workers: number; intra: number }[] = [
  // 1 s of spinning: ONNX Runtime's own default behaviour (its threads spin through a 33 ms gap).
  { name: 'ffmpeg threads, unbounded spinning', decodeThreads: 0, spinning: true, spinMicros: 1_000_000, workers: 1, intra: 2 },
  { name: '1 decoder thread, unbounded spinning', decodeThreads: 1, spinning: true, spinMicros: 1_000_000, workers: 1, intra: 2 },
  { name: 'old: 1 decoder thread, no spinning', decodeThreads: 1, spinning: false, workers: 1, intra: 2 },
  { name: '1 decoder thread, spinning ≤ 500 µs', decodeThreads: 1, spinning: true, spinMicros: 500, workers: 1, intra: 2 },
  { name: 'new: 1 decoder thread, spinning ≤ 200 µs', decodeThreads: 1, spinning: true, spinMicros: 200, workers: 1, intra: 2 },
  { name: 'new, session on the main thread', decodeThreads: 1, spinning: true, spinMicros: 200, workers: 0, intra: 2 },
  { name: 'new, 2 workers × 1 thread', decodeThreads: 1, spinning: true, spinMicros: 200, workers: 2, intra: 1 },
];

function args(argv: string[]) {
  const get = (k: string, d: string) => {
    const i = argv.indexOf(`--${k}`);
    return i >= 0 && argv[i + 1] ? argv[i + 1] : d;
  };
  return { rounds: numberFlag(argv, 'rounds', 3, { min: 1 }), seconds: numberFlag(argv, 'seconds', 15, { min: 1, whole: false }), json: get('json', '') };
}

async function main() {
  const o = args(process.argv.slice(2));
  const log = (m: string) => process.stderr.write(`bench:cores: ${m}\n`);
  const ffmpeg = defaultFfmpegPath();
  const model = await resolveModelFile((await loadModelManifest('yolox-nano')).manifest, { log });
  const clips = new Map<string, string>();
  for (const s of SCENARIOS) if (!clips.has(s.clip)) clips.set(s.clip, await resolveStream(s.clip, ffmpeg, { log }));
  log('argus: compiling (npm run build), so that the compiled CLI is measured');
  buildArgus();
  const tmp = await mkdtemp(join(tmpdir(), 'argus-bench-cores-'));
  const figures = new Map<string, RunFigures[]>(); // `${scenario}|${setting}`
  const loads: number[] = [];
  try {
    let n = 0;
    for (let round = 0; round < o.rounds; round++) {
      for (const sc of SCENARIOS) {
        const order = SETTINGS.map((_, i) => SETTINGS[(i + round) % SETTINGS.length]);
        for (const st of order) {
          const base = join(tmp, `${n++}`);
          const jsonl = `${base}.jsonl`;
          await writeFile(
            `${base}.yaml`,
            argusPipelineYaml({
              video: clips.get(sc.clip)!,
              rate: sc.rate,
              model,
              threads: st.intra,
              jsonl,
              source: { decode: { lowLatency: true, threads: st.decodeThreads } },
              modelOptions: { allowSpinning: st.spinning, ...(st.spinMicros ? { spinMicros: st.spinMicros } : {}), workers: st.workers, intraOpThreads: st.intra },
            }),
          );
          log(`round ${round + 1}/${o.rounds} ${sc.name}: ${st.name}`);
          loads.push(loadavg()[0]);
          const r = await measure({ round, scenario: sc.name, program: 'argus' }, o.seconds, argusLaunch(`${base}.yaml`, jsonl, tmp));
          if ('error' in r) {
            log(`FAILED: ${r.error}`);
            continue;
          }
          const k = `${sc.name}|${st.name}`;
          if (!figures.has(k)) figures.set(k, []);
          figures.get(k)!.push(runFigures(r.sample));
        }
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  const med = (k: string, f: keyof RunFigures) => medianOf((figures.get(k) ?? []).map((x) => x[f]));
  const fmt = (v: number | null, d = 1) => (v === null ? '-' : v.toFixed(d));
  const out: string[] = [`bench:cores — ${o.rounds} round(s) of ${o.seconds} s per run, medians; load average ${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}`];
  const json: Record<string, Record<string, Record<string, number | null>>> = {};
  for (const sc of SCENARIOS) {
    out.push('', `${sc.name}: setting | fps | drop % | produced→emitted p50 / p99 ms | infer p50 ms | CPU ms/frame | RSS MB`);
    json[sc.name] = {};
    for (const st of SETTINGS) {
      const k = `${sc.name}|${st.name}`;
      const row = { fps: med(k, 'fps'), dropPct: med(k, 'dropPct'), e2eP50: med(k, 'dueToEmittedP50'), e2eP99: med(k, 'dueToEmittedP99'), inferP50: med(k, 'inferP50'), cpuMsPerFrame: med(k, 'cpuMsPerFrame'), rssMb: med(k, 'rssMb') };
      json[sc.name][st.name] = row;
      out.push(`  ${st.name.padEnd(38)} ${fmt(row.fps)} | ${fmt(row.dropPct)} | ${fmt(row.e2eP50)} / ${fmt(row.e2eP99)} | ${fmt(row.inferP50)} | ${fmt(row.cpuMsPerFrame)} | ${fmt(row.rssMb, 0)}`);
    }
  }
  process.stdout.write(out.join('\n') + '\n');
  if (o.json) await writeFile(o.json, JSON.stringify({ settings: SETTINGS, figures: json, load: { min: Math.min(...loads), max: Math.max(...loads) } }, null, 2) + '\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:cores: ${(e as Error).message ?? e}\n`);
  process.exitCode = 1;
});
