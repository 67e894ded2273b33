import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { withDeadline } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { ThrottledLog, type LogFn } from '../core/log.js';
import { KeyedTokenBuckets } from '../core/rate.js';
import { redact } from '../core/redact.js';
import { addressKey, DATA_HEADERS, foreignPage, OriginPolicy, parseRequestUrl, refuseSocket, requestAuthorized, requestCookies, sessionCookie, sessionCookieName, sessionRenewal, type SessionOptions } from '../core/http.js';

export type Route = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface RouteOptions {
  /** Served without the token even when one is configured (/healthz, /readyz). Default false. */
  public?: boolean;
  /**
   * A page a link may open (the dashboard). A browser keeps its SameSite=Strict session cookie
   * off a navigation that another site started, redirects after it included: such a navigation
   * without credentials is answered 401 with `Refresh: 0`, and the reload, started by this
   * server's own origin, carries the cookie (or is an ordinary 401); once in 10 s at most
   * (reloadOnce). Default false.
   */
  page?: boolean;
  /**
   * An orchestrator's probe (/healthz, /readyz): its requests are paced by a bucket of their own
   * per address, at least PROBE_RATE, so that a kubelet probing every second is never refused
   * because others behind its address (a node's SNAT) used up the address's requests. Default false.
   */
  probe?: boolean;
  /**
   * The origin of another site's page this route answers with CORS (server.allowedOrigins), or
   * undefined: the route is then for the server's own pages only. Every answer of the route, its
   * 401, 429, 405 and 500 included, carries `Vary: Origin, Referer`, and to such an origin
   * `Access-Control-Allow-Origin` (corsHeaders); its preflight is answered (answerPreflight).
   */
  cors?: (req: IncomingMessage) => string | undefined;
}

/** How long a browser may keep a preflight's answer, seconds (Chromium keeps one at most 2 h). */
export const PREFLIGHT_MAX_AGE_S = 600;

/**
 * The CORS headers of every answer of a route that answers other origins (RouteOptions.cors),
 * `origin` the one it admits for this request or undefined. Vary always: the answer depends on
 * the Origin (and a plain <img>'s Referer). No Access-Control-Allow-Credentials: such a page
 * presents the token; the session cookie is the server's own pages'. The headers a page reads of
 * an error: why it was refused (WWW-Authenticate) and when to come back (Retry-After).
 */
export function corsHeaders(origin: string | undefined): Record<string, string> {
  return origin ? { vary: 'Origin, Referer', 'access-control-allow-origin': origin, 'access-control-expose-headers': 'WWW-Authenticate, Retry-After' } : { vary: 'Origin, Referer' };
}

/**
 * A CORS preflight (OPTIONS with Origin and Access-Control-Request-Method): a page's `fetch` with
 * `Authorization: Bearer …` sends one first, without the token (a preflight never carries one).
 * Answered 204 for a route that admits the origin, without reaching the route; 403 without any
 * CORS header otherwise (another origin, `null`, a route of the server's own pages, no route).
 */
function answerPreflight(req: IncomingMessage, res: ServerResponse, cors: RouteOptions['cors']): void {
  const origin = cors?.(req);
  if (!origin) return plain(res, 403, 'forbidden: this origin may not call this route (server.allowedOrigins)\n', { vary: 'Origin, Referer' });
  res
    .writeHead(204, {
      ...corsHeaders(origin),
      vary: 'Origin, Referer, Access-Control-Request-Method, Access-Control-Request-Headers',
      'access-control-allow-methods': 'GET, HEAD',
      'access-control-allow-headers': 'Authorization, Content-Type',
      'access-control-max-age': String(PREFLIGHT_MAX_AGE_S),
      // Chromium's Private Network Access: a public page's preflight to an address of the LAN asks this.
      ...(req.headers['access-control-request-private-network'] === 'true' ? { 'access-control-allow-private-network': 'true' } : undefined),
      'cache-control': 'no-store',
    })
    .end();
}

/**
 * The least the probes' own bucket per address holds and gains a second (RouteOptions.probe):
 * a kubelet's liveness, readiness and startup probes every second are 3 a second at most.
 */
export const PROBE_RATE = { burst: 30, perSecond: 10 } as const;

/** Limits every connection lives under; README, "HTTP server: limits and access". */
export const SERVER_DEFAULTS = {
  maxConnections: 256,
  maxHeaderBytes: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  // A dashboard's page load is 48 requests (27 files, /api/sources, up to 20 pictures), and a
  // module refused leaves the page blank: room for five at once (screens behind one NAT, reloads).
  requestBurstPerAddress: 240,
  requestsPerAddressPerSecond: 20,
} as const;

