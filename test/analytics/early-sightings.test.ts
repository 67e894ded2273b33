/**
 * Zones and lines through a new track's earlier sightings (the tracker's, before it confirmed the
 * track): when what they show happened, passages among them, and one first seen inside. The real
 * tracker, virtual time.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer, type AlertDraft } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

const LABELS = ['person', 'bicycle', 'car'];
const W = 640, H = 480;

// Zone z: x 320–384, y 300–400, a 10 px band; a door line from x 300 to 420 at y 240 ("in" is downwards).
const ZONE = { id: 'z', polygon: [[320, 300], [384, 300], [384, 400], [320, 400]], units: 'pixel', minHoldFrames: 3, marginPx: 10 };
const LINE = { id: 'door', from: [420, 240], to: [300, 240], units: 'pixel', marginPx: 10, anchor: 'bottom-center' };
const RULES = [
  { id: 'in', type: 'zone-enter', zone: 'z' },
  { id: 'out', type: 'zone-exit', zone: 'z' },
  { id: 'cross', type: 'line-cross', line: 'door', direction: 'any' },
];

type Seen = { event: string; t: number; atPts?: number; dwellMs?: number; message: string; direction?: unknown };

/**
 * A person 40 × 100 whose feet are at `feet[k]` at k × 100 ms (10 fps), scored `score(k)`, through
 * the real tracker and an analyzer with zone z, line door and `rules`. Returns its alerts and the analyzer.
 */
function walk(feet: readonly [number, number][], score: (k: number) => number, zone: Record<string, unknown> = {}, rules: unknown[] = RULES, label: (k: number) => number = () => 0, tracking: { classAware?: boolean; lostTrackBufferMs?: number } = {}, time: (k: number) => number = (k) => k * 100) {
  const tracker = new ByteTracker({ frameRateHint: 10, ...tracking });
  const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, ...zone }], lines: [LINE], rules }), LABELS, 'sources[0]');
  a.init(W, H);
  const alerts: Seen[] = [];
  const drafts: AlertDraft[] = [];
  feet.forEach(([fx, fy], k) => {
    const t = time(k);
    const d = fx < 0 ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(fx - 20, fy - 100, fx + 20, fy), Float32Array.of(score(k)), Int32Array.of(label(k)));
    for (const al of a.process(tracker.update(d, t), t).alerts) {
      drafts.push(al);
      alerts.push({ event: al.event as string, t, atPts: al.atPts as number | undefined, dwellMs: al.dwellMs as number | undefined, message: al.message as string, direction: al.direction });
    }
  });
  return { alerts, drafts, report: a.report() };
}

/** `n` feet positions in a straight line from p (included) on by `step` each. */
const run = (p: [number, number], step: [number, number], n: number): [number, number][] => Array.from({ length: n }, (_, k) => [p[0] + step[0] * k, p[1] + step[1] * k]);

