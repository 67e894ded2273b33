/** RTSP transports whose control connection argus's relay carries as it is (RTP over TCP inside it, or over UDP beside it); not the HTTP tunnels. */
const PASSED_TRANSPORTS = new Set(['tcp', 'udp', 'udp_multicast']);

/**
 * Whether argus's relay can carry a source's RTSP connection, only passing it on: RTSP or RTSPS
 * over TCP, UDP or multicast (the media of the last two go beside the relay, straight from the
 * camera to ffmpeg), unless its input arguments set another transport or the role (`-rtsp_flags
 * listen`). Such a connection goes through a relay even without the camera's clock, where there
 * are credentials to keep off ffmpeg's command line or a certificate to check (sources/
 * secrets-relay). Here, below both, because the config's checks of `tls` need it too.
 */
export function relaysRtsp(input: { kind: string; url: string; rtspTransport?: string; inputArgs?: readonly string[] }): boolean {
  const args = input.inputArgs ?? [];
  return input.kind === 'rtsp' && /^rtsps?:\/\//i.test(input.url) && PASSED_TRANSPORTS.has(rtspTransportOf(input) ?? '') && !args.includes('-rtsp_flags');
}

/**
 * The RTSP transport ffmpeg is to use: its input arguments' `-rtsp_transport` (the last), else
 * the source's `rtspTransport` (default tcp). An `rtsps://` camera's is TCP, but for the HTTP
 * tunnels: ffmpeg's own RTSPS takes no other, its media inside its TLS connection, and through
 * the relay ffmpeg, given a plain rtsp:// URL, has to be told (over UDP the camera would send its
 * RTP in clear).
 */
export function rtspTransportOf(input: { url?: string; rtspTransport?: string; inputArgs?: readonly string[] }): string | undefined {
  const args = input.inputArgs ?? [];
  const transport = args.includes('-rtsp_transport') ? args[args.lastIndexOf('-rtsp_transport') + 1] : (input.rtspTransport ?? 'tcp');
  return /^rtsps:/i.test(input.url ?? '') && transport !== 'http' && transport !== 'https' ? 'tcp' : transport;
}

/**
 * Whether a source is relayed for its camera's clock (sources/rtsp-tap): one the relay can carry
 * over TCP, its RTP interleaved in the connection (`relaysRtsp`), unless turned off, or unless
 * its input arguments set what the relay decides (timestamps, the transport, the media it pairs).
 */
export function tapsCameraClock(input: { kind: string; url: string; rtspTransport?: string; cameraClock?: boolean; inputArgs?: readonly string[] }): boolean {
  return (
    relaysRtsp(input) &&
    (input.rtspTransport ?? 'tcp') === 'tcp' &&
    input.cameraClock !== false &&
    !(input.inputArgs ?? []).some((a) => /^-(use_wallclock_as_timestamps|allowed_media_types|rtsp_transport)$/.test(a))
  );
}

/** Whether `url` is an `rtsps://` camera whose certificate is to be checked (its `tls.verify`, true unless said), which only argus's relay can do. */
export function checksCertificate(url: string, tls: { verify: boolean } | undefined): boolean {
  return /^rtsps:\/\//i.test(url) && (tls?.verify ?? true);
}

/** How an `rtsps://` camera's certificate is checked (a source's `tls`). */
export interface CameraTls {
  /** false: any certificate (no check). */
  verify: boolean;
  /** A PEM file of the certificates to trust instead of the system's. */
  ca?: string;
  /** The SHA-256 fingerprint of the one certificate to accept (upper-case hex, colon-separated). */
  fingerprint?: string;
}

/** A fingerprint as given (hex, with or without colons, `sha256:` optional) in Node's form: `AB:CD:…`. */
export function normalFingerprint(text: string): string {
  const hex = text.replace(/^sha256:/i, '').replace(/:/g, '').toUpperCase();
  return hex.match(/../g)!.join(':');
}
