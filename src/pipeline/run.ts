import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { Subject, take, type Subscription } from 'rxjs';
import type { PipelineConfig } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import { startHttpServer, type RunningServer } from '../server/http.js';
import { JsonlSink } from '../sinks/jsonl.js';
import { KafkaSink, type KafkaSinkOptions } from '../sinks/kafka.js';
import type { Message, MessageKind } from '../sinks/message.js';
import { Outbox, recordMessage } from '../sinks/outbox.js';
import { Publisher } from '../sinks/publisher.js';
import type { Sink } from '../sinks/sink.js';
import { StatusReporter } from '../sinks/status.js';
import { WebSocketHub } from '../sinks/websocket.js';
import { AlertPublisher } from './alerts.js';
import { FrameBroadcaster } from '../server/frames.js';
import { Metrics } from '../server/metrics.js';
import { RateMeter, registerRoutes } from '../server/routes.js';
import { createPipeline, type FrameResult, type Pipeline, type PipelineOptions, type SourceStats } from './pipeline.js';

export interface RunOptions extends PipelineOptions {
  /** Stop after this many processed frames (all sources together). */
  maxFrames?: number;
  /** JSONL output path, '-' for stdout. Overrides `sinks.jsonl` in the config. */
  jsonl?: string;
  /** Print the per-source status line. Default true. */
  status?: boolean;
  /** Called for every processed frame, after the sinks (bench, tests). */
  onResult?: (r: FrameResult) => void;
  /** Aborting stops the sources and finishes cleanly: frames in flight finish, alerts are published, sinks flushed. */
  signal?: AbortSignal;
  /** How long frames in flight may take to finish after a stop, ms. Default 10 000. */
  drainTimeoutMs?: number;
  /** Called once everything is started (model loaded, sinks connected, server listening). */
  onReady?: (running: RunningPipeline) => void;
  /** Environment for overrides such as ARGUS_HTTP_PORT. Default process.env. */
  env?: NodeJS.ProcessEnv;
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
  outbox?: Outbox['stats'] & { dir: string; replayed: number };
}

/** The outbox folder: `outbox.dir` (relative to the pipeline file), else a per-pipeline folder under the user's state directory. */
export function outboxDir(config: PipelineConfig, baseDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (config.outbox.dir) return isAbsolute(config.outbox.dir) ? config.outbox.dir : resolve(baseDir, config.outbox.dir);
  const root = env.ARGUS_STATE_DIR || (env.XDG_STATE_HOME ? join(env.XDG_STATE_HOME, 'argus') : join(homedir(), '.local', 'state', 'argus'));
  return join(root, config.name.replace(/[^A-Za-z0-9_.-]/g, '_'));
}

/** $ARGUS_HTTP_PORT, when set, must be a port number. */
function httpPort(env: NodeJS.ProcessEnv, configured: number): number {
  const v = env.ARGUS_HTTP_PORT;
  if (v === undefined || v === '') return configured;
  const n = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isInteger(n) || n < 0 || n > 65535) throw new ArgusError(ErrorCodes.CONFIG, `ARGUS_HTTP_PORT: expected a port number 0–65535, got ${JSON.stringify(v)}`);
  return n;
}

