import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { checkSourceAnalytics, LineSchema, RuleSchema, ZoneSchema } from './analytics.js';
import { filePath, finite, frameRate, HOME_TILDE, id, ms, TILDE_MESSAGE } from './common.js';
import { checkInputArgs } from './input-args.js';
import { cutUserInfo, rememberUrlSecrets } from '../../core/redact.js';
import { checksCertificate, normalFingerprint, relaysRtsp } from '../../core/rtsp-relay.js';

/** The metrics' `source` label for counts of every source together (drops in the Kafka and WebSocket sinks): no source may have it as its id. */
export const ALL_SOURCES = '_all';

/**
 * The `scheme://` a source's uri may have (sources/ffmpeg-args `sourceKind` tells files from
 * live sources); anything else is refused.
 */
export const SOURCE_SCHEMES: readonly string[] = ['file', 'rtsp', 'rtsps', 'http', 'https', 'rtmp', 'rtmps', 'srt', 'udp', 'tcp', 'v4l2'];

/** A uri's `scheme://`. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * A `scheme://` uri: a scheme argus opens (another would be taken for a file's name: udp://h:1
 * as ./udp:/h:1); `file:` only as `file:///absolute/path`; no option that makes ffmpeg listen
 * (`?listen` of tcp://, SRT's `mode=listener` or `rendezvous`): argus connects to its sources,
 * and a cameras-topic writer must not open ports on the workers. (`udp://` receives on a local
 * port: that is what it is.) Buffers a uri's query sizes are bounded (`QUERY_BOUNDS`). A uri
 * without `//` is a path (`cam:1.mp4`) or `asset:NAME`.
 */
