import type { LogFn } from '../core/log.js';
import { checksCertificate, relaysRtsp, rtspTransportOf, type CameraTls } from '../core/rtsp-relay.js';
import { HttpRelay, httpProxyOf, httpSecrets, httpTlsOf, relayedOptions } from './http-relay.js';
import { isPlaceholderSecret, PLACEHOLDER_USERINFO, secretParams, urlCredentials } from './rtsp-auth.js';
import { RtspTap } from './rtsp-tap.js';

/**
 * For a run of ffmpeg without the camera-clock relay: a maker of the relay that only passes the
 * camera's bytes on, and keeps what ffmpeg's command line (readable by every local user) would
 * otherwise hold: an RTSP camera (over TCP, UDP or multicast) with a user and password or a
 * secret query parameter (`?token=`: redact's list), or an `rtsps://` one whose
 * certificate is to be checked (ffmpeg's own RTSPS checks none), through an RtspTap that passes
 * bytes on; an HTTP(S) camera with a user and password or a secret query parameter, or
 * `-headers` / `-cookies` input arguments, through an HttpRelay, which adds those. Undefined when there is nothing to keep.
 */
export function secretsRelay(input: { kind: string; url: string; rtspTransport?: string; inputArgs?: readonly string[]; tls?: CameraTls; sendCredentialsTo?: readonly string[] }, log?: LogFn): (() => RtspTap | HttpRelay) | undefined {
  const sendCredentialsTo = input.sendCredentialsTo;
  if (input.kind === 'http' && httpSecrets(input.url, input.inputArgs)) return () => new HttpRelay(input.url, { headers: relayedOptions(input.inputArgs).headers, tls: httpTlsOf(input.inputArgs), log, sendCredentialsTo, proxy: httpProxyOf(input.inputArgs, process.env) });
  if (relaysRtsp(input) && (urlCredentials(input.url) || secretParams(input.url).size > 0 || checksCertificate(input.url, input.tls))) {
    // Over UDP the media go beside the relay, and ffmpeg's own packets to the camera too.
    return () => new RtspTap(input.url, { endUnits: false, tls: input.tls, mediaBeside: rtspTransportOf(input) !== 'tcp', log, sendCredentialsTo });
  }
  return undefined;
}

/** ffmpeg options whose value is a secret of the camera's (SRT's `-passphrase`, a bearer token or session in `-headers` / `-cookies`, RTMP's `-rtmp_conn`, a stream's keys, SRTP's master key and salt). */
const SECRET_OPTIONS = new Set(['-passphrase', '-headers', '-cookies', '-rtmp_conn', '-decryption_key', '-cryptokey', '-srtp_in_params', '-srtp_out_params']);

/**
 * What of a camera's secrets a command line of ffmpeg's (`args`, as it is spawned) holds, each
 * named for a warning (`the URL's user and password`, `the URL's passphrase=`, `-passphrase`):
 * none where argus's relays carry them (an RTSP camera over TCP, UDP or multicast, an HTTP(S)
 * one, whose redirects the relay follows). Others (SRT, RTMP, RTSP tunnelled in HTTP) cannot be
 * relayed by argus, and every local user can read that command line (`ps`).
 */
export function exposedSecrets(args: readonly string[]): string[] {
  const out: string[] = [];
  args.forEach((a, i) => {
    if (SECRET_OPTIONS.has(a) && i + 1 < args.length) out.push(a);
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) return;
    const cred = urlCredentials(a);
    if (cred && `${cred.user}:${cred.password}` !== PLACEHOLDER_USERINFO) out.push("the URL's user and password");
    for (const [name, values] of secretParams(a)) if (values.some((v) => !isPlaceholderSecret(v))) out.push(`the URL's ${name}=`);
  });
  return out;
}