/** Why a request is refused: its status, reason phrase and headers (the WebSocket hub's checks). */
export interface Refusal {
  status: number;
  reason: string;
  headers?: Record<string, string>;
  /** What the answer says (a line); default the reason, in lower case. */
  body?: string;
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/**
 * An upgrade path's handler, and the checks it makes before any handshake (`refusal`: the
 * WebSocket hub's Origin and token), which a plain request to the path (no `Upgrade`) gets too,
 * before its 426 Upgrade Required.
 */
export interface UpgradeRoute {
  upgrade: UpgradeHandler;
  refusal?: (req: IncomingMessage, url: URL) => Refusal | undefined;
}

export interface HttpServerOptions {
  host: string;
  port: number;
  routes?: Record<string, Route>;
  /**
   * Upgrade handlers by path (e.g. /ws). Each does its own access checks (the WebSocket hub checks
   * token and Origin). A plain request to such a path answers 426 Upgrade Required
   * (`Upgrade: websocket`), after the route's `refusal` and the server's token.
   */
  upgrades?: Record<string, UpgradeHandler | UpgradeRoute>;
  /** When set, every route except those registered `public` answers 401 without it (`Authorization: Bearer …`, `?token=…`, or the dashboard's session cookie). */
  token?: string;
  /** How long the dashboard's session cookie opens the server unused; a request it opens renews it once a tenth of that has passed. Default 12 h (core/http.ts, SESSION_MAX_AGE_MS). */
  sessionMaxAgeMs?: number;
  /**
   * Open sockets (HTTP and WebSocket together). Beyond it a new connection takes the place of
   * the one idle longest (no request being answered, not a WebSocket), else of one whose client
   * does not read its answer; when every one is otherwise busy, the new one is closed at once. Default 256.
   */
  maxConnections?: number;
  /** Request line and headers together; larger answers 431. Default 16 KiB. */
  maxHeaderBytes?: number;
  /** Time to receive the request line and headers, from the connection (or the previous response); then 408 and closed. Default 10 s. */
  headersTimeoutMs?: number;
  /** Time to receive a whole request; then 408 and closed. Also the longest a connection may go without traffic either way (a client that stops reading). Default 30 s. */
  requestTimeoutMs?: number;
  /** An idle keep-alive connection is closed after this long. Default 5 s. */
  keepAliveTimeoutMs?: number;
  /**
   * Requests of one address (addressKey: IPv4 as it is, IPv6 by its /64), WebSocket upgrades
   * aside (the hub paces those): a token bucket of `requestBurstPerAddress` refilled at
   * `requestsPerAddressPerSecond`; a request that finds it empty answers 429 with Retry-After,
   * before anything else is done. Probes have a bucket of their own (RouteOptions.probe), and so
   * do requests without the token (or the session) when there is one.
   * Defaults 240 and 20 a second. Behind a reverse proxy every client has its address: raise both.
   */
  requestBurstPerAddress?: number;
  requestsPerAddressPerSecond?: number;
  /** The rate's clock (monotonic ms). Default performance.now (tests: a fake one). */
  now?: () => number;
  /**
   * Host names (the request's `Host` header, without the port) that are served; others get 403.
   * Default: on a loopback address, only loopback names (localhost, 127.0.0.1, ::1): a page
   * that rebinds its own name to 127.0.0.1 (DNS rebinding) is refused. On any other address:
   * every name (set this, or a token). `"*"` allows any.
   */
  allowedHosts?: readonly string[];
  /**
   * The origins browsers reach the server by through a reverse proxy that rewrites `Host`
   * (`https://argus.example.com`): a page of one is the server's own (its session cookie opens
   * the API routes and /ws, as from the `Host`'s origin), and, without allowedHosts, their host
   * names are served on a loopback address too. Never taken from a request (X-Forwarded-Host,
   * Forwarded: host=): any client can send those. Default: none.
   */
  publicOrigins?: readonly string[];
  log?: LogFn;
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|localhost)$/i;

/** The host name of a `Host` header, without port or brackets, lower case; undefined when absent. */
function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') > 0 ? h.indexOf(']') : undefined);
  const colon = h.indexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

const HOST_REFUSED = 'forbidden: this Host is not served (server.allowedHosts)\n';
const URL_REFUSED = 'bad request: the URL cannot be parsed\n';
/**
 * Whether the URL parser rewrote the request's path (`url`, parsed from `raw`): resolved a dot
 * segment (`/api/../metrics`, `/api/%2e%2e/metrics`), turned a backslash into a slash, escaped a
 * character. Such a path was served as the route it resolved to: a proxy in front that admits a
 * prefix by the path as sent (`/api/` only) let `/api/../metrics` reach /metrics. It names no
 * route (404, or 401 first without the token). Never throws.
 */
