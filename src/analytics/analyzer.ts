import { unknownClassText } from '../config/classes.js';
import type { LineConfig, RuleConfig, SourceConfig, ZoneConfig } from '../config/schema.js';
import { Detections, type TrackOrigin } from '../core/detections.js';
import { ObservedTime, OUTAGE_MS } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Point } from '../core/polygon.js';
import { anchorPoint, noteSighting, sureOrigin, wayDistance, type LastSighting } from './anchor.js';
import { RateFloor, KOfN, rescaleDefects } from './conveyor.js';
import { Cooldown } from './cooldown.js';
import { LINE_MARGIN_MIN_PX, LINE_MARGIN_OF_SIDE, LineCounter, lineStats, type LineEvent, type LineStats } from './line.js';
import { toPixels } from './polygon.js';
import { explain, SEEN_INSTEAD_TOP, type LineReport, type SourceAnalyticsReport, type ZoneReport } from './report.js';
import { PolygonZone, ZoneMonitor, zoneStats, type ZoneEvent, type ZoneStats } from './zone.js';
import type { AlertBody, AnalyticsSummary } from './published.js';

// The published shapes are zod schemas in ./published.ts (the message JSON Schema is built from them).
export type { AlertBody, AnalyticsSummary } from './published.js';
export type { LineReport, SourceAnalyticsReport, ZoneReport } from './report.js';

/** An alert before it gets its id, stamps and snapshot. */
export interface AlertDraft extends Omit<AlertBody, 'id'> {
  /** Row of the detection that triggered it (−1: none). */
  row: number;
}

/** Resolves label names to class ids, or throws a config error naming the field. */
function classIds(names: readonly string[] | undefined, labels: readonly string[], field: string): Set<number> | undefined {
  if (!names) return undefined;
  return new Set(
    names.map((n, i) => {
      const idx = labels.indexOf(n);
      // Said as config/classes.ts says it (a start checks them all there first).
      if (idx < 0) throw new ArgusError(ErrorCodes.CONFIG, unknownClassText(n, labels, `${field}[${i}]`));
      return idx;
    }),
  );
}

/** What a conveyor-rate rule counts, for its alerts (built only for an alert, not on every frame). */
const conveyorWhere = (r: { line?: string; zone?: string }) => (r.line !== undefined ? { line: r.line } : { zone: r.zone! });
const conveyorName = (r: { line?: string; zone?: string }) => (r.line !== undefined ? `line ${r.line}` : `zone ${r.zone}`);

/** A conveyor-defect rule's state: K of N over the rule's frames (untracked detections), and per item (track id). */
interface DefectRule {
  kofn: KOfN;
  match: (c: number) => boolean;
  minScore: number;
  /** Tracked items seen as a defect in their last N frames, or alerted and not yet forgotten (DEFECT_FORGET_MS). */
  items: Map<number, DefectItem>;
  /** The latest alerts of rows with no track id, with tracking on (at most UNTRACKED_ALERTS_KEPT): each row's box (xyxy) and frame time. */
  untrackedAlerts: UntrackedAlert[];
  /** The frame time of the last frame defectItems saw (the tracker's times of a new id's first sightings are shifted to it, as LineCounter does). */
  lastMs: number;
}

/** How many alerts of untracked rows a conveyor-defect rule remembers the box of: a track is confirmed a few frames after its first sighting. */
const UNTRACKED_ALERTS_KEPT = 8;

interface DefectItem extends LastSighting {
  kofn: KOfN;
  /** Its row on this frame when that shows it as a defect, else −1 (set and read by defectItems). */
  row: number;
  /** Observed time of its last sighting (any label). */
  seenMs: number;
  alerted: boolean;
  /** Its box's centre at its last sighting (lx, ly), that frame's time, its pace and its box: where it may be found under a new id (wayDistance). */
  lastBox: Float32Array;
}

/**
 * How long an alerted conveyor-defect item may have been gone (last sighting to a new id's first,
 * frame time) for a new id found on its way to be it (an id switch: no second alert), ms: the
 * tracker's lost-track buffer (default 1 s, after which it gives a new id) and some. A longer gap
 * is another item.
 */
const DEFECT_SWITCH_MS = 2000;

/**
 * How long an item alerted by a conveyor-defect rule is remembered unseen, ms (observed time):
 * past the tracker's lost-track buffer (default 1 s) its id never comes back, so this only bounds
 * the memory of items gone.
 */
const DEFECT_FORGET_MS = 60_000;

/**
 * A line-cross rule's latch (crossLatch) on a direction it alerted is released once the track has
 * stayed beyond the margin on the side it crossed from, for this long (observed time): it went
 * back and came again, not a shuffle on the line (a step each way every second or two). Before,
 * only a body's size from the line released it: a person who went in at a restricted door,
 * stepped back out to a bench beside it (30 px from the line, a 100 px tall box) and went in again
 * half a minute later raised nothing; a forklift, whose body's size is its long side (hundreds of
 * pixels, more than the picture has on one side of a line across its middle), was never alerted
 * twice.
 */
const CROSS_LATCH_AWAY_MS = 5000;

/**
 * What an alert's message says of an event seen among a new track's earlier sightings (the
 * tracker's, before it confirmed the track) and raised on the frame that confirmed it, after its
 * time (`at … s`).
 */
const EARLY = 'seen before its track was confirmed; raised once it was';

/**
 * A rule's cooldown still running as a source's chain ends, as another chain of the source (an
 * argus worker's camera moved to another worker) takes it over (SourceAnalyzer.handover,
 * takeOver): `leftMs` of it left. A cooldown per track (zone and line rules) comes with where that
 * track was last seen (`box`: x1, y1, x2, y2 as fractions of the picture) and, for a line rule,
 * the direction: the new chain's tracker gives the object a new id, and takes the cooldown for the
 * track it first alerts there (IoU at least CARRIED_IOU, or its box's centre inside that box) for
 * what happened within CARRIED_TAKE_MS of its first frame. Only a track the former chain saw at
 * its end (within CARRIED_SEEN_MS) is handed over: the cooldown is that person's, not the place's.
 * A rule's own cooldown (conveyor rules) has no box. `open`: a conveyor-rate rule's stoppage
 * announced and not yet resumed (its cooldown may have run out: `leftMs` 0): the new chain does
 * not announce it again, and announces its end.
 */
export interface CarriedCooldown {
  rule: string;
  leftMs: number;
  box?: [number, number, number, number];
  dir?: 'in' | 'out';
  open?: true;
}

/** The most cooldowns a chain hands over (the longest left first): a worker's release record stays small. */
export const MAX_CARRIED_COOLDOWNS = 64;
/** How much a new track's box must overlap a carried one's (IoU) to take its cooldown (or its centre lie inside it). */
const CARRIED_IOU = 0.3;
/** Alerted tracks whose last box is followed for a hand-over at most (the latest kept). */
const ALERTED_BOXES_KEPT = 1024;
/**
 * A track's cooldown is handed over only if the chain saw the track this long before its last
 * frame at most: one gone from view (out through a door) is not there for the new chain to see,
 * and its cooldown, matched by place, would only hold back the next person there. Before, it was
 * handed over, and the new owner did not alert someone else who came in where they had left.
 */
const CARRIED_SEEN_MS = 1000;
/**
 * A carried track's cooldown is taken only by an alert of what happened this long after the new
 * chain's first frame at most (an entry's, a crossing's time): the person still there at the
 * move, seen from the new chain's start (its tracker's confirmation and a zone's hold at 1 fps
 * included). Before, for the whole cooldown: the alerted person gone as the camera moved,
 * someone else who came to that place a minute later (a door) was not alerted.
 */
const CARRIED_TAKE_MS = 5000;

/**
 * A time on the pts scale (s) as an alert's message gives it, to a tenth: one just before a
 * step back of the pts (negative, under 0.05 s) is "0.0", not "-0.0" (toFixed keeps the sign of
 * a number that rounds to zero).
 */
function secondsText(s: number): string {
  return (Math.round(s * 10) / 10 || 0).toFixed(1);
}

/** How far apart (a ratio) a frameSize's shape and the picture's may be before stretchNotices speaks: a few pixels of rounding. */
const STRETCH_TOLERANCE = 0.02;

/**
 * Zones, lines and rules of one source: fed with tracked detections, returns the figures
 * for the message and the alerts to raise (after cooldown and de-duplication).
 */
