import { connect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { MAX_CA_BYTES, readSmallFile } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import { RelayDoor, type PeerCheck } from './relay-door.js';
import { AuthRewriter, headEnd, placeholderQuery, PLACEHOLDER_USERINFO, secretParams, urlCredentials, type Credentials, type Secrets } from './rtsp-auth.js';
import { addressOf, credentialsGo, MAX_REDIRECTS, nextStep, relayTarget, startChain, type RedirectChain, type RelayTarget } from './relay-redirect.js';

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
 * So `-http_proxy`: the relay goes through the proxy (its password is kept off the command line).
 */
const RELAYED_TLS_OPTIONS: ReadonlySet<string> = new Set(['-tls_verify', '-ca_file', '-http_proxy']);

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
  const proxy = inputArgs.includes('-http_proxy') ? inputArgs[inputArgs.lastIndexOf('-http_proxy') + 1] : undefined;
  return /^https?:\/\//i.test(url) && (urlCredentials(url) !== undefined || secretParams(url).size > 0 || inputArgs.some((a) => RELAYED_OPTIONS.has(a)) || (proxy !== undefined && urlCredentials(proxy) !== undefined));
}

/** HTTP's default ports. */
const HTTP_PORTS = { http: 80, https: 443 } as const;

/** The statuses ffmpeg's HTTP follows `Location` for (http.c). */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * The most cookies the relay keeps of one host (RFC 6265, 6.1: at least 50 a domain), and the
 * longest (its name and value, at least 4096 bytes): a camera's past these are not passed on to
 * ffmpeg, so that a hostile one cannot make argus or ffmpeg keep without end.
 */
export const MAX_COOKIES_PER_HOST = 50;
export const MAX_COOKIE_BYTES = 4096;

/** Redirects the relay waits for ffmpeg to follow (each names the chain it is a step of); older ones are forgotten. */
const MAX_PENDING_REDIRECTS = 64;

/**
 * One address the relay carries ffmpeg's connections to: the camera's, or one it redirected to
 * (another origin: relay-redirect), each on a port of its own, so that what ffmpeg resolves
 * against a redirected playlist's URL (its segments: `/seg/1.ts`, `1.ts`) comes back to it.
 */
interface Route {
  target: RelayTarget;
  /** The user and password the relay answers with there (none where the camera's do not go). */
  cred: Credentials | undefined;
  /**
   * Secret query values of a request there whose URL no redirect gave: the camera's own (its
   * URL's) on the camera's route; none on a route a redirect opened.
   */
  secrets: Secrets;
  /**
   * Each URL a redirect gave ffmpeg there (path and query, placeholders in place of its secret
   * values) → that redirect's own values, the latest MAX_PENDING_REDIRECTS. A redirect's values
   * are its URL's alone: they used to replace the route's by name, so that after a redirect to
   * `/b?token=S` the camera's own URL `/a?token=<source's>` was sent as `/a?token=S`.
   */
  given: Map<string, Secrets>;
  /** The camera's own URL as ffmpeg asks for it (path and query, placeholders in place) on the camera's route; undefined on others. */
  own: string | undefined;
  /**
   * A redirect's values for `own` (a signed or session URL on the source's path, or a chain
   * that comes back to it, A → B → A): the next request for it carries them, the ones after it the
   * source's own. Kept in `given` they were sent with the source's URL at every reconnect after
   * (a session value that had expired, say), where the source's would have started the chain again.
   */
  once: Secrets | undefined;
  /** Header lines added to each request there (the source's `-headers` and `-cookies` where its credentials go). */
  headers: readonly string[];
  door: RelayDoor;
  port: number;
}

/** The secret values a request line on `route` is to carry: its URL's, where a redirect gave it, else the route's own. */
function secretsOf(route: Route, line: string): Secrets {
  const target = /^[A-Z]+[ \t]+(\S+)/.exec(line)?.[1];
  if (target === undefined) return route.secrets;
  if (route.once && target === route.own) {
    const once = route.once;
    route.once = undefined;
    return once;
  }
  return route.given.get(target) ?? route.secrets;
}

/** A request on a relayed connection, waiting for its reply: its URL at the camera, and the redirects that led to it. */
interface Asked {
  method: string;
  url: string;
  chain: RedirectChain;
}