function pathRewritten(raw: string | undefined, url: URL): boolean {
  if (raw === undefined) return false;
  const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(raw);
  // `*` alone (OPTIONS *); Node's parser takes more after it, which the URL parser resolved as a
  // relative path: `*/../metrics` was served as /metrics.
  if (!raw.startsWith('/') && !authority) return raw !== '*';
  const sent = authority ? raw.slice(authority[0].length) : raw;
  const end = sent.search(/[?#]/);
  return ((end < 0 ? sent : sent.slice(0, end)) || '/') !== url.pathname;
}
const METHOD_REFUSED = 'method not allowed\n';

/** Whether requests naming `Host` are served (see HttpServerOptions.allowedHosts); `publicNames` the host names of publicOrigins, served by default too. */
export function hostAllowed(header: string | undefined, boundHost: string, allowed?: readonly string[], publicNames?: ReadonlySet<string>): boolean {
  const name = hostName(header);
  if (name === undefined) return true; // no Host header: not a browser
  if (allowed) return allowed.includes('*') || allowed.some((a) => a.toLowerCase() === name);
  const bound = hostName(boundHost.includes(':') && !boundHost.startsWith('[') ? `[${boundHost}]` : boundHost) ?? '';
  if (!LOOPBACK.test(bound)) return true;
  return LOOPBACK.test(name) || name === bound || publicNames?.has(name) === true;
}

export interface RunningServer {
  server: Server;
  /** http://host:port */
  url: string;
  port: number;
  /** Adds a route after start (later features register themselves). */
  route(path: string, handler: Route, options?: RouteOptions): void;
  /** Counts of what the server refused, for /metrics. */
  readonly stats: HttpServerStats;
  /** Whether a request carries the token (always true when none is configured): public routes say more to those that do. */
  authorized(req: IncomingMessage): boolean;
  /** The `Set-Cookie` value of the dashboard's session for this request (undefined without a token): see core/http.ts, sessionCookie. */
  sessionCookie(req: IncomingMessage): string | undefined;
  close(): Promise<void>;
}

export interface HttpServerStats {
  /** Requests answered 429: their address was over requestsPerAddressPerSecond. */
  requestsLimited: number;
}

const noop = () => {};

/** What a connection is doing, for admitConnections. */
interface ConnectionState {
  /** Requests received and not yet answered (more than one when a client pipelines). */
  busy: number;
  /** Handed to an upgrade handler (a WebSocket): the hub bounds those itself. */
  upgraded: boolean;
  /** Called once every request received is answered (afterAnswers). */
  then?: () => void;
}

/** The connections admitConnections keeps, and a way to act once a connection's answers are all sent. */
interface Connections {
  open: Map<Socket, ConnectionState>;
  /** Calls `f` once every request the connection sent is answered: at once when none is pending. */
  afterAnswers(socket: Socket, f: () => void): void;
  /**
   * Hands an upgraded connection to `f` once the requests before it are answered (not at all
   * when it is gone by then), counted as a WebSocket or, another protocol's, busy. Node hands an
   * upgrade over as soon as it is parsed: a plain answer (h2c) then threw ERR_HTTP_SOCKET_ASSIGNED
   * out of the listener (argus stopped), and a 101 or a refusal went ahead of those answers.
   */
  upgrade(socket: Socket, websocket: boolean, f: () => void): void;
}

/**
 * Bounds open connections at `max` without letting idle ones lock everyone out. Node's own
 * `server.maxConnections` refuses new connections once full: 256 sockets that connect and send
 * nothing (or a header byte every few seconds, each within the header timeout) would keep every
 * orchestrator probe and dashboard out for as long as they are renewed. Here, when full, a new
 * connection closes the one idle longest — connected without a complete request yet, or a
 * keep-alive between requests — the way nginx reuses its idle keep-alive connections. Holding
 * the server full then takes more new connections than a probe needs milliseconds to be
 * answered. Connections answering a request and WebSockets are never closed for room; when all
 * are such, the new connection is closed at once.
 */
/** Requests one connection may have in flight (HTTP/1.1 pipelining); browsers and Prometheus send one at a time. */
export const MAX_PIPELINED = 4;

function admitConnections(server: Server, max: number, log: LogFn): Connections {
  // Insertion order is idleness order: a connection moves to the end when its last request is answered.
  const open = new Map<Socket, ConnectionState>();
  const throttled = new ThrottledLog(log);
  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      let victim: Socket | undefined;
      for (const [s, st] of open) {
        if (st.busy === 0 && !st.upgraded) {
          victim = s;
          break;
        }
      }
      // None idle: one whose client does not read its answer (bytes wait in the socket that the
      // kernel would not take), the longest there. A few clients asking for a large answer
      // (/metrics of many cameras, a picture) and never reading it held the server full, every new
      // connection refused, for requestTimeoutMs, and again at will. One answering a request
      // (nothing waits to be written) or a WebSocket is still never closed for room.
      if (!victim) {
        for (const [s, st] of open) {
          if (!st.upgraded && s.writableLength > 0) {
            victim = s;
            break;
          }
        }
        if (victim) throttled.log('stalled', 'http: server.maxConnections reached, none idle: a connection whose client does not read its answer was closed for a new one', { max }, 'warn');
      }
      if (!victim) {
        throttled.log('refused', 'http: server.maxConnections reached, all busy: a new connection was closed', { max }, 'warn');
        socket.destroy();
        return;
      }
      throttled.log('evicted', 'http: server.maxConnections reached: the connection idle longest was closed for a new one', { max }, 'warn');
      open.delete(victim);
      victim.destroy();
    }
    open.set(socket, { busy: 0, upgraded: false });
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as Socket;
    const st = open.get(socket);
    if (!st) return;
    // Pipelined requests: every request of a received chunk is taken at once (up to ~1 400 of
    // `GET /metrics` in 64 KB), and each answer waits in memory for the client to read the ones
    // before it. One connection that sent 20 000 and never read grew the process by 500 MB, and
    // one that read stalled the event loop 17 s. Beyond MAX_PIPELINED in flight, the connection
    // is closed (its handlers skip a closed socket).
    if (++st.busy > MAX_PIPELINED) {
      throttled.log('pipelined', `http: a connection sent more than ${MAX_PIPELINED} requests before reading the answers; it was closed`, { max: MAX_PIPELINED }, 'warn');
      socket.destroy();
      return;
    }
    res.once('close', () => {
      st.busy = Math.max(0, st.busy - 1);
      if (st.busy === 0 && open.delete(socket) && !socket.destroyed) open.set(socket, st);
      if (st.busy === 0 && st.then) {
        const f = st.then;
        st.then = undefined;
        f();
      }
    });
  });
  const afterAnswers = (socket: Socket, f: () => void) => {
    const st = open.get(socket);
    if (st && st.busy > 0 && !socket.destroyed) st.then = f;
    else f();
  };
  return {
    open,
    afterAnswers,
    upgrade: (socket, websocket, f) =>
      afterAnswers(socket, () => {
        if (socket.destroyed) return;
        const st = open.get(socket);
        // Another protocol's upgrade is answered as a plain request (answerUpgradeAsPlain), and
        // closed after it: busy until then, as a plain request is (no 'request' event counts it).
        // It was taken for idle, and a new connection arriving when the server was full closed it mid-answer.
        if (st && websocket) st.upgraded = true;
        else if (st) st.busy++;
        f();
      }),
  };
}