export class SourceAnalyzer {
  private zones: ZoneMonitor[] = [];
  private lines: LineCounter[] = [];
  private readonly zoneCfg: ZoneConfig[];
  private readonly lineCfg: LineConfig[];
  private readonly rules: RuleConfig[];
  private readonly zoneClasses: (Set<number> | undefined)[];
  private readonly lineClasses: (Set<number> | undefined)[];
  private readonly cooldowns = new Map<string, Cooldown>();
  private readonly rates = new Map<string, RateFloor>();
  /** The conveyor-rate rules' floors, in the rules' order (the summary's rates). */
  private readonly rateList: [string, RateFloor][] = [];
  /** The last summary built (summaryOf) and the figures it was built from (each zone's occupancy and entries, each line's crossings, each rate). */
  private summary?: AnalyticsSummary;
  private summaryKey = new Float64Array(0);
  private readonly defects = new Map<string, DefectRule>();
  /** Counts of each zone and line over the run. */
  private readonly zoneStats: ZoneStats[];
  private readonly lineStats: LineStats[];
  /** This frame's zone and line events (process), the same lists from frame to frame. */
  private readonly zoneEvents: ZoneEvent[] = [];
  private readonly lineEvents: LineEvent[] = [];
  private readonly label = (c: number): string => this.labels[c] ?? String(c);
  /** Alerts raised so far by rule id. */
  private readonly alertCounts = new Map<string, number>();
  /**
   * zone-dwell alerts their rule's cooldown held back, by rule id: the tracks whose stay goes
   * on are alerted once the cooldown allows (a cooldown spaces alerts out; it does not hide a
   * stay that lasts beyond it), on a frame that sees them inside.
   */
  private readonly dwellHeld = new Map<string, Set<number>>();
  /**
   * line-cross rules' tracks that raised an alert and have not got a body's size from the line
   * since (crossLatch): by rule id, track id → the directions alerted (1 in, 2 out) and the
   * observed time it was last seen.
   */
  private readonly crossLatched = new Map<string, Map<number, CrossLatch>>();
  private readonly pt: [number, number] = [0, 0];
  /** conveyor-rate rules whose current stoppage was alerted: its `resumed` follows. */
  private readonly stopAlerted = new Set<string>();
  /** The frames' time with stalls counted as one usual gap, for the zones' and lines' unseen timeouts and the conveyor rates. */
  private readonly observed = new ObservedTime(OUTAGE_MS);
  /** The same without the outage bound, for the conveyor rates: no length of outage is evidence that a belt stopped. */
  private readonly observedRates = new ObservedTime();
  private ready = false;
  /** Where each track alerted under a rule with a cooldown was last seen (fractions of the picture): handover names it. */
  private readonly alertBoxes = new Map<number, Float64Array>();
  /** Cooldowns handed over by the source's former chain (takeOver), applied at the next frame. */
  private carryIn: CarriedCooldown[] | undefined;
  /** Carried per-track cooldowns not yet taken by a track here: the place, and until when (frame time) they run. */
  private readonly places: { rule: string; dir?: 'in' | 'out'; box: readonly number[]; untilMs: number }[] = [];
  /** The frame time after which what happens takes no carried cooldown (CARRIED_TAKE_MS after this chain's first frame with some). */
  private takeByMs = -Infinity;
  /** Notices given, by field and the picture's shape or size: stretched points (stretchNotices), a zone its marginPx closes. */
  private readonly warned = new Set<string>();
  /** The first frame's size (pixel points are given for it) and the current one. */
  private firstSize?: { width: number; height: number };
  private size?: { width: number; height: number };
  /** The last frame's pts, ms, and how far the frames' time (process) runs ahead of the pts after their steps back. */
  private lastPtsMs = NaN;
  private ptsOffset = 0;
  /** The last frame's observed times (process: lines, rates), for finish. */
  private lastObsMs = NaN;
  private lastRateMs = NaN;

  constructor(
    readonly source: SourceConfig,
    private readonly labels: readonly string[],
    /** Config path of this source, e.g. `sources[0]`, for error messages. */
    private readonly path: string,
    /** Told of pixel points stretched onto a picture of another shape than their frameSize (stretchNotices), and of a zone its marginPx closes. */
    private readonly warn?: (message: string) => void,
  ) {
    this.zoneCfg = source.zones;
    this.lineCfg = source.lines;
    this.rules = source.rules;
    this.zoneClasses = source.zones.map((z, i) => classIds(z.classes, labels, `${path}.zones[${i}].classes`));
    this.lineClasses = source.lines.map((l, i) => classIds(l.classes, labels, `${path}.lines[${i}].classes`));
    this.zoneStats = this.zoneClasses.map((c) => zoneStats(c !== undefined));
    this.lineStats = this.lineClasses.map((c) => lineStats(c !== undefined));
    source.rules.forEach((r, i) => {
      this.alertCounts.set(r.id, 0);
      this.cooldowns.set(r.id, new Cooldown(r.cooldownSec * 1000));
      if (r.type === 'conveyor-rate') this.rates.set(r.id, new RateFloor(r.minPerMinute, r.forSec * 1000, r.windowSec * 1000));
      if (r.type === 'conveyor-defect') {
        const defect = classIds(r.classes, labels, `${path}.rules[${i}].classes`);
        const allowed = classIds(r.allowed, labels, `${path}.rules[${i}].allowed`);
        this.defects.set(r.id, { kofn: new KOfN(r.k, r.n), match: defect ? (c) => defect.has(c) : (c) => !allowed!.has(c), minScore: r.minScore, items: new Map(), untrackedAlerts: [], lastMs: NaN });
      }
    });
    this.rateList.push(...this.rates);
  }

  get empty(): boolean {
    return this.zoneCfg.length === 0 && this.lineCfg.length === 0 && this.rules.length === 0;
  }

