import type { YuvColour, YuvMatrix } from '../core/frame.js';
import { displaySize } from './ffmpeg-args.js';
/** What ffmpeg's log says about the input's first video stream. */
export interface StreamInfo {
  width: number;
  height: number;
  /**
   * Frames per second reported by the demuxer (fps, else tbr), or the rate ffmpeg gave its filter
   * graph where the input's report is not used (`StderrProbe`); undefined if unknown.
   */
  fps?: number;
  /**
   * The stream's `tbr` (its r_frame_rate: the rate all its timestamps fit), when printed. For a
   * variable-rate file it is above `fps`, the average, and it is the rate of ffmpeg's
   * constant-rate output (`outputRate`).
   */
  tbr?: number;
  /** The demuxer, as `Input #0, <format>, from …` names it: `mpegts`, `mov,mp4,m4a,3gp,3g2,mj2`, `rtsp`, … */
  format?: string;
  /** The pixel format and what follows it in parentheses: `yuv420p` and `tv, bt709, progressive`. */
  pixFmt?: string;
  pixDetails?: string;
}

const VIDEO_STREAM = /^\s*Stream #\d+:\d+.*?: Video: (.*)$/;
/** Logged (at -loglevel verbose) each time our scale filter is configured: at start and whenever the input size changes. */
// (ffmpeg 7.1 adds ` csp:… range:…` before ` sar:`.)
const SCALE_CONFIG = /^\[Parsed_scale_\d+ @ 0x[0-9a-f]+\] w:(\d{1,5}) h:(\d{1,5}) fmt:[a-z0-9_]+ (.*?)-> w:(\d{1,5}) h:(\d{1,5})/;

/**
 * The size a scale filter of argus's makes, from its configuration line (logged at -loglevel
 * verbose, at start and whenever its input's size changes), or undefined for another line. With
 * `-autoscale 0`, the last such line before a frame's report gives the size it is written at.
 */
export function scaledTo(line: string): { width: number; height: number } | undefined {
  const sc = SCALE_CONFIG.exec(line);
  return sc ? { width: Number(sc[4]), height: Number(sc[5]) } : undefined;
}

/**
 * ffmpeg's lines at -loglevel verbose about configuring its scalers and filter graph and reading
 * its input: not worth an error's tail (a filter's error, `[Parsed_bwdif_0 @ …] Video with planes
 * less than…`, is).
 */
export function isConfigChatter(line: string): boolean {
  return /^\[(graph \d+ input from |scaler_out|auto_scale|AVIOContext)/.test(line) || /^\[Parsed_scale_\d+ @ 0x[0-9a-f]+\] w:/.test(line) || /^\[h264 @ [^\]]+\] Reinit context/.test(line);
}
/** The input's sample aspect ratio in SCALE_CONFIG's line (`sar:2/1`; `0/1` for none). */
const SCALE_SAR = /(?:^| )sar:(\d{1,10})\/(\d{1,10})(?: |$)/;
/**
 * Logged (verbose) when the filter graph is configured with the decoded stream, before the output
 * report: `[graph 0 input from stream 0:0 @ 0x…] w:768 h:432 pixfmt:yuv420p tb:1/200000 fr:10/1 …`.
 * `fr` is the rate ffmpeg chose for the stream (`av_guess_frame_rate`), that of its constant-rate
 * output without an fps filter (4.x to 7.x print it so; 4.x adds `sws_param:`, 7.1 `csp: range:`).
 */
// (Each part of fixed form: on a long line a forged prefix would make overlapping runs backtrack.)
const GRAPH_INPUT = /^\[graph \d+ input from stream [^\]\s@]+ @ 0x[0-9a-f]+\] w:(\d{1,5}) h:(\d{1,5}) pixfmt:([a-z0-9_]+) .*?\bfr:(\d+)\/(\d+)/;
/**
 * A line of an input's report that opens with a stream's index (`  Stream #0:1…`), and not one of
 * the stream mapping's (`  Stream #0:0 -> #0:0 (…)`).
 */
const STREAM_INDEX = /^\s*Stream #0:(\d+)(?!\d| -> #)/;
/**
 * ffmpeg's own stream line, any kind: `  Stream #0:1[0x101](eng): Audio: …`, with one kind in
 * it. The language in parentheses is the stream's tag, printed as it is: a tag such as `x):
 * Video: …, 0.001 fps, (` puts a second kind in the line, and one with a line break leaves a
 * line that is not of this shape.
 */