/** The upgrade route of `path` (own properties only: `/constructor` is no route), in its object form. */
function upgradeRoute(upgrades: HttpServerOptions['upgrades'], path: string): UpgradeRoute | undefined {
  if (!upgrades || !Object.hasOwn(upgrades, path)) return undefined;
  const h = upgrades[path];
  return typeof h === 'function' ? { upgrade: h } : h;
}

/** Whether a request asks to become a WebSocket (`Upgrade: websocket`, any case, in a list too). */
function webSocketUpgrade(req: IncomingMessage): boolean {
  const up = req.headers.upgrade;
  return typeof up === 'string' && up.split(',').some((p) => p.trim().toLowerCase() === 'websocket');
}

/**
 * A request that asked for an upgrade other than a WebSocket (h2c), answered as a plain request
 * on the socket Node has let go of: its parser is gone, so the connection closes after the answer
 * (`Connection: close`), and the idle bound Node no longer applies to it is set again.
 */
function answerUpgradeAsPlain(req: IncomingMessage, socket: Socket, idleMs: number, handle: (req: IncomingMessage, res: ServerResponse) => void, fail: (res: ServerResponse, e: unknown) => void): void {
  socket.setTimeout(idleMs, () => socket.destroy());
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    socket.destroySoon();
  });
  res.once('close', () => {
    if (!res.writableFinished) socket.destroy();
  });
  try {
    handle(req, res);
  } catch (e) {
    fail(res, e);
  }
}

/**
 * Header lines rawRequestHead reads, at most: a browser sends some twenty. Past a request line too
 * long Node parsed nothing, and a read of 64 KiB holds ~16 000 lines.
 */
export const RAW_HEAD_MAX_LINES = 100;

/** The headers a route's CORS reads (RouteOptions.cors: OriginPolicy.crossOrigin). */
const CORS_HEADERS = new Set(['origin', 'referer', 'host', 'sec-fetch-site']);

/**
 * The target and the headers CORS reads of a request Node could not parse, from the bytes it was
 * parsing (the error's `rawPacket`), up to where it stopped (`bytesParsed`), whole lines only,
 * the first RAW_HEAD_MAX_LINES; undefined when they do not begin with a request line (the head came in several reads, and its
 * start is gone). A name sent twice reads as Node reads it (`a, b`: no origin at all). Never throws.
 */
export function rawRequestHead(raw: unknown, parsed?: number): { url: string; headers: Record<string, string> } | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const end = Math.min(raw.length, typeof parsed === 'number' && parsed >= 0 ? parsed : raw.length, 1 << 20);
  const text = raw.toString('latin1', 0, end);
  const line = /^[A-Z]{1,20} ([\x21-\x7e]+) HTTP\/1\.[01]\r\n/.exec(text);
  if (!line) return undefined;
  const headers: Record<string, string> = {};
  for (let at = line[0].length, n = 0; n < RAW_HEAD_MAX_LINES; n++) {
    const eol = text.indexOf('\r\n', at);
    if (eol <= at) break; // a cut line, or the blank line that ends the head
    // Within the line: searched to the end of the bytes, each line without a colon scanned all
    // that followed it (a 431's request line, then 16 000 lines `a`: 12 ms of the event loop a request).
    const colon = at + text.slice(at, eol).indexOf(':');
    // A control character (a bare CR or LF, NUL) in a line: past where Node stopped (a 431's
    // request line too long) nothing checked these bytes, and a value that held one was written
    // into the answer (`Origin: foo:x<LF>Set-Cookie: …` under allowedOrigins "*"): no head then.
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(text.slice(at, eol))) return undefined;
    if (colon > at) {
      const name = text.slice(at, colon).toLowerCase();
      const value = text.slice(colon + 1, eol).trim();
      if (CORS_HEADERS.has(name)) headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    at = eol + 2;
  }
  return { url: line[1], headers };
}

/** A browser's top-level GET navigation that another site started (a link, or a redirect after one): `Sec-Fetch-Site: cross-site`. */
function foreignNavigation(req: IncomingMessage): boolean {
  return req.method === 'GET' && req.headers['sec-fetch-site'] === 'cross-site' && req.headers['sec-fetch-mode'] === 'navigate' && req.headers['sec-fetch-dest'] === 'document';
}

/**
 * The headers of a page's 401 that reload it once (RouteOptions.page): for a navigation another
 * site started, with no token in its URL, `Refresh: 0`, and a marker cookie (SameSite=Lax, which
 * such a navigation carries, 10 s) that keeps a browser which took the reload for a foreign
 * navigation too from reloading for ever. Undefined otherwise.
 */
function reloadOnce(req: IncomingMessage, url: URL): Record<string, string> | undefined {
  const marker = `${sessionCookieName(req)}_reload`;
  if (url.searchParams.has('token') || !foreignNavigation(req) || requestCookies(req, marker).length > 0) return undefined;
  return { refresh: '0', 'set-cookie': `${marker}=1; Path=/; Max-Age=10; HttpOnly; SameSite=Lax` };
}

/** 405 for any method but GET and HEAD; the body (if any) is not read: the connection is closed after the answer. */
function methodNotAllowed(res: ServerResponse): void {
  plain(res, 405, METHOD_REFUSED, { allow: 'GET, HEAD', connection: 'close' });
}

/** Whether a request announces a body: chunked (any Transfer-Encoding), or a Content-Length other than 0. */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}


