/**
 * A zone passage's path runs through every sighting a track had outside or on the edge since
 * it was last inside, not straight from its last sighting outside. Virtual time, tracked rows.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer, type AlertDraft } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

const LABELS = ['person', 'bicycle', 'car'];
const PERSON = 0;
const W = 640, H = 480;

/** Track 1, a person whose box's bottom-centre (the feet) is at (fx, fy); box 40 × 100. */
function frame(fx: number, fy: number): Detections {
  return new Detections(Float32Array.of(fx - 20, fy - 100, fx + 20, fy), Float32Array.of(0.9), Int32Array.of(PERSON), Int32Array.of(1));
}

// Zone z: x 320–384, y 300–400, away from the frame's border; a band of 10 px either side of its edges.
const ZONE = { id: 'z', polygon: [[320, 300], [384, 300], [384, 400], [320, 400]], units: 'pixel', minHoldFrames: 3, marginPx: 10 };
const RULES = [
  { id: 'in', type: 'zone-enter', zone: 'z' },
  { id: 'out', type: 'zone-exit', zone: 'z' },
];

/** Feeds the feet positions a frame every `gapMs`; returns the alerts as [event, frame time, atPts]. */
function walk(points: [number, number][], gapMs = 100) {
  const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [ZONE], rules: RULES }), LABELS, 'sources[0]');
  a.init(W, H);
  const alerts: (AlertDraft & { t: number })[] = [];
  points.forEach(([x, y], k) => {
    for (const al of a.process(frame(x, y), k * gapMs).alerts) alerts.push({ ...al, t: k * gapMs });
  });
  return { a, events: alerts.map((x) => [x.event, x.t, x.atPts]), messages: alerts.map((x) => x.message) };
}

/** Steps of `n` frames in a straight line from p to q (q included, p not). */
function leg(p: [number, number], q: [number, number], n: number): [number, number][] {
  return Array.from({ length: n }, (_, k) => [p[0] + ((q[0] - p[0]) * (k + 1)) / n, p[1] + ((q[1] - p[1]) * (k + 1)) / n]);
}

describe('zone passage: the path goes through the sightings on the edge', () => {
  it('a walker who goes round the zone on its edge (within marginPx) neither enters nor leaves', () => {
    // From 20 px left of the zone, round its top 6 px from the edges (8.5 px from its corners),
    // to 20 px right of it. Before, the path ran straight from the last sighting outside
    // (300, 380) to the next (404, 380), through the zone: an enter and an exit alert for someone
    // who never went in.
    const path: [number, number][] = [[300, 380], ...leg([300, 380], [314, 380], 2), ...leg([314, 380], [314, 294], 10), ...leg([314, 294], [390, 294], 10), ...leg([390, 294], [390, 380], 10), ...leg([390, 380], [404, 380], 2), [404, 380], [404, 380]];
    const { a, events } = walk(path);
    expect(events).toEqual([]);
    expect(a.report().zones.z).toMatchObject({ entered: 0, exited: 0 });
  });

  it('round a corner on the edge: no passage through that corner', () => {
    // From the left of the zone up round its top-left corner to above it.
    const path: [number, number][] = [[300, 350], ...leg([300, 350], [314, 350], 2), ...leg([314, 350], [314, 294], 8), ...leg([314, 294], [350, 294], 5), ...leg([350, 294], [350, 280], 2)];
    expect(walk(path).events).toEqual([]);
  });

  it('a walker at 1 fps seen once on the far edge, then outside, enters and leaves once', () => {
    // x 260 (0 s), 380 (1 s: on the right edge's band), 440 (2 s): in at x 320 (0.5 s), out at x 384
    // (1.067 s). Before, placed on the straight path from x 260 to 440: in at 0.667 s, out at 1.378 s.
    const { a, events, messages } = walk([[260, 350], [380, 350], [440, 350], [440, 350]], 1000);
    expect(events).toEqual([['zone.enter', 2000, 0.5], ['zone.exit', 2000, 1.067]]);
    // Its frame (2 s) shows the walker past the zone, and the message says so (before: 'person #1 entered zone z').
    expect(messages).toEqual([
      'person #1 entered zone z at 0.5 s (went through it between two sightings; this frame shows it past the zone)',
      'person #1 left zone z at 1.1 s (went through it between two sightings; this frame shows it past the zone)',
    ]);
    expect(a.report().zones.z).toMatchObject({ entered: 1, exited: 1 });
  });

  it('seen once on the near edge, then outside beyond the far one: one passage', () => {
    const { events } = walk([[260, 350], [324, 350], [440, 350], [440, 350]], 1000);
    expect(events.map((e) => e[0])).toEqual(['zone.enter', 'zone.exit']);
  });

  it('one on the edge who then goes in for good enters once (no passage before it)', () => {
    // x 260, then on the far edge's band, then inside for 3 frames: an entry, not a passage and an entry.
    const { events } = walk([[260, 350], [380, 350], [350, 350], [350, 350], [350, 350], [350, 350]], 1000);
    expect(events.map((e) => e[0])).toEqual(['zone.enter']);
  });
});

