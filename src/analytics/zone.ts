import type { Detections, TrackOrigin } from '../core/detections.js';
import { anchorPoint, movedWhole, sureOrigin, type Anchor } from './anchor.js';

export { MOVED_WHOLE_SHARE } from './anchor.js';
import { pointInPolygon, type Point } from '../core/polygon.js';
import { LabelTally, SeenTracks } from './tally.js';

/**
 * The hysteresis band of a zone without `marginPx`, as a fraction of each box's height: 2 %
 * (8 px for a person 390 px tall, 2 px for one 100 px tall). Measured on the person clip (six
 * people standing 9–25 s each, 1700 frames at 10 fps, yolox-nano): the feet jitter by about
 * 0.6 % of the box's height frame to frame (1 σ), 1.7 % at the 95th percentile; a zone edge
 * drawn through each standing person's feet gave 51 entries in all with no band, 5 with 2 %,
 * 3 with 3 %, none with 5 %. But 5 % kept the first person of pipelines/safety-zone.yaml out
 * (standing 10–20 px inside the zone's near edge, box 390 px high: a 19.5 px band), a missed
 * entry; 2 % keeps all six entries, each within 0.1 s of those without a band. Relative to the
 * box, it follows the detector's jitter, which grows with the object's size on screen.
 */
export const ZONE_MARGIN_OF_HEIGHT = 0.02;

/** A polygon in source pixels with an optional class filter and hysteresis band: `side` says where a row's anchor is. */
export class PolygonZone {
  private readonly pt: [number, number] = [0, 0];
  /**
   * Edges that `side` measures the margin to (1), by index of their first point: those lying
   * on the frame's border are left out (0), as no anchor gets beyond them (boxes are clipped to
   * the frame: a person cut off by the bottom has feet on a zone edge drawn along it).
   */
  private readonly measured: Uint8Array;
  /** The polygon's bounding box: x1, y1, x2, y2. */
  private readonly bounds: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
  /** Scratch: where a path meets the edges (passage). */
  private readonly cuts: number[] = [];
  constructor(
    readonly id: string,
    readonly polygon: readonly Point[],
    /** Class ids that count; undefined: every class. */
    readonly classIds: ReadonlySet<number> | undefined,
    readonly anchor: Anchor = 'bottom-center',
    /** Hysteresis band, px: an anchor this close to an edge (inside or out) is on the edge (`side` 0). Undefined: ZONE_MARGIN_OF_HEIGHT of each box's height. */
    readonly marginPx: number | undefined = undefined,
    /** The picture's size, in the polygon's pixels: edges along its border have no band. */
    frame?: { width: number; height: number },
  ) {
    const n = polygon.length;
    this.measured = new Uint8Array(n).fill(1);
    for (const [x, y] of polygon) {
      this.bounds[0] = Math.min(this.bounds[0], x);
      this.bounds[1] = Math.min(this.bounds[1], y);
      this.bounds[2] = Math.max(this.bounds[2], x);
      this.bounds[3] = Math.max(this.bounds[3], y);
    }
    if (frame) {
      const on = (a: Point, b: Point) => (a[0] <= 0 && b[0] <= 0) || (a[1] <= 0 && b[1] <= 0) || (a[0] >= frame.width && b[0] >= frame.width) || (a[1] >= frame.height && b[1] >= frame.height);
      for (let j = 0; j < n; j++) if (on(polygon[j], polygon[(j + 1) % n])) this.measured[j] = 0;
    }
  }

  /**
   * Where row `i`'s anchor is (whatever its class): 1 inside, −1 outside, each more than
   * `marginPx` from the polygon's edges (those on the frame's border aside), 0 within that band.
   * Without a margin only 1 and −1 (the boundary is inside). O(points).
   */
  side(d: Detections, i: number): -1 | 0 | 1 {
    const [x, y] = anchorPoint(d.xyxy, i, this.anchor, this.pt);
    if (this.onEdge(x, y, this.margin(d, i))) return 0;
    return pointInPolygon(x, y, this.polygon) ? 1 : -1;
  }

  /**
   * Whether an anchor can be inside by more than `marginPx` somewhere, so that the zone can be
   * entered at all: looked for on a grid of 65 × 65 points over its bounds (once, when it is
   * placed). True without a fixed margin (the band then follows each box's height). A margin of
   * half the zone's width or more leaves no such point: nothing ever entered, and nothing said why.
   */
  enterable(): boolean {
    const m = this.marginPx;
    if (m === undefined || !(m > 0)) return true;
    const [x0, y0, x1, y1] = this.bounds;
    const steps = 64;
    for (let i = 0; i <= steps; i++) {
      for (let j = 0; j <= steps; j++) {
        const x = x0 + ((x1 - x0) * i) / steps;
        const y = y0 + ((y1 - y0) * j) / steps;
        if (pointInPolygon(x, y, this.polygon) && !this.onEdge(x, y, m)) return true;
      }
    }
    return false;
  }