function checkUri(uri: string, ctx: z.RefinementCtx): void {
  // Its password and secret query values, redacted from then on wherever they appear (core/redact).
  rememberUrlSecrets(uri);
  const scheme = SCHEME.exec(uri)?.[1]; // in lower case (the uri's transform)
  if (!scheme) {
    if (HOME_TILDE.test(uri)) ctx.addIssue({ code: 'custom', message: TILDE_MESSAGE });
    return;
  }
  if (!SOURCE_SCHEMES.includes(scheme)) {
    ctx.addIssue({ code: 'custom', message: `"${scheme}://" is not a scheme argus opens (${SOURCE_SCHEMES.map((x) => `${x}://`).join(', ')}; or a path, or asset:NAME)` });
    return;
  }
  if (scheme === 'file') {
    // An absolute path, whole: no query or fragment (fileURLToPath would drop them and open
    // another file), nothing fileURLToPath refuses (an encoded '/', a stray '%').
    let ok = /^file:\/\/\/[^?#]*$/.test(uri);
    if (ok) {
      try {
        fileURLToPath(uri);
      } catch {
        ok = false;
      }
    }
    if (!ok) ctx.addIssue({ code: 'custom', message: 'a file: URL names an absolute path, file:///path, percent-encoded, without ? or # (or give the path itself)' });
    return;
  }
  // A space or control character ends a URL wherever one is printed: a password with one
  // (`rtsp://admin:my pass@cam`) would be cut there and leak in logs; ffmpeg takes %20 as well.
  if (/[\s\x00-\x1f\x7f]/.test(uri)) {
    ctx.addIssue({ code: 'custom', message: 'a URL has no spaces or control characters: percent-encode them (a space is %20)' });
    return;
  }
  // ffmpeg's authority ends at the first '/', '?' or '#' (av_url_split): a password holding one
  // (`rtsp://admin:pa#ss@cam`) leaves `admin:pa` as host and port; ffmpeg never connects, and
  // the password, cut from its user name, would not be recognised as one where the URL is printed.
  if (cutUserInfo(uri)) {
    ctx.addIssue({ code: 'custom', message: "the part before '@' holds '/', '?' or '#': in a user name or password, percent-encode them (%2F, %3F, %23; an '@' in a path: %40)" });
    return;
  }
  // The host and port as ffmpeg reads them (the authority ends at the first '/', '?' or '#';
  // user-info ends at its last '@'). A port above 65535 threw out of the RTSP relay's connection
  // handler and stopped the whole process, every other camera with it.
  const authority = uri.slice(uri.indexOf('://') + 3).split(/[/?#]/, 1)[0];
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /\]?:(\d*)$/.exec(hostPort.startsWith('[') ? hostPort.slice(hostPort.indexOf(']')) : hostPort)?.[1];
  if (port !== undefined && port !== '' && !(Number(port) >= 1 && Number(port) <= 65535)) {
    ctx.addIssue({ code: 'custom', message: `the port ${port.length <= 12 ? port : `${port.slice(0, 12)}…`} is not 1–65535` });
    return;
  }
  if (/^(rtsps?|https?|rtmps?)$/.test(scheme) && /^(\[\])?(:\d*)?$/.test(hostPort)) {
    ctx.addIssue({ code: 'custom', message: `no host: ${scheme}://HOST[:PORT]/…` });
    return;
  }
  const tags = infoTags(uri);
  if (tags.some(([k, v]) => k === 'listen' || (k === 'mode' && /^(listener|rendezvous)$/i.test(v))))
    ctx.addIssue({ code: 'custom', message: 'ffmpeg would listen for a sender (?listen, mode=listener|rendezvous): argus connects to its sources; push to an RTSP server and give its rtsp:// URL' });
  // Buffers the protocol allocates in the ffmpeg process (the socket buffers the kernel bounds).
  for (const [name, max, unit] of QUERY_BOUNDS[scheme] ?? []) {
    for (const [k, value] of tags) {
      // ffmpeg reads these with strtol: decimal digits (what follows them is not read).
      // The value is repeated only when it is a number (other text may be a secret).
      if (k === name && (!/^\d{1,12}$/.test(value) || Number(value) > max))
        ctx.addIssue({ code: 'custom', message: `${scheme}:// ${name}${/^\d{1,12}$/.test(value) ? `=${value}` : ''}: at most ${max} ${unit}, in decimal digits (a buffer ffmpeg allocates)` });
    }
  }
}

/**
 * A uri's query as ffmpeg's protocols read it (`av_find_info_tag`): everything after the first
 * `?`, split at `&`, each key to its first `=`, nothing percent-decoded, `+` in a value a space.
 * (URLSearchParams decodes: `fifo%5Fsize=1&fifo_size=99999999` would pass as `fifo_size=1`,
 * where ffmpeg reads 99999999.) Every pair, in order; ffmpeg takes a key's first.
 */
function infoTags(uri: string): [string, string][] {
  const q = uri.indexOf('?');
  if (q < 0) return [];
  return uri
    .slice(q + 1)
    .split('&')
    .map((pair): [string, string] => {
      const eq = pair.indexOf('=');
      return eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1).replace(/\+/g, ' ')];
    });
}

/** Query options of a scheme that size a buffer ffmpeg allocates, with the most argus passes on. */
const QUERY_BOUNDS: Readonly<Record<string, readonly (readonly [string, number, string])[]>> = {
  // UDP's circular buffer, in 188-byte packets (ffmpeg's default 28 672: 5.4 MB): 98 MB at most.
  udp: [['fifo_size', 524_288, 'packets of 188 bytes']],
  // libsrt's receive buffer (its default about 12 MB).
  srt: [['rcvbuf', 268_435_456, 'bytes']],
};

/** One camera or file. */
export const SourceSchema = z
  .object({
    /** Unique id, used in messages, metrics and Kafka keys; not ALL_SOURCES. */
    id: id.refine((v) => v !== ALL_SOURCES, `"${ALL_SOURCES}" is reserved: the metrics count drops of every source under it`),
    /**
     * What to open: a path, file:///, rtsp(s)://, http(s)://, a network stream (rtmp(s)://,
     * srt://, udp://, tcp://), /dev/videoN or v4l2:// (V4L2), or `asset:NAME`
     * for a video listed in streams/assets.yaml (fetched and checksummed on first use).
     */
    uri: z
      .string()
      .min(1)
      // The scheme in lower case (`RTSP://`, `FILE:///`), as argus and ffmpeg compare it.
      .transform((uri) => uri.replace(SCHEME, (m) => m.toLowerCase()))
      .superRefine(checkUri),
    /** Files: 'native' plays at the file's frame rate like a camera; 'fast' as fast as inference allows. Default native. */
    rate: z.enum(['native', 'fast']).default('native'),
    /** Files: start again at the end. Default false. */
    loop: z.boolean().default(false),
    /** At most this many frames per second, resampled in ffmpeg (e.g. 60 fps cameras to 30); never a frame twice to make up the rate: a source below it keeps its own rate (a file's as ffmpeg delivers it, at a constant rate: a variable-rate file's at its tbr, the rate its timestamps fit, with frames repeated over its gaps, as without `fps`). Default: as the source. */
    fps: frameRate().optional(),
    /** RTSP transport: tcp, udp, udp_multicast, or tunnelled in http / https. Default tcp (no smeared frames from lost UDP packets). */
    rtspTransport: z.enum(['tcp', 'udp', 'udp_multicast', 'http', 'https']).default('tcp'),
    /**
     * RTSP over TCP: stamp each frame with the camera's own time from its RTCP sender reports
     * (`producedBy: camera`; README, "Latency"), read by a relay of argus's on 127.0.0.1 between
     * ffmpeg and the camera. false: no relay, frames stamped with their arrival at ffmpeg.
     * Default true.
     */
    cameraClock: z.boolean().default(true),
    /**
     * Extra ffmpeg input options before -i, each followed by its value, e.g. ["-hwaccel", "cuda"]:
     * hardware decoding, the decoder, demuxer, network and capture-device options only
     * (schema/input-args.ts lists them; no output, second input or log level).
     */
    inputArgs: z
      // A word, or a number written bare (`[-framerate, 30]`). What is neither (`1e400`, `.nan`,
      // a list) failed both halves of the union: "Invalid input", nothing said of what was wanted.
      .array(z.union([z.string(), finite().transform(String)], { errorMap: (issue, ctx) => ({ message: issue.code === 'invalid_union' ? 'a word (an option or its value), or a finite number' : ctx.defaultError }) }))
      .default([])
      .superRefine(checkInputArgs),
    /**
     * How ffmpeg decodes (README, "Latency"). Defaults measured on a 2-core machine: one decoder
     * thread (no frame-threading delay; inference keeps the other core) and low-latency input.
     */
    decode: z
      .object({
        /** Network sources: a short probe (0.2 s of stream; HTTP's default is 5 s; RTSP: 2 frame intervals for the rate); relayed RTSP cameras' access units ended for ffmpeg as they come (a frame period less); slice threading when threads ≠ 1; each frame flushed at once. Default true. */
        lowLatency: z.boolean().default(true),
        /** Decoder threads; 0 lets ffmpeg choose (frame threading: more throughput, one frame of delay per extra thread). Default 1. */
        threads: finite().int().min(0).max(64).default(1),
        /**
         * Interlaced video (576i/1080i from analogue-to-IP encoders): `auto` deinterlaces the frames flagged interlaced of a stream that ffmpeg reports interlaced (a field order), and leaves a progressive one untouched (no filter, no delay); `on` deinterlaces every frame (a camera that flags interlaced pictures progressive); `off` never. Deinterlacing holds each frame until the next (one frame of delay) and costs ffmpeg CPU (README, "Decoding for low latency"). Default auto.
         */
        deinterlace: z.enum(['auto', 'on', 'off']).default('auto'),
      })
      .strict()
      .default({}),
    /**
     * `rtsps://` cameras: how argus's relay checks the camera's certificate (README, "Latency").
     * Default: against Node's list of public certificate authorities (and NODE_EXTRA_CA_CERTS), for the camera's name or address.
     */
    tls: z
      .object({
        /** false: any certificate is taken (no protection from a machine in the middle). Default true. */
        verify: z.boolean().default(true),
        /** A PEM file (relative to the pipeline file) of the certificates to trust instead of Node's public list: a camera CA's. The camera's name or address is still checked. */
        ca: filePath().optional(),
        /** The SHA-256 fingerprint of the camera's own certificate (hex, colons optional): that certificate is taken, and no other, whoever signed it and whatever its names and dates (a self-signed camera's). */
        fingerprint: z
          .string()
          .regex(/^(sha256:)?([0-9a-f]{2}:?){31}[0-9a-f]{2}$/i, 'a SHA-256 fingerprint: 32 bytes in hex, colons optional (AB:CD:…)')
          .transform(normalFingerprint)
          .optional(),
      })
      .strict()
      .default({}),
    /**
     * Hosts (`name`, `address`, `[IPv6]`, each with `:port` or without: any port) that the camera's
     * credentials (its URL's user and password; an HTTP camera's `-headers` and `-cookies`) are
     * sent to when it redirects ffmpeg there. argus's relay follows a redirect (README, "Security"),
     * and sends them to the camera's own origin only (its scheme, host and port, as browsers and
     * curl do), never from TLS to plain. Default none.
     */
    sendCredentialsTo: z
      .array(
        z
          .string()
          .regex(/^(\[[0-9a-f:.]+\]|[^\s/?#@[\]:]+|[0-9a-f:]*:[0-9a-f:.]+)(:\d{1,5})?$/i, 'a host, as `name`, `address` or `[IPv6]`, with `:port` or without (no scheme, path or user)')
          // A port is compared as the redirect's number: `:99999`, `:0` or `:0554` matched no
          // address, so the credentials silently went nowhere. (A bare IPv6 address takes none:
          // `fd00::7:554` is an address; `[fd00::7]:554` the port.)
          .refine((h) => {
            const port = /^(?:\[[^\]]*\]|[^:]*):(\d+)$/.exec(h)?.[1];
            return port === undefined || (/^[1-9]\d*$/.test(port) && Number(port) <= 65535);
          }, 'the port is 1–65535, without leading zeros'),
      )
      .default([]),
    /** false skips this source. Default true. */
    enabled: z.boolean().default(true),
    /** Reconnecting after ffmpeg exits, the stream ends (live sources) or stalls. */
    reconnect: z
      .object({
        /** First delay, ms. Default 250. */
        initialDelayMs: ms(0).default(250),
        /** Delays double up to this, ms. Default 2000: a camera that comes back is picked up within ~2 s; each try costs only a connection attempt. */
        maxDelayMs: ms(0).default(2000),
        /** ± fraction of random jitter. Default 0.2. */
        jitter: finite().min(0).max(1).default(0.2),
        /** Reconnect attempts that may fail in a row: the source is marked failed when one more fails (N + 1 failures, the run that began them included); 0 never gives up. Default 0. */
        maxAttempts: finite().int().min(0).default(0),
        /** Streaming this long resets the attempt count and the delay, ms. Default 30000. */
        healthyResetMs: ms(0).default(30_000),
      })
      .strict()
      .default({}),
    /** Stall watchdog (live sources and native-rate files). */
    watchdog: z
      .object({
        /** No first frame this long after (re)starting ffmpeg: restart. Default 15000 ms. */
        startTimeoutMs: ms(100).default(15_000),
        /** No frame for this many frame periods: stalled, restart. Default 10. */
        stallFactor: finite().min(1).default(10),
        /** …but never less than this, ms. Default 2000. */
        stallMinMs: ms(50).default(2000),
        /**
         * …and never more than this, ms: the rate a stream declares (its metadata, its
         * bitstream's timing) does not stretch the watchdog without bound. A stream whose frames
         * come more than this apart (a time-lapse camera) needs it raised. Default 60000 (or
         * `stallMinMs` where that is higher).
         */
        stallMaxMs: ms(50).optional(),
      })
      .strict()
      .refine((w) => w.stallMaxMs === undefined || w.stallMaxMs >= w.stallMinMs, { message: 'stallMaxMs must not be below stallMinMs', path: ['stallMaxMs'] })
      .transform((w) => ({ ...w, stallMaxMs: w.stallMaxMs ?? Math.max(60_000, w.stallMinMs) }))
      .default({}),
    /** Polygon zones in this source's frame. */
    zones: z.array(ZoneSchema).default([]),
    /** Counting lines in this source's frame. */
    lines: z.array(LineSchema).default([]),
    /** Alert rules over this source's zones, lines and detections. */
    rules: z.array(RuleSchema).default([]),
  })
  .strict()
  .superRefine(checkSourceAnalytics)
  .superRefine(checkTls);

/** A source's `tls`: for rtsps:// only, and a check only argus's relay can make (ffmpeg's own RTSPS makes none). */
function checkTls(s: { uri: string; tls: { verify: boolean; ca?: string; fingerprint?: string }; rtspTransport: string; cameraClock: boolean; inputArgs: string[] }, ctx: z.RefinementCtx): void {
  const rtsps = /^rtsps:\/\//.test(s.uri);
  const given = !s.tls.verify || s.tls.ca !== undefined || s.tls.fingerprint !== undefined;
  if (!rtsps) {
    if (given) ctx.addIssue({ code: 'custom', path: ['tls'], message: 'tls is for rtsps:// cameras (how their certificate is checked)' });
    return;
  }
  if (!s.tls.verify && (s.tls.ca !== undefined || s.tls.fingerprint !== undefined)) {
    ctx.addIssue({ code: 'custom', path: ['tls', 'verify'], message: 'verify: false takes any certificate: remove ca and fingerprint, or verify: false' });
  }
  if (s.tls.ca !== undefined && s.tls.fingerprint !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['tls', 'fingerprint'], message: 'give ca or fingerprint, not both (a fingerprint takes that one certificate, whoever signed it)' });
  }
  if (checksCertificate(s.uri, s.tls) && !relaysRtsp({ kind: 'rtsp', url: s.uri, rtspTransport: s.rtspTransport, inputArgs: s.inputArgs })) {
    ctx.addIssue({
      code: 'custom',
      path: ['tls', 'verify'],
      message: "without argus's relay (RTSP tunnelled in HTTP, or inputArgs setting that or ffmpeg's listening) ffmpeg speaks TLS to the camera itself and cannot check its certificate: use the relay, or say tls: { verify: false }",
    });
  }
}

export type SourceConfig = z.infer<typeof SourceSchema>;