  /**
   * Places zones and lines in pixels once the frame size is known; pixel points outside that
   * first frame are a config error (unless their frameSize says what picture they were read
   * from). Called again when the source changes its resolution, it moves them to the new size
   * and keeps what they know of each track (who is inside, since when, on which side of a
   * line): fractions are taken of the new size, and pixel points are scaled from their
   * frameSize, else from the first frame's size, to the new one (the camera's view is the same).
   */
  init(width: number, height: number): void {
    const first = this.firstSize;
    if (first && this.size && this.size.width === width && this.size.height === height) return;
    if (!first) {
      // Each point named by its field: a zone's `polygon[j]`, a line's `from` / `to`.
      const check = (pts: readonly Point[], fields: readonly string[]) =>
        pts.forEach((p, j) => {
          if (p[0] > width || p[1] > height) throw new ArgusError(ErrorCodes.CONFIG, `${this.path}.${fields[j]}: point [${p.join(', ')}] is outside the ${width}x${height} frame (give the size of the picture the points were read from as frameSize, and they are scaled from it)`);
        });
      this.zoneCfg.forEach((z, i) => z.units === 'pixel' && !z.frameSize && check(z.polygon, z.polygon.map((_, j) => `zones[${i}].polygon[${j}]`)));
      this.lineCfg.forEach((l, i) => l.units === 'pixel' && !l.frameSize && check([l.from, l.to], [`lines[${i}].from`, `lines[${i}].to`]));
    }
    // Once per field and shape of picture: a camera switching profiles back and forth says it once.
    if (this.warn) {
      for (const { field, text } of this.stretchNotices(width, height)) {
        const key = `${field} ${(width / height).toFixed(3)}`;
        if (this.warned.has(key)) continue;
        this.warned.add(key);
        this.warn(text);
      }
    }
    const firstBase = first ?? { width, height };
    const place = (pts: readonly Point[], units: 'fraction' | 'pixel', frameSize: readonly [number, number] | undefined) => {
      if (units !== 'pixel') return toPixels(pts, width, height);
      return toPixels(pts, width, height, frameSize ? { width: frameSize[0], height: frameSize[1] } : firstBase);
    };
    // A margin is a length in the pixels its points are given in (pixel points: their frameSize's
    // picture, else the first picture's; fractions: the first picture's), scaled with them (a
    // zone's by the geometric mean of the two factors, for a picture of another shape). Before, it stayed
    // that many pixels of whatever picture came: a camera switching from 1080p to 360p had a
    // line's 30 px band (90 px of the 1080p view) count nobody who crossed by less than that.
    const scaleOf = (units: 'fraction' | 'pixel', frameSize: readonly [number, number] | undefined) => {
      const base = units === 'pixel' && frameSize ? { width: frameSize[0], height: frameSize[1] } : firstBase;
      return { sx: width / base.width, sy: height / base.height, base };
    };
    const zoneMargin = (i: number) => {
      const z = this.zoneCfg[i];
      if (z.marginPx === undefined) return undefined;
      const { sx, sy } = scaleOf(z.units, z.frameSize);
      return z.marginPx * Math.sqrt(sx * sy);
    };
    // A line's margin is a distance across it: scaled as the picture scales that direction, sx·sy
    // over how much the line's own direction is stretched (sy for a level line, sx for an upright
    // one). The geometric mean of the two was off by up to their ratio's root: a level line's
    // 30 px band drawn on a 1920x1080 screenshot of a 640x1080 picture was 17 px of it, not 30,
    // and a person's jitter 20 px either side of it was counted crossing again and again.
    // Without marginPx, LINE_MARGIN_OF_SIDE of the first picture's smaller side, scaled alike
    // (in pixels of that picture whatever the points' units: 1/48 of the smaller side of a
    // frameSize of another shape, scaled across the line, was 7.5 px of a 640x1080 picture for
    // an upright line drawn on a 1920x1080 screenshot of it and 22.5 for a level one, not 13.3).
    const lineMargin = (i: number, from: Point, to: Point) => {
      const l = this.lineCfg[i];
      const { sx, sy, base } = scaleOf(l.marginPx === undefined ? 'fraction' : l.units, l.frameSize);
      const m = l.marginPx ?? Math.max(LINE_MARGIN_MIN_PX, LINE_MARGIN_OF_SIDE * Math.min(base.width, base.height));
      const vx = to[0] - from[0], vy = to[1] - from[1];
      const along = Math.hypot(vx, vy);
      if (!(along > 0)) return m * Math.sqrt(sx * sy);
      return (m * sx * sy * Math.hypot(vx / sx, vy / sy)) / along;
    };
    const zonePolygon = (i: number) => new PolygonZone(this.zoneCfg[i].id, place(this.zoneCfg[i].polygon, this.zoneCfg[i].units, this.zoneCfg[i].frameSize), this.zoneClasses[i], this.zoneCfg[i].anchor, zoneMargin(i), { width, height });
    const lineEnds = (i: number) => place([this.lineCfg[i].from, this.lineCfg[i].to], this.lineCfg[i].units, this.lineCfg[i].frameSize);
    if (first && this.size) {
      const sx = width / this.size.width, sy = height / this.size.height;
      this.zones.forEach((z, i) => z.place(zonePolygon(i), sx, sy));
      for (const df of this.defects.values()) rescaleDefects(df.untrackedAlerts, df.items.values(), sx, sy);
      this.lines.forEach((l, i) => {
        const [from, to] = lineEnds(i);
        l.place(from, to, sx, sy, { width, height }, lineMargin(i, from, to));
      });
    } else {
      this.firstSize = { width, height };
      this.zones = this.zoneCfg.map((z, i) => {
        const dwell = z.dwellLimitSec !== undefined ? z.dwellLimitSec * 1000 : undefined;
        const options = { minHoldFrames: z.minHoldFrames, dwellLimitMs: dwell, exitDelayMs: z.exitDelayMs, exitOn: z.exitOn, reentrySuppressMs: z.reentrySuppressMs };
        return new ZoneMonitor(zonePolygon(i), options, this.zoneStats[i]);
      });
      this.lines = this.lineCfg.map((l, i) => {
        const [from, to] = lineEnds(i);
        return new LineCounter(l.id, from, to, { marginPx: lineMargin(i, from, to), anchor: l.anchor, classIds: this.lineClasses[i], forgetAfterMs: l.forgetAfterMs }, this.lineStats[i], { width, height });
      });
      this.summaryKey = new Float64Array(this.zones.length * 2 + this.lines.length + this.rateList.length).fill(NaN);
      this.summary = undefined;
    }
    // A zone whose marginPx leaves no point inside beyond the band is never entered: said once per zone and size.
    if (this.warn) {
      this.zoneCfg.forEach((z, i) => {
        const key = `zones[${i}].marginPx ${width}x${height}`;
        if (z.marginPx === undefined || this.warned.has(key) || zonePolygon(i).enterable()) return;
        this.warned.add(key);
        const m = zoneMargin(i)!;
        this.warn!(
          `${this.path}.zones[${i}].marginPx: ${z.marginPx} px${m === z.marginPx ? '' : ` (${+m.toPrecision(3)} px in this picture)`} leaves no point of zone '${z.id}' more than that inside its edges in the ${width}x${height} picture: nothing can ever enter it (an anchor within marginPx of an edge is on the edge); keep it below half the zone's narrowest width`,
        );
      });
      // Likewise a line with no point of the picture beyond its margin on one side (drawn along the
      // border, or a margin wider than the picture): nothing can ever cross it.
      this.lines.forEach((l, i) => {
        const key = `lines[${i}] ${width}x${height}`;
        if (this.warned.has(key)) return;
        const d = [l.signedDistance(0, 0), l.signedDistance(width, 0), l.signedDistance(0, height), l.signedDistance(width, height)];
        const m = l.marginPx;
        const short = Math.max(...d) <= m ? 'left' : -Math.min(...d) <= m ? 'right' : undefined;
        if (!short) return;
        this.warned.add(key);
        this.warn!(
          `${this.path}.lines[${i}]: no point of the ${width}x${height} picture is more than marginPx (${+m.toPrecision(3)} px) on the ${short} of line '${this.lineCfg[i].id}' (from→to as seen on screen): nothing can ever cross it; draw it inside the picture, or lower marginPx`,
        );
      });
    }
    this.size = { width, height };
    this.ready = true;
  }

  /**
   * One line per zone or line whose pixel points' frameSize has another shape than a
   * `width × height` picture (more than 2 % apart): its points are scaled by different factors
   * across and down, which is right only if they were read from a stretched picture of the
   * same view.
   */
  private stretchNotices(width: number, height: number): { field: string; text: string }[] {
    const notices: { field: string; text: string }[] = [];
    const check = (field: string, units: 'fraction' | 'pixel', frameSize: readonly [number, number] | undefined) => {
      if (units !== 'pixel' || !frameSize) return;
      const [fw, fh] = frameSize;
      const sx = width / fw;
      const sy = height / fh;
      if (Math.abs(sx / sy - 1) <= STRETCH_TOLERANCE) return;
      // Three significant digits, as a plain number however large (toPrecision wrote 1.64e+4).
      const n = (v: number) => (v >= 100 ? Math.round(v) : +v.toPrecision(3));
      notices.push({
        field,
        text: `${this.path}.${field}: ${fw}x${fh} is not the shape of the source's ${width}x${height} picture (${n(fw / fh)} against ${n(width / height)} wide for high): its points are stretched, ×${n(sx)} across and ×${n(sy)} down. Right only if they were read from a stretched picture of this view; else give the size of the picture they were read from`,
      });
    };
    this.zoneCfg.forEach((z, i) => check(`zones[${i}].frameSize`, z.units, z.frameSize));
    this.lineCfg.forEach((l, i) => check(`lines[${i}].frameSize`, l.units, l.frameSize));
    return notices;
  }

  /** Zones and lines in pixels, for drawing. */
  geometry(): { zones: { id: string; polygon: readonly Point[] }[]; lines: { id: string; from: Point; to: Point }[] } {
    return { zones: this.zones.map((z) => ({ id: z.zone.id, polygon: z.zone.polygon })), lines: this.lines.map((l) => ({ id: l.id, from: l.from, to: l.to })) };
  }

  /**
   * Counts over the run so far: per zone and line, entries, exits, crossings per direction,
   * alerts per rule; for a class-filtered zone or line that counted nothing, the labels seen
   * there instead (see ZoneStats and LineStats for what is tallied), and a note saying so.
   */
  report(): SourceAnalyticsReport {
    const label = (c: number) => this.labels[c] ?? String(c);
    const named = (m: Map<number, number>) => Object.fromEntries([...m].map(([c, n]) => [label(c), n]));
    const alertsOf = (pick: (r: RuleConfig) => boolean) => Object.fromEntries(this.rules.filter(pick).map((r) => [r.id, this.alertCounts.get(r.id) ?? 0]));
    // Keyed by id through fromEntries (own properties), as the message's figures are: an id is
    // any name of letters, digits, . _ -, and `zones['__proto__'] = …` set the prototype, so
    // such a zone was missing from the report.
    const zones: Record<string, ZoneReport> = Object.fromEntries(
      this.zoneCfg.map((z, i): [string, ZoneReport] => {
        const st = this.zoneStats[i];
        return [
          z.id,
          {
            ...(z.classes ? { classes: [...z.classes] } : {}),
            entered: st.entered,
            exited: st.exited,
            occupancy: this.ready ? this.zones[i].occupancy : 0,
            reidentified: st.reidentified,
            alerts: alertsOf((r) => 'zone' in r && r.zone === z.id),
            ...(st.seenInstead && st.entered === 0 ? { seenInstead: st.seenInstead.top(SEEN_INSTEAD_TOP, label) } : {}),
          },
        ];
      }),
    );
    const lines: Record<string, LineReport> = Object.fromEntries(
      this.lineCfg.map((l, i): [string, LineReport] => {
        const st = this.lineStats[i];
        return [
          l.id,
          {
            ...(l.classes ? { classes: [...l.classes] } : {}),
            in: st.in,
            out: st.out,
            byClass: { in: named(st.countIn), out: named(st.countOut) },
            alerts: alertsOf((r) => 'line' in r && r.line === l.id),
            ...(st.seenInstead && st.in + st.out === 0 ? { seenInstead: st.seenInstead.top(SEEN_INSTEAD_TOP, label) } : {}),
          },
        ];
      }),
    );
    return { zones, lines, alerts: Object.fromEntries(this.alertCounts), notes: explain(zones, lines) };
  }