  /** The hysteresis band for row `i`, px: `marginPx`, else ZONE_MARGIN_OF_HEIGHT of its box's height. */
  margin(d: Detections, i: number): number {
    return this.marginPx ?? ZONE_MARGIN_OF_HEIGHT * (d.xyxy[i * 4 + 3] - d.xyxy[i * 4 + 1]);
  }

  /** Whether (x, y) is inside the polygon by more than `m` px (beyond the band: `side` 1). */
  inside(x: number, y: number, m: number): boolean {
    return !this.onEdge(x, y, m) && pointInPolygon(x, y, this.polygon);
  }

  /** Whether (x, y) is outside the polygon by more than `m` px (beyond the band: `side` −1). */
  outside(x: number, y: number, m: number): boolean {
    return !this.onEdge(x, y, m) && !pointInPolygon(x, y, this.polygon);
  }

  /** Whether (x, y) is within `m` px of one of the measured edges (none when `m` is 0). O(points). */
  private onEdge(x: number, y: number, m: number): boolean {
    if (!(m > 0)) return false;
    const poly = this.polygon;
    const m2 = m * m;
    for (let j = 0; j < poly.length; j++) {
      if (!this.measured[j]) continue;
      const [ax, ay] = poly[j];
      const [bx, by] = poly[(j + 1) % poly.length];
      const dx = bx - ax, dy = by - ay;
      const t = Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)));
      const ex = ax + t * dx - x, ey = ay + t * dy - y;
      if (ex * ex + ey * ey <= m2) return true;
    }
    return false;
  }

  /**
   * Follows a track's path on from (x0, y0) at `t0` straight to (x1, y1) at `t1` (ms), cut
   * where it meets the edges: writes into `path` when it came into the polygon (`polyIn`, NaN
   * while the path is outside it), when it first came in on a way that went through the zone
   * (`passIn`: a stretch inside whose middle is more than `m` px from the edges, the hysteresis
   * band, as for a sighting) and the last time it was inside (`lastInside`). O(points).
   */
  follow(x0: number, y0: number, t0: number, x1: number, y1: number, t1: number, m: number, path: ZonePath): void {
    const b = this.bounds;
    if (Math.max(x0, x1) < b[0] || Math.min(x0, x1) > b[2] || Math.max(y0, y1) < b[1] || Math.min(y0, y1) > b[3]) {
      path.polyIn = NaN;
      return;
    }
    const poly = this.polygon;
    const dx = x1 - x0, dy = y1 - y0, span = t1 - t0;
    const ts = this.cuts;
    ts.length = 0;
    ts.push(0, 1);
    for (let j = 0; j < poly.length; j++) {
      const [ax, ay] = poly[j];
      const [bx, by] = poly[(j + 1) % poly.length];
      const ex = bx - ax, ey = by - ay;
      const den = dx * ey - dy * ex;
      if (den === 0) continue; // parallel: the stretches either side of it are tested by their middles
      const qx = ax - x0, qy = ay - y0;
      const t = (qx * ey - qy * ex) / den;
      const u = (qx * dy - qy * dx) / den;
      if (t > 0 && t < 1 && u >= 0 && u <= 1) ts.push(t);
    }
    ts.sort(ascending);
    for (let k = 1; k < ts.length; k++) {
      const a = ts[k - 1], c = ts[k];
      if (!(c > a)) continue;
      const mx = x0 + dx * ((a + c) / 2), my = y0 + dy * ((a + c) / 2);
      if (!pointInPolygon(mx, my, poly)) {
        path.polyIn = NaN;
        continue;
      }
      if (Number.isNaN(path.polyIn)) path.polyIn = t0 + a * span;
      if (Number.isNaN(path.passIn) && !this.onEdge(mx, my, m)) path.passIn = path.polyIn;
      path.lastInside = t0 + c * span;
    }
  }

  /** Row `i`'s anchor lies inside the polygon, whatever its class. */
  anchorInside(d: Detections, i: number): boolean {
    const [x, y] = anchorPoint(d.xyxy, i, this.anchor, this.pt);
    return pointInPolygon(x, y, this.polygon);
  }
}

const ascending = (a: number, b: number) => a - b;

/** Where a track's path (see ZoneMonitor.update, a passage) went in the polygon, ms; NaN: not (yet). */
export interface ZonePath {
  /** When the path last came into the polygon (NaN while it is outside). */
  polyIn: number;
  /** When it came in on a way that went through the zone (beyond the band): a passage's entry. */
  passIn: number;
  /** The last time the path was inside the polygon: a passage's exit. */
  lastInside: number;
}

export type ZoneEventType = 'enter' | 'exit' | 'dwell';

