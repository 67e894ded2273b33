import type { Detections, TrackOrigin } from '../core/detections.js';
import { anchorPoint, movedWhole, noteSighting, sureOrigin, wayDistance, type Anchor } from './anchor.js';
import type { Point } from '../core/polygon.js';
import { LabelTally } from './tally.js';

export interface LineEvent {
  line: string;
  /** `in`: from the right-hand side of from→to to its left-hand side (as seen on screen); `out`: back. */
  direction: 'in' | 'out';
  trackId: number;
  classId: number;
  /** The track's row on this frame; −1: a crossing of a track forgotten on this frame (LineCounter.drop), which the frame does not show. */
  row: number;
  /**
   * The id the object had before the tracker lost it at the line and found it again past it
   * under `trackId` (an id switch, see LineCounter: a hand-over); absent otherwise.
   */
  previousTrackId?: number;
  /**
   * A crossing seen among a new track's earlier sightings (the tracker's, before it confirmed the
   * track: its first sighting past the line came before the frame that confirmed it), raised on
   * that frame: when it crossed, ms (frame time), placed where the way between the sightings either
   * side meets the line, at an even pace. Absent otherwise (the crossing is on its own frame).
   */
  atMs?: number;
}

/**
 * A line's margin without `marginPx`, as a share of the picture's smaller side: 10 px at 480
 * lines, 7.5 at 360, 22.5 at 1080, 45 at 2160. It was 10 px whatever the picture: the same
 * view at 4K, its objects and their jitter 4.5 times larger than at 480 lines, had a person
 * standing on a line (each box edge ±36 px) counted 9 times in and 9 out in 8 s; at 480 lines,
 * none. Relative to the picture, the same view counts the same at any resolution.
 */
export const LINE_MARGIN_OF_SIDE = 10 / 480;

/**
 * The least default margin, px of the first picture: below 480 lines the share alone was 9 px at
 * 432 and 7.5 at 360, less than the 10 px every line had before, and on the person clip (432
 * lines) a level line through the middle of standing people counted two more in/out pairs of
 * jitter than at 10 px.
 */
export const LINE_MARGIN_MIN_PX = 10;

