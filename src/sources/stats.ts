import { ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import { redact } from '../core/redact.js';
import { PRODUCED_BY, type ProducedBy } from '../core/frame.js';
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
  /**
   * End-to-end latency over every frame read, dropped ones included, for the run: an emitted
   * frame's own, and a dropped frame's until the first result of a newer frame of its source
   * (from its `produced` stamp: the time its moment went unseen). `e2eRun` is over emitted frames alone: when
   * inference slows down, few frames come out, each standing for many dropped, and a slow spell
   * weighed in it as those few.
   */
  readonly e2eReadRun: RunHistogram;
  /** The same over the latest frames read (2048, dropped ones included): the status line's and /api/sources' `read` percentiles. */
  readonly e2eRead: SampleWindow;
  /** The frames dropped and not yet seen past by a result of a newer frame (stamp drains it). */
  readonly superseded: SupersededFrames;
  /** What the latest frame's `produced` stamp was (due, arrival, captured). */
  producedBy?: ProducedBy;
  /**
   * What the `produced` stamps of the frames in `e2e` were, and of every frame of the run (as
   * `e2eRun`): the kinds that latency is counted from (producedByMix says it). A camera whose
   * clock is believed for some frames and not others mixes `camera` and `arrival`.
   */
  readonly e2eBy: ProducedByWindow;
  readonly e2eRunBy: Uint32Array;
  /** Set when the source ended with an error. */
  error?: Error;
  /** Health: starting, streaming, stalled, stuck, reconnecting, failed, ended, stopped. */
  state: SourceState;
  /** Reconnects so far: runs started again after the backoff (supervisedSource's onReconnect; not a resolution change restarted at once, nor a looped file's next pass). */
  reconnects: number;
  /**
   * ffmpeg's reports of damaged input (a corrupt packet, a decoding error: stderr-probe
   * `reportsDamage`), those between two frames counted once: about how many times frames came
   * damaged (concealed) or were lost. A live source's count starts at each run's first frame.
   */
  decodeErrors: number;
  /** The latest state change. */
  lastTransition?: Transition;
  /** Starts that waited for a stuck ffmpeg of the source's to exit, a second one not to be left behind (LastFfmpeg.leftBehind): its `stuck` transitions (one a wait, however often it is told again). */
  ffmpegWaits?: number;
  /** Input size reported by ffmpeg. */
  width?: number;
  height?: number;
  fps?: number;
}

export function newSourceStats(id: string): SourceStats {
  const e2e = new SampleWindow(2048);
  return { id, framesIn: 0, framesOut: 0, dropped: 0, inferenceErrors: 0, e2e, pipeline: new SampleWindow(2048), e2eRun: new RunHistogram(), pipelineRun: new RunHistogram(), e2eReadRun: new RunHistogram(), e2eRead: new SampleWindow(2048), superseded: new SupersededFrames(), e2eBy: new ProducedByWindow(e2e.capacity), e2eRunBy: new Uint32Array(PRODUCED_BY.length), state: 'stopped', reconnects: 0, decodeErrors: 0 };
}

/**
 * A source's frames dropped and not yet seen past: their `seq` and `produced` stamps, until a
 * result of a newer frame is emitted (a result of an older one, in the stage when they were
 * dropped, does not show their moment). At most `capacity` entries are held (a stage stuck while
 * a camera goes on): once they are all taken, each entry stands for up to twice as many frames
 * as before (neighbours merged two by two, then the next frames joined to the newest entry, until
 * the next result), at their mean stamp, and is drained once its newest frame is older than a result. Every entry
 * stands for at most as many frames as the others: 18 000 frames of a stage stuck 10 minutes are
 * counted within 0.1 % of their own latencies, an hour's within as much. (The oldest were let go
 * as a count, counted from the newest of them let go and at any next result, the stuck frame's
 * own: frames 10 minutes unseen counted at 2 min 16 s; and each drop moved every entry held.)
 */
