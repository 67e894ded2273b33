import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dropsByReason, FrameRates, producedByMix, type FrameRate, type SourceStats } from '../sources/stats.js';
import type { Metrics } from './metrics.js';
import { DATA_HEADERS, parseRequestUrl } from '../core/http.js';
import { plain, type RouteOptions, type RunningServer } from './http.js';
import { STAGES } from '../core/frame.js';
import { percentileOfSorted } from '../core/stats.js';
import { now } from '../core/clock.js';
import { redactDeep } from '../core/redact.js';
import type { SourceAnalyticsReport } from '../analytics/report.js';

const DASHBOARD = fileURLToPath(new URL('./dashboard/', import.meta.url));
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/**
 * Every JSON answer is redacted: source URLs and error messages may carry credentials. Its
 * Content-Length said: a HEAD (a monitor's, a proxy's check) got none, and a GET came chunked.
 */
function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(redactDeep(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...DATA_HEADERS }).end(text);
}

/** Frames per second in and out, per source, over the last second (updated once a second). */
export class RateMeter {
  private readonly meter = new FrameRates();
  rates = new Map<string, FrameRate>();
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly stats: () => readonly SourceStats[]) {
    this.meter.sample(this.stats(), performance.now());
    this.timer = setInterval(() => {
      const r = this.meter.sample(this.stats(), performance.now());
      for (const v of r.values()) {
        v.fpsIn = Math.round(v.fpsIn * 10) / 10;
        v.fpsOut = Math.round(v.fpsOut * 10) / 10;
      }
      this.rates = r;
    }, 1000);
    this.timer.unref();
  }
  close(): void {
    clearInterval(this.timer);
  }
}

/** What the routes read of the running pipeline. */
export interface RoutedPipeline {
  readonly stats: readonly SourceStats[];
  readonly detector: {
    readonly manifest: { readonly name: string; readonly version: string };
    readonly provider: string;
    /** How long a model run has been in flight, ms, once past the stuck bound, and how many workers are stuck (Detector.stuckRun). */
    stuckRun(): { ms: number; stuck: number; workers: number } | undefined;
  };
}

export interface RouteContext {
  pipeline: RoutedPipeline;
  metrics: Metrics;
  rates: RateMeter;
  /** Zones and lines in source pixels, by source id (once the source has a frame size). */
  geometry: (source: string) => { zones: { id: string; polygon: readonly (readonly [number, number])[] }[]; lines: { id: string; from: readonly [number, number]; to: readonly [number, number] }[] };
  /** Run counts of a source's zones, lines and rules (absent: the source has none). */
  analytics?: (source: string) => SourceAnalyticsReport | undefined;
  /** Serve /metrics without the token (server.publicMetrics). Default false: guarded like every route but /healthz and /readyz. */
  publicMetrics?: boolean;
  /** Extra fields of /healthz and /api/sources (argus worker: `cluster`, the worker and its cameras). */
  health?: () => Record<string, unknown>;
  /** Whether the run is stopping (a signal came): /readyz then answers 503, so a load balancer sends no new clients. */
  stopping?: () => boolean;
  /** The JPEG of an alert's snapshot by alert id and its picture's key while it is held (the WebSocket hub's), for /api/snapshot?id=&key=. */
  snapshot?: (alertId: string, key: string) => Buffer | undefined;
  /**
   * The origin of another site's page that may call the API routes, /api/sources and
   * /api/snapshot (server.allowedOrigins, as the WebSocket hub admits it: core/http.ts,
   * OriginPolicy.crossOrigin, the sink enabled or not), or undefined: the answer is then for the server's own pages only
   * (Cross-Origin-Resource-Policy: same-origin, no CORS). The server answers such a page's
   * preflight and says CORS on every answer of these routes, their errors included (http.ts,
   * RouteOptions.cors).
   */
  snapshotOrigin?: (req: IncomingMessage) => string | undefined;
}

/**
 * /metrics (Prometheus), /healthz (the process answers), /readyz (model loaded, every
 * enabled source has delivered a frame or is marked failed, not stopping), /api/sources (dashboard
 * state), and the dashboard itself at /. With a token configured on the server, all of them
 * but /healthz and /readyz (and /metrics with `publicMetrics`) need it.
 */
/** p50/p99 over a source's latest frames read, dropped ones included (SourceStats.e2eRead); none for a stand-in without them. */
function readPercentiles(s: SourceStats): { readP50: number | null; readP99: number | null } | undefined {
  if (!s.e2eRead) return undefined;
  const v = s.e2eRead.sorted();
  const q = (p: number) => (v.length ? Math.round(percentileOfSorted(v, p) * 10) / 10 : null);
  return { readP50: q(50), readP99: q(99) };
}