export interface LineCounterOptions {
  /** Distance from the line (px) a track must reach on a side before that side counts (config default: LINE_MARGIN_OF_SIDE of the picture's smaller side). Raising it stops jitter near the line from double counting, but a track that barely crosses may not count. */
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

/**
 * How long frames under other labels keep a track a class-filtered line knows (see
 * LineCounter.update) after its last frame of a counted class, ms (or its `forgetAfterMs`, if
 * longer). Past it, such frames do not see it: it is forgotten `forgetAfterMs` later, as an
 * unseen track. A car the detector calls a truck for a few seconds as it crosses is counted; a
 * pedestrian called a car on one frame on each side of a car line, minutes apart, is not.
 */
export const OFF_CLASS_HOLD_MS = 10_000;

interface Side {
  side: -1 | 1;
  /** Observed time (see ObservedTime) of the last sighting: what `forgetAfterMs` counts from. */
  lastSeen: number;
  /** Observed time of the last sighting with a label of this map (a counted class, for `side`): what OFF_CLASS_HOLD_MS counts from. */
  lastLabelled: number;
  /** The anchor when the track was last seen beyond the margin (on `side`). */
  x: number;
  y: number;
  /** The box (xyxy) whose anchor `x`, `y` is: a side change must move it, not reshape it (LineCounter.moved). */
  box: Float32Array;
  /** The anchor at its last sighting (beyond the margin or not), its frame time, and its pace there (px/ms): where an id switch's new id may be found (handOver). */
  lx: number;
  ly: number;
  lastFrame: number;
  vx: number;
  vy: number;
  /** The box at its last sighting (xyxy). */
  lastBox: Float32Array;
  /** The id this state was handed over from (handOver), until the crossing it makes; else −1. */
  was: number;
  /**
   * When its way (from sighting to sighting, frame time) last met the line; NaN if it has not. A
   * track lost past the line within the margin and handed to a new id further on crossed then
   * (crossingTime).
   */
  metAt: number;
  /** While `was` is set: when its crossing was made (settle's crossingTime; an adopted track's, where its way last met the line), frame time; also while `pending`, where the way of one adopted with it last met the line; else NaN. */
  wasAt: number;
  /**
   * A lost track handed over to this new id (handOver) whose crossing waits until the new id
   * shows which way it goes (LineCounter.settle): its state and id; else undefined and −1.
   */
  pending: Side | undefined;
  pendingId: number;
  /** While pending: the frame time it began, and the least and the most the new id's anchor has been from the line on its side since its first sure sighting, px. */
  pendingSince: number;
  /** While pending: when its crossing was made, were it to count (crossingTime), frame time. */
  pendingAt: number;
  nearest: number;
  furthest: number;
  /** The class id of its last sighting of a counted class (a crossing it makes once gone is counted under it: LineCounter.gone). */
  classId: number;
  /**
   * The new id a lost track was taken for on its side of the line (handOver, not handed over:
   * nothing to cross), while it is kept on the line; else −1. Were its own id found again
   * while that new id is unseen, on that id's way (sameWay), it is that object: it goes on with
   * the new id's state.
   */
  claimedBy: number;
  /**
   * While claimed: whether the new id that claimed it was first seen on its way (sameWay), where
   * it would have been. One first seen beside its way (within a box's size: handOver) may be
   * another object that came into view as it was lost: a claim it made holds only while it may
   * be the object the tracker finds again (see handOver).
   */
  claimOnWay: boolean;
  /** A hand-over settled (settle) whose crossing waits for the new id to leave the margin past the line: made on its next side change, or counted if it is forgotten first (drop). */
  owed: boolean;
}

/**
 * How long a lost track handed over to a new id that has gone neither away from the line nor
 * back towards it (by the margin) waits before its crossing counts, ms (frame time): an
 * object that stopped just past the line.
 */
export const HANDOVER_SETTLE_MS = 1000;

/**
 * How far a box's shape (height over width) may change, as a ratio, before a side change it
 * makes must have moved the box whole (LineCounter.moved): a person's box 160 px tall whose legs
 * are hidden is 100 px tall, 1.6 times flatter; a walker's width swings by about a fifth with
 * the gait.
 */
const RESHAPED_RATIO = 4 / 3;

/**
 * How near the picture's border (a share of its smaller side) a box's edge must be for
 * LineCounter.moved to take it as cut off there: 9 px at 432 lines. It was the border itself: a
 * person coming into a 768x432 picture from its bottom, the box's bottom at 431 then 424, was
 * taken for a reshaped box as it crossed, and counted 0.4 s later.
 */
const BORDER_SLACK_OF_SIDE = LINE_MARGIN_OF_SIDE;

/**
 * When a way from a point `ad` px from a line (signed) at `aMs` to one `bd` px from it at `bMs`
 * met the line, at an even pace between the two; NaN where both are on one side.
 */
function metLineAt(aMs: number, ad: number, bMs: number, bd: number): number {
  return ad !== bd && (ad < 0) !== (bd < 0) ? aMs + ((bMs - aMs) * ad) / (ad - bd) : NaN;
}

/**
 * Whether (`x`, `y`) at `tMs` (frame time) is on the way track `o` was going (wayDistance) within
 * its width (the smaller side of its last box): where that object would be, not beside it. A
 * lost track's own id, found again while the new id that claimed it (LineCounter.release) is
 * missed on that frame, is that id's object only there. Before, wherever it was: a person who
 * stood before a door line, hidden while another came up beside them and walked through it,
 * found again on the one frame the detector missed the other, took the other's state: counted
 * out where they stood (or, the other still in the band, the other's crossing was lost).
 */
function sameWay(o: Side, tMs: number, x: number, y: number): boolean {
  const width = Math.min(o.lastBox[2] - o.lastBox[0], o.lastBox[3] - o.lastBox[1]);
  return wayDistance(o, tMs, x, y) <= width;
}

function newSide(side: -1 | 1, tMs: number, x: number, y: number, box: ArrayLike<number>, frameMs: number, classId: number): Side {
  return { side, lastSeen: tMs, lastLabelled: tMs, x, y, box: Float32Array.from(box), lx: x, ly: y, lastFrame: frameMs, vx: NaN, vy: NaN, lastBox: Float32Array.from(box), metAt: NaN, was: -1, wasAt: NaN, pending: undefined, pendingId: -1, pendingSince: 0, pendingAt: NaN, nearest: 0, furthest: 0, classId, claimedBy: -1, claimOnWay: false, owed: false };
}

/**
 * Directional line crossing with hysteresis: a track's side changes only once its anchor is
 * more than `marginPx` from the line; a side change is one crossing when the path from the
 * track's last sighting beyond the margin on the other side meets the line within the
 * segment (not where the track left the margin, which on a slanted path lies further on). So a track crosses at most once per direction unless it first leaves the margin
 * on the other side, and only when its box moved there (not reshaped: `moved`). Only tracked
 * rows (trackerId ≥ 0) count. A track first seen on one side (there at start) learns its side
 * and has not crossed, unless it is a new id for an object the tracker lost just before on the
 * other side (an id switch at the line: `handOver`), whose crossing it makes once it shows that
 * it goes on from the line (`settle`).
 */
export class LineCounter {
  private readonly side = new Map<number, Side>();
  /** Sides of tracks of other classes (class-filtered lines that have counted nothing yet). */
  private readonly otherSide = new Map<number, Side>();
  private readonly pt: [number, number] = [0, 0];
  /** Time of the frame before the one being processed. */
  private prevFrameMs = -Infinity;
  private lastFrameMs = -Infinity;
  /** The old id of the track whose crossing `step` last returned, when it was handed over (handOver); else −1. */
  private handedFrom = -1;
  /** Whether the new id handOver last found a track for was first seen on that track's way (sameWay). */
  private handedOnWay = false;
  /**
   * Crossings `step` found among a new track's earlier sightings before the one it returns (a
   * person scored low who went through the line and back before the track started), in order.
   */
  private readonly earlier: { direction: 'in' | 'out'; atMs: number }[] = [];
  /**
   * The ids of lost tracks whose hand-over to a new id is pending (settle) or owed, each with when
   * it was last handed (observed time): were one found again before its crossing is counted, it
   * is not lost (foundAgain). Pruned once no pending one can be left (update): one owed for longer
   * (a new id standing in the band past the line) stands.
   */
  private readonly handedAway = new Map<number, number>();
  /** Crossings of tracks forgotten (drop) since update last raised them; `other`: of `otherSide`. */
  private readonly gone: { other: boolean; direction: 'in' | 'out'; trackId: number; classId: number; previousTrackId: number; atMs: number }[] = [];
  /** When the crossing `step` last returned was made, when its first sighting past the line was an earlier one (LineEvent.atMs); else NaN. */
  private crossedAt = NaN;
  /** Frame time (update's `frameMs`) of the frame before the one being processed. */
  private prevFrameTime = -Infinity;
  private lastFrameTime = -Infinity;
  private dx = 0;
  private dy = 0;
  private len = 0;
  /** The hysteresis margin in the current picture's pixels (options.marginPx, scaled by `place`). */
  marginPx: number;
  /** Where the line is, in the current picture's pixels (see `place`). */
  from: Point;
  to: Point;

