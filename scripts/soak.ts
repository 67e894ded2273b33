/**
 * Soak: N real RTSP sources (the shared videos, looped, through scripts/rtsp-server.sh) for a
 * long run. Prints figures; asserts nothing.
 *
 *   npx tsx scripts/soak.ts [--minutes 30] [--sources 4] [--workers 1] [--threads 2] [--json out.json]
 *
 * Reports RSS after warm-up and at the end (growth %), end-to-end p99 of the first and last
 * 5 minutes, reconnects, and unaccounted frames: every frame read must be processed or
 * counted as dropped (framesIn − framesOut − dropped, less at most one in flight and one
 * waiting per source).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PipelineSchema } from '../src/config/schema.js';
import { percentiles } from '../src/core/stats.js';
import { runPipeline } from '../src/pipeline/run.js';
import { numberFlag } from './lib/flags.js';

const args = process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(`--${n}`) ? args[args.indexOf(`--${n}`) + 1] : d);
const MINUTES = numberFlag(args, 'minutes', 30, { min: 0.1, whole: false });
const SOURCES = numberFlag(args, 'sources', 4, { min: 1 });
const JSON_OUT = opt('json', '');
const WORKERS = numberFlag(args, 'workers', 1);
const THREADS = numberFlag(args, 'threads', 2, { min: 1 });
const here = resolve(fileURLToPath(new URL('.', import.meta.url)));
const rtsp = (...a: string[]) => execFileSync('bash', [resolve(here, 'rtsp-server.sh'), ...a], { encoding: 'utf8', env: { ...process.env, RTSP_PORT: process.env.RTSP_PORT ?? '18654' } }).trim();
const mirror = process.env.ARGUS_MIRROR ?? resolve(here, '../../shared');
const videos = [`${mirror}/streams/one-by-one-person-detection.mp4`, `${mirror}/streams/bottle-detection.mp4`];

rtsp('start');
const urls = Array.from({ length: SOURCES }, (_, i) => /RTSP_URL=(\S+)/.exec(rtsp('publish', `soak${i}`, videos[i % 2], '--loop', ...(i % 2 ? ['--transcode'] : [])))![1]);
console.log(`soak: ${SOURCES} RTSP sources for ${MINUTES} min, ${WORKERS} inference worker(s) × ${THREADS} thread(s): ${urls.join(' ')}`);

const config = PipelineSchema.parse({ sources: urls.map((uri, i) => ({ id: `cam${i}`, uri })), model: { warmupRuns: 2, workers: WORKERS, intraOpThreads: THREADS }, alerts: { snapshot: { mode: 'none' } } });
const e2e: { t: number; v: number }[] = [];
const rss: { t: number; mb: number }[] = [];
const ac = new AbortController();
let t0 = 0;
const rssTimer = setInterval(() => rss.push({ t: performance.now() - t0, mb: process.memoryUsage().rss / 1048576 }), 10_000);
setTimeout(() => ac.abort(), MINUTES * 60_000).unref();
let seen = 0;
const progress = setInterval(() => {
  // The last minute's e2e p99, so a latency that grows shows minute by minute.
  const minute = e2e.slice(seen).map((x) => x.v);
  seen = e2e.length;
  const p99 = minute.length ? percentiles(minute, [99])[0].toFixed(1) : '-';
  process.stdout.write(`  ${((performance.now() - t0) / 60_000).toFixed(1)} min, ${e2e.length} frames, last minute e2e p99 ${p99} ms, RSS ${(process.memoryUsage().rss / 1048576).toFixed(0)} MB\n`);
}, 60_000);
const summary = await runPipeline(config, {
  status: false,
  signal: ac.signal,
  onReady: () => (t0 = performance.now()),
  onResult: (r) => e2e.push({ t: performance.now() - t0, v: r.frame.stamps.emitted - r.frame.stamps.captured }),
});
clearInterval(rssTimer);
clearInterval(progress);
rtsp('stop');

const total = MINUTES * 60_000;
const warm = rss.find((x) => x.t >= 120_000) ?? rss[0];
const end = rss.at(-1)!;
const p99 = (from: number, to: number) => percentiles(e2e.filter((x) => x.t >= from && x.t < to).map((x) => x.v), [99])[0];
const first = p99(60_000, 360_000);
const last = p99(total - 300_000, total);
const perSource = summary.stats.map((s) => ({ id: s.id, framesIn: s.framesIn, framesOut: s.framesOut, dropped: s.dropped, reconnects: s.reconnects, unaccounted: s.framesIn - s.framesOut - s.dropped }));
const result = {
  minutes: MINUTES,
  sources: SOURCES,
  workers: WORKERS,
  threads: THREADS,
  frames: summary.frames,
  rssWarmMb: Math.round(warm.mb),
  rssEndMb: Math.round(end.mb),
  rssGrowthPct: Math.round(((end.mb - warm.mb) / warm.mb) * 1000) / 10,
  e2eP99First5MinMs: Math.round(first * 10) / 10,
  e2eP99Last5MinMs: Math.round(last * 10) / 10,
  unaccounted: perSource.reduce((n, s) => n + s.unaccounted, 0),
  perSource,
};
console.log(JSON.stringify(result, null, 2));
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify(result, null, 2) + '\n');
process.exit(0);
