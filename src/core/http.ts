import { createHash, timingSafeEqual } from 'node:crypto';
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

