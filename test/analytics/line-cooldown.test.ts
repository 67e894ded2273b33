/** A line-cross rule's cooldown across an id switch at the line (a crossing handed over to a new id), through the real tracker (virtual time). */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, type SceneObject } from '../tracking/helpers.js';

/** A person walking down through the door line (in, 1.4 s), back up (out, 2.6 s) and down again, hidden 5.0–6.3 s as they cross (in, 5.4 s): the tracker finds them past it under a new id. */
const inOutIn = (hidden: boolean, hiddenOut = false): SceneObject[] => [
  { key: 'p', box: [300, 0, 360, 160], velocity: [0, 100], until: 2 },
  { key: 'p', box: [300, 400, 360, 560], velocity: [0, -100], from: 2, until: 4, ...(hiddenOut ? { hidden: [[2.3, 3.6]] } : {}) },
  { key: 'p', box: [300, -400, 360, -240], velocity: [0, 100], from: 4, ...(hidden ? { hidden: [[5.0, 6.3]] } : {}) },
];

function alerts(objects: SceneObject[], fps: number, cooldownSec: number) {
  const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'in', cooldownSec }] });
  const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
  a.init(640, 480);
  const tracker = new ByteTracker({ frameRateHint: fps });
  const got: [number, unknown][] = [];
  for (const f of feed(fps, 8, { objects, jitter: 1, seed: 3 })) for (const x of a.process(tracker.update(f.detections, f.timestampMs), f.timestampMs).alerts) got.push([x.trackId as number, x.previousTrackId]);
  return { got, report: a.report().lines.door };
}

describe('a line-cross cooldown across an id switch at the line', () => {
  it('the same person in twice within the cooldown, the second time under a new id: alerted once, counted twice', () => {
    for (const fps of [10, 30]) {
      // Seen throughout: the second `in` is within the 60 s cooldown of the first.
      expect(alerts(inOutIn(false), fps, 60).got, `${fps} fps, seen`).toHaveLength(1);
      // Before: two alerts (the new id's key had no cooldown).
      const { got, report } = alerts(inOutIn(true), fps, 60);
      expect(got.map(([id]) => id), `${fps} fps, hidden`).toEqual([1]);
      expect(report).toMatchObject({ in: 2, out: 1 });
    }
  });

  it('past the cooldown: the handed-over crossing is alerted', () => {
    for (const fps of [10, 30]) {
      const { got } = alerts(inOutIn(true), fps, 3);
      expect(got.map(([id]) => id), `${fps} fps`).toEqual([1, 2]);
    }
  });

  it('the id switched as they went back out (a rule for `in` only): the next `in` within the cooldown is not alerted again', () => {
    for (const fps of [10, 30]) {
      // Hidden 2.3–3.6 s as they cross out (2.6 s): found before the line under a new id, the `out` handed
      // over to it; in again at 5.4 s under that id, within the 60 s cooldown of the first `in`. Before: two
      // alerts (the hand-over of an `out`, which the rule does not alert, carried no cooldown to the new id).
      const { got, report } = alerts(inOutIn(false, true), fps, 60);
      expect(got.map(([id]) => id), `${fps} fps`).toEqual([1]);
      expect(report).toMatchObject({ in: 2, out: 1 });
      // Past the cooldown, alerted.
      expect(alerts(inOutIn(false, true), fps, 3).got.map(([id]) => id), `${fps} fps`).toEqual([1, 2]);
    }
  });
});
