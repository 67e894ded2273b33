import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { defer, merge, type MonoTypeOperatorFunction, type Observable, Subject, takeWhile } from 'rxjs';
import type { FrameResult } from '../analytics/analyze.js';
import type { SourceAnalyticsReport } from '../analytics/report.js';
import { replayedAlertJson } from '../analytics/published.js';
import type { PipelineConfig } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import type { Frame } from '../core/frame.js';
import type { RunningServer } from '../server/http.js';
import { JsonlSink, jsonlTargetRefusal } from '../sinks/jsonl.js';
import type { AnnotateSink, AnnotateSourceStats } from '../sinks/annotate.js';
import { AnnotateSinkSchema } from '../config/schema/sinks.js';
import type { KafkaSink, KafkaSinkOptions } from '../sinks/kafka.js';
import { runTag, type Claim, type Message, type MessageKind, type StatusMessage } from '../sinks/message.js';
import { Outbox, recordMessage, strandedAlerts } from '../sinks/outbox.js';
import { Publisher } from '../sinks/publisher.js';
import type { Sink } from '../sinks/sink.js';
import { StatusReporter } from '../sinks/status.js';
import { sameTerminal } from '../core/terminal.js';
import type { WebSocketHub } from '../sinks/websocket.js';
import { AlertPublisher } from '../sinks/alerts.js';
import { publish } from '../sinks/publish.js';
import type { FrameBroadcaster } from '../server/frames.js';
import type { ClusterMetricsState, Metrics } from '../server/metrics.js';
import { Lifecycle } from './lifecycle.js';
import { createPipeline, type DetachedTotals, type Pipeline, type PipelineOptions } from './pipeline.js';
import { sourceKind } from '../sources/ffmpeg-args.js';
import type { SourceStats } from '../sources/stats.js';
import type { Transition } from '../sources/health.js';

/** After a stop, how long frames in flight may take to finish (RunOptions.drainTimeoutMs), ms. */
export const DRAIN_TIMEOUT_MS = 10_000;

export interface RunOptions extends PipelineOptions {
  /** Stop after this many processed frames (all sources together). */
  maxFrames?: number;
  /** JSONL output path, '-' for stdout. Overrides `sinks.jsonl` in the config. */
  jsonl?: string;
  /** Annotated video path (relative to the current folder; `{source}`, a folder, or a file). Overrides `sinks.annotate.path`; its other settings come from the config or their defaults. */
  annotate?: string;
  /** Print the per-source status line. Default true. */
  status?: boolean;
  /** Called for every processed frame, after the sinks (bench, tests). */
  onResult?: (r: FrameResult) => void;
  /** Aborting stops the sources and finishes cleanly: frames in flight finish, alerts are published, sinks flushed. */
  signal?: AbortSignal;
  /** How long frames in flight may take to finish after a stop, ms. Default DRAIN_TIMEOUT_MS. */
  drainTimeoutMs?: number;
  /** Called once everything is started (model loaded, sinks connected, server listening). */
  onReady?: (running: RunningPipeline) => void;
  /** Environment for overrides such as ARGUS_HTTP_PORT. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /**
   * Sources started after the pipeline (argus worker): their results, run beside the
   * configured sources until `stop` emits (then they must complete). Called once, when the run starts.
   */
  attached?: (pipeline: Pipeline, stop: Observable<void>) => Observable<FrameResult>;
  /** argus worker: the owner and epoch written into a source's messages. */
  claimOf?: (source: string, frame?: Frame) => Claim | undefined;
  /** argus worker: whether a source's state change is published (not while the camera waits for its claim). Default: all are. */
  publishesStatus?: (t: Transition) => boolean;
  /**
   * argus worker: whether a status an earlier run left in the outbox is replayed: not once a later
   * claim of its camera exists (its owner's states stand; replayed after them, an old state became
   * the camera's latest on the compacted status topic). Those not replayed are taken out of the
   * outbox. Default: all are.
   */
  replaysStatus?: (m: StatusMessage) => boolean;
  /** Extra fields of /healthz (argus worker: the worker and its cameras). */
  health?: () => Record<string, unknown>;
  /** argus worker: its cameras, lease and counters on /metrics. */
  clusterMetrics?: () => ClusterMetricsState;
  /**
   * The run's tag (sinks/message.ts runTag): every message's `run`, the run in its alert ids, and
   * the WebSocket hello's `run`. Default a new one for each runPipeline (its sources' seq count
   * from 0 again). argus worker passes its incarnation: one tag for the start of a worker. One
   * given is a runTag's form (0-9, a-z) and is taken once a process: a run given again is refused
   * (VAP_ERR_CONFIG), as its frames and alert ids would repeat the earlier run's.
   */
  run?: string;
}

