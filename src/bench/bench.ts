import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { firstValueFrom } from 'rxjs';
import { resolveStream } from '../assets/catalog.js';
import { loadPipeline } from '../config/load.js';
import { SourceSchema, type PipelineConfig } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { redact } from '../core/redact.js';
import { now } from '../core/clock.js';
import type { LogFn } from '../core/log.js';
import { percentiles } from '../core/stats.js';
import { precisionReport, sweep, sweepTable } from './sweep.js';
import type { Detector } from '../inference/detector.js';
import { normalizeHwcToChw } from '../preprocess/normalize.js';
import type { FrameResult } from '../analytics/analyze.js';
import { STAGES as FRAME_STAGES, e2eMs, pipelineMs, stageMs } from '../core/frame.js';
import { inferenceThreads, loadDetector, pipelineBaseDir } from '../pipeline/pipeline.js';
import { defaultFfmpegPath } from '../sources/ffmpeg-path.js';
import { runPipeline } from '../pipeline/run.js';
import { sourceKind } from '../sources/ffmpeg-args.js';
import { ffmpegSource } from '../sources/ffmpeg-source.js';

export interface BenchOptions {
  pipeline: string;
  rawRuns: number;
  fileFrames: number;
  liveSeconds: number;
  /** Live-mode source; default the derived 1080p30 clip (asset:person-1080p30.mp4). */
  liveUri?: string;
  json?: string;
  /** Skip raw/file/live (for --sweep alone). */
  skipCore?: boolean;
  /** INT8 and fp16 against fp32: speed side by side and detection agreement. */
  precision?: boolean;
  /** Batching N sources (dynamic-batch model, maxBatch N) against batch 1. 0: skip. */
  batchSources?: number;
  sweep?: boolean;
  budgetMs?: number;
  sweepRuns?: number;
  log: LogFn;
}

/** The frame's stages, then end-to-end (produced → emitted) and its pipeline part (captured → emitted). */
const STAGES = [...FRAME_STAGES, 'e2e', 'pipeline'] as const;
type Stage = (typeof STAGES)[number];

function stageDurations(r: FrameResult): Record<Stage, number> {
  const s = r.frame.stamps;
  const d = { e2e: e2eMs(s), pipeline: pipelineMs(s) } as Record<Stage, number>;
  for (const st of FRAME_STAGES) d[st] = stageMs(s, st);
  return d;
}

/**
 * A live run's frames per second, out (results) and in (frames read, dropped ones included),
 * over its results' span: from the first result's `captured` to the last's, `results − 1` frame
 * intervals, in which the frames from the first's `seq` to the last's were read. (The results
 * themselves were counted over it, one more than the intervals: a 30 fps clip read 30.1 fps in
 * a 10 s run.)
 */
export function liveRates(first: { captured: number; seq: number }, last: { captured: number; seq: number }, results: number): { seconds: number; fps: number; fpsIn: number } {
  const seconds = (last.captured - first.captured) / 1000;
  if (!(seconds > 0) || results < 2) return { seconds: Math.max(0, seconds), fps: 0, fpsIn: 0 };
  return { seconds, fps: (results - 1) / seconds, fpsIn: (last.seq - first.seq) / seconds };
}

const pct = (xs: number[]) => {
  const [p50, p95, p99] = percentiles(xs, [50, 95, 99]);
  return { p50: r2(p50), p95: r2(p95), p99: r2(p99) };
};
const r2 = (v: number) => Math.round(v * 100) / 100;
const rssMb = () => r2(process.memoryUsage().rss / 1024 / 1024);

/** Raw inference: the model alone, on a real letterboxed frame, no pipeline around it. */
async function benchRaw(detector: Detector, sample: string, runs: number) {
  const input = detector.createInput();
  const frame = await firstValueFrom(
    ffmpegSource({
      id: 'raw',
      input: { url: sample, kind: sourceKind(sample), rate: 'fast', loop: false },
      output: { width: detector.inputWidth, height: detector.inputHeight, pixelFormat: detector.pixelFormat, align: detector.align, padValue: detector.padValue },
      ffmpegPath: defaultFfmpegPath(),
    }),
  );
  normalizeHwcToChw(frame.data, detector.inputWidth, detector.inputHeight, input.data, detector.normalize);
  frame.release();
  for (let i = 0; i < 10; i++) await detector.run(input);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await detector.run(input);
    times.push(performance.now() - t);
  }
  return pct(times);
}

