import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { LineCounter, type LineEvent } from '../../src/analytics/line.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, type SceneObject } from '../tracking/helpers.js';
import { cross, line, walker } from './door-line.js';


describe('a line and a track lost at it', () => {
  it('missed by the detector for one to three frames at the line: the tracker keeps its id, one crossing', () => {
    for (const hidden of [[1.35, 1.45], [1.25, 1.55]] as const) {
      const { events, tracked } = cross([walker({ hidden: [hidden] })]);
      expect(tracked.distinctIds('p')).toEqual([1]);
      expect(events.map((e) => [e.direction, e.trackId])).toEqual([['in', 1]]);
    }
  });

  it('behind a pole on the line for longer than the lost-track buffer, found past it under a new id: one crossing, the new id, the old one named', () => {
    // Hidden 0.8–2.3 s: last seen with feet at 230 (above), found again at 390 (below) as id 2.
    // Before, none: id 1 never reached the other side, and id 2 learned its side there.
    // It crossed at 1.4 s (the way from its last sighting to its first past the line meets it
    // there), which its event says (atMs); before, it had no time, raised at 2.3 s or later.
    for (const hidden of [[0.8, 2.3], [0.9, 2.1]] as const) {
      const { events, tracked } = cross([walker({ hidden: [hidden] })]);
      expect(tracked.distinctIds('p')).toEqual([1, 2]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
      expect(events[0].atMs).toBeGreaterThan(1350);
      expect(events[0].atMs).toBeLessThan(1450);
    }
    // At 5 fps too.
    const slow = cross([walker({ hidden: [[0.9, 2.1]] })], 4, 5);
    expect(slow.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
  });

  it('an id switch as the label changes at the line (a class-aware tracker): one crossing', () => {
    const { events, tracked } = cross([walker({ classId: (t) => (t > 1.4 ? 1 : 0) })]);
    expect(tracked.distinctIds('p')).toEqual([1, 2]);
    expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
  });

  it('the old id found again after its crossing was handed over counts nothing more', () => {
    const l = line();
    const row = (id: number, box: number[], origin?: number[][], ms = 0) =>
      new Detections(new Float32Array(box), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array(origin[0]), ms, before: origin.map((b, k) => ({ box: new Float32Array(b), ms: ms + k * 100 })) }]]) : undefined);
    const at = (feet: number) => [300, feet - 160, 360, feet];
    const out: string[] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e) => `${e.direction}#${e.trackId}`));
    for (let k = 0; k < 5; k++) step(row(1, at(230 + 10 * k)), k * 100); // id 1 down to 270
    step(row(1, at(280)), 500);
    // Unseen, then id 2 seen (without an id yet, its rows left out) at 900 and 1000, confirmed past the line at 1100.
    for (let k = 6; k < 11; k++) step(new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0)), k * 100);
    step(row(2, at(340), [at(320), at(330)], 900), 1100);
    step(row(2, at(350)), 1200);
    expect(out).toEqual(['in#2']);
    // The tracker finds id 1 again (id 2 lost): it learns its side, no second crossing.
    step(row(1, at(360)), 1300);
    step(row(1, at(370)), 1400);
    expect(out).toEqual(['in#2']);
  });

  it('two id switches, the crossing between them: counted once (the first lost id goes to the second id, not to the third)', () => {
    const l = new LineCounter('door', [640, 300], [0, 300], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 5000 }, undefined, { width: 640, height: 480 });
    const row = (id: number, feet: number, origin?: number[]) =>
      new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0] - 160, 360, origin[0]]), ms: origin[2], before: origin.slice(0, 2).map((f, k) => ({ box: new Float32Array([300, f - 160, 360, f]), ms: origin[2] + k * 100 })) }]]) : undefined);
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    const out: string[] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e) => `${e.direction}#${e.trackId}`));
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100); // id 1 down to 270, then lost
    for (let t = 500; t < 900; t += 100) step(none, t); // id 1 unseen; id 2 seen (no id yet) at 700 and 800
    step(row(2, 285, [275, 280, 700]), 900); // id 2, first seen at 275 (before the line), confirmed
    step(row(2, 300), 1000);
    step(row(2, 315), 1100); // its crossing
    for (let t = 1200; t < 1500; t += 100) step(none, t); // id 2 lost; id 3 seen (no id yet) at 1300 and 1400
    step(row(3, 360, [340, 350, 1300]), 1500); // id 3 past the line: id 1, lost before it, is not handed to it
    step(row(3, 370), 1600);
    expect(out).toEqual(['in#2']);
  });

  it("a source whose timestamps went back (the tracker's clock runs on, shifted): a newcomer first seen beside a track before it vanished is not taken for it", () => {
    // The line gets the frames' times (from 0 again after a restart), the tracker's first sightings are 10 s on.
    const l = line();
    const box = (x: number, feet: number) => [x, feet - 160, x + 60, feet];
    const rows = (...r: [number, number[], number[][]?][]) =>
      new Detections(new Float32Array(r.flatMap(([, b]) => b)), new Float32Array(r.map(() => 0.9)), new Int32Array(r.length), new Int32Array(r.map(([id]) => id)), r.some(([, , o]) => o) ? new Map(r.filter(([, , o]) => o).map(([id, , o]) => [id, { box: new Float32Array(o![0]), ms: 10_300, before: o!.map((b, k) => ({ box: new Float32Array(b), ms: 10_300 + k * 100 })) }])) : undefined);
    const out: string[] = [];
    // A walks down to 260 (above the line) and vanishes after 300; B, beside it past the line, is seen from 300 (no id yet), confirmed at 500.
    for (let k = 0; k < 4; k++) out.push(...l.update(rows([1, box(300, 230 + 10 * k)]), k * 100).map((e) => `${e.direction}#${e.trackId}`));
    l.update(rows(), 400);
    out.push(...l.update(rows([2, box(360, 330), [box(360, 320), box(360, 325)]]), 500).map((e) => `${e.direction}#${e.trackId}`));
    out.push(...l.update(rows([2, box(360, 335)]), 600).map((e) => `${e.direction}#${e.trackId}`));
    expect(out).toEqual([]);
  });

  it('a new id handed the lost track while on the line (within the margin) names the old id on the crossing it then makes', () => {
    const l = line();
    const row = (id: number, feet: number, origin?: number[]) =>
      new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0] - 160, 360, origin[0]]), ms: 900, before: origin.map((f, k) => ({ box: new Float32Array([300, f - 160, 360, f]), ms: 900 + k * 100 })) }]]) : undefined);
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    const out: [string, number, number | undefined][] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e): [string, number, number | undefined] => [e.direction, e.trackId, e.previousTrackId]));
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100);
    for (let t = 500; t < 1100; t += 100) step(none, t);
    step(row(2, 308, [315, 311]), 1100); // first seen past the line (315), confirmed on it (308: within the margin)
    expect(out).toEqual([]);
    step(row(2, 320), 1200);
    expect(out).toEqual([['in', 2, 1]]);
  });

  it('another object: one that vanished before the line and one that appears past it far from its way, or walking towards the line, count nothing', () => {
    // A leaves at 1.0 s with feet at 260, walking down; B appears at 1.5 s 300 px to the right (below the line).
    const far = cross([walker({ until: 1 }), { key: 'b', box: [600, 200, 640, 360], velocity: [-80, 30], from: 1.5 }]);
    expect(far.events).toEqual([]);
    // B appears below where A vanished, within its reach (feet at 390, 50 px aside, at 1.4 s), but walks up,
    // towards the line (and across it: that is its own crossing, out).
    const back = cross([walker({ until: 1 }), { key: 'b', box: [350, 370, 410, 530], velocity: [0, -100], from: 1.4 }]);
    expect(back.tracked.distinctIds('b')).toEqual([2]);
    expect(back.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['out', 2, undefined]]);
    // One over twice the size (160 × 150 against 60 × 160), within A's reach (120 px aside): another object.
    const big = cross([walker({ until: 1 }), { key: 'b', box: [370, 40, 530, 190], velocity: [0, 100], from: 1.3 }]);
    expect(big.tracked.distinctIds('b')).toEqual([2]);
    expect(big.events).toEqual([]);
    // The same of A's size: taken for A (the price of an id switch counted once).
    const same = cross([walker({ until: 1 }), { key: 'b', box: [420, 30, 480, 190], velocity: [0, 100], from: 1.3 }]);
    expect(same.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
  });

  it('one that appears past the line walking towards it slowly, or at 30 fps (under the margin over its first frames), is not handed the track that vanished before it', () => {
    // A vanishes at 1.0 s with feet at 260 (above the line: a side door); B appears below, feet at
    // 360, at 2.2 s and walks up across the line. Before, B was handed A's track on confirmation
    // (it had come less than the margin towards the line by then) and counted in, then out.
    for (const [fps, speed] of [[30, 100], [30, 30], [15, 50], [10, 50]] as const) {
      const b: SceneObject = { key: 'b', box: [320, 200 + 2.2 * speed, 380, 360 + 2.2 * speed], velocity: [0, -speed], from: 2.2 };
      const { events, tracked } = cross([walker({ until: 1 }), b], 5, fps);
      expect(tracked.distinctIds('b'), `${fps} fps, ${speed} px/s`).toEqual([2]);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]), `${fps} fps, ${speed} px/s`).toEqual([['out', 2, undefined]]);
    }
  });

  it('at 30 fps, one lost at the line and found past it walking on is counted once a few frames after it is confirmed; one that stops there, a second after it was first seen', () => {
    const on = cross([walker({ hidden: [[0.9, 2.1]] })], 4, 30);
    expect(on.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
    expect(on.events[0].atMs).toBeGreaterThan(1350); // crossed at 1.4 s
    expect(on.events[0].atMs).toBeLessThan(1450);
    expect(on.events[0].t).toBeLessThanOrEqual(2250); // found at 2.1 s, 10 px on (the margin) at 2.2
    // Gone at 0.8 s with feet at 240, found standing with feet at 350 from 2.3 s.
    const stops = cross([walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3 }], 5, 30);
    expect(stops.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
    expect(stops.events[0].t).toBeGreaterThanOrEqual(3300);
    expect(stops.events[0].t).toBeLessThan(3400);
  });

  it('a new id confirmed within the margin (a label that changed there, classAware): the lost track goes on under it, counted when it leaves the margin on the other side, not when it turns back', () => {
    // A slow walker (30 px/s, feet at 160 + 30 t): in the band (290–310) from 4.33 s to 5 s; called a
    // bicycle from 4.4 s (a new id, confirmed at 4.6 s with its feet at 298). Before, none: id 2
    // learned its side below the line.
    const slow = (extra: Partial<SceneObject> = {}) => walker({ velocity: [0, 30], ...extra });
    const on = cross([slow({ classId: (t) => (t >= 4.4 ? 1 : 0) })], 7);
    expect(on.tracked.distinctIds('p')).toEqual([1, 2]);
    expect(on.events.map((e) => [e.direction, e.trackId, e.previousTrackId])).toEqual([['in', 2, 1]]);
    // It crossed at 4.67 s (feet on the line), which its event says (before: no atMs).
    expect(on.events[0].atMs).toBeGreaterThan(4600);
    expect(on.events[0].atMs).toBeLessThan(4750);
    // The same, turning back at 4.8 s (feet at 304, inside the band) under the new label: nothing.
    const back = cross([slow({ until: 4.8, classId: (t) => (t >= 4.4 ? 1 : 0) }), { key: 'q', box: [300, 288, 360, 448], velocity: [0, -30], classId: 1, from: 4.8 }], 8);
    expect(back.tracked.distinctIds('q')).toEqual([2]);
    expect(back.events).toEqual([]);
  });

  it('the alert of a crossing handed over names both ids, once', () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'any' }] });
    const a = new SourceAnalyzer(cfg, ['person', 'bicycle'], 'sources[0]');
    a.init(640, 480);
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const messages: string[] = [];
    const atPts: unknown[] = [];
    for (const f of feed(10, 4, { objects: [walker({ hidden: [[0.8, 2.3]] })], jitter: 1, seed: 3 })) {
      for (const x of a.process(tracker.update(f.detections, f.timestampMs), f.timestampMs).alerts) {
        messages.push(String(x.message));
        atPts.push(x.atPts);
      }
    }
    // With when it crossed (atPts 1.4: before, none), not the note of a crossing seen before its track was confirmed.
    expect(messages).toEqual(['person #2 crossed line door (in) at 1.4 s (was #1: lost at the line, found past it under a new id)']);
    expect(atPts).toEqual([1.402]); // jitter ±1 px
    expect(a.report().lines.door).toMatchObject({ in: 1, out: 0 });
  });
});

