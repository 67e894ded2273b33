import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { exitOf, nameChild, signalChild, spawnOwned } from '../core/children.js';
import { endsBySignal } from '../core/signals.js';
import { deviceProblem } from '../core/files.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { decodeBoundArgs, deinterlaceFilters, frameTimeFilters, frameTimeKey, hasScheme, isStillImage, MAX_SOURCE_PIXELS, NO_INPUT_METADATA, readsOnce, outputTag, sampleFilter, sourceBoundFilter, sourceInput, sourceKind, stillInput, taggedStdout, tooLargeMessage, type Deinterlace } from '../sources/ffmpeg-args.js';
import { ffmpegAutoscales, notFfmpeg } from '../sources/ffmpeg-path.js';
import { FFMPEG_EXIT_WAIT_MS, stopFfmpeg, TRANSIENT_SPAWN_ERRORS } from '../sources/ffmpeg-source.js';
import { fileLook } from '../sources/file-look.js';
import { BufferPool, FrameReader } from '../sources/frame-reader.js';
import { decodeStill, stillImagePath } from '../sources/still-image.js';
import { FrameTimes, interlacedBy, isConfigChatter, isInputHeader, isOutputHeader, LogLines, parseVideoStreamLine, pictureTooLarge, reportsDamage, saysNoVideoStream, scaledTo, withoutOwnNotices } from '../sources/stderr-probe.js';

/** One decoded picture at the source's full resolution, packed RGB. */
export interface RawFrame {
  /** 0-based index among the frames decoded. */
  index: number;
  /** Presentation time, seconds from the start of the decode (after `start`, from that point): the frame's own time in the file. */
  pts: number;
  data: Buffer;
  width: number;
  height: number;
}

/**
 * `image`: one picture decoded by sharp (libvips; JPEG through libjpeg-turbo, as OpenCV's
 * imread); `video`: frames decoded by ffmpeg (videos, GIFs — animations —, anything else ffmpeg opens).
 */
export function inputKind(path: string): 'image' | 'video' {
  return isStillImage(path) ? 'image' : 'video';
}

/**
 * Whether the input at `url` can be read only once (readsOnce). A local file (a path, a `file://`
 * URL) is looked at asynchronously and bounded (fileLook): what keeps it from being an input (not
 * there, a folder, empty, a stat's error, no answer from its file system within the bound) is
 * thrown coded, naming it. A statSync here held the event loop on a hung network mount: argus
 * preview and detect hung, Ctrl-C with them. A still image's own problems are decodeStill's to say.
 */
export async function lookedInput(url: string): Promise<boolean> {
  const kind = sourceKind(url);
  if (kind !== 'file') return readsOnce(url, kind);
  const local = /^file:\/\//i.test(url) ? url.slice('file://'.length) : hasScheme(url) ? undefined : url;
  if (local === undefined) return false;
  const look = await fileLook(local);
  if (look.problem && (stillImagePath(url) === undefined || look.problem.code === ErrorCodes.SOURCE_TIMEOUT)) throw new ArgusError(look.problem.code, `video: ${look.problem.why}`);
  return look.readsOnce ?? false;
}

/** A still image as one frame (see decodeStill: the pixels a pipeline's source sees too). */
export async function readImage(path: string): Promise<RawFrame> {
  return { index: 0, pts: 0, ...(await decodeStill(path)) };
}

/** What ffmpeg reports about the decoded stream. */
export interface VideoInfo {
  /** Size of the first frame delivered (after any rotation ffmpeg applies); each frame has its own (RawFrame). */
  width: number;
  height: number;
  /** Frames per second of the stream as ffmpeg reports it (frames keep their own times: a variable-rate file is not made constant). */
  fps?: number;
  /** Length of the input, seconds (undefined for a still image or a live stream). */
  durationS?: number;
}