const STREAM_LINE = /^\s*Stream #0:\d+(?:\[0x[0-9a-f]+\])?(?:\([A-Za-z0-9_,-]*\))?: [A-Z][a-z]+: /;
const STREAM_KIND = /: (?:Video|Audio|Data|Subtitle|Attachment|Unknown): /g;
/**
 * A stream line of a codec whose size comes in-band with its key frames (StderrProbe.inputVideoSizedByKeyFrame):
 * H.264 and H.265 (parameter sets), MPEG-1/2 (sequence header), MPEG-4 Part 2 (VOL header), VP9
 * (the key frame's header: an RTSP camera's SDP gives no size, and ffmpeg 5.1 reports `Video: vp9
 * (Profile 0), 1 reference frame, none, 25 fps` for one joined between key frames, 1–2 s after the
 * connect), AV1 (the sequence header, sent with key frames: a raw OBU stream read with `-f obu`
 * reports `Video: av1, 1 reference frame, none`). Not VP8: ffmpeg 5.1's RTP reader of it drops
 * every packet until a key frame (`Keyframe missing`), and its report comes with that frame, sized
 * (a `Video: vp8, …, yuv420p` line without a size is printed only once ffmpeg is stopped before
 * it). Not MJPEG (each picture has its size: one of unknown size is no picture, a login page say).
 */
const SIZED_BY_KEY_FRAME = /: Video: (?:h264|hevc|mpeg1video|mpeg2video|mpeg4|vp9|av1)(?:[ ,]|$)/;
/**
 * ffmpeg's raw elementary-stream demuxers, as `Input #0, <format>, from` names them: a forced one
 * (`input.args: [-f, h264]`, `-f obu`, …) takes whatever bytes come, and reports a stream of its
 * codec with no size for any of them: an HTTP camera's HTML login page read through `-f h264`
 * gave `Video: h264, 1 reference frame, none`, as a stream joined between key frames does.
 */
const RAW_VIDEO_DEMUXERS = /^(?:h264|hevc|obu|mpegvideo|m4v|cavsvideo|vc1|vvc|avs2|avs3)$/;
/**
 * What ffmpeg logs once it has read a unit of the codec's own syntax in a raw stream joined
 * between key frames (the decoder's or bitstream filter's words for a unit it recognized whose
 * headers have not come yet): H.264 and H.265 slices naming a parameter set not yet seen (`non-existing
 * PPS 0 referenced`, `PPS id out of range`), AV1 frame OBUs before their sequence header (`No
 * sequence header available: unable to decode frame header`), MPEG-1/2 pictures before their
 * sequence header (`Invalid frame dimensions 0x0.`: `-f mpegvideo`), MPEG-4 Part 2 ones before
 * their VOL header (`time_increment_bits 0 is invalid in relation to the current bitstream`: `-f
 * m4v`; without these two, such a stream joined mid-GOP was no contact, and one that ended before
 * its key frame was called an HTML page). Bytes that are no such stream (a login page) give `No
 * start code is found`, `Failed to read obu`, `header damaged`, or nothing.
 */
const RAW_UNITS_READ =
  /non-existing [PS]PS \d+ referenced|[PS]PS id out of range|No sequence header available: unable to decode frame header|Invalid frame dimensions 0x0|time_increment_bits \d+ is invalid in relation to the current bitstream/;
/** The longest log line read (ffmpeg's own reports are far shorter; a longer one is a file's or a server's text). */
const MAX_LOG_LINE = 4096;

/**
 * A line of ffmpeg's log that is not read (`LogLines`), where it was: `dropped` is what may still
 * go in an error report (the line with its carriage returns as spaces; '' for an over-long one).
 */
export interface DroppedLine {
  dropped: string;
}

/**
 * ffmpeg's log cut into lines. ffmpeg ends each of its lines with `\n` (argus passes `-nostats`:
 * no progress line ends in `\r`, and `Last message repeated` ends in one only on a terminal). A
 * `\r` within a line is a server's or a file's text (an HTTP reason phrase, a stream's language
 * tag): split there, it would start a line of its choosing, so the line is not read. Nor is a line
 * longer than MAX_LOG_LINE, to its very end (its rest, read as a line, would also start where its
 * writer chose). Where such a line was is told (`DroppedLine`): a reader may have to distrust
 * what comes with it.
 */
export class LogLines {
  private partial = '';
  private skipping = false;

