import { ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import { redact } from '../core/redact.js';
import type { ProducedBy } from '../core/frame.js';
import { RunHistogram, SampleWindow } from '../core/stats.js';
import type { SourceState, Transition } from './health.js';

/** A source's counters and health, kept by the pipeline, read by the status line, metrics, API and dashboard. */
export interface SourceStats {
  readonly id: string;
  /** Frames read from ffmpeg. */
  framesIn: number;
  /** Frames processed and emitted. */
  framesOut: number;
  /** Frames dropped: a newer one arrived while inference was busy, or inference failed on it. */
  dropped: number;
  /** Of `dropped`: frames whose inference failed (e.g. an inference worker died during the run). */
  inferenceErrors: number;
  /** End-to-end latency, produced at the source → emitted (core/frame.ts `e2eMs`), ms, recent frames. */
  readonly e2e: SampleWindow;
  /** The pipeline's part: captured (delivered by ffmpeg) → emitted, ms, recent frames. */
  readonly pipeline: SampleWindow;
  /** The same two, over every frame of the run (the end-of-run summary's percentiles). */
  readonly e2eRun: RunHistogram;
  readonly pipelineRun: RunHistogram;
  /** What the latest frame's `produced` stamp was (due, arrival, captured). */
  producedBy?: ProducedBy;
  /** Set when the source ended with an error. */
  error?: Error;
  /** Health: starting, streaming, stalled, reconnecting, failed, ended, stopped. */
  state: SourceState;
  /** Restarts of this source's ffmpeg so far. */
  reconnects: number;
  /**
   * ffmpeg's reports of damaged input (a corrupt packet, a decoding error: stderr-probe
   * `reportsDamage`), those between two frames counted once: about how many times frames came
   * damaged (concealed) or were lost. A live source's count starts at each run's first frame.
   */
  decodeErrors: number;
  /** The latest state change. */
  lastTransition?: Transition;
  /** Input size reported by ffmpeg. */
  width?: number;
  height?: number;
  fps?: number;
}

export function newSourceStats(id: string): SourceStats {
  return { id, framesIn: 0, framesOut: 0, dropped: 0, inferenceErrors: 0, e2e: new SampleWindow(2048), pipeline: new SampleWindow(2048), e2eRun: new RunHistogram(), pipelineRun: new RunHistogram(), state: 'stopped', reconnects: 0, decodeErrors: 0 };
}

/**
 * A source's line of the end-of-run summary (`source summary`): its counters, and latency
 * percentiles over every frame it emitted in the run. (They were those of its latest 2048 frames,
 * the status line's window: a 30 fps camera's last 68 s, so an hour's run with a bad first 59
 * minutes summed up as a good one.)
 */
export function sourceSummary(s: SourceStats): Record<string, unknown> {
  const ms = (v: number) => Math.round(v * 10) / 10; // a bucket's middle: no more digits than it knows
  return {
    source: s.id,
    state: s.state,
    framesIn: s.framesIn,
    framesOut: s.framesOut,
    dropped: s.dropped,
    reconnects: s.reconnects,
    decodeErrors: s.decodeErrors,
    e2eP50: ms(s.e2eRun.percentile(50)),
    e2eP99: ms(s.e2eRun.percentile(99)),
    producedBy: s.producedBy,
    pipelineP50: ms(s.pipelineRun.percentile(50)),
    pipelineP99: ms(s.pipelineRun.percentile(99)),
  };
}

/**
 * A source's state change into its stats: the state, the latest change, and a restart counted.
 * A resolution change reported while the source reconnects (a run's first picture of another
 * size) keeps the state and is not another restart.
 */
export function recordTransition(st: SourceStats, t: Transition): void {
  st.state = t.state;
  st.lastTransition = t;
  if (t.state === 'reconnecting' && t.code !== ErrorCodes.SOURCE_RESIZED) st.reconnects++;
}

/** Frames per second in and out of one source. */
export interface FrameRate {
  fpsIn: number;
  fpsOut: number;
}

/**
 * Frames per second in and out per source, between one `sample` and the next (the status
 * line samples every second, so does the dashboard's rate meter). `t` in milliseconds, any
 * monotonic clock; a source's first sample sets its baseline and reports 0.
 */
export class FrameRates {
  private readonly prev = new Map<string, { in: number; out: number; t: number }>();

  sample(stats: readonly SourceStats[], t: number): Map<string, FrameRate> {
    const out = new Map<string, FrameRate>();
    for (const s of stats) {
      const p = this.prev.get(s.id);
      const dt = p ? (t - p.t) / 1000 : 0;
      out.set(s.id, dt > 0 ? { fpsIn: (s.framesIn - p!.in) / dt, fpsOut: (s.framesOut - p!.out) / dt } : { fpsIn: 0, fpsOut: 0 });
      this.prev.set(s.id, { in: s.framesIn, out: s.framesOut, t });
    }
    // A source no longer listed (removed, or moved to another worker) is forgotten: a worker's
    // cameras come and go for months.
    if (this.prev.size > out.size) for (const id of this.prev.keys()) if (!out.has(id)) this.prev.delete(id);
    return out;
  }
}

/** The most of one of ffmpeg's lines a damage warning quotes. */
const MAX_QUOTED = 300;

/**
 * ffmpeg's line of a damage report as a warning quotes it: redacted, then cut to MAX_QUOTED
 * characters (cut first, a URL's user-info split before its `@` was no longer one to redact, and
 * the password's first characters were quoted).
 */
export function quoteDamage(line: string): string {
  const r = redact(line);
  return r.length > MAX_QUOTED ? `${r.slice(0, MAX_QUOTED)}…` : r;
}

/** The shortest time between two damage warnings of one source, ms. */
export const DAMAGE_WARN_INTERVAL_MS = 60_000;

/**
 * A source's warnings of damaged input (`SourceStats.decodeErrors`): the first report at once,
 * then at most one warning each DAMAGE_WARN_INTERVAL_MS, with the count since the last one, so a
 * camera whose stream is damaged for hours logs a line a minute, not one per frame. Each names
 * the source and its input, is coded VAP_ERR_SOURCE_DAMAGED, and quotes ffmpeg's line (at most
 * MAX_QUOTED characters; the count is all that is kept of the others). `now`: monotonic ms.
 */
export class DamageWarnings {
  private lastAt: number | undefined;
  private unwarned = 0;

  constructor(
    private readonly st: SourceStats,
    private readonly input: string,
    private readonly log: LogFn,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A report of damaged input (counted once between two frames by the source), with ffmpeg's line. */
  report(line: string): void {
    this.st.decodeErrors++;
    this.unwarned++;
    const t = this.now();
    if (this.lastAt !== undefined && t - this.lastAt < DAMAGE_WARN_INTERVAL_MS) return;
    const first = this.lastAt === undefined;
    this.lastAt = t;
    const quoted = quoteDamage(line);
    const since = first ? '' : ` ${this.unwarned} more time${this.unwarned === 1 ? '' : 's'} (${this.st.decodeErrors} in all)`;
    this.log(
      redact(`source "${this.st.id}": ffmpeg reported damaged input in ${this.input}${since}: frames around it may be damaged or lost (counted in the source's decodeErrors; warned at most once a minute); ffmpeg said: ${quoted}`),
      { source: this.st.id, code: ErrorCodes.SOURCE_DAMAGED, decodeErrors: this.st.decodeErrors },
      'warn',
    );
    this.unwarned = 0;
  }
}
