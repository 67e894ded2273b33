// First: a stop signal while the modules below load (half a second) is said and exits 130 (core/starting.ts).
import { startEnded, starting } from './core/starting.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { PACKAGE_ROOT } from './assets/paths.js';
import { loadPipeline } from './config/load.js';
import { ArgusError, endingOf, ErrorCodes, INTERRUPTED_STATUS, isArgusError } from './core/errors.js';
import { FAMILIES } from './core/families.js';
import { CHILDREN_END_WAIT_MS, endDespiteChildren, type ChildLeft } from './core/children.js';
import { redact } from './core/redact.js';
import { forTerminal, forTerminalLines } from './core/text.js';
import { StopSignals } from './core/signals.js';
import { exitAfterInference } from './inference/worker-pool.js';
import { createLogger, envLogLevel, logFn, writeStderr } from './core/log.js';
import { ortLogLevel } from './inference/detector.js';
import { pipelineBaseDir } from './pipeline/pipeline.js';
import { sourceSummary } from './sources/stats.js';
import { untilStopped } from './sinks/kafka-reach.js';
import { runPipeline, type RunningPipeline } from './pipeline/run.js';
import { deliveryExitText, secondSignalText } from './pipeline/exit-text.js';
import { batchSources, CONSUME_MAX_WINDOW, fraction, MAX_TIMER_SECONDS, oneOf, positiveInt, pathFlag, positiveNumber, seconds, topicFlag, wholeNumber } from './tools/flags.js';

/**
 * The exit status of an error that stopped argus before it ran: a bad command line
 * (VAP_ERR_USAGE), a bad configuration, a missing model, … (README, the exit statuses).
 */
const EXIT_ERROR = 2;

/**
 * The logger, once the environment variables read as argus starts are checked: one that holds
 * no valid value (ARGUS_LOG_LEVEL=verbose) is said as argus says its errors, naming the
 * variable, and argus exits with EXIT_ERROR (pino and ONNX Runtime threw on them: a stack trace).
 */
function startLogger(): ReturnType<typeof createLogger> {
  try {
    const level = envLogLevel();
    ortLogLevel();
    return createLogger(level);
  } catch (e) {
    if (!isArgusError(e)) throw e;
    writeStderr(`argus: ${e.code}: ${forTerminalLines(redact(e.message))}\n`);
    process.exit(EXIT_ERROR);
  }
}

const logger = startLogger();
const log = logFn(logger);

/** argus's version, from its package.json. */
function packageVersion(): string {
  try {
    return String((JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown }).version ?? 'unknown');
  } catch {
    return 'unknown';
  }
}

/**
 * Commander's own errors (an unknown option, a missing argument, a flag's value refused) are
 * written as argus writes its errors, `argus: VAP_ERR_USAGE: …`, and end with status 2, not
 * commander's 1 (which is argus's "a source failed"): exitOverride makes commander throw
 * instead of exiting, and the commands defined below inherit both settings.
 */
let usageWritten = false;
const program = new Command('argus')
  .description('Real-time video analytics: ffmpeg → ONNX Runtime → detections')
  // `argus --version` was an unknown option (VAP_ERR_USAGE, exit status 2).
  .version(packageVersion(), '-V, --version', 'print the version of argus')
  .exitOverride()
  .configureOutput({
    outputError: (text, write) => {
      usageWritten = true;
      // Escaped: the words it names can be file names (argus detect * in a downloads folder, where a
      // file named -<ESC>]0;TITLE<BEL>.jpg is an unknown option).
      // `argus detect -photo.jpg`: a file of that name read as an option; said how to give it.
      const word = /^error: unknown option '(.*)'(?:\n|$)/.exec(text)?.[1];
      const file = word !== undefined && existsSync(word) ? `\n(${word} is a file: give it as ./${word}, or after --)` : '';
      write(`argus: ${ErrorCodes.USAGE}: ${forTerminalLines(redact((file ? text.replace(/\n?$/, `${file}\n`) : text).replace(/^error: /, '')))}`);
    },
  });

