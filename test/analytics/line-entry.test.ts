import { describe, expect, it } from 'vitest';
import { LineCounter, type LineEvent } from '../../src/analytics/line.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker, PRE_TRACK_MIN_SIGHTINGS, PRE_TRACK_MS, PRE_TRACK_SIGHTINGS, type ByteTrackerOptions } from '../../src/tracking/byte-tracker.js';
import { feed, run, type SceneObject } from '../tracking/helpers.js';

/**
 * A line near where people come into view: level at y = 120 of a 640 × 480 picture, drawn right
 * to left ("in" is downwards), feet as the anchor. People come in at the top and walk down.
 */
const line = () => new LineCounter('door', [640, 120], [0, 120], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });

/** A short door line from x = 300 to 420 at y = 240 of the same picture (drawn right to left: "in" is downwards). */
const doorLine = () => new LineCounter('door', [420, 240], [300, 240], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });

/** A person 60 × 120 whose feet are at `feet[k]` for the k-th tenth of a second, scored `score(k)`: one object a step. */
const footsteps = (feet: readonly [number, number][], score: (k: number) => number): SceneObject[] => feet.map(([fx, fy], k) => ({ key: `p${k}`, box: [fx - 30, fy - 120, fx + 30, fy], score: score(k), from: k / 10, until: (k + 1) / 10 }));

/** The crossings of `objects` through the real tracker (`fps`, ±1 px of jitter) and a fresh line (`line()` unless given). */
function cross(objects: SceneObject[], secs = 3, fps = 10, clip = false, tracking: ByteTrackerOptions = {}, makeLine = line) {
  const frames = feed(fps, secs, { objects, jitter: 1, seed: 5 });
  if (clip) {
    // The detector's box of a person coming in at the top border stops there.
    for (const f of frames) for (let k = 1; k < f.detections.xyxy.length; k += 4) f.detections.xyxy[k] = Math.max(0, f.detections.xyxy[k]);
  }
  const tracked = run(new ByteTracker({ frameRateHint: fps, ...tracking }), frames);
  const l = makeLine();
  const events: LineEvent[] = [];
  tracked.outputs.forEach((d, k) => l.update(d, frames[k].timestampMs, events));
  return { events, tracked, l };
}

// A person 60 × 160 walking down at 100 px/s: feet at y = 60 at 0 s, on the line (120) at 0.6 s, past its margin (130) at 0.7 s.
const walker = (extra: Partial<SceneObject> = {}): SceneObject => ({ key: 'p', box: [300, -100, 360, 60], velocity: [0, 100], ...extra });

