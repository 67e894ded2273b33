import { z } from 'zod';
import { polygonArea, selfIntersection } from '../../core/polygon.js';
import { interpolatedValue, mention } from '../../core/redact.js';
import { finite, id, ms } from './common.js';

const point = z.tuple([finite(), finite()]);
const units = z.enum(['fraction', 'pixel']);
const frameSize = z.tuple([finite().int().min(1).max(16384), finite().int().min(1).max(16384)]);
const anchor = z.enum(['bottom-center', 'center', 'top-center', 'bottom-left', 'bottom-right', 'center-left', 'center-right']);
const severity = z.enum(['info', 'warning', 'critical']);

/**
 * The most points a zone's polygon has: each is tested against every detection of every frame,
 * and a pipeline loads in time (a 40 000-point zone took 13.6 s to check before the check was a
 * sweep line). A zone traced from a mask is simplified to far fewer.
 */
export const MAX_ZONE_POINTS = 4096;

/** A polygon zone; its events are enter, exit and dwell per track. */
export const ZoneSchema = z
  .object({
    id,
    /** Corners, at least 3, not self-intersecting; fractions of the frame (0–1) or pixels (see units). */
    polygon: z
      .array(point)
      .min(3, 'a polygon needs at least 3 points')
      .max(MAX_ZONE_POINTS, `at most ${MAX_ZONE_POINTS} points (each is tested against every detection of every frame): simplify the polygon`),
    /** fraction (default): 0–1 of width/height; pixel: source pixels. */
    units: units.default('fraction'),
    /**
     * With units: pixel, the size [width, height] of the picture the points were read from (a
     * screenshot of the camera's main stream, say, while argus reads its 640x360 sub-stream):
     * the points are scaled from it to the source's pictures. Default: the source's first
     * picture (points beyond it are then an error when it arrives).
     */
    frameSize: frameSize.optional(),
    /** Class labels that count (default: all). */
    classes: z.array(z.string().min(1)).min(1).optional(),
    /** Point of each box tested against the polygon. Default bottom-center (the feet). */
    anchor: anchor.default('bottom-center'),
    /**
     * Hysteresis band, px: an anchor within this distance of the polygon's edges (inside or
     * out; edges along the frame's border aside) is on the edge, which neither enters nor exits
     * a track, and starts any entry or exit being held over. Default: 2 % of each box's height
     * (the detector's jitter grows with the box). 0: none, and an object standing on an edge, its
     * box jittering across it, enters and exits every few seconds (minHoldFrames only stops
     * strict flicker). Raising it stops more of that, but an object must get this far inside to
     * enter, so a zone narrower than twice this is never entered. In the pixels the polygon
     * is given in (its frameSize's picture, else the source's first), scaled with it.
     */
    marginPx: finite().min(0).optional(),
    /** Frames in a row inside (or outside) before an entry (or exit) counts. Default 3. */
    minHoldFrames: finite().int().min(1).max(1000).default(3),
    /** A stay longer than this raises one dwell event (a stay runs from its first frame inside, see minHoldFrames). Default: none. */
    dwellLimitSec: finite().positive().optional(),
    /**
     * A track inside that is not seen for longer than this has left: exit event (dwell up to
     * its last sighting), and it no longer counts in occupancy. Default 2000. Shorter: exits
     * and occupancy follow a vanished object sooner; but keep it at least tracking's
     * lostTrackBufferMs (default 1000), or a track the tracker re-finds after a gap enters again.
     */
    exitDelayMs: finite().int().min(0).max(600_000).default(2000),
    /**
     * hold (default): an exit needs minHoldFrames frames outside in a row (or the track gone
     * for exitDelayMs). last-seen: the first frame a track is seen outside is its exit, and a
     * track gone for exitDelayMs exits as of its last sighting (lastSeenPts in the alert).
     * last-seen gives prompt exits; flicker on the border then gives exit/entry pairs.
     */
    exitOn: z.enum(['hold', 'last-seen']).default('hold'),
    /**
     * An entry by a track of the same class within this long after a track inside went unseen,
     * first seen after that track's last sighting, is taken as an id switch: the new id
     * continues the stay (no enter event, no new entry; the old id leaves without an exit). At
     * most exitDelayMs. Default 0: off. Two objects of one class that really swap places within
     * the window count once.
     */
    reentrySuppressMs: ms(0).default(0),
  })
  .strict();