  /**
   * A zone alert. One of a track gone (`row` −1: unseen for exitDelayMs) is `late`: raised on a
   * frame after its last sighting (`lastSeenPts`), which does not show it (or, after a gap with
   * no frame in between, shows it back as a new stay), and its message says so. Its snapshot is
   * of that frame: the frame it was last seen on is not held (it went back to the source's pool
   * once published; keeping each frame's picture for exitDelayMs in case a track vanishes would
   * be a copy of every frame).
   */
  private zoneAlert(r: RuleConfig & { zone: string }, want: 'enter' | 'exit' | 'dwell', trackId: number, classId: number, row: number, dwellMs: number, lastSeenMs: number | undefined, atMs?: number, early?: boolean): AlertDraft {
    const verb = want === 'enter' ? 'entered' : want === 'exit' ? 'left' : `has stayed ${(dwellMs / 1000).toFixed(1)} s in`;
    const label = this.labels[classId] ?? String(classId);
    const atPts = atMs !== undefined ? Math.round(atMs - this.ptsOffset) / 1000 : undefined;
    const lastSeenPts = lastSeenMs !== undefined ? (lastSeenMs - this.ptsOffset) / 1000 : undefined;
    const late = row < 0;
    let message = `${label} #${trackId} ${verb} zone ${r.zone}`;
    if (late) {
      const at = atPts !== undefined && want === 'enter' ? ` at ${secondsText(atPts)} s` : '';
      const seen = lastSeenPts !== undefined ? `, last seen at ${secondsText(lastSeenPts)} s` : '';
      message += `${at} (late: raised once it was gone${seen}${want === 'enter' ? ' going in' : ''}; this frame is a later one)`;
    } else if (atPts !== undefined && early) {
      // Seen among the sightings before its track was confirmed (ZoneEvent.early).
      message += ` at ${secondsText(atPts)} s (${EARLY})`;
    } else if (atPts !== undefined) {
      // A passage: through the zone between two sightings, raised on the later one, which shows it beyond the zone.
      message += ` at ${secondsText(atPts)} s (went through it between two sightings; this frame shows it past the zone)`;
    }
    return {
      rule: r.id,
      severity: r.severity,
      event: `zone.${want}`,
      message,
      trackId,
      zone: r.zone,
      row,
      ...(want !== 'enter' ? { dwellMs: Math.round(dwellMs) } : {}),
      ...(lastSeenPts !== undefined ? { lastSeenPts } : {}),
      ...(atPts !== undefined ? { atPts } : {}),
      ...(late ? { late: true } : {}),
    };
  }

  /**
   * Dwell alerts of rule `r` its cooldown held back (`held`, track ids): a track whose stay has
   * ended is dropped (one taken over by a new id passes it on); one this frame sees inside is alerted once the cooldown allows, with its
   * time inside so far. O(held tracks × rows), on frames with such tracks only.
   */
  private raiseHeldDwell(r: RuleConfig & { zone: string }, held: Set<number>, d: Detections, tMs: number, alerts: AlertDraft[]): void {
    const zone = this.zones.find((z) => z.zone.id === r.zone)!;
    const cd = this.cooldowns.get(r.id)!;
    for (const id of held) {
      if (!zone.staying(id)) {
        held.delete(id);
        // An id switch: the new id goes on with the stay (and its dwell alert).
        const next = zone.takenOver.get(id);
        if (next !== undefined) held.add(next);
        continue;
      }
      const dwellMs = zone.stayOnFrame(id, tMs);
      if (dwellMs === undefined || !cd.allow(`${id}`, tMs)) continue;
      held.delete(id);
      const row = d.trackerId!.indexOf(id);
      alerts.push(this.zoneAlert(r, 'dwell', id, zone.classOf(id) ?? d.classId[row], row, dwellMs, undefined));
    }
  }

  /**
   * Stays zone `z` saw taken over by a new id on this frame (reentrySuppressMs): the zone rules'
   * cooldowns of the old id go on under the new one, as the object is the same. Before, a
   * dwell alert held back by its cooldown and passed on to the new id was raised at once (the
   * new id had no cooldown yet): the cooldown was per id, not per stay.
   */
  private carryCooldowns(z: ZoneMonitor): void {
    for (const r of this.rules) {
      if ((r.type !== 'zone-enter' && r.type !== 'zone-exit' && r.type !== 'zone-dwell') || r.zone !== z.zone.id) continue;
      const cd = this.cooldowns.get(r.id)!;
      for (const [from, to] of z.takenOver) cd.carry(`${from}`, `${to}`);
    }
    if (this.alertBoxes.size) for (const [from, to] of z.takenOver) this.followAs(from, to);
  }

  /**
   * The tracks of line-cross rule `ruleId` (line `lineId`) latched by an alert: each that is seen
   * on this frame with its anchor more than its box's larger side from the line (either side), or
   * that the line has forgotten (unseen for its forgetAfterMs), is released, so its next crossing
   * in an alerted direction is alerted again; a direction is also released once the track has
   * stayed beyond the margin on the side that direction starts from for CROSS_LATCH_AWAY_MS. Before, every crossing was: a person shuffling
   * on a door line, feet ±20 px about it (margin 10), raised an `in` alert every 2 s. The counts
   * are not touched (each crossing counts, as supervision's LineZone counts). O(rows).
   */
  private crossLatch(ruleId: string, lineId: string, d: Detections, obsMs: number): Map<number, CrossLatch> {
    let latched = this.crossLatched.get(ruleId);
    if (!latched) this.crossLatched.set(ruleId, (latched = new Map()));
    if (latched.size === 0) return latched;
    const line = this.lines.find((l) => l.id === lineId);
    const ids = d.trackerId;
    if (line && ids) {
      for (let i = 0; i < d.length; i++) {
        const latch = latched.get(ids[i]);
        if (!latch) continue;
        latch.seenMs = obsMs;
        const [x, y] = anchorPoint(d.xyxy, i, line.options.anchor, this.pt);
        const size = Math.max(d.xyxy[i * 4 + 2] - d.xyxy[i * 4], d.xyxy[i * 4 + 3] - d.xyxy[i * 4 + 1]);
        const dist = line.signedDistance(x, y);
        if (Math.abs(dist) > size) {
          latched.delete(ids[i]);
          continue;
        }
        // Beyond the margin on one side for CROSS_LATCH_AWAY_MS: the direction that ends on the other is released.
        const side = dist > line.marginPx ? 1 : dist < -line.marginPx ? -1 : 0;
        if (side !== latch.side) {
          latch.side = side;
          latch.sideSince = obsMs;
        } else if (side !== 0 && obsMs - latch.sideSince >= CROSS_LATCH_AWAY_MS) {
          latch.dirs &= side === 1 ? ~2 : ~1;
          if (latch.dirs === 0) latched.delete(ids[i]);
        }
      }
    }
    const forget = line?.options.forgetAfterMs ?? 0;
    // By key, not by entry (an array for each track on each frame, see LineCounter.update).
    for (const id of latched.keys()) if (obsMs - latched.get(id)!.seenMs > forget) latched.delete(id);
    return latched;
  }

  /**
   * A conveyor-defect rule on tracked detections: K of the last N frames per item (track id),
   * one alert per item, the first time its frames reach K. Frames the tracker saw it on before
   * it confirmed it (Detections.trackOrigins) count as they showed it; one of them alerted
   * without an id (the rule's own frames, in `process`) is that item's alert. Before, the rule was judged on the frames alone, its
   * cooldown per rule: a defective item that stopped under the camera raised an alert every
   * cooldownSec, and a second one within the cooldown of the first raised nothing.
   * O(rows + items) a frame.
   */
  private defectItems(r: RuleConfig & { type: 'conveyor-defect' }, df: DefectRule, d: Detections, obsMs: number, tMs: number, alerts: AlertDraft[]): void {
    const ids = d.trackerId!;
    const hit = (c: number, score: number) => score >= df.minScore && df.match(c);
    const xyxy = d.xyxy;
    for (let i = 0; i < d.length; i++) {
      const id = ids[i];
      if (id < 0) continue;
      const now = hit(d.classId[i], d.confidence[i]);
      let item = df.items.get(id);
      if (!item) {
        const origin = d.trackOrigins?.get(id);
        const before = origin?.before;
        const earlier = before ? before.reduce((n, b) => n + (b.classId !== undefined && hit(b.classId, b.score ?? 0) ? 1 : 0), 0) : 0;
        if (!now && earlier === 0) continue;
        // Alerted already if one of its first sightings was, without an id (the rule's frames: K ≤ those sightings),
        // or if it is an alerted item the tracker lost and found again under this new id (handOver).
        // Or if it is an item alerted without an id just before its first sighting, where that was (a label that changed before the
        // tracker confirmed it, class aware: a new tentative track).
        const firstMs = origin ? origin.ms - (before ? before[before.length - 1].ms - df.lastMs : 0) : NaN;
        const alerted = (!!origin && takeUntrackedAlert(df, id, origin.box, firstMs, before)) || (!!origin && this.defectHandOver(df, ids, origin.box, firstMs, obsMs));
        item = { kofn: new KOfN(r.k, r.n), row: -1, seenMs: obsMs, alerted, lx: NaN, ly: NaN, lastFrame: NaN, vx: NaN, vy: NaN, lastBox: new Float32Array(4) };
        for (const b of before ?? []) item.kofn.push(b.classId !== undefined && hit(b.classId, b.score ?? 0));
        df.items.set(id, item);
      }
      item.seenMs = obsMs;
      // Where it was last seen and its pace, for defectHandOver.
      noteSighting(item, (xyxy[i * 4] + xyxy[i * 4 + 2]) / 2, (xyxy[i * 4 + 1] + xyxy[i * 4 + 3]) / 2, tMs, xyxy, i);
      if (now && item.row < 0) item.row = i;
    }
    df.lastMs = tMs;
    for (const [id, item] of df.items) {
      const row = item.row;
      item.row = -1;
      const firing = item.kofn.push(row >= 0);
      if (firing && row >= 0 && !item.alerted) {
        item.alerted = true;
        const label = this.label(d.classId[row]);
        alerts.push({ rule: r.id, severity: r.severity, event: 'conveyor.defect', message: `${label} #${id} seen on ${item.kofn.hits} of the last ${r.n} frames`, row, trackId: id, classLabel: label });
      }
      if (item.alerted ? obsMs - item.seenMs > DEFECT_FORGET_MS : item.kofn.hits === 0) df.items.delete(id);
    }
  }