  constructor(
    readonly id: string,
    from: Point,
    to: Point,
    readonly options: LineCounterOptions,
    readonly stats: LineStats = lineStats(options.classIds !== undefined),
    /** The picture's size, in the line's pixels: a box that reaches its border was cut off there (see `originSide`). */
    private frame?: { width: number; height: number },
  ) {
    this.from = from;
    this.to = to;
    this.marginPx = options.marginPx;
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
   * `marginPx`: the margin in the new picture's pixels.
   */
  place(from: Point, to: Point, sx: number, sy: number, frame?: { width: number; height: number }, marginPx = this.marginPx): void {
    const ratio = this.marginPx > 0 ? marginPx / this.marginPx : 1;
    this.setEnds(from, to);
    this.frame = frame;
    this.marginPx = marginPx;
    const scale = (st: Side) => {
      st.x *= sx;
      st.y *= sy;
      st.lx *= sx;
      st.ly *= sy;
      st.vx *= sx;
      st.vy *= sy;
      for (let k = 0; k < 4; k++) {
        st.box[k] *= k % 2 === 0 ? sx : sy;
        st.lastBox[k] *= k % 2 === 0 ? sx : sy;
      }
    };
    for (const sides of [this.side, this.otherSide]) {
      for (const st of sides.values()) {
        scale(st);
        if (!st.pending) continue;
        scale(st.pending);
        st.nearest *= ratio;
        st.furthest *= ratio;
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

  /** Moves track `id` (row `i`) on `sides`; returns the direction it crossed in, or undefined. Sets `handedFrom`. */
  private step(sides: Map<number, Side>, d: Detections, i: number, id: number, tMs: number, frameMs: number): 'in' | 'out' | undefined {
    const { anchor } = this.options;
    const marginPx = this.marginPx;
    const [x, y] = anchorPoint(d.xyxy, i, anchor, this.pt);
    const dist = this.signedDistance(x, y);
    let st = sides.get(id);
    /** A lost track this new id took over within the margin on this frame (its way so far is placed below). */
    let adoptedNow = false;
    const now: -1 | 1 | 0 = dist > marginPx ? 1 : dist < -marginPx ? -1 : 0;
    this.handedFrom = -1;
    this.crossedAt = NaN;
    this.earlier.length = 0;
    // Back after missing frames for longer than forgetAfterMs (no frame in between to forget it on): it learns its side afresh.
    if (st && st.lastSeen < this.prevFrameMs && tMs - st.lastSeen > this.options.forgetAfterMs) {
      this.drop(sides, id, st);
      st = undefined;
    }
    if (st && st.claimedBy >= 0) {
      // Found again after a new id was taken for it on its side (handOver, unused): with that id
      // on this frame too, it is another object, and goes on from its own state; else, found on
      // that id's way (sameWay), it is that object, and goes on from that id's state (which may
      // have crossed since). That id forgotten, its own state goes on: before, it was dropped as
      // well, and a person kept by labels a class-filtered line does not count (OFF_CLASS_HOLD_MS)
      // while that id was forgotten learned their side afresh past the line and was not counted.
      const by = st.claimedBy;
      st.claimedBy = -1;
      if (!d.trackerId!.includes(by)) {
        const taken = sides.get(by);
        if (taken && sameWay(taken, frameMs, x, y)) {
          sides.delete(by);
          sides.set(id, taken);
          this.reclaim(sides, by, id);
          st = taken;
        }
      }
    }
    // Under a label a class-filtered line counts only (otherSide: not where its hand-over is).
    if (!st && sides === this.side && this.handedAway.size !== 0 && this.handedAway.has(id)) st = this.foundAgain(sides, id, dist, tMs);
    if (!st) {
      // A track confirmed on this frame was first seen some frames ago: the side it came from
      // is where it was then, so a crossing made while the tracker was still confirming it counts.
      // That is the first of its earlier sightings that is beyond the margin and sure (see
      // originSide); the path from there to here must cross the line within its extent.
      const origin = d.trackOrigins?.get(id);
      let from: -1 | 1 | 0 = 0;
      let ox = 0, oy = 0;
      let fromBox: Float32Array | undefined;
      let fromMs = frameMs;
      /** Its last sure sighting beyond the margin on side `from` (see below). */
      let lastX = 0, lastY = 0, lastMs = frameMs;
      let lastBox: Float32Array | undefined;
      let handed: Side | undefined;
      let handedId = -1;
      let adopted: Side | undefined;
      let nearest = 0, furthest = 0, firstMs = 0, handAt = NaN;
      if (origin) {
        // The tracker's times of its sightings in this counter's frame time: the last one was the
        // previous frame (a track being confirmed is matched on every frame). They differ once a
        // source's timestamps went back (the tracker runs on, shifted). Went back on this very
        // frame, the tracker took it as no time since the previous one: the last sighting is as of
        // this frame's time (as ZoneMonitor reads them). Before, a crossing among them was raised
        // with an atPts of the old timeline, later than its own frame's pts.
        const all: NonNullable<TrackOrigin['before']> = origin.before ?? [origin];
        const shift = Number.isFinite(this.prevFrameTime) ? all[all.length - 1].ms - Math.min(this.prevFrameTime, frameMs) : 0;
        // Only those under a label the line counts (as update judges a track's crossing from where
        // it was last seen with one; tracking.classAware false links sightings whatever their
        // labels), but for what a class-filtered line saw instead (otherSide). Before, a person
        // who walked through a car line scored low, then labelled car past it, was counted a car.
        const classIds = sides === this.side ? this.options.classIds : undefined;
        const seenBefore = classIds && all.some((s) => s.classId !== undefined && !classIds.has(s.classId)) ? all.filter((s) => s.classId === undefined || classIds.has(s.classId)) : all;
        let sure = 0;
        while (sure < seenBefore.length && (from = this.originSide(seenBefore[sure].box, d.xyxy, i)) === 0) sure++;
        if (from !== 0) {
          [ox, oy] = anchorPoint(seenBefore[sure].box, 0, anchor, this.pt);
          fromBox = seenBefore[sure].box;
          fromMs = seenBefore[sure].ms - shift;
          // The path runs on through its later sure sightings beyond the margin, one to the next,
          // as it does frame to frame once tracked: a side change between two of them off the
          // segment went round its end (the side is learnt afresh there); one on it is a crossing.
          // Before, the path ran straight from the first to the confirmed one: with the tracker's
          // sightings before the track (a second or more), a person scored low who walked round
          // the end of a short door line was counted crossing it.
          // Where it was last beyond the margin on its side (the last of those sightings before a
          // crossing, or the last of them all): the crossing is judged from there, as frame to
          // frame. Before, from the first sighting of that run: a person scored low walking along
          // a short door line (from far off its end) and then through the door was judged on the
          // straight way from far off the end, round it, and the crossing was lost.
          // A crossing between two of them that more sightings follow is counted (`earlier`) once
          // the next one is found, or a side change round the line's end; the last is left to the
          // path from its last sighting before it (below). Before, the sightings stopped at the
          // first crossing: a person scored low who went through a door line and back before their
          // track started, confirmed where they came from, was counted neither in nor out.
          let lx = ox, ly = oy, lBox = fromBox!, lMs = fromMs, crossed = false;
          let cx = 0, cy = 0, cBox = lBox, cMs = lMs;
          // When the last crossing among them was made: where the way between the sightings either
          // side meets the line, at an even pace (LineEvent.atMs). Before, such a crossing was raised
          // on the confirming frame with nothing to say it was made up to a second or more before.
          let crossMs = NaN;
          for (let k = sure + 1; k < seenBefore.length; k++) {
            const side = this.originSide(seenBefore[k].box, d.xyxy, i);
            if (side === 0) continue;
            const [bx, by] = anchorPoint(seenBefore[k].box, 0, anchor, this.pt);
            if (side !== from) {
              const ld = this.signedDistance(lx, ly), bd = this.signedDistance(bx, by);
              const t = ld / (ld - bd);
              const through = this.withinSegment(lx + (bx - lx) * t, ly + (by - ly) * t);
              // Reshaped across the line, not moved (see moved): still on its side, as when tracked.
              if (through && !this.moved(lBox, seenBefore[k].box, 0)) continue;
              if (crossed) this.earlier.push({ direction: from === 1 ? 'in' : 'out', atMs: crossMs });
              crossed = through;
              if (through) {
                crossMs = lMs + (seenBefore[k].ms - shift - lMs) * t;
                // Where it was last on the side it came from: the last crossing is judged from there.
                cx = lx;
                cy = ly;
                cBox = lBox;
                cMs = lMs;
                from = side;
                lx = bx;
                ly = by;
                lBox = seenBefore[k].box;
                lMs = seenBefore[k].ms - shift;
                continue;
              }
              from = side;
              ox = bx;
              oy = by;
              fromBox = seenBefore[k].box;
              fromMs = seenBefore[k].ms - shift;
            }
            lx = bx;
            ly = by;
            lBox = seenBefore[k].box;
            lMs = seenBefore[k].ms - shift;
          }
          if (crossed && now === -from && this.moved(lBox, d.xyxy, i)) {
            // Back across the line after its last crossing among them: that one counts now, and
            // the way from its last sighting to here is judged as any.
            this.earlier.push({ direction: from === 1 ? 'in' : 'out', atMs: crossMs });
            crossed = false;
          }
          if (crossed) {
            // Its crossing is judged from its last sighting on the side it came from (below); it was
            // seen past the line before this frame, at crossMs.
            this.crossedAt = crossMs;
            from = -from as -1 | 1;
            lx = cx;
            ly = cy;
            lBox = cBox;
            lMs = cMs;
          }
          if (now !== 0 && from !== now && !crossed) {
            const ld = this.signedDistance(lx, ly);
            const k = ld / (ld - dist); // where the path from there to now meets the line
            if (!this.withinSegment(lx + (x - lx) * k, ly + (y - ly) * k)) from = 0;
          }
          lastX = lx;
          lastY = ly;
          lastBox = lBox;
          lastMs = lMs;
        }
        // A new id first seen on one side may be the object of a track the tracker lost just
        // before (an id switch): one lost on the other side goes on under it (a crossing at the
        // line), unless it came from across the line while being confirmed (counted as such) or
        // has come back towards the line since (by more than the margin: another object, from
        // that side). Either way that track is taken (handOver): one lost on this side, or whose
        // crossing this id made, is not handed to a later id.
        const first = from !== 0 ? from : now;
        if (first !== 0) {
          const crossed = now === -first;
          const adopt = !crossed && (from === 0 || first * (dist - this.signedDistance(ox, oy)) >= -marginPx);
          firstMs = origin.ms - shift;
          const old = from !== 0 ? this.handOver(sides, d, first, adopt, ox, oy, fromBox!, firstMs) : this.handOver(sides, d, first, adopt, x, y, d.xyxy.subarray(i * 4, i * 4 + 4), firstMs);
          if (old && adopt && old.side === -first) {
            // Its crossing waits until this id shows which way it goes (settle): the way it went
            // since its first sure sighting on this side, so far.
            handed = old;
            // One that had itself taken over a track lost before it within the margin (adopted)
            // and met the line there: the crossing is that track's, made where its way last met
            // the line. Before, it was the second id's, placed at its last sighting (past the line,
            // within the margin), from where the way to this id does not meet the line.
            handedId = old.was >= 0 ? old.was : this.handedFrom;
            const [ex, ey, endMs] = from !== 0 ? [ox, oy, fromMs] : [x, y, frameMs];
            handAt = this.wayAcross(old, seenBefore, shift, d, i, ex, ey, endMs);
            if (Number.isNaN(handAt)) handAt = old.was >= 0 && !Number.isNaN(old.wasAt) ? old.wasAt : this.crossingTime(old, ex, ey, endMs);
            nearest = furthest = first * dist;
          } else if (old && adopt && old.pending && old.side === first) {
            // A new id lost on this side while it was still deciding a hand-over (settle): that
            // lost track goes on under this id, the way it went so far with it. Before, it went
            // with the lost id: a person found past the line under a second new id, on their way
            // from it, was not counted.
            handed = old.pending;
            handedId = old.pendingId;
            handAt = old.wasAt > old.pendingAt ? old.wasAt : old.pendingAt;
            nearest = Math.min(old.nearest, first * dist);
            furthest = Math.max(old.furthest, first * dist);
          }
          if (old) this.release(sides, old, this.handedFrom, id, handed !== undefined);
          if (handed && from !== 0) {
            for (let k = sure; k < seenBefore.length; k++) {
              const [bx, by] = anchorPoint(seenBefore[k].box, 0, anchor, this.pt);
              const s = first * this.signedDistance(bx, by);
              if (s < nearest) nearest = s;
              if (s > furthest) furthest = s;
            }
          }
          this.handedFrom = -1;
        } else {
          // Confirmed within the margin, never beyond it before: a track lost on either side goes
          // on under it (its side and where it was beyond the margin there), and its crossing counts
          // when the new id leaves the margin on the other side. Before, it learned its side there:
          // one whose label changed within the band (classAware) was never counted.
          adopted = this.handOver(sides, d, 0, true, x, y, d.xyxy.subarray(i * 4, i * 4 + 4), origin.ms - shift);
          if (adopted) {
            // Where its way, from the old id's last sighting through the new id's, has met the line
            // so far (on later frames, below); where it did not, where it last met it before (the
            // old id's own adoption). The id before the crossing stays the one it had then.
            const at = this.wayAcross(adopted, seenBefore, shift, d, i, x, y, frameMs);
            if (adopted.was < 0) adopted.was = this.handedFrom;
            if (!Number.isNaN(at)) adopted.wasAt = adopted.metAt = at;
            // A hand-over the old id was still deciding (settle) goes on under this id, its wait
            // from this id's first sighting: the time the old id spent unseen shows nothing. Its
            // time, if it counts, is where the way last met the line (settle). Before, the old id's
            // wait went on (settled on this id's first frame) and its crossing was said to have
            // been made when the old id's way met the line, even when this id was seen back before
            // the line since.
            if (adopted.pending) {
              adopted.pendingSince = origin.ms - shift;
              this.handedAway.set(adopted.pendingId, tMs);
            }
            adoptedNow = true;
            this.release(sides, adopted, this.handedFrom, id, true);
            adopted.claimedBy = -1;
            sides.set(id, adopted);
          }
          this.handedFrom = -1;
        }
      }
      if (adopted) st = adopted;
      else if (from === 0) {
        if (now === 0) return undefined;
        st = newSide(now, tMs, x, y, d.xyxy.subarray(i * 4, i * 4 + 4), frameMs, d.classId[i]);
        sides.set(id, st);
        if (!handed) return undefined;
      } else {
        st = newSide(from, tMs, lastX, lastY, lastBox!, lastMs, d.classId[i]);
        sides.set(id, st);
      }
      if (handed) {
        st.pending = handed;
        st.pendingId = handedId;
        this.handedAway.set(handedId, tMs);
        st.pendingSince = firstMs;
        st.pendingAt = handAt;
        st.nearest = nearest;
        st.furthest = furthest;
      }
    }
    if (!adoptedNow && Number.isFinite(st.lastFrame) && st.lastFrame < frameMs) {
      // Where its way met the line (metAt), if it did since its last sighting. A lost track taken
      // over by a new id within the margin (adopted): its crossing counts when the new id leaves
      // the margin on the other side, and was made where its way, from the old id's last sighting
      // on through the new id's, last met the line.
      const at = metLineAt(st.lastFrame, this.signedDistance(st.lx, st.ly), frameMs, dist);
      if (!Number.isNaN(at)) {
        st.metAt = at;
        if (st.was >= 0) st.wasAt = at;
      }
    }
    if (st.pending) this.settle(st, dist, frameMs);
    st.lastSeen = tMs;
    st.lastLabelled = tMs;
    st.classId = d.classId[i];
    // Its last sighting and pace, for handOver.
    noteSighting(st, x, y, frameMs, d.xyxy, i);
    if (now === 0) return undefined;
    if (now !== st.side && !this.moved(st.box, d.xyxy, i)) return undefined; // reshaped, not moved: still on its side
    const px = st.x, py = st.y;
    st.x = x;
    st.y = y;
    for (let k = 0; k < 4; k++) st.box[k] = d.xyxy[i * 4 + k];
    if (now === st.side) {
      // Back beyond the margin on the side it came from: a lost track taken over within the margin
      // (adopted) did not cross. Before, it kept the old id and its time until the next side
      // change: a crossing made minutes later was said to be the old id's, handed over.
      // Where its way last met the line is kept while a hand-over it took over with it is still
      // being decided (settle): that crossing, if it counts, was made then.
      if (st.was >= 0) {
        st.was = -1;
        st.owed = false;
        if (!st.pending) st.wasAt = NaN;
      }
      return undefined;
    }
    st.side = now;
    // Where the path from the last sighting beyond the margin on the other side to here meets
    // the line: a crossing there within the segment counts; one past its end went round it.
    const pd = this.signedDistance(px, py);
    const k = pd / (pd - dist);
    const was = st.was, wasAt = st.wasAt;
    st.was = -1;
    st.wasAt = NaN;
    st.owed = false;
    if (!this.withinSegment(px + (x - px) * k, py + (y - py) * k)) return undefined;
    this.handedFrom = was;
    // A crossing handed over (settle) was made before the new id was first seen past the line.
    if (was >= 0 && !Number.isNaN(wasAt)) this.crossedAt = wasAt;
    return now === 1 ? 'in' : 'out';
  }

  /**
   * A lost track handed over to new id `st` (handOver) makes its crossing (is `st`'s from now on:
   * its side, where it was last beyond the margin there and its box) once `st` has gone away
   * from the line by the margin (from the nearest it has been to it), or stayed for
   * HANDOVER_SETTLE_MS without coming back towards the line by the margin; if it comes back
   * first, it is another object walking towards the line from that side (its own crossing is
   * counted as any), and the lost track goes. Decided on the new id's confirmation, a person
   * coming up to a line at a 30 fps camera (7 px over its 3 first frames, under the margin)
   * just after another vanished before it on the other side was counted crossing in the
   * direction it had not gone (and again, rightly, when it crossed). `dist`: the new id's signed
   * distance from the line on this frame.
   */
  private settle(st: Side, dist: number, frameMs: number): void {
    const s = st.side * dist;
    if (s < st.nearest) st.nearest = s;
    if (s > st.furthest) st.furthest = s;
    const old = st.pending!;
    if (st.furthest - s >= this.marginPx) {
      st.pending = undefined;
      st.pendingId = -1;
      if (st.was < 0) st.wasAt = NaN;
      return;
    }
    if (s - st.nearest < this.marginPx && frameMs - st.pendingSince < HANDOVER_SETTLE_MS) return;
    st.side = old.side;
    st.x = old.x;
    st.y = old.y;
    st.box.set(old.box);
    // Where the way last met the line: after the lost track's, where the one that took this
    // state over within the margin (adopted) met it since, if it did.
    st.wasAt = st.wasAt > st.pendingAt ? st.wasAt : st.pendingAt;
    st.was = st.pendingId;
    st.owed = true;
    st.pending = undefined;
    st.pendingId = -1;
  }

  /**
   * When the way of a lost track `old` handed over to a new id last met the line: from the old
   * id's last sighting on through the new id's sure sightings before `endMs` (`seen`, in the
   * tracker's time: `shift` ms later than this counter's; sure: sureOrigin against row `i` of `d`)
   * to (`ex`, `ey`) at `endMs` (frame time), at an even pace between two of them (as a crossing
   * among a new track's earlier sightings is placed); NaN where it did not. Before, straight
   * from the old id's last sighting to the new id's first sure one beyond the margin, or to the
   * frame that confirmed it: a person who stood just past the line, within the margin, before
   * their new id was confirmed was said to have crossed after they were first seen past it.
   */
  private wayAcross(old: Side, seen: NonNullable<TrackOrigin['before']>, shift: number, d: Detections, i: number, ex: number, ey: number, endMs: number): number {
    let px = old.lx, py = old.ly, pMs = old.lastFrame;
    if (!Number.isFinite(pMs)) return NaN;
    let pd = this.signedDistance(px, py);
    let at = NaN;
    for (let k = 0; k <= seen.length; k++) {
      let bx = ex, by = ey, ms = endMs;
      if (k < seen.length) {
        ms = seen[k].ms - shift;
        if (!(ms > pMs && ms < endMs) || !sureOrigin(seen[k].box, d.xyxy, i)) continue;
        [bx, by] = anchorPoint(seen[k].box, 0, this.options.anchor, this.pt);
      } else if (!(ms > pMs)) break;
      const bd = this.signedDistance(bx, by);
      const met = metLineAt(pMs, pd, ms, bd);
      if (!Number.isNaN(met)) at = met;
      px = bx;
      py = by;
      pMs = ms;
      pd = bd;
    }
    return at;
  }

  /**
   * When a lost track `old`, handed over to a new id first seen past the line at (`px`, `py`) at
   * `pMs` (frame time), crossed: where the way from its last sighting to there meets the line, at
   * an even pace, as a crossing among a new track's earlier sightings is placed (LineEvent.atMs).
   * Before, a crossing handed over had no time: it was raised when the new id showed it went on,
   * a second or more after it was made, with nothing to say so.
   */
  private crossingTime(old: Side, px: number, py: number, pMs: number): number {
    const ld = this.signedDistance(old.lx, old.ly), pd = this.signedDistance(px, py);
    // Last seen past the line already (within the margin): where its own way last met it. Before,
    // at its last sighting: a person who stepped over a door line, stood just past it and was lost
    // there, found further on under a new id, was said to have crossed when last seen, 1.3 s late
    // in the test (as late as they stood there).
    if ((ld < 0) === (pd < 0) && !Number.isNaN(old.metAt)) return old.metAt;
    const k = ld === pd ? 0 : Math.min(1, Math.max(0, ld / (ld - pd)));
    return old.lastFrame + (pMs - old.lastFrame) * k;
  }

  /**
   * Whether box `i` of `xyxy` is `from` (xyxy: the track's last box beyond the margin on its
   * side) moved across the line, not reshaped across it: moved whole (movedWhole, as a zone's
   * vanishing entry), or of the same shape give or take a third (RESHAPED_RATIO: an object
   * nearer or further is scaled, not reshaped; a person walking away from a camera at head
   * height keeps the top of the box where it was, and is counted). A car whose box the
   * detector cut to its upper part on every third frame had its anchor jump back and forth
   * across the line, and was counted in, out and in again. A box cut off by the picture's
   * border (in either) is taken as moved: its edge there stays put as it comes into view (an
   * item entering the belt at the border, near a count line).
   */
  private moved(from: Float32Array, xyxy: ArrayLike<number>, i: number): boolean {
    const o = i * 4;
    const f = this.frame;
    if (f) {
      // Within BORDER_SLACK_OF_SIDE of the picture's border: the detector's box of an object cut
      // off there stops a few pixels short of it as often as not.
      const e = BORDER_SLACK_OF_SIDE * Math.min(f.width, f.height), r = f.width - e, b = f.height - e;
      if (from[0] <= e || from[1] <= e || from[2] >= r || from[3] >= b || xyxy[o] <= e || xyxy[o + 1] <= e || xyxy[o + 2] >= r || xyxy[o + 3] >= b) return true;
    }
    // Height over width, now against then.
    const change = ((xyxy[o + 3] - xyxy[o + 1]) * (from[2] - from[0])) / ((xyxy[o + 2] - xyxy[o]) * (from[3] - from[1]));
    if (change < RESHAPED_RATIO && change > 1 / RESHAPED_RATIO) return true;
    return movedWhole(from, xyxy, i, this.options.anchor, this.pt);
  }

  /**
   * An id switch at the line: the track that the tracker lost just before a new id (first seen
   * at `firstMs`, its first sure sighting beyond the margin on side `first`: anchor `px`, `py`,
   * box `pbox`) appeared, returned with its id in `handedFrom` (the caller then takes it off the
   * line or leaves it claimed: release); or undefined. One on the other side is the new id's
   * crossing (when `across` allows it), one on the same side is claimed only. The old track:
   * last seen before the new one was first seen (and not on the last frame nor on this one),
   * not claimed by an id the line knows, not forgotten (forgetAfterMs), its last box about
   * the size of the new one (sureOrigin), and the new one found within a box's size (the larger
   * side of its last box) of where its pace would have taken it, from standing still to half as
   * fast again. The nearest such track. O(tracks the line knows), on frames that confirm a track.
   */
  private handOver(sides: Map<number, Side>, d: Detections, first: -1 | 0 | 1, across: boolean, px: number, py: number, pbox: ArrayLike<number>, firstMs: number): Side | undefined {
    let bestId = -1;
    let best: Side | undefined;
    let bestDist = Infinity;
    for (const [oid, o] of sides) {
      if ((o.side !== first && !across) || !(o.lastFrame < firstMs) || !(o.lastSeen < this.prevFrameMs) || !sureOrigin(o.lastBox, pbox, 0)) continue;
      if (o.claimedBy >= 0 && !this.claimLapsed(sides, o, d, firstMs, px, py)) continue;
      const dist = wayDistance(o, firstMs, px, py);
      if (!(dist < bestDist) || d.trackerId!.includes(oid)) continue;
      best = o;
      bestId = oid;
      bestDist = dist;
    }
    if (!best) return undefined;
    this.handedFrom = bestId;
    this.handedOnWay = sameWay(best, firstMs, px, py);
    return best;
  }

  /**
   * A lost track `old` (id `oldId`) that handOver found for new id `id` on this frame: `used`
   * (handed over, or its pending hand-over passed on, or adopted), it is taken off the line, so
   * that it is handed over once (were the old id found again, it would learn its side afresh).
   * Unused (the new id first seen on its side: the same object, nothing crossed), it stays,
   * claimed by the new id: not a candidate for later ids while that one is known, and its own
   * id, found again beside the new one, keeps its side. Before, it was taken off all the same:
   * a person hidden before the line (their id lost) while another was confirmed just where they
   * were, found again past it under their own id, learned their side there and was not counted.
   * A hand-over it was still deciding goes: the new id came back towards the line, or across it
   * (settle: another object).
   */
  private release(sides: Map<number, Side>, old: Side, oldId: number, id: number, used: boolean): void {
    if (used) {
      sides.delete(oldId);
      this.reclaim(sides, oldId, id);
      return;
    }
    old.claimedBy = id;
    old.claimOnWay = this.handedOnWay;
    old.owed = false;
    if (old.pending) {
      old.pending = undefined;
      old.pendingId = -1;
      if (old.was < 0) old.wasAt = NaN;
    }
  }

  /**
   * Whether the claim on lost track `o` (release) no longer keeps it from a new id first seen at
   * `px`, `py` at `firstMs` (frame time; handOver): its claimant forgotten, or first seen beside
   * its way (not on it: claimOnWay) and seen since this id was first seen, or on this frame (so
   * not this id's object), while this id is on its way (sameWay). Before, a claim held while its
   * claimant was known: a person hidden as another came into view beside them, found past the
   * line under a new id while the other stood there, was never counted. A claimant found on its
   * way is taken for that object still (the new id is another beside it).
   */
  private claimLapsed(sides: Map<number, Side>, o: Side, d: Detections, firstMs: number, px: number, py: number): boolean {
    const by = sides.get(o.claimedBy);
    if (!by) return true;
    if (o.claimOnWay || !(by.lastFrame >= firstMs || d.trackerId!.includes(o.claimedBy))) return false;
    return sameWay(o, firstMs, px, py);
  }

  /**
   * Tracks claimed by `from` (release), whose state went on under `to`, are claimed by `to`: the
   * object they were taken for is known under it. Else a claim would lapse while its object
   * was still known, and a track lost before the line was handed to a later id past it, a second
   * time. O(tracks), on frames with a hand-over.
   */
  private reclaim(sides: Map<number, Side>, from: number, to: number): void {
    for (const st of sides.values()) if (st.claimedBy === from) st.claimedBy = to;
  }

  /**
   * Track `id`, found again (its own id, with no state on `sides`: handed over) while a new id's
   * hand-over of it is pending (settle) or owed, at `dist` from the line: on its own side (beyond
   * the line from where that id was found), that id was another object, and the hand-over goes;
   * its own state goes on under its id, unless forgotten since or settled (returned, on `sides`;
   * else it learns its side afresh). Past the line, the hand-over stands (it crossed: counted
   * once, under that id). Before, it stood all the same: a
   * person standing before a door line, hidden while another appeared past it and vanished within
   * a second, was counted twice (that hand-over, once the other was forgotten, and their own
   * crossing), or, found again in the band, once, with their own crossing lost (no side there).
   */
  private foundAgain(sides: Map<number, Side>, id: number, dist: number, tMs: number): Side | undefined {
    this.handedAway.delete(id);
    for (const o of sides.values()) {
      if (o.owed && o.was === id) {
        // Settled, its crossing waiting for the new id to leave the band past the line (owed): that
        // id takes its own side back (past the line, where it was last seen), unless this one is
        // found past the line too.
        if (o.side * dist <= 0) return undefined;
        o.owed = false;
        o.was = -1;
        o.wasAt = NaN;
        o.side = -o.side as -1 | 1;
        o.x = o.lx;
        o.y = o.ly;
        o.box.set(o.lastBox);
        return undefined;
      }
      const own = o.pending;
      if (o.pendingId !== id || !own) continue;
      if (own.side * dist <= 0) return undefined;
      o.pending = undefined;
      o.pendingId = -1;
      if (o.was < 0) o.wasAt = NaN;
      if (tMs - own.lastSeen > this.options.forgetAfterMs) return undefined;
      own.claimedBy = -1;
      sides.set(id, own);
      return own;
    }
    return undefined;
  }

  /**
   * Takes track `id` off `sides` (forgotten). A lost track handed over to it whose crossing it
   * was still deciding (settle: it went neither on nor back by the margin before it was lost),
   * or had settled without leaving the margin past the line since (owed), counts (on `gone`,
   * raised by update on this frame, with no row): the new id was seen past the line and not back
   * towards it. Before, it went with it: a person lost before a door line, found standing past
   * it under a new id that vanished within HANDOVER_SETTLE_MS, was never counted.
   */
  private drop(sides: Map<number, Side>, id: number, st: Side): void {
    sides.delete(id);
    if (st.owed) {
      // Settled, its crossing waiting for the new id to leave the margin past the line: last seen
      // past it (within the margin), it crossed. Before, lost: a person found past the line who
      // stepped back into the band and stood there over HANDOVER_SETTLE_MS before vanishing was
      // not counted, though one who vanished sooner was.
      const pd = this.signedDistance(st.x, st.y), nd = this.signedDistance(st.lx, st.ly);
      const k = pd / (pd - nd);
      if ((pd < 0) === (nd < 0) || !this.withinSegment(st.x + (st.lx - st.x) * k, st.y + (st.ly - st.y) * k)) return;
      this.gone.push({ other: sides !== this.side, direction: st.side === -1 ? 'in' : 'out', trackId: id, classId: st.classId, previousTrackId: st.was, atMs: st.wasAt });
      return;
    }
    const old = st.pending;
    if (!old || old.side === st.side) return;
    const pd = this.signedDistance(old.x, old.y), nd = this.signedDistance(st.x, st.y);
    const k = pd / (pd - nd);
    if (!this.withinSegment(old.x + (st.x - old.x) * k, old.y + (st.y - old.y) * k)) return;
    const atMs = st.wasAt > st.pendingAt ? st.wasAt : st.pendingAt;
    this.gone.push({ other: sides !== this.side, direction: st.side === 1 ? 'in' : 'out', trackId: id, classId: st.classId, previousTrackId: st.pendingId, atMs });
  }

  /**
   * The side of the line an earlier box (`seen`, xyxy) of the track in row `i` puts it on, when
   * that is sure, else 0 (within the margin, or not sure). Sure: a box about the size of the
   * current one (sureOrigin: not a part of it seen from behind an occluder), or one cut off by
   * the picture's border whose anchor, wherever the part beyond the border put it, is on that
   * side (the anchor of the whole box lies further towards the border: for a box cut off at
   * the left, further left). Before, only the first box was looked at, by its size alone: an
   * item entering the picture near a count line was first seen cut off (a third of its size),
   * was past the line or on it when confirmed, and was never counted.
   */
  private originSide(seen: Float32Array, xyxy: ArrayLike<number>, i: number): -1 | 0 | 1 {
    const { anchor } = this.options;
    const marginPx = this.marginPx;
    const [ax, ay] = anchorPoint(seen, 0, anchor, this.pt);
    const od = this.signedDistance(ax, ay);
    const side = od > marginPx ? 1 : od < -marginPx ? -1 : 0;
    if (side === 0 || sureOrigin(seen, xyxy, i)) return side;
    // How the signed distance changes as the anchor moves right (gx) and down (gy).
    const gx = this.dy / this.len, gy = -this.dx / this.len;
    const w = this.frame?.width ?? Infinity, h = this.frame?.height ?? Infinity;
    const movesX = anchor !== 'bottom-right' && anchor !== 'center-right', movesXRight = anchor !== 'bottom-left' && anchor !== 'center-left';
    const movesY = anchor === 'center' || anchor === 'center-left' || anchor === 'center-right' || anchor === 'top-center';
    const movesYDown = anchor !== 'top-center';
    // Each border the box reaches, whether its anchor would move were the box whole (a box cut
    // off at the top has its feet where they are), and how its distance would change then.
    const ways: [boolean, boolean, number][] = [
      [seen[0] <= 0, movesX, -gx],
      [seen[2] >= w, movesXRight, gx],
      [seen[1] <= 0, movesY, -gy],
      [seen[3] >= h, movesYDown, gy],
    ];
    let cut = false;
    for (const [reaches, moves, change] of ways) {
      if (!reaches) continue;
      cut = true;
      if (moves && side * change < 0) return 0; // towards the line: the whole box's anchor may be past it
    }
    return cut ? side : 0;
  }

  /**
   * `tMs`: the frame's observed time (ObservedTime: a stall counts as one usual gap), which
   * `forgetAfterMs` runs on; `frameMs`: its time (the tracker's timestamps, which a track's
   * first sighting is given in). The crossings are pushed onto `events` (the analyzer's list,
   * reused from frame to frame), which is returned.
   */
  update(d: Detections, tMs: number, events: LineEvent[] = [], frameMs = tMs): LineEvent[] {
    const ids = d.trackerId;
    const { classIds } = this.options;
    const stats = this.stats;
    this.prevFrameMs = this.lastFrameMs;
    this.lastFrameMs = tMs;
    this.prevFrameTime = this.lastFrameTime;
    this.lastFrameTime = frameMs;
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
          // Only for OFF_CLASS_HOLD_MS (or forgetAfterMs) after its last frame of a counted class:
          // without a bound, a pedestrian labelled car on one frame, then person for minutes
          // (the id kept), then car again on one frame past a car line, was counted as a car.
          const known = this.side.get(id);
          if (known && !(known.lastSeen < this.prevFrameMs && tMs - known.lastSeen > this.options.forgetAfterMs) && tMs - known.lastLabelled <= Math.max(OFF_CLASS_HOLD_MS, this.options.forgetAfterMs)) known.lastSeen = tMs;
          if (stats.seenInstead && stats.in + stats.out === 0 && this.step(this.otherSide, d, i, id, tMs, frameMs)) stats.seenInstead.add(d.classId[i]);
          continue;
        }
        const direction = this.step(this.side, d, i, id, tMs, frameMs);
        if (this.gone.length) this.raiseGone(events);
        for (const e of this.earlier) {
          this.count(e.direction, d.classId[i]);
          events.push({ line: this.id, direction: e.direction, trackId: id, classId: d.classId[i], row: i, atMs: e.atMs });
        }
        if (!direction) continue;
        const previousTrackId = this.handedFrom;
        const atMs = this.crossedAt;
        this.count(direction, d.classId[i]);
        events.push({ line: this.id, direction, trackId: id, classId: d.classId[i], row: i, ...(previousTrackId >= 0 ? { previousTrackId } : {}), ...(Number.isNaN(atMs) ? {} : { atMs }) });
      }
    }
    const forget = this.options.forgetAfterMs;
    // By key, not by entry: an entry is an array made for each track on each frame (a Map's
    // entries are not optimised away), the collector's work on every frame where nothing happens.
    for (const id of this.side.keys()) {
      const st = this.side.get(id)!;
      if (tMs - st.lastSeen > forget) this.drop(this.side, id, st);
    }
    if (this.otherSide.size) {
      for (const id of this.otherSide.keys()) {
        const st = this.otherSide.get(id)!;
        if (tMs - st.lastSeen > forget) this.drop(this.otherSide, id, st);
      }
    }
    // A pending hand-over lasts HANDOVER_SETTLE_MS while its new id is seen, then until it is forgotten.
    if (this.handedAway.size) for (const id of this.handedAway.keys()) if (tMs - this.handedAway.get(id)! > forget + HANDOVER_SETTLE_MS) this.handedAway.delete(id);
    if (this.gone.length) this.raiseGone(events);
    return events;
  }

  /**
   * The end of the source's stream (a file's end, the run stopping): every track the line knows
   * is forgotten, as the frames of a stream that went on with no more detections would forget
   * them (update, after forgetAfterMs), and the crossings that settles (drop: a hand-over pending
   * on a new id past the line, or owed) are pushed onto `events` and counted. Before, they were
   * lost: a file that ended within forgetAfterMs of a person found past the line under a new id
   * under-counted the line (run summary, /api/sources). The line starts afresh after it.
   */
  flush(events: LineEvent[] = []): LineEvent[] {
    for (const id of this.side.keys()) this.drop(this.side, id, this.side.get(id)!);
    for (const id of this.otherSide.keys()) this.drop(this.otherSide, id, this.otherSide.get(id)!);
    this.handedAway.clear();
    if (this.gone.length) this.raiseGone(events);
    return events;
  }

  /** One crossing in `direction` by class `classId` into the line's figures. */
  private count(direction: 'in' | 'out', classId: number): void {
    const stats = this.stats;
    const m = direction === 'in' ? stats.countIn : stats.countOut;
    m.set(classId, (m.get(classId) ?? 0) + 1);
    if (stats[direction]++ === 0 && stats[direction === 'in' ? 'out' : 'in'] === 0) this.otherSide.clear();
  }

  /**
   * The crossings of tracks forgotten (`gone`, see drop), onto `events`, with no row (−1: the
   * track is not on this frame) and when they were made (atMs); those of other classes on a
   * class-filtered line, into what it saw instead.
   */
  private raiseGone(events: LineEvent[]): void {
    const stats = this.stats;
    for (const g of this.gone) {
      if (g.other) {
        if (stats.seenInstead && stats.in + stats.out === 0) stats.seenInstead.add(g.classId);
        continue;
      }
      this.count(g.direction, g.classId);
      events.push({ line: this.id, direction: g.direction, trackId: g.trackId, classId: g.classId, row: -1, previousTrackId: g.previousTrackId, ...(Number.isNaN(g.atMs) ? {} : { atMs: g.atMs }) });
    }
    this.gone.length = 0;
  }
}