/** A directional counting line. */
export const LineSchema = z
  .object({
    id,
    from: point,
    to: point,
    units: units.default('fraction'),
    /**
     * With units: pixel, the size [width, height] of the picture the points were read from (a
     * screenshot of the camera's main stream, say, while argus reads its 640x360 sub-stream):
     * the points are scaled from it to the source's pictures. Default: the source's first
     * picture (points beyond it are then an error when it arrives).
     */
    frameSize: frameSize.optional(),
    classes: z.array(z.string().min(1)).min(1).optional(),
    /** Point of each box tested against the line. Default center. */
    anchor: anchor.default('center'),
    /**
     * A track must get this far (px) past the line for a crossing to count. Default: 1/48 of the
     * source's first picture's smaller side, at least 10 px (10 px up to 480 lines, 45 at 2160;
     * LINE_MARGIN_OF_SIDE, LINE_MARGIN_MIN_PX),
     * whatever the units, scaled with the picture. A set one is in the pixels the ends are given in
     * (their frameSize's picture, else the source's first), scaled with them.
     */
    marginPx: finite().min(0).optional(),
    /**
     * A track not seen for longer than this is forgotten. Default 2000. Shorter: a track
     * re-found after a longer gap learns its side afresh, so a crossing during the gap is not
     * counted; longer: such crossings count, and a reused id keeps its old side.
     */
    forgetAfterMs: finite().int().min(0).max(600_000).default(2000),
  })
  .strict();

const ruleBase = {
  id,
  severity: severity.default('warning'),
  /** Minimum time between two alerts of this rule for the same key: the track (zone rules), the track and direction (line rules), or the rule itself (conveyor rules). */
  cooldownSec: finite().min(0).default(0),
};

export const RuleSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('zone-enter'), zone: z.string(), ...ruleBase }).strict(),
  z.object({ type: z.literal('zone-exit'), zone: z.string(), ...ruleBase }).strict(),
  z.object({ type: z.literal('zone-dwell'), zone: z.string(), ...ruleBase }).strict(),
  z
    .object({ type: z.literal('line-cross'), line: z.string(), direction: z.enum(['in', 'out', 'any']).default('any'), ...ruleBase, severity: severity.default('info') })
    .strict(),
  z
    .object({
      type: z.literal('conveyor-rate'),
      /** Line whose crossings are the items… */
      line: z.string().optional(),
      /** …or zone whose entries are the items (give one of the two). */
      zone: z.string().optional(),
      /** Alarm when fewer items per minute than this… */
      minPerMinute: finite().positive(),
      /** …for at least this long. */
      forSec: finite().positive(),
      /** Window the rate is measured over. Default 60. */
      windowSec: finite().positive().default(60),
      ...ruleBase,
      severity: severity.default('critical'),
    })
    .strict(),
  z
    .object({
      type: z.literal('conveyor-defect'),
      /** Defect classes: any of these on a frame counts. */
      classes: z.array(z.string().min(1)).min(1).optional(),
      /** Or: any class outside this set counts. */
      allowed: z.array(z.string().min(1)).min(1).optional(),
      /** Alert when K of the last N frames show a defect. */
      k: finite().int().min(1),
      n: finite().int().min(1).max(10_000),
      /** Detections below this score are ignored. Default 0.5. */
      minScore: finite().min(0).max(1).default(0.5),
      ...ruleBase,
      severity: severity.default('critical'),
      /** Seconds between alerts with tracking off; with tracking on, one alert per item (track) and this does not apply. Default 60. */
      cooldownSec: finite().min(0).default(60),
    })
    .strict(),
]);

