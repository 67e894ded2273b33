import type { Detections } from '../core/detections.js';
import { anchorPoint, sureOrigin, type Anchor } from './anchor.js';
import type { Point } from '../core/polygon.js';
import { LabelTally } from './tally.js';

export interface LineEvent {
  line: string;
  /** `in`: from the right-hand side of from→to to its left-hand side (as seen on screen); `out`: back. */
  direction: 'in' | 'out';
  trackId: number;
  classId: number;
  row: number;
}

export interface LineCounterOptions {
  /** Distance from the line (px) a track must reach on a side before that side counts. Default 10. Raising it stops jitter near the line from double counting, but a track that barely crosses may not count. */
  marginPx: number;
  anchor: Anchor;
  /** Class ids that count; undefined: every class. */
  classIds?: ReadonlySet<number>;
  /**
   * A track not seen for longer than this is forgotten (config default 2000). Shorter: less
   * state, but a track the tracker re-finds after a longer gap learns its side afresh, so a
   * crossing made during the gap is not counted. Longer: crossings across gaps count, and a
   * reused id keeps an old side.
   */
  forgetAfterMs: number;
}

/** What a line counted so far (the run's figures, see SourceAnalyzer.report). */
export interface LineStats {
  /** Crossings so far by class id. */
  readonly countIn: Map<number, number>;
  readonly countOut: Map<number, number>;
  in: number;
  out: number;
  /**
   * Class-filtered lines only: crossings (either direction, same hysteresis and segment test
   * as counted ones) by tracks of other classes, by class, collected while the line has
   * counted nothing.
   */
  seenInstead?: LabelTally;
}

export function lineStats(filtered: boolean): LineStats {
  return { countIn: new Map(), countOut: new Map(), in: 0, out: 0, ...(filtered ? { seenInstead: new LabelTally() } : {}) };
}

interface Side {
  side: -1 | 1;
  /** Observed time (see ObservedTime) of the last sighting: what `forgetAfterMs` counts from. */
  lastSeen: number;
  /** The anchor when the track was last seen beyond the margin (on `side`). */
  x: number;
  y: number;
}

/**
 * Directional line crossing with hysteresis: a track's side changes only once its anchor is
 * more than `marginPx` from the line; a side change is one crossing when the path from the
 * track's last sighting beyond the margin on the other side meets the line within the
 * segment (not where the track left the margin, which on a slanted path lies further on). So a track crosses at most once per direction unless it first leaves the margin
 * on the other side. Only tracked rows (trackerId ≥ 0) count. A track first seen on one side
 * (there at start, or a new id after an id switch) learns its side and has not crossed.
 */
export class LineCounter {
  private readonly side = new Map<number, Side>();
  /** Sides of tracks of other classes (class-filtered lines that have counted nothing yet). */
  private readonly otherSide = new Map<number, Side>();
  private readonly pt: [number, number] = [0, 0];
  /** Time of the frame before the one being processed. */
  private prevFrameMs = -Infinity;
  private lastFrameMs = -Infinity;
  private dx = 0;
  private dy = 0;
  private len = 0;
  /** Where the line is, in the current picture's pixels (see `place`). */
  from: Point;
  to: Point;

  constructor(
    readonly id: string,
    from: Point,
    to: Point,
    readonly options: LineCounterOptions,
    readonly stats: LineStats = lineStats(options.classIds !== undefined),
  ) {
    this.from = from;
    this.to = to;
    this.setEnds(from, to);
  }

  private setEnds(from: Point, to: Point): void {
    const dx = to[0] - from[0];
    const dy = to[1] - from[1];
    const len = Math.hypot(dx, dy);
    if (!(len > 0)) throw new RangeError(`line ${this.id}: from and to are the same point`);
    this.from = from;
    this.to = to;
    this.dx = dx;
    this.dy = dy;
    this.len = len;
  }

  /**
   * Moves the line to `from`→`to` in a picture scaled by `sx`, `sy` from the last one (a source
   * that changed its resolution). The tracks' sides are kept (scaling both axes by positive
   * factors keeps every point on its side), and their last positions are scaled with them.
   */
  place(from: Point, to: Point, sx: number, sy: number): void {
    this.setEnds(from, to);
    for (const sides of [this.side, this.otherSide]) {
      for (const st of sides.values()) {
        st.x *= sx;
        st.y *= sy;
      }
    }
  }

  /** Crossings so far by class id. */
  get countIn(): Map<number, number> {
    return this.stats.countIn;
  }

  get countOut(): Map<number, number> {
    return this.stats.countOut;
  }

  /** Signed distance of (x, y) from the line, px: positive on the left of from→to as drawn on screen (y down). */
  signedDistance(x: number, y: number): number {
    return -(this.dx * (y - this.from[1]) - this.dy * (x - this.from[0])) / this.len;
  }

  private withinSegment(x: number, y: number): boolean {
    const t = ((x - this.from[0]) * this.dx + (y - this.from[1]) * this.dy) / (this.len * this.len);
    return t >= 0 && t <= 1;
  }