/** Everything a run started, for tests and for features that hook in. */
export interface RunningPipeline {
  pipeline: Pipeline;
  metrics?: Metrics;
  publisher: Publisher;
  alerts: AlertPublisher;
  server?: RunningServer;
  kafka?: KafkaSink;
  websocket?: WebSocketHub;
  outbox?: Outbox;
}

export interface RunSummary {
  frames: number;
  stats: readonly SourceStats[];
  /** Sources that ended with an error. */
  failed: { source: string; error: Error }[];
  wallMs: number;
  kafka?: KafkaSink['stats'];
  websocket?: WebSocketHub['stats'];
  alerts: AlertPublisher['stats'];
  /** Alerts raised but lost: never published, or dropped undelivered (no outbox, or over its bounds). */
  lostAlerts: number;
  /** Alerts Kafka had not acknowledged at exit but that the outbox keeps: delivered on the next start. */
  keptAlerts: number;
  /** Alerts Kafka had not acknowledged at exit that the outbox could not all write (a full disk): at risk. */
  unsavedAlerts: number;
  /** Alerts Kafka never got: too large for the broker even without their snapshot, parked (the dead-letter file, `deadLetterPath`). */
  parkedAlerts: number;
  /** The Kafka dead-letter file (where parked alerts go), when there is a Kafka sink. */
  deadLetterPath?: string;
  /** `offDisk`: why the journal did not hold every undelivered alert at the exit, where it did not (Outbox.whyOffDisk). */
  outbox?: Outbox['stats'] & { dir: string; replayed: number; offDisk?: string };
  /** Per source with zones, lines or rules: entries, exits, crossings, alerts per rule, and what filtered zones and lines saw instead. */
  analytics: Record<string, SourceAnalyticsReport>;
  /** The annotated video, per source: frames written, dropped (the sink was behind), skipped, repeated. */
  annotate?: AnnotateSourceStats[];
  /** Sources attached and detached during the run (an argus worker's cameras that left it), by id: their counts over every attachment. */
  detached: Record<string, DetachedTotals>;
}

/** The outbox folder: `outbox.dir` (relative to the pipeline file), else a per-pipeline folder (named after the pipeline: outboxFolder) under the user's state directory. */
export function outboxDir(config: PipelineConfig, baseDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (config.outbox.dir) return isAbsolute(config.outbox.dir) ? config.outbox.dir : resolve(baseDir, config.outbox.dir);
  return join(stateRoot(env), outboxFolder(config.name));
}

/** Whether a run keeps an outbox: `outbox.enabled`, by default when there is a Kafka sink. */
export function outboxEnabled(config: PipelineConfig): boolean {
  return config.outbox.enabled ?? config.sinks.kafka !== undefined;
}

/** The Kafka dead-letter file (`sinks.kafka.deadLetterPath`, by default in the outbox folder), when there is a Kafka sink. */
export function deadLetterPathOf(config: PipelineConfig, baseDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const k = config.sinks.kafka;
  return k ? resolve(baseDir, k.deadLetterPath ?? join(outboxDir(config, baseDir, env), 'kafka-dead-letter.jsonl')) : undefined;
}

/** The files that grow beside the outbox (OutboxOptions.beside): the dead-letter file, on the outbox's volume when it is there (its default place), counted in the room the outbox needs. */
export function outboxBeside(config: PipelineConfig, deadLetterPath: string | undefined): { path: string; maxBytes: number; field: string }[] {
  const k = config.sinks.kafka;
  return k && deadLetterPath ? [{ path: deadLetterPath, maxBytes: k.deadLetterMaxBytes, field: 'sinks.kafka.deadLetterMaxBytes' }] : [];
}

/**
 * For an `argus worker`, its cluster as its outbox names it beside the worker's name
 * (OutboxOptions.cluster): the group, the alert topic and the brokers (in any order) its alerts
 * go to. Every worker of it delivers to that Kafka, so one started on another's folder (a machine
 * that died, its outbox.dir on a shared volume) replays that worker's alerts; undefined for a
 * pipeline, whose folder no other pipeline takes while it holds undelivered alerts.
 */
export function outboxCluster(config: PipelineConfig): string | undefined {
  const k = config.sinks.kafka;
  if (!config.cluster || !k) return undefined;
  return JSON.stringify({ group: config.cluster.group, topic: k.topics.alerts, brokers: [...k.brokers].sort() });
}

function stateRoot(env: NodeJS.ProcessEnv): string {
  return env.ARGUS_STATE_DIR || (env.XDG_STATE_HOME ? join(env.XDG_STATE_HOME, 'argus') : join(homedir(), '.local', 'state', 'argus'));
}

