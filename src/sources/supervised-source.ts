import { asyncScheduler, BehaviorSubject, concat, connect, defer, distinctUntilChanged, EMPTY, finalize, identity, materialize, merge, mergeMap, type MonoTypeOperatorFunction, NEVER, Observable, of, repeat, retry, type SchedulerLike, type Subscription, switchMap, take, takeUntil, tap, throwError, timeout, timer } from 'rxjs';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { redact } from '../core/redact.js';
import type { Frame } from '../core/frame.js';
import type { Letterbox } from '../core/geometry.js';
import { indexedFormat } from './ffmpeg-args.js';
import { ffmpegSource, lastFfmpegGone, LIVE_PTS_SLACK_S, type FfmpegSourceOptions, type LastFfmpeg, type PlaySchedule, type SourceMemo } from './ffmpeg-source.js';
import { backoffDelay, type ReconnectPolicy, type SourceState, type Transition } from './health.js';

/** A source's resolution changes are reported at most this often (see `supervisedSource`), ms. */
export const RESIZE_REPORT_MS = 1000;

/**
 * A source of frames at its own size (`model.resize: exact`) is restarted at once for a
 * resolution change (VAP_ERR_SOURCE_RESIZED, see ffmpeg-source) at most this often, ms; another
 * change sooner is restarted after the backoff, as a failure (a camera that changes its size on
 * every frame would otherwise start ffmpeg for every frame). A file's is counted in its own time
 * (its position), not the clock's: read as fast as possible, a recording whose size changed every
 * 2 s waited 1, 2, 4, 8 s of backoff between its parts, and with `maxAttempts: 2` failed at its
 * third change.
 */
export const RESIZE_RESTART_MS = 10_000;

export interface WatchdogOptions {
  /** No first frame within this long after (re)starting ffmpeg: restart it. Default 15 000 ms. */
  startTimeoutMs: number;
  /** No frame within this many frame periods: the source is stalled and ffmpeg restarted. Default 10. */
  stallFactor: number;
  /** …but never less than this, ms. Default 2000. */
  stallMinMs: number;
  /** …and never more than this, ms (a stream's declared rate is its own to state). Default 60 000, or stallMinMs where higher. */
  stallMaxMs: number;
}

export interface SupervisedSourceOptions extends FfmpegSourceOptions {
  reconnect: ReconnectPolicy;
  watchdog: WatchdogOptions;
  /** Every state change, with its reason. */
  onTransition?: (t: Transition) => void;
  /**
   * Told each time the source is reconnected: a run started again after the backoff (after a
   * failure, a stall, a live stream's end, or a resolution change sooner than RESIZE_RESTART_MS
   * after the last), told before its `reconnecting` transition. Not for a resolution change
   * restarted at once, nor a looped file's next pass. (Counted from the transitions, every one
   * coded VAP_ERR_SOURCE_RESIZED was left out, and with it such a change's restart after the
   * backoff, which counts toward `maxAttempts` as a failure.)
   */
  onReconnect?: () => void;
  /**
   * What failed the source from downstream, if anything, when its frames stop being read (its
   * detection stage gave up after inference failed frame after frame): the source then ends
   * `failed` with that reason, not `stopped`.
   */
  failedBy?: () => Error | undefined;
  /**
   * Where an earlier chain of this source ended (a worker's camera attached again): `pts` go on
   * after `lastPts`, a live source's counted from the same first frame (`firstFrameAt`, on
   * `clock`), 1 / `fps` apart, as across restarts. With `seqStart`, the source continues as if never detached.
   */
  resume?: { lastPts: number; firstFrameAt: number; fps?: number };
  /**
   * The ffmpeg of this source's chain before this one, shared with it (a worker's camera edited,
   * or stopped and started again): this chain's first ffmpeg waits for that one's exit, as a
   * restart waits for the run before it. Default: the source's own.
   */
  lastFfmpeg?: LastFfmpeg;
  /** Random source for jitter (tests). */
  random?: () => number;
  /** Runs every timer (start timeout, stall watchdog, backoff); a TestScheduler runs them in virtual time. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** One ffmpeg run per subscription, given the options for that run (tests). Default `ffmpegSource`. */
  run?: (options: FfmpegSourceOptions) => Observable<Frame>;
}