export class SupersededFrames {
  // Grown as needed (doubling, up to capacity): a worker's thousand cameras hold 320 bytes each
  // while their stages keep up, not 80 KiB.
  /** Each entry's newest seq. */
  private seqs: Float64Array;
  /** Each entry's mean `produced` stamp. */
  private produced: Float64Array;
  /** How many frames each entry stands for. */
  private weights: Uint32Array;
  private n = 0;
  private frames = 0;
  /** The frames an entry takes (1 until the capacity is reached; doubled at each merge while no result comes, back to 1 at a result). */
  private per = 1;

  constructor(readonly capacity = 4096) {
    if (!(capacity >= 2)) throw new RangeError(`SupersededFrames: capacity ${capacity} is below 2`);
    const size = Math.min(16, capacity);
    this.seqs = new Float64Array(size);
    this.produced = new Float64Array(size);
    this.weights = new Uint32Array(size);
  }

  add(seq: number, produced: number): void {
    this.frames++;
    if (this.join(seq, produced)) return;
    if (this.n === this.seqs.length) {
      if (this.n < this.capacity) this.grow(Math.min(this.capacity, this.n * 2));
      else {
        this.per *= 2;
        this.merge();
        if (this.join(seq, produced)) return;
      }
    }
    this.seqs[this.n] = seq;
    this.produced[this.n] = produced;
    this.weights[this.n++] = 1;
  }

  /** Frames held (those the entries stand for). */
  get count(): number {
    return this.frames;
  }

  /** Joins the frame to the newest entry where it has room (never while `per` is 1). */
  private join(seq: number, produced: number): boolean {
    const last = this.n - 1;
    if (last < 0 || this.weights[last] >= this.per) return false;
    const w = this.weights[last] + 1;
    this.produced[last] += (produced - this.produced[last]) / w;
    this.seqs[last] = Math.max(this.seqs[last], seq);
    this.weights[last] = w;
    return true;
  }

  private grow(size: number): void {
    const seqs = new Float64Array(size);
    const produced = new Float64Array(size);
    const weights = new Uint32Array(size);
    seqs.set(this.seqs);
    produced.set(this.produced);
    weights.set(this.weights);
    this.seqs = seqs;
    this.produced = produced;
    this.weights = weights;
  }

  /** Halves the entries: each pair of neighbours becomes one (once every capacity / 2 entries started). */
  private merge(): void {
    const { seqs, produced, weights } = this;
    let k = 0;
    let i = 0;
    for (; i + 1 < this.n; i += 2, k++) {
      const w = weights[i] + weights[i + 1];
      // The mean of the two, weighed by their frames (epoch ms summed over thousands of frames lose ms).
      produced[k] = produced[i] + ((produced[i + 1] - produced[i]) * weights[i + 1]) / w;
      seqs[k] = Math.max(seqs[i], seqs[i + 1]);
      weights[k] = w;
    }
    if (i < this.n) {
      seqs[k] = seqs[i];
      produced[k] = produced[i];
      weights[k++] = weights[i];
    }
    this.n = k;
  }

  /**
   * The latency, ms, to a result of frame `seq` emitted at `emitted`, of each frame held that is
   * older than it (they are let go); undefined where there is none.
   */
  drain(seq: number, emitted: number): number[] | undefined {
    let out: number[] | undefined;
    let kept = 0;
    for (let i = 0; i < this.n; i++) {
      if (this.seqs[i] < seq) {
        const ms = emitted - this.produced[i];
        const w = this.weights[i];
        out ??= [];
        for (let j = 0; j < w; j++) out.push(ms);
        this.frames -= w;
      } else {
        this.seqs[kept] = this.seqs[i];
        this.produced[kept] = this.produced[i];
        this.weights[kept++] = this.weights[i];
      }
    }
    this.n = kept;
    // Results come again: the frames dropped from now on each have an entry of their own (joined
    // to the stall's, they waited for its newest frame's successor, and in steady overload, where
    // a newer frame is always held, they stayed joined).
    this.per = 1;
    return out;
  }
}

/** The kinds of `produced` stamp of the latest `capacity` frames (beside a SampleWindow of their latencies): counts by PRODUCED_BY index. */
export class ProducedByWindow {
  private readonly ring: Uint8Array;
  private next = 0;
  private filled = 0;
  readonly counts = new Uint32Array(PRODUCED_BY.length);