export interface VideoFramesOptions {
  ffmpegPath: string;
  /** A path (checked to exist) or a URL ffmpeg opens. */
  url: string;
  /** ffmpeg's input options before `-i` (a relayed camera's `-rtsp_transport tcp`). */
  inputArgs?: readonly string[];
  /** Files: start this many seconds in (ffmpeg's accurate input seek). */
  start?: number;
  /**
   * Stop at the first frame this many seconds or more after the start (by the frames' own times;
   * at least one frame is given). A live stream's times count from the input's start, which may
   * be well before its first decodable frame (joined mid-GOP): `durationFromFirst` counts from
   * that frame instead.
   */
  duration?: number;
  durationFromFirst?: boolean;
  /** Called when a frame past `duration` ends the frames (so the input goes on after them; not called when it ended first). */
  onPastDuration?: () => void;
  /**
   * Deinterlacing (a source's `decode.deinterlace`). Default `auto`: as a run's source, a stream
   * ffmpeg reports interlaced (a field order) is read again, before its first frame is given,
   * with the frames the decoder flags interlaced deinterlaced; any other gets no deinterlacer.
   */
  deinterlace?: Deinterlace;
  /** Sample at most this many frames per second: the first frame at or after each 1/fps step of a file (of each interval centred on them, live; see sampleFilter), never a duplicate. */
  fps?: number;
  /** Called once, before the first frame, with the stream's size, rate and duration. */
  onInfo?: (info: VideoInfo) => void;
  /**
   * Called with the input's length, seconds, as soon as ffmpeg reports it (also when no frame
   * follows), and the input's format as ffmpeg names it (whether the length is an index's or a
   * guess: ffmpeg-args indexedFormat).
   */
  onDuration?: (seconds: number, format: string | undefined) => void;
  /**
   * Called at each of ffmpeg's reports of damaged input (a file cut short: "partial file", a
   * corrupt packet, a decoding error: `reportsDamage`), with its line, and the frame it came
   * after: how many frames the log had reported before it (in order with it on the log, however
   * the frames' pipe and the log's are read), or, while the log has reported none (an ffmpeg that
   * prints no reports, such as the bundled 2018 build), -1 minus the frames read. Reports with
   * the same `after` came between the same two frames.
   */
  onDamage?: (line: string, after: number) => void;
  /**
   * Longest wait for ffmpeg's output, ms, while the consumer is not holding it back: a first
   * frame, or the next one. Then ffmpeg is stopped and VAP_ERR_SOURCE_TIMEOUT (no first frame)
   * or VAP_ERR_SOURCE_STALLED is thrown: a camera that accepts the connection and sends
   * nothing would otherwise be waited for forever. Default 15 000.
   */
  stallMs?: number;
  /** Whether the input can be read only once, where the caller has looked already (lookedInput); looked at otherwise. */
  readsOnce?: boolean;
}

/** How long the first frame waits for the key line of a time read before it (written just after it). */
const KEY_LINE_WAIT_MS = 200;

const DURATION = /^\s*Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)/;

/**
 * The frames of a video (or GIF) at full resolution, packed RGB, decoded by ffmpeg. An async
 * generator: ffmpeg is held back by the pipe while the consumer works on a frame, so memory
 * stays at a few frames whatever the length. Returning early kills ffmpeg. A failure is
 * VAP_ERR_SOURCE_OPEN (missing file, no ffmpeg) or VAP_ERR_SOURCE_EXIT with the end of
 * ffmpeg's log; an input that decodes to no frame ends with none.
 */
export async function* videoFrames(o: VideoFramesOptions): AsyncGenerator<RawFrame> {
  // An input that cannot be read twice is deinterlaced from its first read (flagged frames only).
  const once = o.readsOnce ?? (await lookedInput(o.url));
  yield* framesOf(o, once, once);
}