describe('a line crossing among the earlier sightings says when it happened', () => {
  it('scored low until past the door line: counted on the confirming frame, with the time it crossed', () => {
    // Feet down x 350 from y 180, 15 px a frame: on the line (240) at 0.4 s; scored 0.35 until y 285
    // (0.7 s), 0.9 after: the track starts there and is confirmed at 0.9 s.
    const feet = run([350, 180], [0, 15], 14);
    const { alerts, report } = walk(feet, (k) => (feet[k][1] < 285 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.direction])).toEqual([['line.cross', 900, 'in']]);
    expect(alerts[0].atPts).toBeCloseTo(0.4, 1);
    expect(alerts[0].message).toBe('person #1 crossed line door (in) at 0.4 s (seen before its track was confirmed; raised once it was)');
    expect(report.lines.door).toMatchObject({ in: 1, out: 0 });
  });

  it('through the door line and back before the track started: each crossing with its own time', () => {
    // Feet down x 330 from y 215 to 260, 15 px a frame (beyond the line's margin at 0 s and 0.3 s:
    // crossed at 0.167 s on the way between), back up to 200 (beyond it at 0.6 s: crossed at
    // 0.433 s), where they stay; scored 0.35 until 0.8 s, 0.9 after: confirmed above the line at 1.0 s.
    const feet: [number, number][] = [...run([330, 215], [0, 15], 4), ...run([330, 245], [0, -15], 4), ...run([330, 200], [0, 0], 5)];
    const { alerts, drafts, report } = walk(feet, (k) => (k < 8 ? 0.35 : 0.9), {}, [RULES[2]]);
    // Both on the confirming frame, each with its own time (their alert ids differ: sinks/alerts.ts).
    expect(alerts.map((x) => [x.event, x.t, x.direction])).toEqual([['line.cross', 1000, 'in'], ['line.cross', 1000, 'out']]);
    expect(drafts.map((x) => x.row)).toEqual([0, 0]);
    expect(alerts.map((x) => x.atPts)).toEqual([0.167, 0.433]);
    expect(report.lines.door).toMatchObject({ in: 1, out: 1 });
  });

  it('…and lost right after the confirming frame: both raised on it, nothing held for a frame that never shows the track', () => {
    const feet: [number, number][] = [...run([330, 215], [0, 15], 4), ...run([330, 245], [0, -15], 4), ...run([330, 200], [0, 0], 3), ...run([-1, 0], [0, 0], 5)];
    const { alerts, drafts } = walk(feet, (k) => (k < 8 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.direction, x.atPts])).toEqual([['line.cross', 1000, 'in', 0.167], ['line.cross', 1000, 'out', 0.433]]);
    expect(drafts.map((x) => x.row)).toEqual([0, 0]);
  });

  it("the line-cross latch's 5 s on the side it crossed from count from when it crossed back, not from the confirming frame", () => {
    // Feet at x 350 scored 0.35 until 0.8 s: down through the door line (in at 0.167 s) and back up
    // (out at 0.533 s), above it (y 215) from 0.7 s, confirmed there at 1.0 s; it stays above until
    // 5.7 s, then steps down through the line again (past the margin at 6.0 s). 5 s above since it
    // crossed back (0.533 s) release its 'in': alerted again. Before, they counted from 1.0 s, only
    // 4.7 s by its last frame above: the second 'in' was taken for a shuffle and not alerted.
    const feet: [number, number][] = [...run([350, 215], [0, 15], 4), [350, 260], ...run([350, 245], [0, -15], 3), ...run([350, 215], [0, 0], 50), ...run([350, 230], [0, 15], 4)];
    const { alerts, report } = walk(feet, (k) => (k < 8 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(alerts.map((x) => [x.direction, x.t, x.atPts])).toEqual([['in', 1000, 0.167], ['out', 1000, 0.533], ['in', 6000, undefined]]);
    expect(report.lines.door).toMatchObject({ in: 2, out: 1 });
  });

  it("the source's timestamps go back on the confirming frame (a restart): its atPts is before that frame's pts, as when they go back a frame earlier", () => {
    // As the first case, the pts 9.0 s on at first, back to 0 at the 10th frame (which confirms the
    // track) or at the 9th. Before, with the step on the confirming frame: at 9.4 s, its frame's pts 0.0.
    const feet = run([350, 180], [0, 15], 14);
    const score = (k: number) => (feet[k][1] < 285 ? 0.35 : 0.9);
    const onConfirm = walk(feet, score, {}, [RULES[2]], () => 0, {}, (k) => (k < 9 ? 9000 + k * 100 : (k - 9) * 100));
    expect(onConfirm.alerts.map((x) => [x.event, x.t, x.direction, x.atPts])).toEqual([['line.cross', 0, 'in', -0.4]]);
    const before = walk(feet, score, {}, [RULES[2]], () => 0, {}, (k) => (k < 8 ? 9000 + k * 100 : (k - 8) * 100));
    expect(before.alerts.map((x) => [x.event, x.t, x.direction, x.atPts])).toEqual([['line.cross', 100, 'in', -0.3]]);
  });

  it('a crossing seen on its own frame has no atPts', () => {
    // Scored 0.9 all along from y 180, 15 px a frame: confirmed at 0.2 s above the line, across it at 0.5 s.
    const { alerts } = walk(run([350, 180], [0, 15], 10), () => 0.9, {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.message])).toEqual([['line.cross', 500, undefined, 'person #1 crossed line door (in)']]);
  });
});