export interface ZoneEvent {
  type: ZoneEventType;
  zone: string;
  trackId: number;
  classId: number;
  /** Row of the track in this frame's detections (−1 when the track is gone). */
  row: number;
  /** Time inside so far (dwell, exit), ms; for a track that went unseen, up to its last sighting. */
  dwellMs: number;
  /**
   * An entry or exit without `atMs`: when it happened, ms (frame time): the first frame of its
   * hold (minHoldFrames), or a gone track's exit as of the end of its stay. What a rule's cooldown
   * counts from, as from an `atMs` (SourceAnalyzer): one counted from the frame that raised it
   * instead, minHoldFrames later, and the next from when it happened, were that much nearer.
   */
  happenedMs?: number;
  /**
   * An event of a track that went unseen (`row` −1: its exit once gone, or its entry and exit as
   * it vanished going in, see enteredWhenLost): the time it was last seen, ms.
   */
  lastSeenMs?: number;
  /**
   * A passage (the path between two sightings outside went through the zone, see
   * ZoneMonitor.update): when it came in (`enter`) or went out (`exit`), ms, placed along that
   * path at an even pace between the two sightings; raised on the later sighting's frame.
   */
  atMs?: number;
  /**
   * An entry or exit seen among a track's sightings before the tracker confirmed it (its earlier
   * sightings, see ZoneMonitor.replay), raised on the frame that confirmed it: `atMs` is when it came in (the first of the frames inside that made it) or went out;
   * or a passage between two of them (wherever that frame shows the track).
   */
  early?: true;
}

/** How an exit is decided (see ZoneMonitorOptions.exitOn). */
export type ZoneExitOn = 'hold' | 'last-seen';

export interface ZoneMonitorOptions {
  /** Consecutive frames a track must be inside (or outside) before it counts as entered (or left). Default 3. Raising it stops flicker at the border from producing events, but delays each event by that many frames. */
  minHoldFrames: number;
  /** A track inside longer than this raises one `dwell` event per stay (a stay runs from the first of the hold frames that made its entry). Default: none. */
  dwellLimitMs?: number;
  /**
   * A track not seen for longer than this is gone: it leaves the zone if it was inside (an
   * exit with `row` −1, dwell up to its last sighting) and no longer counts in occupancy.
   * Config default 2000. Shorter: exits and occupancy follow a vanished object sooner, but a
   * track the tracker re-finds after a longer gap enters again (a second entry).
   */
  exitDelayMs: number;
  /**
   * `hold` (default): an exit needs `minHoldFrames` frames outside in a row, or the track gone
   * for `exitDelayMs`. `last-seen`: the first frame a track is seen outside is its exit (no
   * hold; flicker at the border then gives exit/entry pairs), and a track gone for
   * `exitDelayMs` exits as of its last sighting.
   */
  exitOn?: ZoneExitOn;
  /**
   * A track of the same class that enters within this long after a track inside went unseen
   * (not seen on the previous frame, still held: this is at most `exitDelayMs`), and that was
   * first seen after that track's last sighting, is taken to be
   * that object under a new id (an id switch): it continues the stay, with no `enter` event
   * and no new entry; the old track is dropped without an exit. Default 0: off.
   */
  reentrySuppressMs?: number;
}

/** What a zone counted so far (the run's figures, see SourceAnalyzer.report). */
export interface ZoneStats {
  entered: number;
  exited: number;
  /** Entries taken as id switches (reentrySuppressMs) and not counted. */
  reidentified: number;
  /**
   * Class-filtered zones only: tracks of other classes whose anchor was inside on at least
   * one frame, by class, each track once, collected while the zone has counted no entry.
   */
  seenInstead?: LabelTally;
  seenIds?: SeenTracks;
}

export function zoneStats(filtered: boolean): ZoneStats {
  return { entered: 0, exited: 0, reidentified: 0, ...(filtered ? { seenInstead: new LabelTally(), seenIds: new SeenTracks() } : {}) };
}

