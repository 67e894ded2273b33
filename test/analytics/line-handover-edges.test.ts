/**
 * Hand-over edges at a line, through the real tracker (virtual time): a new id past the line that
 * vanishes while its hand-over is pending, and a lost track that handOver looked at but did not use.
 */
import { describe, expect, it } from 'vitest';
import { LineCounter } from '../../src/analytics/line.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, run, type SceneObject } from '../tracking/helpers.js';
import { cross, line, walker } from './door-line.js';


describe('a hand-over pending on a new id that vanishes', () => {
  it('standing past the line and gone within a second: the old id crossed, counted once', () => {
    for (const fps of [10, 30]) {
      for (const until of [2.8, 3.1]) {
        // Gone at 0.8 s with feet at 240; found standing with feet at 350 from 2.3 s, gone at `until`.
        // Before: none (id 2's state, the crossing pending on it, was forgotten with it). Found again
        // further on after that (a third id, 5.5 s): counted once still.
        const { events, tracked } = cross([walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3, until }, { key: 'c', box: [300, 210, 360, 370], velocity: [0, 50], from: 5.5 }], 8, fps);
        expect(tracked.distinctIds('b'), `${fps} fps until ${until}`).toHaveLength(1);
        // Raised once id 2 is forgotten (forgetAfterMs, 2 s after its last sighting), with no row (it is
        // not on that frame), dated on id 1's way to where id 2 stood: feet 240 at 0.7 s, 350 at 2.3 s.
        expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId, e.row]), `${fps} fps until ${until}`).toEqual([['in', 2, 1, -1]]);
        expect(events[0].t).toBeGreaterThan(until * 1000 + 1900);
        expect(events[0].t).toBeLessThan(until * 1000 + 2200);
        expect(events[0].atMs).toBeGreaterThan(1500);
        expect(events[0].atMs).toBeLessThan(1700);
      }
    }
  });

  it('…or back into the band past the line, standing there over a second before it vanishes: counted once, as one that vanished sooner', () => {
    // Gone at 0.8 s with feet at 240; found at 313 from 2.3 s (past the line, beyond the margin), at 305 from
    // 2.6 s (within it, 8 px back: not back by the margin), gone at `until`. Before: counted for 3.1, not for
    // 4.1 (settled after a second, its crossing waiting for it to leave the band, lost with it).
    for (const until of [3.1, 4.1]) {
      const l = line();
      const tracker = new ByteTracker({ frameRateHint: 10 });
      const got: [string, number, number | undefined, number][] = [];
      for (let k = 0; k < 80; k++) {
        const t = k / 10;
        const feet = t < 0.8 ? 160 + 100 * t : t >= 2.3 && t < 2.6 ? 313 : t >= 2.6 && t < until ? 305 : undefined;
        const d = feet === undefined ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(300, feet - 160, 360, feet), Float32Array.of(0.9), Int32Array.of(0));
        for (const e of l.update(tracker.update(d, k * 100), k * 100)) got.push([e.direction, e.trackId, e.previousTrackId, e.row]);
      }
      expect(got, `until ${until}`).toEqual([['in', 2, 1, -1]]);
    }
  });

  it('…while the old id is found again before the line: the new id was another object, and the old one crosses once', () => {
    for (const fps of [10, 30]) {
      // P stands before the line (feet 280), hidden 1.0–1.6 s; B, its size, stands past it (feet 330) from 1.1
      // to 1.5 s: taken for P, its crossing pending. P is found again under its own id where it stood, and walks
      // through the line at 3.2 s. Before: counted twice, P's crossing and B's hand-over once B was forgotten.
      const objects: SceneObject[] = [
        { key: 'p', box: [300, 120, 360, 280], hidden: [[1.0, 1.6]], until: 3 },
        { key: 'p', box: [300, -180, 360, -20], velocity: [0, 100], from: 3 },
        { key: 'b', box: [330, 170, 390, 330], from: 1.1, until: 1.5 },
      ];
      const { events, tracked } = cross(objects, 6, fps);
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps`).toEqual([[1], [2]]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId, e.row]), `${fps} fps`).toEqual([['in', 1, undefined, 0]]);
    }
  });

  it('…while the old id is found again in the band on its own side: it goes on from its own side, and its crossing counts', () => {
    for (const fps of [10, 30]) {
      // As above, P found again standing in the band before the line (feet 295), then walking through it.
      // Before: counted once, B's hand-over (P's own crossing lost: P had no side, and learned it past the line).
      const objects: SceneObject[] = [
        { key: 'p', box: [300, 120, 360, 280], hidden: [[1.0, 1.6]], until: 1.6 },
        { key: 'p', box: [300, 135, 360, 295], from: 1.6, until: 3 },
        { key: 'p', box: [300, -165, 360, -5], velocity: [0, 100], from: 3 },
        { key: 'b', box: [330, 170, 390, 330], from: 1.1, until: 1.5 },
      ];
      const { events, tracked } = cross(objects, 6, fps);
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps`).toEqual([[1], [2]]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId, e.row]), `${fps} fps`).toEqual([['in', 1, undefined, 0]]);
    }
  });

  it('…found again first under a label a class-filtered line does not count: the same', () => {
    for (const fps of [10, 30]) {
      // As above on a person line, P labelled car for its first 0.5 s back (the tracker, classAware false,
      // keeps its id). Before: counted twice (its sightings as a car used up what showed it was found again).
      const objects: SceneObject[] = [
        { key: 'p', box: [300, 120, 360, 280], hidden: [[1.0, 1.6]], until: 3, classId: (t) => (t >= 1.6 && t < 2.1 ? 1 : 0) },
        { key: 'p', box: [300, -180, 360, -20], velocity: [0, 100], from: 3 },
        { key: 'b', box: [330, 170, 390, 330], from: 1.1, until: 1.5 },
      ];
      const frames = feed(fps, 6, { objects, jitter: 1, seed: 3 });
      const tracked = run(new ByteTracker({ frameRateHint: fps, classAware: false }), frames);
      const l = new LineCounter('door', [640, 300], [0, 300], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000, classIds: new Set([0]) }, undefined, { width: 640, height: 480 });
      const events: [string, number, number | undefined, number][] = [];
      tracked.outputs.forEach((d, k) => {
        for (const e of l.update(d, frames[k].timestampMs)) events.push([e.direction, e.trackId, e.previousTrackId, e.row]);
      });
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps`).toEqual([[1], [2]]);
      expect(events, `${fps} fps`).toEqual([['in', 1, undefined, 0]]);
    }
  });

  it('…or settled, its new id standing in the band past the line, when the old id is found again before it: counted once', () => {
    // P stands before the line (feet 280), hidden 1.0–2.4 s (the tracker keeps lost tracks 2 s); B, its size,
    // is found past the line (feet 313) at 1.1 s and stands in the band (305) from 1.4 s until `until`: taken
    // for P, settled a second after it was first seen. P, found again where it stood, walks through the line
    // from 5 s. Before: counted twice (B's once it was forgotten, and P's).
    for (const until of [3.1, 4.1]) {
      const l = line();
      const tracker = new ByteTracker({ frameRateHint: 10, lostTrackBufferMs: 2000 });
      const got: [string, number, number | undefined, number][] = [];
      for (let k = 0; k < 90; k++) {
        const t = k / 10;
        const rows: number[] = [];
        if (t < 1.0 || t >= 2.4) rows.push(300, 120 + 100 * Math.max(0, t - 5), 360, 280 + 100 * Math.max(0, t - 5));
        const feet = t >= 1.1 && t < 1.4 ? 313 : t >= 1.4 && t < until ? 305 : undefined;
        if (feet !== undefined) rows.push(400, feet - 160, 460, feet);
        const n = rows.length / 4;
        const d = new Detections(Float32Array.from(rows), new Float32Array(n).fill(0.9), new Int32Array(n));
        for (const e of l.update(tracker.update(d, k * 100), k * 100)) got.push([e.direction, e.trackId, e.previousTrackId, e.row]);
      }
      expect(got, `until ${until}`).toEqual([['in', 1, undefined, 0]]);
    }
  });

  it('its alert says when it crossed, and that it was raised once the new id was gone', () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'any' }] });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    a.init(640, 480);
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const got: [number, string, number, unknown][] = [];
    for (const f of feed(10, 6, { objects: [walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3, until: 2.8 }], jitter: 1, seed: 3 })) {
      for (const x of a.process(tracker.update(f.detections, f.timestampMs), f.timestampMs).alerts) got.push([f.timestampMs, String(x.message), x.row, x.atPts]);
    }
    expect(got).toEqual([[4800, 'person #2 crossed line door (in) at 1.6 s (was #1: lost at the line, found past it under a new id; raised once #2 was gone: this frame is a later one)', -1, 1.635]]);
    expect(a.report().lines.door).toMatchObject({ in: 1, out: 0 });
  });
});

describe('a lost track handOver found for a new id on its own side', () => {
  it('is kept on the line: its own id found again past it is counted', () => {
    for (const fps of [10, 30]) {
      // A walks down, hidden 1.0–1.8 s (feet 260 → 340: it crosses unseen); B, A's size, appears at 1.1 s
      // standing 100 px to the right of where A was lost (feet 265, before the line) and stays there.
      const { events, tracked } = cross([walker({ hidden: [[1.0, 1.8]] }), { key: 'b', box: [400, 105, 460, 265], from: 1.1 }], 4, fps);
      // Before: none (B was taken for A and A taken off the line; A's id, found again past it, learned its side there).
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps`).toEqual([[1], [2]]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId, e.t]), `${fps} fps`).toEqual([['in', 1, undefined, 1800]]);
    }
  });

  it('…and its own id found again while that new id is unseen goes on from the new id\'s state (one object): no second crossing', () => {
    const l = line();
    const row = (id: number, feet: number, origin?: [number, number][]) =>
      new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0][0] - 160, 360, origin[0][0]]), ms: origin[0][1], before: origin.map(([f, ms]) => ({ box: new Float32Array([300, f - 160, 360, f]), ms })) }]]) : undefined);
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    const out: string[] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e) => `${e.direction}#${e.trackId}`));
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100); // id 1 down to 270, lost
    step(none, 500);
    step(row(2, 278, [[274, 500]]), 600); // id 2 where id 1 went, before the line: id 1 claimed by it
    step(row(2, 290), 700);
    step(row(2, 315), 800); // its crossing
    step(none, 900);
    step(row(1, 330), 1000); // the tracker gives the object its first id back
    step(row(1, 340), 1100);
    expect(out).toEqual(['in#2']);
  });

  it('…and its own id, seen under a label the line does not count while that new id was forgotten, goes on from its own side: counted', () => {
    for (const fps of [10, 30]) {
      // A person line. P walks down at 40 px/s (feet 260 at 1.0 s), hidden 1.0–1.4 s, then labelled car
      // (the tracker, classAware false, keeps its id) from 1.4 s to 4.2 s: it crosses at 2.0 s. B, its size,
      // stands 100 px to its right before the line from 1.1 to 1.6 s: taken for P, it claims P's track, and
      // is forgotten 2 s after it went. Before: none (P's own side was dropped with B's, past the line).
      const objects: SceneObject[] = [
        { key: 'p', box: [300, 60, 360, 220], velocity: [0, 40], hidden: [[1.0, 1.4]], classId: (t) => (t >= 1.4 && t < 4.2 ? 1 : 0) },
        { key: 'b', box: [400, 105, 460, 265], from: 1.1, until: 1.6 },
      ];
      const frames = feed(fps, 5, { objects, jitter: 1, seed: 3 });
      const tracked = run(new ByteTracker({ frameRateHint: fps, classAware: false }), frames);
      const l = new LineCounter('door', [640, 300], [0, 300], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000, classIds: new Set([0]) }, undefined, { width: 640, height: 480 });
      const events: [string, number, number][] = [];
      tracked.outputs.forEach((d, k) => {
        for (const e of l.update(d, frames[k].timestampMs)) events.push([e.direction, e.trackId, frames[k].timestampMs]);
      });
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps`).toEqual([[1], [2]]);
      // On its first frame labelled person again, as any crossing made under another label.
      expect(events, `${fps} fps`).toEqual([['in', 1, 4200]]);
    }
  });

  it('…and its own id found again away from that new id\'s way, the new id missed on that frame only, is another object: each goes on from its own side', () => {
    // P stands before the line (feet 250), hidden 1.0 s until `back`; B, its size, appears 100 px to its
    // right at 1.1 s (feet 245: taken for P, it claims P's track) walking down at 100 px/s (on the line at
    // 1.65 s), and the detector misses B on the one frame P is seen again. Before: at 1.6 s P took B's state
    // (within the band) and B's crossing was lost; at 2.0 s P took B's side past the line and was counted
    // going out, standing where it had stood.
    for (const [fps, back] of [[10, 1.6], [30, 1.6], [10, 2.0]]) {
      const objects: SceneObject[] = [
        { key: 'p', box: [300, 90, 360, 250], hidden: [[1.0, back]] },
        { key: 'b', box: [400, -25, 460, 135], velocity: [0, 100], from: 1.1, hidden: [[back, back + 1 / fps]] },
      ];
      const { events, tracked } = cross(objects, 3, fps);
      expect([tracked.distinctIds('p'), tracked.distinctIds('b')], `${fps} fps, back at ${back} s`).toEqual([[1], [2]]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]), `${fps} fps, back at ${back} s`).toEqual([['in', 2, undefined]]);
    }
  });

  it('…and stays claimed while its object is known under a later id: a crossing handed on from the new id counts once', () => {
    const l = line();
    const row = (id: number, feet: number, origin?: [number, number][]) =>
      new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0][0] - 160, 360, origin[0][0]]), ms: origin[0][1], before: origin.map(([f, ms]) => ({ box: new Float32Array([300, f - 160, 360, f]), ms })) }]]) : undefined);
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    const out: string[] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e) => `${e.direction}#${e.trackId}`));
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100); // id 1 down to 270, lost
    step(none, 500);
    step(row(2, 276, [[274, 500]]), 600); // id 2 before the line: claims id 1
    step(row(2, 280), 700);
    step(none, 800);
    step(none, 900);
    step(row(3, 320, [[312, 800], [316, 900]]), 1000); // id 3 past the line: id 2's crossing, pending
    step(row(3, 330), 1100);
    step(row(3, 345), 1200); // on: counted
    step(none, 1300);
    step(none, 1400);
    step(row(4, 360, [[352, 1300], [356, 1400]]), 1500); // id 4 further on: id 3 again, not id 1
    step(row(4, 370), 1600);
    step(row(4, 380), 1700);
    expect(out).toEqual(['in#3']);
  });
});