/** Folder names longer than this (bytes, as many as characters here) are cut and told apart by a hash: most file systems allow no more. */
const FOLDER_MAX = 255;

/**
 * The default outbox folder's name for a pipeline name, one to one (two pipelines never share
 * a journal): a name of letters, digits, `.`, `_` and `-` is its own (as in every release), other
 * characters are written `%XX` (each byte of their UTF-8; `%` itself too), and so is every dot
 * of a name of dots only (`.` and `..` are the state folder and the one above it). Before, every
 * other character became `_`, so `lobby cam` shared `lobby_cam`'s journal, and dots-only names
 * as many `_` (`..` shared `__`'s). A name whose folder would be longer than FOLDER_MAX bytes
 * is cut, with a hash of the whole name after `~` (which no other folder name holds).
 */
export function outboxFolder(name: string): string {
  const dots = /^\.+$/.test(name);
  const kept = (b: number) => !dots && /[A-Za-z0-9_.-]/.test(String.fromCharCode(b));
  const folder = [...Buffer.from(name, 'utf8')].map((b) => (kept(b) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  if (folder.length <= FOLDER_MAX) return folder;
  return `${folder.slice(0, FOLDER_MAX - 41).replace(/%[0-9A-F]?$/, '')}~${createHash('sha256').update(name).digest('hex').slice(0, 40)}`;
}

/** The pipeline name an outbox folder is for (outboxFolder's inverse), or the folder's name where it cannot tell (a cut one). */
export function pipelineOfFolder(folder: string): string {
  if (folder.includes('~') || !folder.includes('%')) return folder;
  try {
    return decodeURIComponent(folder);
  } catch {
    return folder;
  }
}

/**
 * The folders older releases kept this pipeline's default outbox in, where they differ from
 * today's: every character other than letters, digits, `.`, `_` and `-` written `_`, and a name
 * of dots only as many `_` (the release before this one) or as it is (before that: `name: ".."`
 * had its journal beside the state folder, `"."` in it). runPipeline takes their journals over
 * once (Outbox.adoptOnce).
 */
export function legacyOutboxDirs(config: PipelineConfig, env: NodeJS.ProcessEnv = process.env): string[] {
  if (config.outbox.dir) return [];
  const root = stateRoot(env);
  const own = join(root, outboxFolder(config.name));
  const old = config.name.replace(/[^A-Za-z0-9_.-]/g, '_');
  const dirs = [join(root, /^\.+$/.test(old) ? old.replace(/\./g, '_') : old), join(root, old)];
  return [...new Set(dirs)].filter((d) => d !== own);
}

/** The port the run's server listens on: $ARGUS_HTTP_PORT when set (a port number, else VAP_ERR_CONFIG), else server.port. */
export function httpPort(env: NodeJS.ProcessEnv, configured: number): number {
  const v = env.ARGUS_HTTP_PORT;
  if (v === undefined || v === '') return configured;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isInteger(n) || n < 0 || n > 65535) throw new ArgusError(ErrorCodes.CONFIG, `ARGUS_HTTP_PORT: expected a port number 0–65535, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * The warning for $ARGUS_HTTP_PORT set while the pipeline has no server block, or undefined:
 * the variable overrides server.port and serves nothing on its own. Said by the run at its start
 * and by `argus check`.
 */
export function httpPortIgnored(config: PipelineConfig, env: NodeJS.ProcessEnv, configFile?: string): string | undefined {
  if (config.server || !env.ARGUS_HTTP_PORT) return undefined;
  return `ARGUS_HTTP_PORT is set, but ${configFile ?? 'the pipeline'} has no server block: no HTTP server runs (no /metrics, /healthz, dashboard or /ws); add server: { port: … } to serve them`;
}

/** How many runs given as RunOptions.run this process remembers (givenRun): a tag is some 17 bytes. */
const RUNS_REMEMBERED = 4096;
/** The runs given as RunOptions.run in this process, the latest RUNS_REMEMBERED. */
const runsGiven = new Set<string>();

/**
 * A run given as RunOptions.run, taken once: its sources' seq count from 0 again, so a run this
 * process ran already would give its frame 0 and its alert ids again (an undelivered alert of the
 * earlier run replaced in the journal, a consumer dropping the new one as a redelivery) and the
 * WebSocket hello would say a restart was the same run; and a tag other than the messages' form
 * ([0-9a-z]) put a `run` the message schema refuses into every message and alert id.
 */
function givenRun(run: unknown): string {
  if (typeof run !== 'string' || !/^[0-9a-z]{1,64}$/.test(run)) {
    throw new ArgusError(ErrorCodes.CONFIG, `RunOptions.run: ${JSON.stringify(typeof run === 'string' ? run.slice(0, 80) : typeof run)} is not a run tag (1 to 64 of 0-9 and a-z, as sinks/message.ts runTag makes); leave it out for a new one`);
  }
  if (runsGiven.has(run)) {
    throw new ArgusError(ErrorCodes.CONFIG, `RunOptions.run: "${run}" was the run of an earlier runPipeline of this process: its sources' seq start at 0 again, so its frames and alert ids would repeat that run's (consumers drop a repeated alert id); leave it out for a new one`);
  }
  runsGiven.add(run);
  if (runsGiven.size > RUNS_REMEMBERED) runsGiven.delete(runsGiven.values().next().value!);
  return run;
}

/**
 * Builds the pipeline and runs it until every source ends, `maxFrames` is reached or `signal`
 * aborts. Everything it starts is registered with a `Lifecycle` and stopped in reverse order
 * of start, also when a start fails half-way.
 */
export async function runPipeline(config: PipelineConfig, options: RunOptions = {}): Promise<RunSummary> {
  const log = options.log ?? (() => {});
  const env = options.env ?? process.env;
  const baseDir = options.baseDir ?? process.cwd();
  const jsonlPath = jsonlPathOf(config, options);
  // Made before anything starts: a WebSocket client that connects while the model loads is told it in the hello.
  const run = options.run === undefined ? runTag() : givenRun(options.run);
  const life = new Lifecycle(log);
  const stop$ = new Subject<void>();
  // Stops the run from inside (stdout closed under `--jsonl -`), like an abort of options.signal.
  const inner = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, inner.signal]) : inner.signal;
  const onFatal = (e: Error) => {
    if (inner.signal.aborted) return;
    log(`stopping: ${e.message}`, {}, 'warn');
    inner.abort();
  };
  let publisher: Publisher | undefined;
  let frames = 0;
  let t0 = performance.now();
  let started: Started | undefined;
  try {
    const port = config.server ? httpPort(env, config.server.port) : 0;
    // The variable overrides server.port, and serves nothing on its own: a pipeline without a
    // server block ran without a word (a compose service switched to such a pipeline stayed
    // unhealthy, its health check asking a port nothing listened on).
    const ignored = httpPortIgnored(config, env, options.configFile);
    if (ignored) log(ignored, {}, 'warn');
    const pipeline = await life.start(
      'pipeline',
      () =>
        createPipeline(config, {
          ...options,
          // A signal during the start interrupts an asset download (the run ends VAP_ERR_INTERRUPTED).
          signal,
          stop: stop$,
          // A camera that left a worker: its annotated video is finished now, not at the stop (its
          // encoder, an ffmpeg, stayed for the rest of the run: one per camera that ever left).
          onDetach: (id) => {
            void started?.annotate?.detach(id);
            options.onDetach?.(id);
          },
          onTransition: (t) => {
            if (options.publishesStatus?.(t) !== false) publisher?.status(t).catch(() => undefined);
            options.onTransition?.(t);
          },
          // A chain cut off (the drain timeout, --max-frames) before its stream's end's result reached
          // the sinks: its alerts to the alert publisher all the same, while it is open (it closes
          // before the sinks and the outbox). Before, they were counted lost (exit status 3).
          handOver: (r) => started?.alerts?.handOver(r) ?? false,
        }),
      (p) => p.close(),
    );
    // The annotated video (sinks.annotate, or --annotate): its paths are checked before any output
    // is opened (`--annotate o.mp4 --jsonl o.mp4` was refused, but only after the JSONL sink had
    // made o.mp4, left behind empty); the video itself is opened below, once the sinks are.
    const annotateConfig = options.annotate ? AnnotateSinkSchema.parse({ ...config.sinks.annotate, path: isAbsolute(options.annotate) ? options.annotate : join(process.cwd(), options.annotate) }) : config.sinks.annotate;
    const enabled = config.sources.filter((s) => s.enabled);
    if (annotateConfig) {
      const { annotatePaths, annotateRefusal } = await import('../sinks/annotate.js');
      const refused = annotateRefusal({ inputs: pipeline.inputs, writtenBy: jsonlWrites(jsonlPath) }, annotatePaths(annotateConfig.path, enabled.map((s) => s.id), baseDir, options.attached !== undefined));
      if (refused) throw refused;
    }
    started = await startOutputs(life, config, pipeline, options, port, run, log, onFatal);
    const { sinks, kafka, outbox, server, websocket } = started;
    const { manifest } = pipeline.detector;
    publisher = life.use('publisher', new Publisher(sinks, { name: manifest.name, version: manifest.version }, pipeline.detector.labels, outbox, options.claimOf, run), (p) => p.flush());
    const alerts = life.use('alerts', new AlertPublisher(publisher, config.alerts, pipeline.detector, baseDir, log), (a) => a.close());
    started.alerts = alerts;
    if (pipeline.stats.length > 0 && config.sources.some((s) => s.rules.length > 0)) await alerts.warmup();
    // The annotated video: fed beside the sinks, before each frame is released.
    let annotate: AnnotateSink | undefined;
    if (annotateConfig) {
      const { AnnotateSink } = await import('../sinks/annotate.js');
      // Asked at a source's first frame. A file: the rate delivered (its own where the configured
      // fps is above it, as its frames are not repeated), which its pts count. A live source: the
      // configured rate, which its pts count (held to the clock: a slower camera's frames are
      // repeated in the video, which keeps real time).
      const fpsOf = (id: string) => {
        const source = enabled.find((s) => s.id === id);
        const delivered = pipeline.stats.find((s) => s.id === id)?.fps;
        return source && sourceKind(source.uri) !== 'file' ? (source.fps ?? delivered) : (delivered ?? source?.fps);
      };
      const open = () => AnnotateSink.open({ ...annotateConfig, baseDir, sources: enabled.map((s) => s.id), attachable: options.attached !== undefined, inputs: pipeline.inputs, writtenBy: jsonlWrites(jsonlPath), ffmpegPath: pipeline.ffmpegPath, channelOrder: manifest.preprocess.channelOrder, labels: pipeline.detector.labels, fpsOf, log });
      annotate = started.annotate = await life.start('annotate', open, (a) => a.close());
    }

    // Metrics, health, dashboard: on the pipeline's HTTP server, when there is one.
    let metrics: Metrics | undefined;
    let liveFrames: FrameBroadcaster | undefined;
    if (server) {
      const [{ Metrics }, { RateMeter, registerRoutes }, { FrameBroadcaster }, { OriginPolicy }] = await Promise.all([import('../server/metrics.js'), import('../server/routes.js'), import('../server/frames.js'), import('../core/http.js')]);
      const allowedOrigins = config.server?.allowedOrigins ?? [];
      const origins = allowedOrigins.length > 0 ? new OriginPolicy(allowedOrigins, config.server?.publicOrigins) : undefined;
      metrics = new Metrics({ stats: () => pipeline.stats, provider: pipeline.detector.provider, kafka, publisher, websocket, outbox, alertsByRule: () => alerts.byRule, jsonl: started.jsonl, annotate, cluster: options.clusterMetrics, http: server });
      const rates = life.use('rates', new RateMeter(() => pipeline.stats), (r) => r.close());
      if (websocket) liveFrames = new FrameBroadcaster(websocket, pipeline.detector.manifest.preprocess.channelOrder);
      registerRoutes(server, {
        pipeline,
        metrics,
        rates,
        geometry: (id) => pipeline.analyzers.get(id)?.geometry() ?? { zones: [], lines: [] },
        analytics: (id) => pipeline.analyzers.get(id)?.report(),
        publicMetrics: config.server?.publicMetrics ?? false,
        // The outbox's protection with the rest (a read-only volume, failing writes: alerts in memory only).
        health: outbox ? () => ({ ...options.health?.(), outbox: outbox!.health() }) : options.health,
        stopping: () => signal.aborted,
        snapshot: websocket ? (id, key) => websocket!.snapshot(id, key) : undefined,
        // server.allowedOrigins is the server's: the API routes answer those origins with the
        // WebSocket sink disabled too (it was read through the hub, and /api/sources then
        // answered no allowed origin: no CORS header, its preflight 403).
        snapshotOrigin: origins ? (req) => origins.crossOrigin(req) : undefined,
      });
    }
    options.onReady?.({ pipeline, publisher, alerts, metrics, server, kafka, websocket, outbox });
    if (options.status !== false) {
      // JSON lines to the terminal the status block is on (`-`, /dev/stdout, /dev/tty): plain status
      // lines then, as a redraw in place would erase the lines written between two ticks.
      const dataOnTty = jsonlPath !== undefined && sameTerminal(jsonlPath === '-' ? 1 : jsonlPath);
      life.use('status line', new StatusReporter(pipeline.stats, undefined, undefined, !dataOnTty), (s) => s.stop()).start();
    }

    // The whole run: every source's chain, then the sinks.
    const side: ((r: FrameResult) => void)[] = [];
    if (metrics) side.push((r) => metrics!.onFrame(r));
    if (liveFrames) side.push((r) => liveFrames!.offer(r));
    if (annotate) side.push((r) => annotate!.offer(r));
    side.push(() => frames++);
    if (options.onResult) side.push(options.onResult);
    let results$ = options.attached ? merge(pipeline.results$, options.attached(pipeline, stop$)) : pipeline.results$;
    if (options.maxFrames !== undefined) results$ = results$.pipe(takeFrames(options.maxFrames));
    t0 = performance.now();
    await consume(results$.pipe(publish({ publisher, alerts, side })), life, stop$, signal, options.drainTimeoutMs ?? DRAIN_TIMEOUT_MS, log);
  } finally {
    await life.stop();
  }
  return summarize(started!, frames, performance.now() - t0);
}

/**
 * The results up to the `n`th frame's (n ≥ 1), those of no frame between them (alertsOnly: a
 * stream's end's alerts, a worker's fenced ones) let through and not counted: the frames the run
 * counts (its summary's `frames`). Before, `take(n)` counted them, and a run of two files whose
 * shorter one's end carried an alert stopped at n − 1 frames.
 */
function takeFrames(n: number): MonoTypeOperatorFunction<FrameResult> {
  return (results$) =>
    defer(() => {
      let left = n;
      return results$.pipe(takeWhile((r) => r.alertsOnly === true || --left > 0, true));
    });
}

/** Subscribes to the run and settles when it completes, errors, or stops after an abort (drain: frames in flight finish, up to `drainMs`). */
function consume(run$: Observable<FrameResult>, life: Lifecycle, stop$: Subject<void>, signal: AbortSignal, drainMs: number, log: LogFn): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return resolve();
    let drainTimer: NodeJS.Timeout | undefined;
    // Graceful stop: sources stop (ffmpeg is killed), frames already read finish and are
    // published; if that takes longer than drainMs, the rest is cut off.
    const onAbort = () => {
      // The timer first: stopping the sources may complete the run at once, inside next(), and
      // its done() must find the timer to clear (it fired 10 s later, blaming frames in flight).
      drainTimer = setTimeout(() => {
        log(`stop: frames still in flight after ${drainMs} ms; cutting them off`, {}, 'warn');
        sub.unsubscribe();
        resolve();
      }, drainMs);
      drainTimer.unref();
      stop$.next();
    };
    const done = () => {
      signal.removeEventListener('abort', onAbort);
      if (drainTimer) clearTimeout(drainTimer);
    };
    const sub = run$.subscribe({
      error: (e) => {
        done();
        reject(e);
      },
      complete: () => {
        done();
        resolve();
      },
    });
    life.use('sources', sub, (s) => s.unsubscribe());
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

interface Started {
  sinks: Sink[];
  kafka?: KafkaSink;
  server?: RunningServer;
  websocket?: WebSocketHub;
  outbox?: Outbox;
  replayed: number;
  pipeline: Pipeline;
  alerts?: AlertPublisher;
  annotate?: AnnotateSink;
  jsonl?: JsonlSink;
  /** The Kafka dead-letter file, when there is a Kafka sink. */
  deadLetterPath?: string;
}

/** Starts the outbox, the sinks and the server a config asks for, each registered with `life`. */
async function startOutputs(life: Lifecycle, config: PipelineConfig, pipeline: Pipeline, options: RunOptions, port: number, run: string, log: LogFn, onFatal: (e: Error) => void): Promise<Started> {
  const env = options.env ?? process.env;
  const baseDir = options.baseDir ?? process.cwd();
  const jsonlPath = jsonlPathOf(config, options);
  const sinks: Sink[] = [];
  let jsonl: JsonlSink | undefined;
  const k = config.sinks.kafka;
  // The outbox first: alerts journaled by an earlier run are replayed into Kafka below.
  let outbox: Outbox | undefined;
  const deadLetterPath = deadLetterPathOf(config, baseDir, env);
  if (outboxEnabled(config)) {
    const dir = outboxDir(config, baseDir, env);
    const beside = outboxBeside(config, deadLetterPath);
    outbox = await life.start('outbox', () => Outbox.open({ dir, maxBytes: config.outbox.maxBytes, maxAgeMs: config.outbox.maxAgeHours * 3_600_000, fsync: config.outbox.fsync, log, owner: config.name, cluster: outboxCluster(config), beside }), (o) => o.close());
    // The journals older releases kept for this name elsewhere (see legacyOutboxDirs): replayed
    // below with this one's. From a folder in the state folder, only its own sources' records:
    // that is another pipeline's own folder today (`lobby_cam` was also `lobby cam`'s), whose
    // alerts are not to go to this Kafka. The state folder itself and the one above it (`.`'s and
    // `..`'s before) are no other pipeline's: all of theirs. (A worker's cameras come from the
    // cluster, not its YAML: it takes them all, as before.)
    const ids = new Set(config.sources.map((s) => s.id));
    const shared = (from: string) => dirname(from) === stateRoot(env);
    await outbox.adoptOnce(legacyOutboxDirs(config, env), config.cluster ? undefined : (r, from) => !shared(from) || ids.has(r.source));
    // In the background (it reads other journals): alerts left where no run will look.
    if (!config.outbox.dir) void strandedAlerts(dir).then((found) => {
      for (const [folder, n] of found) {
        const name = pipelineOfFolder(folder);
        const how = name.startsWith('worker-')
          ? `a worker whose id changed (its default is the machine's name): a worker run with ARGUS_WORKER_ID=${name.slice('worker-'.length)} sends them (or a run of a pipeline named "${name}")`
          : `a pipeline renamed: a run of it under the name "${name}" sends them`;
        log(`outbox: ${join(dir, '..', folder)} holds ${n} undelivered alert(s) that no argus has open; ${how}`, { dir }, 'error');
      }
    }, () => undefined);
  }
  const jsonlField = options.jsonl !== undefined ? '--jsonl' : 'sinks.jsonl.path';
  if (jsonlPath !== undefined) {
    // Appended to (since stop 52), but still never a source's file or the pipeline: its lines would go into them (the annotated video refused this already).
    const refused = jsonlTargetRefusal(jsonlPath, pipeline.inputs, options.configFile, jsonlField);
    if (refused) throw refused;
  }
  if (jsonlPath) {
    // A signal ends the wait for a named pipe's reader (the run then ends VAP_ERR_INTERRUPTED).
    const open = () => JsonlSink.open(jsonlPath, { field: jsonlField, includeStatus: config.sinks.jsonl?.status ?? false, log, signal: options.signal, onClosed: () => onFatal(new Error('jsonl: stdout was closed')) });
    jsonl = await life.start('jsonl', open, (s) => s.close());
    sinks.push(jsonl);
  }
  let kafka: KafkaSink | undefined;
  /** Where the server answers an alert's picture while the WebSocket hub holds it (set with the hub, below). */
  let snapshotUrl: ((alertId: string) => string | undefined) | undefined;
  if (k) {
    // Loaded only when configured, as the server's and the WebSocket hub's modules below: a
    // pipeline without them does not pay their start-up (kafkajs alone ~70 ms here).
    const { KafkaSink } = await import('../sinks/kafka.js');
    const sink = new KafkaSink({ ...k, ssl: k.ssl as KafkaSinkOptions['ssl'], log, deadLetterPath, onDelivered: (msgs: Message[]) => outbox?.ack(msgs), spill: outbox?.spill(), snapshotUrl: (id) => snapshotUrl?.(id) });
    // Registered before it starts: a start that fails after connecting still disconnects.
    kafka = life.use('kafka', sink, (s) => s.close());
    await kafka.start();
    sinks.push(kafka);
  }
  let replayed = 0;
  const recovered = outbox?.takeRecovered() ?? [];
  if (recovered.length > 0) {
    if (kafka) {
      const superseded: Message[] = [];
      for (const r of recovered) {
        const m = recordMessage(r);
        if (m.type === 'status' && options.replaysStatus?.(m) === false) {
          superseded.push(m);
          continue;
        }
        // (An alert sent without its picture names where the earlier run held it: taken out.)
        kafka.publish(r.kind as MessageKind, r.source, r.kind === 'alert' ? replayedAlertJson(r.value) : r.value, m, true); // counted apart: their emitted is the earlier run's
        replayed++;
      }
      if (superseded.length > 0) {
        outbox!.ack(superseded);
        log(`outbox: ${superseded.length} status message(s) an earlier run left undelivered are not replayed: their cameras have been claimed since (${[...new Set(superseded.map((m) => m.source))].join(', ')})`, { dir: outbox!.dir });
      }
      log(`outbox: replaying ${recovered.filter((r) => r.kind === 'alert').length} alert(s) and ${recovered.filter((r) => r.kind === 'status').length - superseded.length} status message(s) an earlier run left undelivered`, { dir: outbox!.dir });
    } else {
      log(`outbox: ${recovered.length} undelivered message(s) in ${outbox!.dir}, but no Kafka sink is configured; kept`, {}, 'warn');
    }
  }
  let server: RunningServer | undefined;
  let websocket: WebSocketHub | undefined;
  if (config.server) {
    const sc = config.server;
    const ws = config.sinks.websocket;
    const { startHttpServer } = await import('../server/http.js');
    const { WebSocketHub } = await import('../sinks/websocket.js');
    const hub = ws.enabled ? new WebSocketHub({ ...ws, token: sc.token, sessionMaxAgeMs: sc.sessionMaxAgeMs, allowedOrigins: sc.allowedOrigins, publicOrigins: sc.publicOrigins, sources: () => pipeline.stats.map((s) => s.id), run, log }) : undefined;
    // (As the hub's own alerts name it.)
    if (hub) snapshotUrl = (id) => hub.snapshotUrl(id);
    server = await life.start(
      'server',
      () =>
        startHttpServer({
          host: sc.host,
          port,
          token: sc.token,
          sessionMaxAgeMs: sc.sessionMaxAgeMs,
          maxConnections: sc.maxConnections,
          maxHeaderBytes: sc.maxHeaderBytes,
          headersTimeoutMs: sc.headersTimeoutMs,
          requestTimeoutMs: sc.requestTimeoutMs,
          keepAliveTimeoutMs: sc.keepAliveTimeoutMs,
          requestBurstPerAddress: sc.requestBurstPerAddress,
          requestsPerAddressPerSecond: sc.requestsPerAddressPerSecond,
          allowedHosts: sc.allowedHosts,
          publicOrigins: sc.publicOrigins,
          log,
          upgrades: hub ? { '/ws': { upgrade: (q, s, h) => hub.handleUpgrade(q, s, h), refusal: (q, u) => hub.refusal(q, u) } } : {},
        }),
      (s) => s.close(),
    );
    // The hub lives on the server's sockets: it stops (closing its clients) before the server.
    if (hub) {
      websocket = life.use('websocket', hub, (h) => h.close());
      sinks.push(hub);
    }
    log(`listening on ${server.url}`, { url: server.url, websocket: websocket ? `${server.url.replace(/^http/, 'ws')}/ws` : undefined });
    if (!sc.token && !/^(127\.|::1$|localhost$|\[::1\]$)/.test(sc.host)) {
      log(`server: listening on ${sc.host} without server.token: anyone who can reach the port can read the cameras' detections, alerts and live frames; set server.token`, { host: sc.host }, 'warn');
    }
  }
  return { sinks, kafka, server, websocket, outbox, replayed, pipeline, jsonl, deadLetterPath };
}