describe('a line and a box that changes shape', () => {
  // A car 120 × 80 driving down 8 px a frame (10 fps): its bottom reaches the line at frame 7.5.
  const car = (k: number) => [300, 160 + 8 * k, 420, 240 + 8 * k];
  /** The crossings of a car whose box the detector cuts to its upper 60 % on the frames `cut` picks. */
  const drive = (cut: (k: number) => boolean) => {
    const t = new ByteTracker({ frameRateHint: 10 });
    const l = line();
    const out: string[] = [];
    for (let k = 0; k < 20; k++) {
      const b = car(k);
      const box = cut(k) ? [b[0], b[1], b[2], b[1] + 48] : b;
      const d = t.update(new Detections(Float32Array.from(box), new Float32Array([0.9]), new Int32Array([2])), k * 100);
      out.push(...l.update(d, k * 100).map((e) => `${e.direction}#${e.trackId}`));
    }
    return out;
  };

  it('cut to its upper part on every third frame as it crosses: counted once (was in, out, in)', () => {
    expect(drive((k) => k % 3 === 1)).toEqual(['in#1']);
    expect(drive(() => false)).toEqual(['in#1']);
  });

  it('a person walking away from a camera at head height (the top of the box stays, the box shrinks whole): counted', () => {
    const t = new ByteTracker({ frameRateHint: 10 });
    const l = line();
    const out: string[] = [];
    for (let k = 0; k < 25; k++) {
      // Feet from 420 up to 180 (12 px a frame), head at 100 throughout; the width 3/8 of the height.
      const h = 320 - 12 * k, w = (h * 3) / 8;
      const d = t.update(new Detections(Float32Array.from([330 - w / 2, 100, 330 + w / 2, 100 + h]), new Float32Array([0.9]), new Int32Array([0])), k * 100);
      out.push(...l.update(d, k * 100).map((e) => `${e.direction}#${e.trackId}`));
    }
    expect(out).toEqual(['out#1']);
  });

  it('a person coming into the picture from its bottom edge, the box a few pixels short of it (the detector rarely reaches the border): counted when it crosses, not frames later', () => {
    // one-by-one-person-detection.mp4 (768x432) at 124.0–125.1 s, a level line at 60 % of the height,
    // centre anchor (margin 9 px): the centre goes from 272 (beyond the margin below) to 244 (beyond
    // it above) at 124.6 s, the box's bottom at 431 then 424 of 432 as more of the person comes into
    // view (taller, its shape changed by more than a third). Before, that was taken for a reshaped
    // box (its bottom did not move) and the crossing waited until 125.0 s.
    const l = new LineCounter('door', [768, 259.2], [0, 259.2], { marginPx: 9, anchor: 'center', forgetAfterMs: 2000 }, undefined, { width: 768, height: 432 });
    const boxes = [[217, 172, 504, 429], [232, 153, 530, 428], [235, 134, 528, 430], [250, 113, 526, 431], [261, 100, 528, 431], [280, 81, 520, 432], [290, 64, 516, 424], [308, 55, 511, 423], [312, 42, 514, 417], [323, 41, 524, 421], [341, 35, 539, 421], [362, 19, 560, 420]];
    const out: string[] = [];
    boxes.forEach((b, k) => out.push(...l.update(new Detections(Float32Array.from(b), new Float32Array([0.87]), new Int32Array([0]), new Int32Array([6])), 124_000 + 100 * k).map((e) => `${e.direction}@${k}`)));
    expect(out).toEqual(['out@6']);
  });

  it('a car standing before the line whose box the detector stretches past it and back: nothing', () => {
    const t = new ByteTracker({ frameRateHint: 10 });
    const l = line();
    const out: LineEvent[] = [];
    for (let k = 0; k < 30; k++) {
      // Bottom at 280 (above the line); on odd frames the box reaches 330 (a shadow taken for the car), its top where it was.
      const d = t.update(new Detections(Float32Array.from([300, 200, 420, k % 2 ? 330 : 280]), new Float32Array([0.9]), new Int32Array([2])), k * 100);
      out.push(...l.update(d, k * 100));
    }
    expect(out).toEqual([]);
  });
});