/** `once`: the input cannot be read a second time (readsOnce). */
async function* framesOf(o: VideoFramesOptions, interlaced: boolean, once: boolean): AsyncGenerator<RawFrame> {
  let yielded = false;
  try {
    for await (const f of videoFramesOnce({ ...o, interlaced })) {
      yielded = true;
      yield f;
    }
  } catch (e) {
    if (e instanceof Interlaced && !yielded && !interlaced) {
      // Once the first ffmpeg has exited (FFMPEG_EXIT_WAIT_MS at most), as a run's source's
      // restart: started beside it, the second found a V4L2 device or a one-session camera
      // still held by the first, killed but not gone.
      await e.gone;
      yield* framesOf(o, true, once);
      return;
    }
    // `auto` puts the deinterlacer on an input reported interlaced (flagged frames only), but
    // ffmpeg's takes no picture under 4 lines or 3 columns a plane (a 64x6 video, a 16x2 GIF:
    // detect failed on them): such a picture is read again without it (it has no fields worth the name).
    if (yielded || (o.deinterlace ?? 'auto') !== 'auto' || !(e instanceof ArgusError) || !TOO_SMALL_TO_DEINTERLACE.test(e.message)) throw e;
    // Not an input read once, which has the deinterlacer from its first read: read again, its
    // writer gone with the first reader, it gave no frame, and VAP_ERR_SOURCE_TIMEOUT after the stall bound.
    if (once) throw new ArgusError(ErrorCodes.SOURCE_PROBE, `${o.url}: the picture is too small for the deinterlacer (under 4 lines or 3 columns a plane) that an input read only once (a named pipe, a URL ffmpeg listens on) is read with under decode.deinterlace auto, and such an input cannot be read again without it: set decode.deinterlace: off, or read the stream from a file`, { cause: e });
    yield* videoFramesOnce({ ...o, interlaced, deinterlace: 'off' });
  }
}

/**
 * ffmpeg reported the input interlaced (a field order) and `deinterlace` is `auto`: read again,
 * deinterlaced, before any frame was given (as ffmpegSource runs such a stream again).
 */
class Interlaced extends Error {
  constructor(
    /** The first ffmpeg's exit (killed as the read ends), FFMPEG_EXIT_WAIT_MS at most. */
    readonly gone: Promise<void>,
  ) {
    super('interlaced');
  }
}

/** ffmpeg's deinterlacer (bwdif) refusing a picture too small for it, on its log. */
const TOO_SMALL_TO_DEINTERLACE = /\[Parsed_bwdif_\d+ @ [^\]]*\] Video with planes less than/;

/**
 * ffmpeg not started (`error`: its child's 'error' event, a thrown spawn's too: spawnOwned), naming the path:
 * VAP_ERR_SOURCE_SPAWN where it may start later (out of descriptors, processes, memory), as a
 * run's source says it, VAP_ERR_SOURCE_OPEN otherwise.
 */
function notStarted(ffmpegPath: string, error: Error | undefined): ArgusError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? '';
  if (code === 'ENOENT') return new ArgusError(ErrorCodes.SOURCE_OPEN, `ffmpeg not found at ${ffmpegPath}`, { cause: error });
  return new ArgusError(TRANSIENT_SPAWN_ERRORS.has(code) ? ErrorCodes.SOURCE_SPAWN : ErrorCodes.SOURCE_OPEN, `could not start ffmpeg (${ffmpegPath}): ${error?.message ?? 'no pipes to it'}`, { cause: error });
}