program
  .command('run')
  .description('run a pipeline YAML')
  .argument('<pipeline>', 'pipeline YAML file')
  .option('--max-frames <n>', 'stop after N processed frames', positiveInt)
  .option('--jsonl <file>', "write one JSON line per processed frame ('-' for stdout)", pathFlag)
  .option('--annotate <path>', 'write each source\'s video with boxes, track ids, zones, lines and counts to this MP4 ({source} for the source id, or a folder/); overrides sinks.annotate.path', pathFlag)
  .option('--no-status', 'do not print the per-source status line')
  .action((file: string, opts: RunFlags) => runOrWork(file, opts, 'run'));

program
  .command('worker')
  .description('join the cluster of a worker YAML (its cluster section) and run the cameras the group gives this worker (README, "Many machines")')
  .argument('<worker>', 'worker YAML: a pipeline without sources, with a cluster section')
  .option('--jsonl <file>', "write one JSON line per processed frame ('-' for stdout)", pathFlag)
  .option('--no-status', 'do not print the per-source status line')
  .action((file: string, opts: RunFlags) => runOrWork(file, opts, 'worker'));

interface RunFlags {
  maxFrames?: number;
  jsonl?: string;
  annotate?: string;
  status: boolean;
}

/** `argus run` and `argus worker`: the same process guard, signals, summary and exit status. */
async function runOrWork(file: string, opts: RunFlags, mode: 'run' | 'worker'): Promise<void> {
    starting(`reading the pipeline ${forTerminal(file)}`);
    const config = await loadPipeline(file);
    if (mode === 'run' && config.cluster) throw new ArgusError(ErrorCodes.CONFIG, `${file}: has a cluster section: run it with argus worker`);
    if (mode === 'worker' && !config.cluster) throw new ArgusError(ErrorCodes.CONFIG, `${file}: no cluster section: a worker YAML needs one (README, "Many machines")`);
    const ac = new AbortController();
    /** What the run started (its outbox: what a second signal says of it). */
    let running: RunningPipeline | undefined;
    /** The orderly stop has ended and its exit text is said: a second signal then cuts nothing short. */
    let exitSaid = false;
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
      setTimeout(() => void exitAfterInference(4, 2000), graceMs).unref();
    };
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    // A repeat of the first signal within SIGNAL_REPEAT_MS is the same one (core/signals.ts).
    const signals = new StopSignals({
      stop: (sig) => {
        logger.info({ signal: sig }, 'stopping: sources first, then frames in flight, alerts, Kafka, WebSocket (send again to force)');
        ac.abort();
      },
      force: () => {
        // What the outbox holds now: whether the alerts raised are safe on disk for the next start
        // (nothing of it once the stop has ended and said its exit text: secondSignalText).
        let status: number | undefined = INTERRUPTED_STATUS;
        try {
          const said = secondSignalText(running?.outbox, running?.kafka !== undefined, exitSaid);
          status = said.status;
          for (const line of said.lines) writeStderr(`${line}\n`);
        } catch {
          // stderr is gone
        }
        // Only the inference runs in flight are waited for (milliseconds): see quiesceInference.
        // Once the orderly stop has ended, with the status it came to (nothing was cut short: not 130).
        void exitAfterInference(status, 2000);
      },
    });
    const onSignal = (sig: string) => signals.receive(sig);
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // SIGHUP (the terminal went away, or a supervisor's reload) stops in order like SIGTERM.
    process.on('SIGHUP', onSignal);
    // From here a signal stops the run in order (the start's own listeners said it and exited 130).
    startEnded();
    const runOptions = {
      baseDir: pipelineBaseDir(file),
      // A setting found wrong once the model and assets are known (a class, an asset, a manifest) names the file too.
      configFile: file,
      maxFrames: opts.maxFrames,
      jsonl: opts.jsonl,
      annotate: opts.annotate,
      status: opts.status,
      signal: ac.signal,
      log,
      onReady: (r: RunningPipeline) => void (running = r),
    };
    const summary = mode === 'worker' ? await (await import('./cluster/worker.js')).runWorker(config, runOptions) : await runPipeline(config, runOptions);
    for (const s of summary.stats) {
      logger.info(sourceSummary(s), 'source summary');
      const a = summary.analytics[s.id];
      if (!a) continue;
      for (const [zone, z] of Object.entries(a.zones)) logger.info({ source: s.id, zone, entered: z.entered, exited: z.exited, occupancy: z.occupancy, reidentified: z.reidentified, alerts: z.alerts, seenInstead: z.seenInstead }, 'zone summary');
      for (const [line, l] of Object.entries(a.lines)) logger.info({ source: s.id, line, in: l.in, out: l.out, byClass: l.byClass, alerts: l.alerts, seenInstead: l.seenInstead }, 'line summary');
      if (Object.keys(a.alerts).length) logger.info({ source: s.id, byRule: a.alerts }, 'alerts summary');
      for (const note of a.notes) logger.warn({ source: s.id }, note);
    }
    // Cameras that ran here and left (an argus worker's): what their chains counted.
    for (const [source, d] of Object.entries(summary.detached)) logger.info({ source, ...d, here: summary.stats.some((s) => s.id === source) }, 'detached source summary');
    if (summary.kafka) logger.info({ ...summary.kafka }, 'kafka summary');
    if (summary.outbox) logger.info({ ...summary.outbox }, 'outbox summary');
    // Exit status: 4 an unexpected exception (shut down in order), 3 alerts not delivered to
    // Kafka by exit (kept in the outbox for the next start, parked as too large, or lost), 1 a
    // source failed (the others ran), 0 all well.
    if (summary.failed.length > 0) {
      for (const f of summary.failed) {
        const code = (f.error as { code?: unknown }).code;
        writeStderr(`argus: source "${forTerminalLines(f.source)}" failed: ${typeof code === 'string' && code.startsWith('VAP_ERR_') ? `${code}: ` : ''}${forTerminalLines(redact(f.error.message))}\n`);
      }
      process.exitCode = 1;
    }
    const delivery = deliveryExitText(summary);
    for (const line of delivery.lines) writeStderr(`${line}\n`);
    exitSaid = true;
    if (delivery.status !== undefined) process.exitCode = delivery.status;
    if (crashed !== undefined) {
      writeStderr(`argus: ${ErrorCodes.INTERNAL}: stopped after an unexpected exception: ${redact(String((crashed as Error)?.message ?? crashed))}\n`);
      process.exitCode = 4;
    }
    // Everything is closed and the summary written: the process ends even if a library still
    // holds a handle (kafkajs kept a socket to a broker that accepted the connection and never
    // answered, and the process outlived its SIGTERM by 12 minutes). Unref'd: a clean run exits at once.
    setTimeout(() => void exitAfterInference(undefined, 2000), EXIT_GRACE_MS).unref();
}