/**
 * An HTTP(S) camera's credentials kept off ffmpeg's command line, which every local user can
 * read (`ps`, /proc/PID/cmdline), as the RTSP relay does for RTSP cameras (rtsp-auth): ffmpeg
 * is given `http://argus:relay@127.0.0.1:<port>/<the camera's path and query>`, answers the
 * camera's 401 challenge with the placeholder (Basic, or Digest with the camera's realm and
 * nonce), and the relay rewrites each request's `Authorization` with the real user and password,
 * and its `Host` with the camera's, on its way to the camera.
 *
 * Up to MAX_HTTP_RELAY_CONNECTIONS at once (an HLS playlist and its segments), each of argus's
 * own user only (RelayDoor), each to the camera's address; an `https://` camera's is TLS, its certificate
 * checked as ffmpeg's own HTTPS would (`tls`: none by default; `-tls_verify 1` and `-ca_file` in
 * the source's inputArgs, against the camera's name or address, before any request).
 *
 * Replies pass as they are, but for a redirect's `Location` (relay-redirect): pointed at the
 * relay, at a port of its own for each origin redirected to, whose connections go there (a
 * relative redirect or segment comes back to the same port). The camera's credentials go only to
 * its own origin and the hosts the source names (`sendCredentialsTo`); more than MAX_REDIRECTS
 * redirects in a row, a loop, another scheme, or from a checked https:// camera to plain
 * http:// are refused (`redirectRefused`).
 */
export class HttpRelay {
  private readonly camera: RelayTarget;
  /** Where the relay carries connections: the camera's origin first, then each one it redirected to (by `scheme://host:port`). */
  private readonly routes = new Map<string, Route>();
  private readonly main: Route;
  /** Redirects given to ffmpeg and not yet followed: `port path` → the chain the next request there continues. */
  private readonly pending = new Map<string, RedirectChain>();
  private readonly conns = new Set<Socket>();
  /**
   * The cookies each host's replies set, by host (lower case; a cookie is its host's whatever the
   * port, RFC 6265, 8.5): name → its last value. ffmpeg, seeing every route as 127.0.0.1, holds
   * one value a name for all of them, and would send one host's to another (cookiesFor).
   */
  private readonly jar = new Map<string, Map<string, string>>();
  /** Why the camera could not be reached, for ffmpeg's error (it only sees the relay close). */
  upstreamError: string | undefined;
  /** Why a redirect of the camera's was not followed (the source fails with it), or undefined. */
  redirectRefused: string | undefined;
  /** A redirect followed to an origin the camera's credentials do not go to: said with a failure. */
  private withheld: string | undefined;
  /** An https:// camera's check (HttpTls), and its `ca` file's certificates, read by `listen`. */
  private readonly check: HttpTls;
  private ca: Buffer | undefined;
  /** Header lines added to each request (relayedOptions), each in place of one of the same name. */
  private readonly headers: string[];
  private readonly doorOptions: { peerCheck?: PeerCheck; log?: LogFn; maxOpen: number; open: Set<Socket> };
  /** Hosts the camera's credentials may be sent to after a redirect, beside its own origin (the source's `sendCredentialsTo`). */
  private readonly credentialsTo: readonly string[];
  /** The HTTP proxy the relay reaches the camera through (httpProxyOf), and the hosts it does not (`no_proxy`). */
  private readonly proxy: Proxy | undefined;
  private readonly noProxy: string | undefined;

  constructor(
    readonly url: string,
    options: { tls?: HttpTls; headers?: readonly string[]; peerCheck?: PeerCheck; log?: LogFn; maxConnections?: number; sendCredentialsTo?: readonly string[]; proxy?: { url?: string; noProxy?: string } } = {},
  ) {
    this.proxy = options.proxy?.url ? proxyOf(options.proxy.url) : undefined;
    this.noProxy = options.proxy?.noProxy;
    this.headers = [...(options.headers ?? [])];
    this.check = options.tls ?? { verify: false };
    this.credentialsTo = options.sendCredentialsTo ?? [];
    const m = AUTHORITY.exec(url);
    const tls = /^https:/i.test(url);
    // (A URL Node cannot connect to, a port out of range: the relay fails to connect, naming it.)
    this.camera = relayTarget(url, HTTP_PORTS) ?? {
      scheme: tls ? 'https' : 'http',
      host: (m?.[2] ?? '').replace(/^\[|\]$/g, ''),
      port: m?.[3] && m[3].length > 1 ? Number(m[3].slice(1)) : tls ? 443 : 80,
      tls,
      authority: `${m?.[2] ?? ''}${m?.[3] && m[3].length > 1 ? m[3] : ''}`,
      cred: urlCredentials(url),
      secrets: secretParams(url),
      path: '/',
      url,
    };
    // (One count for every route's door: a port per origin redirected to is no more connections.)
    this.doorOptions = { peerCheck: options.peerCheck, log: options.log, maxOpen: options.maxConnections ?? MAX_HTTP_RELAY_CONNECTIONS, open: new Set() };
    this.main = this.route(this.camera, this.camera.cred, this.headers);
  }

