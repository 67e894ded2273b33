/**
 * A class-filtered line and a track whose label changes (tracking.classAware: false keeps the
 * id): tracked rows in virtual time, no tracker in between.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';

const LABELS = ['person', 'bicycle', 'car', 'motorcycle', 'airplane', 'bus', 'train', 'truck'];
const PERSON = 0, CAR = 2, TRUCK = 7;

/** Track 1 with its box's centre at (cx, 200), 60 × 40, labelled `cls`. */
function frame(cx: number, cls: number): Detections {
  return new Detections(Float32Array.of(cx - 30, 180, cx + 30, 220), Float32Array.of(0.9), Int32Array.of(cls), Int32Array.of(1));
}

describe('a class-filtered line, a track labelled another class for a while', () => {
  it('a car labelled truck for 3 s as it crosses is counted once, when it is a car again', () => {
    // Line x = 320 drawn downwards: "in" is to its left as seen on screen, rightwards. Cars only.
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'gate', from: [320, 0], to: [320, 480], units: 'pixel', classes: ['car'] }] }), LABELS, 'sources[0]');
    a.init(640, 480);
    // 10 fps, 20 px a second to the right: a car from x 300 (0 s) to 330 (1.5 s); a truck from 1.5 s to 4.5 s; a car again from 4.5 s (x 390).
    for (let t = 0; t <= 6000; t += 100) a.process(frame(300 + t / 50, t < 1500 || t >= 4500 ? CAR : TRUCK), t);
    // Before, none: the line forgot the car after forgetAfterMs (2 s) without a car frame, and
    // learned its side afresh (already past) when it was labelled car again.
    expect(a.report().lines.gate).toMatchObject({ in: 1, out: 0, byClass: { in: { car: 1 }, out: {} } });
  });

  it('a pedestrian labelled car on one frame each side of a car line, a minute apart, is not counted; nor after 10 s of other labels', () => {
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'gate', from: [320, 0], to: [320, 480], units: 'pixel', classes: ['car'] }] }), LABELS, 'sources[0]');
    a.init(640, 480);
    // 10 fps, 1 px a second to the right, from x 290 (0 s) to x 350 (60 s): a person, labelled car on the first frame and the last.
    for (let t = 0; t <= 60_000; t += 100) a.process(frame(290 + t / 1000, t === 0 || t === 60_000 ? CAR : PERSON), t);
    // Before, one car in: every person frame kept the track the line learned on its one car frame.
    expect(a.report().lines.gate).toMatchObject({ in: 0, out: 0 });
    // A car labelled truck for 11 s as it crosses: known for OFF_CLASS_HOLD_MS (10 s) after its
    // last car frame, then unseen; forgotten forgetAfterMs (2 s) later, it is a car again before that.
    const b = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'gate', from: [320, 0], to: [320, 480], units: 'pixel', classes: ['car'] }] }), LABELS, 'sources[0]');
    b.init(640, 480);
    for (let t = 0; t <= 14_000; t += 100) b.process(frame(300 + t / 250, t < 1000 || t >= 12_000 ? CAR : TRUCK), t);
    expect(b.report().lines.gate).toMatchObject({ in: 1 });
    // Labelled truck for 13 s: forgotten at 12.9 s, it learns its side afresh (past the line) at 14 s.
    const c = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'gate', from: [320, 0], to: [320, 480], units: 'pixel', classes: ['car'] }] }), LABELS, 'sources[0]');
    c.init(640, 480);
    for (let t = 0; t <= 16_000; t += 100) c.process(frame(300 + t / 250, t < 1000 || t >= 14_000 ? CAR : TRUCK), t);
    expect(c.report().lines.gate).toMatchObject({ in: 0 });
  });
});