/**
 * The pipeline with one source, `uri`, otherwise as its first source is set (but for `tls`,
 * which is that camera's), checked again as the config would be (an rtsps:// uri whose
 * certificate only the relay can check, and the first source's settings turn the relay off).
 */
export function withSource(config: PipelineConfig, uri: string, rate: 'fast' | 'native', loop: boolean): PipelineConfig {
  // A worker's YAML has no sources (its cameras are in the cameras topic): the defaults then.
  const { tls: _theirs, ...first } = config.sources[0] ?? {};
  const parsed = SourceSchema.safeParse({ ...first, id: 'bench', uri, rate, loop, enabled: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ArgusError(ErrorCodes.CONFIG, redact(`bench: ${uri} with the first source's settings: ${issue.path.join('.')}: ${issue.message}`));
  }
  const src = parsed.data;
  return { ...config, sources: [src], sinks: { websocket: config.sinks.websocket }, server: undefined };
}

/** One multi-source configuration of the batching bench. */
export interface BatchConfig {
  label: string;
  manifest: string;
  maxBatch: number;
  workers: number;
  threads: number;
}

/**
 * The batching bench's configurations for N sources on a machine with `cores` cores: the
 * baseline (the pipeline's model at batch 1: one session with its threads), the batch dimension
 * alone (one session, up to N frames per run), and batches spread over worker sessions of one
 * thread each (up to N / workers frames per run, workers = cores, at most N).
 */
export function batchConfigs(n: number, threads: number, cores: number, manifest: string): BatchConfig[] {
  const workers = Math.max(2, Math.min(cores, n));
  const per = Math.ceil(n / workers);
  return [
    { label: `batch 1, 1 session × ${threads} threads`, manifest, maxBatch: 1, workers: 1, threads },
    { label: `batch ≤ ${n}, 1 session × ${threads} threads`, manifest: 'yolox-nano-dyn', maxBatch: n, workers: 1, threads },
    { label: `batch 1, ${workers} sessions × 1 thread`, manifest, maxBatch: 1, workers, threads: 1 },
    { label: `batch ≤ ${per}, ${workers} sessions × 1 thread`, manifest: 'yolox-nano-dyn', maxBatch: per, workers, threads: 1 },
  ];
}

/** N sources on the demo video as fast as possible, for each configuration; the first is the baseline. */
async function benchBatching(config: PipelineConfig, baseDir: string, video: string, n: number, frames: number, log: LogFn) {
  const [one] = withSource(config, video, 'fast', true).sources;
  const run = async (c: BatchConfig) => {
    const cfg: PipelineConfig = {
      ...config,
      model: { ...config.model, manifest: c.manifest, path: undefined, batch: { maxBatch: c.maxBatch, maxWaitMs: 8 }, workers: c.workers, intraOpThreads: c.threads },
      sources: Array.from({ length: n }, (_, i) => ({ ...one, id: `s${i}`, zones: [], lines: [], rules: [] })),
      sinks: { websocket: config.sinks.websocket },
      server: undefined,
    };
    const e2e: number[] = [];
    let first = 0;
    let last = 0;
    const summary = await runPipeline(cfg, {
      baseDir,
      status: false,
      maxFrames: frames,
      onResult: (r) => {
        if (!first) first = r.frame.stamps.captured;
        last = r.frame.stamps.emitted;
        e2e.push(e2eMs(r.frame.stamps));
      },
    });
    const [p50, p99] = percentiles(e2e, [50, 99]);
    const perSource = summary.stats.map((s) => s.framesOut);
    return { ...c, fps: r2((summary.frames - 1) / ((last - first) / 1000)), p50: r2(p50), p99: r2(p99), perSource };
  };
  const rows = [];
  for (const c of batchConfigs(n, inferenceThreads(config).intraOpThreads, cpus().length, config.model.manifest ?? 'yolox-nano')) {
    log(`bench: batching, ${n} sources, ${c.label}`);
    rows.push(await run(c));
  }
  const base = rows[0];
  const ratios = rows.map((r) => ({ ...r, throughputRatio: r2(r.fps / base.fps), p99Ratio: r2(r.p99 / base.p99) }));
  const best = ratios.slice(1).reduce((a, b) => (b.throughputRatio > a.throughputRatio ? b : a));
  return { sources: n, rows: ratios, best: best.label, throughputRatio: best.throughputRatio, p99Ratio: best.p99Ratio };
}

export function batchingTable(b: Awaited<ReturnType<typeof benchBatching>>): string {
  const head = ['configuration', 'fps', 'e2e p50 ms', 'e2e p99 ms', '× fps', '× p99', 'frames per source'];
  const lines = [head, ...b.rows.map((r) => [r.label, String(r.fps), String(r.p50), String(r.p99), String(r.throughputRatio), String(r.p99Ratio), r.perSource.join('/')])];
  const w = head.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return lines.map((l) => l.map((c, i) => c.padEnd(w[i])).join('  ')).join('\n');
}

export async function runBench(o: BenchOptions) {
  const config = await loadPipeline(o.pipeline);
  const baseDir = pipelineBaseDir(o.pipeline);
  const ffmpeg = config.ffmpegPath ?? defaultFfmpegPath();
  const log = o.log;
  const demoVideo = await resolveStream('one-by-one-person-detection.mp4', ffmpeg, { log });
  if (o.skipCore) return runExtras(o, config, baseDir, demoVideo, {});
  const detector = await loadDetector(config, { baseDir, log });
  const rawThreads = inferenceThreads(config).intraOpThreads;

  log(`bench: raw inference, ${o.rawRuns} runs`);
  const raw = await benchRaw(detector, demoVideo, o.rawRuns);

  log(`bench: file mode, ${o.fileFrames} frames as fast as possible`);
  const fileStages: Record<Stage, number[]> = Object.fromEntries(STAGES.map((s) => [s, []])) as unknown as Record<Stage, number[]>;
  let firstCaptured = 0;
  let lastEmitted = 0;
  const file = await runPipeline(withSource(config, demoVideo, 'fast', true), {
    baseDir,
    detector,
    status: false,
    maxFrames: o.fileFrames,
    onResult: (r) => {
      const d = stageDurations(r);
      for (const s of STAGES) fileStages[s].push(d[s]);
      if (!firstCaptured) firstCaptured = r.frame.stamps.captured;
      lastEmitted = r.frame.stamps.emitted;
    },
  });
  // Throughput over the frames after the first (the first includes ffmpeg's start-up).
  const fileFps = (file.frames - 1) / ((lastEmitted - firstCaptured) / 1000);

  log(`bench: live mode, ${o.liveUri ?? '1080p30'} for ${o.liveSeconds} s`);
  const liveUri = o.liveUri ?? 'asset:person-1080p30.mp4';
  const clip = liveUri.startsWith('asset:') ? await resolveStream(liveUri.slice(6), ffmpeg, { log }) : liveUri;
  const liveE2e: { t: number; v: number }[] = [];
  let liveFirst = { captured: 0, seq: 0 };
  let liveLast = liveFirst;
  const liveStages: Record<Stage, number[]> = Object.fromEntries(STAGES.map((s) => [s, []])) as unknown as Record<Stage, number[]>;
  const ac = new AbortController();
  let liveStart = 0;
  let liveSpawned = 0;
  let liveFirstFrameMs = NaN;
  let liveProducedBy = '';
  let rssStart = 0;
  let rssPeak = 0;
  const rssTimer = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb())), 1000);
  /** Latencies over every frame read (README, "Latency over the frames read"). */
  const liveRead: number[] = [];
  const live = await runPipeline(withSource(config, clip, 'native', true), {
    baseDir,
    detector,
    status: false,
    signal: ac.signal,
    onReady: () => {
      rssStart = rssMb();
      liveSpawned = now();
    },
    onResult: (r) => {
      const d = stageDurations(r);
      if (!liveStart) {
        liveStart = r.frame.stamps.captured;
        // Source start (the pipeline is ready and ffmpeg starts) → first frame delivered.
        liveFirstFrameMs = r2(r.frame.stamps.captured - liveSpawned);
        liveProducedBy = r.frame.producedBy;
        liveFirst = { captured: r.frame.stamps.captured, seq: r.frame.seq };
        setTimeout(() => ac.abort(), o.liveSeconds * 1000).unref();
      }
      for (const s of STAGES) liveStages[s].push(d[s]);
      liveE2e.push({ t: r.frame.stamps.captured - liveStart, v: d.e2e });
      // Over every frame read: the frames dropped before this one, until it came out.
      liveRead.push(d.e2e);
      if (r.superseded) for (const ms of r.superseded) liveRead.push(ms);
      liveLast = { captured: r.frame.stamps.captured, seq: r.frame.seq };
    },
  });
  clearInterval(rssTimer);
  const rssEnd = rssMb();
  // (Sampled once a second: the start and the end count too.)
  rssPeak = Math.max(rssPeak, rssStart, rssEnd);
  const st = live.stats[0];
  const rates = liveRates(liveFirst, liveLast, liveE2e.length);
  const liveSecs = rates.seconds;
  // The first and the last 30 s, or thirds of a run shorter than 90 s (two 30 s windows of a
  // 10 s run were the same frames).
  const windowS = Math.min(30, liveSecs / 3);
  const first30 = liveE2e.filter((x) => x.t < windowS * 1000).map((x) => x.v);
  const last30 = liveE2e.filter((x) => x.t >= (liveSecs - windowS) * 1000).map((x) => x.v);

  const result = {
    machine: { cpus: (await import('node:os')).cpus().length, node: process.version, provider: detector.provider, threads: rawThreads },
    raw,
    file: {
      frames: file.frames,
      fps: r2(fileFps),
      e2e: pct(fileStages.e2e),
      stages: Object.fromEntries(STAGES.map((s) => [s, pct(fileStages[s])])),
      overheadP50: r2(pct(fileStages.e2e).p50 - raw.p50),
      throughputRatio: r2(fileFps / (1000 / raw.p50)),
    },
    live: {
      source: liveUri,
      seconds: r2(liveSecs),
      framesIn: st.framesIn,
      framesOut: st.framesOut,
      dropped: st.dropped,
      fps: r2(rates.fps),
      fpsIn: r2(rates.fpsIn),
      dropPct: r2((100 * st.dropped) / Math.max(1, st.framesIn)),
      producedBy: liveProducedBy,
      firstFrameMs: liveFirstFrameMs,
      e2e: pct(liveE2e.map((x) => x.v)),
      /** Over every frame read: a dropped frame from its `produced` to the next newer frame's result. */
      e2eRead: pct(liveRead),
      /** The seconds of e2eFirst30 and e2eLast30: 30, or a third of a shorter run. */
      e2eWindowS: r2(windowS),
      e2eFirst30: pct(first30),
      e2eLast30: pct(last30),
      stages: Object.fromEntries(STAGES.map((s) => [s, pct(liveStages[s])])),
      rssStartMb: rssStart,
      rssEndMb: rssEnd,
      rssPeakMb: rssPeak,
    },
  };
  await detector.release();

  printTable(result);
  return runExtras(o, config, baseDir, demoVideo, result);
}

