import { Observable, type Subscription } from 'rxjs';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { redact } from '../core/redact.js';
import type { Frame } from '../core/frame.js';
import { ffmpegSource, type FfmpegSourceOptions } from './ffmpeg-source.js';
import { backoffDelay, type ReconnectPolicy, type SourceState, type Transition } from './health.js';

export interface WatchdogOptions {
  /** No first frame within this long after (re)starting ffmpeg: restart it. Default 15 000 ms. */
  startTimeoutMs: number;
  /** No frame within this many frame periods: the source is stalled and ffmpeg restarted. Default 10. */
  stallFactor: number;
  /** …but never less than this, ms. Default 2000. */
  stallMinMs: number;
}

export interface SupervisedSourceOptions extends FfmpegSourceOptions {
  reconnect: ReconnectPolicy;
  watchdog: WatchdogOptions;
  /** Every state change, with its reason. */
  onTransition?: (t: Transition) => void;
  /** Random source for jitter (tests). */
  random?: () => number;
}

/**
 * Demuxers whose seek lands on the key frame at or before the wanted time (indexed
 * containers); ffmpeg's accurate seek is then frame-exact with no delay. Others (MPEG-TS, raw
 * streams, …) may land after it: they seek earlier by this margin and trim the rest.
 */
const EXACT_SEEK_FORMAT = /^(mov|mp4|m4a|3gp|3g2|mj2|matroska|webm|avi|flv|ivf)(,|$)/;
const SEEK_MARGIN_S = 3;

/**
 * A source that keeps itself alive: ffmpeg is restarted with exponential backoff and jitter
 * when it exits, when the stream ends (live sources), or when no frame arrives in time (the
 * stall watchdog). Files that end complete; looped files start over. After `maxAttempts`
 * failures in a row the source errors (state `failed`); the caller isolates it from the
 * other sources.
 *
 * `seq` and `pts` run on across every restart, strictly increasing, for the whole run:
 * - `seq`: frames read from the source (dropped ones included): the next restart goes on at
 *   the last `seq` + 1.
 * - `pts`, live sources (RTSP, HTTP, V4L2, files at `rate: native`): within one ffmpeg run
 *   `1 / fps` per frame; the first frame after a restart gets
 *   `max(last pts + 1 / fps, monotonic seconds since the source's first frame)`, so the time
 *   an outage lasted shows (a 5 s outage: ~5 s more), measured on a monotonic clock.
 * - `pts`, files at `rate: fast`: the file position played so far: `last pts + 1 / fps`
 *   after a restart or a loop.
 * - Files resume where they were: a restarted file (stall, ffmpeg died or was killed) is
 *   sought to the next frame not yet delivered; a looped file starts over at 0 in the file
 *   at its end (ffmpeg is restarted; `seq`/`pts` go on).
 *
 * States: starting → streaming → stalled → reconnecting → streaming … / failed / ended.
 */