  /** A route to `target` (its door not yet listening), kept by its origin. */
  private route(target: RelayTarget, cred: Credentials | undefined, headers: readonly string[]): Route {
    const route: Route = {
      target,
      cred,
      secrets: target === this.camera ? target.secrets : new Map(),
      given: new Map(),
      own: target === this.camera ? placeholderQuery(target.path) : undefined,
      once: undefined,
      headers,
      port: 0,
      door: new RelayDoor({ accept: (down) => this.accept(down, route), ...this.doorOptions, name: `the HTTP relay to ${addressOf(target)}` }),
    };
    this.routes.set(originOf(target), route);
    return route;
  }

  /** Starts listening; resolves with the URL ffmpeg is to open (the camera's, with the relay's host and port, and the placeholder). */
  async listen(): Promise<string> {
    if (this.camera.tls && this.check.verify && this.check.ca) {
      const path = this.check.ca;
      this.ca = await readSmallFile(path, MAX_CA_BYTES).catch((e: Error) => {
        throw new ArgusError(ErrorCodes.SOURCE_OPEN, `inputArgs -ca_file ${path}: ${e.message}`);
      });
    }
    this.main.port = await this.main.door.listen();
    return httpRelayUrl(this.url, this.main.port);
  }

  private accept(down: Socket, route: Route): void {
    const target = route.target;
    const proxy = this.proxyFor(target);
    const where = `${addressOf(target)}${proxy ? ` (through the proxy ${addressOf(proxy)})` : ''}`;
    let up: Socket | undefined;
    const held: Socket[] = [];
    const fail = (why: string) => {
      this.upstreamError = `${where}: ${why}`;
      down.destroy();
    };
    /** `s`, the connection the camera's bytes come by (TLS over a proxy's tunnel: the tunnel's first, then the TLS socket). */
    const hold = (s: Socket): Socket => {
      up = s;
      held.push(s);
      this.conns.add(s);
      s.on('error', (e: Error) => fail(e.message));
      return s;
    };
    this.conns.add(down);
    const timer = setTimeout(() => {
      this.upstreamError = `${where}: could not connect in ${CONNECT_TIMEOUT_MS / 1000} s`;
      up?.destroy();
      down.destroy();
    }, CONNECT_TIMEOUT_MS);
    // (Not left running after either side closes: it held the process up to 10 s, and would set a stale upstreamError.)
    const forget = () => {
      clearTimeout(timer);
      this.conns.delete(down);
      for (const s of held) this.conns.delete(s);
    };
    down.once('close', () => {
      up?.destroy();
      forget();
    });
    // The camera reached: the timer is over (left running, it cut every connection 10 s in).
    const reached = (s: Socket) => {
      clearTimeout(timer);
      this.relayed(down, s, route, proxy);
    };
    const tls = (socket?: Socket) =>
      tlsConnect({ ...(socket ? { socket } : { host: target.host, port: target.port }), servername: isIP(target.host) ? undefined : target.host, rejectUnauthorized: this.check.verify, ...(this.ca ? { ca: this.ca } : {}) });
    try {
      if (!proxy) {
        const s = hold(target.tls ? tls() : connect({ host: target.host, port: target.port }));
        s.once(target.tls ? 'secureConnect' : 'connect', () => reached(s));
      } else {
        const s = hold(connect({ host: proxy.host, port: proxy.port }));
        if (!target.tls) s.once('connect', () => reached(s));
        else
          s.once('connect', () =>
            tunnel(s, target, proxy, (why) => {
              if (why !== undefined) return fail(why);
              const t = hold(tls(s));
              t.once('secureConnect', () => reached(t));
            }),
          );
      }
    } catch (e) {
      // An address Node refuses outright (a port above 65535): this camera's failure alone.
      fail((e as Error).message);
      return;
    }
    up!.once('close', () => {
      down.end();
      forget();
    });
  }

  /** The camera reached (`up`, its certificate checked where it is https://): ffmpeg's requests and the camera's replies relayed. */
  private relayed(down: Socket, up: Socket, route: Route, proxy: Proxy | undefined): void {
    this.upstreamError = undefined;
    // The requests on this connection, in order, waiting for their replies.
    const asked: Asked[] = [];
    const rewriter = new AuthRewriter(route.cred, (head) => this.edit(head, route, asked, proxy && !route.target.tls ? proxy : undefined), { secrets: (line) => secretsOf(route, line) });
    pipe(down, up, (chunk) => rewriter.push(chunk));
    let refused = false;
    const replies = new HttpReplies((head) => {
      const status = Number(/^HTTP\/\d(?:\.\d)?[ \t]+(\d{3})/.exec(head)?.[1]);
      // (An interim reply, 100 Continue, answers no request.)
      if (status >= 100 && status < 200 && status !== 101) return { head };
      const request = asked.shift();
      const noBody = request?.method === 'HEAD';
      const kept = this.keepCookies(head, route);
      if (!request || !REDIRECTS.has(status)) return { head: kept, noBody };
      const moved = this.redirected(kept, route, request);
      if (moved === undefined) refused = true;
      return { head: moved ?? head, noBody };
    });
    pipeReplies(up, down, replies, () => refused);
    down.resume();
  }