describe('a zone entry among the earlier sightings', () => {
  const DWELL = [RULES[0], RULES[1], { id: 'long', type: 'zone-dwell', zone: 'z' }];

  it('scored low walking in, confirmed inside: entered on the confirming frame, as of when it went in, and its dwell counts from then', () => {
    // Feet down x 350 from y 270, 12 px a frame: on the top edge's band at 0.2 and 0.3 s, inside
    // beyond it from 0.4 s (y 318), standing at y 342 from 0.6 s; scored 0.35 until 0.7 s, 0.9 after:
    // the track is confirmed at 0.9 s, inside. dwellLimitSec 1.
    const feet = [...run([350, 270], [0, 12], 7), ...run([350, 342], [0, 0], 14)];
    const { alerts, report } = walk(feet, (k) => (k < 7 ? 0.35 : 0.9), { dwellLimitSec: 1 }, DWELL);
    // Before: entered at 1.1 s (three frames inside from the confirming one), no atPts, and the
    // dwell alert at 1.9 s (counted from 0.9 s), half a second after the person had been in for 1 s.
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 900, 0.4, undefined],
      ['zone.dwell', 1400, undefined, 1000],
    ]);
    expect(alerts[0].message).toBe('person #1 entered zone z at 0.4 s (seen before its track was confirmed; raised once it was)');
    expect(report.zones.z).toMatchObject({ entered: 1, exited: 0, occupancy: 1 });
  });
});

describe("a zone entry among the earlier sightings, the source's timestamps going back on the confirming frame", () => {
  it('is found among them, as when they go back a frame earlier, not left to the frames after', () => {
    // The first zone case (in beyond the band from 0.4 s, confirmed at 0.9 s), the pts 9.0 s on at
    // first, back to 0 at the confirming frame (the tracker takes no time to have passed since the
    // frame before, read as 0 too: in at -0.4 s). Before: every sighting read as later than that
    // frame, none looked at: entered at 0.2 s (two frames on), no atPts.
    const feet = [...run([350, 270], [0, 12], 7), ...run([350, 342], [0, 0], 14)];
    const { alerts } = walk(feet, (k) => (k < 7 ? 0.35 : 0.9), {}, RULES.slice(0, 2), () => 0, {}, (k) => (k < 9 ? 9000 + k * 100 : (k - 9) * 100));
    expect(alerts.map((x) => [x.event, x.t, x.atPts])).toEqual([['zone.enter', 0, -0.4]]);
  });
});

describe('a class-filtered zone: earlier sightings under a label it does not count (tracking.classAware false)', () => {
  // Something standing inside zone z (feet at 350, 350), labelled bicycle at 0.35 for 1 s (sightings
  // the tracker keeps, whatever their label), then person at 0.9 on three frames (its track is
  // confirmed at 1.2 s), then bicycle at 0.9. The zone counts people.
  const feet = run([350, 350], [0, 0], 25);
  const score = (k: number) => (k < 10 ? 0.35 : 0.9);
  const label = (k: number) => (k >= 10 && k < 13 ? 0 : 1);

  it('minHoldFrames 5: three frames labelled person make no entry, as for a tracked track', () => {
    // Before: the ten bicycle sightings made the hold, and it entered as a person at 0.0 s.
    const { alerts, report } = walk(feet, score, { classes: ['person'], minHoldFrames: 5 }, RULES.slice(0, 2), label, { classAware: false });
    expect(alerts).toEqual([]);
    expect(report.zones.z).toMatchObject({ entered: 0 });
  });

  it('minHoldFrames 3: entered as of its first sighting labelled person, not its first as a bicycle', () => {
    const { alerts, report } = walk(feet, score, { classes: ['person'] }, RULES.slice(0, 2), label, { classAware: false });
    expect(alerts.map((x) => [x.event, x.t, x.atPts])).toEqual([['zone.enter', 1200, 1]]);
    expect(report.zones.z).toMatchObject({ entered: 1 });
  });
});

describe('a class-filtered line: earlier sightings under a label it does not count (tracking.classAware false)', () => {
  /** Feet down x 350 from y 180, 15 px a frame, through the door line (y 240) at 0.4 s; labelled `early` at 0.35 until y 285 (0.7 s), then `late` at 0.9. */
  function cross(early: number, late: number) {
    const tracker = new ByteTracker({ frameRateHint: 10, classAware: false });
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ ...LINE, classes: ['car'] }], rules: [RULES[2]] }), LABELS, 'sources[0]');
    a.init(W, H);
    const seen: [number, unknown, unknown][] = [];
    for (let k = 0; k < 14; k++) {
      const fy = 180 + 15 * k;
      const d = new Detections(Float32Array.of(330, fy - 100, 370, fy), Float32Array.of(fy < 285 ? 0.35 : 0.9), Int32Array.of(fy < 285 ? early : late));
      for (const al of a.process(tracker.update(d, k * 100), k * 100).alerts) seen.push([k * 100, al.direction, al.atPts]);
    }
    return { seen, door: a.report().lines.door };
  }

  it('a person who walked through a car line, labelled car past it: not counted, as when tracked', () => {
    // Before: counted a car going in at 0.4 s, on the confirming frame.
    const { seen, door } = cross(0, 2);
    expect(seen).toEqual([]);
    expect(door).toMatchObject({ in: 0, out: 0 });
  });

  it('a car labelled car all along is counted, as of when it crossed', () => {
    const { seen, door } = cross(2, 2);
    expect(seen).toEqual([[900, 'in', 0.4]]);
    expect(door).toMatchObject({ in: 1, out: 0 });
  });
});

