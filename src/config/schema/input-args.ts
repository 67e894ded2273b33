import type { z } from 'zod';

/**
 * ffmpeg input options a source may add with `inputArgs` (before its `-i`), each followed by its
 * value. Anything else is refused: ffmpeg reads every word of its command line, so a free list
 * could add a second input, an output file (`… -y /any/path`: a file written wherever the worker
 * may write, by anyone who can write a pipeline or the cluster's cameras topic), a log file
 * (`-report`, `-dump_attachment`), or silence the log that argus reads the stream's size and
 * rate from (`-loglevel quiet`: the source would wait for ever).
 */
const VALUE_OPTIONS = new Set([
  // Hardware decoding.
  'hwaccel',
  'hwaccel_device',
  'hwaccel_output_format',
  'init_hw_device',
  // The decoder (`-c:v h264_cuvid`, …).
  'c',
  'codec',
  'vcodec',
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
  // Network protocols.
  'timeout',
  'rw_timeout',
  'stimeout',
  'rtsp_flags',
  'allowed_media_types',
  'user_agent',
  'headers',
  'reconnect',
  'reconnect_streamed',
  'reconnect_at_eof',
  'reconnect_on_network_error',
  'reconnect_delay_max',
  'multiple_requests',
  'tls_verify',
  'ca_file',
  'cert_file',
  'key_file',
  // Capture devices and raw streams (V4L2: `-input_format mjpeg -video_size 1280x720 -framerate 30`).
  'input_format',
  'pixel_format',
  'video_size',
  'framerate',
  'r',
]);

/** Decoder options may name a stream: `-c:v`, `-codec:v:0`. */
const STREAM_SPECIFIED = new Set(['c', 'codec']);

/**
 * Input formats `-f` may name: containers, elementary streams and capture devices. Not `lavfi`,
 * whose filters can write files (`psnr=stats_file=…`) and read any (`movie=…`).
 */
const FORMATS = new Set(['mjpeg', 'mpjpeg', 'h264', 'hevc', 'mpegts', 'flv', 'hls', 'rtsp', 'rtp', 'sdp', 'v4l2', 'video4linux2', 'mov', 'matroska', 'avi', 'rawvideo', 'image2', 'gif']);

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
};

const NAME = /^-([a-z][a-z0-9_]*)(?::[a-z0-9:]+)?$/;

/** Checks `inputArgs` (zod refinement): pairs of an allowed option and its value, each problem at its index. */
export function checkInputArgs(args: readonly string[], ctx: z.RefinementCtx): void {
  for (let i = 0; i < args.length; i += 2) {
    const word = args[i];
    const m = NAME.exec(word);
    const name = m?.[1];
    if (!m || !name || !VALUE_OPTIONS.has(name) || (word.includes(':') && !STREAM_SPECIFIED.has(name))) {
      const own = name && Object.hasOwn(OWN_OPTIONS, name) ? OWN_OPTIONS[name] : undefined;
      const message = own
        ? `"${word}" is not passed on: ${own}`
        : `"${word}" is not ${m ? 'an ffmpeg input option argus passes on' : 'an option ("-name"; each option is followed by its value)'}. Allowed, each followed by its value: ${[...VALUE_OPTIONS].map((o) => `-${o}`).join(', ')}`;
      ctx.addIssue({ code: 'custom', path: [i], message });
      return;
    }
    if (i + 1 >= args.length) {
      ctx.addIssue({ code: 'custom', path: [i], message: `"${word}" needs a value after it` });
      return;
    }
    const value = args[i + 1];
    if (name === 'f' && !FORMATS.has(value)) {
      ctx.addIssue({ code: 'custom', path: [i + 1], message: `input format "${value}" is not one argus passes on; allowed: ${[...FORMATS].join(', ')}` });
      return;
    }
  }
}