interface TrackInZone {
  inside: boolean;
  /** Consecutive frames whose raw state disagrees with `inside`. */
  streak: number;
  /** Frame time of the first of those frames: where a stay begins (an entry) or ends (an exit). */
  streakSince: number;
  /**
   * Start of the stay: the first of the `minHoldFrames` frames inside that made the entry, so
   * the dwell limit counts the same media time whatever the frame rate (the hold's frames
   * took 0.2 s at 10 fps, 2 s at 1 fps).
   */
  enteredAt: number;
  dwellRaised: boolean;
  /** Frame time of the first sighting (the tracker's, before it confirmed the track: Detections.trackOrigins): an id switch's new id comes after the old one's last. */
  firstSeen: number;
  lastSeen: number;
  /** Observed time of the last sighting (see ObservedTime): what `exitDelayMs` counts from. */
  lastSeenObs: number;
  classId: number;
  /**
   * The anchor at the last sighting outside (beyond the band) or, after one, on the edge (in the
   * band) since the track was last inside, px, and its frame time: where a passage's path goes
   * on from. NaN: none (inside, or not seen outside since).
   */
  outX: number;
  outY: number;
  outAt: number;
  /** The box (xyxy) whose anchor `outX`, `outY` is: what `inWhole` compares the sightings inside with. */
  outBox: Float32Array;
  /**
   * Every sighting inside of the entry being held (`streak`) was the box moved whole from
   * `outBox` (movedWhole), not only its anchor's edge: false, a vanishing then is no entry
   * (enteredWhenLost).
   */
  inWhole: boolean;
  /** Where the path from the last sighting outside went in the polygon (a passage). */
  path: ZonePath;
  /** Observed time (see ObservedTime) of its last sighting with a label the zone counts (see ZoneMonitor.update). */
  lastCountedObs: number;
  /** Frames in a row seen inside under a label the zone does not count while not inside (see ZoneMonitor.update). */
  offRun: number;
  /** Frame time of the frame the zone first saw it on (the tracker confirmed it): an entry or exit whose frames began before it was seen before that (ZoneEvent.early). */
  confirmedAt: number;
}

function resetPath(p: ZonePath): void {
  p.polyIn = NaN;
  p.passIn = NaN;
  p.lastInside = NaN;
}

/**
 * Per-(track, zone) state with hysteresis: `enter`, `exit` and `dwell` events, each at most
 * once per stay; occupancy is the number of tracks currently inside. Only tracked rows
 * (trackerId ≥ 0) count. A track first seen inside (already there at start, or a new id
 * after an id switch) enters once it has been inside for `minHoldFrames` frames.
 */
export class ZoneMonitor {
  private readonly tracks = new Map<number, TrackInZone>();
  /** Tracks inside now (gone ones, unseen for over `exitDelayMs`, excluded). */
  occupancy = 0;
  private lastFrameMs = -Infinity;
  /** Stays taken over on the latest frame (re-entry suppression), old id → new id. */
  readonly takenOver = new Map<number, number>();
  private readonly pt: [number, number] = [0, 0];

  constructor(
    /** Where the zone is, in the current picture's pixels (see `place`). */
    public zone: PolygonZone,
    readonly options: ZoneMonitorOptions,
    readonly stats: ZoneStats = zoneStats(zone.classIds !== undefined),
  ) {}

  /**
   * Moves the zone to `zone` (the same zone in a picture of another size, when a source changes
   * its resolution). Which tracks are inside, since when, and their holds are kept: an object
   * standing in the zone does not leave and enter again because the camera changed its size.
   */
  place(zone: PolygonZone, sx = 1, sy = 1): void {
    this.zone = zone;
    for (const st of this.tracks.values()) {
      st.outX *= sx;
      st.outY *= sy;
      for (let k = 0; k < 4; k++) st.outBox[k] *= k % 2 === 0 ? sx : sy;
    }
  }

  /** Entries so far. */
  get entered(): number {
    return this.stats.entered;
  }