/**
 * A text answer of the server's own (an error, a refusal, a redirect's words), its Content-Length
 * said (in bytes: a reason may hold more than ASCII). Headers written with writeHead are sent at
 * once, so Node could not count the body: every such answer came chunked, and a HEAD of one said
 * no length.
 */
export function plain(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...DATA_HEADERS, 'content-length': String(Buffer.byteLength(body)), ...headers }).end(body);
}

/** Why a port cannot be listened on, by the error's code: what to change. */
const LISTEN_HINTS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'another program listens there, another argus perhaps: set server.port (or ARGUS_HTTP_PORT) to a free one',
  EADDRNOTAVAIL: 'server.host is not an address of this machine: 127.0.0.1, 0.0.0.0 (every address), or one of its own',
  ENOTFOUND: 'server.host is a name that does not resolve: an address, or a name of this machine',
  EAI_AGAIN: 'server.host is a name the resolver could not look up now (no answer from DNS): an address, or a name of /etc/hosts',
};

/**
 * What to change where listening on `port` failed with `code`. EACCES is a privileged port only
 * below 1024: above it, the system's policy refuses it (SELinux, AppArmor, or
 * net.ipv4.ip_unprivileged_port_start raised), and "set server.port to 1024 or above" was wrong.
 */
function listenHint(code: string | undefined, port: number): string | undefined {
  if (code === 'EACCES') {
    return port > 0 && port < 1024
      ? 'a port below 1024 needs root (or CAP_NET_BIND_SERVICE): set server.port (or ARGUS_HTTP_PORT) to 1024 or above'
      : "the system refuses this port to argus's user (a security policy such as SELinux or AppArmor, or net.ipv4.ip_unprivileged_port_start above it): allow it, or set server.port (or ARGUS_HTTP_PORT) to a port allowed";
  }
  return code && Object.hasOwn(LISTEN_HINTS, code) ? LISTEN_HINTS[code] : undefined;
}

/**
 * Listens `server` on `host`:`port`, or rejects with VAP_ERR_SERVER_LISTEN naming them, the
 * error's code and what to change (listenHint): the run's server, and `argus check`'s look at
 * the port (listenProblem).
 */
export function listenOn(server: NetServer, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      const hint = listenHint(e.code, port);
      reject(new ArgusError(ErrorCodes.SERVER_LISTEN, `server: cannot listen on ${host}:${port} (${e.code ?? e.message})${hint ? `: ${hint}` : ''}`, { cause: e }));
    });
    server.listen(port, host, () => resolve());
  });
}

/**
 * Whether the run's server could listen on `host`:`port` now: it listens there (listenOn, as
 * the run does) and closes at once. The error the run would stop with, or undefined. Bounded by
 * `timeoutMs`: a host name is looked up first, and a resolver that does not answer held
 * `argus check` past its --timeout for as long as the system's lookup took (a probe that
 * listens later is closed then). ETIMEDOUT, naming the host, at the bound.
 */
export async function listenProblem(host: string, port: number, timeoutMs = 10_000): Promise<ArgusError | undefined> {
  const probe = createNetServer();
  // Closed once listened on, also when that comes after the bound.
  const tried = listenOn(probe, host, port).then(
    async () => {
      await new Promise<void>((r) => (probe.listening ? probe.close(() => r()) : r()));
      return undefined;
    },
    (e: unknown) => e as ArgusError,
  );
  return withDeadline(tried, timeoutMs, 'late').catch(() => {
    const e = Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: 'ETIMEDOUT' });
    return new ArgusError(ErrorCodes.SERVER_LISTEN, `server: cannot listen on ${host}:${port} (ETIMEDOUT): server.host was not looked up within ${timeoutMs / 1000} s (the resolver does not answer): an address, or a name of /etc/hosts`, { cause: e });
  });
}

/**
 * The pipeline's HTTP server: small read-only routes and WebSocket upgrades, bound to 127.0.0.1
 * unless configured otherwise. Nothing a client sends can throw out of a handler: a URL that
 * cannot be parsed answers 400, a failing route 500, a method other than GET/HEAD 405; header
 * size, header and request time, and the number of connections are bounded.
 */