/**
 * Demuxers whose seek lands on the key frame at or before the wanted time (indexed containers,
 * ffmpeg-args indexedFormat); ffmpeg's accurate seek is then frame-exact with no delay. Others
 * (MPEG-TS, raw streams, …) may land after it: they seek earlier by this margin and trim the rest.
 */
const SEEK_MARGIN_S = 3;

/**
 * A transition's reason: the error's first line, and the line that says why where the error
 * has more (the relay's `camera: …` line, else ffmpeg's last: "Connection refused", a
 * certificate refused), so that the log line and /healthz tell the cause, not only "ffmpeg
 * exited with code 1". At most REASON_CHARS characters.
 */
const firstLine = (e: Error): string => {
  const lines = e.message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const [first = '', ...rest] = lines;
  const why = rest.find((l) => l.startsWith('camera: ')) ?? rest[rest.length - 1];
  // Redacted before it is cut: a URL cut before its '@' would no longer be known as one.
  const text = redact(why ? `${first}: ${why}` : first);
  return text.length > REASON_CHARS ? `${text.slice(0, REASON_CHARS - 1)}…` : text;
};
const REASON_CHARS = 400;

/**
 * A source that keeps itself alive: ffmpeg is restarted with exponential backoff and jitter
 * when it exits, when the stream ends (live sources), or when no frame arrives in time (the
 * stall watchdog). Files that end complete; looped files start over. When `maxAttempts`
 * reconnects in a row have failed too the source errors (state `failed`); the caller isolates it from the
 * other sources. Streaming for `healthyResetMs` resets the attempt count (and so the delay).
 *
 * `seq` and `pts` run on across every restart, strictly increasing, for the whole run:
 * - `seq`: frames read from the source (dropped ones included): the next restart goes on at
 *   the last `seq` + 1.
 * - `pts`, live sources (RTSP, HTTP, V4L2, files at `rate: native`): within one ffmpeg run
 *   `1 / fps` per frame (a live source's kept within LIVE_PTS_SLACK_S of the time since the
 *   source's first frame: see ffmpeg-source); the first frame after a restart gets
 *   `max(last pts + 1 / fps, monotonic seconds since the source's first frame)` (for a live
 *   source no more than LIVE_PTS_SLACK_S beyond the latter, so restarts cannot add up a lead),
 *   so the time an outage lasted shows (a 5 s outage: ~5 s more), measured on `clock` (default
 *   `performance.now`, or the scheduler's clock when a scheduler is given).
 * - `pts`, files at `rate: fast`: the file position played so far: `last pts + 1 / fps`
 *   after a restart or a loop.
 * - Files resume where they were: a restarted file (stall, ffmpeg died or was killed) is
 *   sought to the next frame not yet delivered; a looped file starts over at 0 in the file
 *   at its end (ffmpeg is restarted; `seq`/`pts` go on).
 *
 * States: starting → streaming → stalled → reconnecting → streaming … / failed / ended;
 * unsubscribing kills ffmpeg (state `stopped`).
 */