  /** The chunk's complete lines (with what came before it), in order. */
  push(chunk: string): (string | DroppedLine)[] {
    let text = chunk;
    if (this.skipping) {
      const nl = text.indexOf('\n');
      if (nl < 0) return [];
      text = text.slice(nl + 1);
      this.skipping = false;
    }
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    const out: (string | DroppedLine)[] = [];
    for (const raw of lines) {
      const line = raw.length > MAX_LOG_LINE ? undefined : raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === undefined) out.push({ dropped: '' });
      else if (line.includes('\r')) out.push({ dropped: line.replace(/\r/g, ' ') });
      else out.push(line);
    }
    if (this.partial.length > MAX_LOG_LINE) {
      this.partial = '';
      this.skipping = true;
      out.push({ dropped: '' });
    }
    return out;
  }

  /** The last line, not yet ended. */
  get rest(): string {
    return this.partial;
  }
}

/** The line opens ffmpeg's report of the output named `outputUrl` (any output without a name). */
export function isOutputHeader(line: string, outputUrl?: string): boolean {
  return /^Output #0/.test(line) && (outputUrl === undefined || line.endsWith(`to '${outputUrl}':`));
}
/** The frame-time report our `metadata` filter prints for each output frame (live sources): its pts in µs. */
const FRAME_TIME = /^\[Parsed_metadata_\d+ @ [^\]]+\] frame:\s*\d+\s+pts:\s*(\S+)/;

/**
 * A line of the per-frame report printed by a `metadata=mode=print` filter after `settb=AVTB`:
 * the frame's pts in µs for its first line (NaN for a frame without one: `pts:NOPTS`, still a
 * frame, so the reports keep pairing with the frames in order), null for the key=value line
 * that follows, undefined for any other line.
 */
export function frameReport(line: string): number | null | undefined {
  if (line.charCodeAt(0) !== 91 /* [ */ || !line.startsWith('[Parsed_metadata_')) return undefined;
  const ft = FRAME_TIME.exec(line);
  return ft ? Number(ft[1]) : null; // Number('NOPTS') is NaN
}

/**
 * The metadata filter's per-frame reports, paired: a frame's time counts once the line of the
 * run's own key follows it (`frameTimeFilters`), so a time line that a file's metadata or a
 * server's text put on the log (ffmpeg prints their line breaks as they are) is not counted,
 * not knowing the key. Without a key, any key line confirms the time before it.
 */
export class FrameTimes {
  private pending = false;
  private time = NaN;
  /** `[Parsed_metadata_N @ 0x…]` of the pending time: its key line comes from the same filter. */
  private from = '';
  constructor(private readonly key?: string) {}

  /** undefined for a line that is not a report; the frame's time (µs, NaN for none) once confirmed; null otherwise. */
  read(line: string): number | null | undefined {
    const r = frameReport(line);
    if (r === undefined) return undefined;
    if (r !== null) {
      this.pending = true;
      this.time = r;
      this.from = line.slice(0, line.indexOf(']') + 1);
      return null;
    }
    // Only this run's key line, from the filter that printed the time, confirms (and ends) it;
    // another is not ours (a forged time line does not know the filter's address either).
    if (!this.pending || !line.startsWith(this.from) || (this.key !== undefined && !line.endsWith(`] ${this.key}=1`))) return null;
    this.pending = false;
    return this.time;
  }

  /** A time was read and waits for its key line. */
  get waiting(): boolean {
    return this.pending;
  }
}

const SIZE = /(?:^|[ ,])(\d{1,5})x(\d{1,5})(?:[ ,\[]|$)/;
const FPS = /([\d.]+)(k?) fps/;
/** ffmpeg on an access unit delimiter with no picture after it: the H.264/H.265 parser, then (H.264) the decoder's two lines. */
const DELIMITER_ALONE = /^\[(NULL|h264|hevc) @ [^\]]+\] missing picture in access unit with size [67]$/;
const NO_FRAME = /^\[h264 @ [^\]]+\] no frame!$/;
const DECODE_ERROR = /^Error while decoding stream #\d+:\d+: Invalid data found when processing input$/;
const PIX_FMT = /^([a-z0-9_]+)(?:\((.*)\))?$/;
const TBR = /([\d.]+)(k?) tbr/;

/**
 * ffmpeg's error for an input without a video stream (argus maps `0:v:0`), and the advice line
 * after it, which argus's users cannot follow (`-map 0:v:0?`).
 */
const NO_VIDEO = /Stream map '0:v:0' matches no streams/;
const MAP_ADVICE = /^To ignore this, add a trailing '\?' to the map/;