export type ZoneConfig = z.infer<typeof ZoneSchema>;
export type LineConfig = z.infer<typeof LineSchema>;
export type RuleConfig = z.infer<typeof RuleSchema>;

/**
 * Points given as fractions (units unset) that look like pixels: none negative and some
 * coordinate above 2 (a fraction slightly over 1 is a typo, reported per point). Returns the
 * first such point.
 */
function looksLikePixels(points: readonly (readonly number[])[]): readonly number[] | undefined {
  if (points.some((p) => p.some((v) => v < 0))) return undefined;
  return points.find((p) => p.some((v) => v > 2));
}

/**
 * Points given in pixels (`units: pixel`) that look like fractions: every coordinate from 0 to
 * 1 and some not whole (such a zone is a pixel or two in the corner). Returns the first such point.
 */
function looksLikeFractions(points: readonly (readonly number[])[]): readonly number[] | undefined {
  if (!points.every((p) => p.every((v) => v >= 0 && v <= 1))) return undefined;
  return points.find((p) => p.some((v) => !Number.isInteger(v)));
}

function fractionHint(p: readonly number[], what: 'zone' | 'line'): string {
  return `coordinates look like fractions (e.g. [${p.join(', ')}]) but units is pixel; remove \`units: pixel\` from this ${what} (fractions are the default), or give pixels`;
}

/**
 * A source's zone or line ids as an error lists them (`a, b`, or `none`): one made from an
 * environment variable is not repeated (core/redact.ts, mention): it may hold a secret. One
 * written in the file that `mention` leaves out all the same (longer than a name's 64
 * characters) is said as that, not as one from the environment.
 */
function idList(ids: ReadonlySet<string>): string {
  if (ids.size === 0) return 'none';
  return [...ids].map((i) => (mention(i) ? i : interpolatedValue(i) ? 'one set from the environment' : `one of ${i.length} characters`)).join(', ');
}

/** A pixel point beyond a picture of that size (its right and bottom edges are in it); a size that is itself wrong has its own error. */

function beyond(p: readonly number[], size: readonly [number, number]): boolean {
  if (!size.every((v) => Number.isInteger(v) && v >= 1)) return false;
  return p[0] > size[0] || p[1] > size[1];
}

/** No area, up to rounding: points on one line give a shoelace sum of ~1e-17, not 0. */
function hasNoArea(poly: readonly (readonly [number, number])[]): boolean {
  const scale = Math.max(1, ...poly.flat().map(Math.abs));
  return polygonArea(poly) <= 1e-9 * scale * scale;
}

/**
 * A point that repeats the one before it, as [its index, the earlier one's]: the last point
 * repeating the first (a ring closed as GeoJSON writes it) is [n − 1, 0]. Such a polygon has an
 * edge of no length, and its neighbours touch: the crossing check names two edges that do
 * not cross (`edges 0 and 3 cross` for a closed square), so this is said instead.
 */
function repeatedPoint(poly: readonly (readonly [number, number])[]): [number, number] | undefined {
  const n = poly.length;
  if (poly[n - 1][0] === poly[0][0] && poly[n - 1][1] === poly[0][1]) return [n - 1, 0];
  for (let j = 1; j < n; j++) if (poly[j][0] === poly[j - 1][0] && poly[j][1] === poly[j - 1][1]) return [j, j - 1];
  return undefined;
}

/**
 * What to do with pixel-looking points under `units: fraction`. Points all within 0–100 may be
 * percentages of the frame (`[45, 80]` for 45 % across, 80 % down): `units: pixel` alone, the one
 * hint before, made them a speck of a zone in the top-left corner, accepted without a word.
 */
