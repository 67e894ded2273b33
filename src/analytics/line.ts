import type { Detections } from '../core/detections.js';
import { anchorPoint, type Anchor } from './anchor.js';
import type { Point } from '../core/polygon.js';

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
  /** A track not seen for this long is forgotten. Default 2000. */
  goneAfterMs: number;
}

/**
 * Directional line crossing with hysteresis: a track's side changes only once its anchor is
 * more than `marginPx` from the line, within the segment's extent; a side change is one
 * crossing. So a track crosses at most once per direction unless it first leaves the margin
 * on the other side. Only tracked rows (trackerId ≥ 0) count.
 */
export class LineCounter {
  /** Crossings so far by class id. */
  readonly countIn = new Map<number, number>();
  readonly countOut = new Map<number, number>();
  private readonly side = new Map<number, { side: -1 | 1; lastSeen: number }>();
  private readonly pt: [number, number] = [0, 0];
  private readonly dx: number;
  private readonly dy: number;
  private readonly len: number;

  constructor(
    readonly id: string,
    readonly from: Point,
    readonly to: Point,
    readonly options: LineCounterOptions,
  ) {
    this.dx = to[0] - from[0];
    this.dy = to[1] - from[1];
    this.len = Math.hypot(this.dx, this.dy);
    if (!(this.len > 0)) throw new RangeError(`line ${id}: from and to are the same point`);
  }

  /** Signed distance of (x, y) from the line, px: positive on the left of from→to as drawn on screen (y down). */
  signedDistance(x: number, y: number): number {
    return -(this.dx * (y - this.from[1]) - this.dy * (x - this.from[0])) / this.len;
  }

  private withinSegment(x: number, y: number): boolean {
    const t = ((x - this.from[0]) * this.dx + (y - this.from[1]) * this.dy) / (this.len * this.len);
    return t >= 0 && t <= 1;
  }

  update(d: Detections, tMs: number): LineEvent[] {
    const events: LineEvent[] = [];
    const ids = d.trackerId;
    const { marginPx, classIds, anchor } = this.options;
    if (ids) {
      for (let i = 0; i < d.length; i++) {
        const id = ids[i];
        if (id < 0 || (classIds && !classIds.has(d.classId[i]))) continue;
        const [x, y] = anchorPoint(d.xyxy, i, anchor, this.pt);
        const dist = this.signedDistance(x, y);
        const st = this.side.get(id);
        const now: -1 | 1 | 0 = dist > marginPx ? 1 : dist < -marginPx ? -1 : 0;
        if (!st) {
          if (now !== 0) this.side.set(id, { side: now, lastSeen: tMs });
          continue;
        }
        st.lastSeen = tMs;
        if (now !== 0 && now !== st.side) {
          st.side = now;
          if (!this.withinSegment(x, y)) continue; // went round the end of the line
          const direction = now === 1 ? 'in' : 'out';
          const m = direction === 'in' ? this.countIn : this.countOut;
          m.set(d.classId[i], (m.get(d.classId[i]) ?? 0) + 1);
          events.push({ line: this.id, direction, trackId: id, classId: d.classId[i], row: i });
        }
      }
    }
    for (const [id, st] of this.side) if (tMs - st.lastSeen > this.options.goneAfterMs) this.side.delete(id);
    return events;
  }
}
