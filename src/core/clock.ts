const origin = performance.timeOrigin;

/** Wall-clock epoch milliseconds with sub-millisecond precision (monotonic within a process). */
export function now(): number {
  return origin + performance.now();
}

/** Below this the system clock and `now` are taken to agree (`now`'s origin is read to about a millisecond). */
const WALL_STEP_MS = 5;

/**
 * A time of the system's wall clock (epoch ms: ffmpeg's `-use_wallclock_as_timestamps`, a
 * camera's NTP time) on argus's clock, `now`. `now` is monotonic from the process's start, so it
 * departs from the system clock by every step of it since (an NTP step after a boot without a
 * real-time clock, a VM resumed, an operator setting the time): the two are compared as they
 * stand at the call. A departure of more than WALL_STEP_MS is applied.
 */
export function fromWallClock(ms: number): number {
  const d = wallOffset();
  return Math.abs(d) > WALL_STEP_MS ? ms + d : ms;
}

/**
 * `now` minus the system clock. The two are read one after the other: a process descheduled
 * between the reads (a busy machine) saw them apart by as long as it waited, a step of the
 * system clock that never was, and moved a camera's times by it. So `now` is read on both sides
 * of the system clock, and the reading is taken again (up to 3 times: the tightest is kept)
 * while those two are more than a millisecond apart.
 */
function wallOffset(): number {
  let best = Infinity;
  let offset = 0;
  for (let i = 0; i < 3 && best > 1; i++) {
    const before = now();
    const wall = Date.now();
    const spread = now() - before;
    if (spread < best) {
      best = spread;
      offset = before - wall;
    }
  }
  return offset;
}

/**
 * A stall (a gap longer than `STALL_GAP_FACTOR` usual gaps) longer than this is an outage
 * (ObservedTime's `outageMs` for the tracker, zones and lines): counted in full, unlike a
 * shorter stall. A source whose own pace is this slow (`fps: 0.1`) has no outage between its
 * frames.
 */
export const OUTAGE_MS = 10_000;

/** A gap between two frames counts as a stall when it is longer than this and than `STALL_GAP_FACTOR` usual gaps. */
export const STALL_GAP_MIN_MS = 1000;
export const STALL_GAP_FACTOR = 4;

/**
 * Time that counts as evidence, for timeouts that mean "not seen for this long" (a lost track,
 * a zone's exit, a line forgetting a track): it runs with the frames' time, but a gap between
 * two frames that is a stall (longer than `STALL_GAP_MIN_MS` and `STALL_GAP_FACTOR` times the
 * usual gap) counts as one usual gap. While no frame arrives nothing is seen, so a stall is no
 * evidence that an object left: an object missed on the first frame after it has been unseen
 * for one frame, not for the whole stall. Frames dropped on purpose (inference slower than the
 * source) leave gaps of a few frames, which count in full. The usual gap is a moving average of
 * the gaps, a stall counted as at most 4 usual gaps (so a pace that slows down for good, say to
 * a frame every 1.2 s from 30 a second, is the usual one after about 8 frames), and shorter
 * gaps pulling it down faster than longer ones push it up; the first gap counts in full.
 */
export class ObservedTime {
  private lastMs = NaN;
  private observedMs = 0;
  private usualGapMs = NaN;

  /**
   * @param outageMs A stall longer than this (an outage: a camera down, rebooted) counts in full,
   * as evidence: what is in view after it cannot be taken for what was in view before (a newcomer
   * where a person stood 10 minutes earlier inherited its track: no entry, and a dwell alert of
   * 10 minutes). Default: none (the conveyor rate, for which an outage is never a stoppage).
   */
  constructor(private readonly outageMs = Infinity) {}

  /** Whether the gap before the latest frame was an outage (longer than `outageMs`). */
  afterOutage = false;

  /** Advances to the frame at `tMs` (its presentation time) and returns the observed time. A time earlier than the last adds nothing. */
  advance(tMs: number): number {
    const gap = tMs - this.lastMs;
    this.lastMs = tMs;
    const usual = this.usualGapMs;
    // Only a stall can be an outage: a source whose own pace is a frame every 10 s or more
    // (`fps: 0.1`, inference far behind) is not down between its frames, and its first gap,
    // which sets the pace, is none either.
    this.afterOutage = gap > this.outageMs && gap > STALL_GAP_FACTOR * usual;
    if (!(gap > 0)) return this.observedMs;
    if (this.afterOutage) {
      // An outage: counted in full, and not the source's pace.
      this.observedMs += gap;
    } else if (gap > STALL_GAP_MIN_MS && gap > STALL_GAP_FACTOR * usual) {
      this.observedMs += usual;
      // A stall still moves the usual gap, by at most 4 usual gaps: a source that slows down for
      // good (inference falling behind) is learned in a few frames, an isolated stall barely counts.
      this.usualGapMs = usual + (STALL_GAP_FACTOR * usual - usual) / 8;
    } else {
      this.observedMs += gap;
      // Shorter gaps pull it down fast (a first gap of seconds, frames dropped at the start, is
      // forgotten in a few frames), longer ones up slowly.
      this.usualGapMs = usual === usual ? usual + (gap - usual) / (gap < usual ? 2 : 8) : gap;
    }
    return this.observedMs;
  }
}

/**
 * `p`, or a rejection with `reason` once `ms` have passed: a deadline on work that cannot be
 * cancelled (it is left to end by itself; its result is then ignored).
 */
export function withDeadline<T>(p: Promise<T>, ms: number, reason: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(reason)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
