import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { now as monotonicEpochMs } from './clock.js';

// Request helpers shared by the HTTP server and the WebSocket sink's upgrade handling.

const noop = () => {};

/**
 * The address a client counts under, for every per-address bound (the WebSocket hub's
 * maxClientsPerAddress and handshake rate, the HTTP server's request rate): an IPv4 address as
 * it is (an IPv4-mapped IPv6 one, `::ffff:10.0.0.1`, as `10.0.0.1`), an IPv6 one by its /64 (a
 * host is given a /64: one address each would bound nothing). Never throws.
 */
export function addressKey(remote: string | undefined): string {
  if (!remote) return '?';
  const a = remote.toLowerCase().replace(/%.*$/, '');
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (v4) return v4[1];
  if (!a.includes(':')) return a;
  const [head, tail] = a.split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/**
 * The request target as a URL, or undefined when it cannot be parsed (e.g. `http://x:99999/`).
 * Never throws. A path (origin-form) is a path: resolved against a base, `//healthz` (a probe's
 * URL joined with one slash too many) was read as the host `healthz` and the path `/`, and was
 * answered the dashboard page with 200, whatever /healthz said; `//x/metrics` was /metrics.
 */
export function parseRequestUrl(raw: string | undefined): URL | undefined {
  try {
    if (raw === undefined || raw.startsWith('/')) return new URL(`http://x${raw ?? '/'}`);
    return new URL(raw, 'http://x');
  } catch {
    return undefined;
  }
}

/**
 * The token a request presents: `?token=` or `Authorization: Bearer …`. In the query a `+` is
 * itself, not a space (form encoding's): a token holds no space (the schema refuses one), and a
 * base64 token pasted into the address bar (`?token=ab+cd/e==`) was read as `ab cd/e==` and refused.
 */
export function requestToken(req: IncomingMessage, url: URL | undefined): string | undefined {
  const q = url?.searchParams.get('token')?.replace(/ /g, '+');
  if (q) return q;
  const auth = req.headers.authorization;
  const m = typeof auth === 'string' ? /^Bearer[ \t]+(\S+)\s*$/i.exec(auth) : null;
  return m?.[1];
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/**
 * The dashboard's session cookie. A browser opens the dashboard once as `/?token=…`; the server
 * answers with this cookie and a redirect to the same URL without the token, so the token is in
 * no history, bookmark, screenshot or link of the page. Its name carries the port the browser
 * sent the request to (the `Host` header's): cookies are not kept per port, and two argus
 * processes on one host (a cluster's workers) must not replace each other's.
 */
export function sessionCookieName(req: IncomingMessage): string {
  let port = '';
  try {
    port = req.headers.host ? new URL(`http://${req.headers.host}`).port : '';
  } catch {
    // a Host that is no host: no port in the name (hostAllowed refuses such a request anyway)
  }
  return port ? `argus_session_${port}` : 'argus_session';
}

/** How long a dashboard session cookie lasts unused, by default (server.sessionMaxAgeMs): 12 hours. */
export const SESSION_MAX_AGE_MS = 12 * 3_600_000;

/**
 * The sessions' clock (epoch ms): the wall clock as it was when the process started, run on by
 * the monotonic clock (core/clock.ts, now). A step of the system clock (an NTP correction, an
 * operator's `date -s`) moves no cookie's age: stepped back, it made every open session's cookie
 * come "from the future", and refused it. (A cookie of a process started before such a step: see
 * sessionAge.)
 */
export const sessionClock: () => number = monotonicEpochMs;

/**
 * The cookie's value for a token, issued at `issuedAtS` (epoch seconds): `<issuedAtS>.<mac>`,
 * the mac an HMAC-SHA256 of a fixed label and the issued-at keyed by the token, not the token
 * itself. Stateless: it survives a restart of the process (the dashboard reconnects on its own),
 * stops working when the token changes, and ends `maxAgeMs` after it was issued (sessionAge): a
 * cookie that leaked (any other service on the host is sent it: cookies are not per port) opens
 * argus for that long at most unless it is used, and each use renews it (sessionRenewal). It
 * opens what the token opens, but cannot be sent as `Bearer` or `?token=` (README, "The
 * dashboard's session cookie").
 */
export function sessionValue(token: string, issuedAtS: number): string {
  const at = String(Math.floor(issuedAtS));
  return `${at}.${createHmac('sha256', token).update(`argus dashboard session v2 ${at}`, 'utf8').digest('base64url')}`;
}

/**
 * The age in ms of a session cookie's value that the token issued and that is within `maxAgeMs`
 * at `nowMs`; undefined for any other value
 * (wrong mac, expired, malformed, the unversioned cookie of releases before lifetimes). Constant
 * time in the mac. Never throws.
 */
export function sessionAge(value: string, token: string, maxAgeMs: number, nowMs: number): number | undefined {
  const dot = value.indexOf('.');
  const at = value.slice(0, dot);
  if (dot <= 0 || at.length > 12 || value.length - dot !== 44 || !/^\d+$/.test(at)) return undefined;
  // The cheap checks first: only a value of the right shape and age costs an HMAC.
  // A cookie from ahead (up to a lifetime) counts as new: only this server issues one, so it was
  // issued on a clock that was ahead then (a process started before the system clock was stepped
  // back: in-process steps the session clock ignores). Refused, it ended every open session at
  // the next restart after such a step. It lives a lifetime longer than it would have at most,
  // never for ever: one from further ahead is refused.
  const ageMs = nowMs - Number(at) * 1000;
  if (ageMs > maxAgeMs || ageMs < -maxAgeMs) return undefined;
  return tokenMatches(value, sessionValue(token, Number(at))) ? Math.max(0, ageMs) : undefined;
}

/**
 * The values of the cookies named `name` in the request's `Cookie` header, in its order (none:
 * empty). There can be several: cookies are not kept per port, so a page of another port of the
 * host can set one of the same name with a longer Path, which the browser sends first. Never throws.
 */
export function requestCookies(req: IncomingMessage, name: string): string[] {
  const header = req.headers.cookie;
  if (typeof header !== 'string') return [];
  const found: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) found.push(part.slice(eq + 1).trim());
  }
  return found;
}

