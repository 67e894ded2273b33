/**
 * The door of the line tests: a level line at y = 300 drawn right to left ("in" is downwards), feet
 * as the anchor, 640 × 480, and people walked through it by the real tracker (virtual time).
 */
import { LineCounter, type LineEvent } from '../../src/analytics/line.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, run, type SceneObject } from '../tracking/helpers.js';

export const line = () => new LineCounter('door', [640, 300], [0, 300], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });

/** The crossings of `objects` through the real tracker (10 fps by default, ±1 px of jitter) and a fresh `line()`. */
export function cross(objects: SceneObject[], secs = 4, fps = 10) {
  const frames = feed(fps, secs, { objects, jitter: 1, seed: 3 });
  const tracked = run(new ByteTracker({ frameRateHint: fps }), frames);
  const l = line();
  const events: (LineEvent & { t: number })[] = [];
  tracked.outputs.forEach((d, k) => {
    for (const e of l.update(d, frames[k].timestampMs)) events.push({ ...e, t: frames[k].timestampMs });
  });
  return { events, tracked, l };
}

// A person 60 × 160 walking down at 100 px/s: feet at y = 160 at 0 s, on the line (300) at 1.4 s.
export const walker = (extra: Partial<SceneObject> = {}): SceneObject => ({ key: 'p', box: [300, 0, 360, 160], velocity: [0, 100], ...extra });

/**
 * A person's feet (y, px) over a random walk of `secs` seconds (the seeded walks of line-walk and
 * line-end-walk): from 200–260, down or up at 20–140 px/s or standing, leg by leg (0.3–1.8 s
 * each), kept within 170–470. Takes from `rand` in the order those tests' seeds were made with.
 */
export function walkingFeet(rand: () => number, secs: number): (t: number) => number {
  const legs: [number, number][] = [];
  for (let t = 0; t < secs; ) {
    t += 0.3 + rand() * 1.5;
    legs.push([t, rand() < 0.2 ? 0 : (rand() < 0.7 ? 1 : -1) * (20 + rand() * 120)]);
  }
  const y0 = 200 + rand() * 60;
  return (tt: number) => {
    let y = y0, s = 0;
    for (const [u, v] of legs) {
      const e = Math.min(u, tt);
      if (e > s) y += v * (e - s);
      s = u;
      if (u >= tt) break;
    }
    return Math.max(170, Math.min(470, y));
  };
}
