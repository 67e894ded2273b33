import type { z } from 'zod';
import { rememberArgSecrets } from '../../core/redact.js';

/**
 * ffmpeg input options a source may add with `inputArgs` (before its `-i`), each followed by its
 * value. Anything else is refused: ffmpeg reads every word of its command line, so a free list
 * could add a second input, an output file (`… -y /any/path`: a file written wherever the worker
 * may write, by anyone who can write a pipeline or the cluster's cameras topic), a log file
 * (`-report`, `-dump_attachment`), or silence the log that argus reads the stream's size and
 * rate from (`-loglevel quiet`: the source would wait for ever). Every name here takes a value
 * on ffmpeg's command line (its own options with an argument, or AVOptions of a demuxer,
 * protocol or decoder, which always take one), so the words pair up as ffmpeg reads them.
 *
 * Not here, on purpose: `-hwaccel_output_format` (frames left in GPU memory, which argus's
 * filters cannot read), `-r` (new timestamps: live sources' arrival times and file pacing come
 * from the stream's own), `-timeout` (before ffmpeg 5, a listening RTSP server) and `-stimeout`
 * (gone since 5; argus's own watchdog restarts a silent source), `-cert_file`/`-key_file` (a
 * cameras-topic record would send the worker's client identity to a server of its choosing),
 * `-protocol_whitelist`.
 */
export const VALUE_OPTIONS: ReadonlySet<string> = new Set([
  // Hardware decoding and its devices.
  'hwaccel',
  'hwaccel_device',
  'init_hw_device',
  'vaapi_device',
  'qsv_device',
  // The decoder (`-c:v h264_cuvid`, …) and its options (NVIDIA's cuvid decoders').
  'c',
  'codec',
  'vcodec',
  'gpu',
  'surfaces',
  'resize',
  'crop',
  'deint',
  'extra_hw_frames',
  'strict',
  // Demuxing and probing.
  'f',
  'fflags',
  'flags',
  'flags2',
  'probesize',
  'analyzeduration',
  'fpsprobesize',
  'thread_queue_size',
  'max_delay',
  'reorder_queue_size',
  'buffer_size',
  'avioflags',
  'seekable',
  'err_detect',
  'ec',
  'skip_frame',
  'skip_loop_filter',
  'skip_idct',
  'discard',
  // Network protocols (RTSP, HTTP, HLS, TLS).
  'rw_timeout',
  'rtsp_flags',
  'allowed_media_types',
  'min_port',
  'max_port',
  'user_agent',
  'referer',
  'headers',
  'cookies',
  'http_proxy',
  'http_persistent',
  'multiple_requests',
  'reconnect',
  'reconnect_streamed',
  'reconnect_at_eof',
  'reconnect_on_network_error',
  'reconnect_on_http_error',
  'reconnect_delay_max',
  'live_start_index',
  'tls_verify',
  'ca_file',
  // Capture devices (V4L2: `-input_format mjpeg -video_size 1280x720 -framerate 30`) and raw streams.
  'input_format',
  'pixel_format',
  'video_size',
  's',
  'framerate',
  'standard',
  'rtbufsize',
]);

/** Options that take no value (ffmpeg's own yes/no options, in their `-no` form). */
export const FLAG_OPTIONS: ReadonlySet<string> = new Set(['noautorotate']);

/** Decoder options may name a stream: `-c:v`, `-codec:v:0`. */
const STREAM_SPECIFIED = new Set(['c', 'codec']);

/**
 * Input formats `-f` may name: containers, elementary streams and capture devices. Not `lavfi`,
 * whose filters can write files (`psnr=stats_file=…`) and read any (`movie=…`); not `sdp`,
 * whose file needs a protocol whitelist that is not passed on either.
 */
export const FORMATS: ReadonlySet<string> = new Set(['mjpeg', 'mpjpeg', 'h264', 'hevc', 'mpegts', 'flv', 'hls', 'rtsp', 'v4l2', 'video4linux2', 'mov', 'mp4', 'matroska', 'webm', 'avi', 'rawvideo', 'image2', 'gif']);

/** Options argus sets itself, and why each is not passed on. */
const OWN_OPTIONS: Record<string, string> = {
  i: 'a source has one input, its `uri`',
  re: 'argus paces a file itself (`rate: native`)',
  stream_loop: 'use `loop: true`',
  threads: 'use `decode.threads`',
  thread_type: 'use `decode.lowLatency`',
  rtsp_transport: 'use `rtspTransport`',
  ss: 'argus seeks by itself when a file restarts',
  loglevel: "argus reads ffmpeg's log for the stream's size and rate",
  v: "argus reads ffmpeg's log for the stream's size and rate",
  use_wallclock_as_timestamps: 'argus sets it for live sources',
  r: 'use `fps` (`-r` before the input replaces the stream\'s timestamps)',
  timeout: "argus's watchdog restarts a silent source (`watchdog.startTimeoutMs`, `stallFactor`); `-rw_timeout` bounds one read",
  stimeout: "argus's watchdog restarts a silent source (`watchdog.startTimeoutMs`, `stallFactor`); `-rw_timeout` bounds one read",
};

/**
 * Options whose value is memory ffmpeg may fill (packets, bytes) before argus reads a frame, or
 * allocates up front (hardware frames, on the GPU the workers share), with the most argus passes
 * on: a cameras-topic record must not make every worker's ffmpeg buffer gigabytes. Each is
 * generous for its use (ffmpeg's defaults: 5 MB, 8 packets, 3 MB, 500; cuvid's 25 surfaces).
 * An integer, at least ffmpeg's own minimum (below it ffmpeg refuses to start).
 */
