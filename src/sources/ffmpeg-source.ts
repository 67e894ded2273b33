import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { catchError, defer, from, mergeMap, Observable, throwError, type Subscription } from 'rxjs';
import { exitOf, signalChild, spawnOwned } from '../core/children.js';
import { fromWallClock, now } from '../core/clock.js';
import { ArgusError, ErrorCodes, isArgusError } from '../core/errors.js';
import { ThrottledLog, type LogFn } from '../core/log.js';
import { redact, rememberArgSecrets, rememberUrlSecrets } from '../core/redact.js';
import { emptyStamps, type Frame, type ProducedBy, type YuvColour } from '../core/frame.js';
import { letterbox, type Letterbox } from '../core/geometry.js';
import { buildFfmpegArgs, DEFAULT_DECODE, frameBytes, frameTimeKey, MAX_SOURCE_PIXELS, readsOnce, reportsFrameTimes, outputTag, seekTrim, taggedStdout, tooLargeMessage, type FfmpegInputSpec, type FfmpegOutputSpec } from './ffmpeg-args.js';
import type { Pace } from '../flow/pace.js';
import { BufferPool, FrameReader } from './frame-reader.js';
import { FrameChannel } from './frame-channel.js';
import { FRAME_SOCKETS, FrameSocket } from './frame-socket.js';
import { checksCertificate, relaysRtsp, tapsCameraClock } from '../core/rtsp-relay.js';
import { CAMERA_AHEAD_SLACK_MS, CAMERA_BEHIND_MAX_MS, CAMERA_BEHIND_SUSTAINED_MS, RtspTap, UNIT_JUMP_BACK_MS, type ClockReading } from './rtsp-tap.js';
import { HttpRelay, noProxyMatches, noProxyOf } from './http-relay.js';
import { ffmpegAutoscales, notFfmpeg } from './ffmpeg-path.js';
import { exposedSecrets, secretsRelay } from './secrets-relay.js';
import { colourOf, interlacedBy, outputRate, saysNoVideoStream, withoutOwnNotices, StderrProbe, type StreamInfo } from './stderr-probe.js';
import { decodeStill, stillImagePath, type KeptStill, type StillPicture } from './still-image.js';
import { fileLook, fileProblem } from './file-look.js';

export { FILE_STAT_TIMEOUT_MS, fileLook, fileProblem } from './file-look.js';

/** How ffmpeg is started: node's `child_process.spawn` (injectable for tests). */
export type SpawnFn = (command: string, args: readonly string[], options: { stdio: ['ignore' | 'pipe', 'pipe' | Socket | number, 'pipe']; env?: NodeJS.ProcessEnv }) => ChildProcess;

/** node's spawn, in a process group of its own, the child ended with argus however argus ends (spawnOwned). */
const ownedSpawn: SpawnFn = (command, args, options) => spawnOwned(command, args, options);

export interface FfmpegSourceOptions {
  /** Source id, copied into every frame. */
  id: string;
  input: FfmpegInputSpec;
  output: FfmpegOutputSpec;
  /** ffmpeg executable. */
  ffmpegPath: string;
  /**
   * Files at `rate: 'fast'`: the stage that sets the pace (detection). While it is busy, one
   * frame is read ahead and ffmpeg is held back behind it; that frame is released (and stamped
   * `captured`) when the stage is idle, so `captured → emitted` measures the pipeline, not a
   * queue, and the stage never waits for a read. Files at `rate: 'native'`: the next frame is
   * read while the stage is idle (or at the latest half a frame before it is due), so reading
   * and decoding do not compete with inference for the cores. Without a pace, or for other
   * sources, frames are read as ffmpeg delivers them (live sources: the pipeline drops stale
   * frames).
   */
  pace?: Pace;
  /** Called once ffmpeg has reported the input stream. */
  onStreamInfo?: (info: StreamInfo, letterbox: Letterbox) => void;
  /**
   * Called when a run's ffmpeg has reported the opened input with a video stream it could
   * describe (its size known: `Input #0`'s stream line, before any frame): the camera
   * answered with video, whenever its first frame comes (argus worker: not unreachable); or
   * with a stream whose size comes with its key frame (H.264, H.265, MPEG-2, MPEG-4 Part 2) (`Video: h264, none`: a camera
   * with no parameter sets in its SDP, its probe ended on P-frames). Not for an input opened with
   * no such stream: an HTML login page read through a forced `-f mjpeg`.
   */
  onInputOpened?: () => void;
  /**
   * Told of ffmpeg's reports of damaged input (a corrupt packet, a decoding error), with its
   * line: once for the reports between two frames (the frames as ffmpeg's log reports them, in
   * order with its damage lines; as they arrive from an ffmpeg that reports none); a live
   * source's from each run's first frame (before it, the decoder's errors are those of a stream
   * joined between key frames).
   */
  onDamage?: (line: string) => void;
  /** Told when a spawned ffmpeg exits (for tests and health reporting). */
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** Called with the child right after spawn. */
  onSpawn?: (child: ChildProcess) => void;
  /**
   * What a run found out about the source, so that its next runs (restarts) start with it:
   * `packed`, the source calls for packed frames instead of `source-yuv` ones (not 4:2:0, odd
   * height, small); `ownRate`, a file's own rate (that of ffmpeg's constant-rate output, the
   * rate it gives its filter graph: `StderrProbe.graphRate`) is below the configured `fps`;
   * `interlaced`, ffmpeg reports the stream interlaced (deinterlaced with `decode.deinterlace: auto`).
   */
  memo?: SourceMemo;
  /** The input's resolution changed mid-stream; frames from now on carry the new letterbox. */
  onResize?: (from: Letterbox, to: Letterbox) => void;
  /** `seq` of the first frame (a restarted source goes on counting). Default 0. */
  seqStart?: number;
  /**
   * `pts` of the first frame, seconds; later frames add `1 / fps` each (a file: the rate
   * delivered; a live source: kept within LIVE_PTS_SLACK_S of `ptsClock`), or the time since
   * the first frame when the rate is unknown. A function is called when the first frame
   * arrives, so a restarted live source can count the outage in. Default 0.
   */
  ptsStart?: number | (() => number);
  /**
   * Seconds on the source's own clock now, which a live source's pts stay within
   * LIVE_PTS_SLACK_S of (a supervisor's: since the source's first frame, across restarts).
   * Default: `ptsStart` plus the time since this run's first frame.
   */
  ptsClock?: () => number;
  /**
   * A native-rate file's timetable across runs (a supervisor's): where `next` is set when the
   * input opens, this run's first frame is due then (core/clock `now`, epoch ms) rather than at
   * the opening, and each frame released sets it to when the frame after it is due. A looped
   * file's next pass so plays on one frame period after the last frame of the pass before (its
   * restart, late, shows as latency), as a camera's frames would come. Default: none (each run
   * due from when ffmpeg reports the opened input).
   */
  schedule?: PlaySchedule;
  /** Monotonic milliseconds (pts of sources without a frame rate). Default `performance.now`. */
  clock?: () => number;
  /** Starts ffmpeg. Default node's `child_process.spawn`. */
  spawn?: SpawnFn;
  /**
   * Whether frames may come through a FrameChannel where one can be made (default true); false:
   * a fast file's through a FrameSocket, others' through the stdout pipe (tests of those paths).
   */
  frameChannel?: boolean;
  /**
   * Told once per start of a relayed RTSP source why its frames are not stamped with the
   * camera's clock (rtsp-tap): a camera time not believed, or frames that cannot be paired.
   * The notices a connection's relay finds (a clock jump, a time not believed or far behind,
   * access units no longer ended) at most once a cause per source in NOTICE_REPEAT_MS, then
   * with a count: a camera that reconnects every few seconds does not repeat them each time.
   */
  onClockNotice?: (text: string) => void;
  /**
   * Told why a rerun within this start (packed frames, the file's own rate, the deinterlacer, a
   * seek's margin) waits, however long, for the source's last ffmpeg and the one left behind
   * before it (both stuck in the kernel: lastFfmpegGone's `onStuck`): supervisedSource reports it
   * as its restarts' wait is (`stuck`, VAP_ERR_SOURCE_STALLED, counted in ffmpegWaits). It
   * waited without a word: the source said `starting` for as long as the device hung. What it
   * returns is called when that wait ends (or is cancelled): supervisedSource's start timeout
   * does not run during it, as it does not during a restart's wait.
   */
  onFfmpegStuck?: (why: string) => (() => void) | void;
  /**
   * Told once per source (its `memo`) when ffmpeg's command line, which every local user can
   * read, holds a secret of the camera's that argus's relays cannot carry (exposedSecrets): an
   * SRT passphrase, RTMP credentials, RTSP tunnelled in HTTP.
   */
  onSecretsExposed?: (text: string) => void;
  /** Where the camera's relay tells of connections it refused (RelayDoor: warnings coded VAP_ERR_RELAY_REFUSED). */
  relayLog?: LogFn;
}

/**
 * Live sources: reported frame times not yet matched to a frame, and frames delivered before
 * their time was reported, are each kept up to this many (they normally pair within a frame).
 */
const MAX_UNPAIRED = 8;

/**
 * Letterbox changes kept until their first frame is read (probe.onResize): as many as frames can
 * wait between ffmpeg and argus (a pipe's or a frame socket's worth: dozens of small frames, each
 * a change in a stream whose size changes every frame); beyond, the oldest is applied at once.
 */
const MAX_PENDING_RESIZES = 1024;

/**
 * The longest frames at the source's size wait for ffmpeg's report of them (see `unreported` in
 * oneFfmpeg) before they are cut all the same, ms: a report that never came (none is known to go
 * missing) must not stall a source, and a fast file has no stall watchdog.
 */
const REPORT_WAIT_MS = 2000;

/** spawn errors that are about the machine's state right now (no file descriptors, processes, memory), not about ffmpeg. */
export const TRANSIENT_SPAWN_ERRORS = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM']);

/**
 * One ffmpeg child process per subscription, emitting letterboxed frames. Completes when
 * ffmpeg reaches the end of the input; errors (coded `VAP_ERR_SOURCE_*`) when it cannot start,
 * cannot report a video stream, or exits with a failure. Unsubscribing kills ffmpeg.
 */