  /** The proxy a connection to `target` goes through (the source's `-http_proxy`, else `http_proxy`), unless `no_proxy` names its host. */
  private proxyFor(target: RelayTarget): Proxy | undefined {
    const p = this.proxy;
    return p && !noProxyMatches(this.noProxy, target.host, target.port) ? p : undefined;
  }

  /**
   * A request head from ffmpeg as the camera is to see it (after AuthRewriter put the secret
   * query values back in its line and Digest `uri`): its `Host` the camera's `host[:port]`
   * (ffmpeg names the relay), and the source's own headers; without `Authorization` where the
   * camera's credentials do not go. Noted in `asked`, for its reply.
   */
  private edit(head: string, route: Route, asked: Asked[], proxy?: Proxy): string {
    const host = route.target.authority;
    const line = head.search(/\r?\n/);
    let first = line < 0 ? head : head.slice(0, line);
    let rest = line < 0 ? '' : head.slice(line);
    if (proxy) {
      // Through a proxy, as ffmpeg's HTTP asks one (http.c): the request's absolute URL, and the
      // proxy's user and password (from its URL) as Basic, sent by the relay, never by ffmpeg.
      first = first.replace(/^([A-Z]+[ \t]+)(\/\S*)/, (_m, method: string, path: string) => `${method}http://${host}${path}`);
      rest = rest.replace(/\r?\nproxy-authorization[ \t]*:[^\r\n]*/gi, '');
      if (proxy.cred) rest = `\r\nProxy-Authorization: ${basicOf(proxy.cred)}${rest}`;
    }
    rest = rest.replace(/(\r?\n)(host)([ \t]*:[ \t]*)([^\r\n]*)/i, (_m, nl: string, name: string, sep: string) => `${nl}${name}${sep}${host}`);
    if (!route.cred) rest = rest.replace(/\r?\nauthorization[ \t]*:[^\r\n]*/gi, '');
    const cookies = this.cookiesFor(rest, route);
    rest = cookies.rest;
    // The source's own headers, and the cookies ffmpeg keeps (after the source's -cookies, in one Cookie line).
    const own = route.headers.some((h) => /^cookie[ \t]*:/i.test(h));
    const added = cookies.cookies === '' ? route.headers : own ? route.headers.map((h) => (/^cookie[ \t]*:/i.test(h) ? `${h}; ${cookies.cookies}` : h)) : [...route.headers, `Cookie: ${cookies.cookies}`];
    if (added.length) {
      // Each in place of one ffmpeg wrote of the same name (its User-Agent), before the blank line.
      const names = new Set(added.map((h) => h.slice(0, h.indexOf(':')).trim().toLowerCase()));
      const lines = rest.split(/\r?\n/).filter((l, i) => i === 0 || l === '' || !names.has(l.slice(0, l.indexOf(':')).trim().toLowerCase()));
      const blank = lines.indexOf('', 1);
      lines.splice(blank < 0 ? lines.length : blank, 0, ...added);
      rest = lines.join('\r\n');
    }
    const request = /^([A-Z]+)[ \t]+(\S+)/.exec(first);
    if (request) {
      const path = proxy ? request[2].replace(/^http:\/\/[^/]*/, '') : request[2];
      const key = `${route.port} ${path}`;
      const chain = this.pending.get(key);
      this.pending.delete(key);
      const url = `${route.target.scheme}://${route.target.authority}${path.startsWith('/') ? path : `/${path}`}`;
      asked.push({ method: request[1], url, chain: chain ?? startChain(url) });
    }
    return first + rest;
  }