export function registerRoutes(server: RunningServer, ctx: RouteContext): void {
  const { pipeline, metrics } = ctx;
  // The API routes answer a page of an origin server.allowedOrigins admits (a dashboard or a
  // consumer of another origin, with the token): CORS on their every answer, and their preflight.
  const api: RouteOptions = { cors: ctx.snapshotOrigin };
  server.route('/metrics', async (_req, res) => {
    const body = await metrics.scrape();
    // Guarded by the token like /api/sources: no browser or proxy keeps a copy.
    res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': String(Buffer.byteLength(body)), ...DATA_HEADERS }).end(body);
  }, { public: ctx.publicMetrics ?? false });
  const sourcesState = () =>
    pipeline.stats.map((s) => ({
      id: s.id,
      state: s.state,
      reason: s.lastTransition?.reason,
      since: s.lastTransition?.at,
      framesOut: s.framesOut,
      delivered: s.framesOut > 0,
      reconnects: s.reconnects,
      error: s.error ? { code: (s.error as { code?: string }).code, message: s.error.message.split('\n')[0] } : undefined,
    }));
  // The probes answer anyone (an orchestrator has no token), but with a token configured only
  // a request that carries it gets the details: source ids, states, reasons and errors, and a
  // worker's map of the cluster (camera ids, owners, labels).
  // A model run that has not returned for STUCK_RUN_MS (a run that may never end, a wedged GPU)
  // fails the liveness probe (503, `stuck`): no frame gets results until argus is restarted, and
  // an orchestrator restarts it. It answered 200 "ok" while every result had stopped. With
  // several workers the others still run frames (`stuckWorkers` of `workers` says so), but the
  // stuck one holds its core and session until a restart: 503 all the same.
  server.route('/healthz', (req, res) => {
    const stuck = pipeline.detector.stuckRun();
    const base = stuck === undefined ? { status: 'ok', uptimeSeconds: Math.round(process.uptime()) } : { status: 'stuck', uptimeSeconds: Math.round(process.uptime()), inferenceRunMs: Math.round(stuck.ms), stuckWorkers: stuck.stuck, workers: stuck.workers };
    json(res, stuck === undefined ? 200 : 503, server.authorized(req) ? { ...base, sources: sourcesState(), ...ctx.health?.() } : base);
  }, { public: true, probe: true });
  server.route('/readyz', (req, res) => {
    const sources = sourcesState();
    const waiting = sources.filter((s) => !s.delivered && s.state !== 'failed').map((s) => s.id);
    // Stopping (the drain after a signal, up to its timeout): no longer ready, whatever the
    // sources did (it answered 200 until the server closed, and new clients were sent to it).
    const stopping = ctx.stopping?.() === true;
    const ready = waiting.length === 0 && !stopping;
    const extra = stopping ? { stopping } : {};
    json(res, ready ? 200 : 503, server.authorized(req) ? { ready, ...extra, model: { name: pipeline.detector.manifest.name, loaded: true, provider: pipeline.detector.provider }, waitingFor: waiting, sources } : { ready, ...extra });
  }, { public: true, probe: true });
  server.route('/api/sources', (_req, res) =>
    json(res, 200, {
      ...ctx.health?.(),
      model: { name: pipeline.detector.manifest.name, version: pipeline.detector.manifest.version, provider: pipeline.detector.provider },
      stages: STAGES,
      sources: pipeline.stats.map((s) => {
        const sorted = s.e2e.sorted();
        const pipe = s.pipeline.sorted();
        const pct = (v: ArrayLike<number>, q: number) => (v.length ? Math.round(percentileOfSorted(v, q) * 10) / 10 : null);
        const p = (q: number) => pct(sorted, q);
        const r = ctx.rates.rates.get(s.id) ?? { fpsIn: 0, fpsOut: 0 };
        return {
          id: s.id,
          state: s.state,
          reason: s.lastTransition?.reason,
          // How long ago the state was entered, by this server's clock: the dashboard counts a
          // reason's "retry N in X s" down from it (a page's clock may be set otherwise).
          stateAgeMs: s.lastTransition ? Math.max(0, Math.round(now() - s.lastTransition.at)) : undefined,
          width: s.width,
          height: s.height,
          fps: s.fps,
          ...ctx.geometry(s.id),
          analytics: ctx.analytics?.(s.id),
          stats: { fpsIn: r.fpsIn, fpsOut: r.fpsOut, dropped: s.dropped, stale: dropsByReason(s).stale, inferenceErrors: s.inferenceErrors, reconnects: s.reconnects, p50: p(50), p99: p(99), producedBy: s.producedBy ?? null, e2eFrom: producedByMix(s.e2eBy.counts) ?? null, pipelineP50: pct(pipe, 50), pipelineP99: pct(pipe, 99), ...readPercentiles(s) },
        };
      }),
    }),
  api);
  // An alert's picture: the WebSocket sends alerts with their snapshot's URL, not its bytes.
  const snapshot = ctx.snapshot;
  if (snapshot) {
    server.route('/api/snapshot', (req, res) => {
      const q = parseRequestUrl(req.url)?.searchParams;
      const id = q?.get('id');
      const key = q?.get('key');
      // The key names the picture (websocket.ts, HeldPicture): without it, an alert id given again
      // (another process of the same run) named whichever picture held it.
      const jpeg = id && key ? snapshot(id, key) : undefined;
      // A page of an origin server.allowedOrigins lists gets its alerts' URLs on /ws: it may load
      // them (an <img src>: CORP cross-origin; a fetch or <img crossorigin>: CORS, which the server
      // says on every answer of the route, api), its 404 too. Without credentials (no
      // Access-Control-Allow-Credentials): such a page presents the token (?token=), as on /ws,
      // where the session cookie counts for the server's own pages only. Any other origin:
      // same-origin, as every data answer.
      const headers: Record<string, string> = ctx.snapshotOrigin?.(req) ? { 'cross-origin-resource-policy': 'cross-origin' } : {};
      if (!jpeg) {
        const why = id && !key ? 'not found: the URL lacks its key (fetch the alert\'s snapshot.url as sent)\n' : 'not found: no snapshot of that alert is held (the oldest are let go; Kafka and the JSON lines embed them)\n';
        return plain(res, 404, why, headers);
      }
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(jpeg.length), ...DATA_HEADERS, ...headers }).end(req.method === 'HEAD' ? undefined : jpeg);
    }, api);
  }
  const file = (name: string) => async (req: IncomingMessage, res: ServerResponse) => {
    const headers: Record<string, string> = { 'content-type': TYPES[extname(name)] ?? 'application/octet-stream', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
    if (name === 'index.html') {
      if (trade(server, req, res)) return;
      Object.assign(headers, PAGE_HEADERS);
      const page = await readFile(join(DASHBOARD, name));
      headers['content-length'] = String(page.length);
      return void res.writeHead(200, headers).end(page);
    }
    // The page's scripts and style: `no-cache` makes the browser ask each load, and the ETag lets
    // it be told "unchanged" (304, no body) instead of being sent all 26 files again.
    const { body, etag } = await dashboardFile(name);
    headers.etag = etag;
    if (etagMatches(req.headers['if-none-match'], etag)) return void res.writeHead(304, headers).end();
    headers['content-length'] = String(body.length);
    res.writeHead(200, headers).end(body);
  };
  server.route('/', file('index.html'), { page: true });
  server.route('/index.html', file('index.html'), { page: true });
  server.route('/app.js', file('app.js'));
  server.route('/style.css', file('style.css'));
  // Exact paths only: a module name not in the list (or any other path under /js/) is a 404.
  for (const m of DASHBOARD_MODULES) server.route(`/js/${m}`, file(`js/${m}`));
}