export function ffmpegSource(options: FfmpegSourceOptions): Observable<Frame> {
  // (A URL given here without the config's schema: its secrets redacted, as a configured source's.)
  rememberUrlSecrets(options.input.url);
  rememberArgSecrets(options.input.inputArgs ?? []);
  const memo = options.memo ?? {};
  // A file's judgement (readsOnce: a named pipe is read from its first ffmpeg with what a rerun
  // would add), before its first run, by an asynchronous, bounded look (fileLook): readsOnce's
  // statSync held the event loop, every source and sink with it, for as long as a hung network
  // mount did not answer (a run's sources, through supervisedSource, looked so already; bench and
  // a source without a memo did not). What it finds wrong fails the start, coded, naming the file.
  if (memo.readsOnce === undefined && options.input.kind === 'file') {
    return defer(() => from(fileLook(options.input.url.replace(/^file:\/\//i, '')))).pipe(
      mergeMap((look) => {
        if (look.problem) return throwError(() => new ArgusError(look.problem!.code, redact(`source "${options.id}": ${look.problem!.why}`)));
        memo.readsOnce = look.readsOnce ?? false;
        return ffmpegSource({ ...options, memo });
      }),
    );
  }
  // Decided from ffmpeg's log before any frame is read (the rate: at its output's report); a
  // source is run again at most once for each.
  // - A source that is not 4:2:0 (a GIF's palette, 10-bit video, 4:4:4 video), of an odd
  //   height, or small (YUV_MIN_PIXELS), is run again with packed frames, which ffmpeg converts
  //   from the source's own format: the values stay those of a direct conversion.
  // - A file whose own rate (that of ffmpeg's constant-rate output: `graphRate`) is below the
  //   configured `fps` is run again without the fps filter, which would repeat its frames to
  //   make up the rate (each one inferred, published and counted twice at 60 over 30 fps):
  //   every frame once, at the file's rate (a variable-rate file's frames are still repeated
  //   over its gaps, by ffmpeg's constant-rate output).
  // - A stream ffmpeg reports interlaced (a field order), with `decode.deinterlace: auto`, is run
  //   again with the deinterlacer (ffmpeg-args deinterlaceFilters): a progressive one is never
  //   given it, and its one frame of delay. An input that can be read only once (a named pipe:
  //   readsOnce) is not run again for it: it has the deinterlacer from its first run, as argus
  //   detect and preview read it (the second ffmpeg of a named pipe waited for a writer that had
  //   gone, and the source got no frame). Nor for packed frames: it has them from the start.
  const once = (memo.readsOnce ??= readsOnce(options.input.url, options.input.kind));
  const run = (base: FfmpegSourceOptions, tap?: RtspTap, named?: NamedRelay): Observable<Frame> => {
    let o = base;
    if (memo.ownRate) o = { ...o, input: { ...o.input, fps: undefined } };
    if (memo.interlaced || once) o = { ...o, input: { ...o.input, interlaced: true } };
    if (memo.seekMargin !== undefined && o.input.seek !== undefined && (o.input.seekMargin ?? 0) > 0) o = { ...o, input: { ...o.input, seekMargin: Math.max(o.input.seekMargin!, memo.seekMargin) } };
    // (A local still image is given to ffmpeg as packed RGB: it is packed from the start. So is
    // an input read only once, which cannot be run again for packed frames: a named pipe of a
    // small picture gave no frame, its second ffmpeg waiting for a writer that had gone.)
    const packed = memo.packed || once || (o.input.kind === 'file' && stillImagePath(o.input.url) !== undefined);
    if (packed && o.output.frame === 'source-yuv') o = { ...o, output: { ...o.output, frame: 'source' } };
    return oneFfmpeg({ ...o, memo }, tap, named).pipe(
      catchError((e: unknown) => {
        // The relay failed the run (RelayUnusable), or did before another rerun's reason came.
        const relayFailure = e instanceof RelayUnusable ? e.message : tap?.clock.failure();
        if (tap && relayFailure) {
          // Without the relay, ffmpeg's own RTSPS would take any certificate: not unless allowed.
          if (checksCertificate(base.input.url, base.input.tls)) {
            tap.close();
            // After frames, a restart may find the camera as before; at once, it will not.
            const delivered = e instanceof RelayUnusable && e.delivered;
            return throwError(() => new ArgusError(delivered ? ErrorCodes.SOURCE_EXIT : ErrorCodes.SOURCE_OPEN, redact(`source "${base.id}": argus's relay cannot follow this camera (${relayFailure}), and without it ffmpeg cannot check the camera's certificate: set the source's tls: { verify: false } to run it so`)));
          }
          // Run as if the source had cameraClock: false, this run and the starts after it until
          // its wait is over: a glitch (a camera's timestamps that stopped advancing for a while)
          // cost the camera's clock, and the relay's access-unit ends, until argus restarted.
          const wait = relayGivenUp(memo, now());
          tap.close();
          base.onClockNotice?.(`source "${base.id}": the camera's clock is not used: ${relayFailure}; it is run without argus's relay, frames stamped with their arrival at ffmpeg (the relay is tried again at the source's first restart after ${Math.round(wait / 1000)} s)`);
          const unrelayed = { ...base, input: { ...base.input, relay: undefined } };
          // Frames were delivered: the supervisor restarts the source, carrying seq and pts on.
          if (e instanceof RelayUnusable && e.delivered) return throwError(() => new ArgusError(ErrorCodes.SOURCE_EXIT, redact(`source "${base.id}": restarted without argus's relay: ${relayFailure}`)));
          if (!learnt(memo, e) && !(e instanceof RelayUnusable)) return throwError(() => e);
          return plain(unrelayed);
        }
        if (!learnt(memo, e)) return throwError(() => e);
        return run(base, tap, named);
      }),
    );
  };
  // A source run without the camera-clock relay (`cameraClock: false`, the relay given up or
  // its wait not over, an HTTP camera): still through a relay that passes its bytes on, where
  // it has credentials to keep off ffmpeg's command line, which every local user can read, or
  // an rtsps:// certificate to check, which ffmpeg cannot (secrets-relay).
  const plain = (base: FfmpegSourceOptions): Observable<Frame> => {
    // (A camera that redirects ffmpeg is followed by the relay: relay-redirect.)
    const relay = secretsRelay(base.input, base.relayLog);
    if (!relay) return run(base);
    return throughRelay(base.id, relay, (credentialRelay, named) =>
      run({ ...base, input: { ...base.input, relay: undefined, credentialRelay, inputArgs: named instanceof HttpRelay ? named.ffmpegInputArgs(base.input.inputArgs) : base.input.inputArgs } }, undefined, named),
    );
  };
  // ffmpeg's own RTSPS takes any certificate (the config refuses this; others who build an input too).
  if (checksCertificate(options.input.url, options.input.tls) && !relaysRtsp(options.input)) {
    return throwError(() => new ArgusError(ErrorCodes.SOURCE_OPEN, redact(`source "${options.id}": an rtsps:// camera without argus's relay, whose certificate ffmpeg cannot check: tls: { verify: false } runs it so`)));
  }
  if (!tapsCameraClock(options.input)) return defer(() => plain(options));
  if (!relayStart(memo, now())) return defer(() => plain(options));
  // RTSP over TCP: through argus's relay, which reads the camera's clock (rtsp-tap). With
  // low-latency decoding, each access unit is ended for ffmpeg as soon as it is in (UnitEnds).
  const tap = () => new RtspTap(options.input.url, { endUnits: (options.input.decode ?? DEFAULT_DECODE).lowLatency, tls: options.input.tls, log: options.relayLog, sendCredentialsTo: options.input.sendCredentialsTo });
  return throughRelay(options.id, tap, (relay, t) => run({ ...options, input: { ...options.input, relay } }, t));
}

/**
 * A relay of its own for each subscription (`makeTap`): runs what `start` makes once it listens
 * (its URL for ffmpeg), and closes it when the run ends or is unsubscribed; a relay that cannot
 * listen fails the source, named.
 */
function throughRelay<R extends { listen(): Promise<string>; close(): void }>(id: string, makeTap: () => R, start: (url: string, tap: R) => Observable<Frame>): Observable<Frame> {
  return new Observable<Frame>((subscriber) => {
    const tap = makeTap();
    let inner: Subscription | undefined;
    let closed = false;
    tap.listen().then(
      (url) => {
        // (An observer of its own: given `subscriber` itself, subscribe returned it, and the
        // teardown's `inner.unsubscribe()` did nothing, the relay closed before its run ended.)
        if (!closed) inner = start(url, tap).subscribe({ next: (f) => subscriber.next(f), error: (e: unknown) => subscriber.error(e), complete: () => subscriber.complete() });
      },
      (e: NodeJS.ErrnoException) =>
        subscriber.error(e instanceof ArgusError ? new ArgusError(e.code, `source "${id}": ${e.message}`) : new ArgusError(ErrorCodes.SOURCE_SPAWN, `source "${id}": could not open the relay to the camera on 127.0.0.1: ${e.message}`)),
    );
    return () => {
      closed = true;
      inner?.unsubscribe();
      tap.close();
    };
  });
}

/** The wait after a relay is first given up before a start of the source tries it again (RTSP over TCP; SourceMemo.unrelayed). */
export const RELAY_RETRY_MS = 60_000;
/** The longest such wait: it doubles with each give-up, up to this. */
export const RELAY_RETRY_MAX_MS = 3_600_000;

/** The wait before the relay is tried again after its `failures`-th give-up. */
export function relayRetryWait(failures: number): number {
  return Math.min(RELAY_RETRY_MAX_MS, RELAY_RETRY_MS * 2 ** Math.max(0, failures - 1));
}

/**
 * The relay was given up at `t`: starts run without it until its wait is over (returned, ms),
 * twice the last wait, or RELAY_RETRY_MS again after the relay ran (across the source's
 * restarts) for RELAY_RETRY_MAX_MS or more (a camera that glitches once a month waits a minute each time).
 */
export function relayGivenUp(memo: SourceMemo, t: number): number {
  const longRun = memo.relayedSince !== undefined && t - memo.relayedSince >= RELAY_RETRY_MAX_MS;
  const failures = (longRun ? 0 : (memo.relayFailures ?? 0)) + 1;
  const wait = relayRetryWait(failures);
  memo.relayFailures = failures;
  memo.unrelayed = { until: t + wait };
  return wait;
}

/**
 * Whether a start at `t` goes through the relay (noted in the memo when it does): not while
 * the wait after a give-up lasts. A relay given up is tried again at the first start after its
 * wait, never by a restart of its own.
 */
export function relayStart(memo: SourceMemo, t: number): boolean {
  if (memo.unrelayed && t < memo.unrelayed.until) return false;
  // Since the first start through it, or its retry after a give-up: a reconnect of the camera
  // (a start through the relay again) does not restart the count, or a camera that reconnects
  // more often than hourly never earned its minute's wait back.
  if (memo.relayedSince === undefined || memo.unrelayed) memo.relayedSince = t;
  memo.unrelayed = undefined;
  return true;
}

/** A native-rate file's timetable (FfmpegSourceOptions.schedule). */
export interface PlaySchedule {
  /** When the next frame is due (core/clock `now`, epoch ms); undefined: from the input's opening. */
  next?: number;
  /**
   * How far (ms) the run that opened last moved the timetable on: it opened more than
   * LIVE_PTS_SLACK_S after `next`, and its first frame is due that long before its opening
   * instead, as after an outage (its pts are to move as far: the caller adds it); 0 where it kept
   * to `next`. Without that bound a pass that cannot keep to the timetable (a file of one frame
   * whose ffmpeg takes longer than a frame period to restart) fell further behind at every pass,
   * for ever: its latency grew without end, and its pts fell behind the clock (dwell and
   * lost-track times with them).
   */
  moved?: number;
}

/** What runs of one source learnt of it (FfmpegSourceOptions.memo). */
export interface SourceMemo {
  packed?: boolean;
  ownRate?: boolean;
  /** ffmpeg reported the stream interlaced (a field order): `decode.deinterlace: auto` runs then deinterlace it. */
  interlaced?: boolean;
  /**
   * A seek into the file (a restart resuming it) landed after the frame wanted with the seek
   * margin it had (a key frame further apart than that: LandedLate): its seeks from now on go
   * back this far at least, seconds.
   */
  seekMargin?: number;
  /**
   * The relay to the camera (rtsp-tap) could not follow this camera (e.g. frames it could not
   * pair with their packets): starts run without it until `until` (core/clock `now`).
   */
  unrelayed?: { until: number };
  /** Whether FfmpegSourceOptions.onSecretsExposed was told (once per source). */
  exposedNoticed?: boolean;
  /** A local still image's picture, decoded at its first run and used again while its file is unchanged. */
  still?: KeptStill;
  /** How many times the relay was given up: each wait is twice the last (relayRetryWait). */
  relayFailures?: number;
  /** Since when the relay has been run, across the source's restarts (its first start, or its retry after a give-up): one that ran RELAY_RETRY_MAX_MS before giving up counts as a first give-up. */
  relayedSince?: number;
  /** The ffmpeg of the source's last run, while it has not exited: the next run's waits for it (afterExit). Shared with the chains of the source before and after this one where it is given (LastFfmpeg). */
  last?: LastFfmpeg;
  /** Whether the source's input can be read only once (readsOnce), judged at its first start. */
  readsOnce?: boolean;
  /** The relay's notices of this source (FfmpegSourceOptions.onClockNotice), by cause, at most one a cause each NOTICE_REPEAT_MS. */
  notices?: ThrottledLog;
}

/**
 * A relayed camera's notice of one cause (its clock jumped, its time not believed or far behind,
 * its access units no longer ended for ffmpeg) is told once per connection at most, and once per
 * source in this long, ms: the next of the same cause in that time are counted, and one line at
 * its end says how many (`… (and 41 more like it in 600 s)`). A camera that drops its connection
 * every few seconds was found so again on each new one, and each time the same warning was logged
 * (a line every reconnect, hundreds an hour, for a fact the operator needs once).
 */
export const NOTICE_REPEAT_MS = 600_000;

/**
 * The longest a run waits for the ffmpeg of the run before it to exit (it was stopped) before
 * starting its own, ms. Exit takes milliseconds, except for a process stuck in the kernel (a
 * device's driver, a dead network mount), which SIGKILL ends only when it leaves: such an ffmpeg
 * is left behind, and the next one started beside it; one at most a source (LastFfmpeg.leftBehind).
 */
export const FFMPEG_EXIT_WAIT_MS = 2000;

/**
 * How long an RTSP camera's ffmpeg, sent SIGTERM, has to close its input before it is sent
 * SIGKILL, ms (stopFfmpeg). ffmpeg acts on SIGTERM at its next packet, then sends the camera
 * TEARDOWN as it closes the input: tens of milliseconds for a camera that streams. One that
 * sends nothing (stalled) keeps ffmpeg in its read, and gets SIGKILL after this.
 */
export const FFMPEG_STOP_GRACE_MS = 1000;

/**
 * Stops `child`, an RTSP camera's ffmpeg, so that the camera's session ends: SIGTERM, on which
 * ffmpeg closes its input and sends TEARDOWN, then SIGKILL FFMPEG_STOP_GRACE_MS later where it
 * has not exited. Killed with SIGKILL at once, it sent none: many IP cameras take 2 to 4 sessions
 * and refuse another (453, 503) until an old one times out (60 s), so a restart of the source or
 * of argus could not reconnect for a minute. (One SIGTERM only: at a second, ffmpeg interrupts
 * its I/O, the TEARDOWN's write with it.) Resolves once it has exited or was sent SIGKILL.
 */
export function stopFfmpeg(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode != null || child.signalCode != null) return Promise.resolve();
  child.kill('SIGTERM');
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      child.off('exit', done);
      resolve();
    };
    // (Not unref'd: an argus that stops gives its ffmpegs the grace before its loop ends.)
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done();
    }, FFMPEG_STOP_GRACE_MS);
    child.once('exit', done);
  });
}

