import { secretParams, urlCredentials, type Credentials } from './rtsp-auth.js';

/**
 * How argus's relays (rtsp-tap, http-relay) follow a camera that redirects ffmpeg (RTSP `3xx`,
 * HTTP `301/302/303/307/308`, with `Location`): the relay points `Location` at itself (the new
 * path and query, secrets as placeholders), so that ffmpeg comes back to the relay, and the
 * relay connects that connection to the new address, its certificate checked as the first's.
 *
 * The camera's credentials (its user and password; an HTTP camera's `-headers` and `-cookies`)
 * go with a redirect only to the camera's own origin: the same scheme, host and port, as
 * browsers (the Fetch standard drops `Authorization` on a cross-origin redirect) and curl
 * (since 7.83, CVE-2022-27776) judge it; never from TLS to plain; to another host only where
 * the source names it in `sendCredentialsTo`. (ffmpeg's own HTTP sends none after an absolute
 * redirect, even to the same host; its RTSP sends them to any host it is redirected to.)
 */

/** The most redirects in a row a relay follows (ffmpeg's HTTP follows 8, its RTSP any number). */
export const MAX_REDIRECTS = 5;

/** An address a relay connects to: the camera's, or one it redirected to. */
export interface RelayTarget {
  /** Lower case: rtsp, rtsps, http, https. */
  scheme: string;
  /** A name or address, IPv6 without brackets. */
  host: string;
  port: number;
  tls: boolean;
  /** `host[:port]` as the URL writes it (an HTTP `Host` header). */
  authority: string;
  /** The user and password in its URL, if any. */
  cred: Credentials | undefined;
  /** Its secret query parameters (secretParams: each name's values, in order). */
  secrets: Map<string, string[]>;
  /** Path and query, as the URL writes them (no fragment); `/` where it has none. */
  path: string;
  /** The URL without its user part or fragment: what a redirect loop is told by, and messages name. */
  url: string;
}

/** A URL's scheme, user part (to its last `@` before the path, as ffmpeg's av_url_split reads it), host, `:port` and the rest. */
const PARTS = /^([a-z][a-z0-9+.-]*):\/\/(?:[^/?#]*@)?(\[[^\]]*\]|[^:/?#@]*)(:\d*)?([^#]*)/i;

/** `url` as a relay target, with `ports` the default port of each scheme taken; undefined for another scheme, no host or a port out of range. */
export function relayTarget(url: string, ports: Readonly<Record<string, number>>): RelayTarget | undefined {
  const m = PARTS.exec(url);
  if (!m) return undefined;
  const scheme = m[1].toLowerCase();
  const host = m[2].replace(/^\[|\]$/g, '');
  if (!(scheme in ports) || host === '') return undefined;
  const given = m[3] !== undefined && m[3].length > 1;
  const port = given ? Number(m[3].slice(1)) : ports[scheme];
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  const authority = `${m[2]}${given ? m[3] : ''}`;
  const path = m[4] === '' ? '/' : m[4];
  return { scheme, host, port, tls: scheme.endsWith('s'), authority, cred: urlCredentials(url), secrets: secretParams(url), path, url: `${scheme}://${authority}${m[4]}` };
}

/** `host:port` of a target, an IPv6 address bracketed. */
export function addressOf(t: { host: string; port: number }): string {
  return `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
}

/**
 * Whether the camera's credentials (`camera`'s) go to `to`, a redirect's target: its origin
 * (scheme, host and port), or a host `allowed` names (`host` or `host:port`, the source's
 * `sendCredentialsTo`); never from TLS to plain.
 */
export function credentialsGo(camera: RelayTarget, to: RelayTarget, allowed: readonly string[] = []): boolean {
  if (camera.tls && !to.tls) return false;
  const host = to.host.toLowerCase();
  if (camera.scheme === to.scheme && camera.host.toLowerCase() === host && camera.port === to.port) return true;
  // `[IPv6]` alone is its address; `[IPv6]:port` stays as addressOf writes it. (Brackets and port
  // were stripped to `fd00::7:554` and compared with `host:port` as well, so a bare IPv6 address
  // `fd00::7:554` in the list also sent the credentials to port 554 of `fd00::7`, another host.)
  return allowed.some((a) => {
    const name = a.toLowerCase().replace(/^\[([^\]]*)\]$/, '$1');
    return name === host || name === addressOf({ host, port: to.port });
  });
}

/** A run of redirects: how many so far, and the addresses seen (the first request's included). */
export interface RedirectChain {
  steps: number;
  seen: ReadonlySet<string>;
}

/** A chain that starts at `url` (a request not itself the end of a redirect). */
export function startChain(url: string): RedirectChain {
  return { steps: 0, seen: new Set([url]) };
}

/**
 * The next step of `chain` to `to` (a redirect's target, resolved), or why it is refused: past
 * MAX_REDIRECTS, an address seen before in the chain (a loop), or from a camera whose certificate
 * is checked (`checked`) to plain RTSP or HTTP, where nothing would be.
 */
export function nextStep(chain: RedirectChain, to: RelayTarget, from: RelayTarget, checked: boolean): RedirectChain | string {
  if (chain.steps >= MAX_REDIRECTS) return `redirected more than ${MAX_REDIRECTS} times in a row (the last to ${to.url})`;
  if (chain.seen.has(to.url)) return `redirected in a loop (to ${to.url}, redirected from before)`;
  if (checked && from.tls && !to.tls) return `redirected from ${from.scheme}:// to plain ${to.url}, where no certificate is checked`;
  return { steps: chain.steps + 1, seen: new Set([...chain.seen, to.url]) };
}