  /** Moves track `id` (row `i`) on `sides`; returns the direction it crossed in, or undefined. */
  private step(sides: Map<number, Side>, d: Detections, i: number, id: number, tMs: number): 'in' | 'out' | undefined {
    const { marginPx, anchor } = this.options;
    const [x, y] = anchorPoint(d.xyxy, i, anchor, this.pt);
    const dist = this.signedDistance(x, y);
    let st = sides.get(id);
    const now: -1 | 1 | 0 = dist > marginPx ? 1 : dist < -marginPx ? -1 : 0;
    // Back after missing frames for longer than forgetAfterMs (no frame in between to forget it on): it learns its side afresh.
    if (st && st.lastSeen < this.prevFrameMs && tMs - st.lastSeen > this.options.forgetAfterMs) {
      sides.delete(id);
      st = undefined;
    }
    if (!st) {
      // A track confirmed on this frame was first seen some frames ago: the side it came from
      // is where it was then, so a crossing made while the tracker was still confirming it counts.
      // The first box is trusted only when it is a sure sighting of the same object: about the
      // size of the current one (not a part of it seen from behind an occluder), and the path
      // from there to here crosses the line within its extent.
      const origin = d.trackOrigins?.get(id)?.box;
      let from: -1 | 1 | 0 = 0;
      if (origin) {
        const [ox, oy] = anchorPoint(origin, 0, anchor, this.pt);
        const od = this.signedDistance(ox, oy);
        from = od > marginPx ? 1 : od < -marginPx ? -1 : 0;
        if (!sureOrigin(origin, d.xyxy, i)) from = 0;
        else if (from !== 0 && now !== 0 && from !== now) {
          const k = od / (od - dist); // where the path from origin to now meets the line
          if (!this.withinSegment(ox + (x - ox) * k, oy + (y - oy) * k)) from = 0;
        }
      }
      if (from === 0) {
        if (now !== 0) sides.set(id, { side: now, lastSeen: tMs, x, y });
        return undefined;
      }
      const [ox, oy] = anchorPoint(origin!, 0, anchor, this.pt);
      st = { side: from, lastSeen: tMs, x: ox, y: oy };
      sides.set(id, st);
    }
    st.lastSeen = tMs;
    if (now === 0) return undefined;
    const px = st.x, py = st.y;
    st.x = x;
    st.y = y;
    if (now === st.side) return undefined;
    st.side = now;
    // Where the path from the last sighting beyond the margin on the other side to here meets
    // the line: a crossing there within the segment counts; one past its end went round it.
    const pd = this.signedDistance(px, py);
    const k = pd / (pd - dist);
    if (!this.withinSegment(px + (x - px) * k, py + (y - py) * k)) return undefined;
    return now === 1 ? 'in' : 'out';
  }

  /** `tMs`: the frame's observed time (ObservedTime: a stall counts as one usual gap), which `forgetAfterMs` runs on. */
  update(d: Detections, tMs: number): LineEvent[] {
    const events: LineEvent[] = [];
    const ids = d.trackerId;
    const { classIds } = this.options;
    const stats = this.stats;
    this.prevFrameMs = this.lastFrameMs;
    this.lastFrameMs = tMs;
    if (ids) {
      for (let i = 0; i < d.length; i++) {
        const id = ids[i];
        if (id < 0) continue;
        if (classIds && !classIds.has(d.classId[i])) {
          // A track the line knows (seen with a counted class, not forgotten) under another
          // label: that object mislabelled (tracking.classAware false keeps its id), still seen.
          // Its crossing is counted on its next frame of a counted class, from where it was last
          // seen with one. Before, it was unseen: a car labelled truck for over forgetAfterMs as
          // it crossed was forgotten, learned its side afresh (past the line) and was never counted.
          const known = this.side.get(id);
          if (known && !(known.lastSeen < this.prevFrameMs && tMs - known.lastSeen > this.options.forgetAfterMs)) known.lastSeen = tMs;
          if (stats.seenInstead && stats.in + stats.out === 0 && this.step(this.otherSide, d, i, id, tMs)) stats.seenInstead.add(d.classId[i]);
          continue;
        }
        const direction = this.step(this.side, d, i, id, tMs);
        if (!direction) continue;
        const m = direction === 'in' ? stats.countIn : stats.countOut;
        m.set(d.classId[i], (m.get(d.classId[i]) ?? 0) + 1);
        if (stats[direction]++ === 0 && stats[direction === 'in' ? 'out' : 'in'] === 0) this.otherSide.clear();
        events.push({ line: this.id, direction, trackId: id, classId: d.classId[i], row: i });
      }
    }
    const forget = this.options.forgetAfterMs;
    for (const [id, st] of this.side) if (tMs - st.lastSeen > forget) this.side.delete(id);
    if (this.otherSide.size) for (const [id, st] of this.otherSide) if (tMs - st.lastSeen > forget) this.otherSide.delete(id);
    return events;
  }
}