export function supervisedSource(o: SupervisedSourceOptions): Observable<Frame> {
  return new Observable<Frame>((subscriber) => {
    let state: SourceState = 'stopped';
    let attempt = 0;
    let streamingSince = 0;
    let lastFrameAt = 0;
    let inner: Subscription | undefined;
    let watchdog: NodeJS.Timeout | undefined;
    let retryTimer: NodeJS.Timeout | undefined;
    let fps: number | undefined = o.input.fps;
    let format: string | undefined;
    let closed = false;
    const clock = o.clock ?? (() => performance.now());
    const isFile = o.input.kind === 'file';
    const live = !isFile || o.input.rate === 'native';
    const watch = live; // fast files pause on purpose
    // Continuity across ffmpeg runs.
    let nextSeq = o.seqStart ?? 0;
    let lastPts: number | undefined;
    let firstFrameAt = 0; // clock() at the source's first frame
    // Files: where the current ffmpeg run started in the file, its first frame's pts, frames so far.
    let runSeek = 0;
    let runFirstPts = 0;
    let runFrames = 0;
    let opened = false; // ffmpeg reported the file's video stream at least once
    let generation = 0;

    const period = () => (fps ? 1 / fps : 1e-3);
    /** Position in the file of the next frame not yet delivered, seconds. */
    const nextPosition = () => (runFrames > 0 ? runSeek + (lastPts! - runFirstPts) + period() : runSeek);

    const transition = (next: SourceState, reason: string, err?: ArgusError | Error) => {
      if (next === state && next !== 'reconnecting') return;
      const t: Transition = { source: o.id, state: next, previous: state, reason: redact(reason), at: now(), attempt };
      if (err) {
        t.code = (err as ArgusError).code;
        const lines = err.message.split('\n');
        if (lines.length > 1) t.detail = redact(lines.slice(1).join('\n'));
      }
      state = next;
      o.onTransition?.(t);
    };

    const stallMs = () => Math.max(o.watchdog.stallMinMs, fps ? (o.watchdog.stallFactor * 1000) / fps : o.watchdog.stallMinMs);

    const armWatchdog = () => {
      if (!watch) return;
      if (watchdog) clearTimeout(watchdog);
      const first = lastFrameAt === 0;
      const ms = first ? o.watchdog.startTimeoutMs : stallMs();
      watchdog = setTimeout(() => {
        const reason = first ? `no frame within ${(ms / 1000).toFixed(1)} s of starting` : `no frame for ${(ms / 1000).toFixed(1)} s`;
        if (!first) transition('stalled', reason);
        fail(new ArgusError(first ? ErrorCodes.SOURCE_TIMEOUT : ErrorCodes.SOURCE_STALLED, `source "${o.id}": ${reason}`));
      }, ms);
    };

    /** pts of the next run's first frame (see the rules above). */
    const ptsStart = (): number | (() => number) => {
      if (lastPts === undefined) return live ? () => ((firstFrameAt = clock()), 0) : 0;
      const after = lastPts + period();
      return live ? () => Math.max(after, (clock() - firstFrameAt) / 1000) : after;
    };

    /** Starts ffmpeg; files at `seek` seconds into the file. */
    const start = (seek = 0) => {
      if (closed) return;
      const gen = ++generation;
      lastFrameAt = 0;
      runSeek = seek;
      runFrames = 0;
      armWatchdog();
      // Half a frame early: the frame at `seek` is kept even when rounding puts it a hair before.
      const seekAt = seek > 0 ? Math.max(0, seek - period() / 2) : undefined;
      const exact = format !== undefined && EXACT_SEEK_FORMAT.test(format);
      const sub = ffmpegSource({
        ...o,
        // Looping is done here (restart at 0), so the position in the file is always known.
        input: isFile ? { ...o.input, loop: false, seek: seekAt, seekMargin: seekAt !== undefined && !exact ? SEEK_MARGIN_S : 0 } : o.input,
        seqStart: nextSeq,
        ptsStart: ptsStart(),
        clock,
        onStreamInfo: (info, lb) => {
          opened = true;
          fps ??= info.fps;
          format ??= info.format;
          o.onStreamInfo?.(info, lb);
        },
        onResize: (from, to) => {
          o.onResize?.(from, to);
          o.onTransition?.({ source: o.id, state, previous: state, reason: `resolution changed from ${from.srcWidth}x${from.srcHeight} to ${to.srcWidth}x${to.srcHeight}`, at: now(), attempt, code: ErrorCodes.SOURCE_RESIZED });
        },
      }).subscribe({
        next: (frame) => {
          lastFrameAt = clock();
          if (runFrames++ === 0) runFirstPts = frame.pts;
          lastPts = frame.pts;
          nextSeq = frame.seq + 1;
          if (state !== 'streaming') {
            streamingSince = lastFrameAt;
            transition('streaming', attempt === 0 ? 'first frame' : `frames again after ${attempt} attempt${attempt > 1 ? 's' : ''}`);
          }
          if (attempt > 0 && lastFrameAt - streamingSince >= o.reconnect.healthyResetMs) attempt = 0;
          armWatchdog();
          subscriber.next(frame);
        },
        error: (e: Error) => {
          if (gen === generation) fail(e);
        },
        complete: () => {
          if (gen !== generation) return;
          if (isFile && o.input.loop && (runFrames > 0 || seek > 0)) {
            // End of a looped file: start over at 0 in the file; seq and pts go on.
            inner = undefined;
            start(0);
            return;
          }
          if (isFile) {
            clearTimers();
            transition('ended', 'end of file');
            subscriber.complete();
            return;
          }
          fail(new ArgusError(ErrorCodes.SOURCE_EOF, `source "${o.id}": end of stream`));
        },
      });
      // An error delivered during subscribe (spawn threw) has already started the next attempt.
      if (gen === generation) inner = sub;
    };

    const clearTimers = () => {
      if (watchdog) clearTimeout(watchdog);
      if (retryTimer) clearTimeout(retryTimer);
      watchdog = retryTimer = undefined;
    };

    const fail = (e: Error) => {
      if (closed) return;
      generation++; // whatever the current run still reports is stale now
      clearTimers();
      inner?.unsubscribe(); // kills ffmpeg; a half-written frame is discarded with it
      inner = undefined;
      // Streaming long enough counts as healthy: start counting attempts again.
      if (state === 'streaming' && clock() - streamingSince >= o.reconnect.healthyResetMs) attempt = 0;
      // A missing file or ffmpeg, or a file ffmpeg cannot read, will not fix itself. A file
      // that played and then stalled or lost its ffmpeg resumes where it was; live sources
      // (cameras, streams) are always retried.
      const code = (e as ArgusError).code;
      const permanent = code === ErrorCodes.SOURCE_OPEN || (isFile && !opened && (code === ErrorCodes.SOURCE_EXIT || code === ErrorCodes.SOURCE_PROBE));
      attempt++;
      const max = o.reconnect.maxAttempts;
      if (permanent || (max > 0 && attempt > max)) {
        transition('failed', permanent ? e.message.split('\n')[0] : `gave up after ${max} attempts: ${e.message.split('\n')[0]}`, e);
        closed = true;
        subscriber.error(e);
        return;
      }
      const delay = backoffDelay(attempt, o.reconnect, o.random);
      transition('reconnecting', `${e.message.split('\n')[0]}; retry ${attempt} in ${(delay / 1000).toFixed(1)} s`, e);
      const at = isFile ? nextPosition() : 0;
      retryTimer = setTimeout(() => start(at), delay);
    };

    transition('starting', 'started');
    start();
    return () => {
      closed = true;
      clearTimers();
      inner?.unsubscribe();
      if (state !== 'ended' && state !== 'failed') {
        const t: Transition = { source: o.id, state: 'stopped', previous: state, reason: 'stopped', at: now(), attempt };
        state = 'stopped';
        o.onTransition?.(t);
      }
    };
  });
}
