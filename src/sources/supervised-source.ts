import { Observable, type Subscription } from 'rxjs';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
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
 * A source that keeps itself alive: ffmpeg is restarted with exponential backoff and jitter
 * when it exits, when the stream ends (live sources), or when no frame arrives in time (the
 * stall watchdog). Files that end complete. After `maxAttempts` failures in a row the source
 * errors (state `failed`); the caller isolates it from the other sources.
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
    let closed = false;
    const live = o.input.kind !== 'file' || o.input.rate === 'native';
    const watch = o.input.kind !== 'file' || o.input.rate === 'native'; // fast files pause on purpose

    const transition = (next: SourceState, reason: string, err?: ArgusError | Error) => {
      if (next === state && next !== 'reconnecting') return;
      const t: Transition = { source: o.id, state: next, previous: state, reason, at: now(), attempt };
      if (err) {
        t.code = (err as ArgusError).code;
        const lines = err.message.split('\n');
        if (lines.length > 1) t.detail = lines.slice(1).join('\n');
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

    const start = () => {
      if (closed) return;
      lastFrameAt = 0;
      armWatchdog();
      inner = ffmpegSource({
        ...o,
        onStreamInfo: (info, lb) => {
          fps ??= info.fps;
          o.onStreamInfo?.(info, lb);
        },
        onResize: (from, to) => {
          o.onResize?.(from, to);
          o.onTransition?.({ source: o.id, state, previous: state, reason: `resolution changed from ${from.srcWidth}x${from.srcHeight} to ${to.srcWidth}x${to.srcHeight}`, at: now(), attempt, code: ErrorCodes.SOURCE_RESIZED });
        },
      }).subscribe({
        next: (frame) => {
          lastFrameAt = now();
          if (state !== 'streaming') {
            streamingSince = lastFrameAt;
            transition('streaming', attempt === 0 ? 'first frame' : `frames again after ${attempt} attempt${attempt > 1 ? 's' : ''}`);
          }
          if (attempt > 0 && lastFrameAt - streamingSince >= o.reconnect.healthyResetMs) attempt = 0;
          armWatchdog();
          subscriber.next(frame);
        },
        error: (e: Error) => fail(e),
        complete: () => {
          if (!live || (o.input.kind === 'file' && !o.input.loop)) {
            clearTimers();
            transition('ended', 'end of file');
            subscriber.complete();
            return;
          }
          fail(new ArgusError(ErrorCodes.SOURCE_EOF, `source "${o.id}": end of stream`));
        },
      });
    };

    const clearTimers = () => {
      if (watchdog) clearTimeout(watchdog);
      if (retryTimer) clearTimeout(retryTimer);
      watchdog = retryTimer = undefined;
    };

    const fail = (e: Error) => {
      if (closed) return;
      clearTimers();
      inner?.unsubscribe(); // kills ffmpeg; a half-written frame is discarded with it
      inner = undefined;
      // Streaming long enough counts as healthy: start counting attempts again.
      if (state === 'streaming' && now() - streamingSince >= o.reconnect.healthyResetMs) attempt = 0;
      // A missing file or ffmpeg, or a file ffmpeg cannot read, will not fix itself; live
      // sources (cameras, streams) are always retried.
      const code = (e as ArgusError).code;
      const permanent = code === ErrorCodes.SOURCE_OPEN || (o.input.kind === 'file' && (code === ErrorCodes.SOURCE_EXIT || code === ErrorCodes.SOURCE_PROBE));
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
      retryTimer = setTimeout(start, delay);
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