/**
 * ffmpeg's words for input it could not read whole, from its own components only (a file's
 * name or metadata printed on the log, "comment: partial file from the phone", is not ffmpeg's
 * report): the demuxer's (a cut MP4: "[mov,mp4,… @ 0x…] stream 0, offset 0x3170a: partial file",
 * a corrupt packet), the parser's and decoder's (H.264: "Invalid NAL unit size", "error while
 * decoding MB 14 22", "concealing 120 DC, 120 AC, 120 MV errors in P frame", a missing reference;
 * HEVC: "Could not find ref with POC"), and ffmpeg's own for a packet that could not be decoded
 * at all ("Error while decoding stream #0:0: …"; 6.0 and later: "Decoding error: …", "Error
 * submitting packet to decoder: …"). A damaged packet gives one to four of them.
 */
const DAMAGE = new RegExp(
  [
    String.raw`^\[[^\]]* @ 0x[0-9a-f]+\] .*(partial file|invalid nal unit size|packet corrupt|truncat|error while decoding MB|concealing \d+ DC|missing reference picture|could not find ref with POC|reference \d+ >= \d+|block unavailable|corrupted macroblock|ac-tex damaged|decode_slice_header error|error submitting packet to decoder|decoding error)`,
    String.raw`^Error while decoding stream`,
    String.raw`: corrupt input packet in stream \d+$`,
  ].join('|'),
  'i',
);

/** The log line is one of ffmpeg's reports of damaged input (`DAMAGE`). */
export function reportsDamage(line: string): boolean {
  return DAMAGE.test(line);
}

/** The input has no video stream, by ffmpeg's log (its last lines). */
export function saysNoVideoStream(log: string): boolean {
  return NO_VIDEO.test(log);
}

const TOO_LARGE = /Picture size (\d+)x(\d+) exceeds specified max pixel count/;

/** The size of a picture ffmpeg refused to decode for `-max_pixels` (decodeBoundArgs), from one of its log lines. */
export function pictureTooLarge(line: string): { width: number; height: number } | undefined {
  const m = TOO_LARGE.exec(line);
  return m ? { width: Number(m[1]), height: Number(m[2]) } : undefined;
}

/**
 * ffmpeg's last lines without what it says of argus's own arguments: its advice to make the map
 * optional (which argus cannot take), and its notice that -vsync is deprecated (argus passes it
 * for the bundled 2018 build, which has no -fps_mode).
 */
export function withoutOwnNotices(lines: readonly string[]): string[] {
  return lines.filter((l) => !MAP_ADVICE.test(l) && !VSYNC_NOTICE.test(l));
}

const VSYNC_NOTICE = /^-vsync is deprecated/;

/**
 * ffmpeg's constant-rate output (a file's) writing a filtered frame more than once, or not at all
 * (logged at -loglevel verbose, before it writes): `*** 2 dup!`, `*** dropping frame 7 from stream
 * 0 at ts 6` (4.x: `*** drop!`); 6.1 and later prefix them with the output stream's
 * `[vost#0:0/rawvideo @ 0x…] `.
 */
const DUP = /^(?:\[[^\]]* @ 0x[0-9a-f]+\] )?\*\*\* (\d{1,9}) dup!$/;
const DROP = /^(?:\[[^\]]* @ 0x[0-9a-f]+\] )?\*\*\* (?:drop!$|dropping frame \d)/;
/** ffmpeg's log for the previous line printed again `N` more times. */
const REPEATED = /^\s*Last message repeated (\d{1,9}) times?$/;

/** ffmpeg's report of its opened input begins: `Input #0, <format>, from '…':`. */
export function isInputHeader(line: string): boolean {
  return /^Input #0/.test(line);
}

/**
 * Parses ffmpeg's log line by line. The source is the first video stream of the input's report,
 * read when that report ends (at the output's `Output #0` line; without its name, at any `Output
 * #0` or `Stream mapping`), and only when the report is ffmpeg's own (`inputStream`); else what
 * ffmpeg gave its filter graph.
 */
export class StderrProbe {
  private inInput = false;
  /** ffmpeg reported its input (`Input #0`): a program that did behaved as ffmpeg. */
  get inputReported(): boolean {
    return this.inInput;
  }
  private done = false;
  private inOutput = false;
  /** The frames' size as ffmpeg writes them (its `Output #0` stream line), once printed. */
  output: { width: number; height: number; fps?: number; pixFmt?: string; pixDetails?: string } | undefined;
  /**
   * The output's stream line when it could not be read (no size in it: an ffmpeg whose log
   * argus does not know). Frames wait for `output`, so without this nothing would ever come.
   */
  outputUnreadable: string | undefined;
  /** A picture ffmpeg refused to decode: more than decodeBoundArgs allow (the first it reported). */
  tooLarge: { width: number; height: number } | undefined;
  info: StreamInfo | undefined;
  /** The last lines ffmpeg printed, for error reports. */
  readonly tail: string[] = [];
  private readonly lines = new LogLines();
  private format: string | undefined;
  /** The indices of the stream lines in the input's report, in order, and its first video stream. */
  private readonly streamIds: number[] = [];
  private firstVideo: StreamInfo | undefined;
  /** The input's report has a line ffmpeg's own would not be (see `inputStream`). */
  private reportForged = false;
  /** What ffmpeg last gave its filter graph (`GRAPH_INPUT`): the decoded picture (its rate: `graphRate`). */
  private graph: { width: number; height: number; pixFmt: string } | undefined;