/** The dashboard session's lifetime and clock, for requestAuthorized and sessionCookie. */
export interface SessionOptions {
  /** A cookie unused for this long no longer opens anything. Default SESSION_MAX_AGE_MS. */
  maxAgeMs?: number;
  /** Epoch ms. Default sessionClock: the wall clock's at the process's start (the cookie outlives the process), run on by the monotonic clock. */
  now?: () => number;
}

/**
 * Session cookies of one request looked at, at most. A browser sends a handful of one name at
 * most (one per Path that is a prefix of the request's, per Domain); a client that filled its
 * 16 KB of headers with ~200 of them cost ~4 ms of the event loop per request before it was
 * refused (an HMAC each), 60 times an ordinary 401.
 */
export const MAX_SESSION_COOKIES = 16;

/**
 * The age in ms of the youngest valid session cookie the request carries (any of the first
 * MAX_SESSION_COOKIES of that name), or undefined when it carries none. Any of them: the first
 * alone let a cookie another port's page set lock the dashboard out.
 */
export function requestSessionAge(req: IncomingMessage, token: string, o: SessionOptions = {}): number | undefined {
  const maxAgeMs = o.maxAgeMs ?? SESSION_MAX_AGE_MS;
  const nowMs = (o.now ?? sessionClock)();
  let youngest: number | undefined;
  for (const c of requestCookies(req, sessionCookieName(req)).slice(0, MAX_SESSION_COOKIES)) {
    const age = sessionAge(c, token, maxAgeMs, nowMs);
    if (age !== undefined && (youngest === undefined || age < youngest)) youngest = age;
  }
  return youngest;
}