async function runExtras(o: BenchOptions, config: PipelineConfig, baseDir: string, demoVideo: string, result: Record<string, unknown>) {
  const out: Record<string, unknown> = { ...result };
  if (o.precision) {
    const threads = inferenceThreads(config).intraOpThreads;
    const p = await precisionReport(threads, 200, o.log);
    out.precision = p;
    process.stdout.write(
      `\nprecision (${threads} threads, rotating blocks of 20 runs): fp32 p50 ${p.fp32.p50} ms; ` +
        `int8 p50 ${p.int8.p50} ms = ${p.int8.speedup}× (target ≥ 1.3×), agreement ${Math.round(p.int8.agreement * 100)}% (target ≥ 90%); ` +
        `fp16 p50 ${p.fp16.p50} ms = ${p.fp16.speedup}×, agreement ${Math.round(p.fp16.agreement * 100)}%\n`,
    );
  }
  if (o.batchSources && o.batchSources > 1) {
    const b = await benchBatching(config, baseDir, demoVideo, o.batchSources, 400, o.log);
    out.batching = b;
    process.stdout.write(
      `\nbatching ${b.sources} sources (as fast as possible, 400 frames each run; × against the first row):\n${batchingTable(b)}\n` +
        `best: ${b.best}: throughput ${b.throughputRatio}× (target ≥ 1.2×), p99 ${b.p99Ratio}× (target ≤ 2×)\n`,
    );
  }
  if (o.sweep) {
    const rows = await sweep({ budgetMs: o.budgetMs ?? 33, runs: o.sweepRuns ?? 60, providers: [...new Set(['cuda', 'tensorrt', 'cpu'] as const)], log: o.log });
    out.sweep = rows;
    process.stdout.write(`\nsweep (${o.sweepRuns ?? 60} runs each, images submitted together per batch):\n${sweepTable(rows, o.budgetMs ?? 33)}\n`);
  }
  if (o.json) await writeFile(o.json, JSON.stringify(out, null, 2) + '\n');
  return out;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the figures object built just above
function printTable(r: any) {
  const out: string[] = [];
  const row = (...c: (string | number)[]) => out.push(c.map((x, i) => String(x).padEnd(i === 0 ? 26 : 10)).join(''));
  out.push(`argus bench — ${r.machine.cpus} CPUs, ${r.machine.node}, provider ${r.machine.provider}, ${r.machine.threads} intra-op threads`);
  out.push('');
  row('', 'p50 ms', 'p95 ms', 'p99 ms');
  row('raw inference', r.raw.p50, r.raw.p95, r.raw.p99);
  for (const s of STAGES) row(`file ${s}`, r.file.stages[s].p50, r.file.stages[s].p95, r.file.stages[s].p99);
  for (const s of STAGES) row(`live ${s}`, r.live.stages[s].p50, r.live.stages[s].p95, r.live.stages[s].p99);
  row(`live e2e first ${r.live.e2eWindowS} s`, r.live.e2eFirst30.p50, r.live.e2eFirst30.p95, r.live.e2eFirst30.p99);
  row(`live e2e last ${r.live.e2eWindowS} s`, r.live.e2eLast30.p50, r.live.e2eLast30.p95, r.live.e2eLast30.p99);
  out.push('');
  out.push(`file: ${r.file.frames} frames at ${r.file.fps} fps; e2e p50 − raw p50 = ${r.file.overheadP50} ms (target ≤ 3); fps ÷ (1000 / raw p50) = ${r.file.throughputRatio} (target ≥ 0.85)`);
  out.push(
    `live ${r.live.source}: ${r.live.seconds} s, in ${r.live.fpsIn} fps, out ${r.live.fps} fps, dropped ${r.live.dropped}/${r.live.framesIn} (${r.live.dropPct}%), ` +
      `e2e (from stamps.produced: ${r.live.producedBy}) p50 ${r.live.e2e.p50} ms p99 ${r.live.e2e.p99} ms (over every frame read, dropped ones until a newer one's result: p50 ${r.live.e2eRead.p50} ms p99 ${r.live.e2eRead.p99} ms), pipeline (from captured) p50 ${r.live.stages.pipeline.p50} ms p99 ${r.live.stages.pipeline.p99} ms; ` +
      `last-${r.live.e2eWindowS} s p99 ÷ first-${r.live.e2eWindowS} s p99 = ${r2(r.live.e2eLast30.p99 / r.live.e2eFirst30.p99)}; source start → first frame ${r.live.firstFrameMs} ms`,
  );
  out.push(`live RSS: start ${r.live.rssStartMb} MB, end ${r.live.rssEndMb} MB (growth ${r2(r.live.rssEndMb - r.live.rssStartMb)} MB), peak ${r.live.rssPeakMb} MB`);
  process.stdout.write(out.join('\n') + '\n');
}