  private readonly frameTimes: FrameTimes;

  /**
   * `outputUrl`: the output ffmpeg was given (`taggedStdout`). Only the `Output #0` report that
   * names it is the output's (and ends the input's report); without it, the first one.
   * `frameKey`: the key of the run's frame-time reports (`frameTimeKey`).
   */
  constructor(
    private readonly maxTail = 20,
    private readonly outputUrl?: string,
    frameKey?: string,
  ) {
    this.frameTimes = new FrameTimes(frameKey);
  }

  /** The line opens the report of the output ffmpeg was given. */
  private isOutputHeader(line: string): boolean {
    return isOutputHeader(line, this.outputUrl);
  }

  /**
   * The stream's rate as ffmpeg's filter graph was last given it (`GRAPH_INPUT`'s `fr`), exact
   * (`30000/1001`): printed after the input's report, so the one before the output's report is
   * ffmpeg's own, whatever a file's metadata printed in the input's report.
   */
  graphRate: number | undefined;

  /** Input size the scale filter was last configured for, as shown (its width times the SAR; follows mid-stream changes). */
  scaledFrom: { width: number; height: number } | undefined;
  /**
   * `scaledFrom` when the output's line was read: the picture of the first frame. (The log comes
   * in chunks: under load one held the output's line, the first frame's report and the next
   * picture's scaler, and that later size was taken for the first frame's.)
   */
  scaledAtOutput: { width: number; height: number } | undefined;
  /** Called when the scale filter is reconfigured for a different input size. */
  onResize?: (width: number, height: number) => void;
  /**
   * Called when ffmpeg's constant-rate output writes frames more (`n` > 0: duplicates) or fewer
   * (`n` < 0: a frame dropped) than it filtered and reported (`onFrameTime`): the frames written
   * so far are the reports plus these.
   */
  onOutputAdjust?: (n: number) => void;
  /** The change the last line read made to the frames written (`onOutputAdjust`), for a repeat of it; 0 after another line. */
  private lastAdjust = 0;
  /** Called for each output frame's reported time (µs, NaN when the frame has none; live sources and letterboxed frames, see ffmpeg-args `reportsFrames`), in output order. */
  onFrameTime?: (us: number) => void;
  /**
   * Called with each of ffmpeg's reports of damaged input (`reportsDamage`: a corrupt packet, a
   * decoding error), except those of the access-unit delimiters of argus's relay (`delimited`).
   */
  onDamage?: (line: string) => void;
  /** Called when ffmpeg reports the opened input (`Input #0`): a native-rate file's playback starts then. */
  onInputOpened?: () => void;
  /**
   * The input's access units are ended by delimiters of argus's relay (rtsp-tap's UnitEnds): the
   * last one, which no picture follows when the stream ends, is a "frame" with no picture to
   * ffmpeg, whose three lines about it are kept out of the error tail (they would push out the
   * cause of the end).
   */
  delimited = false;
  /** How far the lines about a delimiter alone have come: 1 after the parser's, 2 after the decoder's "no frame!". */
  private delimiterLines = 0;

  /** The input's report has named a video stream with its size (ffmpeg described the video it opened): a camera's contact (ffmpegSource onInputOpened). */
  get inputVideo(): boolean {
    return this.firstVideo !== undefined;
  }