/**
 * Whether a request carries the token: `?token=` or `Authorization: Bearer …` (scripts, the
 * first visit of a browser), else, unless `cookie` is false, a dashboard session cookie (any of
 * that name) within its lifetime. A token that is presented decides on its own: a wrong
 * `?token=` is refused even beside a good cookie.
 */
export function requestAuthorized(req: IncomingMessage, url: URL | undefined, token: string, cookie = true, session: SessionOptions = {}): boolean {
  const given = requestToken(req, url);
  if (given !== undefined) return tokenMatches(given, token);
  return cookie && requestSessionAge(req, token, session) !== undefined;
}

/**
 * The `Set-Cookie` of a dashboard session issued now: HttpOnly (no script of the page reads it),
 * SameSite=Strict (no other site's page or link sends it), Path=/, Max-Age its lifetime (the
 * browser drops it then too; the server refuses it after that whatever the browser does),
 * Secure when the request came over TLS (to argus itself, or to a proxy in front that says so in
 * `X-Forwarded-Proto` or `Forwarded`: a client that lies about it only keeps its own browser from
 * storing the cookie).
 */
export function sessionCookie(req: IncomingMessage, token: string, o: SessionOptions = {}): string {
  const tls = (req.socket as Socket & { encrypted?: boolean }).encrypted === true || forwardedProto(req) === 'https';
  const maxAgeS = Math.floor((o.maxAgeMs ?? SESSION_MAX_AGE_MS) / 1000);
  return `${sessionCookieName(req)}=${sessionValue(token, (o.now ?? sessionClock)() / 1000)}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${tls ? '; Secure' : ''}`;
}

/**
 * The renewed `Set-Cookie` for a request that the session cookie alone authenticated, once a
 * tenth of the lifetime has passed since that cookie was issued (so an open dashboard, which
 * polls, keeps its session, and the header is sent a few times per lifetime, not on every poll);
 * undefined otherwise (a token presented, no valid cookie, a cookie still new).
 */
export function sessionRenewal(req: IncomingMessage, url: URL | undefined, token: string, o: SessionOptions = {}): string | undefined {
  if (requestToken(req, url) !== undefined) return undefined;
  const age = requestSessionAge(req, token, o);
  if (age === undefined || age < (o.maxAgeMs ?? SESSION_MAX_AGE_MS) / 10) return undefined;
  return sessionCookie(req, token, o);
}