describe('a track that vanishes as it goes in', () => {
  // Zone: the right half of the floor (x ≥ 320, y ≥ 300), default band (2 % of the box's height), minHoldFrames 3.
  const HALF = { id: 'z', polygon: [[0.5, 0.625], [1, 0.625], [1, 1], [0.5, 1]], minHoldFrames: 3 };
  const run = (zone: Record<string, unknown>, rows: (t: number) => [id: number, x: number][], until = 5000, gap = 200) => {
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...HALF, ...zone }], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const out: unknown[][] = [];
    const drafts: AlertDraft[] = [];
    for (let t = 0; t <= until; t += gap) {
      const r = rows(t);
      const d = new Detections(Float32Array.from(r.flatMap(([, x]) => [x - 20, 300, x + 20, 400])), new Float32Array(r.length).fill(0.9), new Int32Array(r.length).fill(PERSON), Int32Array.from(r.map(([id]) => id)));
      for (const al of a.process(d, t).alerts) {
        out.push([al.event, al.trackId, t, al.atPts, al.lastSeenPts]);
        drafts.push(al);
      }
    }
    return { events: out, zone: a.report().zones.z, drafts };
  };

  it('one who runs in and out of view (a door at the zone’s far side) within minHoldFrames frames enters and exits once it is gone', () => {
    // 5 fps, 200 px/s: x 200 … 320 (on the edge, at 600 ms), 360 and 400 inside (800, 1000 ms), then gone.
    // Before, nothing: inside on 2 frames (minHoldFrames 3), and never seen outside again (no passage).
    const { events, zone, drafts } = run({}, (t) => (200 + t / 5 < 420 ? [[1, 200 + t / 5]] : []));
    // Raised once it is gone (exitDelayMs 2000 after its last sighting at 1000 ms): in as of its first frame inside, out as of its last.
    expect(events).toEqual([['zone.enter', 1, 3200, 0.8, 1], ['zone.exit', 1, 3200, undefined, 1]]);
    expect(zone).toMatchObject({ entered: 1, exited: 1, occupancy: 0 });
    // Both say they are late, in a field and in words: their frame (3.2 s) and its snapshot do
    // not show the person. Before, only row −1 and atPts told the entry from one seen on its
    // frame, its message read 'person #1 entered zone z', and it had no lastSeenPts.
    expect(drafts.map((x) => [x.row, x.late, x.message])).toEqual([
      [-1, true, 'person #1 entered zone z at 0.8 s (late: raised once it was gone, last seen at 1.0 s going in; this frame is a later one)'],
      [-1, true, 'person #1 left zone z (late: raised once it was gone, last seen at 1.0 s; this frame is a later one)'],
    ]);
  });

  it('back under its id after exitDelayMs and entering on that frame (minHoldFrames 1): one entry on that frame, not two of one track', () => {
    // Zone x 320–384 (y ≥ 300) with a 10 px band: through it at 1 fps onto its far edge's band (x 380), lost for 3 s, back inside.
    const rows = (t: number): [number, number][] => (t === 0 ? [[1, 260]] : t === 1000 ? [[1, 380]] : t >= 5000 ? [[1, 350]] : []);
    const { events } = run({ polygon: [[320, 300], [384, 300], [384, 480], [320, 480]], units: 'pixel', marginPx: 10, minHoldFrames: 1 }, rows, 6000, 1000);
    // Gone at 4000 (before it is back): it went in as it vanished. Back at 5000, it enters again.
    expect(events.map((e) => [e[0], e[2]])).toEqual([['zone.enter', 4000], ['zone.exit', 4000], ['zone.enter', 5000]]);
    // Back on the frame it is gone on (no frame in between): the entry of that frame alone.
    const back = (t: number): [number, number][] => (t === 0 ? [[1, 260]] : t === 1000 ? [[1, 380]] : t >= 3500 ? [[1, 350]] : []);
    const r = run({ polygon: [[320, 300], [384, 300], [384, 480], [320, 480]], units: 'pixel', marginPx: 10, minHoldFrames: 1 }, back, 4000, 500);
    expect(r.events.map((e) => [e[0], e[2]])).toEqual([['zone.enter', 3500]]);
  });

  it('one standing just outside whose legs a passer-by hides (its box’s feet raised into the zone for a frame), then lost wholly, never went in', () => {
    // Zone z (x 320–384, y 300–400): feet at y 420, 20 px below it, standing still; at 1000 ms
    // the legs are hidden (the box ends at y 380: its feet inside, its top where it was); from
    // 1100 ms it is hidden wholly. Before, an entry and an exit once it was gone.
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, marginPx: undefined }], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const events: unknown[] = [];
    const seen = (y2: number) => new Detections(Float32Array.of(330, 300, 370, y2), Float32Array.of(0.9), Int32Array.of(PERSON), Int32Array.of(1));
    for (let t = 0; t <= 5000; t += 100) {
      const d = t < 1000 ? seen(420) : t === 1000 ? seen(380) : new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
      for (const al of a.process(d, t).alerts) events.push([al.event, t]);
    }
    expect(events).toEqual([]);
    expect(a.report().zones.z).toMatchObject({ entered: 0, exited: 0 });
  });

  it('…while one who walks in the same way, its whole box moving, enters and exits once it is gone', () => {
    // The same feet positions, the box 40 × 120 throughout: at 1000 ms it stepped 40 px up, into the zone.
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, marginPx: undefined }], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const events: unknown[] = [];
    const seen = (y2: number) => new Detections(Float32Array.of(330, y2 - 120, 370, y2), Float32Array.of(0.9), Int32Array.of(PERSON), Int32Array.of(1));
    for (let t = 0; t <= 5000; t += 100) {
      const d = t < 1000 ? seen(420) : t === 1000 ? seen(380) : new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
      for (const al of a.process(d, t).alerts) events.push([al.event, t]);
    }
    expect(events).toEqual([['zone.enter', 3100], ['zone.exit', 3100]]);
  });

  it('…and one who walks away from a camera mounted 3 m up, into a doorway at the zone’s far side, enters and exits once it is gone', () => {
    // A pinhole camera 3 m up, looking level (horizon at y 240, focal length 300 px): feet at
    // distance d are at y 240 + 900 / d, the head of a person 1.7 m tall at 240 + 390 / d, so
    // the box's top moves 1.3 / 3 as far as its feet (0.43). At 5 fps and 1.4 m/s from 5 m: the
    // feet cross the zone's near edge (y 380) at 6.4 m, are inside at 6.68 m and 6.96 m (two
    // frames, minHoldFrames 3), then the person is through the door. Before, no alert: the top
    // had not moved half as far as the feet, taken for a box whose legs were hidden.
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, polygon: [[200, 300], [440, 300], [440, 380], [200, 380]], marginPx: undefined }], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const events: unknown[] = [];
    const seen = (d: number) => new Detections(Float32Array.of(320 - 67.5 / d, 240 + 390 / d, 320 + 67.5 / d, 240 + 900 / d), Float32Array.of(0.9), Int32Array.of(PERSON), Int32Array.of(1));
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    for (let k = 0; k <= 25; k++) {
      const d = 5 + 0.28 * k;
      for (const al of a.process(d < 7 ? seen(d) : none, k * 200).alerts) events.push([al.event, k * 200, al.atPts]);
    }
    expect(events).toEqual([['zone.enter', 3600, 1.2], ['zone.exit', 3600, undefined]]);
  });

  it('a track never seen outside (a false detection inside for a few frames) does not enter', () => {
    const { events } = run({}, (t) => (t >= 1000 && t < 1400 ? [[1, 400]] : []));
    expect(events).toEqual([]);
  });

  it('under a new id at once (an id switch): two entries, or one with reentrySuppressMs', () => {
    // Id 1 walks in (inside at 800 and 1000 ms) and is lost; id 2, first seen at 1200 ms, stands inside.
    const rows = (t: number): [number, number][] => (t <= 1000 ? [[1, 200 + t / 5]] : [[2, 410]]);
    expect(run({}, rows).events.filter((e) => e[0] === 'zone.enter').map((e) => e[1])).toEqual([2, 1]);
    const { events, zone } = run({ reentrySuppressMs: 1000 }, rows);
    expect(events.map((e) => [e[0], e[1]])).toEqual([['zone.enter', 2]]);
    expect(zone).toMatchObject({ entered: 1, reidentified: 1, occupancy: 1 });
  });
});