  /**
   * Whether a new id, first seen at `firstMs` (frame time) with box `first` (xyxy), is an
   * alerted item of `df` that the tracker lost (not seen on this frame, gone for under
   * DEFECT_SWITCH_MS): its last box about the size of this one (sureOrigin) and this one found on
   * its way (wayDistance). The nearest such item is taken (it goes: handed over once). Before,
   * an item hidden mid-belt by a worker's hand for longer than the tracker's lost-track buffer
   * was a new item under its new id, and alerted again. O(items), on frames that confirm a track.
   */
  private defectHandOver(df: DefectRule, ids: Int32Array, first: Float32Array, firstMs: number, obsMs: number): boolean {
    let best = -1;
    let bestDist = Infinity;
    const cx = (first[0] + first[2]) / 2, cy = (first[1] + first[3]) / 2;
    for (const [id, o] of df.items) {
      if (!o.alerted || !(o.seenMs < obsMs) || !(o.lastFrame < firstMs) || firstMs - o.lastFrame > DEFECT_SWITCH_MS || !sureOrigin(o.lastBox, first, 0) || upstream(o, firstMs, cx, cy)) continue;
      const dist = wayDistance(o, firstMs, cx, cy);
      if (!(dist < bestDist) || ids.includes(id)) continue;
      best = id;
      bestDist = dist;
    }
    if (best < 0) return false;
    df.items.delete(best);
    return true;
  }