  /**
   * The input's report named an H.264 or H.265 stream without its size (`Video: h264, none`), or
   * an MPEG-1/2, MPEG-4 Part 2, VP9 or AV1 one: ffmpeg's probe ended before a key frame, whose
   * headers carry the size (an RTSP camera whose SDP has none, an MPEG-TS or raw AV1 stream, joined
   * in a long GOP: its first frame comes with that key frame, seconds on). ffmpegSource counts it
   * as contact too. Through a raw elementary-stream demuxer (RAW_VIDEO_DEMUXERS: `-f h264`, `-f
   * obu`, …), which reports such a stream for any bytes, only once ffmpeg has said it read units of
   * the codec (RAW_UNITS_READ), or decoded a frame (the output's line, sized, comes with the
   * first): an HTML login page read so is no contact.
   */
  get inputVideoSizedByKeyFrame(): boolean {
    return this.unsizedKeyFrameVideo && (this.format === undefined || !RAW_VIDEO_DEMUXERS.test(this.format) || this.rawUnitsRead || this.output !== undefined);
  }
  private unsizedKeyFrameVideo = false;
  /**
   * The raw elementary-stream demuxer (RAW_VIDEO_DEMUXERS) that ffmpeg opened the input with, where
   * it read nothing of its codec: no unit (RAW_UNITS_READ), no frame (an HTML login page read
   * through a forced `-f h264`); else undefined. ffmpegSource's failure says so.
   */
  get rawStreamUnread(): string | undefined {
    return this.unsizedKeyFrameVideo && this.format !== undefined && RAW_VIDEO_DEMUXERS.test(this.format) && !this.rawUnitsRead && this.output === undefined ? this.format : undefined;
  }
  /** ffmpeg has said it read units of the raw stream's codec (RAW_UNITS_READ), before or after its report: see inputVideoSizedByKeyFrame. */
  private rawUnitsRead = false;

