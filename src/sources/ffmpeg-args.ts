import { randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import type { LetterboxAlign, LetterboxRounding } from '../core/geometry.js';
import { rtspTransportOf, type CameraTls } from '../core/rtsp-relay.js';

const RTSP_TRANSPORT: ReadonlySet<string> = new Set(['-rtsp_transport']);

/**
 * What a source is: a file, or a live source (an RTSP camera, an HTTP(S) stream, another network
 * stream: RTMP, SRT, UDP or TCP, such as an encoder's MPEG-TS; a V4L2 device).
 */
export type SourceKind = 'file' | 'rtsp' | 'http' | 'stream' | 'v4l2';

export interface FfmpegInputSpec {
  /** What ffmpeg opens: a path, an rtsp:// or http(s):// URL, or a V4L2 device path. */
  url: string;
  kind: SourceKind;
  /** Files: 'native' plays at the file's frame rate (like a camera), 'fast' as fast as the pipeline pulls. */
  rate: 'native' | 'fast';
  /** Files: start over at the end. */
  loop: boolean;
  /** RTSP transport. Default 'tcp'. */
  rtspTransport?: 'tcp' | 'udp' | 'udp_multicast' | 'http' | 'https';
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
   * and at `rate: native` the margin is decoded as fast as ffmpeg can (not played out). 0: plain seek.
   */
  seekMargin?: number;
  /** Decoding settings (the source's `decode` in the config). Default: low latency, one decoder thread. */
  decode?: DecodeSpec;
  /**
   * RTSP over TCP: stamp frames with the camera's clock from its RTCP sender reports, through
   * argus's relay (sources/rtsp-tap.ts). Default true; false stamps them with their arrival at
   * ffmpeg, as other live sources.
   */
  cameraClock?: boolean;
  /** `rtsps://`: how the relay checks the camera's certificate (`ca` a path). Default: verified against Node's list of public CAs. */
  tls?: CameraTls;
  /**
   * Hosts (`host` or `host:port`) besides the camera's own origin that its credentials go to when
   * it redirects ffmpeg there, through argus's relay (relay-redirect). Default none.
   */
  sendCredentialsTo?: readonly string[];
  /**
   * The URL of argus's relay to the camera (rtsp-tap), which ffmpeg opens instead of `url`: the
   * frames' times it prints are then their RTP timestamps (no wall-clock timestamps), of the
   * video stream alone.
   */
  relay?: string;
  /**
   * The URL of argus's relay used only to keep the camera's credentials off ffmpeg's command
   * line (a source run without the camera's clock: rtsp-tap passes bytes on, and adds the
   * credentials): ffmpeg opens it instead of `url`, and runs as it would on `url`.
   */
  credentialRelay?: string;
  /**
   * A local still image that argus decoded itself (sources/still-image.ts, the one decoder of
   * still images): ffmpeg reads it from its stdin as one packed RGB frame of this size
   * (`stillInput`), instead of decoding `url`.
   */
  still?: { width: number; height: number };
  /**
   * The stream is interlaced by ffmpeg's report of it (a field order, `interlacedBy`): with
   * `decode.deinterlace: auto` its frames flagged interlaced are deinterlaced. Set by
   * ffmpegSource once a run has read it (SourceMemo.interlaced).
   */
  interlaced?: boolean;
}

/**
 * How ffmpeg decodes. Measured choices (README, "Latency"):
 * - `threads`: decoder threads. 1 by default: on a machine where inference needs the cores, a
 *   second decoder thread slows inference more than it speeds decoding, and H.264's frame
 *   threading holds back one frame per extra thread (33 ms each at 30 fps). 0: ffmpeg's choice.
 * - `lowLatency`: for network sources, a short probe (the first frame comes sooner; not
 *   `-fflags nobuffer`, which throws away the packets read while probing: a whole second of
 *   frames, and the key frame the next ones need); with more than one thread, slice threading
 *   (no frame delay); every frame is flushed to argus as soon as it is written. Default true.
 */
export interface DecodeSpec {
  lowLatency: boolean;
  threads: number;
  /** See `deinterlaceFilters`. Default `auto`. */
  deinterlace?: Deinterlace;
}

export const DEFAULT_DECODE: DecodeSpec = { lowLatency: true, threads: 1, deinterlace: 'auto' };

/**
 * Deinterlacing (README, "Decoding for low latency"): `auto` for a stream that ffmpeg reports
 * interlaced (a field order: 576i/1080i from an analogue-to-IP encoder), `on` for every source,
 * `off` never.
 */
export type Deinterlace = 'auto' | 'on' | 'off';

/**
 * ffmpeg's deinterlacer, one frame out for each frame in (`send_frame`: the rate kept, each
 * output frame with its input's time), each field's parity from the frame's own flag. `flagged`:
 * only the frames the decoder flags interlaced (a stream that mixes progressive and interlaced
 * pictures keeps its progressive ones as they are); else every frame (a camera that sends
 * interlaced pictures flagged progressive). bwdif (yadif's successor: the same cost, sharper
 * edges) holds each frame until the next one has come (its temporal check looks at both
 * neighbours): one frame of delay.
 */
export function deinterlaceFilter(flagged: boolean): string {
  return `bwdif=mode=send_frame:parity=auto:deint=${flagged ? 'interlaced' : 'all'}`;
}

/**
 * The deinterlacing filters of a graph decoding `url`: `on`, every frame; `auto`, the frames
 * flagged interlaced where the stream is `interlaced` (a source's: ffmpeg reported it so); none
 * otherwise, so that a progressive source gets no filter, no delay and no cost. A still image
 * is never deinterlaced.
 */
export function deinterlaceFilters(mode: Deinterlace, interlaced: boolean, url: string): string[] {
  if (mode === 'off' || isStillImage(url)) return [];
  if (mode === 'on') return [deinterlaceFilter(false)];
  return interlaced ? [deinterlaceFilter(true)] : [];
}

/**
 * Whether ffmpeg reports each output frame's time on its log (the `metadata` filter's print, one
 * pair of lines per frame): for live sources, whose frames are stamped with ffmpeg's wall clock
 * when the demuxer receives them (`producedBy: arrival`).
 */
export function reportsFrameTimes(input: FfmpegInputSpec): boolean {
  return input.kind !== 'file';
}

/**
 * ffmpeg reports each frame it filters on its log (`frameTimeFilters`), every source: live ones
 * for their times (`reportsFrameTimes`), and any, so that a mid-stream resolution change, which
 * ffmpeg reports on its log while it writes the frames through another pipe, is placed at the
 * first frame of the new picture (ffmpeg-source: letterboxed frames written before its new scaler
 * keep the old letterbox; frames at the source's size are the old picture's up to it, and the
 * source is restarted there, so that no frame of the new picture is stretched to the old size).
 */
export interface FfmpegOutputSpec {
  width: number;
  height: number;
  pixelFormat: 'bgr24' | 'rgb24';
  align: LetterboxAlign;
  /** Pad colour, one grey level 0–255 (114 for YOLOX). */
  padValue: number;
  /** How the scaled size is made whole (the model's reference). Default round. */
  rounding?: LetterboxRounding;
  /**
   * What ffmpeg delivers. `letterbox` (default): frames scaled (swscale bilinear) and padded to
   * `width × height`. `source`: frames at the source's own size, only converted to
   * `pixelFormat`; argus letterboxes them (preprocess/letterbox.ts, the model's exact resize).
   * `source-yuv`: the same, but delivered as 4:2:0 YUV (`yuv420p`, or `yuvj420p` for a
   * full-range source) and converted by argus's kernel, the rows it samples, as
   * ffmpeg would have (preprocess/yuv.ts): half the bytes, and no conversion in ffmpeg.
   */
  frame?: 'letterbox' | 'source' | 'source-yuv';
}

/**
 * Frames at the source's size have at most this many pixels (4K UHD's, 25 MB a frame in 8-bit
 * RGB): larger pictures are reduced to it keeping their aspect (boxes and pixel zones are then in
 * the reduced picture's pixels). `boundedSize` is the rule, `sourceBoundFilter` ffmpeg's form.
 */
export const MAX_SOURCE_PIXELS = 3840 * 2160;

/**
 * The largest picture ffmpeg decodes from a video or GIF, a side squared: 8192×8192 (67 MP; DCI
 * 8K and 11K 360° cameras fit). Larger ones are not decoded at all (ffmpeg's `-max_pixels`, an input option): the
 * reduction to MAX_SOURCE_PIXELS happens after decoding, and a 499-byte GIF that claims a
 * 12000×12000 canvas had ffmpeg allocate 144 MP for each of its frames (722 MB, 0.6 s of CPU a
 * frame). A still image is decoded once: it may be as large as sharp takes (MAX_STILL_SIDE), so
 * a 48 MP phone photo is read by `run` and `preview` as by `detect`. `pictureTooLarge` reads
 * ffmpeg's refusal.
 */
const MAX_DECODE_SIDE = 8192;

/** The largest still image decoded, a side squared: sharp's own default limit (0x3FFF × 0x3FFF, 268 MP). */
const MAX_STILL_SIDE = 0x3fff;

/** Still-image formats (by extension): one picture, read by sharp in `argus detect`, by ffmpeg as a source. */
const STILL_IMAGE_EXTENSIONS: ReadonlySet<string> = new Set(['.jpg', '.jpeg', '.png', '.webp', '.tif', '.tiff', '.avif', '.heic', '.heif']);

/** Whether a path (or URL) names a still image, by its extension (a URL's query and fragment aside; a path's `?` and `#` are its name's). */
export function isStillImage(url: string): boolean {
  const path = hasScheme(url) ? url.split(/[?#]/)[0] : url;
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') && STILL_IMAGE_EXTENSIONS.has(path.slice(dot).toLowerCase());
}

/** The side whose square is the most pixels ffmpeg decodes from `url`'s pictures (see MAX_DECODE_SIDE). */
const decodeSide = (url: string) => (isStillImage(url) ? MAX_STILL_SIDE : MAX_DECODE_SIDE);

/** The input options bounding what ffmpeg decodes from `url` (before `-i`, ahead of the user's own input arguments). */
export function decodeBoundArgs(url: string): string[] {
  return ['-max_pixels', String(decodeSide(url) ** 2)];
}

/**
 * The input options and name for a still image argus decoded (`FfmpegInputSpec.still`): one
 * packed RGB frame on ffmpeg's stdin, at 25 frames a second (the rate of ffmpeg's own image
 * reader, so a looped picture comes as often as before).
 */
export function stillInput(size: { width: number; height: number }): { args: string[]; url: string } {
  return { args: ['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-video_size', `${size.width}x${size.height}`, '-framerate', '25'], url: 'pipe:0' };
}

/** The filter that repeats a still image's one frame for ever (`loop: true`: a pipe cannot be read again as a file is, with -stream_loop). */
export const LOOP_STILL = 'loop=loop=-1:size=1';

/** The refusal of a picture larger than decodeBoundArgs allow, as a message. */
export function tooLargeMessage(url: string, size: { width: number; height: number }): string {
  const side = decodeSide(url);
  return `${url}: its pictures are ${size.width}x${size.height}, more than the ${side ** 2} pixels argus decodes from ${isStillImage(url) ? `a still image (sharp's limit, ${side}x${side})` : `a video or GIF (${side}x${side})`}`;
}

/** The size a `w × h` picture is reduced to (even sides), or itself when within MAX_SOURCE_PIXELS. */
export function boundedSize(w: number, h: number): { width: number; height: number } {
  if (w * h <= MAX_SOURCE_PIXELS) return { width: w, height: h };
  const f = Math.sqrt(MAX_SOURCE_PIXELS / (w * h));
  return { width: Math.trunc((w * f) / 2) * 2, height: Math.trunc((h * f) / 2) * 2 };
}

/**
 * The filter keeping at most one frame in each 1/fps interval of the frames' timestamps: at most
 * `fps` frames a second, never a duplicate (a rate above the source's keeps every frame once).
 * The intervals are counted from the first frame's time. `centred` (live sources): each interval
 * is centred on the first frame's time plus a multiple of 1/fps, so a source at exactly `fps`
 * keeps every frame: its times sit mid-interval, and jitter of up to a quarter period each way
 * (wall-clock arrival times) or times exactly on a multiple of 1/fps (which floating point puts
 * on either side of an edge counted from 0) move none into its neighbour's interval; counted from
 * 0, 10 fps sampling of a 10 fps source kept 60–66 of 80 frames. Otherwise (files, whose times
 * are regular) each interval starts there: the first frame at or after each 1/fps step (or up to
 * 20 ms before it: rounded container times). A source
 * within a fraction of a percent of `fps`, with jitter, still loses the frames whose phase drifts
 * onto an edge (956 of 1000 at 9.99 fps, ±15 ms).
 */
export function sampleFilter(fps: number, centred = true): string {
  // ld(0): the first kept frame's time. A time more than 1/fps before the last kept one starts
  // the count again from that frame (a relayed camera's RTP time can jump back); a smaller step
  // back falls in a kept interval and is dropped (it was kept, a near-duplicate, before).
  // Files: a frame up to 20 ms (at most a quarter period) before a step counts for it: container
  // times are rounded (a 15 fps GIF's to 10 ms, 0.13 s for 0.1333 s; an MKV's to 1 ms), and
  // with none, --fps 15 kept 25 of a 15 fps GIF's 37 frames.
  const bin = (t: string) => `floor((${t}-ld(0))*${fps}+${centred ? 0.5 : Math.min(0.25, 0.02 * fps)})`;
  return `select=if(isnan(prev_selected_t)+lt(t\\,prev_selected_t-${1 / fps})\\,st(0\\,t)*0+1\\,gt(${bin('t')}\\,${bin('prev_selected_t')}))`;
}

/**
 * Filters that print each frame's time (µs) on ffmpeg's log, in output order, each followed by
 * the line `<key>=1` (read with `FrameTimes` of stderr-probe: with the run's tag in the key, a
 * time that a file's metadata or a server's text forged is not counted). Pair them with `-vsync
 * passthrough` so that each filtered frame is written once, and the times pair with the frames.
 */
export function frameTimeFilters(tag?: string): string[] {
  const key = frameTimeKey(tag);
  return ['settb=AVTB', `metadata=mode=add:key=${key}:value=1`, `metadata=mode=print:key=${key}`];
}

/** The key the frame-time filters print after each frame's time: `argus_<run tag>` (`argus` untagged). */
export function frameTimeKey(tag?: string): string {
  return tag ? `argus_${tag}` : 'argus';
}

/**
 * A picture's size as players show it, by its sample aspect ratio, the shape of its pixels: wide
 * pixels (a SAR above 1) widen it, tall ones (below 1) make it taller, so that no stored pixel is
 * lost (a DVD's 720x576 at 16:15 is shown 768x576, an HDV camera's 1440x1080 at 4:3 1920x1080, an
 * analogue camera's 704x576 at 12:11 768x576, and such a clip turned a quarter, 576x704 at 11:12,
 * 576x768; a SAR of 1 or none, or one beyond MIN_SAR…MAX_SAR, leaves it as it is). argus works on the picture as shown, as it does
 * on a rotated one: the model was trained on square pixels (squeezed to half its width, a person
 * was found with a lower score and a box a fifth too short), and boxes, zones, snapshots and
 * annotated video then match what a player shows. `DISPLAY_W` and `DISPLAY_H` are ffmpeg's form
 * (its scale filter's expressions; `sar` is 1 when the stream has none), which
 * `sourceBoundFilter` and the letterbox scale to.
 */
export function displaySize(width: number, height: number, sar: number): { width: number; height: number } {
  if (!(sar >= MIN_SAR && sar <= MAX_SAR)) return { width, height };
  return { width: Math.round(width * Math.max(1, sar)), height: Math.round(height / Math.min(1, sar)) };
}
/**
 * The SARs taken as pixel shapes: 1:8 to 8:1 (cameras and broadcast use 1:2 to 2:1). One beyond
 * is a broken or hostile file's, ignored (1:3000 made 640x480 pictures 60x136656 frames).
 */
const MIN_SAR = 1 / 8;
const MAX_SAR = 8;
const SAR = `if(between(sar\\,${MIN_SAR}\\,${MAX_SAR})\\,sar\\,1)`;
const DISPLAY_W = `round(iw*max(1\\,${SAR}))`;
const DISPLAY_H = `round(ih/min(1\\,${SAR}))`;

/**
 * The filters before argus's scale filter (`sourceBoundFilter`, or the letterbox's): for a still
 * image, its pixels are taken as square. ffmpeg reads a JPEG's JFIF density (and a PNG's pHYs) as
 * a SAR, which image viewers ignore: a scan at 300x600 dpi would be stretched to twice its width.
 * (A still image on disk comes decoded by sharp, as raw frames of no SAR: `stillInput`; this is
 * for one named by URL, which ffmpeg fetches and decodes.)
 */
function squarePixels(url: string): string[] {
  return isStillImage(url) ? ['setsar=1'] : [];
}

/**
 * The ffmpeg filters applying `boundedSize` to the picture as shown (`displaySize`; `url`'s
 * still images as stored): unscaled within the bound and of square pixels, only the conversion.
 */
export function sourceBoundFilter(url: string): string {
  const M = MAX_SOURCE_PIXELS;
  const [W, H] = [DISPLAY_W, DISPLAY_H];
  const side = (v: string) => `'if(gt(${W}*${H}\\,${M})\\,trunc(${v}*sqrt(${M}/(${W}*${H}))/2)*2\\,${v})'`;
  return [...squarePixels(url), `scale=w=${side(W)}:h=${side(H)}`].join(',');
}

/** The size of one frame ffmpeg writes, in bytes: the model's input, or the source's size. */
export function frameBytes(out: FfmpegOutputSpec, srcWidth: number, srcHeight: number): number {
  if (out.frame === 'source-yuv') return srcWidth * srcHeight + 2 * Math.ceil(srcWidth / 2) * Math.ceil(srcHeight / 2);
  return out.frame === 'source' ? srcWidth * srcHeight * 3 : out.width * out.height * 3;
}

/**
 * Files resumed at `seek` with a `seekMargin`: the seconds ffmpeg decodes (and trims) before
 * the first frame it delivers. 0 without a seek.
 */
export function seekTrim(input: FfmpegInputSpec): number {
  if (input.kind !== 'file' || input.seek === undefined || !(input.seek > 0)) return 0;
  const at = Math.max(0, input.seek - Math.max(0, input.seekMargin ?? 0));
  return input.seek - at;
}

/**
 * Containers with an index (ffmpeg's format names, as its `Input #0` line gives them): their seek
 * lands on the key frame at or before the wanted time, and their duration is the index's. Others
 * (MPEG-TS, MPEG-PS, raw streams, …) are read as a stream: a seek may land after the time, and
 * ffmpeg's duration is a guess from their first and last timestamps (two MPEG-TS recordings joined
 * with `cat`, each with its own timestamps, are given the length of one).
 */
export function indexedFormat(format: string | undefined): boolean {
  return format !== undefined && /^(mov|mp4|m4a|3gp|3g2|mj2|matroska|webm|avi|flv|ivf)(,|$)/.test(format);
}

/** Output options copying none of the input's metadata (global, streams') or chapters. */
export const NO_INPUT_METADATA: readonly string[] = ['-map_metadata', '-1', '-map_metadata:s', '-1', '-map_chapters', '-1'];

/**
 * ffmpeg's stdout under a name of this run's own (`pipe:` followed by anything but a number
 * writes to stdout in every ffmpeg): the log names it on the output's report, `Output #0, …, to
 * 'pipe:argus-…':`, which a line that a file's metadata forged on the log (a key's line breaks
 * are printed as they are) cannot name, not knowing it.
 */
export function taggedStdout(tag: string): string {
  return `pipe:argus-${tag}`;
}

/** An ffmpeg run's own tag (16 hex digits) for `taggedStdout` and `frameTimeFilters`: not a pipeline run's (sinks/message.ts runTag). */
export function outputTag(): string {
  return randomBytes(8).toString('hex');
}

/**
 * What ffmpeg is given to open for `url`: a URL with a scheme as it is; a path (or a file://
 * URL's path) through ffmpeg's file protocol by name (`file:` + the path), so that a path that
 * reads like one of ffmpeg's protocols (`cam-1:2.mp4`, `concat:…`) is only a file's name.
 */
export function ffmpegInput(url: string): string {
  if (/^file:\/\//i.test(url)) return `file:${url.slice('file://'.length)}`;
  return hasScheme(url) ? url : `file:${url}`;
}

/**
 * How ffmpeg opens a source's `url` of kind `kind` where no relay of argus's stands between them:
 * the input options that name its demuxer (`-f v4l2` for a V4L2 device, which ffmpeg does not
 * guess from a path) and what `-i` names (a V4L2 device by its path, `v4l2://` taken off: not a
 * protocol of ffmpeg's; a file through ffmpegInput; a URL as it is). The one rule for a run's
 * source (buildFfmpegArgs) and argus detect and preview (tools/frames): preview handed ffmpeg
 * `file:/dev/video0` without `-f v4l2`, and `v4l2://…` as it was (Protocol not found).
 */
export function sourceInput(url: string, kind: SourceKind = sourceKind(url)): { format: readonly string[]; url: string } {
  if (kind === 'v4l2') return { format: V4L2_FORMAT, url: url.replace(/^v4l2:\/\//i, '') };
  return { format: [], url: kind === 'file' ? ffmpegInput(url) : url };
}

const V4L2_FORMAT: readonly string[] = ['-f', 'v4l2'];

/** `url` starts with `scheme://` (a URL, not a path). */
export function hasScheme(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url);
}

/**
 * Classifies a source URI. Local paths and file:// URLs are files; /dev/videoN and udev's stable
 * names of the same devices (/dev/v4l/by-id/…, /dev/v4l/by-path/…: a camera keeps its name
 * whatever order the USB bus found them in) are V4L2. Such a name was a file: ffmpeg read the
 * device through its file protocol, without `-f v4l2`.
 */
export function sourceKind(url: string): SourceKind {
  if (/^rtsps?:\/\//i.test(url)) return 'rtsp';
  if (/^https?:\/\//i.test(url)) return 'http';
  if (/^(rtmps?|srt|udp|tcp):\/\//i.test(url)) return 'stream';
  if (/^v4l2:\/\//i.test(url) || /^\/dev\/(video\d+|v4l\/by-(id|path)\/[^/]+)$/.test(url)) return 'v4l2';
  return 'file';
}

/** Whether a file of these stats is read once (readsOnce): a named pipe, a socket, a character device. */
export const fileReadsOnce = (st: Pick<Stats, 'isFIFO' | 'isSocket' | 'isCharacterDevice'>): boolean => st.isFIFO() || st.isSocket() || st.isCharacterDevice();

/**
 * Whether `url` gives its stream to one reader only, once: a named pipe, socket or character
 * device as a file (a writer's pipe: what the first read took is gone, and a writer that saw it
 * close has ended), or a network URL ffmpeg listens on (`tcp://…?listen`, `srt://…?mode=listener`: the sender
 * that connected is dropped). Such an input is never read a second time to deinterlace it
 * (`decode.deinterlace: auto`): its first read has the deinterlacer, on the frames flagged
 * interlaced (a progressive stream's pass through it untouched, a frame later). Read again, an
 * interlaced stream from a named pipe gave no frame (the second ffmpeg waited for a writer that
 * had gone). The one test of it, for argus detect and preview (tools/frames) and a run's sources
 * (ffmpegSource).
 */
export function readsOnce(url: string, kind: SourceKind = sourceKind(url)): boolean {
  // A file is judged by its stats, looked at asynchronously and bounded (file-look fileLook, then
  // fileReadsOnce): a statSync here held the event loop on a hung network mount.
  if (kind === 'file') throw new Error('readsOnce: a file is judged by fileLook');
  // Only TCP (`?listen`) and SRT (`?mode=listener`) take the role from the URL: ffmpeg's HTTP,
  // RTSP and RTMP take it from an option (`-listen`, `-rtsp_flags listen`, which inputArgs
  // refuses), and given `http://…?listen=1` or `rtsp://…?listen` they connect as clients, as to
  // any camera (such a URL was judged read once: no second read to deinterlace, its rate kept).
  if (/^tcp:\/\//i.test(url)) return /[?&]listen(=[12]|=true)?(&|$)/i.test(url);
  return /^srt:\/\//i.test(url) && /[?&]mode=listener(&|$)/i.test(url);
}

/**
 * A source's `inputArgs` as ffmpeg is given them (after argus's own input options): an rtsps://
 * camera's without `-rtsp_transport` (rtspTransportOf decides it, given before them). For a run's
 * source (buildFfmpegArgs) and argus preview alike.
 */
export function userInputArgs(url: string, kind: SourceKind, inputArgs: readonly string[]): readonly string[] {
  return kind === 'rtsp' && /^rtsps:/i.test(url) ? withoutOptions(inputArgs, RTSP_TRANSPORT) : inputArgs;
}

/**
 * `args` (a source's inputArgs, option and value pairs) without the options `names` and their
 * values: an rtsps:// camera's `-rtsp_transport` (rtspTransportOf decides it, given before
 * them), or the TLS options of an HTTP camera behind argus's relay (which makes that check).
 */
function withoutOptions(args: readonly string[], names: ReadonlySet<string>): string[] {
  return args.filter((a, i) => !names.has(a) && !(i > 0 && names.has(args[i - 1])));
}

/**
 * The options a network source's input is opened with, before the source's own inputArgs: an
 * RTSP camera's transport, and the probe that low-latency decoding (`decode.lowLatency`) keeps
 * short. One list for a run (buildFfmpegArgs) and argus preview (tools/preview), whose first
 * frame came later than a run's without them. None for files and devices.
 */
export function networkInputArgs(input: { kind: SourceKind; url: string; rtspTransport?: string; inputArgs?: readonly string[]; decode?: DecodeSpec }): string[] {
  const decode = input.decode ?? DEFAULT_DECODE;
  switch (input.kind) {
    case 'rtsp': {
      // Probe briefly: a camera's stream is known to be video, and every second of probing is
      // a second of delay at start and after each reconnect.
      const args = ['-rtsp_transport', rtspTransportOf(input) ?? 'tcp', '-probesize', '262144', '-analyzeduration', decode.lowLatency ? '200000' : '1000000'];
      // RTP packets carry no durations, so -analyzeduration never ends ffmpeg's probe of a camera:
      // it reads on until it has 20 frame intervals to guess the rate from (after the 7 frames an
      // H.264 stream needs decoded for its first timestamps): 2 s after the key frame at 10 fps,
      // 0.8 s at 25. Two intervals give a constant-rate camera's rate as well (10 tbr at 10 fps),
      // and a live source's pts are held to the clock anyway (ffmpeg-source.ts). The first frame
      // of the test server's 10 fps camera came 2.0 s after it started sending instead of 3.4 s.
      if (decode.lowLatency) args.push('-fpsprobesize', '2');
      return args;
    }
    case 'http':
    case 'stream':
      // ffmpeg's default probe of an HTTP (or UDP, SRT, …) input is 5 s of stream: 5 s before
      // the first frame.
      return decode.lowLatency ? ['-probesize', '1000000', '-analyzeduration', '200000'] : [];
    default:
      return [];
  }
}

/**
 * The ffmpeg command line for one source: decode, scale keeping aspect, pad to the model's
 * input, convert to packed 8-bit pixels, write raw frames to stdout. Scaling and the colour
 * conversion share one swscale pass; the scaled size is computed by the same formula as
 * `core/geometry.letterbox`, so box mapping is exact.
 */
export function buildFfmpegArgs(input: FfmpegInputSpec, out: FfmpegOutputSpec, tag?: string, caps: { autoscale?: boolean } = {}): string[] {
  const outputUrl = tag ? taggedStdout(tag) : 'pipe:1';
  // verbose: the scale filter then logs each (re)configuration, which is how a mid-stream
  // resolution change is noticed (a handful of lines per run, nothing per frame). repeat: each
  // line printed when it happens, a repeat too (not held back for a `Last message repeated`
  // line): the log counts the frames written as they are (ffmpeg-source).
  const args = ['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'repeat+verbose'];
  const decode = input.decode ?? DEFAULT_DECODE;
  const live = reportsFrameTimes(input);
  const opened = sourceInput(input.url, input.kind);
  if (decode.threads > 0) args.push('-threads', String(decode.threads));
  if (decode.lowLatency && decode.threads !== 1) args.push('-thread_type', 'slice');
  // Each packet is stamped with the wall clock when the demuxer reads it (before decoding),
  // and -copyts keeps that time through to the filter that reports it.
  // Relayed RTSP (rtsp-tap): the packets keep their RTP timestamps, which name them to the relay.
  if (live && !input.relay) args.push('-use_wallclock_as_timestamps', '1');
  switch (input.kind) {
    case 'file':
      // Native rate: argus paces the frames (ffmpeg-source); no -re. ffmpeg 5.1's -re delivered
      // frames 42 ms after they were due (p50, 1080p30 clip, one decoder thread), 4.x's 8 ms.
      if (input.loop && !input.still) args.push('-stream_loop', '-1');
      break;
    case 'rtsp':
      args.push(...networkInputArgs(input));
      // One stream set up, so that ffmpeg counts its pts from RTP timestamps alone (with two, it
      // syncs them by the sender reports), as the relay does.
      if (input.relay) args.push('-allowed_media_types', 'video');
      break;
    case 'v4l2':
      args.push(...opened.format);
      break;
    case 'http':
    case 'stream':
      args.push(...networkInputArgs(input));
      break;
  }
  args.push(...decodeBoundArgs(input.url));
  // (Through argus's HTTP relay ffmpeg speaks plain HTTP: the options the relay takes over, its
  // headers and TLS checks, are left out by ffmpegSource: HttpRelay.ffmpegInputArgs.) An rtsps://
  // camera's transport is rtspTransportOf's, given before them.
  if (input.inputArgs) args.push(...userInputArgs(input.url, input.kind, input.inputArgs));
  const trim = seekTrim(input);
  if (input.kind === 'file' && input.seek !== undefined && input.seek > 0) args.push('-ss', (input.seek - trim).toFixed(6));
  // (A still image's format last: the user's input arguments name another picture's.)
  const still = input.still && stillInput(input.still);
  if (still) args.push(...still.args);
  const url = still ? still.url : input.kind === 'v4l2' || input.kind === 'file' ? opened.url : (input.relay ?? input.credentialRelay ?? input.url);
  args.push('-i', url, '-an', '-sn', '-dn', '-map', '0:v:0');

  const { width: W, height: H } = out;
  // The picture as shown (see displaySize): the letterbox argus computes from the size the
  // scaler reports, made the same way (StderrProbe's scaledFrom).
  const [iw, ih] = [DISPLAY_W, DISPLAY_H];
  const r = `min(${W}/${iw}\\,${H}/${ih})`;
  const whole = out.rounding === 'floor' ? 'floor' : 'round';
  const sw = `min(${W}\\,max(1\\,${whole}(${iw}*${r})))`;
  const sh = `min(${H}\\,max(1\\,${whole}(${ih}*${r})))`;
  const px = out.align === 'center' ? `floor((${W}-iw)/2)` : '0';
  const py = out.align === 'center' ? `floor((${H}-ih)/2)` : '0';
  const pad = `0x${out.padValue.toString(16).padStart(2, '0').repeat(3)}`;
  const filters = [
    ...(still && input.loop ? [LOOP_STILL] : []),
    // First: the deinterlacer needs every field in order, before frames are dropped (the seek
    // margin, the fps filter: one frame of delay at the source's rate, not at `fps`, and a
    // temporal check of neighbouring frames) or scaled (which would blend the two fields).
    ...(still ? [] : deinterlaceFilters(decode.deinterlace ?? 'auto', input.interlaced === true, input.url)),
    // Timestamps after an input seek start at 0 at the seek point: drop the margin's frames.
    ...(trim > 0 ? [`trim=start=${trim.toFixed(6)}`] : []),
    // Files: the fps filter (frames at exactly that rate; a file whose own rate is below it is
    // run without it, by ffmpegSource, so that no frame is repeated). Live sources: their
    // timestamps are the wall clock, from which the fps filter, counting from 0, would emit
    // duplicates without end; at most one frame of each 1/fps interval is kept instead (never
    // a duplicate; see sampleFilter).
    ...(input.fps ? [live ? sampleFilter(input.fps) : `fps=${input.fps}`] : []),
    ...(out.frame === 'source' || out.frame === 'source-yuv'
      ? // Full size, converted only: argus letterboxes. Pictures of more pixels than 4K UHD (a
        // hostile file can claim 16384x16384: 800 MB a frame) are first reduced to it; smaller
        // ones pass unscaled (the same colour conversion ffmpeg would insert by itself). In
        // 4:2:0 YUV, a 4:2:0 source passes untouched; others are converted to it by ffmpeg.
        [sourceBoundFilter(input.url), out.frame === 'source-yuv' ? 'format=pix_fmts=yuv420p|yuvj420p' : `format=${out.pixelFormat}`]
      : [...squarePixels(input.url), `scale=w=${sw}:h=${sh}:flags=bilinear`, `format=${out.pixelFormat}`, `pad=${W}:${H}:${px}:${py}:color=${pad}`]),
    // Each frame on the log, in output order (see frameTimeFilters): a live source's time (µs,
    // reportsFrameTimes), and where a resolution change comes.
    ...frameTimeFilters(tag),
  ];
  // Live: one output frame per filtered frame (no duplicates or drops for a constant rate), so
  // the reported times pair with the frames in order.
  if (live) args.push('-copyts', '-vsync', 'passthrough');
  args.push('-vf', filters.join(','));
  // (YUV: the format filter's choice, which the output stream's line names.)
  if (out.frame !== 'source-yuv') args.push('-pix_fmt', out.pixelFormat);
  if (decode.lowLatency) args.push('-flush_packets', '1');
  // One thread for the output's rawvideo "encoder": with frame threads (ffmpeg's default, one per
  // core and more) it hands each frame on only once the next ones have come in, so a camera's
  // frame waited 1–2 frame periods in ffmpeg after decoding (200 ms at 10 fps on 2 cores; more
  // with more cores), and a last frame until the stream ended.
  args.push('-threads', '1');
  // Frames at the source's size: each picture written at its own size. By default ffmpeg scales
  // every picture to the size of the first one its filter graph was configured for, whatever its
  // shape, even one it never wrote: after a seek into an MPEG-TS file, the frames decoded before
  // the seek point (trimmed) set the size, and the pictures of the part after a resolution change
  // were stretched to it. A change mid-run ends the run at its first frame (ffmpeg-source).
  // (Not with an ffmpeg older than 4.4, which refuses the option, `caps.autoscale` false: the
  // bundled 2018 build. There a new picture comes scaled to the first size, and the run still ends
  // at the change, restarted at the new size; only a seek into a joined MPEG-TS keeps the stretch.)
  if ((out.frame === 'source' || out.frame === 'source-yuv') && caps.autoscale !== false) args.push('-autoscale', '0');
  // No metadata or chapters copied to the output: the output's report, which argus reads for
  // the frames' size and rate, then holds no line of the input's (a metadata key prints its line
  // breaks as they are; ffmpeg 6.0's -map_metadata -1 leaves chapters and streams' metadata).
  args.push(...NO_INPUT_METADATA, '-f', 'rawvideo', outputUrl);
  return args;
}