describe('a zone passage among the earlier sightings', () => {
  it('in and out again before the track started, then confirmed inside: both entries', () => {
    // Feet at x 340: above the zone (y 280) at 0 s, inside (y 320) 0.1–0.3 s, above 0.4–0.6 s, inside
    // from 0.7 s; scored 0.35 until 1.0 s, 0.9 after: confirmed inside at 1.2 s.
    const feet: [number, number][] = [[340, 280], [340, 320], [340, 320], [340, 320], [340, 280], [340, 280], [340, 280], ...run([340, 320], [0, 0], 10)];
    const { alerts, report } = walk(feet, (k) => (k < 10 ? 0.35 : 0.9));
    // Before: the passage was dropped when the track entered (one entry, at 1.4 s, no atPts).
    // All three on the confirming frame, each with its time (the two entries' alert ids differ:
    // sinks/alerts.ts), in the order they happened: before, in the order of the rules (enter 0.1,
    // enter 0.7, exit 0.4), and a consumer keeping the latest state per track had it outside.
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 1200, 0.1, undefined],
      ['zone.exit', 1200, 0.4, 300],
      ['zone.enter', 1200, 0.7, undefined],
    ]);
    // The frame shows it inside: the passage's messages do not say it shows it past the zone (before, they did).
    expect(alerts.map((x) => x.message)).toEqual([
      'person #1 entered zone z at 0.1 s (seen before its track was confirmed; raised once it was)',
      'person #1 left zone z at 0.4 s (seen before its track was confirmed; raised once it was)',
      'person #1 entered zone z at 0.7 s (seen before its track was confirmed; raised once it was)',
    ]);
    expect(report.zones.z).toMatchObject({ entered: 2, exited: 1, occupancy: 1 });
  });

  it("a zone-enter rule's cooldown spaces its entries as it would a tracked track's: 0.6 s apart, both alerted under 0.5 s, the first only under 1 s", () => {
    // The same walk, once scored low until 1.0 s (both entries found among the sightings, raised on the
    // confirming frame), once tracked all along (five frames above the zone first: entries raised at
    // 0.8 s and 1.4 s, their holds' third frames). Before, the cooldown counted from the confirming
    // frame for each: the second entry, 0.6 s after the first, was dropped under any cooldown.
    const walkIn: [number, number][] = [[340, 280], [340, 320], [340, 320], [340, 320], [340, 280], [340, 280], [340, 280], ...run([340, 320], [0, 0], 10)];
    const before: [number, number][] = run([340, 280], [0, 0], 5);
    for (const [cooldownSec, entries] of [[0.5, 2], [1, 1]] as const) {
      const rules = [{ id: 'in', type: 'zone-enter', zone: 'z', cooldownSec }];
      const early = walk(walkIn, (k) => (k < 10 ? 0.35 : 0.9), {}, rules).alerts;
      const tracked = walk([...before, ...walkIn], () => 0.9, {}, rules).alerts;
      expect(tracked.map((x) => x.event), `tracked, cooldownSec ${cooldownSec}`).toEqual(Array(entries).fill('zone.enter'));
      expect(early.map((x) => [x.event, x.t, x.atPts]), `earlier sightings, cooldownSec ${cooldownSec}`).toEqual([['zone.enter', 1200, 0.1], ['zone.enter', 1200, 0.7]].slice(0, entries));
    }
  });

  it("…and a tracked person's entry followed by one made as they went out of view: spaced as the same walk seen throughout", () => {
    // Above the zone, in from 0.5 s (entry raised at 0.7 s, its hold's third frame), out from 1.0 s, in
    // again at 1.6 s: seen there on two frames only (under minHoldFrames), then lost from view (its entry
    // raised once it is gone, as of 1.6 s), or seen on (raised at 1.8 s). The entries are 1.1 s apart
    // either way: both alerted under a cooldown of 1 s. Before, the first counted from the frame that
    // raised it (0.7 s), the second from when it happened (1.6 s): 0.9 s, and the second was dropped.
    const first: [number, number][] = [...run([340, 280], [0, 0], 5), ...run([340, 320], [0, 0], 5), ...run([340, 280], [0, 0], 6)];
    const rules = [{ id: 'in', type: 'zone-enter', zone: 'z', cooldownSec: 1 }];
    const lost = walk([...first, ...run([340, 320], [0, 0], 2), ...run([-1, 0], [0, 0], 25)], () => 0.9, {}, rules).alerts;
    const seen = walk([...first, ...run([340, 320], [0, 0], 10)], () => 0.9, {}, rules).alerts;
    expect(seen.map((x) => [x.event, x.t])).toEqual([['zone.enter', 700], ['zone.enter', 1800]]);
    expect(lost.map((x) => [x.event, x.atPts])).toEqual([['zone.enter', undefined], ['zone.enter', 1.6]]);
  });

  it('…and lost right after the confirming frame: its second entry raised on that frame, its exit once it is gone', () => {
    const feet: [number, number][] = [[340, 280], [340, 320], [340, 320], [340, 320], [340, 280], [340, 280], [340, 280], ...run([340, 320], [0, 0], 6), ...run([-1, 0], [0, 0], 25)];
    const { alerts, drafts, report } = walk(feet, (k) => (k < 10 ? 0.35 : 0.9));
    // Unseen from 1.3 s, gone at 3.3 s (exitDelayMs 2000): its exit then, late.
    expect(alerts.map((x) => [x.event, x.t, x.atPts])).toEqual([
      ['zone.enter', 1200, 0.1],
      ['zone.exit', 1200, 0.4],
      ['zone.enter', 1200, 0.7],
      ['zone.exit', 3300, undefined],
    ]);
    expect(drafts.map((x) => x.late)).toEqual([undefined, undefined, undefined, true]);
    expect(report.zones.z).toMatchObject({ entered: 2, exited: 2, occupancy: 0 });
  });

  it('…and its stay taken over by a new id right after (reentrySuppressMs): the stay entered once, alerted once', () => {
    // As above at x 340, last seen on the confirming frame (1.2 s); from 1.3 s a new id inside at
    // x 372 (its box apart from the old one's: the tracker does not re-find it), confirmed at 1.5 s:
    // it takes over the stay, whose entry was alerted on the confirming frame.
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, reentrySuppressMs: 2000 }], lines: [LINE], rules: RULES.slice(0, 2) }), LABELS, 'sources[0]');
    a.init(W, H);
    const ys = [280, 320, 320, 320, 280, 280, 280, 320, 320, 320, 320, 320, 320];
    const seen: [string, number, unknown, number | undefined, boolean | undefined][] = [];
    for (let k = 0; k < 30; k++) {
      const [fx, fy] = k < ys.length ? [340, ys[k]] : [372, 330];
      const d = new Detections(Float32Array.of(fx - 20, fy - 100, fx + 20, fy), Float32Array.of(k < 10 ? 0.35 : 0.9), Int32Array.of(0));
      for (const al of a.process(tracker.update(d, k * 100), k * 100).alerts) seen.push([al.event as string, k * 100, al.trackId, al.atPts as number | undefined, al.late as boolean | undefined]);
    }
    expect(seen).toEqual([
      ['zone.enter', 1200, 1, 0.1, undefined],
      ['zone.exit', 1200, 1, 0.4, undefined],
      ['zone.enter', 1200, 1, 0.7, undefined],
    ]);
    expect(a.report().zones.z).toMatchObject({ entered: 2, exited: 1, reidentified: 1, occupancy: 1 });
  });

  it('inside on its last sightings before the track, confirmed on its first frame outside: an entry, and its exit', () => {
    // Feet at x 340: above the zone (y 280) at 0 s, inside (y 320) 0.1–0.5 s, then above again,
    // walking off to the left; scored 0.35 until 0.4 s, 0.9 after: confirmed at 0.6 s, outside.
    const feet: [number, number][] = [[340, 280], ...run([340, 320], [0, 0], 5), ...run([340, 280], [-12, 0], 8)];
    const { alerts, report } = walk(feet, (k) => (k < 4 ? 0.35 : 0.9));
    // Before: nothing (the path ran from the sighting above to the confirmed one above).
    // Its exit after minHoldFrames frames outside, as for any track.
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 600, 0.1, undefined],
      ['zone.exit', 800, undefined, 500],
    ]);
    expect(report.zones.z).toMatchObject({ entered: 1, exited: 1, occupancy: 0 });
  });
});