export function supervisedSource(o: SupervisedSourceOptions): Observable<Frame> {
  // Everything not consumed here goes to each ffmpeg run unchanged.
  const { reconnect, watchdog, onTransition, onReconnect, failedBy, random, scheduler = asyncScheduler, run = ffmpegSource, lastFfmpeg: _shared, ...runOptions } = o;
  const clock = o.clock ?? (o.scheduler ? () => scheduler.now() : () => performance.now());
  const isFile = o.input.kind === 'file';
  const live = !isFile || o.input.rate === 'native'; // watched by the stall watchdog; fast files pause on purpose

  return defer(() => {
    let state: SourceState = 'stopped';
    let attempt = 0; // failures in a row since the source was last healthy
    let streamingSince = 0; // clock() at the first frame after (re)starting
    let fps: number | undefined = o.input.fps ?? o.resume?.fps;
    let format: string | undefined;
    let opened = false; // ffmpeg reported the input's video stream at least once
    // Continuity across ffmpeg runs.
    let nextSeq = o.seqStart ?? 0;
    let lastPts: number | undefined = o.resume?.lastPts;
    let firstFrameAt = o.resume?.firstFrameAt ?? 0; // clock() at the source's first frame
    // Files: where the current run started in the file, its first frame's pts, frames so far.
    let runSeek = 0;
    let runFirstPts = 0;
    let runFrames = 0;
    /** The run about to start is a looped file's next pass (its timetable and pts go on exactly). */
    let nextPass = false;
    /** A native-rate file's timetable, which a looped file's passes share (ffmpegSource `schedule`). */
    const schedule: PlaySchedule = {};

    const period = () => (fps ? 1 / fps : 1e-3);
    /** Position in the file of the next frame not yet delivered, seconds. */
    const nextPosition = () => (runFrames > 0 ? runSeek + (lastPts! - runFirstPts) + period() : runSeek);
    // Bounded both ways: a stream can declare any rate (0.001 fps in its metadata or its
    // bitstream's timing), and a watchdog that waited stallFactor periods of it would never fire.
    const stallMs = () => Math.min(watchdog.stallMaxMs, Math.max(watchdog.stallMinMs, fps ? (watchdog.stallFactor * 1000) / fps : 0));

    // A resolution change is reported (a transition: a log line, a status message to the sinks
    // and the outbox) at most once a RESIZE_REPORT_MS: a stream can change it on every frame (an
    // MJPEG camera sending pictures of two sizes in turn: 30 reports a second). Changes within
    // the interval are counted into one report at its end (or before the next state change, in
    // the state they happened in), from the size before the first to the last. Frames carry
    // their own letterbox either way. On the monotonic clock, as the watchdog.
    let resizeReportedAt = -Infinity;
    let pendingResize: { from: Letterbox; to: Letterbox; count: number } | undefined;
    let resizeTimer: Subscription | undefined;
    let finished = false;
    /** clock() at the last restart for a resolution change (RESIZE_RESTART_MS); whether the run now starting is one. */
    let resizeRestartAt = -Infinity; // a file's: its position (counted on across loops, `played`), ms
    /** A looped file's passes before this one, seconds. */
    let played = 0;
    let resizeRestart = false;
    const reportResize = (from: Letterbox, to: Letterbox, count: number) => {
      resizeReportedAt = clock();
      const [a, b] = [`${from.srcWidth}x${from.srcHeight}`, `${to.srcWidth}x${to.srcHeight}`];
      const reason = count === 1 ? `resolution changed from ${a} to ${b}` : `resolution changed ${count} times in ${(RESIZE_REPORT_MS / 1000).toFixed(1)} s, from ${a}; now ${b}`;
      onTransition?.({ source: o.id, state, previous: state, reason, at: now(), attempt, code: ErrorCodes.SOURCE_RESIZED });
    };
    /** Reports the changes counted so far, if any (their interval ended, or the state changes). */
    const flushResize = () => {
      resizeTimer?.unsubscribe();
      resizeTimer = undefined;
      const p = pendingResize;
      pendingResize = undefined;
      if (p) reportResize(p.from, p.to, p.count);
    };
    const resized = (from: Letterbox, to: Letterbox) => {
      if (finished) return;
      const wait = Math.min(RESIZE_REPORT_MS, resizeReportedAt + RESIZE_REPORT_MS - clock());
      if (!pendingResize && wait <= 0) return reportResize(from, to, 1);
      pendingResize = { from: pendingResize?.from ?? from, to, count: (pendingResize?.count ?? 0) + 1 };
      resizeTimer ??= scheduler.schedule(flushResize, Math.max(0, wait));
    };

    /** `attempts`: the reconnect attempts to report, where it is not `attempt` (a `failed` source's). */
    const transition = (next: SourceState, reason: string, err?: Error, attempts = attempt, waitsForFfmpeg = false) => {
      if (next === state && next !== 'reconnecting' && !waitsForFfmpeg) return;
      flushResize();
      const t: Transition = { source: o.id, state: next, previous: state, reason: redact(reason), at: now(), attempt: attempts };
      const detail = err?.message.split('\n').slice(1).join('\n'); // ffmpeg's last lines
      if (err) t.code = (err as ArgusError).code;
      if (detail) t.detail = redact(detail);
      state = next;
      onTransition?.(t);
    };
    /** Streaming for `healthyResetMs` makes the source healthy: attempts count from 0 again. */
    const resetIfHealthy = (at: number) => {
      if (state === 'streaming' && at - streamingSince >= reconnect.healthyResetMs) attempt = 0;
    };

    /** pts of the next run's first frame (see the rules above). */
    const ptsStart = (): number | (() => number) => {
      if (lastPts === undefined) return live ? () => ((firstFrameAt = clock()), 0) : 0;
      const after = lastPts + period();
      if (!live) return after;
      const since = () => (clock() - firstFrameAt) / 1000;
      // A looped native-rate file's next pass: one frame period on, as its frames are due (its
      // restart, ffmpeg's start-up, is not a gap in the file's time but a delay in delivering
      // frames that were due), plus what its opening moved the timetable on (PlaySchedule.moved:
      // a restart later than 0.5 s is an outage for the rest). Other restarts: the outage shows.
      if (isFile && nextPass) return () => after + (schedule.moved ?? 0) / 1000;
      // A native-rate file counts its frames, 1 / fps apart, across loops and restarts.
      if (isFile) return () => Math.max(after, since());
      // A live source: the time since its first frame where an outage made that later; no more
      // than LIVE_PTS_SLACK_S ahead of it otherwise (pts ahead of the clock, kept so within a
      // run, would otherwise gain that much more at each restart), and never back.
      return () => {
        const t = since();
        return Math.max(Math.min(Math.max(after, t), t + LIVE_PTS_SLACK_S), lastPts! + 1e-3);
      };
    };

    /** What a run learnt of the frames this source calls for (ffmpegSource): restarts start with it. */
    const memo: SourceMemo = { last: o.lastFfmpeg };
    /** A rerun within the start waiting for two stuck ffmpegs (onFfmpegStuck), until that wait ends: the start timeout stops meanwhile. */
    const rerunWaiting = new BehaviorSubject(false);
    /** One ffmpeg run per subscription, from where the source is: files at the next frame not yet delivered. */
    const runOnce = defer(() => {
      rerunWaiting.next(false);
      runSeek = isFile ? nextPosition() : 0;
      runFrames = 0;
      // A restart other than a loop's: the run's frames are due from when its input opens.
      if (!nextPass) schedule.next = undefined;
      schedule.moved = 0;
      const pts = ptsStart();
      nextPass = false;
      // Half a frame early: the frame at `runSeek` is kept even when rounding puts it a hair before.
      const seek = runSeek > 0 ? Math.max(0, runSeek - period() / 2) : undefined;
      const exact = indexedFormat(format);
      return run({
        ...runOptions,
        memo,
        // A rerun within this start waiting for stuck ffmpegs: reported as a restart's wait is (lastGone, `stuck`).
        // Its start timeout counts from the wait's end, as a restart's does (lastGone): it ran
        // during the wait, and a wait longer than startTimeoutMs ended in "no frame within N s of
        // starting", a reconnect, and the restart's own wait, said and counted a second time.
        onFfmpegStuck: (why) => {
          transition('stuck', why, new ArgusError(ErrorCodes.SOURCE_STALLED, `source "${o.id}": ${why}`), attempt, true);
          rerunWaiting.next(true);
          return () => rerunWaiting.next(false);
        },
        // Looping is done here (restart at 0), so the position in the file is always known.
        input: isFile ? { ...o.input, loop: false, seek, seekMargin: seek !== undefined && !exact ? SEEK_MARGIN_S : 0 } : o.input,
        seqStart: nextSeq,
        ptsStart: pts,
        schedule,
        // Live: pts stay near the time since the source's first frame, across restarts.
        ptsClock: isFile ? undefined : () => (clock() - firstFrameAt) / 1000,
        clock,
        onStreamInfo: (info, lb) => {
          opened = true;
          // A file plays at the rate delivered: its own where the configured `fps` is above it.
          if (isFile) fps = info.fps ?? fps;
          else fps ??= info.fps;
          format ??= info.format;
          o.onStreamInfo?.(info, lb);
        },
        onResize: (from, to) => {
          o.onResize?.(from, to);
          resized(from, to);
        },
      });
    });

    /** The watchdog fired (the run is already killed): a stall is reported as such; either way the run errors. */
    const timedOut = (first: boolean) => () => {
      const ms = first ? watchdog.startTimeoutMs : stallMs();
      const reason = first ? `no frame within ${(ms / 1000).toFixed(1)} s of starting` : `no frame for ${(ms / 1000).toFixed(1)} s`;
      if (!first) transition('stalled', reason);
      return throwError(() => new ArgusError(first ? ErrorCodes.SOURCE_TIMEOUT : ErrorCodes.SOURCE_STALLED, `source "${o.id}": ${reason}`));
    };
    /** The start timeout: fires `startTimeoutMs` after the run starts, or after a rerun's wait for stuck ffmpegs ends, never during it. */
    const startDeadline = rerunWaiting.pipe(
      distinctUntilChanged(),
      switchMap((waiting) => (waiting ? NEVER : timer(watchdog.startTimeoutMs, scheduler))),
    );
    /** The start timeout until the first frame; then the stall timeout, sized by the frame rate ffmpeg reported before that frame. */
    const watched: MonoTypeOperatorFunction<Frame> = (frames) =>
      frames.pipe(
        connect((shared) =>
          merge(
            concat(shared.pipe(take(1)), defer(() => shared.pipe(timeout({ each: stallMs(), with: timedOut(false), scheduler })))),
            // Until the first frame, or the run's end or error.
            startDeadline.pipe(takeUntil(shared.pipe(materialize())), mergeMap(timedOut(true))),
          ),
        ),
      );

    const onFrame = (frame: Frame) => {
      const at = clock();
      if (runFrames++ === 0) runFirstPts = frame.pts;
      lastPts = frame.pts;
      nextSeq = frame.seq + 1;
      if (state !== 'streaming') {
        streamingSince = at;
        transition('streaming', resizeRestart && attempt === 0 ? 'frames at the new size' : attempt === 0 ? 'first frame' : `frames again after ${attempt} attempt${attempt > 1 ? 's' : ''}`);
        resizeRestart = false;
      }
      resetIfHealthy(at);
    };

    /** A run completed: a looped file starts over at 0 in the file, a file ends, a live stream has been closed. */
    const atEnd = () => {
      if (isFile && o.input.loop && (runFrames > 0 || runSeek > 0)) {
        played += nextPosition();
        runSeek = runFrames = 0; // the next run starts at nextPosition() = 0
        nextPass = true;
        return of(0);
      }
      if (isFile) {
        transition('ended', 'end of file');
        return EMPTY;
      }
      return throwError(() => new ArgusError(ErrorCodes.SOURCE_EOF, `source "${o.id}": end of stream`));
    };

    /**
     * What the next run of an input read once (a named pipe: readsOnce) waits for, said with its
     * reconnect: a pipe's writer went with the reader that failed (it got EPIPE), and ffmpeg,
     * opening it again, waits in `open` until a writer opens it, the source without a frame and
     * nothing saying why (its stop kills that ffmpeg, SIGKILL, at once).
     */
    const pipeWait = (): string =>
      isFile && memo.readsOnce ? `; the named pipe ${o.input.url.replace(/^file:\/\//i, '')} is opened again, and its next frames come once a writer opens it (its writer before went with the reader that failed)` : '';

    /** A run failed: give up (for good, or after `maxAttempts` in a row), or wait the backoff. */
    const onError = (e: Error) => {
      resetIfHealthy(clock());
      // A missing file or ffmpeg, a file ffmpeg cannot read, or a setting of the source that
      // cannot be used (VAP_ERR_CONFIG: an unreadable tls.ca), will not fix itself. A file
      // that played and then stalled or lost its ffmpeg resumes where it was; live sources
      // (cameras, streams) are always retried.
      const code = (e as ArgusError).code;
      // Frames at the source's size whose picture changed size: started again at once, from the
      // first frame of the new picture (a file's position), unless it did so less than
      // RESIZE_RESTART_MS ago. Not a failure: the attempt count stays.
      const resizeAt = isFile ? (played + nextPosition()) * 1000 : clock();
      if (code === ErrorCodes.SOURCE_RESIZED && resizeAt - resizeRestartAt >= RESIZE_RESTART_MS) {
        resizeRestartAt = resizeAt;
        resizeRestart = true;
        transition('reconnecting', `${firstLine(e)}; restarted at once at the new size`, e);
        return timer(0, scheduler);
      }
      const permanent = code === ErrorCodes.SOURCE_OPEN || code === ErrorCodes.CONFIG || (isFile && !opened && (code === ErrorCodes.SOURCE_EXIT || code === ErrorCodes.SOURCE_PROBE));
      attempt++;
      const max = reconnect.maxAttempts;
      if (permanent || (max > 0 && attempt > max)) {
        // `attempt` counts this run's failure too; the reconnects made before it are one fewer
        // (the first run is no reconnect): `gave up after 2 attempts` reads attempt 2, not 3.
        transition('failed', permanent ? firstLine(e) : `gave up after ${max} attempts: ${firstLine(e)}`, e, attempt - 1);
        return throwError(() => e);
      }
      const delay = backoffDelay(attempt, reconnect, random);
      onReconnect?.();
      transition('reconnecting', `${firstLine(e)}; retry ${attempt} in ${(delay / 1000).toFixed(1)} s${pipeWait()}`, e);
      return timer(delay, scheduler);
    };

    // A run starts once the source's last ffmpeg has exited (FFMPEG_EXIT_WAIT_MS at most: a
    // restart's, or a worker camera's last chain's), and its start timeout counts from then: the
    // wait took up to 2 s of it, and a short `startTimeoutMs` timed out a camera that had had only
    // the rest. (ffmpegSource waits too, for its own reruns; it finds this one gone by then.)
    // One left behind already (stuck in the kernel) and the last not gone either: the source waits
    // for one of them, reported `stuck` (LastFfmpeg.leftBehind), not one more ffmpeg per restart;
    // so for the last alone where a second beside it cannot work (a V4L2 device, a file: exclusive).
    // (The wait is given up at the source's stop: its reminders' timer and its listeners on a stuck
    // ffmpeg, which may never exit, lived on after it.)
    const lastGone = defer(() =>
      memo.last?.ffmpeg
        ? new Observable<never>((waiter) => {
            const stopped = new AbortController();
            lastFfmpegGone(
              memo.last!,
              (why) => {
                // (Told again each minute while the wait lasts: not once the source has stopped.)
                if (!finished) transition('stuck', why, new ArgusError(ErrorCodes.SOURCE_STALLED, `source "${o.id}": ${why}`), attempt, true);
              },
              stopped.signal,
            ).then(
              () => waiter.complete(),
              (e: unknown) => waiter.error(e),
            );
            return () => stopped.abort();
          })
        : EMPTY,
    );
    // (A file's judgement, readsOnce, is ffmpegSource's, by a bounded asynchronous look before its
    // first run, kept in the memo; what it finds wrong fails the start, retried so.)
    transition('starting', 'started');
    return concat(lastGone, runOnce.pipe(live ? watched : identity)).pipe(
      tap(onFrame),
      repeat({ delay: atEnd }),
      // onError keeps the attempt count: retry's own count never resets, or (resetOnSuccess)
      // resets on the first frame, where this one waits for a healthy period.
      retry({ delay: onError }),
      finalize(() => {
        flushResize();
        // The relay's notices counted since their last line (NOTICE_REPEAT_MS): said now, not lost with the source.
        memo.notices?.flush();
        finished = true;
        if (state === 'ended' || state === 'failed') return;
        const downstream = failedBy?.();
        if (downstream) transition('failed', firstLine(downstream), downstream);
        else transition('stopped', 'stopped');
      }),
    );
  });
}
