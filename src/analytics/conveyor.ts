/**
 * Conveyor rules: pure state machines fed with per-frame facts and a time in ms.
 */

import type { LastSighting } from './anchor.js';

/**
 * Moves what a conveyor-defect rule remembers in pixels to a picture scaled by `sx`, `sy` (a
 * source that changed its resolution): the boxes of its alerts of rows with no track id, in place
 * as ByteTracker.rescale moves a new track's sightings (the same float32 products, so that a
 * sighting the tracker hands over with a track still equals the alerted box), and each item's
 * last sighting (where, its pace, its box), as LineCounter.place does. Before, they stayed in the
 * old picture's pixels: an item alerted before its id, confirmed after a camera switched 1080p →
 * 720p, matched no alert and was alerted a second time.
 */
export function rescaleDefects(untracked: Iterable<{ readonly box: Float32Array }>, items: Iterable<LastSighting & { lastBox: Float32Array }>, sx: number, sy: number): void {
  for (const a of untracked) for (let k = 0; k < 4; k++) a.box[k] *= k % 2 === 0 ? sx : sy;
  for (const o of items) {
    o.lx *= sx;
    o.ly *= sy;
    o.vx *= sx;
    o.vy *= sy;
    for (let k = 0; k < 4; k++) o.lastBox[k] *= k % 2 === 0 ? sx : sy;
  }
}

/** Items per minute over a sliding window, and an alarm when the rate stays under a floor. */
export class RateFloor {
  private readonly times: number[] = [];
  private startedAt: number | undefined;
  /** When the rate went under the floor (the time given to `update`), while it is under. */
  belowSince: number | undefined;
  /** True while the "stopped" condition holds (raised once until the rate recovers). */
  stopped = false;

  constructor(
    /** Alarm when fewer than this many items per minute… */
    readonly minPerMinute: number,
    /** …for at least this long, ms. */
    readonly forMs: number,
    /** Window the rate is measured over, ms. Default 60 000. No alarm before one window has passed. */
    readonly windowMs = 60_000,
  ) {}

  /**
   * Records `items` crossings at time t and returns what changed: 'stopped', 'resumed' or
   * nothing. The analyzer gives the observed time (ObservedTime), so a camera's outage neither
   * empties the window nor counts towards `forMs`.
   */
  update(items: number, tMs: number): 'stopped' | 'resumed' | undefined {
    this.startedAt ??= tMs;
    for (let k = 0; k < items; k++) this.times.push(tMs);
    while (this.times.length > 0 && this.times[0] <= tMs - this.windowMs) this.times.shift();
    if (tMs - this.startedAt < this.windowMs) return undefined; // warming up
    const rate = this.ratePerMinute(tMs);
    if (rate < this.minPerMinute) {
      this.belowSince ??= tMs;
      if (!this.stopped && tMs - this.belowSince >= this.forMs) {
        this.stopped = true;
        return 'stopped';
      }
    } else {
      this.belowSince = undefined;
      if (this.stopped) {
        this.stopped = false;
        return 'resumed';
      }
    }
    return undefined;
  }

  ratePerMinute(tMs: number): number {
    const span = Math.min(this.windowMs, tMs - (this.startedAt ?? tMs));
    if (span <= 0) return 0;
    return (this.times.length * 60_000) / span;
  }
}

/** True when at least K of the last N frames showed the condition (a defect class, say). */
export class KOfN {
  private readonly ring: Uint8Array;
  private next = 0;
  private filled = 0;
  private count = 0;

  constructor(
    readonly k: number,
    readonly n: number,
  ) {
    if (!(k >= 1 && n >= k)) throw new RangeError(`K of N needs 1 ≤ K ≤ N, got K=${k}, N=${n}`);
    this.ring = new Uint8Array(n);
  }

  /** Adds one frame's fact; returns true while K of the last N frames had it. */
  push(hit: boolean): boolean {
    if (this.filled === this.n) this.count -= this.ring[this.next];
    else this.filled++;
    this.ring[this.next] = hit ? 1 : 0;
    this.count += hit ? 1 : 0;
    this.next = (this.next + 1) % this.n;
    return this.count >= this.k;
  }

  get hits(): number {
    return this.count;
  }
}