/** How long the process may linger after an orderly stop before it exits anyway. */
const EXIT_GRACE_MS = 2000;

/**
 * A one-shot command's end (detect, preview) with children that have not exited (endDespiteChildren:
 * an ffmpeg stuck in the kernel): says which, and exits with the command's own status.
 */
function exitLeavingChildren(left: ChildLeft[]): void {
  const status = typeof process.exitCode === 'number' ? process.exitCode : 0;
  for (const c of left) {
    writeStderr(
      `argus: warning: ffmpeg ${c.pid}${c.what === undefined ? '' : ` (reading ${forTerminalLines(redact(c.what))})`} has not exited ${CHILDREN_END_WAIT_MS / 1000} s after the command's end (stuck in the kernel: a hung device or network mount?); exiting without it (exit status ${status})\n`,
    );
  }
  void exitAfterInference(status, 1000);
}

const brokerList = (v: string) => v.split(',').filter(Boolean);
const cameras = program.command('cameras').description('the cluster\'s cameras (the compacted cameras topic): apply, add, rm, ls');
/**
 * A command's stop on its first SIGINT or SIGTERM (`argus consume`, `cameras`, `cluster`): while it
 * waits on the brokers, VAP_ERR_INTERRUPTED naming the step, exit 130; a second signal exits at
 * once (130). A repeat within SIGNAL_REPEAT_MS is the same stop delivered twice (StopSignals: to
 * argus and to its group), not a second one: it fell to the signal's default action, which ended
 * the command by the signal, `argus consume` without its summary.
 * (`argus cameras` and `cluster` had no listener: a Ctrl-C while they connected ended them by the
 * signal, without a word.)
 */