  /**
   * A redirect's reply head (to `request`, on `route`) as ffmpeg is to get it: its `Location`
   * the relay's, at the port of the origin redirected to (opened for it if new: the head is
   * given when it listens). A redirect that is not followed sets `redirectRefused` (and
   * `upstreamError`) and returns undefined. One without `Location` is passed on as it is.
   */
  private redirected(head: string, route: Route, request: Asked): string | Promise<string> | undefined {
    const location = /(\r?\n)(location[ \t]*:[ \t]*)([^\r\n]*)/i.exec(head);
    const value = location?.[3].trim();
    if (!location || !value) return head;
    const refuse = (why: string): undefined => {
      this.redirectRefused = `the camera at ${addressOf(this.camera)} ${why}: not followed`;
      this.upstreamError = `${addressOf(route.target)}: ${why}`;
    };
    let resolved: string;
    try {
      // (Relative to the request's URL, as ffmpeg resolves it: ff_make_absolute_url.)
      resolved = /^[a-z][a-z0-9+.-]*:/i.test(value) ? value : new URL(value, request.url).href;
    } catch {
      return refuse(`redirected to ${value}, which is no URL`);
    }
    const to = relayTarget(resolved, HTTP_PORTS);
    if (!to) return refuse(`redirected to ${resolved.replace(/^([^/?#]*\/\/)[^/?#]*@/, '$1')}, which is not an http:// or https:// address`);
    const step = nextStep(request.chain, to, route.target, this.camera.tls && this.check.verify);
    if (typeof step === 'string') return refuse(step);
    const goes = credentialsGo(this.camera, to, this.credentialsTo);
    const known = this.routes.get(originOf(to));
    if (!known && this.routes.size > MAX_REDIRECTS) return refuse(`redirected to ${to.url}: more than ${MAX_REDIRECTS} other addresses`);
    const next = known ?? this.route(to, to.cred ?? (goes ? this.camera.cred : undefined), goes ? this.headers : []);
    const path = placeholderQuery(to.path);
    // The source's own URL: its values for the request that follows this redirect only (Route.once).
    if (path === next.own) next.once = to.secrets.size ? to.secrets : undefined;
    else {
      next.given.delete(path);
      if (to.secrets.size) next.given.set(path, to.secrets);
      if (next.given.size > MAX_PENDING_REDIRECTS) next.given.delete(next.given.keys().next().value as string);
    }
    if (this.camera.cred && !next.cred) this.withheld = `redirected to ${to.url}, another origin than the camera's, where its credentials are not sent (name its host in the source's sendCredentialsTo to send them)`;
    const give = (): string => {
      this.pending.set(`${next.port} ${to.path}`, step);
      if (this.pending.size > MAX_PENDING_REDIRECTS) this.pending.delete(this.pending.keys().next().value as string);
      const relayed = `http://${next.cred ? `${PLACEHOLDER_USERINFO}@` : ''}127.0.0.1:${next.port}${path}`;
      return `${head.slice(0, location.index)}${location[1]}${location[2]}${relayed}${head.slice(location.index + location[0].length)}`;
    };
    if (next.port) return give();
    return next.door.listen().then(
      (port) => {
        next.port = port;
        return give();
      },
      (e: Error) => {
        this.routes.delete(originOf(to));
        refuse(`redirected to ${to.url}, and the relay could not listen for it (${e.message})`);
        return head;
      },
    );
  }

  /**
   * A reply head with each `Set-Cookie`'s `Domain` taken out, its cookies kept in `jar` for
   * `route`'s host: ffmpeg holds every route as 127.0.0.1, and keeps a cookie for a domain (the
   * camera's name) only for a host that ends in it (http.c, get_cookies): it never sent the
   * camera's session back. Without `Domain`, a cookie is the host's that set it, which the relay
   * keeps it to (cookiesFor). A cookie past MAX_COOKIES_PER_HOST new names, or longer than
   * MAX_COOKIE_BYTES, is taken out (neither ffmpeg nor the relay keeps it).
   */
  private keepCookies(head: string, route: Route): string {
    if (!/\nset-cookie[ \t]*:/i.test(head)) return head;
    const host = route.target.host.toLowerCase();
    let jar = this.jar.get(host);
    if (!jar) this.jar.set(host, (jar = new Map()));
    const kept = jar;
    return head.replace(/(\r?\nset-cookie[ \t]*:[ \t]*)([^\r\n]*)/gi, (_m, name: string, value: string) => {
      const pair = /^([^=;]*)=([^;]*)/.exec(value);
      const cookie = pair?.[1].trim();
      if (pair && cookie) {
        const given = pair[2].trim();
        if (cookie.length + given.length > MAX_COOKIE_BYTES) return '';
        const maxAge = /;[ \t]*max-age[ \t]*=[ \t]*(-?\d+)/i.exec(value);
        if (maxAge && Number(maxAge[1]) <= 0) kept.delete(cookie);
        else if (kept.has(cookie) || kept.size < MAX_COOKIES_PER_HOST) kept.set(cookie, given);
        else return '';
      }
      return `${name}${value.replace(/;[ \t]*domain[ \t]*=[^;]*/gi, '')}`;
    });
  }

  /**
   * The cookies of ffmpeg's `Cookie` lines in a request head for `route` (`name=value; …`), and
   * the head without those lines: a cookie `route`'s host set, with the value it set (ffmpeg holds
   * one value a name, maybe another host's); not one it did not set (another host's: ffmpeg,
   * seeing one host, sends them to every route), nor those the source's own `-cookies` give.
   */
  private cookiesFor(rest: string, route: Route): { rest: string; cookies: string } {
    const host = route.target.host.toLowerCase();
    const own = this.jar.get(host);
    const given = route.headers.find((h) => /^cookie[ \t]*:/i.test(h));
    const ownNames = new Set((given?.slice(given.indexOf(':') + 1) ?? '').split(';').map((c) => c.split('=')[0].trim()));
    const kept: string[] = [];
    const named = new Set<string>();
    const without = rest.replace(/\r?\ncookie[ \t]*:[ \t]*([^\r\n]*)/gi, (_m, value: string) => {
      for (const c of value.split(';').map((x) => x.trim())) {
        const name = c.split('=')[0].trim();
        if (c === '' || ownNames.has(name) || named.has(name)) continue;
        if (!own?.has(name)) continue;
        kept.push(`${name}=${own.get(name)!}`);
        named.add(name);
      }
      return '';
    });
    return { rest: without, cookies: kept.join('; ') };
  }