describe('a track lost before the line, its new id first seen just past it, within the margin', () => {
  it('says it crossed on the way from its last sighting to the new id’s first, however long that one stood there before its track was confirmed', () => {
    // Walking down at 100 px/s, last seen at 1.2 s with feet at 280 (20 px above the line), then
    // hidden for over the tracker's lost-track buffer; from 2.4 s seen standing with feet at 305
    // (within the 10 px margin, past the line), scored 0.35 until `lowUntil`, 0.9 after (its new
    // id confirmed 0.3 s later), then walking on at 100 px/s from `standTo`: counted as the old
    // id's crossing, under the new one, once it leaves the margin. Its way from 280 at 1.2 s to
    // 305 at 2.4 s meets the line at 2.16 s. Before, the way was taken straight from its last
    // sighting to the confirming frame: 2.56 s when it stood until 3.0 s, after it was seen past the line.
    for (const standTo of [2.6, 3.0, 3.4]) {
      const lowUntil = standTo - 0.35;
      const l = line();
      const tracker = new ByteTracker({ frameRateHint: 10 });
      const events: [number, string, number, number | undefined, number | undefined][] = [];
      for (let k = 0; k < 50; k++) {
        const t = k / 10;
        const feet = t < 1.25 ? 160 + 100 * t : t >= 2.35 ? (t < standTo ? 305 : 305 + 100 * (t - standTo)) : undefined;
        const d = feet === undefined ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(300, feet - 160, 360, feet), Float32Array.of(t < 1.25 || t >= lowUntil ? 0.9 : 0.35), Int32Array.of(0));
        for (const e of l.update(tracker.update(d, k * 100), k * 100)) events.push([k * 100, e.direction, e.trackId, e.previousTrackId, e.atMs === undefined ? undefined : Math.round(e.atMs)]);
      }
      expect(events.map((e) => e.slice(1)), `stood until ${standTo} s`).toEqual([['in', 2, 1, 2160]]);
      expect(events[0][0], `stood until ${standTo} s`).toBeLessThanOrEqual(standTo * 1000 + 200);
    }
  });

  it('…and confirmed beyond the margin: its crossing is placed on the way through the new id’s sightings within the margin too', () => {
    // Last seen at 1.1 s with feet at 270 (30 px above the line); from 2.2 s standing with feet at
    // 301 (just past it, within the margin), scored 0.35 until `standTo` − 0.15 s, 0.9 after; walking
    // on from `standTo`, 5 px further at once: its new id is confirmed beyond the margin, and counted
    // as the old id's crossing once it goes on. Its way from 270 at 1.1 s to 301 at 2.2 s meets the
    // line at 2.165 s. Before, straight from its last sighting to the confirming frame: 2.34 s and
    // 2.40 s for a wait until 2.9 and 3.0 s, after it was seen past the line.
    for (const standTo of [2.6, 2.9, 3.0]) {
      const l = line();
      const tracker = new ByteTracker({ frameRateHint: 10 });
      const events: [number, string, number, number | undefined, number | undefined][] = [];
      for (let k = 0; k < 50; k++) {
        const t = k / 10;
        const feet = t < 1.15 ? 160 + 100 * t : t >= 2.15 ? (t < standTo ? 301 : 306 + 100 * (t - standTo)) : undefined;
        const d = feet === undefined ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(300, feet - 160, 360, feet), Float32Array.of(t < 1.15 || t >= standTo - 0.15 ? 0.9 : 0.35), Int32Array.of(0));
        for (const e of l.update(tracker.update(d, k * 100), k * 100)) events.push([k * 100, e.direction, e.trackId, e.previousTrackId, e.atMs === undefined ? undefined : Math.round(e.atMs)]);
      }
      expect(events.map((e) => e.slice(1)), `stood until ${standTo} s`).toEqual([['in', 2, 1, 2165]]);
    }
  });
});