  /**
   * `tMs`: the frame's time; `obsMs`: the observed time (ObservedTime; a stall counts as one
   * usual gap), which the unseen timeouts (`exitDelayMs`, `reentrySuppressMs`) run on.
   * The events are pushed onto `events` (the analyzer's list, reused from frame to frame), which
   * is returned.
   */
  update(d: Detections, tMs: number, obsMs = tMs, events: ZoneEvent[] = []): ZoneEvent[] {
    const ids = d.trackerId;
    const hold = Math.max(1, this.options.minHoldFrames);
    const exitAtOnce = this.options.exitOn === 'last-seen';
    const prevFrame = this.lastFrameMs;
    if (this.takenOver.size) this.takenOver.clear();
    this.lastFrameMs = tMs;
    const stats = this.stats;
    if (ids) {
      for (let i = 0; i < d.length; i++) {
        const id = ids[i];
        if (id < 0) continue;
        let st = this.tracks.get(id);
        // A row of a class the zone does not count: of a track the zone knows (seen with a counted
        // class, not gone), it is that object mislabelled (a tracker with classAware: false keeps
        // the id through a label change): it is still seen there, and may leave, but its entry is
        // made only by frames of a counted class. Before, such frames were not seen at all: a
        // person labelled chair for a few seconds was gone after exitDelayMs (an exit), and
        // entered again when labelled person (a second alert).
        let offClass = false;
        if (this.zone.classIds && !this.zone.classIds.has(d.classId[i])) {
          if (!st || (st.lastSeen < prevFrame && obsMs - st.lastSeenObs > this.options.exitDelayMs)) {
            if (stats.seenInstead && stats.entered === 0 && this.zone.anchorInside(d, i) && stats.seenIds!.first(id)) stats.seenInstead.add(d.classId[i]);
            continue;
          }
          offClass = true;
        }
        // On the edge (within the zone's marginPx): no evidence either way, so a track keeps its
        // state (an entry or exit being held starts over); only frames beyond it count.
        const where = this.zone.side(d, i);
        const raw = where === 0 ? undefined : where === 1;
        // Back after missing frames for longer than exitDelayMs (no frame in between to notice): it had left (exit as of its last sighting), and starts afresh.
        if (st && st.lastSeen < prevFrame && obsMs - st.lastSeenObs > this.options.exitDelayMs) {
          // Seen inside now with minHoldFrames 1, it enters on this frame: that entry stands for
          // one it made as it vanished (two `enter` events of one track on one frame would be
          // two alerts of one id, and consumers keep one).
          this.gone(id, st, events, hold === 1 && where === 1 && !offClass);
          st = undefined;
        }
        if (!st) {
          // The tracker's times of its earlier sightings in this zone's frame time: the last one was
          // the previous frame (a track being confirmed is matched on every frame). They differ once
          // a source's timestamps went back (the tracker's clock runs on, shifted; LineCounter does
          // the same). Before, they were taken as they were: after a restart every sighting was
          // later than the frame, none was looked at, and a passage made while the tracker was
          // confirming the track was lost. When they went back on this frame, the tracker took it
          // as no time since the previous one (ByteTracker.update): the last sighting is as of this
          // frame's time, and the earlier ones before it. Before, they were read against the
          // previous frame's (the old timeline), all later than this frame, and none was looked at.
          const origin = d.trackOrigins?.get(id);
          const seenBefore = origin && (origin.before ?? [origin]);
          const shift = seenBefore && Number.isFinite(prevFrame) ? seenBefore[seenBefore.length - 1].ms - Math.min(prevFrame, tMs) : 0;
          // First seen when the tracker first saw it (some frames before it was confirmed and
          // reached the zone), so that a newcomer seen beside a track that then went unseen is not
          // taken for that track's new id.
          const firstSeen = Math.min(tMs, origin ? origin.ms - shift : tMs);
          st = { inside: false, streak: 0, streakSince: tMs, enteredAt: 0, dwellRaised: false, firstSeen, lastSeen: tMs, lastSeenObs: obsMs, classId: d.classId[i], outX: NaN, outY: NaN, outAt: NaN, outBox: new Float32Array(4), inWhole: true, path: { polyIn: NaN, passIn: NaN, lastInside: NaN }, lastCountedObs: obsMs, offRun: 0, confirmedAt: tMs };
          this.tracks.set(id, st);
          // Its sightings while the tracker confirmed it (and before: ByteTracker's
          // PRE_TRACK_SIGHTINGS, a second or more) are played through as its frames would be
          // (replay): at 1 fps a track is confirmed (minConfirmFrames 3) 2 s after it was first
          // seen, and a forklift that crossed the zone meanwhile was never seen inside by it; its
          // path runs through the sure ones from one to the next (a person scored low walking
          // round the zone's corner, taken straight from the first to the confirmed one, went
          // through it); and one first seen in part has its path start at its first sure one.
          if (seenBefore) this.replay(id, st, seenBefore, shift, d, i, tMs, obsMs, prevFrame, events);
        }
        if (where !== 1) {
          const [x, y] = anchorPoint(d.xyxy, i, this.zone.anchor, this.pt);
          // A passage: seen outside, not inside since its last sighting outside (seen inside on
          // fewer than minHoldFrames frames, on the edge, or not at all), and its path since
          // went through the zone (a stall, a low frame rate, a fast mover, a small zone): it
          // entered and left between them. Before, a zone was judged only where a track was seen,
          // and a forklift that crossed a small zone between two frames raised nothing. The path
          // runs straight from sighting to sighting, through those on the edge: one who walked
          // round the zone on its edge went round it (before, the path ran straight from the last
          // sighting outside, through the zone: an entry and an exit for one who never went in).
          // Sightings inside on fewer than minHoldFrames frames are flicker, not on the path.
          // An entry and its exit, each once: the path from here on starts outside, beyond the zone.
          const path = st.path;
          if (offClass) resetPath(path);
          else if (!st.inside && st.outAt < tMs) this.zone.follow(st.outX, st.outY, st.outAt, x, y, tMs, this.zone.margin(d, i), path);
          if (where === -1) {
            if (!st.inside && !offClass && !Number.isNaN(path.passIn)) {
              const tIn = path.passIn, tOut = path.lastInside;
              if (stats.entered++ === 0) stats.seenIds?.clear();
              stats.exited++;
              events.push({ type: 'enter', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: 0, atMs: tIn });
              events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: tOut - tIn, atMs: tOut });
            }
            resetPath(path);
          }
          if (where === -1 || (!st.inside && st.outAt < tMs)) {
            st.outX = x;
            st.outY = y;
            st.outAt = tMs;
            for (let k = 0; k < 4; k++) st.outBox[k] = d.xyxy[i * 4 + k];
          }
        }
        st.lastSeen = tMs;
        st.lastSeenObs = obsMs;
        if (!offClass) {
          st.lastCountedObs = obsMs;
          st.offRun = 0;
        }
        if (offClass && raw === true && !st.inside) {
          // Neither counts for an entry being held nor breaks it, unless the track has had no
          // frame of a counted class for longer than exitDelayMs (as long as an unseen track is
          // kept): the entry starts over. Without a bound, the hold's frames of a counted class
          // could be minutes apart: a chair in a person zone (classAware false) labelled person on
          // one frame every 40 s entered as a person after 80 s. Not a count of frames in a row
          // (2d1fa1b: more than minHoldFrames): a person labelled person on one frame in five as
          // it walked in (runs of four others, 0.4 s at 10 fps) never entered. Nor a time alone:
          // with exitDelayMs 0 (or under a frame's time) each single other frame broke it, and a
          // person labelled chair on every third frame never entered. Both bounds: more than
          // minHoldFrames such frames in a row, over more than exitDelayMs.
          if (++st.offRun > hold && obsMs - st.lastCountedObs > this.options.exitDelayMs) st.streak = 0;
        } else if (raw !== undefined && raw !== st.inside) {
          if (st.streak++ === 0) {
            st.streakSince = tMs;
            st.inWhole = true;
          }
          if (raw && !Number.isNaN(st.outAt) && st.inWhole) st.inWhole = movedWhole(st.outBox, d.xyxy, i, this.zone.anchor, this.pt);
          if (st.streak >= hold || (!raw && exitAtOnce)) {
            this.turn(id, st, raw, i, obsMs, prevFrame, events);
          }
        } else {
          st.streak = 0;
        }
        const limit = this.options.dwellLimitMs;
        // Only on a frame that sees it inside: one seen outside (an exit being held) may have
        // left, and its stay then ended at the first of those frames.
        if (where !== -1 && st.inside && limit !== undefined && !st.dwellRaised && tMs - st.enteredAt >= limit) {
          st.dwellRaised = true;
          events.push({ type: 'dwell', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: tMs - st.enteredAt });
        }
      }
    }
    let occ = 0;
    // By key, not by entry (an array for each track on each frame, see LineCounter.update).
    for (const id of this.tracks.keys()) {
      const st = this.tracks.get(id)!;
      if (obsMs - st.lastSeenObs > this.options.exitDelayMs) this.gone(id, st, events);
      else if (st.inside) occ++;
    }
    this.occupancy = occ;
    return events;
  }

  /**
   * A new track's sightings before the tracker confirmed it (`seen`, first to last, in the
   * tracker's time: `shift` ms later than this zone's), played through as frames of a tracked one
   * are: the sure ones (sureOrigin: not a part of it seen from behind an occluder or cut off by
   * the picture's border) before this frame (`tMs`), each inside, outside or on the edge (the band
   * of the current box's height), with `minHoldFrames` for an entry and an exit, and the path
   * through those not inside for a passage. What they show is raised on this frame (row `i`),
   * each with its time (`atMs`): an entry as of the first of its frames inside, an exit as of the
   * first of its frames outside. The stay, its hold or its path goes on on this frame.
   * Before, only a passage was looked for among them (from the first sure one outside, and none
   * after a first one inside): a person scored low who walked in and stayed entered
   * minHoldFrames frames after the confirming one (up to 1.2 s after they went in, at 10 fps),
   * their dwell counted from there; one first seen inside who stepped out within minHoldFrames
   * frames of the confirmation never entered; a passage among them was dropped when the track
   * entered on its own frames, and one whose last sightings were inside, confirmed on its first
   * frame outside, raised nothing. O(sightings × points), once per track.
   */
  private replay(id: number, st: TrackInZone, seen: NonNullable<TrackOrigin['before']>, shift: number, d: Detections, i: number, tMs: number, obsMs: number, prevFrame: number, events: ZoneEvent[]): void {
    const zone = this.zone;
    const hold = Math.max(1, this.options.minHoldFrames);
    const exitAtOnce = this.options.exitOn === 'last-seen';
    const m = zone.margin(d, i);
    const stats = this.stats;
    const classIds = zone.classIds;
    // Frame time of the last sighting with a label the zone counts (update's lastCountedObs).
    let countedAt = -Infinity;
    for (const s of seen) {
      const ms = s.ms - shift;
      if (!(ms < tMs) || !sureOrigin(s.box, d.xyxy, i)) continue;
      // A sighting under a label the zone does not count (tracking.classAware false: the tracker
      // linked them whatever their labels) is taken as update takes such a frame of a track it
      // knows: it may leave, but it makes no entry and no passage (below). Before, every sighting
      // counted whatever its label: a chair in a person zone, labelled person for the three frames
      // that confirmed its track, entered as a person as of its first sighting as a chair.
      const offClass = classIds !== undefined && s.classId !== undefined && !classIds.has(s.classId);
      if (!offClass) {
        countedAt = ms;
        st.offRun = 0;
      }
      const [x, y] = anchorPoint(s.box, 0, zone.anchor, this.pt);
      const where = zone.inside(x, y, m) ? 1 : zone.outside(x, y, m) ? -1 : 0;
      if (where !== 1) {
        // The path through the sightings not inside (as on update's frames): a passage between two.
        const path = st.path;
        if (offClass) resetPath(path);
        else if (!st.inside && st.outAt < ms) zone.follow(st.outX, st.outY, st.outAt, x, y, ms, m, path);
        if (where === -1) {
          if (!st.inside && !offClass && !Number.isNaN(path.passIn)) {
            const tIn = path.passIn, tOut = path.lastInside;
            if (stats.entered++ === 0) stats.seenIds?.clear();
            stats.exited++;
            // Seen among the sightings before the track was confirmed (`early`): this frame may
            // show it anywhere (inside again, on the edge). Before, its message said the frame
            // showed it past the zone, also when it was confirmed inside.
            events.push({ type: 'enter', zone: zone.id, trackId: id, classId: st.classId, row: i, dwellMs: 0, atMs: tIn, early: true });
            events.push({ type: 'exit', zone: zone.id, trackId: id, classId: st.classId, row: i, dwellMs: tOut - tIn, atMs: tOut, early: true });
          }
          resetPath(path);
        }
        if (where === -1 || (!st.inside && st.outAt < ms)) {
          st.outX = x;
          st.outY = y;
          st.outAt = ms;
          st.outBox.set(s.box);
        }
      }
      const raw = where === 0 ? undefined : where === 1;
      if (offClass && raw === true && !st.inside) {
        // Neither counts for an entry being held nor breaks it, within update's bounds.
        if (++st.offRun > hold && ms - countedAt > this.options.exitDelayMs) st.streak = 0;
        continue;
      }
      if (raw === undefined || raw === st.inside) {
        st.streak = 0;
        continue;
      }
      if (st.streak++ === 0) {
        st.streakSince = ms;
        st.inWhole = true;
      }
      if (raw && !Number.isNaN(st.outAt) && st.inWhole) st.inWhole = movedWhole(st.outBox, s.box, 0, zone.anchor, this.pt);
      if (st.streak < hold && (raw || !exitAtOnce)) continue;
      this.turn(id, st, raw, i, obsMs, prevFrame, events);
    }
  }

  /**
   * Track `id` (`st`), held inside (`raw`) or outside for its hold since `st.streakSince`, now is:
   * an entry (or a stay taken over from a track of an id switch, takeOverStay) or an exit, raised
   * on row `i` of this frame, as of streakSince where that was among its sightings before the
   * tracker confirmed it (early). For update's frames and replay's sightings alike.
   */
  private turn(id: number, st: TrackInZone, raw: boolean, i: number, obsMs: number, prevFrame: number, events: ZoneEvent[]): void {
    const stats = this.stats;
    st.inside = raw;
    st.streak = 0;
    if (raw) {
      st.outAt = NaN;
      resetPath(st.path);
      if (this.takeOverStay(id, st, obsMs, prevFrame)) {
        stats.reidentified++;
      } else {
        st.enteredAt = st.streakSince;
        st.dwellRaised = false;
        if (stats.entered++ === 0) stats.seenIds?.clear();
        events.push({ type: 'enter', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: 0, ...this.early(st), happenedMs: st.streakSince });
      }
    } else {
      stats.exited++;
      events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: i, dwellMs: st.streakSince - st.enteredAt, ...this.early(st), happenedMs: st.streakSince });
    }
  }

  /** An entry or exit made now whose frames began among the track's sightings before it was confirmed: its time and `early` (ZoneEvent). */
  private early(st: TrackInZone): { atMs?: number; early?: true } {
    return st.streakSince < st.confirmedAt ? { atMs: st.streakSince, early: true } : {};
  }

  /**
   * Time inside so far of track `id` when this frame (`tMs`, after `update`) saw it inside a
   * stay, else undefined (not inside, in an exit being held, unseen on this frame, or gone).
   */
  stayOnFrame(id: number, tMs: number): number | undefined {
    const st = this.tracks.get(id);
    return st && st.inside && st.streak === 0 && st.lastSeen === tMs ? tMs - st.enteredAt : undefined;
  }

  /** The class track `id` counts as in this zone (the one it had when the zone first saw it), or undefined. */
  classOf(id: number): number | undefined {
    return this.tracks.get(id)?.classId;
  }

  /** Whether track `id` is in a stay (inside, seen or not; gone tracks are not). */
  staying(id: number): boolean {
    return this.tracks.get(id)?.inside === true;
  }

  /**
   * Drops a track unseen for longer than exitDelayMs; one inside exits as of its last sighting,
   * its stay ending there, or at its first frame seen outside when it vanished while that exit
   * was held (its last sightings were outside). One that vanished as it went in enters and exits
   * (see enteredWhenLost).
   */
  private gone(id: number, st: TrackInZone, events: ZoneEvent[], entersNow = false): void {
    if (st.inside) {
      this.stats.exited++;
      const end = st.streak > 0 ? st.streakSince : st.lastSeen;
      events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: -1, dwellMs: end - st.enteredAt, lastSeenMs: st.lastSeen, happenedMs: end });
    } else if (!entersNow) {
      this.enteredWhenLost(id, st, events);
    }
    this.tracks.delete(id);
  }

  /**
   * A track not inside that vanished as it went in: seen outside (beyond the band), then, as its
   * last sightings, inside beyond the band on fewer than minHoldFrames frames in a row, or on
   * the edge after a path through the zone (a passage not yet out). It went in — into a doorway
   * out of view, behind something inside — and its entry and exit are raised now (the entry
   * where it came in, the exit as of its last sighting, `row` −1). Before, nothing: a person who
   * ran into the zone and out of view within minHoldFrames frames was never alerted. A track
   * never seen outside is not taken in (a false detection inside: minConfirmFrames and
   * minHoldFrames stand). With reentrySuppressMs, a track of its class first seen within that
   * long after its last sighting, and inside now or entering, is taken to be it under a new id
   * (an id switch): that one's entry is its entry, and this one is counted as reidentified.
   */
  private enteredWhenLost(id: number, st: TrackInZone, events: ZoneEvent[]): void {
    if (Number.isNaN(st.outAt)) return;
    const enteringNow = st.streak > 0; // its last sightings were inside (an entry being held)
    if (!enteringNow && Number.isNaN(st.path.passIn)) return;
    // Inside only by a box that changed shape, not by one that moved (see movedWhole): a person
    // standing just outside whose legs a passer-by hid (the box's feet raised into the zone), or
    // one cut off by the picture's border, then lost, never went in.
    if (enteringNow && Number.isNaN(st.path.passIn) && !st.inWhole) return;
    const window = this.options.reentrySuppressMs ?? 0;
    if (window > 0) {
      for (const [oid, o] of this.tracks) {
        if (oid === id || o.classId !== st.classId || !(o.firstSeen > st.lastSeen) || o.firstSeen - st.lastSeen > window) continue;
        if (o.inside || o.streak > 0) {
          this.stats.reidentified++;
          return;
        }
      }
    }
    const tIn = Number.isNaN(st.path.passIn) ? st.streakSince : st.path.passIn;
    if (this.stats.entered++ === 0) this.stats.seenIds?.clear();
    this.stats.exited++;
    events.push({ type: 'enter', zone: this.zone.id, trackId: id, classId: st.classId, row: -1, dwellMs: 0, atMs: tIn, lastSeenMs: st.lastSeen });
    events.push({ type: 'exit', zone: this.zone.id, trackId: id, classId: st.classId, row: -1, dwellMs: st.lastSeen - tIn, lastSeenMs: st.lastSeen, happenedMs: st.lastSeen });
  }

  /**
   * Re-entry suppression: when a track inside of the same class went unseen (not seen on the
   * previous frame) at most `reentrySuppressMs` ago, and `st` was first seen after it was last
   * seen (an id switch's new id appears once the old one is gone: one seen beside it is
   * another object, which enters), `st` continues its stay and the old track is dropped. A
   * track whose last sightings were outside (an exit being held) was leaving: it is not taken
   * over (it exits, and a newcomer enters; were it the same object, it left and came back). The
   * most recently seen such track is taken. O(tracks in the zone), once per entry.
   */
  private takeOverStay(id: number, st: TrackInZone, obsMs: number, prevFrame: number): boolean {
    const window = this.options.reentrySuppressMs ?? 0;
    if (!(window > 0)) return false;
    let bestId = -1;
    let best: TrackInZone | undefined;
    for (const [oid, o] of this.tracks) {
      if (oid === id || !o.inside || o.streak > 0 || o.classId !== st.classId || o.lastSeen >= prevFrame || o.lastSeen >= st.firstSeen || obsMs - o.lastSeenObs > window) continue;
      if (!best || o.lastSeen > best.lastSeen) {
        best = o;
        bestId = oid;
      }
    }
    if (!best) return false;
    st.enteredAt = best.enteredAt;
    st.dwellRaised = best.dwellRaised;
    this.tracks.delete(bestId);
    this.takenOver.set(bestId, id);
    return true;
  }
}