describe('a zone passage between two earlier sightings, the track then confirmed inside', () => {
  it("its messages say it was seen before the track was confirmed, not that the frame shows it past the zone", () => {
    // Feet at y 350 crossing the zone (x 320–384, a 10 px band) from x 300 to 420, 30 px a frame:
    // inside beyond the band on one sighting only (x 360, 0.2 s), a passage; back in from 0.5 s and
    // standing at x 360 from 0.6 s; scored 0.35 until 0.8 s, 0.9 after: confirmed inside at 1.0 s.
    const feet: [number, number][] = [...run([300, 350], [30, 0], 5), [390, 350], ...run([360, 350], [0, 0], 8)];
    const { alerts } = walk(feet, (k) => (k < 8 ? 0.35 : 0.9));
    expect(alerts.map((x) => [x.event, x.t, x.atPts])).toEqual([
      ['zone.enter', 1000, 0.067],
      ['zone.exit', 1000, 0.28],
      ['zone.enter', 1000, 0.6],
    ]);
    // Before: 'person #1 entered zone z at 0.1 s (went through it between two sightings; this frame shows it past the zone)', on a frame showing it inside.
    expect(alerts.map((x) => x.message)).toEqual([
      'person #1 entered zone z at 0.1 s (seen before its track was confirmed; raised once it was)',
      'person #1 left zone z at 0.3 s (seen before its track was confirmed; raised once it was)',
      'person #1 entered zone z at 0.6 s (seen before its track was confirmed; raised once it was)',
    ]);
  });
});