describe('a hand-over pending on a new id that is lost in its turn, its successor confirmed within the margin', () => {
  // Id 1 walks down to 270 (last seen at 0.4 s); id 2 is first seen at 0.5 s standing at 312, past the line
  // (beyond the margin): handed id 1's crossing, pending (its way from 270 at 0.4 s to 312 at 0.5 s met the
  // line at 0.471 s); lost after 0.8 s, still pending. Id 3, first seen at 1.7 s at `seen3` (feet), confirmed
  // at 1.9 s at 308 (within the margin), takes over id 2's state, pending included; it leaves the margin
  // (315, 322) and is counted as id 1's crossing.
  const play = (seen3: [number, number]) => {
    const l = line();
    const row = (id: number, feet: number, origin?: [number, number][]) =>
      new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0][0] - 160, 360, origin[0][0]]), ms: origin[0][1], before: origin.map(([f, ms]) => ({ box: new Float32Array([300, f - 160, 360, f]), ms })) }]]) : undefined);
    const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
    const out: [number, string, number, number | undefined, number | undefined][] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e): [number, string, number, number | undefined, number | undefined] => [t, e.direction, e.trackId, e.previousTrackId, e.atMs === undefined ? undefined : Math.round(e.atMs)]));
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100);
    step(none, 500);
    step(none, 600);
    step(row(2, 312, [[312, 500], [312, 600]]), 700);
    step(row(2, 312), 800);
    for (let t = 900; t < 1900; t += 100) step(none, t);
    step(row(3, 308, [[seen3[0], 1700], [seen3[1], 1800]]), 1900);
    step(row(3, 315), 2000);
    step(row(3, 322), 2100);
    step(row(3, 330), 2200);
    return out;
  };

  it('its crossing is placed where its way last met the line: id 3 seen back before it (296 at 1.7 s, 302 at 1.8 s), at 1.767 s, not the 0.471 s id 2 held', () => {
    // Before: the old id's pending time went with its state: settled at once (its wait counted from id 2's
    // first sighting, 1.4 s before) as of 0.471 s, when the person had been seen before the line at 1.7 s.
    const out = play([296, 302]);
    expect(out.map((e) => e.slice(1))).toEqual([['in', 3, 1, 1767]]);
    // Once id 3 has gone away from the line by the margin (322 at 2.1 s: its wait starts with it, not with id 2).
    expect(out[0][0]).toBe(2100);
  });

  it('…and id 3 seen only past the line: as of where id 1 met it on its way to id 2 (0.471 s)', () => {
    expect(play([305, 306]).map((e) => e.slice(1))).toEqual([['in', 3, 1, 471]]);
  });
});