function stopSignal(): AbortSignal {
  const ac = new AbortController();
  const signals = new StopSignals({ stop: (sig) => ac.abort(sig), force: () => process.exit(INTERRUPTED_STATUS) });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => signals.receive(sig));
  return ac.signal;
}
const target = (o: { config?: string; brokers?: string[] }, command: string) => import('./cluster/admin.js').then(async (m) => ({ ...(await m.clusterTarget(o)), command, signal: stopSignal() }));
/**
 * The cameras of `file` (readCamerasFile) under the command's stop (`t.signal`): a stop while it
 * is read (a named pipe whose writer has not written yet is waited for up to 30 s, a hung mount)
 * is VAP_ERR_INTERRUPTED naming that step and the file. It was said at the next step, `SIGINT
 * while connecting to the Kafka broker …`, once the read had ended or given up.
 */
async function camerasOf(file: string, t: { command: string; signal: AbortSignal }): Promise<{ id: string; value: string }[]> {
  const { readCamerasFile } = await import('./cluster/admin.js');
  return untilStopped(readCamerasFile(file), t.signal, (sig) => `${t.command}: ${sig} while reading the cameras file ${file}: stopped on the signal`);
}
const clusterFlags = (c: Command) => c.option('--brokers <list>', 'comma-separated host:port list', brokerList).option('--config <worker.yaml>', 'take brokers, TLS and SASL settings and topic names from a worker YAML');
clusterFlags(
  cameras
    .command('apply')
    .description('make the cluster run exactly the cameras of a YAML file (cameras: [...]): new ones start, edited ones restart, missing ones stop')
    .argument('<file>', 'YAML with cameras: [ {id, uri, …sources[] fields, cost} ]')
    .option('--no-prune', 'keep cameras that are not in the file'),
).action(async (file: string, opts: { brokers?: string[]; config?: string; prune: boolean }) => {
  const { applyCameras } = await import('./cluster/admin.js');
  const t = await target(opts, 'cameras apply');
  const r = await applyCameras(t, await camerasOf(file, t), opts.prune);
  // Ids removed are the topic's keys, which anyone who can write it chose: shown escaped (forTerminal), as every topic-read field below.
  process.stdout.write(`added ${r.added.length}, changed ${r.changed.length}, unchanged ${r.unchanged.length}, removed ${r.removed.length}${[...r.added.map((i) => ` +${i}`), ...r.changed.map((i) => ` ~${i}`), ...r.removed.map((i) => ` -${forTerminal(i)}`)].join('')}\n`);
});
clusterFlags(
  cameras
    .command('add')
    .description('add (or replace) one camera: from a YAML file of cameras, or from --id and --uri')
    .argument('[file]', 'YAML with cameras: [...] (added or replaced; others kept)')
    .option('--id <id>', 'camera id')
    .option('--uri <uri>', 'what to open (rtsp://…, a file, …)')
    .option('--fps <n>', 'frames per second to analyse (at most 240)', positiveNumber(240))
    .option('--cost <n>', 'relative cost against worker capacity (default 1)', positiveNumber())
    .option('--pin <worker>', 'run it only on this worker (cluster.workerId)')
    .option('--label <name=value>', 'run it only on workers with this label (cluster.labels); repeatable', (v: string, prev: string[] = []) => [...prev, v]),
).action(async (file: string | undefined, opts: { brokers?: string[]; config?: string; id?: string; uri?: string; fps?: number; cost?: number; pin?: string; label?: string[] }) => {
  const { applyCameras, cameraFromFields, parseLabels, readCamerasFile } = await import('./cluster/admin.js');
  if (!file && (!opts.id || !opts.uri)) throw new ArgusError(ErrorCodes.USAGE, 'give a cameras YAML file, or --id and --uri');
  // A file's cameras are taken as written: --pin or --fps beside it were dropped without a word.
  const fields = (['id', 'uri', 'fps', 'cost', 'pin', 'label'] as const).filter((k) => opts[k] !== undefined);
  if (file && fields.length) throw new ArgusError(ErrorCodes.USAGE, `${fields.map((k) => `--${k}`).join(', ')}: a camera's fields are given by the file or by flags, not both (put them in ${file})`);
  const labels = parseLabels(opts.label);
  const placement = opts.pin || labels ? { pin: opts.pin, labels } : undefined;
  const cams = file ? await readCamerasFile(file) : [cameraFromFields({ id: opts.id, uri: opts.uri, fps: opts.fps, cost: opts.cost, placement })];
  const r = await applyCameras(await target(opts, 'cameras add'), cams, false);
  process.stdout.write(`added ${r.added.length}, changed ${r.changed.length}, unchanged ${r.unchanged.length}\n`);
});
clusterFlags(cameras.command('rm').description('remove cameras (they stop on their worker)').argument('<ids...>', 'camera ids')).action(async (ids: string[], opts: { brokers?: string[]; config?: string }) => {
  const { removeCameras } = await import('./cluster/admin.js');
  const unknown = await removeCameras(await target(opts, 'cameras rm'), ids);
  process.stdout.write(`removed ${ids.length - unknown.length}${unknown.length ? `; not found: ${unknown.map(forTerminal).join(', ')}` : ''}\n`);
  if (unknown.length) process.exitCode = 1;
});
clusterFlags(cameras.command('ls').description('list the cameras: slot, cost, owner, epoch').option('--json', 'print JSON', false)).action(async (opts: { brokers?: string[]; config?: string; json: boolean }) => {
  const { listCameras } = await import('./cluster/admin.js');
  const list = await listCameras(await target(opts, 'cameras ls'));
  if (opts.json) return void process.stdout.write(JSON.stringify(list, null, 2) + '\n');
  const where = (c: (typeof list)[number]) => [c.placement?.pin && `pin=${c.placement.pin}`, ...Object.entries(c.placement?.labels ?? {}).map(([k, v]) => `${k}=${v}`)].filter(Boolean).join(',') || '-';
  // Every field is read from the cluster topics, which anyone who can write them chose: escaped
  // (forTerminal), so that a key or an owner cannot retitle the terminal, clear it or add rows.
  const t = forTerminal;
  process.stdout.write(['id\tslot\tcost\towner\tepoch\tplacement\tstate', ...list.map((c) => `${t(c.id)}\t${c.slot}\t${c.cost}\t${t(c.owner ?? '-')}\t${c.epoch ?? '-'}\t${t(where(c))}\t${c.error ? `invalid: ${t(c.error.split('\n')[0])}` : !c.enabled ? 'disabled' : (c.state ?? 'waiting')}`)].join('\n') + '\n');
});
const cluster = program.command('cluster').description('the workers: status, drain');
clusterFlags(cluster.command('status').description('workers, their slots and cameras, and cameras no worker holds').option('--json', 'print JSON', false)).action(async (opts: { brokers?: string[]; config?: string; json: boolean }) => {
  const { clusterStatus } = await import('./cluster/admin.js');
  const st = await clusterStatus(await target(opts, 'cluster status'));
  if (opts.json) return void process.stdout.write(JSON.stringify(st, null, 2) + '\n');
  // Worker ids and labels come from the group's members (any client that joins it), camera ids from the topics: escaped (forTerminal).
  const t = forTerminal;
  const lines = [`group ${t(st.group)}: ${t(st.state)}, ${st.workers.length} worker(s), ${st.cameras.length} camera(s)`];
  for (const w of st.workers) {
    const labels = Object.entries(w.labels).map(([k, v]) => `${k}=${v}`).join(',');
    // Slots it reported unreachable (cluster.unreachableAfterMs): the group gives them to another worker where it can.
    const unreachable = w.unreachable.length ? `  cannot reach slot(s) ${w.unreachable.join(', ')}` : '';
    lines.push(`  ${t(w.worker)}${w.draining ? ' (draining)' : ''}  capacity ${w.capacity}${labels ? `  labels ${t(labels)}` : ''}  ${w.slots.length} slot(s)  cameras: ${t(w.cameras.join(', ')) || '-'}${unreachable}`);
  }
  if (st.rebalancing) lines.push('  the group is rebalancing: which worker holds which slot is known once it settles; run this again in a moment');
  if (st.unassigned.length) lines.push(`  no worker holds: ${t(st.unassigned.map((id) => (st.unplaceable[id] ? `${id} (${st.unplaceable[id]})` : id)).join(', '))}`);
  process.stdout.write(lines.join('\n') + '\n');
});
clusterFlags(cluster.command('drain').description('move every camera off a worker (it stays in the group with capacity 0)').argument('<worker>', 'worker id (argus cluster status)').option('--undo', 'let the worker take cameras again', false)).action(
  async (worker: string, opts: { brokers?: string[]; config?: string; undo: boolean }) => {
    const { drainWorker } = await import('./cluster/admin.js');
    const t = await target(opts, 'cluster drain');
    const { inGroup } = await drainWorker(t, worker, opts.undo);
    process.stdout.write(`${opts.undo ? 'undrain' : 'drain'} of ${worker} requested\n`);
    if (inGroup === false) writeStderr(`argus: no worker ${worker} is in group ${t.cluster.group} now: the request is kept, and applies to a worker with that id when one joins (argus cluster status names the workers${opts.undo ? '' : '; --undo withdraws it'})\n`);
  },
);

