/**
 * How long `argus detect` and `argus preview` take (prints figures, asserts nothing). Target
 * (issue 14): each under 3 s on the shared clips and images, with the model cached.
 *
 *   npx tsx scripts/bench-tools.ts [--runs 3] [--full-video] [--json out.json]
 *
 * Each case runs the real CLI (`node bin/argus.js …`, a new process each time: start-up,
 * model load, decoding, inference, drawing, writing) `--runs` times and prints the median and
 * the fastest wall time; then the same commands in this process (`runDetect`, `runPreview`),
 * without the process start and module loading. `--full-video` adds every frame of the 40 s
 * bottle video (1193 frames; minutes, not seconds). Assets come from ARGUS_MIRROR (default
 * ../shared).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDetect } from '../src/tools/detect.js';
import { runPreview } from '../src/tools/preview.js';
import { numberFlag } from './lib/flags.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
process.env.ARGUS_MIRROR ??= resolve(ROOT, '../shared');
const MIRROR = process.env.ARGUS_MIRROR;
const args = process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(`--${n}`) ? args[args.indexOf(`--${n}`) + 1] : d);
const RUNS = numberFlag(args, 'runs', 3, { min: 1 });
const JSON_OUT = opt('json', '');
const FULL_VIDEO = args.includes('--full-video');

const out = mkdtempSync(join(tmpdir(), 'argus-bench-tools-'));
const images = readdirSync(join(MIRROR, 'images')).filter((f) => f.endsWith('.jpg')).map((f) => join(MIRROR, 'images', f));
const gif = join(MIRROR, 'streams', 'bolt-multi-size-detection.gif');
const bottles = join(MIRROR, 'streams', 'bottle-detection.mp4');

interface Case {
  name: string;
  args: string[];
  /** The same command in this process. */
  inProcess: () => Promise<unknown>;
}

const quiet = () => {};
const cases: Case[] = [
  { name: 'detect 1 image --json', args: ['detect', '--json', images[0]], inProcess: () => runDetect([images[0]], { json: true, write: quiet }) },
  { name: 'detect 1 image --out PNG', args: ['detect', images[0], '--out', join(out, 'a.png')], inProcess: () => runDetect([images[0]], { out: join(out, 'a.png'), write: quiet }) },
  { name: `detect ${images.length} images --json`, args: ['detect', '--json', ...images], inProcess: () => runDetect(images, { json: true, write: quiet }) },
  { name: 'detect GIF (37 frames) --json', args: ['detect', '--json', gif], inProcess: () => runDetect([gif], { json: true, write: quiet }) },
  { name: 'detect GIF --out MP4', args: ['detect', gif, '--out', join(out, 'b.mp4')], inProcess: () => runDetect([gif], { out: join(out, 'b.mp4'), write: quiet }) },
  { name: 'detect 40 s video --fps 1', args: ['detect', '--json', '--fps', '1', bottles], inProcess: () => runDetect([bottles], { json: true, fps: 1, write: quiet }) },
  { name: 'preview safety-zone --at 0', args: ['preview', 'pipelines/safety-zone.yaml', '--out', join(out, 'p0.png')], inProcess: () => runPreview('pipelines/safety-zone.yaml', { out: join(out, 'p0.png'), write: quiet }) },
  { name: 'preview safety-zone --at 30', args: ['preview', 'pipelines/safety-zone.yaml', '--at', '30', '--out', join(out, 'p30.png')], inProcess: () => runPreview('pipelines/safety-zone.yaml', { at: 30, out: join(out, 'p30.png'), write: quiet }) },
  { name: 'preview conveyor --at 20', args: ['preview', 'pipelines/conveyor.yaml', '--at', '20', '--out', join(out, 'c.png')], inProcess: () => runPreview('pipelines/conveyor.yaml', { at: 20, out: join(out, 'c.png'), write: quiet }) },
];
if (FULL_VIDEO) cases.push({ name: 'detect 40 s video, every frame', args: ['detect', '--json', bottles], inProcess: () => runDetect([bottles], { json: true, write: quiet }) });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s2 = (ms: number) => Math.round(ms / 10) / 100;

console.log(`argus detect / preview, ${RUNS} runs each; load average ${loadavg().map((v) => v.toFixed(2)).join(' ')} on this machine; assets from ${MIRROR}`);
// Model and assets into the cache first, so no case pays for a download.
spawnSync(process.execPath, ['bin/argus.js', 'detect', images[0]], { cwd: ROOT, stdio: 'ignore' });

const rows: { case: string; cliMedianS: number; cliMinS: number; inProcessMedianS: number; failed?: string }[] = [];
for (const c of cases) {
  const cli: number[] = [];
  let failed: string | undefined;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const r = spawnSync(process.execPath, ['bin/argus.js', ...c.args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 28 });
    cli.push(performance.now() - t);
    if (r.status !== 0) failed = r.stderr.trim().split('\n').slice(-1)[0];
  }
  const inProc: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await c.inProcess();
    inProc.push(performance.now() - t);
  }
  const row = { case: c.name, cliMedianS: s2(median(cli)), cliMinS: s2(Math.min(...cli)), inProcessMedianS: s2(median(inProc)), ...(failed ? { failed } : {}) };
  rows.push(row);
  console.log(`${c.name.padEnd(34)} CLI median ${row.cliMedianS.toFixed(2)} s (fastest ${row.cliMinS.toFixed(2)} s)   in process ${row.inProcessMedianS.toFixed(2)} s${row.cliMedianS <= 3 ? '' : '   over 3 s'}${failed ? `   FAILED: ${failed}` : ''}`);
}
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ runs: RUNS, loadavg: loadavg(), rows }, null, 2));