  /** Feeds a chunk; returns the stream info the first time it becomes known. */
  push(chunk: string): StreamInfo | undefined {
    let found: StreamInfo | undefined;
    for (const line of this.lines.push(chunk)) {
      // (The line a `Last message repeated` follows is the one repeated.)
      const lastAdjust = this.lastAdjust;
      this.lastAdjust = 0;
      if (typeof line !== 'string') {
        // Within the input's report, a stream's own line (its language tag has a carriage return
        // or makes it long, say), which the report must not be read without.
        if (this.inInput && !this.done) this.reportForged = true;
        if (line.dropped.trim() !== '') this.keep(line.dropped);
        continue;
      }
      if (line.trim() === '') continue;
      const report = this.frameTimes.read(line);
      if (report !== undefined) {
        if (report !== null) this.onFrameTime?.(report);
        continue; // per-frame report (or its key=value line): not for the error tail
      }
      const gi = GRAPH_INPUT.exec(line);
      if (gi) {
        this.graph = { width: Number(gi[1]), height: Number(gi[2]), pixFmt: gi[3] };
        const [num, den] = [Number(gi[4]), Number(gi[5])];
        // fr:0/1, a rate ffmpeg cannot guess: its output then runs at 25 fps ("Falling back to
        // a default value of 25fps").
        this.graphRate = num > 0 && den > 0 ? num / den : 25;
        continue;
      }
      const sc = SCALE_CONFIG.exec(line);
      if (sc) {
        // The picture as shown, which argus's scale filter scales to (ffmpeg-args displaySize).
        const ratio = SCALE_SAR.exec(sc[3]);
        const { width, height } = displaySize(Number(sc[1]), Number(sc[2]), ratio ? Number(ratio[1]) / Number(ratio[2]) : 1);
        const prev = this.scaledFrom;
        this.scaledFrom = { width, height };
        if (prev && (prev.width !== width || prev.height !== height)) this.onResize?.(width, height);
        continue; // configuration chatter, not worth keeping in the error tail
      }
      if (/^\[(graph|scaler_out|Parsed_|AVIOContext|h264 @ .*Reinit context)/.test(line) || /^\[h264 @ [^\]]+\] Reinit context/.test(line)) continue;
      // Duplicated and dropped frames (after the output's report: one in the input's is a file's text).
      const repeated = REPEATED.exec(line);
      const adjust = !this.done ? 0 : repeated ? lastAdjust * Number(repeated[1]) : DROP.test(line) ? -1 : Number(DUP.exec(line)?.[1] ?? 0);
      if (!repeated) this.lastAdjust = adjust;
      if (adjust) {
        this.onOutputAdjust?.(adjust);
        continue; // one per gap in a variable-rate file: not for the error tail
      }
      // Live sources carry wall-clock times, which frames that arrived together share: the raw
      // muxer says so for each one (harmless: it writes no timestamps). Not worth the error tail.
      if (line.includes('non monotonically increasing dts to muxer') || repeated) continue;
      // Only that sequence: a "no frame!" or a decoding error anywhere else is kept.
      const step = !this.delimited ? 0 : DELIMITER_ALONE.test(line) ? 1 : this.delimiterLines === 1 && NO_FRAME.test(line) ? 2 : this.delimiterLines === 2 && DECODE_ERROR.test(line) ? 3 : 0;
      this.delimiterLines = step === 3 ? 0 : step;
      if (step) continue;
      if (this.onDamage && reportsDamage(line)) this.onDamage(line);
      // (Until the output's line at most, which comes with the first decoded frame: not on every frame's lines.)
      if (!this.rawUnitsRead && this.output === undefined && line.startsWith('[') && RAW_UNITS_READ.test(line)) this.rawUnitsRead = true;
      this.tooLarge ??= pictureTooLarge(line);
      this.keep(line);
      if (this.done) {
        // The output stream's line: the size of the frames ffmpeg writes (after any rotation or
        // filter), printed before the first one.
        if (/^Output #0/.test(line)) this.inOutput = this.isOutputHeader(line);
        else if (this.inOutput && !this.output && this.outputUnreadable === undefined) {
          const o = parseVideoStreamLine(line);
          if (o) {
            this.output = { width: o.width, height: o.height, fps: o.fps, pixFmt: o.pixFmt, pixDetails: o.pixDetails };
            this.scaledAtOutput = this.scaledFrom;
          }
          else if (/^\s*Stream #\d+:\d+/.test(line)) this.outputUnreadable = line.trim();
        }
        continue;
      }
      // ffmpeg prints one: another is a file's metadata (after it) or an RTSP server's SDP (printed
      // before it, at -loglevel verbose). A file's input opens with the first.
      if (isInputHeader(line)) {
        if (this.inInput) {
          this.reportForged = true;
          this.format = undefined; // which of them is ffmpeg's is not known
        } else {
          this.inInput = true;
          this.onInputOpened?.();
          this.format = /^Input #0, (.*?), from '/.exec(line)?.[1];
        }
      }
      else if (this.outputUrl === undefined ? /^Output #0|^Stream mapping/.test(line) : this.isOutputHeader(line)) {
        this.done = true;
        this.inOutput = this.isOutputHeader(line);
        this.info = this.inputStream();
        found = this.info;
      }
      else if (this.inInput) {
        const si = STREAM_INDEX.exec(line);
        if (si) {
          this.streamIds.push(Number(si[1]));
          if (!STREAM_LINE.test(line) || line.match(STREAM_KIND)?.length !== 1) this.reportForged = true;
          else {
            this.firstVideo ??= parseVideoStreamLine(line);
            if (this.firstVideo === undefined && SIZED_BY_KEY_FRAME.test(line)) this.unsizedKeyFrameVideo = true;
          }
        }
      }
    }
    return found;
  }

  /**
   * The input's first video stream, once its report has ended. ffmpeg prints one `Input #0` line
   * and each stream's line once, by index, from 0, in a set shape. A line that a metadata key
   * forged (ffmpeg prints a key's line breaks as they are: an FLV's or an RTMP camera's
   * `onMetaData` can carry any key), or that a stream's language tag or a server's SDP put there,
   * can come before a stream's own line (where it would be taken as the first video stream) only
   * by adding an index out of that order, a second `Input #0`, a line not of that shape, or an
   * over-long line. Then the report is not used: what ffmpeg gave its filter graph is (the decoded
   * picture and ffmpeg's guess of its rate), without the average rate and colour details only the
   * report has. (So is a legitimate report that lists a stream twice: one in two programs.)
   */
  private inputStream(): StreamInfo | undefined {
    const inOrder = !this.reportForged && this.streamIds.every((id, i) => id === i);
    const info = inOrder ? this.firstVideo : this.graph && { ...this.graph, ...(this.graphRate !== undefined ? { fps: this.graphRate, tbr: this.graphRate } : {}), pixDetails: '' };
    return info && this.format ? { ...info, format: this.format } : info;
  }

  /** Keeps a line for error reports. */
  private keep(line: string): void {
    this.tail.push(line);
    if (this.tail.length > this.maxTail) this.tail.shift();
  }

  /** The log's last lines, one string (includes an unterminated last line). */
  tailText(): string {
    return [...this.tail, this.lines.rest].filter((l) => l.trim() !== '').join('\n');
  }
}

/** ffmpeg's colour-space names (`av_color_space_name`) → the matrix its converter uses (`sws_getCoefficients`). */
const MATRIX_BY_NAME: Record<string, YuvMatrix> = { bt709: 'bt709', fcc: 'fcc', smpte240m: 'smpte240m', bt2020nc: 'bt2020', bt2020c: 'bt2020' };

/**
 * The colour of a stream from its line's pixel format, e.g. `yuv420p` with `tv, bt709, progressive`,
 * `yuvj420p` with `pc, bt470bg/unknown/unknown`, or none: the first name of a
 * space/primaries/transfer triple is the colour space; a `yuvj` format or `pc` is full range.
 */
export function colourOf(pixFmt: string, details = ''): YuvColour {
  const parts = details.split(',').map((s) => s.trim());
  const space = parts.map((p) => p.split('/')[0]).find((p) => Object.hasOwn(MATRIX_BY_NAME, p));
  return { matrix: space ? MATRIX_BY_NAME[space] : 'bt601', fullRange: parts.includes('pc') || pixFmt.startsWith('yuvj') };
}

export function parseVideoStreamLine(line: string): StreamInfo | undefined {
  const m = VIDEO_STREAM.exec(line);
  if (!m) return undefined;
  const rest = m[1];
  // Split on commas outside parentheses: "h264 (High) (avc1 / 0x31637661), yuv420p(tv, bt709), 768x432 [SAR 1:1 DAR 16:9], …"
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of rest) {
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  parts.push(cur.trim());
  let width = 0;
  let height = 0;
  // Not in the codec's part: its tag (`(avc1 / 0x31637661)`) is the stream's four characters, ` 1x1` say.
  for (const p of parts.slice(1)) {
    const s = SIZE.exec(p);
    if (s && !/^0x/.test(p)) {
      width = Number(s[1]);
      height = Number(s[2]);
      break;
    }
  }
  if (!(width > 0 && height > 0)) return undefined;
  const rate = (r: RegExpExecArray | null) => {
    const v = r ? Number(r[1]) * (r[2] === 'k' ? 1000 : 1) : undefined;
    return v && Number.isFinite(v) && v > 0 ? exactRate(v) : undefined;
  };
  const tbr = rate(TBR.exec(rest));
  const fps = rate(FPS.exec(rest)) ?? tbr;
  // The first part after the codec that is one name, with or without details: "yuv420p(tv,
  // bt709, progressive)", "bgr24", "yuvj420p(pc)" (verbose logs put "1 reference frame (…)" first).
  let pix: RegExpExecArray | null = null;
  for (let i = 1; i < parts.length && !pix; i++) pix = PIX_FMT.exec(parts[i]);
  return { width, height, fps, ...(tbr !== undefined ? { tbr } : {}), ...(pix ? { pixFmt: pix[1], pixDetails: pix[2] ?? '' } : {}) };
}

/**
 * Whether a stream line's pixel-format details (`StreamInfo.pixDetails`) give an interlaced field
 * order: `top first`, `bottom first`, or their `coded first (swapped)` forms (ffmpeg's tt, bb,
 * tb, bt). `progressive`, or no field order (a codec that has none: MJPEG, GIF, VP9), is not.
 */
export function interlacedBy(pixDetails: string | undefined): boolean {
  return /(?:^|, )(top|bottom) (coded )?first\b/.test(pixDetails ?? '');
}

/** The NTSC-family rates N·1000/1001 that ffmpeg prints rounded (14.99, 23.98, 29.97, 59.94, …). */
const NTSC = [12, 15, 24, 30, 48, 60, 120, 240];

/**
 * A rate as ffmpeg prints it (two decimals), made exact where it is one of the N·1000/1001
 * rates: counted as 23.98, a 23.976 fps file's pts would fall 0.6 s behind in an hour, and a
 * restart, which seeks to the next frame by pts, would deliver 14 frames again.
 */
export function exactRate(printed: number): number {
  for (const n of NTSC) {
    const exact = (n * 1000) / 1001;
    if (Math.abs(printed - exact) < 0.006) return exact;
  }
  return printed;
}

/**
 * The rate of ffmpeg's constant-rate output of a file's frames, as ffmpeg chooses it
 * (`av_guess_frame_rate`): the stream's `tbr`, or its average where the tbr is implausible
 * (above 210 with an average below 70) or is the field rate of interlaced video (twice the
 * average). A variable-rate file (a phone's recording: 30 fps, 20 in the dark) has an average
 * below it, and ffmpeg repeats frames to fill the gaps, so its frames come at the tbr, not the
 * average. Decides only whether the fps filter is kept: the rate delivered is read from
 * ffmpeg's output line.
 */
export function outputRate(info: StreamInfo | undefined): number | undefined {
  if (!info) return undefined;
  const { fps, tbr } = info;
  if (tbr === undefined || fps === undefined) return fps ?? tbr;
  if (fps < 70 && tbr > 210) return fps;
  // Interlaced video: the tbr is the field rate (25 fps, 50 tbr), and ffmpeg takes the codec's
  // frame rate, which the average is.
  if (interlacedBy(info.pixDetails) && Math.abs(tbr - 2 * fps) <= 0.01 * tbr) return fps;
  return tbr;
}