  constructor(readonly capacity: number) {
    this.ring = new Uint8Array(capacity);
  }

  add(by: ProducedBy): void {
    const k = PRODUCED_BY.indexOf(by);
    if (this.filled === this.capacity) this.counts[this.ring[this.next]]--;
    else this.filled++;
    this.ring[this.next] = k;
    this.counts[k]++;
    this.next = (this.next + 1) % this.capacity;
  }
}

/**
 * What a set of latencies is counted from, by their counts per kind of `produced` stamp
 * (PRODUCED_BY order): the kind where there is one (`camera`), else each kind's share, the
 * largest first (`camera 97%, arrival 3%`; under 1 % as `<1%`); undefined for none. The status
 * line said the latest frame's kind beside percentiles over 2048 frames of any kinds.
 */
export function producedByMix(counts: ArrayLike<number>): string | undefined {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i];
  if (total === 0) return undefined;
  const kinds = PRODUCED_BY.map((by, i) => ({ by, n: counts[i] })).filter((k) => k.n > 0);
  if (kinds.length === 1) return kinds[0].by;
  kinds.sort((a, b) => b.n - a.n);
  const share = (n: number) => {
    const pct = (n / total) * 100;
    return pct < 1 ? '<1' : pct > 99 ? '>99' : Math.round(pct).toString();
  };
  return kinds.map((k) => `${k.by} ${share(k.n)}%`).join(', ');
}

/**
 * A source's drops by reason, as `argus_frames_dropped_total` labels them: `stale` (inference
 * was busy, a newer frame was kept: the price of a source faster than its inference) and
 * `inferenceError` (the frame's inference failed: something is wrong). The status line, the
 * summary and /api/sources said the sum alone, so a source losing frames to a failing model
 * looked like one that was merely overloaded.
 */
export function dropsByReason(s: Pick<SourceStats, 'dropped' | 'inferenceErrors'>): { stale: number; inferenceError: number } {
  return { stale: s.dropped - s.inferenceErrors, inferenceError: s.inferenceErrors };
}

/** The status line's drops: the count, and how many of them were failed inferences where any were. */
export function dropsText(s: Pick<SourceStats, 'dropped' | 'inferenceErrors'>): string {
  const { inferenceError } = dropsByReason(s);
  return inferenceError > 0 ? `${s.dropped} (${inferenceError} inference failed)` : `${s.dropped}`;
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
    // By reason (dropped = stale + inferenceErrors), as /metrics says them.
    stale: dropsByReason(s).stale,
    inferenceErrors: s.inferenceErrors,
    reconnects: s.reconnects,
    decodeErrors: s.decodeErrors,
    e2eP50: ms(s.e2eRun.percentile(50)),
    e2eP99: ms(s.e2eRun.percentile(99)),
    // Over every frame read, dropped ones until the next result (SourceStats.e2eReadRun).
    e2eReadP50: ms(s.e2eReadRun.percentile(50)),
    e2eReadP99: ms(s.e2eReadRun.percentile(99)),
    // The kinds the run's latency percentiles are over (the latest frame's alone where none).
    producedBy: producedByMix(s.e2eRunBy) ?? s.producedBy,
    pipelineP50: ms(s.pipelineRun.percentile(50)),
    pipelineP99: ms(s.pipelineRun.percentile(99)),
    // Starts that waited for a stuck ffmpeg (README, the supervisor): counted, and said where any
    // (the count was kept, and shown nowhere).
    ...(s.ffmpegWaits ? { ffmpegWaits: s.ffmpegWaits } : {}),
  };
}

/**
 * A source's state change into its stats: the state and the latest change. (Its reconnects are
 * counted where they are made: supervisedSource's `onReconnect`.)
 */
export function recordTransition(st: SourceStats, t: Transition): void {
  st.state = t.state;
  st.lastTransition = t;
  // (Once a wait: its `stuck` told again while it lasts is the same wait.)
  if (t.state === 'stuck' && t.previous !== 'stuck') st.ffmpegWaits = (st.ffmpegWaits ?? 0) + 1;
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