/**
 * A source's last ffmpeg, while it has not exited (`ffmpeg`). One per supervised source, across
 * its restarts; given to a source's next chain (supervisedSource's `lastFfmpeg`: an argus worker's
 * camera edited, or stopped and started again, is a new chain under the same id), so that chain's
 * first ffmpeg waits for the last one's exit too (afterExit).
 */
export interface LastFfmpeg {
  ffmpeg?: ChildProcess;
  /**
   * An ffmpeg of the source's given up on (not gone FFMPEG_EXIT_WAIT_MS after it was stopped:
   * stuck in the kernel), until it exits. At most one: where the next is given up on too, the
   * start after it waits until one of the two has gone (lastFfmpegGone), for a device that hangs
   * every ffmpeg piled one up per restart, each holding its memory and descriptors, for ever.
   */
  leftBehind?: ChildProcess;
  /**
   * The source's input takes one reader at a time (a V4L2 device, busy while open; a file, whose
   * mount a stuck ffmpeg hangs on, as the next would): its next ffmpeg is never started beside
   * one that has not exited, but after it, however long that takes (reported `stuck`). A network
   * camera's is (one left behind at most): a second session is safe there.
   */
  exclusive?: boolean;
}

/**
 * How often a source waiting for a stuck ffmpeg (lastFfmpegGone) tells it again, ms: `stuck` with
 * the pids and how long each has not exited, a line in the log each time. It was said once, and
 * a source that waited for an hour showed nothing of it after that line.
 */
export const STUCK_REPORT_MS = 60_000;

/**
 * The most ffmpegs left behind stuck (LastFfmpeg.leftBehind) across the whole process, all
 * sources together. Past it, a network camera's next ffmpeg is not started beside its stuck one,
 * but once that one has gone, as a one-reader input's is (reported `stuck`): with many cameras
 * behind one hung route or mount, each restart of each left one more behind (one a source), each
 * holding its memory, descriptors and pid until the kernel let it go.
 */
export const MAX_FFMPEGS_LEFT_BEHIND = 8;

/** The ffmpegs left behind stuck (LastFfmpeg.leftBehind) of every source, until each exits: MAX_FFMPEGS_LEFT_BEHIND. */
const leftBehindAll = new Set<ChildProcess>();

/** How many ffmpegs are left behind stuck across the process (MAX_FFMPEGS_LEFT_BEHIND at most). */
export const ffmpegsLeftBehind = (): number => leftBehindAll.size;

/** When each ffmpeg found stuck (lastFfmpegGone) was stopped, epoch ms: how long it has been stuck. */
const stoppedAt = new WeakMap<ChildProcess, number>();

/** The ffmpegs seen to exit (noteFfmpeg): a child's exitCode is not set on every kind of child. */
const exitedFfmpegs = new WeakSet<ChildProcess>();
const hasExited = (c: ChildProcess): boolean => exitedFfmpegs.has(c) || c.exitCode != null || c.signalCode != null;

/** Notes `child` as the source's running ffmpeg (memo.last) until it exits; `exclusive`: LastFfmpeg's. */
function noteFfmpeg(memo: SourceMemo, child: ChildProcess, exclusive: boolean): void {
  if (child.pid === undefined) return; // never started (its 'error' says why)
  const last = (memo.last ??= {});
  last.ffmpeg = child;
  last.exclusive = exclusive;
  child.once('exit', () => {
    exitedFfmpegs.add(child);
    leftBehindAll.delete(child);
    if (last.ffmpeg === child) last.ffmpeg = undefined;
    if (last.leftBehind === child) last.leftBehind = undefined;
  });
}

/** `last`'s ffmpeg that has not exited, its running one or the one left behind, if any: what the source's next chain must know of (the pipeline keeps `last` until none is left). */
export function ffmpegNotGone(last: LastFfmpeg): ChildProcess | undefined {
  for (const c of [last.ffmpeg, last.leftBehind]) if (c && c.pid !== undefined && !hasExited(c)) return c;
  return undefined;
}