describe('a person first seen inside the zone', () => {
  it('who leaves within minHoldFrames frames of the confirmation: entered (as of the first sighting) and left', () => {
    // Steps out from behind a shelf inside the zone (feet at y 385, 5 px above the bottom edge's band),
    // stands 0.4 s, then walks down out of the zone, 12 px a frame; scored 0.9 all along: confirmed at
    // 0.2 s, on its edge's band from 0.4 s, outside from 0.6 s. Before, no entry at all: inside on two
    // frames after the confirming one (minHoldFrames 3), though seen inside on five.
    const feet = [...run([350, 385], [0, 0], 4), ...run([350, 397], [0, 12], 8)];
    const { alerts, report } = walk(feet, () => 0.9);
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 200, 0, undefined],
      ['zone.exit', 800, undefined, 600],
    ]);
    expect(report.zones.z).toMatchObject({ entered: 1, exited: 1, occupancy: 0 });
  });
});

describe('a person shuffling on the door line, first scored low', () => {
  it('counts each real crossing once (earlier sightings and frames alike), and the line-cross rule alerts each direction once', () => {
    // Feet at x 350 stepping between 20 px above and 20 px below the line (margin 10) every 0.4 s for
    // 6 s, scored 0.35 for the first 0.9 s (the track starts with those sightings): 14 crossings.
    const feet = Array.from({ length: 60 }, (_, k): [number, number] => [350, 240 + (Math.floor(k / 4) % 2 ? 20 : -20)]);
    const { alerts, report } = walk(feet, (k) => (k < 9 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(report.lines.door).toMatchObject({ in: 7, out: 7 });
    // The latch (a body's size from the line, or 5 s on the side it crossed from) holds the rest.
    expect(alerts.map((x) => [x.direction, x.atPts !== undefined])).toEqual([['in', true], ['out', true]]);
  });
});

describe("a stay across a step back of the source's pts (a camera's clock reset, a looped file)", () => {
  it('its dwell and its exit count the media time that passed, not the pts; no time passes at the step', () => {
    // Standing inside zone z (feet at 350, 350) from pts 9.0 s, scored 0.9: entered as of 9.0 s
    // (confirmed at 9.2 s). The pts go back to 0 at the 16th frame (9.0 + 1.5 s of media, no
    // time at the step); dwellLimitSec 2: 2 s inside at pts 0.6. It walks down out of the zone
    // from pts 1.5, 15 px a frame: outside beyond the band from pts 1.9 (3.3 s after it came in).
    // Before: the dwell counted from 9.0 on the new pts, 9 s late (not by 3 s), and its exit
    // said -7.1 s inside.
    const feet = [...run([350, 350], [0, 0], 30), ...run([350, 365], [0, 15], 8)];
    const time = (k: number) => (k < 15 ? 9000 + k * 100 : (k - 15) * 100);
    const { alerts } = walk(feet, () => 0.9, { dwellLimitSec: 2 }, [RULES[0], RULES[1], { id: 'long', type: 'zone-dwell', zone: 'z' }], () => 0, {}, time);
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 9200, 9, undefined],
      ['zone.dwell', 600, undefined, 2000],
      ['zone.exit', 2100, undefined, 3300],
    ]);
  });

  it("a rule's cooldown counts the media time too: an entry 4 s after the last one is alerted across the step", () => {
    // In zone z from pts 9.0 s (entered as of then), the pts back to 0 at the 16th frame; it walks
    // down out of the zone from pts 0.5 (15 px a frame), waits, and walks back in from pts 2.0
    // (inside beyond the band from 2.4: entered at 2.6, after minHoldFrames). cooldownSec 2: its
    // second entry, 4 s of media after the first, is alerted. Before: the cooldown counted from 9.0
    // on the new pts, and held it back.
    const feet: [number, number][] = [...run([350, 350], [0, 0], 20), ...run([350, 365], [0, 15], 7), ...run([350, 455], [0, 0], 8), ...run([350, 440], [0, -15], 7), ...run([350, 350], [0, 0], 10)];
    const time = (k: number) => (k < 15 ? 9000 + k * 100 : (k - 15) * 100);
    const { alerts } = walk(feet, () => 0.9, {}, [{ ...RULES[0], cooldownSec: 2 }], () => 0, {}, time);
    expect(alerts.map((x) => [x.event, x.t, x.atPts])).toEqual([
      ['zone.enter', 9200, 9],
      ['zone.enter', 2600, undefined],
    ]);
  });

  it('an entry whose hold spans the step is reported at its time on the new pts (before the step: negative), not after it', () => {
    // Scored 0.35 walking in (in beyond the band from pts 9.4 s), confirmed inside at the step
    // (the 10th frame, pts back to 0), as the earlier case; then the pts step back again to 0 at
    // the 13th, before the dwell (1 s) is up: it is raised 1 s of media after the entry, at pts 0.4.
    const feet = [...run([350, 270], [0, 12], 7), ...run([350, 342], [0, 0], 20)];
    const time = (k: number) => (k < 9 ? 9000 + k * 100 : k < 12 ? (k - 9) * 100 : (k - 12) * 100);
    const { alerts } = walk(feet, (k) => (k < 7 ? 0.35 : 0.9), { dwellLimitSec: 1 }, [RULES[0], { id: 'long', type: 'zone-dwell', zone: 'z' }], () => 0, {}, time);
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.dwellMs])).toEqual([
      ['zone.enter', 0, -0.4, undefined],
      ['zone.dwell', 400, undefined, 1000],
    ]);
  });

  it("an entry a few ms before the step: its message says 0.0 s, not -0.0 s", () => {
    // As above, the pts stepping back to 0.37 s (not 0): the entry, at 9.4 s before the step, is at
    // −0.03 s on the new pts. Before, its message said "at -0.0 s".
    const feet = [...run([350, 270], [0, 12], 7), ...run([350, 342], [0, 0], 6)];
    const time = (k: number) => (k < 9 ? 9000 + k * 100 : 370 + (k - 9) * 100);
    const { alerts } = walk(feet, (k) => (k < 7 ? 0.35 : 0.9), {}, [RULES[0]], () => 0, {}, time);
    expect(alerts.map((x) => [x.event, x.atPts, x.message])).toEqual([['zone.enter', -0.03, 'person #1 entered zone z at 0.0 s (seen before its track was confirmed; raised once it was)']]);
  });
});