function pixelHint(p: readonly number[], what: 'zone' | 'line', all: readonly (readonly number[])[]): string {
  const percent = all.every((q) => q.every((v) => v >= 0 && v <= 100));
  const asFraction = (v: number) => +(v / 100).toPrecision(6);
  return `coordinates look like pixels (e.g. [${p.join(', ')}]) but units is fraction (0–1 of the frame); add \`units: pixel\` to this ${what}, or give fractions${percent ? ` (percentages of the frame divided by 100: [${p.map(asFraction).join(', ')}])` : ''}`;
}

/**
 * Checks one source's zones, lines and rules together (SourceSchema's refinement): ids unique,
 * points inside the frame, polygons simple with an area, lines of two points, and every rule
 * naming a zone or line of this source and giving the fields its type needs. Issue paths are
 * relative to the source.
 */
export function checkSourceAnalytics(s: { zones: ZoneConfig[]; lines: LineConfig[]; rules: RuleConfig[] }, ctx: z.RefinementCtx): void {
  const zoneIds = new Set<string>();
  s.zones.forEach((z, i) => {
    if (zoneIds.has(z.id)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'id'], message: `duplicate zone id${mention(z.id) ? ` ${mention(z.id)}` : ''}` });
    zoneIds.add(z.id);
    if (z.reentrySuppressMs > z.exitDelayMs) ctx.addIssue({ code: 'custom', path: ['zones', i, 'reentrySuppressMs'], message: `reentrySuppressMs (${z.reentrySuppressMs}) must not exceed exitDelayMs (${z.exitDelayMs}): an unseen track is only remembered that long` });
    if (z.frameSize && z.units !== 'pixel') ctx.addIssue({ code: 'custom', path: ['zones', i, 'frameSize'], message: 'frameSize is for pixel points: add `units: pixel`, or remove frameSize (fractions need none)' });
    // Too many points has its own error (the schema's max); its points are not looked at one by one.
    if (z.polygon.length > MAX_ZONE_POINTS) return;
    if (z.units === 'fraction') {
      const pixels = looksLikePixels(z.polygon);
      if (pixels) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: pixelHint(pixels, 'zone', z.polygon) });
      else
        z.polygon.forEach((p, j) => {
          if (p.some((v) => v < 0 || v > 1)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', j], message: `point [${p.join(', ')}] is outside the frame (fractions must be 0–1)` });
        });
    } else {
      const fractions = looksLikeFractions(z.polygon);
      if (fractions) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: fractionHint(fractions, 'zone') });
      z.polygon.forEach((p, j) => {
        if (p.some((v) => v < 0)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', j], message: `point [${p.join(', ')}] is outside the frame (negative pixel)` });
        else if (z.frameSize && beyond(p, z.frameSize)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', j], message: `point [${p.join(', ')}] is outside the ${z.frameSize.join('x')} frameSize` });
      });
    }
    const cross = selfIntersection(z.polygon);
    const repeated = cross && repeatedPoint(z.polygon);
    if (repeated) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon', repeated[0]], message: repeated[1] === 0 && repeated[0] > 1 ? `repeats the first point: a polygon closes by itself, leave the last point out` : `repeats the point before it (polygon[${repeated[1]}]): leave one of them out` });
    else if (cross) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: `polygon is self-intersecting (edges ${cross[0]} and ${cross[1]} cross)` });
    else if (hasNoArea(z.polygon)) ctx.addIssue({ code: 'custom', path: ['zones', i, 'polygon'], message: 'polygon has no area' });
  });
  const lineIds = new Set<string>();
  s.lines.forEach((l, i) => {
    if (lineIds.has(l.id)) ctx.addIssue({ code: 'custom', path: ['lines', i, 'id'], message: `duplicate line id${mention(l.id) ? ` ${mention(l.id)}` : ''}` });
    lineIds.add(l.id);
    const pixels = l.units === 'fraction' ? looksLikePixels([l.from, l.to]) : undefined;
    const fractions = l.units === 'pixel' ? looksLikeFractions([l.from, l.to]) : undefined;
    if (pixels) ctx.addIssue({ code: 'custom', path: ['lines', i], message: pixelHint(pixels, 'line', [l.from, l.to]) });
    else if (fractions) ctx.addIssue({ code: 'custom', path: ['lines', i], message: fractionHint(fractions, 'line') });
    else {
      for (const end of ['from', 'to'] as const) {
        const p = l[end];
        if (l.units === 'fraction' ? p.some((v) => v < 0 || v > 1) : p.some((v) => v < 0)) ctx.addIssue({ code: 'custom', path: ['lines', i, end], message: `point [${p.join(', ')}] is outside the frame` });
        else if (l.units === 'pixel' && l.frameSize && beyond(p, l.frameSize)) ctx.addIssue({ code: 'custom', path: ['lines', i, end], message: `point [${p.join(', ')}] is outside the ${l.frameSize.join('x')} frameSize` });
      }
    }
    if (l.frameSize && l.units !== 'pixel') ctx.addIssue({ code: 'custom', path: ['lines', i, 'frameSize'], message: 'frameSize is for pixel points: add `units: pixel`, or remove frameSize (fractions need none)' });
    // Shorter than a pixel (a fraction: a ten-thousandth of the frame, 0.4 px at 4K), a line is
    // crossed by no anchor's path in any frame: it was accepted, and never counted.
    const min = l.units === 'pixel' ? 1 : 1e-4;
    if (Math.hypot(l.to[0] - l.from[0], l.to[1] - l.from[1]) < min) ctx.addIssue({ code: 'custom', path: ['lines', i, 'to'], message: `a line needs two different points, at least ${l.units === 'pixel' ? '1 pixel' : '0.0001 of the frame'} apart` });
  });
  const ruleIds = new Set<string>();
  s.rules.forEach((r, i) => {
    if (ruleIds.has(r.id)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'id'], message: `duplicate rule id${mention(r.id) ? ` ${mention(r.id)}` : ''}` });
    ruleIds.add(r.id);
    // The name is repeated when it has an id's shape: other text may be a secret from ${env:…}.
    // A zone rule naming a line (or the reverse) says so: "no zone "l" (zones: none)" did not.
    if ('zone' in r && r.zone !== undefined && !zoneIds.has(r.zone)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'zone'], message: `no zone ${mention(r.zone) ?? 'of that id'} in this source (zones: ${idList(zoneIds)})${lineIds.has(r.zone) ? `; ${mention(r.zone) ?? 'it'} is a line: a ${r.type} rule watches a zone` : ''}` });
    if ('line' in r && r.line !== undefined && !lineIds.has(r.line)) ctx.addIssue({ code: 'custom', path: ['rules', i, 'line'], message: `no line ${mention(r.line) ?? 'of that id'} in this source (lines: ${idList(lineIds)})${zoneIds.has(r.line) ? `; ${mention(r.line) ?? 'it'} is a zone: a ${r.type} rule watches a line` : ''}` });
    if (r.type === 'zone-dwell') {
      const z = s.zones.find((x) => x.id === r.zone);
      if (z && z.dwellLimitSec === undefined) ctx.addIssue({ code: 'custom', path: ['rules', i, 'zone'], message: `zone${mention(r.zone) ? ` ${mention(r.zone)}` : ''} has no dwellLimitSec, so it never raises dwell events` });
    }
    if (r.type === 'conveyor-rate' && !r.line === !r.zone) ctx.addIssue({ code: 'custom', path: ['rules', i], message: 'give exactly one of "line" (crossings) or "zone" (entries) as what counts as an item' });
    if (r.type === 'conveyor-defect') {
      if (!r.classes === !r.allowed) ctx.addIssue({ code: 'custom', path: ['rules', i], message: 'give exactly one of "classes" (defect classes) or "allowed" (anything else is a defect)' });
      if (r.k > r.n) ctx.addIssue({ code: 'custom', path: ['rules', i, 'k'], message: `k (${r.k}) must not exceed n (${r.n})` });
    }
  });
}