describe('after a hand-over', () => {
  const row = (id: number, feet: number, origin?: [number, number][]) =>
    new Detections(new Float32Array([300, feet - 160, 360, feet]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([id]), origin ? new Map([[id, { box: new Float32Array([300, origin[0][0] - 160, 360, origin[0][0]]), ms: origin[0][1], before: origin.map(([f, ms]) => ({ box: new Float32Array([300, f - 160, 360, f]), ms })) }]]) : undefined);
  const none = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0));
  const recorder = (l: LineCounter) => {
    const out: [number, string, number, number | undefined, number | undefined][] = [];
    const step = (d: Detections, t: number) => out.push(...l.update(d, t).map((e): [number, string, number, number | undefined, number | undefined] => [t, e.direction, e.trackId, e.previousTrackId, e.atMs === undefined ? undefined : Math.round(e.atMs)]));
    return { out, step };
  };

  it('a new id that took over a lost track within the margin and turned back: its own later crossing names no old id and has no atPts', () => {
    const l = line();
    const { out, step } = recorder(l);
    for (let k = 0; k < 5; k++) step(row(1, 250 + 10 * k), k * 100); // id 1 down to 290 (within the margin), lost
    step(none, 500);
    step(none, 600);
    step(row(2, 302, [[296, 500], [300, 600]]), 700); // id 2 within the margin: takes id 1's track over
    step(row(2, 294), 800);
    step(row(2, 285), 900); // back before the line, beyond the margin: no crossing
    for (let k = 0; k < 20; k++) step(row(2, 280 - 5 * k), 1000 + k * 100); // walks up and away to 185
    expect(out).toEqual([]);
    for (let k = 0; k < 20; k++) step(row(2, 190 + 10 * k), 3000 + k * 100); // back down across the line at 4.1 s
    // Before: ['in', 2, 1, 4100]: an id switch 3.5 s before said to have been this crossing's.
    expect(out.map((e) => e.slice(1))).toEqual([['in', 2, undefined, undefined]]);
  });

  it('a new id past the line still deciding a hand-over, lost, and found further on under a third id: the crossing counts once, named and placed', () => {
    const l = line();
    const { out, step } = recorder(l);
    for (let k = 0; k < 5; k++) step(row(1, 230 + 10 * k), k * 100); // id 1 down to 270, lost
    step(none, 500);
    step(none, 600);
    step(row(2, 320, [[312, 500], [316, 600]]), 700); // id 2 past the line (beyond the margin), pending
    for (let t = 800; t < 1100; t += 100) step(none, t); // id 2 lost before it showed which way it went
    step(row(3, 340, [[330, 1100], [335, 1200]]), 1300); // id 3 further on, the same way
    for (let k = 1; k < 5; k++) step(row(3, 340 + 5 * k), 1300 + k * 100);
    // Before: none (id 3 took id 2's track off the line, the crossing it was deciding with it). Id 1's
    // way from 270 at 0.4 s to 312 at 0.5 s met the line at 0.471 s.
    expect(out.map((e) => e.slice(1))).toEqual([['in', 3, 1, 471]]);
    expect(out[0][0]).toBeLessThanOrEqual(1400);
  });

  it('a new id that took over a lost track within the margin, crossed there and was lost, found past the line under a third id: placed where it crossed, named by the first id', () => {
    const l = line();
    const { out, step } = recorder(l);
    for (let k = 0; k < 6; k++) step(row(1, 235 + 10 * k), k * 100); // id 1 down to 285 (beyond the margin), lost
    step(none, 600);
    step(none, 700);
    step(row(2, 305, [[296, 600], [302, 700]]), 800); // id 2 within the margin, over the line at 0.667 s: takes id 1's track
    step(row(2, 306), 900);
    for (let t = 1000; t < 1300; t += 100) step(none, t); // id 2 lost within the margin
    step(row(3, 330, [[322, 1300], [326, 1400]]), 1500); // id 3 past the line, beyond the margin
    for (let k = 1; k < 5; k++) step(row(3, 330 + 5 * k), 1500 + k * 100);
    // Before: ['in', 3, 2, 900]: said to have crossed when id 2 was last seen, past the line, within the margin.
    expect(out.map((e) => e.slice(1))).toEqual([['in', 3, 1, 667]]);
  });
});