program
  .command('bench')
  .description('measure raw inference, file-mode throughput and live 1080p30 behaviour')
  // The demo's pipeline of this installation by default: `pipelines/demo.yaml` was read from the
  // current folder, so `argus bench` anywhere but the repository's root failed at once.
  .option('--pipeline <file>', 'pipeline YAML whose model settings to use', pathFlag, join(PACKAGE_ROOT, 'pipelines', 'demo.yaml'))
  .option('--raw-runs <n>', 'raw inference runs', positiveInt, 300)
  .option('--file-frames <n>', 'frames for the file-mode run', positiveInt, 600)
  .option('--live-seconds <n>', `length of the live 1080p30 run (at most ${MAX_TIMER_SECONDS})`, wholeNumber(1, MAX_TIMER_SECONDS), 120)
  .option('--live-uri <uri>', 'live-mode source (default: the derived 1080p30 clip)')
  .option('--precision', 'also compare INT8 and fp16 YOLOX-Nano with fp32: speed and detection agreement', false)
  .option('--batch-sources <n>', 'also compare N sources (2 to 64; 0: off) at batch 1 with dynamic batching and with one-thread worker sessions', batchSources, 0)
  .option('--sweep', 'try threads (1, 2), two one-thread worker sessions, available providers, batch sizes (1, 2, 4, 8) and precisions; print a table', false)
  .option('--budget-ms <ms>', 'latency budget the sweep marks configurations against', positiveNumber(), 33)
  .option('--sweep-runs <n>', 'timed runs per sweep configuration', positiveInt, 60)
  .option('--only-extras', 'skip the raw/file/live runs', false)
  .option('--json <file>', 'also write the figures as JSON', pathFlag)
  .action(
    async (opts: { pipeline: string; rawRuns: number; fileFrames: number; liveSeconds: number; liveUri?: string; json?: string; precision: boolean; batchSources: number; sweep: boolean; budgetMs: number; sweepRuns: number; onlyExtras: boolean }) => {
      const { runBench } = await import('./bench/bench.js');
      await runBench({ ...opts, skipCore: opts.onlyExtras, log });
    },
  );