/** Resolves once `child` has exited (or failed to start), however long that takes, or once `signal` aborts (its listeners then gone). */
function exitedAtAll(child: ChildProcess, signal: AbortSignal): Promise<void> {
  if (child.pid === undefined || hasExited(child) || signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      child.off('exit', done);
      child.off('error', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    child.once('exit', done);
    child.once('error', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Resolves once `last`'s ffmpeg has exited, or FFMPEG_EXIT_WAIT_MS after the call; at once where
 * none runs. One not gone by then (stuck in the kernel) is left behind, and the next ffmpeg
 * starts beside it, unless one is left behind already, or the input takes one reader at a time
 * (LastFfmpeg.exclusive: a V4L2 device, a file): then this waits, however long, until one of the
 * two has exited (the exclusive input's: until it has). `onStuck` is told why first, with each
 * one's pid and how long since it was stopped (the source's `stuck`, counted once in its stats'
 * ffmpegWaits), and again each STUCK_REPORT_MS while the wait lasts; so a source holds at most
 * one ffmpeg besides its running one, an exclusive input's none.
 */
export async function lastFfmpegGone(last: LastFfmpeg, onStuck?: (why: string) => void, signal?: AbortSignal): Promise<void> {
  const prev = last.ffmpeg;
  if (!prev) return;
  await exitOf(prev, FFMPEG_EXIT_WAIT_MS);
  // Given up (`signal`: the source stopped): `last` as it was, for whoever starts next to wait on.
  if (signal?.aborted) return;
  if (!hasExited(prev) && prev.pid !== undefined) {
    if (!stoppedAt.has(prev)) stoppedAt.set(prev, Date.now() - FFMPEG_EXIT_WAIT_MS);
    const behind = last.leftBehind !== prev && last.leftBehind && !hasExited(last.leftBehind) ? last.leftBehind : undefined;
    // Too many left behind across the process already (none of them this source's): this one waits for its own.
    const full = !behind && !last.exclusive && leftBehindAll.size - (leftBehindAll.has(prev) ? 1 : 0) >= MAX_FFMPEGS_LEFT_BEHIND;
    if (behind || last.exclusive || full) await stuckWait(prev, behind, last.exclusive ? 'exclusive' : full ? 'full' : 'one', onStuck, signal);
    if (signal?.aborted) return;
    // The one still there (if any) is the one left behind.
    last.leftBehind = !hasExited(prev) ? prev : behind && !hasExited(behind) ? behind : undefined;
    if (last.leftBehind) leftBehindAll.add(last.leftBehind);
  }
  if (last.ffmpeg === prev) last.ffmpeg = undefined;
}

/** Seconds since `c` was stopped (stoppedAt), whole. */
const stuckFor = (c: ChildProcess): number => Math.round((Date.now() - (stoppedAt.get(c) ?? Date.now())) / 1000);

/**
 * Waits for `prev` (stuck) to exit, or `behind` (left behind before it) where the input is not
 * `exclusive`; telling `onStuck` why at once and each STUCK_REPORT_MS until then.
 */
async function stuckWait(prev: ChildProcess, behind: ChildProcess | undefined, wait: 'exclusive' | 'full' | 'one', onStuck?: (why: string) => void, signal?: AbortSignal): Promise<void> {
  const exclusive = wait === 'exclusive';
  const why = (): string =>
    `ffmpeg ${prev.pid} has not exited ${stuckFor(prev)} s after it was stopped` +
    (behind ? `, nor has ffmpeg ${behind.pid} before it (${stuckFor(behind)} s)` : '') +
    ' (stuck in the kernel: a hung device or network mount?): ' +
    (exclusive
      ? `the next is started once it has gone (${behind ? 'they have' : 'it has'}: the input takes one reader at a time)`
      : wait === 'full'
        ? `the next is started once it has gone (${MAX_FFMPEGS_LEFT_BEHIND} ffmpegs of other sources are left behind stuck already, the most argus leaves)`
        : 'the next is started once one of them has gone');
  onStuck?.(why());
  // Its timer and its listeners on the children end with the wait, or with `signal` (the source
  // stopped): they lived on until the stuck ffmpeg exited, which a hung device may never let it,
  // one more of each at every stop and start of the source (an argus worker's camera edited).
  const ended = new AbortController();
  const stop = (): void => ended.abort();
  signal?.addEventListener('abort', stop, { once: true });
  const again = onStuck
    ? setInterval(() => {
        if (!hasExited(prev) || (behind && !hasExited(behind))) onStuck(why());
      }, STUCK_REPORT_MS)
    : undefined;
  again?.unref?.(); // (the stuck child holds the loop, not its reports)
  try {
    if (exclusive) await Promise.all([exitedAtAll(prev, ended.signal), behind ? exitedAtAll(behind, ended.signal) : undefined]);
    else await Promise.race([exitedAtAll(prev, ended.signal), ...(behind ? [exitedAtAll(behind, ended.signal)] : [])]);
  } finally {
    clearInterval(again);
    signal?.removeEventListener('abort', stop);
    stop();
  }
}

/**
 * Calls `go` once the source's last ffmpeg (memo.last) has exited, or FFMPEG_EXIT_WAIT_MS
 * after this call where it has not by then; at once where none is running. A camera that takes
 * one session at a time (many cheap RTSP cameras take one or two), a V4L2 device (busy while
 * open) or a UDP port refuse a second ffmpeg while the first still holds them. A restart (an
 * interlaced stream read again, a resolution change restarted at once, a stall restarted after
 * its backoff) started its ffmpeg beside the one it had just killed: on the 2-core machine under
 * load, 10 to 44 ms before a one-session camera saw the old session end. The new one's ffmpeg
 * then took 300 ms or more to connect, so it won that race there; an ffmpeg slower to exit than
 * the next to open (a device's driver releasing it) lost the device to it. Now the order is
 * certain, for 10 to 90 ms more a restart. Returns what cancels the wait.
 */
function afterExit(memo: SourceMemo, go: () => void, onStuck?: (why: string) => (() => void) | void): () => void {
  if (!memo.last?.ffmpeg) {
    go();
    return () => {};
  }
  // (A cancelled wait's timer and listeners go with the exit, or FFMPEG_EXIT_WAIT_MS: exitOf.)
  let waiting = true;
  const cancelled = new AbortController();
  // What onStuck gave, told when the wait it said ends (or is cancelled), once.
  let ended: (() => void) | void;
  const end = (): void => {
    const e = ended;
    ended = undefined;
    e?.();
  };
  void lastFfmpegGone(
    memo.last,
    (why) => {
      // (Told again while the wait lasts: one wait, ended once.)
      if (!waiting) return;
      const e = onStuck?.(why);
      ended ??= e;
    },
    cancelled.signal,
  ).then(() => {
    if (!waiting) return;
    waiting = false;
    end();
    go();
  });
  return () => {
    waiting = false;
    cancelled.abort();
    end();
  };
}

/** The file's own rate is below the configured one: ffmpegSource runs it again at its own rate. */
class RateAboveSource extends Error {}

/** The stream is interlaced and `decode.deinterlace` is `auto`: ffmpegSource runs it again deinterlaced. */
class Interlaced extends Error {}

/**
 * A seek with a margin (a file not indexed: MPEG-TS, a raw stream) landed after the frame wanted:
 * its demuxer went to the key frame after the time asked, and the frames between were never
 * decoded. ffmpegSource runs it again with the margin SEEK_MARGIN_GROWTH times larger (at most
 * the whole file before the seek point: from its start, exact).
 */
class LandedLate extends Error {
  constructor(
    why: string,
    readonly nextMargin: number,
  ) {
    super(why);
  }
}

/** How many times larger each seek margin after one that landed late is (3 s, 30 s, 300 s, …). */
const SEEK_MARGIN_GROWTH = 10;

/** What a run's end `e` taught of the source (noted in `memo`): true when it is to be run again for it. */
function learnt(memo: SourceMemo, e: unknown): boolean {
  if (e instanceof NotYuv420) memo.packed = true;
  else if (e instanceof RateAboveSource) memo.ownRate = true;
  else if (e instanceof Interlaced) memo.interlaced = true;
  else if (e instanceof LandedLate) memo.seekMargin = e.nextMargin;
  else return false;
  return true;
}

/** The relay to the camera is of no use for it (RtpClock.failure): ffmpegSource runs it again without. */
class RelayUnusable extends Error {
  /** Whether the run had delivered frames (then the supervisor restarts the source, for seq and pts continuity). */
  constructor(
    why: string,
    readonly delivered: boolean,
  ) {
    super(why);
  }
}

/** The input is not 4:2:0 YUV: ffmpegSource runs it again with packed frames. */
class NotYuv420 extends Error {}

/**
 * Below this many pixels a source gets packed frames even where 4:2:0 ones could come: the
 * kernel's conversion of the rows it samples costs the main thread about 0.3 ms a frame more
 * than a packed letterbox, while reading a frame costs about 1.3 ms per MB, so the 1.5 bytes a
 * pixel saved pay for it from about 0.2 MP (320×180 stays packed; 640×360, 432p and up get
 * 4:2:0). ffmpeg's conversion of a small picture runs beside the main thread, in its own process.
 */
export const YUV_MIN_PIXELS = 200_000;

/** The pixel formats whose frames ffmpeg delivers untouched as `source-yuv`. */
const YUV420 = new Set(['yuv420p', 'yuvj420p']);

/** A relay that only passes bytes on (and adds credentials): RTSP's (RtspTap) or HTTP's (HttpRelay). */
interface NamedRelay {
  /** ffmpeg's log naming the camera instead of the relay. */
  unrelay(text: string): string;
  /** Ends its connections (ffmpeg is done), or once `after` resolves (ffmpeg is stopping: what it sends as it closes, RTSP's TEARDOWN, goes through). */
  drop(after?: Promise<void>): void;
  /** Why a redirect of the camera's was not followed (relay-redirect): the run fails with it. */
  readonly redirectRefused?: string;
}

/** `named`: a relay that only passes bytes on (and adds credentials): its address in ffmpeg's log is the camera's again. */
function oneFfmpeg(options: FfmpegSourceOptions, tap?: RtspTap, named?: NamedRelay): Observable<Frame> {
  return new Observable<Frame>((subscriber) => {
    const { id, input, output } = options;
    // Every message leaves with credentials removed: ffmpeg prints the URL, and errors become
    // status messages (Kafka, WebSocket, JSONL) and log lines.
    const fail = (code: (typeof ErrorCodes)[keyof typeof ErrorCodes], message: string, cause?: NodeJS.ErrnoException) =>
      subscriber.error(
        new ArgusError(code, redact(message), cause ? { cause: Object.assign(new Error(redact(cause.message)), { code: cause.code, errno: cause.errno, syscall: cause.syscall }) } : undefined),
      );
    // A file is looked at as ffmpeg starts (fileProblem: asynchronous and bounded; statSync on a
    // hung network mount stopped the event loop, every source's frames with it). What it finds
    // (not there, a folder, empty, no answer) fails the run, ffmpeg stopped; an ffmpeg that ends
    // before its first frame waits for it, which names the cause better than ffmpeg's log.
    const fileCheck = input.kind === 'file' ? fileProblem(input.url.replace(/^file:\/\//i, '')) : undefined;
    void fileCheck?.then((problem) => {
      // (A stat that took too long, of a file ffmpeg has opened meanwhile: the file is there.)
      if (!problem || closed || (lb && problem.code === ErrorCodes.SOURCE_TIMEOUT)) return;
      closed = true;
      killedByUs = true;
      if (child) stopChild();
      fail(problem.code, `source "${id}": ${problem.why}`);
    });
    const clock = options.clock ?? (() => performance.now());
    /** Once the ffmpeg argus stopped has exited, or was sent SIGKILL (stopFfmpeg); undefined until it is stopped. */
    let gone: Promise<void> | undefined;
    /**
     * Stops this run's ffmpeg: an RTSP camera's so that it tears its session down (stopFfmpeg),
     * any other's with SIGKILL (it has nothing to flush for us, and a reader stuck on a stalled
     * socket or a named pipe's open ignores SIGTERM).
     */
    const stopChild = (): void => {
      if (gone) return;
      if (input.kind === 'rtsp') gone = stopFfmpeg(child);
      else signalChild(child, 'SIGKILL'); // (not one that never started: its handle has no pid)
    };
    const layout = output.frame === 'source' ? 'source' : output.frame === 'source-yuv' ? 'yuv420p' : 'letterboxed';
    // At the source's size (argus letterboxes): packed, or YUV with the colour its line names.
    const atSource = layout !== 'letterboxed';
    // An input read only once (a named pipe) is not restarted at a new picture's size: the restart
    // opened the pipe again, its writer gone with the first reader (it got EPIPE), and the source,
    // a file without a start watchdog, waited for a writer for ever, its frames after the change
    // lost. Its later pictures come scaled to the first size (ffmpeg's default, no -autoscale 0).
    const keepsFirstSize = atSource && options.memo?.readsOnce === true;
    let keptNoticed = false;
    let colour: YuvColour | undefined;
    const fit = (w: number, h: number) => letterbox(w, h, output.width, output.height, output.align, output.rounding);
    const pace = input.kind === 'file' && input.rate === 'fast' ? options.pace : undefined;
    // Native-rate files: the same stage, so that the next frame is read (and ffmpeg, blocked on
    // the full pipe until then, decodes the one after it) while the stage is idle, not while it
    // infers (see holdRead).
    const stage = input.kind === 'file' && input.rate === 'native' ? options.pace : undefined;
    let readTimer: ReturnType<typeof setTimeout> | undefined;
    // Frames at the source's size are cut once ffmpeg has reported it; letterboxed ones are the model's size.
    let pool: BufferPool | undefined;
    // The output's own name, so that only ffmpeg's real report of it is read (taggedStdout).
    const tag = outputTag();
    const probe = new StderrProbe(undefined, taggedStdout(tag), frameTimeKey(tag));
    probe.delimited = tap?.endUnits ?? false;
    let lb: Letterbox | undefined;
    let fps = input.fps;
    const seqStart = options.seqStart ?? 0;
    let seq = seqStart;
    let ptsBase = 0;
    let firstAt = 0;
    /** Seconds a live source's count of frames was moved to stay near the clock (see emit). */
    let ptsShift = 0;
    let lastPts = -Infinity;
    // A file resumed with a seek margin (see FfmpegInputSpec.seekMargin): its first frame must be
    // the frame at the seek point, which ffmpeg's time puts `landing.trim` (the margin) plus up to
    // a frame period after the point it seeks to; its first frame waits for its report to know.
    const landing: { trim: number; seek: number; first?: number } | undefined = input.kind === 'file' && input.seek !== undefined && seekTrim(input) > 0 && input.seek - seekTrim(input) > 0 ? { trim: seekTrim(input), seek: input.seek } : undefined;
    /** Whether the first frame's report says the seek landed late; then the run is stopped, to run again from further back. */
    const landedLate = (): boolean => {
      // Only before any frame went on: a report later than REPORT_WAIT_MS let the first frame go
      // unchecked, and a run made again then would deliver its frames twice, with the same seq.
      if (seq !== seqStart) return false;
      const t = landing!.first! / 1e6;
      // The frame wanted is half a period after the margin (the seek asks for half a frame
      // early); the one after it, 1.5 periods: the margin then ended after it.
      const period = fps ? 1 / fps : LANDED_LATE_S;
      if (!(t >= landing!.trim + 1.5 * period - 1e-6)) return false;
      const margin = landing!.trim;
      const next = Math.min(landing!.seek, margin * SEEK_MARGIN_GROWTH);
      stop(new LandedLate(`source "${id}": a seek ${margin.toFixed(1)} s before ${landing!.seek.toFixed(3)} s landed ${(t - margin).toFixed(3)} s after it`, next));
      return true;
    };
    let paused = false;
    let closed = false;
    let killedByUs = false;

    // The `produced` stamp (core/frame.ts, ProducedBy). Native-rate files play like a camera:
    // frame k is due when ffmpeg reported the opened input (its `Input #0` line) plus k / fps
    // (a looped file's next pass: from where the pass before left off, `schedule`), and argus
    // releases it then, not before. argus paces them itself, not with ffmpeg's -re:
    // ffmpeg decodes as fast as the pipe lets it, argus reads one frame ahead (`ahead`) and
    // releases it when it is due (decoding and the read are hidden, as behind a camera's
    // encoder), and no ffmpeg version's pacing shifts the frames (5.1's -re delivered them
    // 42 ms after they were due, p50, against 8 ms for 4.x's; see ffmpeg-args).
    const native = input.kind === 'file' && input.rate === 'native';
    let playStart = 0;
    /** When frame k (counted from this run's first) is due; fps and playStart are known. */
    const due = (k: number): number => playStart + (k / fps!) * 1000;
    let dueTimer: ReturnType<typeof setTimeout> | undefined;
    /**
     * A frame read before it may go: a native-rate frame not yet due (released by `dueTimer`),
     * or a fast file's frame while the stage is busy (released when it is idle). No frame is
     * read after it meanwhile.
     */
    let ahead: Buffer | undefined;
    // Live sources: ffmpeg reports each frame's demuxer arrival time on its log, in output order
    // (one report per output frame), so report i belongs to frame i. The log and the frames come
    // through different pipes, so either may come first; what waits for its partner is kept
    // (bounded) by index, so a lost partner never shifts the pairing of later frames.
    const live = reportsFrameTimes(input);
    const times = new Map<number, ClockReading | null>(); // report index → time (null: none known for it)
    // A relayed RTSP source's reports are RTP timestamps, which the relay turns into the
    // camera's time or the packets' arrival (rtsp-tap); others' are the arrival at ffmpeg.
    let gaveUp = false;
    /** A notice of the relay's (`cause`: what it found), told at most once per source in NOTICE_REPEAT_MS, then with a count (see it). */
    const notice = (cause: string, text: string): void => {
      const tell = options.onClockNotice;
      if (!tell) return;
      const memo = options.memo ?? {};
      (memo.notices ??= new ThrottledLog((msg) => tell(msg), NOTICE_REPEAT_MS)).log(cause, text);
    };
    const reading = (us: number): ClockReading | null => {
      // ffmpeg's time is the system's wall clock, which may have been stepped since argus started.
      if (!tap) return { at: fromWallClock(us / 1000), by: 'arrival' };
      const clock = tap.clock;
      const r = clock.lookup(us);
      const failure = clock.failure();
      if (failure && !gaveUp) {
        gaveUp = true;
        // After the frame times are read (stop is set by then): a rerun without the relay.
        queueMicrotask(() => {
          if (!closed) stop(new RelayUnusable(failure, seq > seqStart));
        });
      }
      if (gaveUp) return null;
      if ((clock.rejectedOffset !== undefined || clock.clockJump !== undefined) && !noticed.has(tap)) {
        noticed.add(tap);
        const off = clock.rejectedOffset;
        const jump = clock.clockJump;
        notice(
          off !== undefined ? 'camera-time-not-believed' : 'camera-clock-jump',
          off !== undefined
            ? `source "${id}": frames whose camera time is not believable are stamped with their arrival (producedBy: arrival): the first was ${Math.abs(off).toFixed(0)} ms ${off > 0 ? 'after' : 'before'} its arrival (believed: at most ${CAMERA_AHEAD_SLACK_MS} ms after, ${CAMERA_BEHIND_MAX_MS / 1000} s before)`
            : `source "${id}": the camera's clock jumped ${Math.abs(jump!).toFixed(0)} ms ${jump! > 0 ? 'forward' : 'back'} between two of its sender reports (or its RTP clock does not run at its rate): frames are stamped with their arrival (producedBy: arrival) until it reconnects`,
        );
      }
      if (clock.unitEndsStopped !== undefined && !noticedUnits.has(tap)) {
        noticedUnits.add(tap);
        notice(`unit-ends-${clock.unitEndsStopped}`, unitEndsNotice(id, clock.unitEndsStopped));
      }
      if (clock.believedBehind !== undefined && !noticedBehind.has(tap)) {
        noticedBehind.add(tap);
        notice('camera-behind', cameraBehindNotice(id, clock.believedBehind));
      }
      return r ?? null;
    };
    const waiting = new Map<number, Frame>(); // frame index → frame without its time yet
    let reports = 0;
    let delivered = 0;
    /**
     * The frame after which the last report of damaged input came: the next ones after the same
     * frame count with it (see onDamage). Frames are told apart by their reports on the log
     * (onFrameTime: positive), in order with the damage lines, not by their arrival through the
     * other pipe: which of two pipes is read first is the scheduler's choice, and the same file
     * counted one or two reports for damage one frame apart as the machine was busy or not. Only
     * while the log has reported no frame (an ffmpeg that prints no reports: the bundled 2018
     * build) are frames counted as they arrive (negative).
     */
    let damageAfter: number | undefined;
    probe.onDamage = (line) => {
      if (live && reports === 0 && seq === seqStart) return;
      const after = reports > 0 ? reports : -1 - (seq - seqStart);
      if (after === damageAfter) return;
      damageAfter = after;
      options.onDamage?.(line);
    };
    let toldOpened = false;
    probe.onInputOpened = () => {
      if (playStart) return;
      const t = now();
      const schedule = options.schedule;
      if (schedule?.next === undefined) {
        playStart = t;
        return;
      }
      // Opened more than LIVE_PTS_SLACK_S after its first frame was due: the timetable moves on by the rest.
      playStart = Math.max(schedule.next, t - LIVE_PTS_SLACK_S * 1000);
      schedule.moved = playStart - schedule.next;
    };
    /** Frames ffmpeg wrote more (duplicates) or fewer (dropped) than it reported (probe.onOutputAdjust). */
    let adjusted = 0;
    probe.onOutputAdjust = (n) => {
      adjusted += n;
    };
    probe.onFrameTime = (us) => {
      const i = reports++;
      // (Reported before the output's line, which gives the rate: checked once both are in.)
      if (i === 0 && landing !== undefined) {
        landing.first = us;
        if (lb && !closed) landedLate();
      }
      if (!live) return; // a file's: counted only
      const t = reading(us);
      const f = waiting.get(i);
      if (f) {
        waiting.delete(i);
        // A time after the frame's delivery cannot be its arrival, nor one long before it (the
        // first frame of an RTSP session is reported at 0): keep `captured`.
        if (t && plausibleArrival(t.at, f.stamps.captured)) {
          f.stamps.produced = t.at;
          f.producedBy = t.by;
        }
      } else if (i >= delivered) {
        times.set(i, t); // its frame is still to come
        times.delete(i - MAX_UNPAIRED);
      }
    };

    // A local still image: decoded by argus (decodeStill, as argus detect reads it) and written
    // to ffmpeg's stdin as one raw frame (see launch).
    const stillPath = input.kind === 'file' ? stillImagePath(input.url) : undefined;
    let still: StillPicture | undefined;
    // Set by `start`. A fast file's frames come through a FrameSocket (`frames`: read straight
    // into the frame buffers, in many reads), others' through a FrameChannel (a thread of
    // argus's reads each whole frame into its buffer); where neither can be made (no C compiler
    // at install, not Linux), through the stdout node makes for ffmpeg (`stdout`), whose chunks
    // are copied into them (also with an injected spawn: the tests' FakeFfmpeg). Why each: see
    // `launch`, FrameSocket and FrameChannel.
    let child: ChildProcess;
    let stdout: Readable | undefined;
    let frames: FrameSocket | FrameChannel | undefined;

    // Pipe only: the rest of a chunk not cut yet (held).
    let leftover: Buffer | undefined;
    // ffmpeg ended while frames were held (`hold`): they are cut when allowed, then this ends the run.
    let exited: (() => void) | undefined;
    const resumeIfAllowed = (): void => {
      if (closed || hold?.()) return;
      if (paused) {
        if (leftover) {
          const rest = leftover;
          leftover = undefined;
          const used = reader!.push(rest, hold);
          if (used < rest.length) {
            leftover = rest.subarray(used);
            return;
          }
        }
        paused = false;
        // (A pipe that ended was resumed by node, to its end, when ffmpeg exited.)
        if (frames) frames.resume();
        else if (!exited) stdout!.resume();
      }
      if (exited && !ahead && (!frames || frames.ended)) exited();
    };
    const onStageRoom = (): void => {
      if (pace && ahead && !closed) {
        const data = ahead;
        ahead = undefined;
        emit(data);
      }
      resumeIfAllowed();
    };
    const stopPacing = (pace ?? stage)?.onRoom(onStageRoom);

    const onFrame = (data: Buffer): void => {
      if (restartAt !== undefined && seq - seqStart >= restartAt) {
        // The new picture's bytes, which cut at the old size are no picture: not delivered (see resizedAtSource).
        pool!.release(data);
        restartForResize();
        return;
      }
      const k = seq - seqStart;
      if (k === blindRead && reports + adjusted <= k && !childExited && !reportsBehind) {
        // Read after a silence before its report (see blindRead): held for it, where the log has
        // reported frames. One that has reported none (an ffmpeg that prints no reports: the
        // bundled 2018 build) is not waited for again: the frame goes on as one whose wait ran out
        // with its bytes there (waitedFor: the next one's check finds the log behind). Held, the
        // first frame of each run of such an ffmpeg waited twice REPORT_WAIT_MS. (A first frame
        // needs no report for its size: the output's line gave it.)
        if (reports === 0) {
          waitedFor = k;
        } else {
          unreportedFrame = data;
          reportWait = setTimeout(() => {
            reportWait = undefined;
            reportsBehind = true;
            releaseUnreported();
            resumeIfAllowed();
          }, REPORT_WAIT_MS);
          return;
        }
      }
      if (native && playStart && fps) {
        // Released up to about 2 ms early (libuv's timers count whole milliseconds, from a clock
        // of whole milliseconds): `produced` is then that frame's `captured`, so its latency is
        // counted from a moment before it was due, never after.
        const wait = due(seq - seqStart) - now();
        if (wait >= 1) {
          ahead = data;
          dueTimer = setTimeout(() => {
            dueTimer = undefined;
            ahead = undefined;
            emit(data);
            resumeIfAllowed();
          }, wait);
          return;
        }
      }
      if (pace?.busy) {
        ahead = data;
        return;
      }
      emit(data);
    };
    /** A frame to the pipeline; `captured` is now (for a native-rate frame read ahead: when it is released). */
    const emit = (data: Buffer): void => {
      const captured = now();
      const framePool = pool!;
      let released = false;
      const k = seq - seqStart;
      while (resizes.length && resizes[0].at <= k) applyResize(resizes.shift()!.to);
      if (k === 0) {
        firstAt = clock();
        ptsBase = typeof options.ptsStart === 'function' ? options.ptsStart() : (options.ptsStart ?? 0);
        ptsShift = 0;
      }
      let pts = fps ? ptsBase + k / fps + ptsShift : ptsBase + (clock() - firstAt) / 1000;
      // A live source's pts count its rate, kept within LIVE_PTS_SLACK_S of the time since its
      // first frame (`ptsClock`): a camera slower than its `fps` (a 10 fps one at `fps: 25`, whose
      // frames the sample filter all keeps) or faster than the rate ffmpeg guessed would
      // otherwise run its clock, and dwell times and lost-track and exit timeouts, at 40 % or
      // 120 % of real time for as long as it streams. A frame outside the slack shifts the count
      // (`ptsShift`) to its edge, and the frames after it count on from there: a camera whose
      // frames the sample filter now and then thins keeps its even spacing, moved by a step now
      // and then; one slower than its rate follows the clock.
      if (live && fps) {
        const at = options.ptsClock ? options.ptsClock() : ptsBase + (clock() - firstAt) / 1000;
        const lo = at - LIVE_PTS_SLACK_S;
        const hi = at + LIVE_PTS_SLACK_S;
        if (pts < lo) ptsShift += lo - pts;
        else if (pts > hi) ptsShift -= pts - hi;
        pts = Math.min(Math.max(pts, lo), hi);
      }
      // Strictly increasing; a live source's at least 1 ms apart (published to 0.1 ms), even with
      // an unknown rate or two frames of one read held at its slack. (A file's count its rate,
      // which may be above 1000 fps: its pts are its position, which a restart seeks by.)
      if (!(pts > lastPts) || (live && !(pts >= lastPts + 1e-3))) pts = lastPts + 1e-3;
      lastPts = pts;
      let produced = captured;
      let producedBy: ProducedBy = 'captured';
      let unpaired = false;
      if (native && playStart && fps) {
        produced = Math.min(captured, due(k));
        producedBy = 'due';
        if (options.schedule) options.schedule.next = due(k + 1);
      } else if (live) {
        const j = delivered++;
        const t = times.get(j);
        if (t === undefined) unpaired = j >= reports; // else its report came and went (evicted)
        else {
          times.delete(j);
          if (t && plausibleArrival(t.at, captured)) {
            produced = t.at;
            producedBy = t.by;
          }
        }
      }
      const frame: Frame = {
        source: id,
        seq,
        pts,
        data,
        layout,
        colour,
        letterbox: lb!,
        stamps: emptyStamps(captured, produced),
        producedBy,
        release: () => {
          if (released) return;
          released = true;
          framePool.release(data);
        },
      };
      seq++;
      if (unpaired) {
        const j = delivered - 1;
        waiting.set(j, frame);
        waiting.delete(j - MAX_UNPAIRED);
      }
      subscriber.next(frame);
    };
    /**
     * Letterbox changes still ahead of the frames read:
     * from frame `at` (counted from this run's first) on, `to` (see probe.onResize).
     */
    const resizes: { at: number; to: Letterbox }[] = [];
    const applyResize = (to: Letterbox): void => {
      const prev = lb!;
      lb = to;
      options.onResize?.(prev, to);
    };
    let reader: FrameReader | undefined;
    const makeReader = (w: number, h: number): FrameReader => {
      const size = frameBytes(output, w, h);
      // Free buffers kept for reuse: 4, fewer for big frames (at most about 64 MB a source).
      pool = new BufferPool(size, Math.max(1, Math.min(4, Math.floor(64e6 / size))));
      return new FrameReader(size, pool, onFrame);
    };

    probe.onResize = (w, h) => {
      // Before the output's line: the picture the run starts with (read with that line). After
      // it, a change, even before the first frame is cut: the output's line, the first frame's
      // report and the next picture's scaler can come in one chunk of the log (under load).
      if (!probe.output) return;
      if (keepsFirstSize) {
        const out = probe.output;
        if (!keptNoticed && (w !== out.width || h !== out.height)) {
          keptNoticed = true;
          options.relayLog?.(redact(`resolution changed from ${out.width}x${out.height} to ${w}x${h}: ${input.url} can be read only once (a named pipe), so it is not restarted at the new size; its pictures are scaled to the first size`), { source: id }, 'warn');
        }
        return;
      }
      if (atSource) {
        resizedAtSource(w, h);
        return;
      }
      const first = probe.scaledAtOutput;
      const last = resizes.length ? resizes[resizes.length - 1].to : (lb ?? (first && fit(first.width, first.height)));
      if (!last || (last.srcWidth === w && last.srcHeight === h)) return;
      // The log reports each frame filtered (reportsFrames), and ffmpeg writes every frame of the
      // old picture, each reported (and a file's duplicates and drops logged), before it
      // configures the new scaler. The log comes through another pipe than the frames, often
      // ahead of them: the frames written so far, still to be read, keep the old letterbox (with
      // the new one, a box on the last 768x432 frame of a stream switching to 432x432 was mapped
      // as if from a square picture). (A file whose timestamps jump forward at the change gets the
      // old picture repeated over the gap after the line, by its constant-rate output: those
      // repeats get the new letterbox.)
      resizes.push({ at: reports + adjusted, to: fit(w, h) });
      if (resizes.length > MAX_PENDING_RESIZES) applyResize(resizes.shift()!.to);
    };
    // Frames at the source's size are cut at the size the run started with, and ffmpeg writes
    // each picture at its own (-autoscale 0; by default it scaled each later picture to the first
    // size, whatever its shape: a 4:3 picture in a 16:9 stream stretched, boxes and zones mapped
    // from the wrong picture, with nothing said). The frames of the old picture, up to the first
    // of the new one (`restartAt`, counted from this run's first as the reports are, see above),
    // are delivered; that frame is not: the run ends there (VAP_ERR_SOURCE_RESIZED), and the
    // supervisor starts the source again at once, from that frame (a file's position; a camera
    // reconnected), at the new size.
    let restartAt: number | undefined;
    let resizedTo = '';
    const resizedAtSource = (w: number, h: number): void => {
      if (restartAt !== undefined) return;
      restartAt = reports + adjusted;
      resizedTo = `${w}x${h}`;
      if (seq - seqStart >= restartAt) restartForResize();
    };
    const restartForResize = (): void => {
      if (closed) return;
      const from = probe.output ? `${probe.output.width}x${probe.output.height}` : 'its first size';
      stop(new ArgusError(ErrorCodes.SOURCE_RESIZED, redact(`source "${id}": resolution changed from ${from} to ${resizedTo}`)));
    };
    // Frames are cut once ffmpeg has printed its output line (before its first frame): at the
    // size it says it writes for frames at the source's size (after any rotation), letterboxed
    // ones with the letterbox of the picture its scaler gets. stdout stays paused until then,
    // but node resumes it by itself when ffmpeg exits: such bytes wait here (what ffmpeg wrote
    // before exiting; a pipe's worth at most).
    const early: Buffer[] = [];
    // Told by ffmpeg's log, before any frame is read: ffmpeg is stopped, and the source run
    // again as it calls for (ffmpegSource) or failed.
    const stop = (err: Error): void => {
      closed = true;
      killedByUs = true;
      stopChild();
      subscriber.error(err);
    };
    const onStderr = (chunk: string): void => {
      try {
        onLog(chunk);
      } catch (e) {
        // Nothing in ffmpeg's log may take the process down (a line a file's metadata forged
        // cannot be ruled out: ffmpeg prints a metadata key's line breaks as they are).
        if (!closed) stop(new ArgusError(ErrorCodes.SOURCE_PROBE, redact(`source "${id}": ffmpeg's report of the stream could not be used: ${(e as Error).message}`), { cause: e }));
      }
    };
    const onLog = (chunk: string): void => {
      const before = reports + adjusted;
      probe.push(chunk);
      const inputInfo = probe.info;
      // The camera's contact (onInputOpened): its input's report named a video stream ffmpeg could
      // describe (its size), not its `Input #0` line alone (a forced demuxer's, over a login page);
      // or a stream whose size comes with its key frame (H.264, H.265, MPEG-2, MPEG-4 Part 2, VP9,
      // AV1: a camera with no parameter sets in its SDP, a VP9 one (an SDP has no size),
      // an MPEG-TS or raw AV1 stream, joined in a long GOP: ffmpeg's
      // probe ends on its P-frames, seconds before the first frame). (What ffmpeg prints once argus has stopped it, a camera that sent nothing
      // after PLAY at its start timeout, reaches no handler: see the teardown.)
      if (!toldOpened && (probe.inputVideo || probe.inputVideoSizedByKeyFrame)) {
        toldOpened = true;
        options.onInputOpened?.();
      }
      if (lb) {
        // Frames held for their report (see unreported) may be cut now.
        if (reports + adjusted > before && (atSource || landing)) {
          clearTimeout(reportWait);
          reportWait = undefined;
          releaseUnreported();
          if (paused) resumeIfAllowed();
        }
        return;
      }
      if (closed) return;
      if (probe.outputUnreadable !== undefined) {
        stop(new ArgusError(ErrorCodes.SOURCE_PROBE, redact(`source "${id}": ffmpeg's line for the frames it writes has no size argus can read: ${probe.outputUnreadable}`)));
        return;
      }
      // Letterboxed frames: the picture the scaler gets (after ffmpeg's autorotation: a phone's
      // portrait video is 768x432 on the input line and 432x768 to the scaler), which it has
      // reported before the output line waited for below.
      const size = atSource ? probe.output : (probe.scaledAtOutput ?? probe.scaledFrom ?? inputInfo);
      if (!size) return;
      // ffmpeg prints its output line before the first frame, after its scaler has reported the
      // picture it gets (see `size`). A file's frames also come at the output's rate (the input
      // line's figures are the average and the tbr, which may be a field rate).
      const out = probe.output;
      if (!out) return;
      // The file's own rate: the one ffmpeg gave its filter graph (printed after the input's
      // report, which a file's metadata can forge), else as ffmpeg would choose it from the
      // input's report.
      const ownRate = input.kind === 'file' ? (probe.graphRate ?? outputRate(inputInfo)) : undefined;
      if (!input.interlaced && ((input.decode ?? DEFAULT_DECODE).deinterlace ?? 'auto') === 'auto' && interlacedBy(inputInfo?.pixDetails)) {
        stop(new Interlaced(`source "${id}": interlaced (${inputInfo?.pixDetails})`));
        return;
      }
      // (Not an input read only once: run again, it gave no frame. It keeps the fps filter,
      // which repeats some of its frames to make up the rate, as over a variable-rate file's gaps.)
      if (input.fps && ownRate && input.fps > ownRate && !options.memo?.readsOnce) {
        stop(new RateAboveSource(`source "${id}": fps ${input.fps} is above the file's ${+ownRate.toFixed(3)}`));
        return;
      }
      // ffmpeg's own filter keeps frames at the source's size within MAX_SOURCE_PIXELS: a larger
      // size is not the picture it writes (a line of a file's metadata can look like any report;
      // the output's is known by its name). Letterboxed, the size is the camera's own, any size.
      if (!(size.width > 0 && size.height > 0 && (!atSource || size.width * size.height <= MAX_SOURCE_PIXELS))) {
        stop(new ArgusError(ErrorCodes.SOURCE_PROBE, redact(`source "${id}": ffmpeg's log gives the picture as ${size.width}x${size.height}, beyond the ${MAX_SOURCE_PIXELS} pixels argus takes`)));
        return;
      }
      if (layout === 'yuv420p') {
        // An odd height too: ffmpeg converts such pictures with its general scaler, whose
        // arithmetic the kernel does not reproduce. And a small picture: see YUV_MIN_PIXELS.
        if (!YUV420.has(inputInfo?.pixFmt ?? '') || size.height % 2 !== 0 || size.width * size.height < YUV_MIN_PIXELS) {
          stop(new NotYuv420(`source "${id}": the input is ${inputInfo?.pixFmt ?? 'of an unnamed pixel format'}, ${size.width}x${size.height}`));
          return;
        }
        // The format filter allows only these two; anything else is a bug worth a clear error.
        if (out.pixFmt !== 'yuv420p' && out.pixFmt !== 'yuvj420p') {
          stop(new ArgusError(ErrorCodes.SOURCE_PROBE, redact(`source "${id}": ffmpeg writes ${out.pixFmt ?? 'an unnamed pixel format'}, not the yuv420p asked for`)));
          return;
        }
        colour = colourOf(out.pixFmt, out.pixDetails);
      }
      lb = fit(size.width, size.height);
      reader = makeReader(size.width, size.height);
      // The rate delivered: the configured one, or the source's when that is lower. A file's
      // frames come at a constant rate (the fps filter's, or ffmpeg's constant-rate output, which
      // repeats frames of a variable-rate file): the output's rate, not the average the input
      // reports (a phone's 30 fps recording averaging 22.2 fps would otherwise play 1.35 × too
      // slow), and its pts count that rate. A live source's pts count the configured rate, else
      // the one ffmpeg guessed, held to the clock (see emit): the rate a live stream reports is a
      // guess from a fraction of a second of it (or a demuxer's default, MJPEG's 25).
      const streamFps = input.kind === 'file' ? (out.fps ?? ownRate) : (inputInfo?.fps ?? out.fps);
      const deliveredFps = input.fps ? Math.min(input.fps, streamFps ?? input.fps) : streamFps;
      fps = input.kind === 'file' ? deliveredFps : (input.fps ?? streamFps);
      if (landing?.first !== undefined && Number.isFinite(landing.first) && landedLate()) return;
      options.onStreamInfo?.({ ...inputInfo, width: size.width, height: size.height, fps: deliveredFps }, lb);
      // Bytes that came before the size (ffmpeg exited, and node resumed its stdout) are cut now.
      for (const b of early.splice(0)) reader.push(b);
      if (paused) return;
      if (frames) {
        // Read once the first frame may be (the socket keeps what ffmpeg writes meanwhile).
        frames.feed(reader, hold && (() => (hold() ? (paused = true) : false)));
        if (hold?.()) paused = true;
        else frames.resume();
      } else stdout!.resume();
    };
    // Pacing: one frame is read ahead (`ahead`) and no further frame is cut while it waits: for
    // a fast file, until the stage is idle; at native rate, until it is due. The rest of the
    // chunk waits here and ffmpeg waits on the full pipe. The frame is stamped `captured` when
    // it is released, so `captured → emitted` measures the pipeline and not a queue.
    // Native rate, also: nothing is read while the stage works on the frame before, up to
    // READ_LEAD_FRAMES before the next one is due (then it is read anyway, and a stage slower
    // than the file drops stale frames as for a camera). Reading 3 MB and decoding the frame
    // after it then fall in the stage's idle time: on the 2-core machine, 1080p30 clip,
    // due → emitted p50 13.3 → 11.3 ms, p99 30–37 → 29 ms (README).
    // A frame that comes too late for that (ffmpeg delivered it after the moment it would have
    // been read: the first frames, or after a stall) is read while the stage is busy only once
    // the frame after it is due: read earlier, it would only wait in the stage, and its decode and
    // 3 MB copy would slow the frame being inferred; the one after it is then late in turn, so
    // two are never read back to back to replace each other. At start-up on the 2-core machine,
    // frames 1 and 2 used to be read while frame 0 inferred (25–45 ms instead of 12), and one of
    // the first frames was dropped in 9 of 10 runs (README). When two late frames in a row are
    // read at that deadline with the stage still busy, the stage is slower than the file, not
    // starting up: frames are read at their normal time again (a stale one dropped), and not
    // held as late until the stage has been idle, so a slow stage's frames are never a frame
    // staler than before.
    let askedSeq = -1;
    let late = false;
    let lateAtDeadline = 0; // late frames in a row read at their deadline, the stage busy
    let readTimerAt = 0;
    const holdRead = (): boolean => {
      if (ahead !== undefined) return true;
      if (!stage || !fps || !playStart) return false;
      if (!stage.busy) {
        lateAtDeadline = 0;
        return false;
      }
      const t = now();
      const k = seq - seqStart;
      // Late when first asked for: a read timer that fires a little late does not make it so.
      if (askedSeq !== seq) {
        askedSeq = seq;
        late = lateAtDeadline < 2 && t >= due(k - READ_LEAD_FRAMES);
      }
      const at = late ? due(k + 1) : due(k - READ_LEAD_FRAMES);
      if (at - t < 1) {
        // Counted once: asked again for this frame, it is read at once all the same.
        if (late) {
          late = false;
          lateAtDeadline++;
        }
        return false;
      }
      // One timer, for the earliest read wanted (a late frame's deadline may be later than the
      // read time of the frame after it, when the stage went idle in between).
      if (readTimer && at < readTimerAt) {
        clearTimeout(readTimer);
        readTimer = undefined;
      }
      if (!readTimer) {
        readTimerAt = at;
        readTimer = setTimeout(() => {
          readTimer = undefined;
          resumeIfAllowed();
        }, at - t);
      }
      return true;
    };
    // Frames at the source's size: frame k is not cut before ffmpeg's log has reported it (the
    // reports count the frames ffmpeg writes, see probe.onResize), so that a resolution change
    // before it is known first: ffmpeg writes the new picture at its own size (-autoscale 0), and
    // cut at the old one its bytes would make frames of two pictures, the rest cut out of step.
    // ffmpeg logs each frame before writing it, so this waits only while its log, which comes
    // through another pipe, is behind (read later in the same turn of the event loop). Not after
    // ffmpeg has exited (its whole log is read by then), nor for longer than REPORT_WAIT_MS.
    let childExited = false;
    let reportWait: ReturnType<typeof setTimeout> | undefined;
    let reportsBehind = false;
    // The frame (counted as `cut` below) whose report was waited for REPORT_WAIT_MS: it is cut
    // without it. The wait ends for good (reportsBehind) only once that frame was read whole and
    // its report has still not come: the log is behind the frames, or never reports them. A wait
    // that ran out with no frame read says nothing of the log: through the frame channel the wait
    // begins as soon as a frame is delivered, before the next is read, and a camera silent for
    // longer (a network stall, a camera reconfiguring its stream, one frame every few seconds)
    // ended the wait for the rest of the run; then the bytes of a new picture, read before the
    // log's line of it, were cut at the old size and delivered as a frame.
    let waitedFor = -1;
    // The frame whose wait ran out with none of its bytes known to be there (through the channel
    // or the socket, which read a frame only once it may be cut; a pipe with nothing waiting): a
    // silence, which says nothing of the log. It is read, then held (`unreportedFrame`) until its
    // report comes, REPORT_WAIT_MS at most; only a wait that runs out then ends the wait for good.
    // (It was cut at once: a camera that stalled for more than 2 s and came back with a picture of
    // another size, its bytes read before the log's line of it, had them delivered as a frame of
    // the old size; and where the frame's report came a moment after its bytes, the wait ended
    // for the rest of the run.)
    let blindRead = -1;
    let unreportedFrame: Buffer | undefined;
    const unreported = (): boolean => {
      if (unreportedFrame) return true;
      if (childExited || reportsBehind) return false;
      const cut = seq - seqStart + (ahead ? 1 : 0);
      // Letterboxed frames: only a resumed file's first (see landing).
      if (!atSource && cut > 0) return false;
      const reported = reports + adjusted;
      if (reported > cut) return false;
      if (waitedFor === cut || blindRead === cut) return false;
      if (waitedFor >= 0 && reported <= waitedFor) {
        reportsBehind = true;
        return false;
      }
      reportWait ??= setTimeout(() => {
        reportWait = undefined;
        const at = seq - seqStart + (ahead ? 1 : 0);
        // The pipe's bytes of the frame wait, read: the log is behind them.
        if (!frames && leftover) waitedFor = at;
        else blindRead = at;
        resumeIfAllowed();
      }, REPORT_WAIT_MS);
      return true;
    };
    /** The frame held for its report (see blindRead) goes on: reported, or waited for long enough. */
    const releaseUnreported = (): void => {
      const data = unreportedFrame;
      if (!data) return;
      unreportedFrame = undefined;
      clearTimeout(reportWait);
      reportWait = undefined;
      onFrame(data);
    };
    const paceHold = pace || native ? holdRead : undefined;
    const hold = atSource || landing ? () => paceHold?.() === true || unreported() : paceHold;
    const onStdout = (chunk: Buffer): void => {
      if (!reader) {
        early.push(chunk);
        return;
      }
      if (leftover) {
        // Held (a frame not due yet, or the stage busy) and node resumed stdout by itself, as it
        // does when ffmpeg exits: the bytes join what waits (at most what the pipe held).
        leftover = Buffer.concat([leftover, chunk]);
        return;
      }
      const used = reader.push(chunk, hold);
      if (used < chunk.length) {
        leftover = chunk.subarray(used);
        paused = true;
        stdout!.pause();
      }
    };

    const onChildError = (err: NodeJS.ErrnoException): void => {
      if (closed) return;
      closed = true;
      if (err.code === 'ENOENT') fail(ErrorCodes.SOURCE_OPEN, `source "${id}": ffmpeg executable not found at ${options.ffmpegPath}`, err);
      // Out of descriptors/processes/memory: worth retrying. Anything else (EACCES, …) will not fix itself.
      else fail(TRANSIENT_SPAWN_ERRORS.has(err.code ?? '') ? ErrorCodes.SOURCE_SPAWN : ErrorCodes.SOURCE_OPEN, `source "${id}": could not start ffmpeg (${options.ffmpegPath}): ${err.message}`, err);
    };
    // A pipe that fails (rare: EIO, a descriptor closed under us) must not become an uncaught
    // 'error' event: this ffmpeg is ended and the source reports a retryable error.
    const onPipeError = (name: string) => (err: NodeJS.ErrnoException) => {
      if (closed) return;
      closed = true;
      killedByUs = true;
      stopChild();
      fail(ErrorCodes.SOURCE_SPAWN, `source "${id}": ffmpeg's ${name} failed: ${err.message}`, err);
    };

    // 'close' fires after stdout (a pipe) and stderr have ended, so every complete frame of a
    // pipe was delivered; a frame socket's may still wait in it (held), and its end comes apart.
    const onClose = (code: number | null, signal: NodeJS.Signals | null): void => {
      options.onExit?.(code, signal);
      childExited = true;
      clearTimeout(reportWait);
      reportWait = undefined;
      if (closed) return;
      // A frame held for its report: the whole log has been read (a change of size it reported
      // ended the run), so it is cut now; after a failure it is dropped with the others (end).
      if (unreportedFrame && code === 0 && lb && !killedByUs) releaseUnreported();
      if (closed) return;
      // The end of the input with frames still held (not due yet, or the stage busy): node read
      // the pipe to the end when ffmpeg exited, the socket keeps them; they are delivered as
      // they are allowed, then the source completes. After a failure held frames are dropped:
      // the restart resumes after the last frame delivered, so it decodes them again.
      const unread = frames !== undefined && !frames.ended;
      if ((leftover || ahead || unread) && code === 0 && lb && !killedByUs) {
        exited = () => end(code, signal);
        // Held for their reports only (see unreported): cut now.
        if (paused && (atSource || landing)) resumeIfAllowed();
      }
      else if (unread && !paused && lb && !killedByUs) {
        // A failure, with the socket being read: what ffmpeg wrote before it failed is
        // delivered first, as node reads a pipe to its end before 'close' (within a deadline).
        exited = () => end(code, signal);
        failedAt = setTimeout(() => exited?.(), FAILED_READ_MS);
      } else end(code, signal);
    };
    let failedAt: ReturnType<typeof setTimeout> | undefined;
    /** The frame socket was read to its end. */
    const onFramesEnd = (): void => {
      if (exited && !ahead) exited();
    };
    const end = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(failedAt);
      dropAhead();
      if (closed) return;
      closed = true;
      reader?.discardPartial();
      if (killedByUs) return;
      // A resumed file that ends without a frame: its seek landed past every frame left (the key
      // frame after the seek point may be the file's end), or the seek point is the end itself;
      // run again from further back to know.
      if (code === 0 && landing && seq === seqStart) {
        const next = Math.min(landing.seek, landing.trim * SEEK_MARGIN_GROWTH);
        subscriber.error(new LandedLate(`source "${id}": a seek ${landing.trim.toFixed(1)} s before ${landing.seek.toFixed(3)} s found no frame`, next));
        return;
      }
      if (code === 0 && lb) {
        subscriber.complete();
        return;
      }
      const relayed = tap ?? named;
      // A redirect the relay did not follow (too many, a loop, another scheme, a checked camera
      // sending ffmpeg to plain RTSP or HTTP): the camera's doing, named, and no rerun without the relay.
      if (relayed?.redirectRefused !== undefined && code !== 0) {
        fail(ErrorCodes.SOURCE_OPEN, `source "${id}": ${relayed.redirectRefused}`);
        return;
      }
      // Frames the relay could not pair with its packets: run it without the relay.
      const failure = tap?.clock.failure();
      if (failure && code !== 0) {
        subscriber.error(new RelayUnusable(failure, seq > seqStart));
        return;
      }
      const log = relayed ? relayed.unrelay(probe.tailText()) : probe.tailText();
      const tail = withoutOwnNotices(log.split('\n')).slice(-6).join('\n');
      if (!lb && probe.tooLarge) {
        fail(ErrorCodes.SOURCE_PROBE, `source "${id}": ${tooLargeMessage(input.url, probe.tooLarge)}\n${tail}`);
        return;
      }
      // A forced raw demuxer (`-f h264`, `-f obu`, …) that read nothing of its codec: what came is
      // no such stream (it was `ffmpeg exited with code 1`, and, before, the camera's contact).
      const unread = !lb && seq === seqStart ? probe.rawStreamUnread : undefined;
      if (unread !== undefined) {
        fail(ErrorCodes.SOURCE_PROBE, `source "${id}": ffmpeg's ${unread} demuxer (the source's -f ${unread}) found no ${unread} stream in ${input.url}: what it answers is something else (an HTML page: a camera's login or error page?)\n${tail}`);
        return;
      }
      if (!lb && saysNoVideoStream(log)) {
        fail(ErrorCodes.SOURCE_PROBE, `source "${id}": ${input.url} has no video stream\n${tail}`);
        return;
      }
      if (!lb) {
        // Ended without reporting its input: asked then (never on the way to a frame) whether it
        // is ffmpeg at all (ARGUS_FFMPEG=/bin/true "reported no video stream"); a file's look
        // (fileCheck) first, which fails the run itself where it found the file no input.
        const ended = `exited with ${signal ?? `code ${code}`}`;
        void (fileCheck ?? Promise.resolve(undefined))
          .then((problem) => {
            if (!problem) return probe.inputReported ? undefined : notFfmpeg(options.ffmpegPath, ended);
            fail(problem.code, `source "${id}": ${problem.why}`);
            return 'failed';
          })
          .then((notIt) => {
          if (notIt === 'failed') return;
          if (notIt) fail(ErrorCodes.SOURCE_OPEN, `source "${id}": ${notIt}`);
          else fail(code === 0 ? ErrorCodes.SOURCE_PROBE : ErrorCodes.SOURCE_EXIT, `source "${id}": ffmpeg ${code === 0 ? 'reported no video stream' : ended} for ${input.url}\n${tail}`);
        });
        return;
      }
      fail(ErrorCodes.SOURCE_EXIT, `source "${id}": ffmpeg exited with ${signal ?? `code ${code}`} after ${seq - seqStart} frames\n${tail}`);
    };

    /** A frame held for its due time is not delivered after the end or a failure. */
    const dropAhead = (): void => {
      clearTimeout(reportWait);
      reportWait = undefined;
      if (dueTimer) clearTimeout(dueTimer);
      dueTimer = undefined;
      if (readTimer) clearTimeout(readTimer);
      readTimer = undefined;
      if (ahead) pool?.release(ahead);
      ahead = undefined;
      if (unreportedFrame) pool?.release(unreportedFrame);
      unreportedFrame = undefined;
    };

    /** Runs ffmpeg, writing its frames into `sock` where there is one, else into its stdout pipe. */
    const start = (sock?: FrameSocket | FrameChannel): void => {
      try {
        // A throw here (the arguments' build; an injected spawn) is told at once. node's spawn's
        // (ENOMEM, E2BIG) is not one: spawnOwned gives a child that never started, told by its
        // 'error' event (onChildError) as EMFILE is, one path for every caller.
        const args = buildFfmpegArgs(still ? { ...input, still } : input, output, tag, { autoscale: ffmpegAutoscales(options.ffmpegPath) && !keepsFirstSize });
        const memo = options.memo;
        if (options.onSecretsExposed && memo && !memo.exposedNoticed) {
          const exposed = exposedSecrets(args);
          if (exposed.length) {
            memo.exposedNoticed = true;
            options.onSecretsExposed(
              `source "${id}": ffmpeg's command line holds the camera's ${exposed.join(', ')}, which every local user of this machine can read (ps, /proc/PID/cmdline): argus's relays keep secrets off it only for RTSP cameras (over TCP, UDP or multicast) and HTTP(S) ones; run argus as a user of its own on a host no one else uses, or use a camera account with the least rights`,
            );
          }
        }
        // ffmpeg reaches an HTTP camera's relay on 127.0.0.1 directly, never through a proxy of the environment's (http_proxy).
        const env = input.kind === 'http' && input.credentialRelay ? loopbackUnproxied(process.env) : undefined;
        child = (options.spawn ?? ownedSpawn)(options.ffmpegPath, args, { stdio: [still ? 'pipe' : 'ignore', sock?.childEnd ?? 'pipe', 'pipe'], ...(env ? { env } : {}) });
      } catch (e) {
        sock?.destroy();
        const err = e as NodeJS.ErrnoException;
        fail(ErrorCodes.SOURCE_SPAWN, `source "${id}": could not start ffmpeg (${options.ffmpegPath}): ${err.message}`, err);
        return;
      }
      // First: a spawn that fails later (EMFILE: node reports it on the next tick, and leaves
      // the child without its pipes) is told here.
      child.on('error', onChildError);
      if (options.memo) noteFfmpeg(options.memo, child, input.kind === 'v4l2' || input.kind === 'file');
      child.on('close', onClose);
      if (still && child.stdin) {
        // An ffmpeg that ends before reading it all (killed, or failing) is told by its exit.
        child.stdin.on('error', () => {});
        child.stdin.end(still.data);
      }
      if (sock) {
        sock.spawned();
        frames = sock;
        sock.onEnd = onFramesEnd;
        sock.onError = onPipeError('frame socket');
      } else if (child.stdout) {
        stdout = child.stdout;
        stdout.pause(); // until ffmpeg has told us the input's size
        stdout.on('data', onStdout);
        stdout.on('error', onPipeError('stdout'));
      }
      const stderr = child.stderr;
      if (!stderr) return; // (its 'error' is coming)
      stderr.setEncoding('utf8');
      stderr.on('data', onStderr);
      stderr.on('error', onPipeError('stderr'));
      options.onSpawn?.(child);
    };
    const launch = (): void => {
      // The channel for frames that come as the source makes them (cameras, files at their own
      // rate); a file read as fast as possible through the socket, where the channel measured
      // slower on the 2-core VM (75.8 against 82.9 frames/s, 1080p, two one-thread workers): with
      // every core busy, the channel's thread waited for one before each frame (README, "Reading
      // straight into the frame").
      const socket = FRAME_SOCKETS && !options.spawn && input.kind === 'file' && input.rate === 'fast';
      const channel = options.spawn || options.frameChannel === false || socket ? undefined : FrameChannel.open();
      if (channel) start(channel);
      else if (socket) {
        // The socket is worth having, not needed: where it cannot be made (a sandbox, a loop
        // stalled past its deadline), the pipe does.
        FrameSocket.open().then(
          (sock) => {
            if (closed) {
              sock.destroy();
              return;
            }
            try {
              start(sock);
            } catch (e) {
              // (Out of the subscription's reach here: what it would have made the source's error.)
              sock.destroy();
              if (closed) return;
              closed = true;
              killedByUs = true;
              if (child) stopChild();
              subscriber.error(e);
            }
          },
          () => {
            if (!closed) start();
          },
        );
      } else start();
    };
    // The source's ffmpeg before this one (a restart's, a rerun's) has exited first (afterExit).
    let cancelWait: (() => void) | undefined;
    const memo = options.memo ?? {};
    const launchAfterExit = (): void => {
      cancelWait = afterExit(
        memo,
        () => {
          cancelWait = undefined;
          if (!closed) launch();
        },
        options.onFfmpegStuck,
      );
    };
    const begin = (): void => {
      if (stillPath === undefined) launchAfterExit();
      else decodeFirst();
    };
    const decodeFirst = (): void => {
      decodeStill(stillPath!, options.memo).then(
        (picture) => {
          if (closed) return;
          still = picture;
          launchAfterExit();
        },
        (e: unknown) => {
          if (closed) return;
          closed = true;
          subscriber.error(isArgusError(e) ? new ArgusError(e.code, redact(`source "${id}": ${e.message}`), { cause: e }) : e);
        },
      );
    };
    begin();

    return () => {
      cancelWait?.();
      stopPacing?.();
      dropAhead();
      if (!closed) {
        closed = true;
        killedByUs = true;
        if (child) {
          stopChild();
          // What ffmpeg writes until it has gone (its log of the stop) is read and dropped, the
          // pipes closed once it has: nothing of it reaches the run's handlers after the stop.
          const pipes = [stdout, child.stderr];
          if (gone) {
            for (const p of pipes) {
              p?.removeAllListeners('data');
              p?.on('data', () => {});
              p?.resume();
            }
            void gone.then(() => pipes.forEach((p) => p?.destroy()));
          } else pipes.forEach((p) => p?.destroy());
        }
      }
      // The relay's connection stays until ffmpeg has gone (its TEARDOWN goes through it).
      (tap ?? named)?.drop(gone);
      // (Closed at once: no frame is read after the stop. ffmpeg ignores SIGPIPE, and its write's
      // EPIPE ends its output, not its input's TEARDOWN.)
      frames?.destroy();
    };
  });
}

/**
 * The relays whose notice (FfmpegSourceOptions.onClockNotice) was given: once per start of a
 * source, not per connection (a rerun for packed frames or the file's own rate is another
 * connection, and logged the notice again); across starts (reconnects), once per source in
 * NOTICE_REPEAT_MS (SourceMemo.notices).
 */
const noticed = new WeakSet<object>();
/** The relays whose notice of a camera time believed far behind the arrival (cameraBehindNotice) was given: once per start, as `noticed`. */
const noticedBehind = new WeakSet<object>();

/** The relays whose notice that access units are no longer ended for ffmpeg (unitEndsNotice) was given: once per start, as `noticed`. */
const noticedUnits = new WeakSet<object>();

/** The relay stopped ending the camera's access units for ffmpeg (RtpClock.unitEndsStopped): each frame is a frame period later from then on, which was said nowhere. */
function unitEndsNotice(id: string, why: 'marks' | 'reordered'): string {
  const what = why === 'marks' ? 'marks packets inside its access units (a marked packet was followed by one with its timestamp)' : `sends access units out of timestamp order (B-frames, or its clock stepped back by less than ${UNIT_JUMP_BACK_MS / 1000} s)`;
  return `source "${id}": the camera ${what}: argus's relay no longer ends them for ffmpeg on this connection, and each frame waits a frame period in ffmpeg before it is decoded (its latency shows it) until the camera reconnects`;
}

/**
 * The log line for a camera whose time put every frame arriving for CAMERA_BEHIND_SUSTAINED_MS
 * at least `behindMs` (negative) before its arrival, more than CAMERA_BEHIND_NOTICE_MS and
 * believed: its frames' latency counts the whole of it, which a camera clock that is not
 * synchronised would give (or a network that held every frame that long).
 */
function cameraBehindNotice(id: string, behindMs: number): string {
  return `source "${id}": the camera's clock put every frame that arrived for ${CAMERA_BEHIND_SUSTAINED_MS / 1000} s at least ${Math.abs(behindMs).toFixed(0)} ms before its arrival at argus, and the frames' latency counts such a gap (producedBy: camera; believed up to ${CAMERA_BEHIND_MAX_MS / 1000} s before): a camera clock that is not synchronised (NTP) shows its error as latency (so would a network that holds every frame that long); where the camera's time is off, set cameraClock: false (frames stamped with their arrival)`;
}

/** A fast file whose ffmpeg failed: how long what it wrote before may take to be read from the frame socket before the failure is reported. */
const FAILED_READ_MS = 1000;

/** A resumed file's first frame this much after the seek point, where its rate is unknown, landed late (LandedLate). */
const LANDED_LATE_S = 0.5;

/** Native-rate files: how long before its due time (in frames) the next frame is read even while the stage is busy. */
export const READ_LEAD_FRAMES = 0.5;

/**
 * How far a live source's pts (which count its rate) may stray from the time since its first
 * frame, seconds. Half a second keeps the even spacing through capture jitter and a short burst;
 * a rate that is wrong (configured above the camera's, or guessed by ffmpeg) only shifts the pts
 * by this much, and time differences (dwell, timeouts) then follow the clock.
 */
export const LIVE_PTS_SLACK_S = 0.5;

/** The longest a live frame is taken to have spent between the demuxer and argus: a reported arrival earlier than this before its delivery is not its arrival. */
export const MAX_ARRIVAL_AGE_MS = 60_000;

/** Whether ffmpeg's reported arrival time `t` (epoch ms) can be that of a frame delivered at `captured`. */
export function plausibleArrival(t: number, captured: number): boolean {
  return t <= captured && t > captured - MAX_ARRIVAL_AGE_MS;
}

/**
 * `env` with 127.0.0.1 in its `no_proxy`: ffmpeg's HTTP sends a request through `http_proxy`
 * unless its host is in `no_proxy`, and a proxy cannot reach argus's relay on this machine's
 * loopback (the relay itself connects to the camera directly).
 */
export function loopbackUnproxied(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const list = noProxyOf(env) ?? '';
  // (ffmpeg reads `no_proxy` only: one in NO_PROXY alone is given it there.)
  if (env.no_proxy !== undefined && noProxyMatches(list, '127.0.0.1', 0)) return env;
  return { ...env, no_proxy: noProxyMatches(list, '127.0.0.1', 0) ? list : list ? `${list},127.0.0.1` : '127.0.0.1' };
}
