import { Subject, take, type Subscription } from 'rxjs';
import type { PipelineConfig } from '../config/schema.js';
import type { LogFn } from '../core/log.js';
import { startHttpServer, type RunningServer } from '../server/http.js';
import { JsonlSink } from '../sinks/jsonl.js';
import { KafkaSink, type KafkaSinkOptions } from '../sinks/kafka.js';
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
  /** Alerts raised but not delivered to every sink (Kafka gave up at shutdown, or never published). */
  lostAlerts: number;
}

/** Starts the sinks and the server a config asks for. Closing order is the reverse. */
async function startSinks(config: PipelineConfig, pipeline: Pipeline, options: RunOptions, log: LogFn) {
  const sinks: Sink[] = [];
  const env = options.env ?? process.env;
  const jsonlPath = options.jsonl ?? config.sinks.jsonl?.path;
  if (jsonlPath) sinks.push(new JsonlSink(jsonlPath, config.sinks.jsonl?.status ?? false));
  let kafka: KafkaSink | undefined;
  const k = config.sinks.kafka;
  if (k) {
    kafka = new KafkaSink({ ...k, ssl: k.ssl as KafkaSinkOptions["ssl"], log });
    await kafka.start();
    sinks.push(kafka);
  }
  let server: RunningServer | undefined;
  let websocket: WebSocketHub | undefined;
  if (config.server) {
    const ws = config.sinks.websocket;
    if (ws.enabled) {
      websocket = new WebSocketHub({ ...ws, token: config.server.token, allowedOrigins: config.server.allowedOrigins, sources: () => pipeline.stats.map((s) => s.id), log });
      sinks.push(websocket);
    }
    const port = env.ARGUS_HTTP_PORT !== undefined && env.ARGUS_HTTP_PORT !== '' ? Number(env.ARGUS_HTTP_PORT) : config.server.port;
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
      log,
      upgrades: websocket ? { '/ws': (q, s, h) => websocket!.handleUpgrade(q, s, h) } : {},
    });
    log(`listening on ${server.url}`, { url: server.url, websocket: websocket ? `${server.url.replace(/^http/, 'ws')}/ws` : undefined });
  }
  return { sinks, kafka, server, websocket };
}

/** Builds the pipeline and runs it until every source ends, `maxFrames` is reached or `signal` aborts. */
export async function runPipeline(config: PipelineConfig, options: RunOptions = {}): Promise<RunSummary> {
  const log = options.log ?? (() => {});
  let publisher: Publisher | undefined;
  const stop$ = new Subject<void>();
  const pipeline = await createPipeline(config, {
    ...options,
    stop: stop$,
    onTransition: (t) => {
      publisher?.status(t);
      options.onTransition?.(t);
    },
  });
  const started = await startSinks(config, pipeline, options, log).catch(async (e: unknown) => {
    if (!options.detector) await pipeline.detector.release();
    throw e;
  });
  const { manifest } = pipeline.detector;
  publisher = new Publisher(started.sinks, { name: manifest.name, version: manifest.version }, pipeline.detector.labels);
  const alerts = new AlertPublisher(publisher, config.alerts, pipeline.detector, options.baseDir ?? process.cwd(), log);
  if (pipeline.stats.length > 0 && config.sources.some((s) => s.rules.length > 0)) await alerts.warmup();

  // Metrics, health, dashboard: on the pipeline's HTTP server, when there is one.
  let metrics: Metrics | undefined;
  let liveFrames: FrameBroadcaster | undefined;
  let rates: RateMeter | undefined;
  if (started.server) {
    metrics = new Metrics({ stats: () => pipeline.stats, provider: pipeline.detector.provider, kafka: started.kafka, websocket: started.websocket, alertsByRule: () => alerts.byRule });
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
      if (options.signal?.aborted) return resolve();
      options.signal?.addEventListener('abort', onAbort, { once: true });
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
          options.signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        complete: () => {
          options.signal?.removeEventListener('abort', onAbort);
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
    rates?.close();
    await started.server?.close();
    if (!options.detector) await pipeline.detector.release();
  }
  return {
    frames,
    stats: pipeline.stats,
    failed: pipeline.stats.filter((s) => s.error).map((s) => ({ source: s.id, error: s.error! })),
    wallMs: performance.now() - t0,
    kafka: started.kafka?.stats,
    alerts: alerts.stats,
    lostAlerts: alerts.stats.raised - alerts.stats.published + (started.kafka?.stats.alertsDropped ?? 0),
    websocket: started.websocket?.stats,
  };
}