describe('a track confirmed past the zone, first seen in part', () => {
  it('its path starts at the first sure sighting while it was being confirmed', () => {
    // Zone x 320–384 (y 300–400, 10 px band). At 1 fps the tracker saw a forklift first in part
    // (its top over a pallet: a third of its size, feet at x 150), then whole at x 250, and confirms
    // it at x 450: it crossed the zone meanwhile. Before, the first box decided (not sure): no path, no entry.
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [ZONE], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const part = Float32Array.of(130, 317, 170, 350), whole = Float32Array.of(230, 250, 270, 350);
    const f = frame(450, 350);
    const d = new Detections(f.xyxy, f.confidence, f.classId, f.trackerId, new Map([[1, { box: part, ms: 0, before: [{ box: part, ms: 0 }, { box: whole, ms: 1000 }] }]]));
    // From x 250 (1 s) to 450 (2 s): in at x 320 (1.35 s), out at x 384 (1.67 s).
    expect(a.process(d, 2000).alerts.map((x) => [x.event, x.atPts])).toEqual([['zone.enter', 1.35], ['zone.exit', 1.67]]);
  });
});

describe("zone passage through a new track's earlier sightings (the real tracker)", () => {
  /**
   * A person walking right along y 350 at 200 px/s, 10 fps, scored 0.35 (under the tracker's 0.6
   * for a new track) until its feet are past the zone (x 440), 0.8 after: the tracker starts its
   * track past the zone, with its earlier sightings through it. `before`: frames of an empty
   * picture first, at times from `before` ms on (a source whose timestamps then went back to 0).
   */
  function through(before?: number) {
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [ZONE], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const empty = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
    if (before !== undefined) for (let t = before; t < before + 1000; t += 100) a.process(tracker.update(empty, t), t);
    const alerts: [string, number, number | undefined][] = [];
    for (let k = 0; k < 20; k++) {
      const t = 2000 + k * 100, fx = 200 + 20 * k;
      const d = new Detections(Float32Array.of(fx - 20, 250, fx + 20, 350), Float32Array.of(fx < 440 ? 0.35 : 0.8), Int32Array.of(PERSON));
      for (const al of a.process(tracker.update(d, t), t).alerts) alerts.push([al.event as string, t, al.atPts as number | undefined]);
    }
    return alerts;
  }

  it('counts it once, with when it went in and out, also after the source’s timestamps went back', () => {
    // In at x 320 (2.6 s), out at x 384 (2.92 s); its track is confirmed at x 480 (3.4 s).
    const plain = through();
    expect(plain.map(([e, t]) => [e, t])).toEqual([['zone.enter', 3400], ['zone.exit', 3400]]);
    expect(plain[0][2]).toBeCloseTo(2.6, 1);
    expect(plain[1][2]).toBeCloseTo(2.92, 1);
    // The same after a restart: the frames' times went back from 60 s to 2 s (the tracker's clock runs
    // on, shifted). Before, the zone compared the tracker's times of the sightings with the frames':
    // all were later than the frame, none was looked at, and the passage was lost.
    expect(through(60_000)).toEqual(plain);
  });

  it('one scored low who stepped into the zone on minHoldFrames frames and out again, its track started outside: one entry and its exit', () => {
    // Feet along y 280 (above the zone, beyond its band) from x 240, 20 px a frame at 10 fps; at x 340
    // a step down into it (y 325, 350, 350, 325: four frames inside, minHoldFrames 3), back up at
    // x 390 and on to the right; scored 0.35 until x 450, 0.8 after: confirmed at x 490, outside.
    const feet: [number, number][] = [[240, 280], [260, 280], [280, 280], [300, 280], [320, 280], [340, 325], [350, 350], [360, 350], [370, 325], [390, 280]];
    for (let x = 410; x <= 550; x += 20) feet.push([x, 280]);
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [ZONE], rules: RULES }), LABELS, 'sources[0]');
    a.init(W, H);
    const alerts: [string, number, number | undefined][] = [];
    feet.forEach(([fx, fy], k) => {
      const t = k * 100;
      const d = new Detections(Float32Array.of(fx - 20, fy - 100, fx + 20, fy), Float32Array.of(fx < 450 ? 0.35 : 0.8), Int32Array.of(PERSON));
      for (const al of a.process(tracker.update(d, t), t).alerts) alerts.push([al.event as string, t, al.atPts as number | undefined]);
    });
    // Seen inside from 0.5 s to 0.8 s, by the tracker before the track started. Before, its earlier
    // sightings stopped at the first inside, and the path ran straight on above the zone: nothing.
    expect(alerts.map(([e, t]) => [e, t])).toEqual([['zone.enter', 1400], ['zone.exit', 1400]]);
    expect(alerts[0][2]).toBeGreaterThanOrEqual(0.4);
    expect(alerts[0][2]).toBeLessThanOrEqual(0.5);
    expect(alerts[1][2]).toBeGreaterThanOrEqual(0.8);
    expect(alerts[1][2]).toBeLessThanOrEqual(0.9);
  });
});
