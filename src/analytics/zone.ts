import type { Detections } from '../core/detections.js';
import { anchorPoint, type Anchor } from './anchor.js';
import { pointInPolygon, type Point } from '../core/polygon.js';

/** A polygon in source pixels with an optional class filter: `trigger` says which rows are inside. */
export class PolygonZone {
  private readonly pt: [number, number] = [0, 0];
  constructor(
    readonly id: string,
    readonly polygon: readonly Point[],
    /** Class ids that count; undefined: every class. */
    readonly classIds: ReadonlySet<number> | undefined,
    readonly anchor: Anchor = 'bottom-center',
  ) {}

  /** One flag per row: the row's class counts and its anchor lies inside the polygon. */
  trigger(d: Detections): boolean[] {
    const out = new Array<boolean>(d.length);
    for (let i = 0; i < d.length; i++) out[i] = this.contains(d, i);
    return out;
  }

  contains(d: Detections, i: number): boolean {
    if (this.classIds && !this.classIds.has(d.classId[i])) return false;
    const [x, y] = anchorPoint(d.xyxy, i, this.anchor, this.pt);
    return pointInPolygon(x, y, this.polygon);
  }
}

export type ZoneEventType = 'enter' | 'exit' | 'dwell';

export interface ZoneEvent {
  type: ZoneEventType;
  zone: string;
  trackId: number;
  classId: number;
  /** Row of the track in this frame's detections (−1 when the track is gone). */
  row: number;
  /** Time inside so far (dwell, exit), ms. */
  dwellMs: number;
}

export interface ZoneMonitorOptions {
  /** Consecutive frames a track must be inside (or outside) before it counts as entered (or left). Default 3. Raising it stops flicker at the border from producing events, but delays each event by that many frames. */
  minHoldFrames: number;
  /** A track inside longer than this raises one `dwell` event per stay. Default: none. */
  dwellLimitMs?: number;
  /** A track not seen for this long is considered gone (leaves the zone if it was inside). Default 2000. */
  goneAfterMs: number;
}

interface TrackInZone {
  inside: boolean;
  /** Consecutive frames whose raw state disagrees with `inside`. */
  streak: number;
  enteredAt: number;
  dwellRaised: boolean;
  lastSeen: number;
  classId: number;
}

/**
 * Per-(track, zone) state with hysteresis: `enter`, `exit` and `dwell` events, each at most
 * once per stay; occupancy is the number of tracks currently inside. Only tracked rows
 * (trackerId ≥ 0) count.
 */
export class ZoneMonitor {
  private readonly tracks = new Map<number, TrackInZone>();
  /** Tracks inside now. */
  occupancy = 0;
  /** Entries so far. */
  entered = 0;

  constructor(
    readonly zone: PolygonZone,
    readonly options: ZoneMonitorOptions,
  ) {}

  update(d: Detections, tMs: number): ZoneEvent[] {
    const events: ZoneEvent[] = [];
    const ids = d.trackerId;
    const hold = Math.max(1, this.options.minHoldFrames);
    if (ids) {
      for (let i = 0; i < d.length; i++) {
        const id = ids[i];
        if (id < 0) continue;
        if (this.zone.classIds && !this.zone.classIds.has(d.classId[i])) continue;
        const raw = this.zone.contains(d, i);
        let st = this.tracks.get(id);
        if (!st) {
          st = { inside: false, streak: 0, enteredAt: 0, dwellRaised: false, lastSeen: tMs, classId: d.classId[i] };
          this.tracks.set(id, st);
        }
        st.lastSeen = tMs;
        if (raw !== st.inside) {
          st.streak++;
          if (st.streak >= hold) {
            st.inside = raw;
            st.streak = 0;
            if (raw) {
              st.enteredAt = tMs;
              st.dwellRaised = false;
              this.entered++;
              events.push({ type: 'enter', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: 0 });
            } else {
              events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: tMs - st.enteredAt });
            }
          }
        } else {
          st.streak = 0;
        }
        const limit = this.options.dwellLimitMs;
        if (st.inside && limit !== undefined && !st.dwellRaised && tMs - st.enteredAt >= limit) {
          st.dwellRaised = true;
          events.push({ type: 'dwell', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: tMs - st.enteredAt });
        }
      }
    }
    let occ = 0;
    for (const [id, st] of this.tracks) {
      if (tMs - st.lastSeen > this.options.goneAfterMs) {
        if (st.inside) events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: -1, dwellMs: st.lastSeen - st.enteredAt });
        this.tracks.delete(id);
        continue;
      }
      if (st.inside) occ++;
    }
    this.occupancy = occ;
    return events;
  }
}