  /** The input arguments ffmpeg is given: the source's own but those the relay sends instead (relayedOptions). */
  ffmpegInputArgs(args: readonly string[] | undefined): string[] | undefined {
    return args && relayedOptions(args).kept;
  }

  /** ffmpeg's text (its log) naming the camera (and the addresses it redirected to) instead of the relay, with what went wrong in reaching it. */
  unrelay(text: string): string {
    if (!this.main.port) return text;
    let named = text;
    for (const route of this.routes.values()) {
      if (!route.port) continue;
      const t = route.target;
      const info = route === this.main ? /^https?:\/\/([^/?#]*)@/i.exec(this.url)?.[1] : undefined;
      named = named
        .replace(new RegExp(`http://(?:${PLACEHOLDER_USERINFO}@)?127\\.0\\.0\\.1:${route.port}\\b`, 'g'), `${t.scheme}://${info !== undefined ? `${info}@` : ''}${t.authority}`)
        .split(`127.0.0.1:${route.port}`)
        .join(addressOf(t))
        .split(`127.0.0.1 port ${route.port}`)
        .join(`${t.host} port ${t.port} (through argus's relay)`);
    }
    if (this.withheld) named = `${named}\ncamera: ${this.withheld}`;
    return this.upstreamError ? `${named}\ncamera: ${this.upstreamError}` : named;
  }

  /** Ends the relayed connections (their ffmpeg is done). */
  drop(): void {
    for (const s of this.conns) s.destroy();
    this.conns.clear();
  }

  /** Stops listening and ends every relayed connection. */
  close(): void {
    for (const route of this.routes.values()) route.door.close();
    this.drop();
  }
}

/** A target's origin, as routes are kept by: `scheme://host:port`. */
function originOf(t: RelayTarget): string {
  return `${t.scheme}://${addressOf({ host: t.host.toLowerCase(), port: t.port })}`;
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
 * The camera's replies from `up` to ffmpeg's `down` through `replies`, pausing `up` while `down`
 * is full or a head's edit waits (a redirect's port); `refused`: a redirect was refused, and
 * both connections are ended before its head leaves.
 */
function pipeReplies(up: Socket, down: Socket, replies: HttpReplies, refused: () => boolean): void {
  let ended = false;
  const send = (r: Edited): void => {
    if (refused()) {
      up.destroy();
      down.destroy();
      return;
    }
    let room = true;
    for (const piece of r.out) room = down.write(piece) && room;
    if (r.wait) {
      up.pause();
      void r.wait.then(() => {
        if (down.destroyed) return;
        send(replies.more());
        if (!replies.waiting) {
          if (ended) finish();
          else up.resume();
        }
      });
      return;
    }
    if (!room) {
      up.pause();
      down.once('drain', () => {
        if (!replies.waiting) up.resume();
      });
    }
  };
  const finish = (): void => {
    for (const piece of replies.flush()) down.write(piece);
    down.end();
  };
  up.on('data', (chunk: Buffer) => send(replies.push(chunk)));
  up.on('end', () => {
    ended = true;
    if (!replies.waiting) finish();
  });
}

/** What HttpReplies sends on: bytes now, and where a head's edit is pending, when to ask for `more`. */
interface Edited {
  out: Buffer[];
  wait?: Promise<void>;
}

/** An HTTP reply head longer than this is not read: everything from there passes as it is. */
const MAX_REPLY_HEAD = 64 * 1024;
/** A chunk-size or trailer line longer than this is not HTTP: everything from there passes as it is. */
const MAX_LINE = 4096;

/**
 * The camera's side of a relayed HTTP connection, on its way to ffmpeg: each reply head is held
 * until complete and given to `onHead` (which may take time: a redirect's port), its body
 * (by `Content-Length`, chunked, or to the connection's end) passed on as it is. Bytes it cannot
 * read as HTTP make it pass everything on unchanged from there.
 */
export class HttpReplies {
  private mode: 'head' | 'body' | 'size' | 'data' | 'dataEnd' | 'trailer' | 'raw' = 'head';
  private head: Buffer[] = [];
  private headLength = 0;
  private left = 0;
  private line = '';
  /** A head's edit pending: what came meanwhile, and the head once edited. */
  waiting: Promise<void> | undefined;
  private rest: Buffer[] = [];
  private ready = '';

  /** `onHead`: a reply head as ffmpeg is to get it, and whether its reply has no body (a HEAD request's). */
  constructor(private readonly onHead: (head: string) => { head: string | Promise<string>; noBody?: boolean }) {}

  /** Reads a chunk from the camera; returns the bytes to send ffmpeg now. */
  push(chunk: Buffer): Edited {
    if (this.waiting) {
      this.rest.push(chunk);
      return { out: [] };
    }
    return this.run(chunk, []);
  }

  /** Once `wait` is over: the head edited, and what came after it. */
  more(): Edited {
    const out = [Buffer.from(this.ready, 'latin1')];
    this.waiting = undefined;
    const rest = Buffer.concat(this.rest);
    this.rest = [];
    return this.run(rest, out);
  }

  /** What is held (a head not yet complete) as it came: the connection ended. */
  flush(): Buffer[] {
    const held = this.mode === 'head' ? this.head : [];
    this.head = [];
    this.mode = 'raw';
    return held;
  }

  private run(chunk: Buffer, out: Buffer[]): Edited {
    let i = 0;
    let passFrom = 0;
    const pass = (to: number) => {
      if (to > passFrom) out.push(chunk.subarray(passFrom, to));
      passFrom = to;
    };
    while (i < chunk.length) {
      switch (this.mode) {
        case 'raw':
          i = chunk.length;
          break;
        case 'body':
        case 'data': {
          const n = Math.min(this.left, chunk.length - i);
          i += n;
          this.left -= n;
          if (this.left === 0) this.mode = this.mode === 'body' ? 'head' : 'dataEnd';
          break;
        }
        case 'size':
        case 'dataEnd':
        case 'trailer': {
          const lf = chunk.indexOf(0x0a, i);
          const end = lf < 0 ? chunk.length : lf + 1;
          this.line += chunk.toString('latin1', i, end);
          i = end;
          if (this.line.length > MAX_LINE) this.mode = 'raw';
          if (lf < 0 || this.mode === 'raw') break;
          const text = this.line.trim();
          this.line = '';
          if (this.mode === 'dataEnd') this.mode = 'size';
          else if (this.mode === 'trailer') {
            if (text === '') this.mode = 'head';
          } else {
            const size = /^[0-9a-f]+/i.exec(text);
            if (!size) this.mode = 'raw';
            else {
              this.left = parseInt(size[0], 16);
              this.mode = this.left === 0 ? 'trailer' : 'data';
            }
          }
          break;
        }
        case 'head': {
          if (this.headLength === 0 && (chunk[i] === 0x0d || chunk[i] === 0x0a)) {
            i++;
            break;
          }
          pass(i);
          const held = this.head.length ? Buffer.concat([...this.head, chunk.subarray(i)]) : chunk.subarray(i);
          const found = headEnd(held, this.headLength);
          if (!found) {
            if (held.length > MAX_REPLY_HEAD) {
              out.push(held);
              this.head = [];
              this.mode = 'raw';
            } else {
              this.head = [Buffer.from(held)];
              this.headLength = held.length;
            }
            i = passFrom = chunk.length;
            break;
          }
          const { end, head: headText } = found;
          i += end - this.headLength;
          passFrom = i;
          this.head = [];
          this.headLength = 0;
          const edited = this.onHead(headText);
          this.frame(headText, edited.noBody ?? false);
          if (typeof edited.head === 'string') {
            out.push(Buffer.from(edited.head, 'latin1'));
            break;
          }
          this.rest = [chunk.subarray(i)];
          this.waiting = edited.head.then((h) => {
            this.ready = h;
          });
          return { out, wait: this.waiting };
        }
      }
    }
    pass(chunk.length);
    return { out };
  }

  /** How the body after `head` ends (RFC 9112, 6.3). */
  private frame(head: string, noBody: boolean): void {
    const status = Number(/^HTTP\/\d(?:\.\d)?[ \t]+(\d{3})/.exec(head)?.[1]);
    const field = (name: string) => new RegExp(`\\r?\\n${name}[ \\t]*:[ \\t]*([^\\r\\n]*)`, 'i').exec(head)?.[1]?.trim();
    if (!Number.isFinite(status) || status === 101) this.mode = 'raw';
    else if (noBody || status < 200 || status === 204 || status === 304) this.mode = 'head';
    else if (/(^|,)\s*chunked\s*$/i.test(field('transfer-encoding') ?? '')) this.mode = 'size';
    else if (field('content-length') !== undefined && /^\d+$/.test(field('content-length')!)) {
      this.left = Number(field('content-length'));
      this.mode = this.left > 0 ? 'body' : 'head';
    } else this.mode = 'raw';
  }
}

/** An HTTP proxy: its address, and the user and password of its URL. */
interface Proxy {
  host: string;
  port: number;
  cred: Credentials | undefined;
}

/** A proxy's URL as ffmpeg takes it: `http://` only (another scheme: none, as ffmpeg's http.c and tls.c ignore it), port 80 unless given. */
function proxyOf(url: string): Proxy | undefined {
  if (!/^http:\/\//i.test(url)) return undefined;
  const t = relayTarget(url, HTTP_PORTS);
  return t && { host: t.host, port: t.port, cred: t.cred };
}

/**
 * The proxy ffmpeg would reach an http(s):// camera through (http.c, tls.c): the source's
 * `-http_proxy` input option (the last), else the environment's `http_proxy` (ffmpeg reads it
 * in lower case only, as curl does: `HTTP_PROXY` can be set by a CGI request's `Proxy:` header),
 * and `no_proxy`'s hosts (noProxyOf), which it does not go through for.
 */
export function httpProxyOf(inputArgs: readonly string[] | undefined, env: NodeJS.ProcessEnv): { url?: string; noProxy?: string } {
  const args = inputArgs ?? [];
  const given = args.includes('-http_proxy') ? args[args.lastIndexOf('-http_proxy') + 1] : undefined;
  return { url: given ?? env.http_proxy, noProxy: noProxyOf(env) };
}

/** The hosts no proxy is used for: `no_proxy`, else `NO_PROXY` (ffmpeg is given it as `no_proxy`: loopbackUnproxied). */
export function noProxyOf(env: NodeJS.ProcessEnv): string | undefined {
  return env.no_proxy ?? env.NO_PROXY;
}

/**
 * Whether `no_proxy` (comma- or space-separated) names `host` (at `port`) as ffmpeg's
 * ff_http_match_no_proxy does: `*`, or a pattern (a leading `*` and `.` dropped) equal to the
 * host or a domain it ends in; and as operators write it for curl and others: in any case (a
 * host name is), an IPv6 address bracketed or not, `host:port` or `[v6]:port` for that port only.
 */
export function noProxyMatches(list: string | undefined, host: string, port: number): boolean {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const entry of (list ?? '').toLowerCase().split(/[\s,]+/)) {
    if (entry === '') continue;
    if (entry === '*') return true;
    // `[v6]`, `[v6]:port`, `name:port` (one colon: a bare IPv6 address has more).
    const m = /^\[([^\]]*)\](?::(\d+))?$/.exec(entry) ?? /^([^:]*):(\d+)$/.exec(entry);
    if (m?.[2] !== undefined && Number(m[2]) !== port) continue;
    const pattern = (m ? m[1] : entry).replace(/^\*/, '').replace(/^\./, '');
    if (pattern === '' || pattern.length > name.length || !name.endsWith(pattern)) continue;
    if (pattern.length === name.length || name[name.length - pattern.length - 1] === '.') return true;
  }
  return false;
}

/** A Basic `Authorization` value for `cred` (one byte a character). */
function basicOf(cred: Credentials): string {
  return `Basic ${Buffer.from(`${cred.user}:${cred.password}`, 'latin1').toString('base64')}`;
}

/** The head of a proxy's reply to CONNECT longer than this is not waited for. */
const MAX_CONNECT_REPLY = 16 * 1024;

/**
 * A tunnel to `target` through `proxy` on `s` (connected to it), as ffmpeg's httpproxy protocol
 * asks for one (tls.c, for an https:// camera): CONNECT, with the proxy's user and password as
 * Basic; `done` with why the proxy refused, or undefined once it answered 2xx (the socket's
 * next bytes are the camera's).
 */
function tunnel(s: Socket, target: RelayTarget, proxy: Proxy, done: (why?: string) => void): void {
  const authority = addressOf(target);
  s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${proxy.cred ? `Proxy-Authorization: ${basicOf(proxy.cred)}\r\n` : ''}Connection: close\r\n\r\n`);
  let text = '';
  // (A proxy that closes without answering: said, not left for ffmpeg to see the relay close unexplained.)
  const closed = () => done('the proxy closed the connection before it answered CONNECT');
  s.once('close', closed);
  const read = (d: Buffer) => {
    text += d.toString('latin1');
    const end = text.search(/\r?\n\r?\n/);
    if (end < 0) {
      if (text.length > MAX_CONNECT_REPLY) {
        s.off('data', read);
        s.off('close', closed);
        done('the proxy\'s answer to CONNECT is not HTTP');
      }
      return;
    }
    s.off('data', read);
    s.off('close', closed);
    s.pause();
    const status = text.slice(0, text.search(/\r?\n/));
    if (/^HTTP\/\d(?:\.\d)?[ \t]+2\d\d/.test(status)) done();
    else done(`the proxy refused the tunnel: ${status}`);
  };
  s.on('data', read);
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
