/** A source's health states, as published in status messages. */
/**
 * `stuck`: the source waits for an ffmpeg of its own that does not exit after it was stopped
 * (stuck in the kernel: a hung device or network mount), its pid and how long in the reason,
 * told again each STUCK_REPORT_MS while it lasts (ffmpeg-source lastFfmpegGone).
 */
export const SOURCE_STATES = ['starting', 'streaming', 'stalled', 'stuck', 'reconnecting', 'failed', 'ended', 'stopped'] as const;
export type SourceState = (typeof SOURCE_STATES)[number];

export interface Transition {
  source: string;
  state: SourceState;
  previous: SourceState;
  /** Why: 'first frame', 'ffmpeg exited with code 1', 'no frame for 2.0 s', 'end of stream', … */
  reason: string;
  /** Epoch ms. */
  at: number;
  /**
   * Failed attempts in a row since the source was last healthy (streaming for `healthyResetMs`):
   * on `reconnecting` the number of the retry about to be made, on `streaming` the retries it took,
   * on `failed` the retries made before it gave up (`gave up after N attempts`: N; 0 for an error
   * no retry can fix at the first run).
   */
  attempt: number;
  /** Error code and ffmpeg's last lines, when the transition comes from an error. */
  code?: string;
  detail?: string;
}

export interface ReconnectPolicy {
  /** First delay before reconnecting, ms. Default 250. */
  initialDelayMs: number;
  /** Delays double up to this cap, ms. Default 2000. */
  maxDelayMs: number;
  /** ± fraction of random jitter on each delay. Default 0.2. */
  jitter: number;
  /** After this many failed attempts in a row the source is marked failed (others keep running). 0: never. Default 0. */
  maxAttempts: number;
  /** Streaming this long resets the attempt count (and so the delay), ms. Default 30 000. */
  healthyResetMs: number;
}

/** Delay before reconnect attempt `attempt` (1-based): exponential, capped, jittered. `rand` in [0, 1). */
export function backoffDelay(attempt: number, p: ReconnectPolicy, rand: () => number = Math.random): number {
  const base = Math.min(p.maxDelayMs, p.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  const j = 1 + p.jitter * (2 * rand() - 1);
  return Math.max(0, Math.round(base * j));
}