program
  .command('consume')
  .description('read a Kafka topic and print messages with their source → consumption latency')
  .option('--brokers <list>', 'comma-separated host:port list (default: the brokers of --config)', (v: string) => v.split(',').filter(Boolean))
  .option('--config <pipeline>', "a pipeline YAML: its Kafka sink's brokers, TLS, SASL and detections topic")
  .option('--topic <name>', 'topic to read (default: the detections topic of --config, else argus.detections)', topicFlag)
  .option('--from-beginning', 'start at the oldest message', false)
  // The window's samples are held in one array of that size: --window 4000000000 failed to
  // allocate it (VAP_ERR_INTERNAL, exit 4), and 100000000 took 800 MB before reading a record.
  .option('--window <n>', `print p50/p99 every N records read (at most ${CONSUME_MAX_WINDOW})`, wholeNumber(1, CONSUME_MAX_WINDOW), 100)
  .option('--count <n>', 'stop after N records read: every record counts, also one skipped as stale (a former owner\'s), not JSON or not an argus message', positiveInt)
  .option('--json', 'print each record as read, one JSON a line (a record that is not JSON: a note on stderr)', false)
  .action(async (opts: { brokers?: string[]; config?: string; topic?: string; fromBeginning: boolean; window: number; count?: number; json: boolean }) => {
    const { consume, consumeTarget } = await import('./sinks/consume.js');
    const target = await consumeTarget(opts);
    // Once it reads, the first signal ends it with its summary.
    await consume({ ...opts, ...target, signal: stopSignal() });
  });