/** Starts the sinks and the server a config asks for. Closing order is the reverse. */
async function startSinks(config: PipelineConfig, pipeline: Pipeline, options: RunOptions, log: LogFn, onFatal: (e: Error) => void) {
  const sinks: Sink[] = [];
  const env = options.env ?? process.env;
  const port = config.server ? httpPort(env, config.server.port) : 0;
  const k = config.sinks.kafka;
  // The outbox first: alerts journaled by an earlier run are replayed into Kafka below.
  let outbox: Outbox | undefined;
  if (config.outbox.enabled ?? k !== undefined) {
    outbox = await Outbox.open({ dir: outboxDir(config, options.baseDir ?? process.cwd(), env), maxBytes: config.outbox.maxBytes, maxAgeMs: config.outbox.maxAgeHours * 3_600_000, fsync: config.outbox.fsync, log });
  }
  try {
    const jsonlPath = options.jsonl ?? config.sinks.jsonl?.path;
    if (jsonlPath) sinks.push(await JsonlSink.open(jsonlPath, { includeStatus: config.sinks.jsonl?.status ?? false, log, onClosed: () => onFatal(new Error('jsonl: stdout was closed')) }));
    let kafka: KafkaSink | undefined;
    if (k) {
      const deadLetterPath = resolve(options.baseDir ?? process.cwd(), k.deadLetterPath ?? join(outboxDir(config, options.baseDir ?? process.cwd(), env), 'kafka-dead-letter.jsonl'));
      kafka = new KafkaSink({ ...k, ssl: k.ssl as KafkaSinkOptions["ssl"], log, deadLetterPath, onDelivered: (msgs: Message[]) => outbox?.ack(msgs), spill: outbox?.spill() });
      await kafka.start();
      sinks.push(kafka);
    }
    let replayed = 0;
    const recovered = outbox?.takeRecovered() ?? [];
    if (recovered.length > 0) {
      if (kafka) {
        for (const r of recovered) {
          kafka.publish(r.kind as MessageKind, r.source, r.value, recordMessage(r));
          replayed++;
        }
        log(`outbox: replaying ${recovered.filter((r) => r.kind === 'alert').length} alert(s) and ${recovered.filter((r) => r.kind === 'status').length} status message(s) an earlier run left undelivered`, { dir: outbox!.dir });
      } else {
        log(`outbox: ${recovered.length} undelivered message(s) in ${outbox!.dir}, but no Kafka sink is configured; kept`, {}, 'warn');
      }
    }
    let server: RunningServer | undefined;
    let websocket: WebSocketHub | undefined;
    if (config.server) {
      const ws = config.sinks.websocket;
      if (ws.enabled) {
        websocket = new WebSocketHub({ ...ws, token: config.server.token, allowedOrigins: config.server.allowedOrigins, sources: () => pipeline.stats.map((s) => s.id), log });
        sinks.push(websocket);
      }
      const sc = config.server;
      server = await startHttpServer({
        host: sc.host,
        port,
        token: sc.token,
        maxConnections: sc.maxConnections,
        maxHeaderBytes: sc.maxHeaderBytes,
        headersTimeoutMs: sc.headersTimeoutMs,
        requestTimeoutMs: sc.requestTimeoutMs,
        keepAliveTimeoutMs: sc.keepAliveTimeoutMs,
        allowedHosts: sc.allowedHosts,
        log,
        upgrades: websocket ? { '/ws': (q, s, h) => websocket!.handleUpgrade(q, s, h) } : {},
      });
      log(`listening on ${server.url}`, { url: server.url, websocket: websocket ? `${server.url.replace(/^http/, 'ws')}/ws` : undefined });
      if (!sc.token && !/^(127\.|::1$|localhost$|\[::1\]$)/.test(sc.host)) {
        log(`server: listening on ${sc.host} without server.token: anyone who can reach the port can read the cameras' detections, alerts and live frames; set server.token`, { host: sc.host }, 'warn');
      }
    }
    return { sinks, kafka, server, websocket, outbox, replayed };
  } catch (e) {
    // A sink that cannot start: release what did (the outbox's lock, open files, connections).
    for (const s of sinks.reverse()) await s.close().catch(() => undefined);
    await outbox?.close().catch(() => undefined);
    throw e;
  }
}