/** `interlaced`: ffmpeg reported the input interlaced (on a first read: Interlaced). */
async function* videoFramesOnce(o: VideoFramesOptions & { interlaced: boolean }): AsyncGenerator<RawFrame> {
  // A local still image: decoded as argus detect and a pipeline's source read it (decodeStill),
  // and given to ffmpeg on its stdin as one raw frame.
  const stillPath = stillImagePath(o.url);
  // A V4L2 device as a run opens one (sourceInput: `-f v4l2`, its path); one not there, or not
  // this user's to open, named as `argus check` names it.
  const kind = sourceKind(o.url);
  const opened = sourceInput(o.url, kind);
  if (kind === 'v4l2') {
    const why = await deviceProblem(opened.url);
    if (why) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `video: ${o.url} ${why}`);
  }
  const still = stillPath !== undefined ? await decodeStill(stillPath) : undefined;
  // verbose: the scale filter's line at each (re)configuration, which gives a new picture's size
  // before the report of its first frame (see `sizes`).
  const args = ['-hide_banner', '-nostdin', '-nostats', '-loglevel', 'verbose'];
  // A seek past 1e9 s (31 years) is past any file's end; ffmpeg takes no more than 2^63 µs, nor
  // toFixed's exponent form (1e21 and up).
  if (o.start && o.start > 0) args.push('-ss', Math.min(o.start, 1e9).toFixed(6));
  const raw = still && stillInput(still);
  args.push(...(raw ? [] : opened.format), ...decodeBoundArgs(o.url), ...(raw ? raw.args : (o.inputArgs ?? [])), '-i', raw ? raw.url : opened.url, '-an', '-sn', '-dn', '-map', '0:v:0');
  // Each decoded frame once, with its own time: sampled (never duplicated, whatever `fps`), reduced
  // to the pipeline's bound on source-size frames (so pixel coordinates agree with a run's), and
  // its time printed on the log. Passthrough: no frame is repeated or dropped to make a constant
  // rate, so the printed times pair with the frames in order.
  // The run's own tag names the output and the frame-time key (taggedStdout, frameTimeFilters).
  const tag = outputTag();
  // Files' times are exact: the first frame at or after each 1/fps step; live ones' are arrival times (sampleFilter).
  // The deinterlacer first, on every field in order (see buildFfmpegArgs); not for a still image's
  // raw frame. `auto`: only for an input ffmpeg reports interlaced (read again then: Interlaced),
  // as a run's source does. Not on every input: ffmpeg (5.1) rebuilds its filter graph at a
  // change of resolution, and the frame bwdif held (it holds one, whatever frames it deinterlaces)
  // was lost: the last frame before each change never came.
  const deinterlace = raw ? [] : deinterlaceFilters(o.deinterlace ?? 'auto', o.interlaced, o.url);
  args.push('-vf', [...deinterlace, ...(o.fps ? [sampleFilter(o.fps, kind !== 'file')] : []), sourceBoundFilter(o.url), ...frameTimeFilters(tag)].join(','));
  const outputUrl = taggedStdout(tag);
  const frameTimes = new FrameTimes(frameTimeKey(tag));
  // One encoder thread: frame threads hold each frame until the next ones come (ffmpeg-args).
  args.push('-vsync', 'passthrough', '-pix_fmt', 'rgb24', '-threads', '1');
  // Each picture at its own size: by default ffmpeg scales every later one to the first one's,
  // whatever its shape (a file joined from a 320x240 and a 160x160 recording: its second part
  // stretched to 4:3, boxes found and drawn on the stretched picture). Not with an ffmpeg older
  // than 4.4, which refuses the option (see ffmpeg-args).
  // Without it every picture is written at the first size, whatever size the scaler's line gives.
  const ownSizes = ffmpegAutoscales(o.ffmpegPath);
  if (ownSizes) args.push('-autoscale', '0');
  args.push(...NO_INPUT_METADATA, '-f', 'rawvideo', outputUrl);
  // Stopped at a stop signal too (Ctrl-C: ownChild), its frames' pipe closed first: with a
  // frame held by the consumer, ffmpeg waited in a write to the full pipe, never read the camera's
  // next packet, where it acts on SIGTERM, and was killed at the grace's end without its TEARDOWN.
  // (ffmpeg ignores SIGPIPE: the write's EPIPE ends its output, and its input is closed as at its end.)
  // The frames' reader then waits for the process's end by the signal (atSignal), not on to an
  // error of the closed pipe (an error line, a script's exit 1, before the camera's grace).
  let atSignal = false;
  // (A spawn that throws, ENOMEM, E2BIG or an argument with a NUL, is told as a start that fails
  // later is: spawnOwned gives a child that never started, its 'error' event saying why.)
  const child = spawnOwned(o.ffmpegPath, args, { stdio: ['pipe', 'pipe', 'pipe'] }, kind === 'rtsp' ? (c) => ((atSignal = true), c.stdout?.destroy(), stopGently()) : undefined) as ChildProcessWithoutNullStreams;
  // First: a start that fails (EMFILE, ENOENT) is told by the child's 'error' event (on the next
  // tick), which ended argus where nothing listened yet; out of descriptors (EMFILE, ENFILE) node
  // gives the child no pipes, whose use below threw a TypeError first.
  nameChild(child, o.url);
  const exited = new Promise<{ code: number | null; error?: Error }>((res) => {
    child.on('error', (error) => res({ code: null, error }));
    child.on('close', (code) => res({ code }));
  });
  if (!child.stdin || !child.stdout || !child.stderr) throw notStarted(o.ffmpegPath, (await exited).error);
  /** The stalled ffmpeg, killed, had not exited FFMPEG_EXIT_WAIT_MS later (stuck in the kernel). */
  let stuck = false;
  let giveUp: (() => void) | undefined;
  /** Resolves once the stalled ffmpeg is given up on (`stuck`): its end is not waited for. */
  const givenUp = new Promise<{ code: number | null; error?: Error }>((r) => (giveUp = () => r({ code: null })));
  // A read error of the frames' pipe (EIO) ends the frames coded as a run's source's (the for-await
  // below throws it); one of the log's ends the log, as its close does (it ended argus, unheard).
  let readError: Error | undefined;
  child.stdout.once('error', (e) => (readError = e));
  child.stderr.on('error', () => {});
  /**
   * Stops ffmpeg as a run stops its own (stopFfmpeg): an RTSP camera's with SIGTERM, on which it
   * sends the camera TEARDOWN, SIGKILL after the grace; any other's with SIGKILL. A preview of a
   * camera killed its ffmpeg outright, the camera's session left open until it timed out (a
   * camera of 2 to 4 sessions then refused the run started next, 453, for a minute).
   */
  let stopping: Promise<void> | undefined;
  // (Once: at a second SIGTERM, ffmpeg interrupts its I/O, the TEARDOWN's write with it.)
  const stopGently = (): Promise<void> => (stopping ??= kind === 'rtsp' ? stopFfmpeg(child) : (signalChild(child, 'SIGKILL'), Promise.resolve()));
  const stop = (): void => void stopGently();
  // A still image's frame, else nothing (-nostdin: ffmpeg reads its stdin only as an input).
  child.stdin.on('error', () => {}); // an ffmpeg that ends first is told by its exit
  child.stdin.end(still?.data);

  // The log: the input's duration, then the output stream's size and rate (known before the
  // first frame is written); the last lines for error reports.
  let info: VideoInfo | undefined;
  let durationS: number | undefined;
  let inOutput = false;
  /** ffmpeg reported its input (`Input #0`): a program that did behaved as ffmpeg. */
  let inputReported = false;
  /** The input's format, from its `Input #0` line. */
  let format: string | undefined;
  /** The input's first video stream, as ffmpeg reports it (before its output's report). */
  let inputStream: ReturnType<typeof parseVideoStreamLine>;
  /** What the log said that cannot be used (thrown by the reader, never from the log's handler). */
  let badLog: ArgusError | undefined;
  const logLines = new LogLines();
  const tail: string[] = [];
  let tooLarge: { width: number; height: number } | undefined;
  // Each frame's time, µs, in output order, until its frame is read. ffmpeg prints it before it
  // writes the frame, but on another pipe: a frame whose time is not read yet waits for the log's
  // next chunk (or its end). An ffmpeg that prints no report (older builds, such as the bundled
  // 2018 one) is known at the first frame: none has come by then; its frames get index / rate.
  const times: number[] = [];
  /** Frame reports read so far (whether or not `times` keeps them). */
  let reported = 0;
  /**
   * The sizes frames are written at: from frame `from` (counted as the reports are) on. The scale
   * filter logs a new picture's size before the report of its first frame, after the output's
   * report (a line before it may be a file's metadata; the first size is the output's).
   */
  const sizes: { from: number; width: number; height: number }[] = [];
  /** The size the scale filter last logged (after the output's report). */
  let latest: { width: number; height: number } | undefined;
  /** Frames read (for onDamage, where the log reports none). */
  let index = 0;
  let reports: boolean | undefined;
  let logged: (() => void) | undefined;
  let logEnded = false;
  let gotInfo!: () => void;
  const infoKnown = new Promise<void>((r) => (gotInfo = r));
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > 12) tail.shift();
  };
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of logLines.push(chunk)) {
      if (typeof line !== 'string') {
        if (line.dropped.trim()) keep(line.dropped); // not read (see LogLines), but worth an error report
        continue;
      }
      if (!line.trim()) continue;
      const report = frameTimes.read(line);
      if (report !== undefined) {
        if (report !== null) {
          reported++;
          if (reports !== false) times.push(report);
        }
        continue; // not for the error tail
      }
      const scaled = info ? scaledTo(line) : undefined;
      // (An ffmpeg without -autoscale logs the graph's new size and writes the first one: an
      // ffmpeg older than 4.4, the bundled 2018 build. Cut at the logged size, its frames were
      // no pictures: three 160x160 "frames" of each 320x240 one after a change to 160x160.)
      if (scaled && ownSizes) {
        const last = latest ?? info!;
        latest = scaled;
        if (scaled.width !== last.width || scaled.height !== last.height) {
          if (scaled.width > 0 && scaled.height > 0 && scaled.width * scaled.height <= MAX_SOURCE_PIXELS) sizes.push({ from: reported, ...scaled });
          else {
            badLog ??= new ArgusError(ErrorCodes.SOURCE_PROBE, `${o.url}: ffmpeg's log gives a picture as ${scaled.width}x${scaled.height}, beyond the ${MAX_SOURCE_PIXELS} pixels argus takes`);
            stop();
          }
        }
        continue;
      }
      if (scaled) continue; // (verbose) not for the error tail
      if (isConfigChatter(line)) continue; // (verbose) not for the error tail
      // Of argus's own -vsync (kept: the bundled 2018 ffmpeg has no -fps_mode), not of the input.
      if (/^-vsync is deprecated/.test(line)) continue;
      keep(line);
      if (reportsDamage(line)) o.onDamage?.(line, reported > 0 ? reported : -1 - index);
      tooLarge ??= pictureTooLarge(line);
      const d = DURATION.exec(line);
      if (d && durationS === undefined) {
        durationS = Number(d[1]) * 3600 + Number(d[2]) * 60 + Number(d[3]);
        o.onDuration?.(durationS, format);
      }
      if (isInputHeader(line) && !inputReported) {
        inputReported = true;
        format = /^Input #0, (.*?), from '/.exec(line)?.[1];
      }
      if (/^Output #0/.test(line)) inOutput = isOutputHeader(line, outputUrl);
      else if (inputReported && !inOutput && !info) inputStream ??= parseVideoStreamLine(line);
      else if (inOutput && !info) {
        const s = parseVideoStreamLine(line);
        // ffmpeg's filter keeps frames within MAX_SOURCE_PIXELS; more is not what it writes.
        if (s && !(s.width * s.height <= MAX_SOURCE_PIXELS)) {
          badLog ??= new ArgusError(ErrorCodes.SOURCE_PROBE, `${o.url}: ffmpeg's log gives the picture as ${s.width}x${s.height}, beyond the ${MAX_SOURCE_PIXELS} pixels argus takes`);
          stop();
          gotInfo();
        } else if (s) {
          info = { width: s.width, height: s.height, fps: s.fps, durationS };
          gotInfo();
        } else if (/^\s*Stream #\d+:\d+/.test(line)) {
          // The output's stream line without a size argus reads (a side of six digits: a 60 KB
          // file of 120000x2 frames): the frames could never be cut, and ffmpeg, blocked on the
          // full pipe, and argus waited on each other for ever (ffmpegSource says the same).
          badLog ??= new ArgusError(ErrorCodes.SOURCE_PROBE, `${o.url}: ffmpeg's line for the frames it writes has no size argus can read: ${line.trim()}`);
          stop();
          gotInfo();
        }
      }
    }
    logged?.();
  });
  child.stderr.on('close', () => {
    logEnded = true;
    logged?.();
  });
  /** The next frame's time, µs (undefined when ffmpeg reports none, NaN for a frame without one). */
  const nextTime = async (): Promise<number | undefined> => {
    if (reports === undefined) {
      // A report printed before the first frame was read has been read by the end of this poll
      // phase of the event loop (both pipes were readable when the frame's last bytes were).
      if (!times.length && !logEnded) await new Promise<void>((r) => setImmediate(r));
      // A time read whose key line (a write of its own, also before the frame) is still to come.
      // Briefly: a time line that a file's metadata forged has no key line ever (an ffmpeg that
      // prints no reports would otherwise stall here).
      const until = Date.now() + KEY_LINE_WAIT_MS;
      while (!times.length && frameTimes.waiting && !logEnded && Date.now() < until) {
        await new Promise<void>((r) => {
          const t = setTimeout(r, until - Date.now());
          logged = () => (clearTimeout(t), r());
        });
      }
      reports = times.length > 0;
    }
    if (!reports) return undefined;
    if (!times.length && !logEnded) {
      watch(); // ffmpeg is waited for here too: a report that never comes is a stall
      while (!times.length && !logEnded) await new Promise<void>((r) => (logged = r));
      unwatch();
    }
    return times.shift();
  };
  void Promise.race([exited, givenUp]).then(gotInfo); // an ffmpeg that ends without an output stream (or is given up on, stuck)

  /** Its frames' pipe has ended: what is waited for is its exit (a stall then is one at its end). */
  let framesEnded = false;
  /** The stall, said (`stuck`: with the ffmpeg that did not exit). */
  const stallError = (): ArgusError => {
    if (framesEnded) {
      const left = stuck ? `, nor ${FFMPEG_EXIT_WAIT_MS / 1000} s after it was killed (stuck in the kernel: a hung device or network mount?)` : ' (killed)';
      return new ArgusError(ErrorCodes.SOURCE_STALLED, `ffmpeg ${child.pid} ended its output after ${index} frame${index === 1 ? '' : 's'} of ${o.url} but had not exited ${stallMs / 1000} s later${left}: whether it read all of ${o.url} is not known`);
    }
    const what = index === 0 ? `no frame came from ${o.url} within ${stallMs / 1000} s` : `${o.url} stopped sending frames (none for ${stallMs / 1000} s)`;
    const left = stuck ? `; its ffmpeg ${child.pid} has not exited ${FFMPEG_EXIT_WAIT_MS / 1000} s after it was killed (stuck in the kernel: a hung device or network mount?)` : '';
    return new ArgusError(index === 0 ? ErrorCodes.SOURCE_TIMEOUT : ErrorCodes.SOURCE_STALLED, what + left);
  };
  let done = false;
  // The watchdog runs only while this waits for ffmpeg, never while a frame is with the consumer.
  const stallMs = o.stallMs ?? 15_000;
  let stalled = false;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const watch = () => {
    watchdog = setTimeout(() => {
      stalled = true;
      stop();
      // One stuck in the kernel (a hung network mount, a wedged device) ignores the kill until it
      // leaves it, and holds its pipes open meanwhile: the read of its frames and the wait for its
      // end waited with it, and argus detect or preview said nothing and never ended. Its pipes
      // are let go, and the stall said (the command's end names the process left: childrenLeft).
      void exitOf(child, FFMPEG_EXIT_WAIT_MS).then(() => {
        if (child.exitCode != null || child.signalCode != null) return;
        stuck = true;
        child.stdout.destroy();
        child.stderr.destroy();
        giveUp?.();
      });
    }, stallMs);
  };
  const unwatch = () => clearTimeout(watchdog);
  /** Waits until frame `i`'s report has been read (so any change of size before it), or the log ended, or it prints none. */
  const reportOf = async (i: number): Promise<void> => {
    if (reported > i || logEnded || reports === false) return;
    watch(); // a report that never comes is a stall
    while (reported <= i && !logEnded) await new Promise<void>((r) => (logged = r));
    unwatch();
  };
  let first: number | undefined;
  try {
    let reader: FrameReader | undefined;
    let size = { width: 0, height: 0 };
    /** Frames up to this one (counted as `index`) have their size known: the reader cuts them. */
    let sized = 0;
    const cut: Buffer[] = [];
    // No buffer is given back: a frame may be kept by the consumer (the last one drawn).
    const readerFor = (width: number, height: number) => {
      size = { width, height };
      return new FrameReader(width * height * 3, new BufferPool(width * height * 3, 0), (f) => cut.push(f));
    };
    watch();
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      unwatch();
      if (!reader) {
        // Still waited for: ffmpeg's report of its output (a log argus cannot read is a stall, not a wait for ever).
        watch();
        await infoKnown;
        unwatch();
        if (badLog) throw badLog;
        if (!info) break;
        if (!o.interlaced && (o.deinterlace ?? 'auto') === 'auto' && !raw && interlacedBy(inputStream?.pixDetails)) throw new Interlaced(exitOf(child, FFMPEG_EXIT_WAIT_MS));
        o.onInfo?.(info);
        reader = readerFor(info.width, info.height);
      }
      let rest = chunk;
      while (rest.length) {
        // Stops before a frame whose size is not known yet.
        rest = rest.subarray(reader.push(rest, () => index + cut.length > sized));
        while (cut.length) {
          const data = cut.shift()!;
          const i = index++;
          const us = await nextTime();
          const pts = us !== undefined && Number.isFinite(us) ? us / 1e6 : info!.fps ? i / info!.fps : i;
          first ??= pts;
          // Here, not ffmpeg's -t: with passthrough, ffmpeg rounds a frame's time to 1/rate of the
          // stream before comparing, and ends early on a frame off that grid (0.75 s at 10 fps: 0.8).
          if (o.duration !== undefined && i > 0 && pts - (o.durationFromFirst ? first : 0) >= o.duration) {
            o.onPastDuration?.();
            return;
          }
          yield { index: i, pts, data, width: size.width, height: size.height };
        }
        if (!rest.length) break;
        // The next frame's bytes are in: its size, once its report is (a new picture's size comes before it).
        await reportOf(index);
        if (badLog) throw badLog;
        let s: { width: number; height: number } = size;
        while (sizes.length && sizes[0].from <= index) s = sizes.shift()!;
        if (s.width !== size.width || s.height !== size.height) reader = readerFor(s.width, s.height);
        sized = index;
      }
      watch();
    }
    unwatch();
    if (atSignal) await endsBySignal();
    // Its exit, waited for as a frame is (the watchdog): an ffmpeg that ended its output and then
    // stuck in the kernel on its way out (closing a hung mount's file, a wedged device) was waited
    // for unwatched, for ever: `argus detect` printed its frames and never ended.
    // (Not one whose frames ended as the stall stopped it: that stall is said as it was.)
    if (!stalled) {
      framesEnded = true;
      watch();
    }
    const { code, error } = await Promise.race([exited, givenUp]);
    unwatch();
    done = true;
    if (badLog) throw badLog;
    if (stalled) throw stallError();
    if (error) throw notStarted(o.ffmpegPath, error);
    // Ended without reporting its input: asked then (never on the way to a frame) whether it is ffmpeg at all.
    const notIt = inputReported ? undefined : await notFfmpeg(o.ffmpegPath, code === null ? 'was ended by a signal' : `exited with code ${code}`);
    if (notIt) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `${o.url}: ${notIt}`);
    if (code !== 0) {
      const lines = [...tail, logLines.rest].filter(Boolean);
      const last = withoutOwnNotices(lines).slice(-6).join('\n');
      if (tooLarge && index === 0) throw new ArgusError(ErrorCodes.SOURCE_PROBE, tooLargeMessage(o.url, tooLarge));
      if (saysNoVideoStream(lines.join('\n'))) throw new ArgusError(ErrorCodes.SOURCE_PROBE, `${o.url} has no video stream:\n${last}`);
      throw new ArgusError(ErrorCodes.SOURCE_EXIT, `ffmpeg exited with code ${code} decoding ${o.url}:\n${last}`);
    }
  } catch (e) {
    if (atSignal) await endsBySignal();
    // (The pipes of a stuck ffmpeg let go end the read of its frames with an error of their own.)
    if (stuck) throw stallError();
    if (readError !== undefined && e === readError) throw new ArgusError(ErrorCodes.SOURCE_SPAWN, `${o.url}: ffmpeg's stdout failed: ${readError.message}`, { cause: e });
    throw e;
  } finally {
    unwatch();
    if (!done) stop();
  }
}
