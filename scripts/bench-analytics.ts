/**
 * Tracking and rules benchmark (prints figures, asserts nothing).
 *
 *   npx tsx scripts/bench-analytics.ts [--frames 3000] [--live-seconds 140] [--json out.json]
 *
 * 1. Tracking + rules cost per frame: 50 moving objects, 10 zones with enter/exit/dwell rules
 *    and 2 counting lines, ByteTrack + SourceAnalyzer, p50/p99 per frame.
 * 2. Capture → alert handed to the sinks, live: pipelines/safety-zone.yaml at the video's native rate,
 *    with the outbox journal off and on (fsync), and the journal's append + fsync on its own.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SourceAnalyzer } from '../src/analytics/analyzer.js';
import { loadPipeline } from '../src/config/load.js';
import { SourceSchema } from '../src/config/schema.js';
import { Detections } from '../src/core/detections.js';
import { percentiles } from '../src/core/stats.js';
import { pipelineBaseDir } from '../src/pipeline/pipeline.js';
import { runPipeline } from '../src/pipeline/run.js';
import { now } from '../src/core/clock.js';
import type { Message } from '../src/sinks/message.js';
import { Outbox } from '../src/sinks/outbox.js';
import type { Sink } from '../src/sinks/sink.js';
import { ByteTracker } from '../src/tracking/byte-tracker.js';
import { numberFlag } from './lib/flags.js';

const args = process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(`--${n}`) ? args[args.indexOf(`--${n}`) + 1] : d);
const FRAMES = numberFlag(args, 'frames', 3000, { min: 1 });
const LIVE_SECONDS = numberFlag(args, 'live-seconds', 140, { min: 1 });
const JSON_OUT = opt('json', '');
const __dirname = resolve(fileURLToPath(new URL('.', import.meta.url)));
const r3 = (v: number) => Math.round(v * 1000) / 1000;

function benchRules() {
  const W = 1920, H = 1080;
  const zones = Array.from({ length: 10 }, (_, k) => {
    const x = (k % 5) * 0.2, y = k < 5 ? 0 : 0.5;
    return { id: `z${k}`, polygon: [[x, y], [x + 0.2, y], [x + 0.2, y + 0.5], [x, y + 0.5]], classes: ['person'], dwellLimitSec: 5 };
  });
  const rules = zones.flatMap((z) => [
    { id: `${z.id}-enter`, type: 'zone-enter', zone: z.id },
    { id: `${z.id}-exit`, type: 'zone-exit', zone: z.id },
    { id: `${z.id}-dwell`, type: 'zone-dwell', zone: z.id },
  ]);
  const cfg = SourceSchema.parse({
    id: 'bench', uri: '/x', zones,
    lines: [{ id: 'h', from: [0, 0.5], to: [1, 0.5] }, { id: 'v', from: [0.5, 0], to: [0.5, 1] }],
    rules: [...rules, { id: 'cross', type: 'line-cross', line: 'h' }, { id: 'rate', type: 'conveyor-rate', line: 'v', minPerMinute: 1, forSec: 5 }],
  });
  const analyzer = new SourceAnalyzer(cfg, ['person', 'car'], 'sources[0]');
  analyzer.init(W, H);
  const tracker = new ByteTracker({ frameRateHint: 30 });
  // 50 people wandering: each bounces around the frame at its own speed.
  const n = 50;
  const pos = Array.from({ length: n }, (_, i) => ({ x: (i * 137) % (W - 80), y: (i * 251) % (H - 200), vx: ((i % 7) - 3) * 40 + 20, vy: ((i % 5) - 2) * 30 + 10 }));
  const xyxy = new Float32Array(n * 4);
  const conf = new Float32Array(n).fill(0.85);
  const cls = new Int32Array(n);
  const times: number[] = [];
  let alerts = 0;
  for (let f = 0; f < FRAMES; f++) {
    const dt = 1 / 30;
    for (let i = 0; i < n; i++) {
      const p = pos[i];
      p.x += p.vx * dt; p.y += p.vy * dt;
      if (p.x < 0 || p.x > W - 80) p.vx = -p.vx;
      if (p.y < 0 || p.y > H - 200) p.vy = -p.vy;
      xyxy.set([p.x, p.y, p.x + 80, p.y + 200], i * 4);
    }
    const d = new Detections(xyxy.slice(), conf, cls);
    const t0 = performance.now();
    const tracked = tracker.update(d, (f * 1000) / 30);
    const { alerts: a } = analyzer.process(tracked, (f * 1000) / 30);
    const t1 = performance.now();
    alerts += a.length;
    if (f >= 300) times.push(t1 - t0); // after warm-up (JIT, tracks confirmed)
  }
  const [p50, p95, p99] = percentiles(times, [50, 95, 99]);
  return { frames: times.length, objects: n, zones: 10, lines: 2, rules: cfg.rules.length, alerts, p50: r3(p50), p95: r3(p95), p99: r3(p99) };
}

/**
 * Capture → alert handed to the sinks (measured in the sink, so it includes the journal's
 * fsync when the outbox is on).
 */