describe('two people crossing, one scored low: the low-scored one keeps its sightings from before they passed', () => {
  it("its line crossing among them is counted, with its time", () => {
    // An upright aisle line at x 380. P (scored 0.9, tracked) walks right from x 110, Q (10 px lower,
    // scored 0.35 until 1.5 s) walks left from x 460, 15 px a frame each: Q's feet cross the line at
    // 0.67 s, the two pass at 1.2 s, where P's new box lies nearer Q's last sighting than Q's own.
    // Before: Q's sightings ended there, its track started past the line, and its crossing was lost.
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const aisle = { id: 'aisle', from: [380, 0], to: [380, 480], units: 'pixel', marginPx: 10, anchor: 'bottom-center' };
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [aisle], rules: [{ id: 'cross', type: 'line-cross', line: 'aisle', direction: 'any' }] }), LABELS, 'sources[0]');
    a.init(W, H);
    const seen: [number, unknown, unknown, unknown][] = [];
    for (let k = 0; k < 24; k++) {
      const d = new Detections(Float32Array.of(110 + 15 * k, 100, 150 + 15 * k, 200, 460 - 15 * k, 110, 500 - 15 * k, 210), Float32Array.of(0.9, k < 15 ? 0.35 : 0.9), Int32Array.of(0, 0));
      for (const al of a.process(tracker.update(d, k * 100), k * 100).alerts) seen.push([k * 100, al.trackId, al.direction, al.atPts]);
    }
    expect(seen).toEqual([
      [1700, 2, 'out', 0.667],
      [1800, 1, 'in', undefined],
    ]);
  });
});

