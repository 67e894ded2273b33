import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

// Request helpers shared by the HTTP server and the WebSocket sink's upgrade handling.

const noop = () => {};

/** The request target as a URL, or undefined when it cannot be parsed (e.g. `//x:99999`). Never throws. */
export function parseRequestUrl(raw: string | undefined): URL | undefined {
  try {
    return new URL(raw ?? '/', 'http://x');
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

/**
 * The cookie's value for a token: an HMAC of a fixed label keyed by the token, not the token
 * itself. Stateless: it survives a restart of the process (the dashboard reconnects on its own)
 * and stops working when the token changes. It opens what the token opens, but cannot be sent
 * as `Bearer` or `?token=`; any other service on the host (cookies are not per port) that is
 * sent it learns no token of argus's, but can send the cookie back, which opens argus until the
 * token changes (README, "The dashboard's session cookie").
 */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('argus dashboard session v1', 'utf8').digest('base64url');
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

/**
 * Whether a request carries the token: `?token=` or `Authorization: Bearer …` (scripts, the
 * first visit of a browser), else, unless `cookie` is false, the dashboard's session cookie (any
 * of that name). A token that is presented
 * decides on its own: a wrong `?token=` is refused even beside a good cookie.
 */
export function requestAuthorized(req: IncomingMessage, url: URL | undefined, token: string, cookie = true): boolean {
  const given = requestToken(req, url);
  if (given !== undefined) return tokenMatches(given, token);
  if (!cookie) return false;
  // Any of the cookies of the name: the first alone let a cookie another port's page set lock the dashboard out.
  const session = sessionValue(token);
  return requestCookies(req, sessionCookieName(req)).some((c) => tokenMatches(c, session));
}

/**
 * The `Set-Cookie` of the dashboard's session: HttpOnly (no script of the page reads it),
 * SameSite=Strict (no other site's page or link sends it), Path=/, Secure when the request came
 * over TLS (to argus itself, or to a proxy in front that says so in `X-Forwarded-Proto` or
 * `Forwarded`: a client that lies about it only keeps its own browser from storing the cookie).
 * No Max-Age or Expires: it ends with the browser's session.
 */
export function sessionCookie(req: IncomingMessage, token: string): string {
  const tls = (req.socket as Socket & { encrypted?: boolean }).encrypted === true || forwardedProto(req) === 'https';
  return `${sessionCookieName(req)}=${sessionValue(token)}; Path=/; HttpOnly; SameSite=Strict${tls ? '; Secure' : ''}`;
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
 * Answers a raw socket (an upgrade that is refused, a request that cannot be parsed) and closes
 * it: the answer is written, the socket ended and destroyed once flushed — or after 2 s at
 * the latest, so a peer that never reads cannot keep it open. Never throws.
 */
export function refuseSocket(socket: Duplex, status: number, reason: string, headers: Record<string, string> = {}): void {
  socket.on('error', noop);
  try {
    if (socket.writable) {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n${extra}\r\n`);
    }
    const s = socket as Socket;
    if (typeof s.destroySoon === 'function') s.destroySoon();
    else socket.end();
  } catch {
    socket.destroy();
    return;
  }
  setTimeout(() => socket.destroy(), 2000).unref();
}