/**
 * A dashboard file's bytes and their ETag, read once per process: the files are those of the
 * installed argus and do not change while it runs. A failed read is not kept (the next request
 * tries again).
 */
const dashboardFiles = new Map<string, Promise<{ body: Buffer; etag: string }>>();
function dashboardFile(name: string): Promise<{ body: Buffer; etag: string }> {
  let held = dashboardFiles.get(name);
  if (!held) {
    held = readFile(join(DASHBOARD, name)).then((body) => ({ body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }));
    held.catch(() => dashboardFiles.delete(name));
    dashboardFiles.set(name, held);
  }
  return held;
}

/** Whether an If-None-Match header names this ETag (a list, weak forms and `*` included; RFC 9110 13.1.2). */
export function etagMatches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const tag = part.trim();
    if (tag === '*' || tag === etag || tag === `W/${etag}`) return true;
  }
  return false;
}

/** The dashboard's ES modules that app.js imports, served at /js/<name> (src/server/dashboard/js/). */
export const DASHBOARD_MODULES: readonly string[] = [
  'alerts.js',
  'api.js',
  'canvas.js',
  'chart.js',
  'clock.js',
  'cluster.js',
  'connection.js',
  'detections.js',
  'dom.js',
  'error-banner.js',
  'format.js',
  'frames.js',
  'messages.js',
  'numbers.js',
  'overlay.js',
  'render-queue.js',
  'snapshot.js',
  'sources.js',
  'stage-bar.js',
  'stages.js',
  'store.js',
  'tile-state.js',
  'tile-stats.js',
  'tile.js',
];

/**
 * The dashboard opened with `?token=` (the route runs only once that token was checked): the
 * answer is the session cookie and a 303 to the same URL without the token, so the token stays in
 * no history, bookmark or screenshot, and the page, its links and its requests never hold it; the
 * page, its assets, /api/sources and /ws then authenticate by the cookie. True when it answered.
 */
function trade(server: RunningServer, req: IncomingMessage, res: ServerResponse): boolean {
  const url = parseRequestUrl(req.url);
  const cookie = server.sessionCookie(req);
  if (!cookie || !url?.searchParams.has('token')) return false;
  url.searchParams.delete('token');
  plain(res, 303, 'see other: the token is now this browser session\'s cookie\n', { location: `${url.pathname}${url.search}`, 'set-cookie': cookie, 'referrer-policy': 'no-referrer' });
  return true;
}

/**
 * The dashboard page's own headers. A Content-Security-Policy: scripts, styles and connections
 * from this server only (no inline script), pictures from it or `data:` (snapshots), and no page
 * may frame it (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for browsers without CSP
 * 2): a page the operator visits cannot lay the dashboard under its own buttons (clickjacking),
 * and a string that ever slipped into markup could not run. `no-store`: no cache keeps it.
 */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
};