function summarize(started: Started, frames: number, wallMs: number): RunSummary {
  const { pipeline, outbox: ob, kafka } = started;
  const alerts = started.alerts!;
  // With an outbox, what Kafka did not acknowledge is kept for the next start, not lost.
  // …if the journal holds them: after writes failed (a full disk) and no rewrite worked, some are only in memory.
  const pending = ob && kafka ? ob.pendingAlerts : 0;
  const keptAlerts = ob?.journaled ? pending : 0;
  const unsavedAlerts = ob?.journaled ? 0 : pending;
  const dropped = ob ? ob.lostToBounds : (kafka?.stats.alertsDropped ?? 0);
  return {
    frames,
    stats: pipeline.stats,
    failed: pipeline.stats.filter((s) => s.error).map((s) => ({ source: s.id, error: s.error! })),
    wallMs,
    kafka: kafka?.stats,
    alerts: alerts.stats,
    // (And the alerts a stream's end raised where nothing could carry them nor take them over, the
    // alert publisher closed: SourceAnalyzer.uncarried, attached chains' that ended included: their
    // analyzers left pipeline.analyzers.)
    lostAlerts: alerts.stats.raised - alerts.stats.published + dropped + pipeline.uncarriedAlerts,
    keptAlerts,
    unsavedAlerts,
    parkedAlerts: kafka?.stats.alertsParked ?? 0,
    deadLetterPath: started.deadLetterPath,
    outbox: ob ? { ...ob.stats, dir: ob.dir, replayed: started.replayed, ...(ob.whyOffDisk() ? { offDisk: ob.whyOffDisk() } : {}) } : undefined,
    websocket: started.websocket?.stats,
    analytics: Object.fromEntries([...pipeline.analyzers].map(([id, a]) => [id, a.report()])),
    annotate: started.annotate?.stats,
    detached: Object.fromEntries(pipeline.detached),
  };
}

/**
 * The JSONL file: --jsonl as given (against the shell's folder), the config's against the
 * pipeline file's folder, as every path in it (it was the shell's folder too).
 */
export function jsonlPathOf(config: PipelineConfig, options: Pick<RunOptions, 'jsonl' | 'baseDir'>): string | undefined {
  const path = config.sinks.jsonl?.path;
  return options.jsonl ?? (path === undefined || path === '-' ? path : resolve(options.baseDir ?? process.cwd(), path));
}

/** The JSON lines file, as a file another output must not also write (stdout is none). */
export function jsonlWrites(path: string | undefined): ReadonlyMap<string, string> | undefined {
  return path && path !== '-' ? new Map([[path, 'sinks.jsonl.path (--jsonl)']]) : undefined;
}