describe('a low-scored person who walks through a line and stops beside someone, followed by motion', () => {
  // An upright aisle line at x 380. A (40 × 100, scored 0.35) walks right from x 200, 15 px a frame
  // at 10 fps (its motion is clear: the tracker follows its sightings where it goes), its feet
  // crossing the line at 1.07 s, and stops at x 440 (1.6 s), beside someone standing 20 px on and
  // 10 px lower: where A's motion would have taken it. Before, A's sightings were matched there
  // first (by motion), where it was only after every such pair: they went to the other's box.
  const aisle = { id: 'aisle', from: [380, 0], to: [380, 480], units: 'pixel', marginPx: 10, anchor: 'bottom-center' };
  function crossings(other: (k: number) => number | undefined, aScore: (k: number) => number) {
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [aisle], rules: [{ id: 'cross', type: 'line-cross', line: 'aisle', direction: 'any' }] }), LABELS, 'sources[0]');
    a.init(W, H);
    const seen: [number, unknown, unknown, unknown][] = [];
    for (let k = 0; k < 40; k++) {
      const ax = Math.min(200 + 15 * k, 440);
      const rows = [ax, 100, ax + 40, 200], scores = [aScore(k)];
      const o = other(k);
      if (o !== undefined) {
        rows.push(460, 110, 500, 210);
        scores.push(o);
      }
      const d = tracker.update(new Detections(Float32Array.from(rows), Float32Array.from(scores), new Int32Array(scores.length)), k * 100);
      for (const al of a.process(d, k * 100).alerts) seen.push([k * 100, al.trackId === d.trackerId![0] ? 'A' : 'other', al.direction, al.atPts]);
    }
    return seen;
  }

  it('beside a tracked person: its crossing among its sightings is counted once it is tracked, with its time', () => {
    // A scored 0.9 from 1.7 s: confirmed at 1.9 s. Before: its sightings ended at 1.7 s, and its crossing was lost.
    expect(crossings(() => 0.9, (k) => (k < 17 ? 0.35 : 0.9))).toEqual([[1900, 'A', 'in', 1.067]]);
  });

  it('beside someone just come into view: that one, who never crossed, is not counted (nor is A, its crossing too long before its track)', () => {
    // The other steps into view at 1.7 s, scored 0.9; A stays scored low until 2.5 s. Before: the
    // newcomer's track started with A's sightings, and it was counted crossing at 1.07 s.
    expect(crossings((k) => (k >= 17 ? 0.9 : undefined), (k) => (k < 25 ? 0.35 : 0.9))).toEqual([]);
  });
});

describe("a track back inside on the very frame its absence passed the zone's exitDelayMs", () => {
  it('minHoldFrames 1: its late exit comes before its new entry, so the latest alert of the track says where it is', () => {
    // Standing inside (feet 340, 350), seen 0–1.0 s, hidden 1.1–1.5 s, seen again from 1.6 s, when
    // its absence (0.6 s) has just passed exitDelayMs 500; the tracker keeps its id (its
    // lostTrackBufferMs 2000). On that frame it left as of its last sighting (late) and enters
    // again. Before, the two came in the order of the rules (enter, then exit: no alert had an
    // atPts, and a frame's alerts were put in time order only then), and a consumer keeping the
    // latest state per track had a person standing inside as gone.
    const feet: [number, number][] = [...run([340, 350], [0, 0], 11), ...run([-1, 0], [0, 0], 5), ...run([340, 350], [0, 0], 5)];
    const { drafts } = walk(feet, () => 0.9, { minHoldFrames: 1, exitDelayMs: 500 }, RULES.slice(0, 2), () => 0, { lostTrackBufferMs: 2000 });
    expect(drafts.map((x) => [x.event, x.trackId, x.lastSeenPts, x.late])).toEqual([
      ['zone.enter', 1, undefined, undefined],
      ['zone.exit', 1, 1, true],
      ['zone.enter', 1, undefined, undefined],
    ]);
  });
});