async function benchAlertLatency(journal: boolean) {
  const file = resolve(__dirname, '../pipelines/safety-zone.yaml');
  const config = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'native' });
  config.outbox = { ...config.outbox, enabled: journal, dir: mkdtempSync(join(tmpdir(), 'argus-bench-outbox-')) };
  const latencies: number[] = [];
  // Where the time goes: capture → emitted (the frame through the pipeline), emitted →
  // published (snapshot rendered, message built), published → here (the journal's fsync).
  const parts = { pipeline: [] as number[], snapshot: [] as number[], journal: [] as number[] };
  const capture: Sink = {
    name: 'bench',
    publish: (kind, _s, _j, m) => {
      if (kind !== 'alert' || !m.stamps) return;
      const t = now();
      latencies.push(t - m.stamps.captured);
      parts.pipeline.push(m.stamps.emitted - m.stamps.captured);
      parts.snapshot.push(m.stamps.published - m.stamps.emitted);
      parts.journal.push(t - m.stamps.published);
    },
    close: async () => {},
  };
  const ac = new AbortController();
  setTimeout(() => ac.abort(), LIVE_SECONDS * 1000).unref();
  const summary = await runPipeline(config, {
    baseDir: pipelineBaseDir(file),
    status: false,
    signal: ac.signal,
    onReady: (r) => (r.publisher.sinks as Sink[]).push(capture),
  });
  const [p50, p99] = percentiles(latencies, [50, 99]);
  const med = (v: number[]) => Math.round(percentiles(v, [50])[0] * 10) / 10;
  const medians = { pipeline: med(parts.pipeline), snapshot: med(parts.snapshot), journal: med(parts.journal) };
  return { journal, medians, seconds: LIVE_SECONDS, frames: summary.frames, alerts: latencies.length, latencies: latencies.map((v) => Math.round(v * 10) / 10), p50: Math.round(p50 * 10) / 10, p99: Math.round(p99 * 10) / 10, max: Math.round(Math.max(...latencies) * 10) / 10 };
}

const rules = benchRules();
console.log(`tracking + rules, ${rules.objects} objects, ${rules.zones} zones, ${rules.lines} lines, ${rules.rules} rules: p50 ${rules.p50} ms, p95 ${rules.p95} ms, p99 ${rules.p99} ms per frame over ${rules.frames} frames (target p99 ≤ 1 ms); ${rules.alerts} alerts`);
const live = [];
for (const journal of [false, true]) {
  const r = await benchAlertLatency(journal);
  live.push(r);
  console.log(`capture → alert handed to the sinks, journal ${journal ? 'on (fsync)' : 'off'}, safety-zone.yaml live for ${r.seconds} s: ${r.alerts} alerts, p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms (target p99 ≤ 100 ms); medians: capture → emitted ${r.medians.pipeline} ms, snapshot ${r.medians.snapshot} ms, journal ${r.medians.journal} ms; each: ${r.latencies.join(', ')}`);
}
// The journal on its own: appends of alert-sized records (a 19 KB snapshot embedded), one at a time.
const ob = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-bench-outbox-')), maxBytes: 256 << 20, maxAgeMs: 3_600_000, fsync: true });
const big = { type: 'alert', source: 'cam', alert: { id: '', snapshot: { data: 'A'.repeat(19_000) } } } as unknown as Message;
const appendMs: number[] = [];
for (let i = 0; i < 200; i++) {
  (big as { alert: { id: string } }).alert.id = `a${i}`;
  const t = performance.now();
  await ob.append(big, JSON.stringify(big));
  appendMs.push(performance.now() - t);
}
await ob.close();
const [a50, a99] = percentiles(appendMs, [50, 99]);
const journalFigures = { appends: appendMs.length, recordBytes: 19_000, p50: Math.round(a50 * 100) / 100, p99: Math.round(a99 * 100) / 100 };
console.log(`journal append + fsync of a 19 KB alert, one at a time: p50 ${journalFigures.p50} ms, p99 ${journalFigures.p99} ms over ${appendMs.length}`);
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ rules, live, journal: journalFigures }, null, 2) + '\n');
process.exit(0);
