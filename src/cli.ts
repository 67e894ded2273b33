import { Command, InvalidArgumentError } from 'commander';
import { loadPipeline } from './config/load.js';
import { isArgusError } from './core/errors.js';
import { quiesceInference } from './inference/session.js';
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
  .option('--no-status', 'do not print the per-source status line')
  .action(async (file: string, opts: { maxFrames?: number; jsonl?: string; status: boolean }) => {
    const config = await loadPipeline(file);
    const ac = new AbortController();
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
    const summary = await runPipeline(config, {
      baseDir: pipelineBaseDir(file),
      maxFrames: opts.maxFrames,
      jsonl: opts.jsonl,
      status: opts.status,
      signal: ac.signal,
      log,
    });
    for (const s of summary.stats) {
      logger.info(
        { source: s.id, state: s.state, framesIn: s.framesIn, framesOut: s.framesOut, dropped: s.dropped, reconnects: s.reconnects, e2eP50: s.e2e.percentile(50), e2eP99: s.e2e.percentile(99) },
        'source summary',
      );
    }
    if (summary.kafka) logger.info({ ...summary.kafka }, 'kafka summary');
    // Exit status: 3 alerts were lost, 1 a source failed (the others ran), 0 all well.
    if (summary.failed.length > 0) {
      for (const f of summary.failed) process.stderr.write(`argus: source "${f.source}" failed: ${f.error.message}\n`);
      process.exitCode = 1;
    }
    if (summary.lostAlerts > 0) {
      process.stderr.write(`argus: ${summary.lostAlerts} alert(s) could not be delivered\n`);
      process.exitCode = 3;
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
  .description('read a Kafka topic and print messages with their capture → consumption latency')
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
  .option('--family <name>', 'decoder family instead of auto-detection (yolox, yolov8, yolov5, end2end, end2end-split)', 'auto')
  .action(async (file: string, opts: { family: string }) => {
    const { inspectModel } = await import('./models/inspect.js');
    process.stdout.write((await inspectModel(file, opts.family as 'auto')) + '\n');
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
  process.stderr.write(`argus: ${code}${(e as Error).message}\n`);
  logger.flush();
  process.exitCode = process.exitCode || 2;
}
