import { readFile } from 'node:fs/promises';
import { connect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import { RelayDoor, type PeerCheck } from './relay-door.js';
import { AuthRewriter, placeholderQuery, PLACEHOLDER_USERINFO, secretParams, urlCredentials, type Credentials } from './rtsp-auth.js';

/** How long the relay waits for the camera to accept a connection (ffmpeg's own default waits as long as the OS does). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The most connections one HTTP relay carries at once (each holds a connection to the camera):
 * ffmpeg's playlist and segments, and an HLS master playlist's variants, each one; more are
 * refused (RelayDoor), so that no local process can use up argus's file descriptors or memory
 * through it.
 */
export const MAX_HTTP_RELAY_CONNECTIONS = 16;

/** An http(s):// URL's user part (to its last `@` before the path, as ffmpeg's av_url_split reads it), host and `:port`. */
const AUTHORITY = /^(https?:\/\/(?:[^/?#]*@)?)(\[[^\]]*\]|[^:/?#@]*)(:\d*)?/i;

/**
 * ffmpeg's TLS options a source's `inputArgs` may give (schema/input-args): through the relay,
 * ffmpeg speaks plain HTTP, so the relay makes the check they ask for, and they are not given to
 * ffmpeg (its plain HTTP leaves them unused, and ffmpeg then fails: "Option tls_verify not found").
 */
const RELAYED_TLS_OPTIONS: ReadonlySet<string> = new Set(['-tls_verify', '-ca_file']);

/** How an https:// camera's certificate is checked, as ffmpeg's `-tls_verify` (an int: not 0 checks) and `-ca_file` in `inputArgs` say (the last of each). */
export interface HttpTls {
  verify: boolean;
  /** The authorities' PEM file; without it, Node's list of public CAs. */
  ca?: string;
}

/** The check `inputArgs` ask of an https:// camera (HttpTls): none unless `-tls_verify` is given and not 0, as ffmpeg's default. */
export function httpTlsOf(inputArgs: readonly string[] | undefined): HttpTls {
  const args = inputArgs ?? [];
  const last = (name: string) => (args.includes(name) ? args[args.lastIndexOf(name) + 1] : undefined);
  const verify = last('-tls_verify');
  // (A value that is no number, which ffmpeg would have refused: checked, not taken as 0.)
  return { verify: verify !== undefined && Number(verify) !== 0, ca: last('-ca_file') };
}

/** Input options whose values the relay sends in ffmpeg's place (they may hold secrets: a token, a session cookie). */
const RELAYED_OPTIONS = new Set(['-headers', '-cookies']);

/**
 * A source's input arguments split: those ffmpeg is given (all but RELAYED_OPTIONS and
 * RELAYED_TLS_OPTIONS, each with its value), and the header lines the relay adds to each request
 * instead of `-headers` (its `Name: value` lines) and `-cookies` (one `Cookie` header of each
 * cookie's `name=value`; the relay reaches only the camera's own address, so their domain and
 * path need no matching).
 */
export function relayedOptions(args: readonly string[] = []): { kept: string[]; headers: string[] } {
  const kept: string[] = [];
  const headers: string[] = [];
  const cookies: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (RELAYED_TLS_OPTIONS.has(args[i])) {
      i++;
      continue;
    }
    if (!RELAYED_OPTIONS.has(args[i]) || i + 1 >= args.length) {
      kept.push(args[i]);
      continue;
    }
    const lines = args[++i].split(/\r?\n/).filter((l) => l.trim() !== '');
    if (args[i - 1] === '-headers') headers.push(...lines.filter((l) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/.test(l)));
    else cookies.push(...lines.map((l) => l.split(';')[0].trim()).filter((c) => c.includes('=')));
  }
  if (cookies.length) headers.push(`Cookie: ${cookies.join('; ')}`);
  return { kept, headers };
}

/** Whether an http(s):// camera holds anything to keep off ffmpeg's command line: a user and password or a secret query parameter in its URL, or `-headers` / `-cookies` in its input arguments. */
export function httpSecrets(url: string, inputArgs: readonly string[] = []): boolean {
  return /^https?:\/\//i.test(url) && (urlCredentials(url) !== undefined || secretParams(url).size > 0 || inputArgs.some((a) => RELAYED_OPTIONS.has(a)));
}

/**
 * An HTTP(S) camera's credentials kept off ffmpeg's command line, which every local user can
 * read (`ps`, /proc/PID/cmdline), as the RTSP relay does for RTSP cameras (rtsp-auth): ffmpeg
 * is given `http://argus:relay@127.0.0.1:<port>/<the camera's path and query>`, answers the
 * camera's 401 challenge with the placeholder (Basic, or Digest with the camera's realm and
 * nonce), and the relay rewrites each request's `Authorization` with the real user and password,
 * and its `Host` with the camera's, on its way to the camera. Replies pass as they are.
 *
 * Up to MAX_HTTP_RELAY_CONNECTIONS at once (an HLS playlist and its segments), each of argus's
 * own user only (RelayDoor), each to the camera's address; an `https://` camera's is TLS, its certificate
 * checked as ffmpeg's own HTTPS would (`tls`: none by default; `-tls_verify 1` and `-ca_file` in
 * the source's inputArgs, against the camera's name or address, before any request). A relative
 * redirect or segment comes back through the relay; one to an absolute URL is opened by ffmpeg
 * itself, past the relay and without credentials, as it would be without the relay (ffmpeg
 * takes a redirect's credentials from its URL only).
 */
export class HttpRelay {
  private readonly door: RelayDoor;
  private relayPort = 0;
  private readonly host: string;
  private readonly port: number;
  private readonly tls: boolean;
  private readonly cred: Credentials | undefined;
  /** Secret query parameters (name as written → the real value), given to ffmpeg as PLACEHOLDER_SECRET. */
  private readonly secrets: Map<string, string>;
  private readonly conns = new Set<Socket>();
  /** Why the camera could not be reached, for ffmpeg's error (it only sees the relay close). */
  upstreamError: string | undefined;
  /** An https:// camera's check (HttpTls), and its `ca` file's certificates, read by `listen`. */
  private readonly check: HttpTls;
  private ca: Buffer | undefined;

  /** Header lines added to each request (relayedOptions), each in place of one of the same name. */
  private readonly headers: string[];
  /** The camera's `host[:port]` as its `Host` header names it (ffmpeg's names the relay). */
  private readonly hostHeader: string;

  constructor(
    readonly url: string,
    options: { tls?: HttpTls; headers?: readonly string[]; peerCheck?: PeerCheck; log?: LogFn; maxConnections?: number; sendCredentialsTo?: readonly string[] } = {},
  ) {
    this.headers = [...(options.headers ?? [])];
    this.check = options.tls ?? { verify: false };
    const m = AUTHORITY.exec(url);
    this.host = (m?.[2] ?? '').replace(/^\[|\]$/g, '');
    this.tls = /^https:/i.test(url);
    this.cred = urlCredentials(url);
    this.secrets = secretParams(url);
    this.port = m?.[3] && m[3].length > 1 ? Number(m[3].slice(1)) : this.tls ? 443 : 80;
    this.hostHeader = `${m?.[2] ?? this.host}${m?.[3] && m[3].length > 1 ? m[3] : ''}`;
    this.door = new RelayDoor({
      accept: (down) => this.accept(down),
      maxOpen: options.maxConnections ?? MAX_HTTP_RELAY_CONNECTIONS,
      peerCheck: options.peerCheck,
      log: options.log,
      name: `the HTTP relay to ${this.address()}`,
    });
  }

  /** Starts listening; resolves with the URL ffmpeg is to open (the camera's, with the relay's host and port, and the placeholder). */
  async listen(): Promise<string> {
    if (this.tls && this.check.verify && this.check.ca) {
      const path = this.check.ca;
      this.ca = await readFile(path).catch((e: NodeJS.ErrnoException) => {
        throw new ArgusError(ErrorCodes.SOURCE_OPEN, `inputArgs -ca_file ${path}: cannot be read (${e.code ?? e.message})`);
      });
    }
    this.relayPort = await this.door.listen();
    return httpRelayUrl(this.url, this.relayPort);
  }

  private accept(down: Socket): void {
    let up: Socket;
    try {
      up = this.tls
        ? tlsConnect({ host: this.host, port: this.port, servername: isIP(this.host) ? undefined : this.host, rejectUnauthorized: this.check.verify, ...(this.ca ? { ca: this.ca } : {}) })
        : connect({ host: this.host, port: this.port });
    } catch (e) {
      // An address Node refuses outright (a port above 65535): this camera's failure alone.
      this.upstreamError = `${this.address()}: ${(e as Error).message}`;
      down.destroy();
      return;
    }
    up.on('error', (e: Error) => {
      this.upstreamError = `${this.address()}: ${e.message}`;
      down.destroy();
    });
    this.conns.add(down).add(up);
    const timer = setTimeout(() => {
      this.upstreamError = `${this.address()}: could not connect in ${CONNECT_TIMEOUT_MS / 1000} s`;
      up.destroy();
    }, CONNECT_TIMEOUT_MS);
    // (Not left running after either side closes: it held the process up to 10 s, and would set a stale upstreamError.)
    const forget = () => {
      clearTimeout(timer);
      this.conns.delete(down);
      this.conns.delete(up);
    };
    down.once('close', () => {
      up.destroy();
      forget();
    });
    up.once('close', () => {
      down.end();
      forget();
    });
    // ffmpeg's first request waits in its socket until the camera is reached.
    up.once(this.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      this.upstreamError = undefined;
      const rewriter = new AuthRewriter(this.cred, (head) => this.edit(head), { secrets: this.secrets });
      pipe(down, up, (chunk) => rewriter.push(chunk));
      pipe(up, down, (chunk) => [chunk]);
      down.resume();
    });
  }

  /**
   * A request head from ffmpeg as the camera is to see it (after AuthRewriter put the secret
   * query values back in its line and Digest `uri`): its `Host` the camera's `host[:port]`
   * (ffmpeg names the relay), and the source's own headers.
   */
  private edit(head: string): string {
    const host = this.hostHeader;
    const line = head.search(/\r?\n/);
    const first = line < 0 ? head : head.slice(0, line);
    let rest = line < 0 ? '' : head.slice(line);
    rest = rest.replace(/(\r?\n)(host)([ \t]*:[ \t]*)([^\r\n]*)/i, (_m, nl: string, name: string, sep: string) => `${nl}${name}${sep}${host}`);
    if (this.headers.length) {
      // The source's own headers, each in place of one ffmpeg wrote of the same name (its User-Agent), before the blank line.
      const names = new Set(this.headers.map((h) => h.slice(0, h.indexOf(':')).trim().toLowerCase()));
      const lines = rest.split(/\r?\n/).filter((l, i) => i === 0 || l === '' || !names.has(l.slice(0, l.indexOf(':')).trim().toLowerCase()));
      const blank = lines.indexOf('', 1);
      lines.splice(blank < 0 ? lines.length : blank, 0, ...this.headers);
      rest = lines.join('\r\n');
    }
    return first + rest;
  }

  /** The input arguments ffmpeg is given: the source's own but those the relay sends instead (relayedOptions). */
  ffmpegInputArgs(args: readonly string[] | undefined): string[] | undefined {
    return args && relayedOptions(args).kept;
  }

  private address(): string {
    return `${this.host.includes(':') ? `[${this.host}]` : this.host}:${this.port}`;
  }

  /** ffmpeg's text (its log) naming the camera instead of the relay, with what went wrong in reaching it. */
  unrelay(text: string): string {
    if (!this.relayPort) return text;
    const m = AUTHORITY.exec(this.url);
    const info = /^https?:\/\/([^/?#]*)@/i.exec(this.url)?.[1];
    const scheme = this.tls ? 'https' : 'http';
    const named = text
      .replace(new RegExp(`http://(?:${PLACEHOLDER_USERINFO}@)?127\\.0\\.0\\.1:${this.relayPort}\\b`, 'g'), `${scheme}://${info !== undefined ? `${info}@` : ''}${m?.[2] ?? this.host}${m?.[3] ?? ''}`)
      .split(`127.0.0.1:${this.relayPort}`)
      .join(this.address())
      .split(`127.0.0.1 port ${this.relayPort}`)
      .join(`${this.host} port ${this.port} (through argus's relay)`);
    return this.upstreamError ? `${named}\ncamera: ${this.upstreamError}` : named;
  }

  /** Ends the relayed connections (their ffmpeg is done). */
  drop(): void {
    for (const s of this.conns) s.destroy();
    this.conns.clear();
  }

  /** Stops listening and ends every relayed connection. */
  close(): void {
    this.door.close();
    this.drop();
  }
}

/** Bytes from `from` to `to` through `rewrite`, pausing `from` while `to` is full. */
function pipe(from: Socket, to: Socket, rewrite: (chunk: Buffer) => Buffer[]): void {
  from.on('data', (chunk: Buffer) => {
    let room = true;
    for (const piece of rewrite(chunk)) room = to.write(piece) && room;
    if (!room) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  from.on('end', () => to.end());
}

/**
 * `url` with its host and port replaced by the relay's (path and query kept); plain `http://`
 * (the relay speaks TLS to an `https://` camera). A user and password become
 * PLACEHOLDER_USERINFO (the relay puts the real ones in ffmpeg's answers); a user alone is kept.
 * The value of each secret query parameter (`pwd=`, `token=`, …) becomes PLACEHOLDER_SECRET.
 */
export function httpRelayUrl(url: string, port: number): string {
  const relayed = url.replace(AUTHORITY, (_m, user: string) => {
    const scheme = /^https?:\/\//i.exec(user)![0];
    const info = user.slice(scheme.length, -1);
    const kept = !user.endsWith('@') ? '' : urlCredentials(url) ? `${PLACEHOLDER_USERINFO}@` : `${info}@`;
    return `http://${kept}127.0.0.1:${port}`;
  });
  return placeholderQuery(relayed);
}