export async function startHttpServer(o: HttpServerOptions): Promise<RunningServer> {
  const log = o.log ?? noop;
  const routes = new Map<string, { handler: Route; public: boolean; page: boolean; probe: boolean; cors?: RouteOptions['cors'] }>(Object.entries(o.routes ?? {}).map(([p, h]) => [p, { handler: h, public: false, page: false, probe: false }]));
  const stats: HttpServerStats = { requestsLimited: 0 };
  const throttled = new ThrottledLog(log);
  const now = o.now ?? (() => performance.now());
  const burst = o.requestBurstPerAddress ?? SERVER_DEFAULTS.requestBurstPerAddress;
  const perSecond = o.requestsPerAddressPerSecond ?? SERVER_DEFAULTS.requestsPerAddressPerSecond;
  const requests = new KeyedTokenBuckets(burst, perSecond);
  const strangers = new KeyedTokenBuckets(burst, perSecond);
  const probes = new KeyedTokenBuckets(Math.max(burst, PROBE_RATE.burst), Math.max(perSecond, PROBE_RATE.perSecond));
  const requestTimeout = o.requestTimeoutMs ?? SERVER_DEFAULTS.requestTimeoutMs;
  // Node requires headersTimeout <= requestTimeout.
  const headersTimeout = Math.min(o.headersTimeoutMs ?? SERVER_DEFAULTS.headersTimeoutMs, requestTimeout);
  const keepAliveTimeout = o.keepAliveTimeoutMs ?? SERVER_DEFAULTS.keepAliveTimeoutMs;
  const session: SessionOptions = { maxAgeMs: o.sessionMaxAgeMs };
  const own = new OriginPolicy([], o.publicOrigins).own;
  const publicNames = new Set<string>();
  for (const origin of own) if (URL.canParse(origin)) publicNames.add(hostName(new URL(origin).host) ?? '');
  const served = (host: string | undefined) => hostAllowed(host, o.host, o.allowedHosts, publicNames);
  // The CORS of the routes under each first path segment (`/api/`) that answer other origins.
  const folders = new Map<string, NonNullable<RouteOptions['cors']>[]>();
  /**
   * The CORS of a path with no route: an origin that some route of its first segment admits
   * (`/api/…`: a typo of an API route) reads its 401 or 404, and its preflight is answered;
   * undefined outside such a segment (`/nothing`: the server's own pages').
   */
  const folderCors = (path: string): RouteOptions['cors'] => {
    const slash = path.indexOf('/', 1);
    const admits = slash > 0 ? folders.get(path.slice(0, slash + 1)) : undefined;
    return admits && ((req) => {
      for (const c of admits) {
        const origin = c(req);
        if (origin) return origin;
      }
      return undefined;
    });
  };

  /**
   * The CORS of a path: its route's, else (folderCors) that of the routes of its first segment: a
   * page that misspelt an API route (`/api/sourcs`) read a network error, which it took for "down".
   */
  const corsOf = (path: string): RouteOptions['cors'] => {
    const entry = routes.get(path);
    return entry ? entry.cors : folderCors(path);
  };
  const maxHeaderBytes = o.maxHeaderBytes ?? SERVER_DEFAULTS.maxHeaderBytes;

  const fail = (res: ServerResponse, e: unknown) => {
    log('http: a route failed', { error: redact(String((e as Error)?.message ?? e)) }, 'error');
    try {
      if (!res.headersSent) plain(res, 500, 'internal error\n', { connection: 'close' });
      else res.destroy();
    } catch {
      res.destroy();
    }
  };

  /** Requests with an `Expect` other than 100-continue (checkExpectation): 417 once the checks every request gets are made. */
  const unmet = new WeakSet<IncomingMessage>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    // A connection closed for pipelining too many (admitConnections): Node still emits every
    // request of the chunk it had received (1 700 of 20 000 in a test), each of which took a
    // token of the address's and counted as refused. Nothing is answered on a closed socket.
    if (req.socket.destroyed) return;
    const url = parseRequestUrl(req.url);
    const route = url && !pathRewritten(req.url, url) ? url.pathname : undefined;
    const entry = route === undefined ? undefined : routes.get(route);
    const cors = route === undefined ? undefined : corsOf(route);
    // A route that answers other origins (RouteOptions.cors) says so on every answer, its errors
    // included: a 401 (or 429, 405, 500) without Access-Control-Allow-Origin was a network error
    // to the page, which could not tell "send the token" from "the server is down". Set first, so
    // that each answer below (and the route's own) carries them.
    const crossOrigin = cors ? cors(req) : undefined;
    if (cors) {
      const cross = corsHeaders(crossOrigin);
      for (const name in cross) res.setHeader(name, cross[name]);
    }
    // No route takes a body. Node reads and discards one after the answer for the next request on
    // the connection: a client streaming a chunked body (to any route, 401 and 404 included) kept
    // the event loop reading ~1 GB/s of it, 60 % of a core, for requestTimeoutMs (30 s), again
    // on each new connection. Refused, and the connection closed, before anything else is done
    // (but the CORS headers above: the page that sent it reads why).
    if (hasBody(req)) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res);
      return plain(res, 413, 'content too large: requests here carry no body\n', { connection: 'close' });
    }
    // The address's rate before anything that costs (a route, the answer): /metrics took 1.3-1.9 ms
    // a request, and 4 keep-alive connections of one client held 72 % of a core with it, a 404 32 %.
    // Requests without the token (or the dashboard's session) are paced apart from those with it:
    // in one bucket, a flood without it from an address the operator shares (an office's NAT, a
    // proxy) used up the operator's requests, and its dashboard and scrapes were refused with 429.
    // Looking at the token costs microseconds (a hash; a session's HMAC), not what a 429 does.
    // The session cookie counts for the server's own pages only, as on /ws: a browser sends it
    // from every page of the same site (another port), and a page of an origin another route
    // admits (an <img src> of /api/snapshot, CORP cross-origin) loaded the operator's pictures
    // with it, without the token; one that nothing admits ran the routes with it (the browser
    // kept the answer from it). Such a page presents the token. The dashboard page itself
    // (`page`) opens with it from a link on such a page too: a navigation, not a read.
    const cookie = entry?.page === true || (crossOrigin === undefined && !foreignPage(req, own));
    const authorized = !o.token || (url !== undefined && requestAuthorized(req, url, o.token, cookie, session));
    const address = addressKey(req.socket.remoteAddress);
    const wait = (entry?.probe ? probes : authorized ? requests : strangers).take(address, now());
    if (wait > 0) {
      stats.requestsLimited++;
      throttled.log('rate', 'http: an address sent requests faster than server.requestsPerAddressPerSecond; refused with 429', { address, burst, perSecond }, 'warn');
      return plain(res, 429, 'too many requests from this address (server.requestsPerAddressPerSecond)\n', { 'retry-after': String(Math.ceil(wait / 1000)) });
    }
    // The probes answer any Host, as they answer anyone: an orchestrator names the address it
    // probes (a kubelet the pod's IP, Docker's healthcheck 127.0.0.1), never the names a browser
    // uses, and with server.allowedHosts set they were 403: the liveness probe failed and argus
    // was restarted in a loop. Such a request is not authorized (authorized, below): the probe's
    // status alone, not the source ids and errors a page that rebinds its name could read.
    if (!entry?.probe && !served(req.headers.host)) return plain(res, 403, HOST_REFUSED, { connection: 'close' });
    if (!url) return plain(res, 400, URL_REFUSED, { connection: 'close' });
    if (unmet.has(req)) return plain(res, 417, 'expectation failed: only Expect: 100-continue is understood (no request here carries a body)\n', { connection: 'close' });
    if (req.method === 'OPTIONS') {
      // `OPTIONS *` asks about the server: the methods it takes (it was 401, or 404 without a token).
      if (req.url === '*') return void res.writeHead(204, { allow: 'GET, HEAD', 'cache-control': 'no-store' }).end();
      // A preflight, before the token (it never carries one) and never reaching a route.
      if (req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined) return answerPreflight(req, res, cors);
    }
    // A plain request to /ws: 426 with `Upgrade: websocket` (RFC 9110 15.5.22), not 404, which
    // said there was no WebSocket here. The hub's own checks come first (a foreign Origin 403, its
    // token 401), then the server's token: the 426 tells only a client that may connect. Closed
    // after it (`Connection: Upgrade, close`): an explicit Connection header otherwise kept the
    // connection open, a client's `Connection: close` ignored.
    const up = entry || route === undefined ? undefined : upgradeRoute(o.upgrades, route);
    if (up) {
      const no = up.refusal?.(req, url);
      if (no) return plain(res, no.status, no.body ?? `${no.reason.toLowerCase()}\n`, no.headers);
      if (!authorized) return plain(res, 401, 'unauthorized: send Authorization: Bearer <token> or ?token=<token>\n', { 'www-authenticate': 'Bearer realm="argus"' });
      if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res);
      return plain(res, 426, 'upgrade required: this is a WebSocket endpoint (GET with Connection: Upgrade, Upgrade: websocket)\n', { upgrade: 'websocket', connection: 'Upgrade, close' });
    }
    if (!authorized && !entry?.public) {
      return plain(res, 401, 'unauthorized: send Authorization: Bearer <token> or ?token=<token>\n', { 'www-authenticate': 'Bearer realm="argus"', ...(entry?.page ? reloadOnce(req, url) : undefined) });
    }
    if (!entry) return plain(res, 404, 'not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return methodNotAllowed(res);
    // A session in use is renewed (a fresh issued-at and Max-Age): an open dashboard polls, and keeps it.
    const renewed = o.token ? sessionRenewal(req, url, o.token, session) : undefined;
    if (renewed) res.setHeader('set-cookie', renewed);
    Promise.resolve()
      .then(() => (req.socket.destroyed ? undefined : entry.handler(req, res)))
      .catch((e: unknown) => fail(res, e));
  };

  const server = createServer(
    {
      maxHeaderSize: maxHeaderBytes,
      headersTimeout,
      requestTimeout,
      keepAliveTimeout,
      // Node checks the two timeouts only this often (30 s by default): check often enough that
      // an idle socket goes within about headersTimeout.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    (req, res) => {
      try {
        handle(req, res);
      } catch (e) {
        fail(res, e);
      }
    },
  );
  server.headersTimeout = headersTimeout;
  server.requestTimeout = requestTimeout;
  server.keepAliveTimeout = keepAliveTimeout;
  // A socket with no traffic either way for requestTimeout is closed: a client that stops
  // reading its answer cannot hold a connection forever (WebSocket sockets are exempt: ws
  // clears the timeout on upgrade, and the hub's heartbeat covers them).
  server.timeout = requestTimeout;
  const { open, afterAnswers, upgrade } = admitConnections(server, o.maxConnections ?? SERVER_DEFAULTS.maxConnections, log);

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // After an upgrade Node leaves the socket without an error listener: a peer reset would
    // otherwise be an uncaught exception.
    socket.on('error', () => socket.destroy());
    // Node hands every request with an Upgrade header here, whatever the protocol: `curl --http2`
    // (Upgrade: h2c) got 404 from /metrics, /healthz and every route, answered as a failed
    // WebSocket. A server may ignore an upgrade it does not offer (RFC 9110 7.8): such a request
    // is answered as any other, its checks and limits included.
    const websocket = webSocketUpgrade(req);
    upgrade(socket as Socket, websocket, () => {
      // Called from a response's 'close' when it waited: nothing may throw out of it.
      try {
        if (websocket) upgradeWebSocket(req, socket, head);
        else answerUpgradeAsPlain(req, socket as Socket, requestTimeout, handle, fail);
      } catch (e) {
        log('http: an upgrade handler failed', { error: redact(String((e as Error)?.message ?? e)) }, 'error');
        socket.destroy();
      }
    });
  });
  const upgradeWebSocket = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    try {
      // Said as a plain request's answer is (the same words, DATA_HEADERS): it was a bare status line.
      if (!served(req.headers.host)) return refuseSocket(socket, 403, 'Forbidden', DATA_HEADERS, HOST_REFUSED);
      const url = parseRequestUrl(req.url);
      if (!url) return refuseSocket(socket, 400, 'Bad Request', DATA_HEADERS, URL_REFUSED);
      const h = pathRewritten(req.url, url) ? undefined : upgradeRoute(o.upgrades, url.pathname);
      if (!h) return refuseSocket(socket, 404, 'Not Found', DATA_HEADERS, 'not found\n');
      h.upgrade(req, socket, head);
    } catch (e) {
      log('http: an upgrade handler failed', { error: redact(String((e as Error)?.message ?? e)) }, 'error');
      refuseSocket(socket, 500, 'Internal Server Error', DATA_HEADERS, 'internal error\n');
    }
  };
  // CONNECT (a client taking argus for a forward proxy) is handed over raw, not as a request:
  // without a listener Node closed the socket without a word. 405, as any method but GET and HEAD.
  // After the answers of requests before it on the connection, as an upgrade (it went ahead of them).
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.on('error', noop);
    afterAnswers(socket as Socket, () => refuseSocket(socket, 405, 'Method Not Allowed', { ...DATA_HEADERS, allow: 'GET, HEAD' }, METHOD_REFUSED));
  });
  // `Expect: 100-continue`: Node answered `100 Continue` before any check, inviting the body that
  // the 413 below then refuses (handle: no route takes one). The request is handled as any other,
  // and nothing is invited. Another expectation: 417 as the server's other errors (Node's own was
  // chunked, without the data headers, and kept the connection).
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    // Without a body there is nothing the client could still send: kept alive as any request.
    // Node closes the connection of an answer sent without its `100 Continue` (the body might
    // follow), and a request pipelined after it was dropped. (Node's own field: the test fails
    // should it go.)
    if (!hasBody(req)) (res as ServerResponse & { _expect_continue?: boolean })._expect_continue = false;
    server.emit('request', req, res);
  });
  // Through handle, as any request: answered at once, it skipped the address's rate, the Host
  // check (a 417 to any name) and the connection's count of answers in flight.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    unmet.add(req);
    server.emit('request', req, res);
  });
  const refused = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: unknown; bytesParsed?: number }, socket: Duplex) => {
    // Node removed its own error listener before emitting this one.
    socket.on('error', noop);
    // Answered: what the parser refused, and a timeout. A fault of the socket itself (ECONNRESET,
    // EPIPE, ETIMEDOUT) was answered `400 Bad Request` too, to a peer that sent nothing wrong.
    if (!/^HPE_/.test(err.code ?? '') && err.code !== 'ERR_HTTP_REQUEST_TIMEOUT') {
      socket.destroy();
      return;
    }
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    // Node parses what comes after the fault too, and says so again for each chunk: one answer.
    if (refused.has(socket)) return;
    refused.add(socket);
    // Answered as every other error of the server is (plain): a body that says why and names the
    // setting, DATA_HEADERS, and CORS to a page of an origin the path's routes admit, where the
    // bytes Node was parsing show it. It was a bare status line: a page's fetch with a cookie or
    // a query too large read a network error (no Access-Control-Allow-Origin), which it took for
    // "down", and a script read no reason.
    let status = 400;
    let reason = 'Bad Request';
    let body = `bad request: the request cannot be read as HTTP/1.1${/^HPE_[A-Z_]{1,40}$/.test(err.code ?? '') ? ` (${err.code})` : ''}\n`;
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      [status, reason] = [431, 'Request Header Fields Too Large'];
      body = `request header fields too large: the request line and headers are over ${maxHeaderBytes} bytes (server.maxHeaderBytes)\n`;
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      [status, reason] = [408, 'Request Timeout'];
      body = `request timeout: the headers did not come within ${headersTimeout} ms (server.headersTimeoutMs), or the whole request within ${requestTimeout} ms (server.requestTimeoutMs)\n`;
    }
    let cross: Record<string, string> = {};
    try {
      // Past where Node stopped only for a head too large (a query that long: the parser stops
      // in the request line), whose bytes are well formed; a malformed one's, up to its fault.
      const head = rawRequestHead(err.rawPacket, err.code === 'HPE_HEADER_OVERFLOW' ? undefined : err.bytesParsed);
      const url = head && parseRequestUrl(head.url);
      const cors = url ? corsOf(url.pathname) : undefined;
      if (head && cors) cross = corsHeaders(cors(head as IncomingMessage));
    } catch {
      // no CORS then: the answer itself never fails
    }
    // After the answers of the requests before it (pipelined), which are valid: written at once,
    // the refusal came first, and the client read it as the first request's answer (or, its
    // headers sent, that answer was cut off); the connection closes after it.
    afterAnswers(socket as Socket, () => refuseSocket(socket, status, reason, { ...DATA_HEADERS, ...cross }, body));
  });
  await listenOn(server, o.host, o.port);
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
    stats,
    route: (path, handler, options) => {
      routes.set(path, { handler, public: options?.public ?? false, page: options?.page ?? false, probe: options?.probe ?? false, cors: options?.cors });
      const slash = path.indexOf('/', 1);
      if (options?.cors && slash > 0) {
        const folder = path.slice(0, slash + 1);
        const admits = folders.get(folder) ?? [];
        if (!admits.includes(options.cors)) folders.set(folder, [...admits, options.cors]);
      }
    },
    authorized: (req) => {
      // A Host that is not served (a probe's, answered all the same) sees what a request without the token does.
      if (!served(req.headers.host)) return false;
      if (!o.token) return true;
      const url = parseRequestUrl(req.url);
      return url !== undefined && requestAuthorized(req, url, o.token, !foreignPage(req, own), session);
    },
    sessionCookie: (req) => (o.token ? sessionCookie(req, o.token, session) : undefined),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections?.();
        // Upgraded sockets too, which closeAllConnections leaves: their handlers (the WebSocket
        // hub) closed theirs before; one left open kept close() from returning, and the process
        // from exiting, for as long as its client stayed.
        for (const socket of open.keys()) socket.destroy();
      }),
  };
}