describe('a track lost past the line, within the margin, found further on under a new id', () => {
  it('is placed where its own way met the line, not at its last sighting (10, 30 and 60 fps)', () => {
    // Walking down at 100 px/s from feet at 230: over the line (300) at 0.7 s; stands with feet at 306
    // (past it, within the 10 px margin) from 0.76 s; lost after 2.0 s (hidden past the tracker's
    // buffer); seen again from 3.2 s with feet at 340, walking on down: a new id, handed id 1's
    // crossing. Before: placed at id 1's last sighting (2.0 s), 1.3 s after it crossed, since the way
    // from there to the new id does not meet the line.
    for (const fps of [10, 30, 60]) {
      const l = line();
      const tracker = new ByteTracker({ frameRateHint: fps });
      const events: [number, string, number, number | undefined, number | undefined][] = [];
      for (let k = 0; k < 5 * fps; k++) {
        const t = k / fps, ms = Math.round((k * 1000) / fps);
        const feet = t < 0.76 ? 230 + 100 * t : t < 2.0 ? 306 : t >= 3.2 ? 340 + 100 * (t - 3.2) : undefined;
        const d = feet === undefined ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(300, feet - 160, 360, feet), Float32Array.of(0.9), Int32Array.of(0));
        for (const e of l.update(tracker.update(d, ms), ms)) events.push([ms, e.direction, e.trackId, e.previousTrackId, e.atMs === undefined ? undefined : Math.round(e.atMs)]);
      }
      expect(events.map((e) => e.slice(1, 4)), `${fps} fps`).toEqual([['in', 2, 1]]);
      expect(events[0][4], `${fps} fps`).toBeGreaterThanOrEqual(650);
      expect(events[0][4], `${fps} fps`).toBeLessThanOrEqual(750);
    }
  });
});