/** Builds the pipeline and runs it until every source ends, `maxFrames` is reached or `signal` aborts. */
export async function runPipeline(config: PipelineConfig, options: RunOptions = {}): Promise<RunSummary> {
  const log = options.log ?? (() => {});
  let publisher: Publisher | undefined;
  const stop$ = new Subject<void>();
  // Stops the run from inside (stdout closed under `--jsonl -`), like an abort of options.signal.
  const inner = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, inner.signal]) : inner.signal;
  const pipeline = await createPipeline(config, {
    ...options,
    stop: stop$,
    onTransition: (t) => {
      publisher?.status(t).catch(() => undefined);
      options.onTransition?.(t);
    },
  });
  const onFatal = (e: Error) => {
    if (inner.signal.aborted) return;
    log(`stopping: ${e.message}`, {}, 'warn');
    inner.abort();
  };
  const started = await startSinks(config, pipeline, options, log, onFatal).catch(async (e: unknown) => {
    if (!options.detector) await pipeline.detector.release();
    throw e;
  });
  const { manifest } = pipeline.detector;
  publisher = new Publisher(started.sinks, { name: manifest.name, version: manifest.version }, pipeline.detector.labels, started.outbox);
  const alerts = new AlertPublisher(publisher, config.alerts, pipeline.detector, options.baseDir ?? process.cwd(), log);
  if (pipeline.stats.length > 0 && config.sources.some((s) => s.rules.length > 0)) await alerts.warmup();

  // Metrics, health, dashboard: on the pipeline's HTTP server, when there is one.
  let metrics: Metrics | undefined;
  let liveFrames: FrameBroadcaster | undefined;
  let rates: RateMeter | undefined;
  if (started.server) {
    metrics = new Metrics({ stats: () => pipeline.stats, provider: pipeline.detector.provider, kafka: started.kafka, websocket: started.websocket, outbox: started.outbox, alertsByRule: () => alerts.byRule });
    rates = new RateMeter(() => pipeline.stats);
    if (started.websocket) liveFrames = new FrameBroadcaster(started.websocket, pipeline.detector.manifest.preprocess.channelOrder);
    registerRoutes(started.server, {
      pipeline,
      metrics,
      rates,
      geometry: (id) => pipeline.analyzers.get(id)?.geometry() ?? { zones: [], lines: [] },
      publicMetrics: config.server?.publicMetrics ?? false,
    });
  }
  options.onReady?.({ pipeline, publisher, alerts, metrics, ...started });
  const status = options.status === false ? undefined : new StatusReporter(pipeline.stats);
  status?.start();
  let frames = 0;
  const t0 = performance.now();
  let sub: Subscription | undefined;
  const drainMs = options.drainTimeoutMs ?? 10_000;
  let drainTimer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      let results$ = pipeline.results$;
      if (options.maxFrames !== undefined) results$ = results$.pipe(take(options.maxFrames));
      // Graceful stop: sources stop (ffmpeg is killed), frames already read finish and are
      // published; if that takes longer than drainTimeoutMs, the rest is cut off.
      const onAbort = () => {
        stop$.next();
        drainTimer = setTimeout(() => {
          log(`stop: frames still in flight after ${drainMs} ms; cutting them off`, {}, 'warn');
          sub?.unsubscribe();
          resolve();
        }, drainMs);
        drainTimer.unref();
      };
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', onAbort, { once: true });
      sub = results$.subscribe({
        next: (r) => {
          frames++;
          publisher.detections(r.frame, r.detections, r.dropped, r.analytics);
          if (r.alerts.length > 0) alerts.raise(r);
          metrics?.onFrame(r);
          liveFrames?.offer(r);
          options.onResult?.(r);
          r.frame.release();
        },
        error: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
        complete: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      });
    });
  } finally {
    if (drainTimer) clearTimeout(drainTimer);
    sub?.unsubscribe();
    status?.stop();
    await alerts.drain();
    await publisher.close();
    await started.outbox?.close();
    rates?.close();
    await started.server?.close();
    if (!options.detector) await pipeline.detector.release();
  }
  const ob = started.outbox;
  // With an outbox, what Kafka did not acknowledge is kept for the next start, not lost.
  const keptAlerts = ob && started.kafka ? ob.pendingAlerts : 0;
  const dropped = ob ? ob.stats.evicted : (started.kafka?.stats.alertsDropped ?? 0);
  return {
    frames,
    stats: pipeline.stats,
    failed: pipeline.stats.filter((s) => s.error).map((s) => ({ source: s.id, error: s.error! })),
    wallMs: performance.now() - t0,
    kafka: started.kafka?.stats,
    alerts: alerts.stats,
    lostAlerts: alerts.stats.raised - alerts.stats.published + dropped,
    keptAlerts,
    outbox: ob ? { ...ob.stats, dir: ob.dir, replayed: started.replayed } : undefined,
    websocket: started.websocket?.stats,
  };
}
