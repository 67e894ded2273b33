import type { LetterboxAlign } from '../core/geometry.js';

export type SourceKind = 'file' | 'rtsp' | 'http' | 'v4l2';

export interface FfmpegInputSpec {
  /** What ffmpeg opens: a path, an rtsp:// or http(s):// URL, or a V4L2 device path. */
  url: string;
  kind: SourceKind;
  /** Files: 'native' plays at the file's frame rate (like a camera), 'fast' as fast as the pipeline pulls. */
  rate: 'native' | 'fast';
  /** Files: start over at the end. */
  loop: boolean;
  /** RTSP transport. Default 'tcp'. */
  rtspTransport?: 'tcp' | 'udp';
  /** Extra arguments placed before `-i` (hardware decode, demuxer options). */
  inputArgs?: readonly string[];
  /** Resample to this frame rate (drop/duplicate frames in ffmpeg). */
  fps?: number;
  /**
   * Files: start at this position, seconds from the file's start (resuming after a restart).
   * An input seek (`-ss` before `-i`, ffmpeg's accurate seek: frames before it are decoded
   * and dropped, never output).
   */
  seek?: number;
  /**
   * Files: seek this many seconds before `seek` and trim the rest in the filter graph. For
   * containers whose seek may land after the wanted time (MPEG-TS, …); frame-exact either way,
   * but at `rate: native` the margin is played out (paced) before the first frame. 0: plain seek.
   */
  seekMargin?: number;
}

export interface FfmpegOutputSpec {
  width: number;
  height: number;
  pixelFormat: 'bgr24' | 'rgb24';
  align: LetterboxAlign;
  /** Pad colour, one grey level 0–255 (114 for YOLOX). */
  padValue: number;
}

/** Classifies a source URI. Local paths and file:// URLs are files; /dev/video* is V4L2. */
export function sourceKind(url: string): SourceKind {
  if (/^rtsps?:\/\//i.test(url)) return 'rtsp';
  if (/^https?:\/\//i.test(url)) return 'http';
  if (/^v4l2:\/\//i.test(url) || /^\/dev\/video\d+$/.test(url)) return 'v4l2';
  return 'file';
}

/**
 * The ffmpeg command line for one source: decode, scale keeping aspect, pad to the model's
 * input, convert to packed 8-bit pixels, write raw frames to stdout. Scaling and the colour
 * conversion share one swscale pass; the scaled size is computed by the same formula as
 * `core/geometry.letterbox`, so box mapping is exact.
 */
export function buildFfmpegArgs(input: FfmpegInputSpec, out: FfmpegOutputSpec): string[] {
  // verbose: the scale filter then logs each (re)configuration, which is how a mid-stream
  // resolution change is noticed (a handful of lines per run, nothing per frame).
  const args = ['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'verbose'];
  switch (input.kind) {
    case 'file':
      if (input.rate === 'native') args.push('-re');
      if (input.loop) args.push('-stream_loop', '-1');
      break;
    case 'rtsp':
      // Probe briefly: a camera's stream is known to be video, and every second of probing is
      // a second of delay at start and after each reconnect.
      args.push('-rtsp_transport', input.rtspTransport ?? 'tcp', '-probesize', '262144', '-analyzeduration', '1000000');
      break;
    case 'v4l2':
      args.push('-f', 'v4l2');
      break;
    case 'http':
      break;
  }
  if (input.inputArgs) args.push(...input.inputArgs);
  let trim = 0;
  if (input.kind === 'file' && input.seek !== undefined && input.seek > 0) {
    const at = Math.max(0, input.seek - Math.max(0, input.seekMargin ?? 0));
    trim = input.seek - at;
    args.push('-ss', at.toFixed(6));
  }
  const url = input.kind === 'v4l2' ? input.url.replace(/^v4l2:\/\//i, '') : input.url.replace(/^file:\/\//i, '');
  args.push('-i', url, '-an', '-sn', '-dn', '-map', '0:v:0');

  const { width: W, height: H } = out;
  const r = `min(${W}/iw\\,${H}/ih)`;
  const sw = `min(${W}\\,max(1\\,round(iw*${r})))`;
  const sh = `min(${H}\\,max(1\\,round(ih*${r})))`;
  const px = out.align === 'center' ? `floor((${W}-iw)/2)` : '0';
  const py = out.align === 'center' ? `floor((${H}-ih)/2)` : '0';
  const pad = `0x${out.padValue.toString(16).padStart(2, '0').repeat(3)}`;
  const filters = [
    // Timestamps after an input seek start at 0 at the seek point: drop the margin's frames.
    ...(trim > 0 ? [`trim=start=${trim.toFixed(6)}`] : []),
    ...(input.fps ? [`fps=${input.fps}`] : []),
    `scale=w=${sw}:h=${sh}:flags=bilinear`,
    `format=${out.pixelFormat}`,
    `pad=${W}:${H}:${px}:${py}:color=${pad}`,
  ];
  args.push('-vf', filters.join(','), '-pix_fmt', out.pixelFormat, '-f', 'rawvideo', 'pipe:1');
  return args;
}