export const BOUNDED_OPTIONS: Readonly<Record<string, { min: number; max: number; unit: string }>> = {
  probesize: { min: 32, max: 100_000_000, unit: 'bytes' },
  thread_queue_size: { min: 1, max: 1024, unit: 'packets' },
  rtbufsize: { min: 0, max: 268_435_456, unit: 'bytes' },
  reorder_queue_size: { min: -1, max: 10_000, unit: 'packets' },
  surfaces: { min: 0, max: 64, unit: 'surfaces' }, // 4.x's least is 0, 5.x's -1 (its default)
  extra_hw_frames: { min: -1, max: 64, unit: 'frames' },
};

/**
 * A number as ffmpeg reads one of these options: decimal (a lowercase `e` exponent: `1e6`), with
 * an SI prefix (`5M`, `64Ki`) and `B` (×8) as `av_strtod` takes them; undefined for anything else
 * (`1E3`: ffmpeg's E is exa; and ffmpeg would also evaluate an expression, which argus does not,
 * so it cannot bound it).
 */
export function ffmpegNumber(value: string): number | undefined {
  const m = /^(-?\d+(?:\.\d+)?(?:e\d+)?)(?:([kKMGT])(i?))?(B?)$/.exec(value);
  if (!m) return undefined;
  const power = m[2] ? 'kMGT'.indexOf(m[2] === 'K' ? 'k' : m[2]) + 1 : 0;
  return Number(m[1]) * (m[3] ? 1024 : 1000) ** power * (m[4] ? 8 : 1);
}

const NAME = /^-([a-z][a-z0-9_]*)(?::[a-z0-9:]+)?$/;
const RTSP_FLAGS = /^[+-]?(filter_src|prefer_tcp|satip_raw)([+-](filter_src|prefer_tcp|satip_raw))*$/;

/**
 * An option's word as messages may repeat it: `-name` (or `-c:v`), the shape of ffmpeg's own
 * options, not too long. Another word (a value where an option belongs, an option and its value
 * in one word: `-headers 'Authorization: Bearer …'`) is not repeated: it may be a secret.
 */
const optionWord = (word: string) => (word.length <= 40 && NAME.test(word) ? `"${word}"` : undefined);

/**
 * Checks `inputArgs` (zod refinement): allowed options, each with its value; each problem at its
 * index. A value is repeated in a message only when it is a number (the bounded options'): any
 * other may be a secret (`-headers`, `-cookies`), from `${env:…}` or not.
 */
export function checkInputArgs(args: readonly string[], ctx: z.RefinementCtx): void {
  // Their secrets (`-headers`' credentials, `-cookies`, a proxy's password, …), redacted from
  // then on wherever they appear (core/redact), refused options' too.
  rememberArgSecrets(args);
  const issue = (i: number, message: string) => ctx.addIssue({ code: 'custom', path: [i], message });
  for (let i = 0; i < args.length; i++) {
    const word = args[i];
    const m = NAME.exec(word);
    const name = m?.[1];
    if (name && FLAG_OPTIONS.has(name) && !word.includes(':')) continue;
    if (!m || !name || !VALUE_OPTIONS.has(name) || (word.includes(':') && !STREAM_SPECIFIED.has(name))) {
      const own = name && Object.hasOwn(OWN_OPTIONS, name) ? OWN_OPTIONS[name] : undefined;
      const shown = optionWord(word);
      if (own && shown) return issue(i, `${shown} is not passed on: ${own}`);
      const allowed = `Allowed: ${[...VALUE_OPTIONS].map((o) => `-${o}`).join(' ')} (each with a value), ${[...FLAG_OPTIONS].map((o) => `-${o}`).join(' ')}`;
      if (!shown) return issue(i, `not an option name ("-name"; each option is a word of its own, followed by its value as the next word; the word is not repeated here, as it may hold a secret). ${allowed}`);
      return issue(i, `${shown} is not an ffmpeg input option argus passes on. ${allowed}`);
    }
    if (i + 1 >= args.length) return issue(i, `"${word}" needs a value after it`);
    const value = args[++i];
    const bound = Object.hasOwn(BOUNDED_OPTIONS, name) ? BOUNDED_OPTIONS[name] : undefined;
    if (bound) {
      const n = ffmpegNumber(value);
      if (n === undefined || !Number.isInteger(n)) return issue(i, `-${name}${n === undefined ? '' : ` ${value}`}: not a whole number argus can bound (write it as 5000000 or 5M)`);
      if (n > bound.max) return issue(i, `-${name} ${value} is above the ${bound.max} ${bound.unit} argus passes on (memory ffmpeg may fill or allocate)`);
      if (n < bound.min) return issue(i, `-${name} ${value} is below ${bound.min}, the least ffmpeg takes`);
    }
    if (name === 'f' && !FORMATS.has(value)) return issue(i, `the input format of -f is not one argus passes on; allowed: ${[...FORMATS].join(', ')}`);
    // Listening turns the source into a server on the uri's address, for anyone to publish to:
    // only the named flags that do not (ffmpeg also takes numbers, `all` and `max`, listen included).
    if (name === 'rtsp_flags' && !RTSP_FLAGS.test(value)) return issue(i, `-rtsp_flags: not passed on: only filter_src, prefer_tcp and satip_raw, by name (listen, a server awaiting a publisher, is not: argus connects to cameras)`);
  }
}