/** The protocol a proxy in front says the client used (`X-Forwarded-Proto`, else `Forwarded: proto=`), lower case, the first hop's. */
function forwardedProto(req: IncomingMessage): string | undefined {
  const xf = req.headers['x-forwarded-proto'];
  if (typeof xf === 'string' && xf) return xf.split(',')[0].trim().toLowerCase();
  const fwd = req.headers.forwarded;
  const m = typeof fwd === 'string' ? /(?:^|[;,\s])proto=("?)([a-z]+)\1/i.exec(fwd) : null;
  return m?.[2].toLowerCase();
}

/** Constant-time token comparison: both sides are hashed first, so neither length nor content leaks through timing. */
export function tokenMatches(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Headers of every answer that is data, not the dashboard page (JSON, /metrics, an alert's
 * snapshot, errors): kept in no cache; its type taken as sent, never sniffed; should a browser
 * ever render one as a page (a camera's error text in a reason holds markup), no script runs and
 * no page frames it; and no page of another origin may load it (`Cross-Origin-Resource-Policy`):
 * a page of another port of the host is same-site, so the browser sends it the SameSite=Strict
 * session cookie, and it could embed `/api/snapshot?id=` as an image (learning which alerts exist,
 * and their pictures' size) or `/api/sources` as a script. /api/snapshot alone answers a page of
 * an origin server.allowedOrigins admits cross-origin (server/routes.ts, RouteContext.snapshotOrigin).
 */
export const DATA_HEADERS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cross-origin-resource-policy': 'same-origin',
};

/**
 * Answers a raw socket (an upgrade that is refused, a request that cannot be parsed) and closes
 * it: the answer is written, the socket ended and destroyed once flushed — or after 2 s at
 * the latest, so a peer that never reads cannot keep it open. `body`, when given, is sent as
 * `text/plain` (its length in bytes said); a header whose name or value holds CR, LF or NUL is
 * left out. Never throws.
 */
export function refuseSocket(socket: Duplex, status: number, reason: string, headers: Record<string, string> = {}, body = ''): void {
  socket.on('error', noop);
  try {
    if (socket.writable) {
      // A header a caller took from a request and that holds a line break or NUL is left out:
      // written, it ended the line there and began one of the peer's (response splitting).
      const extra = Object.entries(headers)
        .filter(([k, v]) => !/[\r\n\0]/.test(k) && !/[\r\n\0]/.test(v))
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      const type = body ? 'Content-Type: text/plain; charset=utf-8\r\n' : '';
      socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`);
    }
    const s = socket as Socket;
    if (typeof s.destroySoon === 'function') s.destroySoon();
    else socket.end();
  } catch {
    socket.destroy();
    return;
  }
  // Let go once closed: the timer held the socket (and its buffers) for 2 s after it was gone.
  const t = setTimeout(() => socket.destroy(), 2000).unref();
  socket.once('close', () => clearTimeout(t));
}


/** An Origin header as a browser writes one for an http(s) page: scheme, host and port, no path, user or trailing slash. */
const ORIGIN_FORM = /^https?:\/\/[^/?#@\s\\]+$/i;

/** `HTTP://Example.com:80` → `http://example.com`, as a browser writes an Origin; anything that is not an http(s) URL is kept, lower-cased. */
export function normaliseOrigin(o: string): string {
  try {
    const u = new URL(o);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : o.toLowerCase();
  } catch {
    return o.toLowerCase();
  }
}

/**
 * The origin of the page a request comes from, as sent: its `Origin`, else (a plain `<img>`, a
 * no-cors load: a browser sends no Origin there) its `Referer`'s origin; undefined when it names
 * neither (not a browser, or a page that sends no Referer, as the dashboard's own) or its
 * Referer is no URL.
 */
function requestPage(req: IncomingMessage): string | undefined {
  const origin = req.headers.origin;
  if (typeof origin === 'string') return origin;
  const referer = req.headers.referer;
  if (typeof referer !== 'string') return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

/**
 * Whether an http(s) origin as sent is the one the request was sent to: its host:port the
 * request's `Host` (a proxy in front may speak https), or one of the origins the server is
 * reached by through a proxy that rewrites `Host` (server.publicOrigins, normalised: `own`).
 */
function ownOrigin(u: URL, host: string | undefined, own?: ReadonlySet<string>): boolean {
  if (own?.has(u.origin)) return true;
  try {
    return host !== undefined && new URL(`${u.protocol}//${host}`).host === u.host;
  } catch {
    return false; // a Host that is no host: not this origin
  }
}

/**
 * Whether a request comes from a page of another origin than the server's: its `Origin` (or a
 * plain `<img>`'s `Referer`) names one — another port of the host, `null` (a sandboxed frame), or
 * anything that is no `scheme://host[:port]`, or its `Sec-Fetch-Site` says so. A browser sends the SameSite=Strict session cookie
 * from every page of the same site: such a request presents the token (requestAuthorized's
 * `cookie` false), as /ws asks of it.
 */
export function foreignPage(req: IncomingMessage, own?: ReadonlySet<string>): boolean {
  // A browser that says where a request comes from (Sec-Fetch-Site: to https and loopback
  // addresses) says it of an <img referrerpolicy="no-referrer"> too, which names no page.
  const site = req.headers['sec-fetch-site'];
  if (site === 'same-site' || site === 'cross-site') return true;
  const page = requestPage(req);
  if (page === undefined) return false;
  let u: URL;
  try {
    u = new URL(page);
  } catch {
    return true;
  }
  return !((u.protocol === 'http:' || u.protocol === 'https:') && (req.headers.origin === undefined || ORIGIN_FORM.test(page)) && ownOrigin(u, req.headers.host, own));
}

/**
 * Which browser origins may use the server besides its own (server.allowedOrigins: exact
 * `scheme://host[:port]`, or `"*"`): the WebSocket hub's check of /ws and the API routes' CORS
 * (server/routes.ts, RouteContext.snapshotOrigin), one policy for both. It is the server's, not
 * the WebSocket sink's: built from the list by each, so the API routes answer an allowed origin
 * with the sink disabled too.
 */
export class OriginPolicy {
  private readonly any: boolean;
  private readonly listed: Set<string>;
  /** The server's own origins besides its `Host`'s (server.publicOrigins), normalised. */
  readonly own: ReadonlySet<string>;
  constructor(allowed: readonly string[] = [], publicOrigins: readonly string[] = []) {
    this.any = allowed.includes('*');
    this.listed = new Set(allowed.filter((x) => x !== '*').map(normaliseOrigin));
    this.own = new Set(publicOrigins.map(normaliseOrigin));
  }

  /**
   * Cross-site WebSocket hijacking: a page on another origin must not read the live stream.
   * No Origin header (not a browser): `none`. The Origin's host:port the Host the request was
   * sent to: `own`. Another origin listed (or any, with "*"): `allowed` (it must present the
   * token: the session cookie is the server's own pages'). Otherwise undefined: refused.
   */
  of(req: IncomingMessage): 'none' | 'own' | 'allowed' | undefined {
    const raw = req.headers.origin ?? req.headers['sec-websocket-origin'];
    if (raw === undefined) return 'none';
    return this.kind(typeof raw === 'string' ? raw : String(raw), req.headers.host);
  }

  /**
   * The origin of another site's page this policy admits, as a browser writes it (for
   * Access-Control-Allow-Origin), or undefined: the server's own origin needs nothing, and any
   * other is refused. A `fetch` or an `<img crossorigin>` names its page in `Origin`; a plain
   * `<img src>` sends none (a no-cors load), and its page is its `Referer`'s origin, which a page
   * cannot set to another's (a page that sends no Referer is taken for a foreign one). `null` (a
   * sandboxed page, a file) only when listed as such (by a program that builds its own list: the configuration refuses `null`), and `"*"` does not answer it.
   */
  crossOrigin(req: IncomingMessage): string | undefined {
    // Not Sec-Fetch-Site: Chromium sends none to a plain-http address that is not loopback.
    const origin = requestPage(req);
    if (origin === undefined) return undefined;
    // Named as a browser writes it (lower case, no default port): `HTTPS://Wall.Example:443` is
    // the allowed https://wall.example, and Access-Control-Allow-Origin must be that exactly.
    return this.kind(origin, req.headers.host) === 'allowed' ? normaliseOrigin(origin) : undefined;
  }

  /** `of`'s answer for an Origin as sent, `host` the request's Host. */
  private kind(origin: string, host: string | undefined): 'own' | 'allowed' | undefined {
    // `null` (a sandboxed frame, a file, a redirect's opaque origin) only when listed: "*" does not
    // answer it. /ws admitted it under "*" while the API routes refused it.
    if (origin === 'null') return this.listed.has('null') ? 'allowed' : undefined;
    const other = this.any ? 'allowed' : undefined;
    let u: URL;
    try {
      u = new URL(origin);
    } catch {
      return other;
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return this.listed.has(origin.toLowerCase()) ? 'allowed' : other;
    // An origin is `scheme://host[:port]` and nothing more: the URL parser took
    // `https://wall.example/ https://evil.example` (a path, a space) for https://wall.example.
    if (!ORIGIN_FORM.test(origin)) return other;
    if (ownOrigin(u, host, this.own)) return 'own';
    return this.listed.has(u.origin) ? 'allowed' : other;
  }
}