describe('a line near where people come into view', () => {
  it('a person first scored under newTrackThresh, the track started past the line: the crossing counts once', () => {
    // 0.35 then 0.55 (under the tracker's 0.6 for a new track) until 0.7 s, 0.8 after: the track
    // starts with feet at 130 (past the margin) and is confirmed at 0.9 s. Before, nothing: the
    // tracker's first sighting was already past the line.
    for (const fps of [10, 30]) {
      for (const clip of [false, true]) {
        const { events, tracked } = cross([walker({ score: (t) => (t < 0.4 ? 0.35 : t < 0.7 ? 0.55 : 0.8) })], 3, fps, clip);
        expect(tracked.distinctIds('p')).toEqual([1]);
        expect(events.map((e) => [e.direction, e.trackId])).toEqual([['in', 1]]);
      }
    }
  });

  it('with the existing hand-overs: one crossing, not two, when the new id is first scored low', () => {
    // The label changes as the person crosses (a class-aware tracker: a new id), the new label
    // scored 0.4 for 0.3 s: id 1 lost above the line, id 2's first sightings from where the label changed.
    const relabel = cross([walker({ classId: (t) => (t < 0.55 ? 0 : 1), score: (t) => (t >= 0.55 && t < 0.85 ? 0.4 : 0.8) })]);
    expect(relabel.tracked.distinctIds('p')).toEqual([1, 2]);
    expect(relabel.events.map((e) => [e.direction, e.trackId])).toEqual([['in', 2]]);
    // Hidden by a pole on the line for 1.5 s, found past it scored 0.4 for 0.3 s: handed over, once.
    const pole = cross([walker({ hidden: [[0.3, 1.8]], score: (t) => (t >= 1.8 && t < 2.1 ? 0.4 : 0.8) })], 3.5);
    expect(pole.tracked.distinctIds('p')).toEqual([1, 2]);
    expect(pole.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
  });

  it('one standing in a doorway above the line, scored low, then walking off along it: no crossing', () => {
    // Feet at 60 (line at 120) for 1 s scored 0.35, then walking right along the line's near side, scored 0.8.
    const { events, tracked } = cross([walker({ velocity: [0, 0], score: 0.35, until: 1 }), walker({ key: 'q', box: [300, -100, 360, 60], velocity: [120, 0], from: 1, score: 0.8 })]);
    expect(tracked.distinctIds('q')).toEqual([1]);
    expect(events).toEqual([]);
  });

  it('keeps a bounded number of sightings before a track, however long an object scores under the threshold', () => {
    // 0.3 for 20 s at 30 fps, then 0.9: the origin holds those of the last second (PRE_TRACK_MS)
    // and the tentative ones; at 240 fps, PRE_TRACK_SIGHTINGS of them (half a second).
    for (const fps of [30, 240]) {
      const frames = feed(fps, 20.1, { objects: [{ key: 'p', box: [300, 200, 360, 360], score: (t) => (t < 20 ? 0.3 : 0.9) }], jitter: 1, seed: 2 });
      const tracker = new ByteTracker({ frameRateHint: fps });
      const origins = frames.map((f) => tracker.update(f.detections, f.timestampMs).trackOrigins).filter((o) => o);
      expect(origins.length).toBe(1);
      const before = origins[0]!.get(1)!.before!;
      const kept = Math.min(PRE_TRACK_SIGHTINGS, (PRE_TRACK_MS * fps) / 1000);
      expect(before.length).toBe(kept + 2);
      expect(before[0].ms).toBeCloseTo(20_000 - (kept * 1000) / fps, 0);
      expect(origins[0]!.get(1)!.ms).toBe(before[0].ms);
    }
  });

  it('a picture that changes its size while an object scores under the threshold: its earlier sightings are given in the new size', () => {
    // Scored 0.35 at 0 and 0.1 s in a 640 × 480 picture, then 0.9 from 0.2 s in a 1280 × 960 one (the tracker rescaled).
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const box = (scale: number, t: number) => new Float32Array([300, 200 + 50 * t, 360, 360 + 50 * t].map((v) => v * scale));
    const at = (scale: number, t: number, score: number) => tracker.update(new Detections(box(scale, t), new Float32Array([score]), new Int32Array([0])), t * 1000);
    at(1, 0, 0.35);
    at(1, 0.1, 0.35);
    tracker.rescale(2, 2);
    at(2, 0.2, 0.9);
    at(2, 0.3, 0.9);
    const origin = at(2, 0.4, 0.9).trackOrigins!.get(1)!;
    expect(origin.before!.map((b) => b.score)).toEqual([expect.closeTo(0.35, 5), expect.closeTo(0.35, 5), expect.closeTo(0.9, 5), expect.closeTo(0.9, 5)]);
    expect(Array.from(origin.box)).toEqual(Array.from(box(2, 0)));
  });
});

describe('earlier sightings that are another object', () => {
  it('a low-scored false positive standing above the line, a person stepping in below it overlapping it: no crossing', () => {
    // A coat on a hook (or a person in the doorway's shadow) scored 0.3, feet at 100 (above the
    // line at 120, beyond the margin), seen all along; a person steps out below the line at 1 s,
    // feet at 145, 10 px to its right, scored 0.8, and walks on down. The person's first box
    // overlaps the coat's as a tentative track's must: before, its track took the coat's
    // sightings as its own and was counted crossing in. Either order of the detector's rows.
    for (const coatFirst of [true, false]) {
      const coat: SceneObject = { key: 'c', box: [300, -60, 360, 100], score: 0.3 };
      const person: SceneObject = { key: 'p', box: [310, -15, 370, 145], velocity: [0, 60], from: 1, score: 0.8 };
      const { events, tracked } = cross(coatFirst ? [coat, person] : [person, coat], 3);
      expect(tracked.distinctIds('p')).toEqual([1]);
      expect(events).toEqual([]);
      // Class agnostic, the coat labelled another class (a chair): likewise.
      const agnostic = cross(coatFirst ? [{ ...coat, classId: 56 }, person] : [person, { ...coat, classId: 56 }], 3, 10, false, { classAware: false });
      expect(agnostic.tracked.distinctIds('p')).toEqual([1]);
      expect(agnostic.events).toEqual([]);
    }
  });

  it('a person walking down across the line past a standing low-scored false positive: counted once, with the person', () => {
    // The coat (0.3) stands below the line (feet at 170); the person, 10 px to its right, runs down
    // at 400 px/s from feet at 40, scored 0.4 until 0.4 s (past the line and the coat), 0.8 after. Each frame's
    // detections continue the last frame's that are the same objects, whatever the rows' order:
    // before, the person's box overlapping the coat's took the coat's sightings, the track
    // started with the coat's history below the line, and the crossing was lost.
    for (const coatFirst of [true, false]) {
      const coat: SceneObject = { key: 'c', box: [300, 10, 360, 170], score: 0.3 };
      const person: SceneObject = { key: 'p', box: [310, -120, 370, 40], velocity: [0, 400], score: (t) => (t < 0.4 ? 0.4 : 0.8) };
      const { events, tracked } = cross(coatFirst ? [coat, person] : [person, coat], 1.2);
      expect(tracked.distinctIds('p')).toEqual([1]);
      expect(events.map((e) => [e.direction, e.trackId])).toEqual([['in', 1]]);
    }
  });
});

describe('earlier sightings round the end of a line', () => {
  it('a person scored low walking round the end of a short line, whose track starts past it: no crossing', () => {
    // A door line from x = 300 to 420 at y = 240 (drawn right to left: "in" is downwards). Feet
    // from (330, 180), above it, left to x = 250 (past its end), down to y = 300, right to x = 330,
    // below it, 255 px/s at 10 fps, scored 0.35 until 0.9 s, 0.9 after: confirmed at 1.1 s.
    const legs: [number, number][] = [[330, 180], [250, 180], [250, 300], [330, 300], [400, 300]];
    const feetAt = (t: number): [number, number] => {
      let d = t * 255;
      for (let k = 1; k < legs.length; k++) {
        const [ax, ay] = legs[k - 1], [bx, by] = legs[k];
        const len = Math.hypot(bx - ax, by - ay);
        if (d <= len || k === legs.length - 1) return [ax + ((bx - ax) * Math.min(d, len)) / len, ay + ((by - ay) * Math.min(d, len)) / len];
        d -= len;
      }
      return legs[0];
    };
    const objects = footsteps(Array.from({ length: 15 }, (_, k) => feetAt(k / 10)), (k) => (k < 9 ? 0.35 : 0.9));
    const { events, tracked } = cross(objects, 1.5, 10, false, {}, doorLine);
    expect(tracked.outputs.some((d) => d.trackOrigins?.get(1)?.before?.length === 11)).toBe(true);
    expect(events).toEqual([]);
  });
});

describe('earlier sightings along a line, then through it', () => {
  it('a person scored low walking along a short door line, then through it, whose track starts past it: one crossing', () => {
    // The door line from x = 300 to 420 at y = 240 ("in" is downwards). Feet at y = 215, above it,
    // from x = 150 right to x = 330 (18 px a frame at 10 fps), then down through the door to y = 305,
    // scored 0.35 until 1.2 s, 0.9 after: its track starts past the line, with its sightings along it.
    const feet: [number, number][] = [];
    for (let x = 150; x <= 330; x += 18) feet.push([x, 215]);
    for (let y = 230; y <= 305; y += 15) feet.push([330, y]);
    const { events, tracked } = cross(footsteps(feet, (k) => (feet[k][1] < 250 ? 0.35 : 0.9)), feet.length / 10, 10, false, {}, doorLine);
    // Confirmed with sightings from x = 168 on, along the line (the earliest one left out: PRE_TRACK_MIN_SIGHTINGS at 10 fps).
    expect(tracked.outputs.some((d) => (d.trackOrigins?.get(1)?.before?.length ?? 0) >= PRE_TRACK_MIN_SIGHTINGS)).toBe(true);
    // It went through the door at x = 330. Before, the crossing was judged on the straight way from
    // its first sighting on that side (x 168, far left of the door) to below it: round the line's end, none.
    expect(events.map((e) => [e.direction, e.trackId])).toEqual([['in', 1]]);
  });
});

describe('earlier sightings through a line and back', () => {
  it('a person scored low who went through a door line and back before their track started: one crossing each way', () => {
    // The door line from x = 300 to 420 at y = 240 ("in" is downwards). Feet at x 330 from y 215 down
    // to 260 (15 px a frame at 10 fps), back up to 200, where they stay; scored 0.35 until 1.0 s, 0.9
    // after: the track is confirmed above the line, where they came from, with the sightings of both ways.
    const feet: [number, number][] = [];
    for (let y = 215; y <= 260; y += 15) feet.push([330, y]);
    for (let y = 245; y >= 200; y -= 15) feet.push([330, y]);
    const low = feet.length;
    for (let k = 0; k < 4; k++) feet.push([330, 200]);
    const { events, tracked, l } = cross(footsteps(feet, (k) => (k < low ? 0.35 : 0.9)), feet.length / 10, 10, false, {}, doorLine);
    expect(tracked.outputs.some((d) => (d.trackOrigins?.get(1)?.before?.length ?? 0) >= PRE_TRACK_MIN_SIGHTINGS)).toBe(true);
    // Before, the sightings stopped at the first crossing and the track was where it came from: none.
    expect(events.map((e) => [e.direction, e.trackId])).toEqual([['in', 1], ['out', 1]]);
    expect([l.stats.in, l.stats.out]).toEqual([1, 1]);
  });
});