  /**
   * Line-cross rule `r`'s alerts for this frame's line events (`lineEvents`), onto `alerts`: `d`,
   * `obsMs`, `tMs` the frame's detections, observed time and time (process), or the end of the
   * stream's (finish).
   */
  private crossAlerts(r: RuleConfig & { type: 'line-cross' }, d: Detections, obsMs: number, tMs: number, alerts: AlertDraft[]): void {
    const cd = this.cooldowns.get(r.id)!;
    const label = this.label;
    const lineEvents = this.lineEvents;
    const latched = this.crossLatch(r.id, r.line, d, obsMs);
    for (const e of lineEvents) {
      if (e.line !== r.line) continue;
      // A crossing handed over from a lost track (an id switch at the line): the same object, whose
      // alerts under its old id count towards the cooldown (as a zone's stay taken over). Before,
      // a person who went in, back out and in again within a minute's cooldown, their id switched as
      // they were hidden at the line the second time, was alerted in twice. Whatever its direction:
      // one switched as they went back out, under a rule for `in` only, was alerted in twice too.
      if (e.previousTrackId !== undefined) {
        cd.carry(`${e.previousTrackId}:in`, `${e.trackId}:in`);
        cd.carry(`${e.previousTrackId}:out`, `${e.trackId}:out`);
        if (this.alertBoxes.size) this.followAs(e.previousTrackId, e.trackId);
      }
      if (r.direction !== 'any' && e.direction !== r.direction) continue;
      // A crossing in a direction this track was alerted for, and it has stayed near the line since: the same passage (a person shuffling on the line).
      const bit = e.direction === 'in' ? 1 : 2;
      const latch = latched.get(e.trackId);
      if (latch && latch.dirs & bit) continue;
      if (this.places.length) this.inherit(r.id, e.direction, cd, `${e.trackId}:${e.direction}`, d, e.row, happened(e.atMs, tMs));
      if (!cd.allow(`${e.trackId}:${e.direction}`, happened(e.atMs, tMs))) continue;
      // It is past the line on the side its crossing ended on ('in': the line's positive side),
      // since it crossed: for one seen among a new track's earlier sightings, up to a second or
      // more before this frame (its CROSS_LATCH_AWAY_MS count from then, as for a crossing seen
      // on its own frame; before, from this frame).
      const side = e.direction === 'in' ? 1 : -1;
      const since = e.atMs !== undefined ? obsMs - Math.max(0, tMs - e.atMs) : obsMs;
      if (latch) {
        latch.dirs |= bit;
        if (latch.side !== side) {
          latch.side = side;
          latch.sideSince = since;
        }
      } else latched.set(e.trackId, { dirs: bit, seenMs: obsMs, side, sideSince: since });
      // One seen among the earlier sightings of a track confirmed on this frame says when it crossed (atPts).
      const atPts = e.atMs !== undefined ? Math.round(e.atMs - this.ptsOffset) / 1000 : undefined;
      // A crossing handed over to a new id (LineEvent.previousTrackId) says so below, not EARLY.
      const at = atPts !== undefined ? ` at ${secondsText(atPts)} s${e.previousTrackId !== undefined ? '' : ` (${EARLY})`}` : '';
      // One raised as its track was forgotten (LineCounter.drop: no row) says this frame does not show it.
      // …or at the end of the stream (finish: no frame at all).
      const gone = e.row < 0 ? `; raised once #${e.trackId} was gone: ${d === NO_ROWS ? 'at the end of the stream' : 'this frame is a later one'}` : '';
      alerts.push({ rule: r.id, severity: r.severity, event: 'line.cross', message: `${label(e.classId)} #${e.trackId} crossed line ${e.line} (${e.direction})${at}${e.previousTrackId !== undefined ? ` (was #${e.previousTrackId}: lost at the line, found past it under a new id${gone})` : ''}`, trackId: e.trackId, line: e.line, direction: e.direction, row: e.row, ...(atPts !== undefined ? { atPts } : {}) });
    }
  }

  /**
   * Alerts a stream's end raised that nothing could carry (finish without `carried`: the chain
   * cut off, by the stop's drain timeout or --max-frames, where no one takes them straight to the
   * alert path; or `uncarry`: their result was cut off on its way and could not be handed over,
   * the alert path closed): logged, and counted lost by the run's summary (its lostAlerts: the
   * exit text, exit status 3). Before, only logged: a run that lost one exited 0 and said nothing
   * of it at its exit. (A run hands a cut-off chain's end's alerts to its AlertPublisher:
   * sourceChain's handOver; only those it could not take are counted here.)
   */
  uncarried = 0;

  /**
   * The result that carried `alerts` (finish with `carried`) was cut off before the sinks got it
   * and could not be handed to them either (its chain unsubscribed while the user's operators
   * still held it, or before it was emitted, the alert path already closed): they leave the rule's
   * alerts for `uncarried`, each told to `warn` with `why`, as finish does for a chain cut off before it.
   */
  uncarry(alerts: readonly AlertDraft[], why = "the chain was cut off while the result of the end of the stream that carried it was still in the user's operators"): void {
    for (const a of alerts) {
      const rule = a.rule as string;
      const n = this.alertCounts.get(rule);
      if (n !== undefined && n > 0) this.alertCounts.set(rule, n - 1);
      this.uncarried++;
      this.warn?.(`source ${this.source.id}: alert of rule ${a.rule} (${a.severity}) not published: ${a.message}; ${why} (nor is it counted in the rule's alerts; counted lost)`);
    }
  }

  /**
   * The end of the source's stream (a file's end, the run stopping, the source failing): what
   * the lines still had pending (a hand-over waiting for its new id to show which way it goes,
   * or owed: LineCounter.flush) settles as it would had the stream gone on with no more
   * detections, and counts (the summary, report: the run summary and /api/sources); the
   * line-cross alerts it raises are returned (row −1, as a crossing raised once its track was
   * gone). `carried`: the caller publishes them (the analyze operator's last result, at the
   * stream's end): counted in the report's alerts as any other. Otherwise (a chain unsubscribed:
   * nothing can carry them) they are not counted in the rule's alerts but in `uncarried` (lost,
   * for the run's summary), and each is told to `warn` (the run's log), so that it is not lost
   * unsaid. Before, a file that ended within a line's forgetAfterMs of a
   * person found past it under a new id never counted that crossing. Zones are left as they are
   * (a stay a file's end cuts short did not end). Undefined before the first frame.
   */
  finish(carried = false): { summary: AnalyticsSummary; alerts: AlertDraft[] } | undefined {
    if (!this.ready || Number.isNaN(this.lastPtsMs)) return undefined;
    const lineEvents = this.lineEvents;
    lineEvents.length = 0;
    for (const l of this.lines) l.flush(lineEvents);
    const alerts: AlertDraft[] = [];
    if (lineEvents.length) {
      const tMs = this.lastPtsMs + this.ptsOffset;
      for (const r of this.rules) if (r.type === 'line-cross') this.crossAlerts(r, NO_ROWS, this.lastObsMs, tMs, alerts);
      if (carried) for (const a of alerts) this.alertCounts.set(a.rule as string, (this.alertCounts.get(a.rule as string) ?? 0) + 1);
      else {
        this.uncarried += alerts.length;
        if (this.warn) for (const a of alerts) this.warn(`source ${this.source.id}: alert of rule ${a.rule} (${a.severity}) not published: ${a.message}; no frame follows the end of the stream to carry it (nor is it counted in the rule's alerts; counted lost)`);
      }
    }
    return { summary: this.summaryOf(this.lastRateMs), alerts };
  }

  process(d: Detections, ptsMs: number): { summary: AnalyticsSummary; alerts: AlertDraft[] } {
    if (!this.ready) throw new Error('SourceAnalyzer.init() must run before process()');
    // The frames' time run on across a step back of their pts (a camera's clock reset, a looped
    // file): no time passes there, as for the tracker (ByteTracker.update), and the zones, lines,
    // holds, dwells and cooldowns count on it; the times alerts report are put back on the pts
    // scale (`ptsOffset`). Before, they ran on the pts: a stay across a step back of 9 s had its
    // dwell alert 9 s late, a cooldown held alerts back for as long, and a time from before the
    // step (an entry's `atPts`) was reported after it.
    if (ptsMs < this.lastPtsMs) this.ptsOffset += this.lastPtsMs - ptsMs;
    this.lastPtsMs = ptsMs;
    const tMs = ptsMs + this.ptsOffset;
    const obsMs = this.observed.advance(tMs);
    const rateMs = this.observedRates.advance(tMs);
    this.lastObsMs = obsMs;
    this.lastRateMs = rateMs;
    if (this.carryIn) this.applyCarry(tMs);
    if (this.places.length) this.dropPlaces(tMs);
    if (this.alertBoxes.size && d.trackerId) this.followAlerted(d, tMs);
    const zoneEvents = this.zoneEvents;
    zoneEvents.length = 0;
    for (const z of this.zones) {
      z.update(d, tMs, obsMs, zoneEvents);
      if (z.takenOver.size) this.carryCooldowns(z);
    }
    const lineEvents = this.lineEvents;
    lineEvents.length = 0;
    for (const l of this.lines) l.update(d, obsMs, lineEvents, tMs);

    const alerts: AlertDraft[] = [];
    const label = this.label;
    for (const r of this.rules) {
      const cd = this.cooldowns.get(r.id)!;
      switch (r.type) {
        case 'zone-enter':
        case 'zone-exit':
        case 'zone-dwell': {
          const want = r.type === 'zone-enter' ? 'enter' : r.type === 'zone-exit' ? 'exit' : 'dwell';
          const held = this.dwellHeld.get(r.id);
          if (held?.size) this.raiseHeldDwell(r, held, d, tMs, alerts);
          for (const e of zoneEvents) {
            if (e.zone !== r.zone || e.type !== want) continue;
            // The cooldown counts from when each happened (its atMs: a passage, or one seen among a
            // new track's earlier sightings), not from the frame that raises it: a person who walked
            // in, out and in again before their track was confirmed gets the alerts a tracked one
            // would for the same walk. Before, both entries counted from the confirming frame, and
            // the second, 0.6 s after the first, was dropped under a cooldown of 0.5 s. One without
            // an atMs, from when it happened too (its hold's first frame, ZoneEvent.happenedMs): then,
            // a tracked person's entry counted from the frame that raised it (minHoldFrames on), one
            // made as they went out of view 1.1 s later from when it happened, 0.9 s on, and was
            // dropped under a cooldown of 1 s, as a person seen throughout was not.
            if (this.places.length) this.inherit(r.id, undefined, cd, `${e.trackId}`, d, e.row, happened(e.atMs ?? e.happenedMs, tMs));
            if (!cd.allow(`${e.trackId}`, happened(e.atMs ?? e.happenedMs, tMs))) {
              if (want === 'dwell') (held ?? this.dwellHeld.set(r.id, new Set()).get(r.id)!).add(e.trackId);
              continue;
            }
            alerts.push(this.zoneAlert(r, want, e.trackId, e.classId, e.row, e.dwellMs, e.lastSeenMs, e.atMs, e.early));
          }
          break;
        }
        case 'line-cross':
          this.crossAlerts(r, d, obsMs, tMs, alerts);
          break;
        case 'conveyor-rate': {
          const rf = this.rates.get(r.id)!;
          let items = 0;
          if (r.line !== undefined) {
            for (const e of lineEvents) if (e.line === r.line) items++;
          } else {
            for (const e of zoneEvents) if (e.zone === r.zone && e.type === 'enter') items++;
          }
          // On the observed time: frames that did not arrive (a camera's outage, a reconnect) saw
          // no items, but are no evidence that the belt stopped, any more than that a track left.
          const change = rf.update(items, rateMs);
          // A stoppage its cooldown held back is raised once the cooldown has passed, if the belt
          // is still stopped then: a cooldown spaces alerts out, it does not hide a belt that
          // stands still for longer (it was never announced, and its `resumed` was silent).
          const stoppedUnannounced = change === 'stopped' || (change === undefined && rf.stopped && !this.stopAlerted.has(r.id));
          if (stoppedUnannounced && cd.allow('', tMs)) {
            this.stopAlerted.add(r.id);
            const forSec = change === 'stopped' ? r.forSec : Math.round((rateMs - rf.belowSince!) / 1000);
            alerts.push({ rule: r.id, severity: r.severity, event: 'conveyor.stopped', message: `${conveyorName(r)}: ${rf.ratePerMinute(rateMs).toFixed(1)} items/min, under ${r.minPerMinute} for ${forSec} s`, ...conveyorWhere(r), row: -1, ratePerMinute: rf.ratePerMinute(rateMs) });
          } else if (change === 'resumed' && this.stopAlerted.delete(r.id)) {
            // Only a stoppage that was alerted (not held back by the cooldown) is followed by its resumption.
            alerts.push({ rule: r.id, severity: 'info', event: 'conveyor.resumed', message: `${conveyorName(r)}: back to ${rf.ratePerMinute(rateMs).toFixed(1)} items/min`, ...conveyorWhere(r), row: -1, ratePerMinute: rf.ratePerMinute(rateMs) });
          }
          break;
        }
        case 'conveyor-defect': {
          const df = this.defects.get(r.id)!;
          const ids = d.trackerId;
          if (ids) this.defectItems(r, df, d, obsMs, tMs, alerts);
          // Rows without a track id (tracking off; or on, rows the tracker gives no id): K of N
          // of the rule's frames, and its cooldown.
          // With tracking, a row that is an alerted item the tracker lost (a label that changed: a new
          // tentative track) is that item, alerted already: before, a second alert for it.
          let row = -1;
          for (let i = 0; i < d.length; i++) if ((!ids || ids[i] < 0) && d.confidence[i] >= df.minScore && df.match(d.classId[i]) && !(ids && alertedItemAt(df, d.xyxy, i, tMs, obsMs))) { row = i; break; }
          const firing = df.kofn.push(row >= 0);
          if (firing && row >= 0 && cd.allow('', tMs)) {
            alerts.push({ rule: r.id, severity: r.severity, event: 'conveyor.defect', message: `${label(d.classId[row])} seen on ${df.kofn.hits} of the last ${r.n} frames`, row, classLabel: label(d.classId[row]) });
            // Its box: a track the tracker confirms with it among its first sightings is the item alerted (defectItems).
            if (ids) {
              if (df.untrackedAlerts.length >= UNTRACKED_ALERTS_KEPT) df.untrackedAlerts.shift();
              df.untrackedAlerts.push({ box: d.xyxy.slice(row * 4, row * 4 + 4), ms: tMs });
            }
          }
          break;
        }
      }
    }

    // A track's alerts in the order they happened (a replay of its earlier sightings raises
    // them together, in the order of the rules), on the rare frames that have such a time: an
    // `atPts`, or a `lastSeenPts` (a late exit, which comes with a new entry of its track where
    // it is back on the very frame its absence passed exitDelayMs, minHoldFrames 1). Before,
    // only an `atPts`: that entry came first by the rules' order, then the exit, and a consumer
    // keeping the latest state per track had the person back inside as gone.
    for (const a of alerts) {
      if (a.atPts === undefined && a.lastSeenPts === undefined) continue;
      inTimeOrder(alerts, ptsMs / 1000);
      break;
    }

    // Every draft above carries its rule's id (AlertDraft's open index signature types it unknown).
    for (const a of alerts) {
      this.alertCounts.set(a.rule as string, (this.alertCounts.get(a.rule as string) ?? 0) + 1);
      if (typeof a.trackId === 'number' && typeof a.row === 'number' && a.row >= 0 && this.cooldowns.get(a.rule as string)!.cooldownMs > 0) this.noteAlerted(a.trackId, d, a.row, tMs);
    }

    return { summary: this.summaryOf(rateMs), alerts };
  }

  /**
   * The cooldowns still running at the last frame (MAX_CARRIED_COOLDOWNS at most, the longest
   * left first), for the chain that takes the source over (an argus worker's release record):
   * a rule's own, and each track's with where it was last seen. A track not seen within
   * CARRIED_SEEN_MS of the last frame (gone from view), or never seen with a box (alerted without
   * a row: gone, or at the stream's end), is left out: the new chain cannot tell it from another
   * object, and alerts it. Undefined: this chain analysed no frame (it has nothing to say, and
   * what the source's former chain handed over stands).
   */
  handover(): CarriedCooldown[] | undefined {
    if (!this.ready || Number.isNaN(this.lastPtsMs)) return undefined;
    const tMs = this.lastPtsMs + this.ptsOffset;
    const out: CarriedCooldown[] = [];
    for (const [rule, cd] of this.cooldowns) {
      if (cd.cooldownMs <= 0) continue;
      for (const [key, last] of cd.entries()) {
        const leftMs = Math.round(last + cd.cooldownMs - tMs);
        if (leftMs <= 0) continue;
        if (key === '') {
          out.push({ rule, leftMs, ...(this.stopAlerted.has(rule) ? { open: true as const } : {}) });
          continue;
        }
        const [id, dir] = key.split(':');
        const b = this.alertBoxes.get(Number(id));
        if (!b || b[4] < tMs - CARRIED_SEEN_MS) continue;
        const box: [number, number, number, number] = [b[0], b[1], b[2], b[3]].map((v) => Math.round(v * 1e4) / 1e4) as [number, number, number, number];
        out.push({ rule, leftMs, box, ...(dir === 'in' || dir === 'out' ? { dir } : {}) });
      }
    }
    // A stoppage announced whose cooldown has run out (or has none): still open.
    for (const rule of this.stopAlerted) if (!out.some((c) => c.rule === rule && c.open)) out.push({ rule, leftMs: 0, open: true });
    // Open stoppages first (one per conveyor-rate rule at most), then the longest left: the bound cuts tracks' cooldowns first.
    return out.sort((a, b) => Number(b.open ?? 0) - Number(a.open ?? 0) || b.leftMs - a.leftMs).slice(0, MAX_CARRIED_COOLDOWNS);
  }

  /**
   * Cooldowns handed over by the source's former chain (handover, read back from a worker's
   * release record), counted from this chain's next frame: a rule's own at once; a track's by
   * the first track here that its rule would alert where that one was last seen. Only this
   * source's rules, with a cooldown, are taken (an edit in between: the rule may be gone), each
   * at most its cooldown long.
   */
  takeOver(list: readonly CarriedCooldown[]): void {
    this.carryIn = list.slice(0, MAX_CARRIED_COOLDOWNS);
  }

  private applyCarry(tMs: number): void {
    const list = this.carryIn!;
    this.carryIn = undefined;
    for (const c of list) {
      // A stoppage the former chain announced: the same one, not announced again here; its end is
      // (its rate's floor starts stopped). Before, its end went unsaid where it came within the
      // cooldown, and one lasting longer was announced a second time once the cooldown ended.
      const rf = c.open ? this.rates.get(c.rule) : undefined;
      if (rf) {
        this.stopAlerted.add(c.rule);
        rf.stopped = true;
      }
      const cd = this.cooldowns.get(c.rule);
      if (!cd || cd.cooldownMs <= 0) continue;
      const left = Math.min(c.leftMs, cd.cooldownMs);
      if (!(left > 0)) continue;
      if (!c.box) cd.seed('', tMs + left - cd.cooldownMs);
      else this.places.push({ rule: c.rule, ...(c.dir ? { dir: c.dir } : {}), box: c.box, untilMs: tMs + left });
    }
    this.takeByMs = tMs + CARRIED_TAKE_MS;
  }

  /** The carried places whose cooldown has run out by `tMs`, or that nothing can take any more (CARRIED_TAKE_MS), dropped: in place, on the frames that drop some. */
  private dropPlaces(tMs: number): void {
    const places = this.places;
    const over = tMs > this.takeByMs + CARRIED_TAKE_MS;
    let n = 0;
    for (let k = 0; k < places.length; k++) if (!over && places[k].untilMs > tMs) places[n++] = places[k];
    places.length = n;
  }

  /** Track key `key` of rule `rule` (`dir`: a line rule's direction) takes a carried cooldown where its box (row `row` of `d`) is where that one's track was last seen, for what happened at `atMs` (CARRIED_TAKE_MS). */
  private inherit(rule: string, dir: 'in' | 'out' | undefined, cd: Cooldown, key: string, d: Detections, row: number, atMs: number): void {
    if (row < 0 || atMs > this.takeByMs || cd.has(key) || !this.size) return;
    const w = this.size.width, h = this.size.height;
    const x1 = d.xyxy[row * 4] / w, y1 = d.xyxy[row * 4 + 1] / h, x2 = d.xyxy[row * 4 + 2] / w, y2 = d.xyxy[row * 4 + 3] / h;
    const cx = (x1 + x2) / 2, cy = (y1 + y2) / 2;
    for (let k = 0; k < this.places.length; k++) {
      const p = this.places[k];
      if (p.rule !== rule || p.dir !== dir) continue;
      const [a1, b1, a2, b2] = p.box;
      const iw = Math.min(x2, a2) - Math.max(x1, a1), ih = Math.min(y2, b2) - Math.max(y1, b1);
      const inter = iw > 0 && ih > 0 ? iw * ih : 0;
      const union = (x2 - x1) * (y2 - y1) + (a2 - a1) * (b2 - b1) - inter;
      const inside = cx >= a1 && cx <= a2 && cy >= b1 && cy <= b2;
      if (!inside && !(union > 0 && inter / union >= CARRIED_IOU)) continue;
      cd.seed(key, p.untilMs - cd.cooldownMs);
      this.places.splice(k, 1);
      return;
    }
  }

  /** Track `id` was alerted on row `row` at `tMs`: its box is followed from now on (followAlerted), for handover. */
  private noteAlerted(id: number, d: Detections, row: number, tMs: number): void {
    let b = this.alertBoxes.get(id);
    if (!b) {
      if (this.alertBoxes.size >= ALERTED_BOXES_KEPT) this.alertBoxes.delete(this.alertBoxes.keys().next().value!);
      this.alertBoxes.set(id, (b = new Float64Array(5)));
    }
    this.boxOf(d, row, b, tMs);
  }

  /**
   * Alerted track `from` goes on as track `to` (an id switch whose cooldowns went on under the new
   * id): its box is followed under `to` from now on, for handover. Before, the new id's cooldown
   * was not handed over (no box), and the new owner alerted the person again at once.
   */
  private followAs(from: number, to: number): void {
    const b = this.alertBoxes.get(from);
    if (!b || this.alertBoxes.has(to)) return;
    this.alertBoxes.delete(from);
    this.alertBoxes.set(to, b);
  }

  /** The alerted tracks this frame (at `tMs`) shows: their boxes and when seen updated in place. O(rows), on frames after a track with a cooldown alerted. */
  private followAlerted(d: Detections, tMs: number): void {
    const ids = d.trackerId!;
    for (let i = 0; i < d.length; i++) {
      const b = this.alertBoxes.get(ids[i]);
      if (b) this.boxOf(d, i, b, tMs);
    }
  }

  /** Row `row`'s box as fractions of the picture, and `tMs`, when it was seen, into `out`. */
  private boxOf(d: Detections, row: number, out: Float64Array, tMs: number): void {
    const w = this.size!.width, h = this.size!.height;
    out[0] = d.xyxy[row * 4] / w;
    out[1] = d.xyxy[row * 4 + 1] / h;
    out[2] = d.xyxy[row * 4 + 2] / w;
    out[3] = d.xyxy[row * 4 + 3] / h;
    out[4] = tMs;
  }

  /**
   * The figures for this frame's message: the last ones built, unless one of them changed since
   * (a zone's occupancy or entries, a line's crossings, a rate to a tenth), compared in place.
   * Before, built on every frame (an object per zone, line and rule, their entries' arrays and
   * a label map per line), for figures that change on few frames. Frozen: results share it.
   */
  private summaryOf(rateMs: number): AnalyticsSummary {
    const key = this.summaryKey;
    let changed = false;
    let k = 0;
    for (const z of this.zones) {
      if (key[k] !== z.occupancy || key[k + 1] !== z.entered) changed = true;
      key[k++] = z.occupancy;
      key[k++] = z.entered;
    }
    for (const l of this.lines) {
      const n = l.stats.in + l.stats.out;
      if (key[k] !== n) changed = true;
      key[k++] = n;
    }
    for (let r = 0; r < this.rateList.length; r++) {
      const rate = Math.round(this.rateList[r][1].ratePerMinute(rateMs) * 10) / 10;
      if (key[k] !== rate) changed = true;
      key[k++] = rate;
    }
    if (!changed && this.summary) return this.summary;
    const label = this.label;
    const summary: AnalyticsSummary = {};
    const freeze = <T extends object>(o: T): T => Object.freeze(o);
    if (this.zones.length) summary.zones = freeze(Object.fromEntries(this.zones.map((z) => [z.zone.id, freeze({ occupancy: z.occupancy, entered: z.entered })])));
    if (this.lines.length) {
      const named = (m: Map<number, number>) => freeze(Object.fromEntries([...m].map(([c, n]) => [label(c), n])));
      summary.lines = freeze(Object.fromEntries(this.lines.map((l) => [l.id, freeze({ in: named(l.countIn), out: named(l.countOut) })])));
    }
    if (this.rateList.length) summary.rates = freeze(Object.fromEntries(this.rateList.map(([id], r) => [id, key[this.zones.length * 2 + this.lines.length + r]])));
    this.summary = freeze(summary);
    return this.summary;
  }
}

/** No detections (finish). */
const NO_ROWS = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));

/** When an event raised on the frame at `tMs` happened: its `atMs`, where it says one before that frame (what a rule's cooldown counts from). */
function happened(atMs: number | undefined, tMs: number): number {
  return atMs !== undefined && atMs < tMs ? atMs : tMs;
}

/**
 * Puts each track's alerts of `alerts` (one frame's) in the order they happened, stable otherwise,
 * in the places its alerts held: an alert's time is its `atPts`, else its `lastSeenPts` (a
 * vanished track's exit), else the frame's `pts` (`framePts`). Alerts of other tracks, and without
 * one, keep their places. Before, one frame's alerts came in the order of the rules: a replay of a
 * new track's earlier sightings gave "enter 0.1 s, enter 0.7 s, exit 0.4 s", and a consumer that
 * keeps the latest state per track took it as outside. Called only on frames with an `atPts` or a `lastSeenPts`.
 */
function inTimeOrder(alerts: AlertDraft[], framePts: number): void {
  const time = (a: AlertDraft) => (a.atPts ?? a.lastSeenPts ?? framePts) as number;
  const slots = new Map<unknown, number[]>();
  alerts.forEach((a, i) => {
    if (a.trackId === undefined) return;
    const s = slots.get(a.trackId);
    if (s) s.push(i);
    else slots.set(a.trackId, [i]);
  });
  for (const at of slots.values()) {
    if (at.length < 2) continue;
    // Array.prototype.sort is stable: alerts of one time keep the rules' order.
    const sorted = at.map((i) => alerts[i]).sort((a, b) => time(a) - time(b));
    at.forEach((i, k) => (alerts[i] = sorted[k]));
  }
}

/** A line-cross rule's latch on a track (SourceAnalyzer.crossLatch). */
interface CrossLatch {
  /** The directions alerted: 1 in, 2 out. */
  dirs: number;
  /** Observed time it was last seen. */
  seenMs: number;
  /** The side of the line it was last seen on, beyond the margin (1: the side 'in' ends on; 0: within the margin), and since when (observed time). */
  side: -1 | 0 | 1;
  sideSince: number;
}

/** An alert of a row with no track id, with tracking on (DefectRule.untrackedAlerts). */
interface UntrackedAlert {
  /** The row's box (xyxy) and its frame time. */
  readonly box: Float32Array;
  readonly ms: number;
  /** The item (track id) that took it for its own by where and when it was first seen (takeUntrackedAlert's `near`), if one did. */
  takenBy?: number;
}

/**
 * Whether a new item `id`'s first sighting (its box `first`, xyxy, at `firstMs`, frame time; the
 * sightings before its id, `before`) is an alert of a row with no id of `df`, so that the item is
 * not alerted again: that row is one of those sightings (the tracker confirmed the track it
 * started; the alert goes), or, failing that, it was alerted before the first of them, within
 * DEFECT_SWITCH_MS, about this box's size (sureOrigin) and within the larger side of its box of
 * where this one was first seen (`near`: it stays, taken by this item). The latter: a label that
 * changed before the tracker gave the item an id (class aware: a new tentative track from its
 * first frame of the new label); before, its new track was a new item, alerted a second time.
 * An alert taken as `near` that turns out to be among a later item's sightings is that item's:
 * the one that took it was another item put down just behind the alerted one, and is alerted by
 * its own frames. Before, the alert went to the first item confirmed: that one (defective) was
 * never alerted, and the alerted one was alerted a second time under its id.
 */
function takeUntrackedAlert(df: DefectRule, id: number, first: Float32Array, firstMs: number, before: TrackOrigin['before']): boolean {
  const alerts = df.untrackedAlerts;
  if (before) {
    for (let k = alerts.length - 1; k >= 0; k--) {
      const a = alerts[k].box;
      if (!before.some((b) => b.box[0] === a[0] && b.box[1] === a[1] && b.box[2] === a[2] && b.box[3] === a[3])) continue;
      const taker = alerts[k].takenBy === undefined ? undefined : df.items.get(alerts[k].takenBy!);
      if (taker) taker.alerted = false;
      alerts.splice(k, 1);
      return true;
    }
  }
  const cx = (first[0] + first[2]) / 2, cy = (first[1] + first[3]) / 2;
  for (let k = alerts.length - 1; k >= 0; k--) {
    const { box: a, ms, takenBy } = alerts[k];
    if (takenBy !== undefined || !(ms < firstMs) || firstMs - ms > DEFECT_SWITCH_MS || !sureOrigin(a, first, 0) || Math.hypot((a[0] + a[2]) / 2 - cx, (a[1] + a[3]) / 2 - cy) > Math.max(a[2] - a[0], a[3] - a[1])) continue;
    alerts[k].takenBy = id;
    return true;
  }
  return false;
}

/**
 * Whether `px`, `py`, where a new id was first seen at `firstMs` (frame time), lies behind item
 * `o`'s last sighting against the way it was going, by more than a quarter of its box's larger
 * side (the detector's jitter), when its pace would have taken it at least that far: an item on a
 * belt, hidden, comes back on its way, not upstream. A new item a worker puts on the belt just
 * behind where an alerted one was taken off, within DEFECT_SWITCH_MS, was taken for it: no alert.
 */
function upstream(o: LastSighting, firstMs: number, px: number, py: number): boolean {
  const g = firstMs - o.lastFrame;
  const wx = Number.isNaN(o.vx) ? 0 : o.vx * g, wy = Number.isNaN(o.vy) ? 0 : o.vy * g;
  const way = Math.hypot(wx, wy);
  const slack = Math.max(o.lastBox[2] - o.lastBox[0], o.lastBox[3] - o.lastBox[1]) / 4;
  return way >= slack && ((px - o.lx) * wx + (py - o.ly) * wy) / way < -slack;
}

/**
 * Whether row `i` of `xyxy` (no track id, frame time `tMs`) is an alerted item of `df` the
 * tracker lost (not seen on this frame, last seen within DEFECT_SWITCH_MS): about its size
 * (sureOrigin), on its way (wayDistance, not upstream). O(items).
 */
function alertedItemAt(df: DefectRule, xyxy: Float32Array, i: number, tMs: number, obsMs: number): boolean {
  const cx = (xyxy[i * 4] + xyxy[i * 4 + 2]) / 2, cy = (xyxy[i * 4 + 1] + xyxy[i * 4 + 3]) / 2;
  for (const o of df.items.values()) {
    if (!o.alerted || !(o.seenMs < obsMs) || !(o.lastFrame < tMs) || tMs - o.lastFrame > DEFECT_SWITCH_MS || !sureOrigin(o.lastBox, xyxy, i) || upstream(o, tMs, cx, cy)) continue;
    if (wayDistance(o, tMs, cx, cy) < Infinity) return true;
  }
  return false;
}