const models = program.command('models').description('model tools');
models
  .command('inspect')
  .description('print what argus detects in an ONNX file: tensors, metadata, decoder family, labels, pre-processing')
  .argument('<file>', 'ONNX model')
  .option('--family <name>', `decoder family instead of auto-detection (${FAMILIES.join(', ')})`, oneOf(['auto', ...FAMILIES]), 'auto')
  .action(async (file: string, opts: { family: string }) => {
    const { inspectModel } = await import('./models/inspect.js');
    process.stdout.write((await inspectModel(file, opts.family as 'auto')) + '\n');
  });

program
  .command('detect')
  .description('detect objects in images, GIFs and videos: a table (or --json), and annotated copies with --out')
  .argument('<files...>', 'images (jpg, png, webp, …), GIFs or videos')
  .option('--json', 'print one JSON document: {model, files: [{file, width, height, frames: [{index, pts, detections}]}]}', false)
  .option('--out <path>', 'annotated copy (one file: this path, PNG/JPEG by extension, MP4 for videos and GIFs; several: this folder)')
  .option('--score <n>', 'score threshold (default 0.3)', fraction)
  .option('--iou <n>', 'NMS IoU threshold (default 0.45)', fraction)
  .option('--model <name|path>', 'model manifest name or path, or an ONNX file (default yolox-nano)', pathFlag)
  .option('--fps <n>', 'videos and GIFs: at most N frames per second, the first at or after each 1/N s step (default every frame; never a frame twice)', positiveNumber())
  .action(async (files: string[], opts: { json: boolean; out?: string; score?: number; iou?: number; model?: string; fps?: number }) => {
    const { detectFailure, runDetect } = await import('./tools/detect.js');
    try {
      const failure = detectFailure(await runDetect(files, { ...opts, log }));
      if (failure) throw failure;
    } finally {
      endDespiteChildren(exitLeavingChildren);
    }
  });

program
  .command('preview')
  .description('draw one frame of a source with its zones, lines (and their in direction), class filters, detections and tracks into a PNG (or a JPEG: --out x.jpg)')
  .argument('<pipeline>', 'pipeline YAML file')
  .requiredOption('--out <file>', 'PNG (or JPEG, by extension) to write')
  .option('--source <id>', 'source id (default: the first)')
  .option('--at <seconds>', 'time in the source, seconds (default 0)', seconds)
  .action(async (file: string, opts: { out: string; source?: string; at?: number }) => {
    const { runPreview } = await import('./tools/preview.js');
    try {
      await runPreview(file, { ...opts, log });
    } finally {
      endDespiteChildren(exitLeavingChildren);
    }
  });

