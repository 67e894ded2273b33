import { Command, InvalidArgumentError } from 'commander';
import { loadPipeline } from './config/load.js';
import { ErrorCodes, isArgusError } from './core/errors.js';
import { FAMILIES } from './core/families.js';
import { redact } from './core/redact.js';
import { quiesceInference } from './inference/worker-pool.js';
import { createLogger, logFn } from './core/log.js';
import { pipelineBaseDir } from './pipeline/pipeline.js';
import { runPipeline } from './pipeline/run.js';

const logger = createLogger();
const log = logFn(logger);

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

const program = new Command('argus').description('Real-time video analytics: ffmpeg → ONNX Runtime → detections').showHelpAfterError();

program
  .command('run')
  .description('run a pipeline YAML')
  .argument('<pipeline>', 'pipeline YAML file')
  .option('--max-frames <n>', 'stop after N processed frames', positiveInt)
  .option('--jsonl <file>', "write one JSON line per processed frame ('-' for stdout)")
  .option('--annotate <path>', 'write each source\'s video with boxes, track ids, zones, lines and counts to this MP4 ({source} for the source id, or a folder/); overrides sinks.annotate.path')
  .option('--no-status', 'do not print the per-source status line')
  .action(async (file: string, opts: { maxFrames?: number; jsonl?: string; annotate?: string; status: boolean }) => {
    const config = await loadPipeline(file);
    const ac = new AbortController();
    // Process-level guard: an exception nothing caught (a bug, a library's stray error event)
    // turns into the same orderly shutdown as SIGTERM — sources stop, alerts already raised are
    // in the journal, Kafka is flushed — and the exit status is 4. If the shutdown itself hangs,
    // the process exits anyway once the drain and Kafka's close timeout have passed.
    let crashed: unknown;
    const onCrash = (e: unknown) => {
      const first = crashed === undefined;
      crashed ??= e;
      try {
        logger.fatal({ code: ErrorCodes.INTERNAL, err: redact(String((e as Error)?.stack ?? e)) }, first ? 'unexpected exception; shutting down in order (exit status 4)' : 'unexpected exception during shutdown');
      } catch {
        // stderr is gone
      }
      if (!first) return;
      ac.abort();
      const graceMs = 10_000 + (config.sinks.kafka?.closeTimeoutMs ?? 0) + 5_000;
      setTimeout(() => void quiesceInference(2000).finally(() => process.exit(4)), graceMs).unref();
    };
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    let signals = 0;
    const onSignal = (sig: string) => {
      signals++;
      if (signals > 1) {
        process.stderr.write('argus: second signal, exiting at once (messages in flight are lost)\n');
        // Only the inference runs in flight are waited for (milliseconds): see quiesceInference.
        void quiesceInference(2000).finally(() => process.exit(130));
        return;
      }
      logger.info({ signal: sig }, 'stopping: sources first, then frames in flight, alerts, Kafka, WebSocket (send again to force)');
      ac.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // SIGHUP (the terminal went away, or a supervisor's reload) stops in order like SIGTERM.
    process.on('SIGHUP', onSignal);
    const summary = await runPipeline(config, {
      baseDir: pipelineBaseDir(file),
      maxFrames: opts.maxFrames,
      jsonl: opts.jsonl,
      annotate: opts.annotate,
      status: opts.status,
      signal: ac.signal,
      log,
    });
    for (const s of summary.stats) {
      logger.info(
        { source: s.id, state: s.state, framesIn: s.framesIn, framesOut: s.framesOut, dropped: s.dropped, reconnects: s.reconnects, e2eP50: s.e2e.percentile(50), e2eP99: s.e2e.percentile(99), producedBy: s.producedBy, pipelineP50: s.pipeline.percentile(50), pipelineP99: s.pipeline.percentile(99) },
        'source summary',
      );
      const a = summary.analytics[s.id];
      if (!a) continue;
      for (const [zone, z] of Object.entries(a.zones)) logger.info({ source: s.id, zone, entered: z.entered, exited: z.exited, occupancy: z.occupancy, alerts: z.alerts, seenInstead: z.seenInstead }, 'zone summary');
      for (const [line, l] of Object.entries(a.lines)) logger.info({ source: s.id, line, in: l.in, out: l.out, byClass: l.byClass, alerts: l.alerts, seenInstead: l.seenInstead }, 'line summary');
      if (Object.keys(a.alerts).length) logger.info({ source: s.id, byRule: a.alerts }, 'alerts summary');
      for (const note of a.notes) logger.warn({ source: s.id }, note);
    }
    if (summary.kafka) logger.info({ ...summary.kafka }, 'kafka summary');
    if (summary.outbox) logger.info({ ...summary.outbox }, 'outbox summary');
    // Exit status: 4 an unexpected exception (shut down in order), 3 alerts not delivered to
    // Kafka by exit (kept in the outbox for the next start, or lost), 1 a source failed (the
    // others ran), 0 all well.
    if (summary.failed.length > 0) {
      for (const f of summary.failed) process.stderr.write(`argus: source "${f.source}" failed: ${redact(f.error.message)}\n`);
      process.exitCode = 1;
    }
    if (summary.lostAlerts > 0 || summary.keptAlerts > 0) {
      if (summary.lostAlerts > 0) process.stderr.write(`argus: ${summary.lostAlerts} alert(s) could not be delivered and are lost\n`);
      if (summary.keptAlerts > 0) process.stderr.write(`argus: ${summary.keptAlerts} alert(s) not yet acknowledged by Kafka are kept in ${summary.outbox?.dir} and are delivered on the next start\n`);
      process.exitCode = 3;
    }
    if (crashed !== undefined) {
      process.stderr.write(`argus: ${ErrorCodes.INTERNAL}: stopped after an unexpected exception: ${redact(String((crashed as Error)?.message ?? crashed))}\n`);
      process.exitCode = 4;
    }
  });

program
  .command('bench')
  .description('measure raw inference, file-mode throughput and live 1080p30 behaviour')
  .option('--pipeline <file>', 'pipeline YAML whose model settings to use', 'pipelines/demo.yaml')
  .option('--raw-runs <n>', 'raw inference runs', positiveInt, 300)
  .option('--file-frames <n>', 'frames for the file-mode run', positiveInt, 600)
  .option('--live-seconds <n>', 'length of the live 1080p30 run', positiveInt, 120)
  .option('--live-uri <uri>', 'live-mode source (default: the derived 1080p30 clip)')
  .option('--precision', 'also compare INT8 and fp16 YOLOX-Nano with fp32: speed and detection agreement', false)
  .option('--batch-sources <n>', 'also compare N sources at batch 1 with dynamic batching and with one-thread worker sessions', (v: string) => Number(v), 0)
  .option('--sweep', 'try threads (1, 2), two one-thread worker sessions, available providers, batch sizes (1, 2, 4, 8) and precisions; print a table', false)
  .option('--budget-ms <ms>', 'latency budget the sweep marks configurations against', (v: string) => Number(v), 33)
  .option('--sweep-runs <n>', 'timed runs per sweep configuration', positiveInt, 60)
  .option('--only-extras', 'skip the raw/file/live runs', false)
  .option('--json <file>', 'also write the figures as JSON')
  .action(
    async (opts: { pipeline: string; rawRuns: number; fileFrames: number; liveSeconds: number; liveUri?: string; json?: string; precision: boolean; batchSources: number; sweep: boolean; budgetMs: number; sweepRuns: number; onlyExtras: boolean }) => {
      const { runBench } = await import('./bench/bench.js');
      await runBench({ ...opts, skipCore: opts.onlyExtras, log });
    },
  );

program
  .command('consume')
  .description('read a Kafka topic and print messages with their source → consumption latency')
  .requiredOption('--brokers <list>', 'comma-separated host:port list', (v: string) => v.split(',').filter(Boolean))
  .option('--topic <name>', 'topic to read', 'argus.detections')
  .option('--from-beginning', 'start at the oldest message', false)
  .option('--window <n>', 'print p50/p99 every N messages', positiveInt, 100)
  .option('--count <n>', 'stop after N messages', positiveInt)
  .option('--json', 'print each message as JSON', false)
  .action(async (opts: { brokers: string[]; topic: string; fromBeginning: boolean; window: number; count?: number; json: boolean }) => {
    const { consume } = await import('./sinks/consume.js');
    const ac = new AbortController();
    process.once('SIGINT', () => ac.abort());
    process.once('SIGTERM', () => ac.abort());
    await consume({ ...opts, signal: ac.signal });
  });

const models = program.command('models').description('model tools');
models
  .command('inspect')
  .description('print what argus detects in an ONNX file: tensors, metadata, decoder family, labels, pre-processing')
  .argument('<file>', 'ONNX model')
  .option('--family <name>', `decoder family instead of auto-detection (${FAMILIES.join(', ')})`, 'auto')
  .action(async (file: string, opts: { family: string }) => {
    const { inspectModel } = await import('./models/inspect.js');
    process.stdout.write((await inspectModel(file, opts.family as 'auto')) + '\n');
  });

function fraction(v: string): number {
  const n = Number(v);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError('expected a number from 0 to 1');
  return n;
}

program
  .command('detect')
  .description('detect objects in images, GIFs and videos: a table (or --json), and annotated copies with --out')
  .argument('<files...>', 'images (jpg, png, webp, …), GIFs or videos')
  .option('--json', 'print one JSON document: {model, files: [{file, width, height, frames: [{index, pts, detections}]}]}', false)
  .option('--out <path>', 'annotated copy (one file: this path, PNG/JPEG by extension, MP4 for videos and GIFs; several: this folder)')
  .option('--score <n>', 'score threshold (default 0.3)', fraction)
  .option('--iou <n>', 'NMS IoU threshold (default 0.45)', fraction)
  .option('--model <name|path>', 'model manifest name or path, or an ONNX file (default yolox-nano)')
  .option('--fps <n>', 'videos and GIFs: sample N frames per second (default every frame)', (v: string) => {
    const n = Number(v);
    if (!(n > 0)) throw new InvalidArgumentError('expected a positive number');
    return n;
  })
  .action(async (files: string[], opts: { json: boolean; out?: string; score?: number; iou?: number; model?: string; fps?: number }) => {
    const { runDetect } = await import('./tools/detect.js');
    await runDetect(files, { ...opts, log });
  });

program
  .command('preview')
  .description('draw one frame of a source with its zones, lines (and their in direction), class filters, detections and tracks into a PNG')
  .argument('<pipeline>', 'pipeline YAML file')
  .requiredOption('--out <file>', 'PNG (or JPEG, by extension) to write')
  .option('--source <id>', 'source id (default: the first)')
  .option('--at <seconds>', 'time in the source, seconds (default 0)', (v: string) => {
    const n = Number(v);
    if (!(n >= 0)) throw new InvalidArgumentError('expected seconds, 0 or more');
    return n;
  })
  .action(async (file: string, opts: { out: string; source?: string; at?: number }) => {
    const { runPreview } = await import('./tools/preview.js');
    await runPreview(file, { ...opts, log });
  });

program
  .command('assets')
  .description('fetch (or verify) the default model and the demo videos into the cache')
  .action(async () => {
    const { fetchAll } = await import('./assets/fetch-all.js');
    await fetchAll(log);
  });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  const code = isArgusError(e) ? `${e.code}: ` : '';
  process.stderr.write(`argus: ${code}${redact((e as Error).message)}\n`);
  logger.flush();
  process.exitCode = process.exitCode || 2;
}
