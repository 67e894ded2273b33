import { checksCertificate, relaysRtsp, rtspTransportOf, type CameraTls } from '../core/rtsp-relay.js';
import { HttpRelay, httpSecrets, httpTlsOf, relayedOptions } from './http-relay.js';
import { secretParams, urlCredentials } from './rtsp-auth.js';
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
export function secretsRelay(input: { kind: string; url: string; rtspTransport?: string; inputArgs?: readonly string[]; tls?: CameraTls }): (() => RtspTap | HttpRelay) | undefined {
  if (input.kind === 'http' && httpSecrets(input.url, input.inputArgs)) return () => new HttpRelay(input.url, { headers: relayedOptions(input.inputArgs).headers, tls: httpTlsOf(input.inputArgs) });
  if (relaysRtsp(input) && (urlCredentials(input.url) || secretParams(input.url).size > 0 || checksCertificate(input.url, input.tls))) {
    // Over UDP the media go beside the relay, and ffmpeg's own packets to the camera too.
    return () => new RtspTap(input.url, { endUnits: false, tls: input.tls, mediaBeside: rtspTransportOf(input) !== 'tcp' });
  }
  return undefined;
}