program
  .command('check')
  .description('check a pipeline YAML without running it: every problem of its settings, then the model, ffmpeg, the sources\' files, class names, sinks (--connect: Kafka answers; --probe: each source\'s first frame); exit 0 when all is well, 2 otherwise')
  .argument('<pipeline>', 'pipeline YAML file')
  .option('--connect', 'also connect to the Kafka brokers', false)
  .option('--probe', 'also read each enabled source\'s first frame (its size and fps)', false)
  // At most the longest timer Node runs: a longer bound (--timeout 3000000) fired after 1 ms, and
  // every broker and camera was reported as not answering "within 3000000 s".
  .option('--timeout <seconds>', `bound on each network step: a broker's answer, a first frame, the look-up of server.host (default 10, at most ${MAX_TIMER_SECONDS})`, positiveNumber(MAX_TIMER_SECONDS))
  .option('--json', 'print the report as JSON: {file, ok, problems, items: [{check, ok, code, field, message}]}', false)
  .action(async (file: string, opts: { connect: boolean; probe: boolean; timeout?: number; json: boolean }) => {
    const { checkPipeline, formatCheck } = await import('./tools/check.js');
    // A signal while it reads the pipeline (a named pipe nobody writes to) is said as run says it.
    starting(`reading the pipeline ${forTerminal(file)}`);
    const report = await checkPipeline(file, { connect: opts.connect, probe: opts.probe, timeoutMs: opts.timeout === undefined ? undefined : opts.timeout * 1000, log, onRead: startEnded });
    process.stdout.write(opts.json ? JSON.stringify(report, null, 2) + '\n' : formatCheck(report));
    if (!report.ok) process.exitCode = EXIT_ERROR;
    // The report is written: the process ends even if a library still holds a handle (a broker
    // that never said goodbye), or a worker still opens the model's session (a TensorRT engine
    // built past the check's bound: process.exit waited for the build, minutes).
    // A session still being opened then was said in the report (its WARNING line): a note at the
    // exit, not a VAP_ERR_MODEL_RUN error line under a check that passed.
    setTimeout(() => void exitAfterInference(undefined, 1000, { sessionSaid: report.items.some((i) => i.check === 'model' && i.late) }), EXIT_GRACE_MS).unref();
  });

program
  .command('assets')
  .description('fetch (or verify) the default model and the demo videos into the cache')
  .action(async () => {
    const { fetchAll } = await import('./assets/fetch-all.js');
    // A first signal abandons the download under way (its partial file removed) and exits 130;
    // a second one exits at once.
    const ac = new AbortController();
    const onSignal = () => (ac.signal.aborted ? process.exit(INTERRUPTED_STATUS) : ac.abort());
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, onSignal);
    await fetchAll(log, ac.signal);
  });

// Every command but run, worker and check stops on signals its own way from its start (run and
// worker once their listeners are in place, after reading the pipeline: runOrWork; check once it
// has read it, by the default action from then on).
program.hook('preAction', (_program, command) => {
  if (!['run', 'worker', 'check'].includes(command.name())) startEnded();
});

// After a usage error, where the options are listed (the whole help buried the error above it).
(function hint(c: Command, path: string): void {
  c.showHelpAfterError(`(${path} --help lists its arguments and options)`);
  for (const sub of c.commands) hint(sub, `${path} ${sub.name()}`);
})(program, 'argus');

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    // Help asked for (exit 0), or a usage error commander has written through outputError; or
    // a command given without its subcommand, for which commander wrote only the help.
    if (e.exitCode !== 0) {
      if (!usageWritten) writeStderr(`argus: ${ErrorCodes.USAGE}: ${e.code === 'commander.help' ? 'a command is needed (listed above)' : forTerminalLines(redact(e.message.replace(/^error: /, '')))}\n`);
      process.exitCode = EXIT_ERROR;
    }
  } else {
    // A signal that stopped a start (an asset download) is an interrupt: 130, as for a second
    // signal; an error argus did not code is a bug (VAP_ERR_INTERNAL, 4).
    const end = endingOf(e);
    // Errors name files and sources (a download's name can hold escape sequences): shown escaped.
    writeStderr(`argus: ${end.code}: ${forTerminalLines(redact(end.message))}\n`);
    process.exitCode = process.exitCode || end.status;
  }
  logger.flush();
  // The error is said: the process ends even if a library still holds a handle (kafkajs kept a
  // socket to a broker that accepted the connection and never answered, and `argus cameras ls`
  // lived on after its error), or a worker still opens the model's session (a TensorRT engine
  // build: process.exit waited for it). Unref'd: an error with nothing left open exits at once.
  setTimeout(() => void exitAfterInference(undefined, 1000), EXIT_GRACE_MS).unref();
}
