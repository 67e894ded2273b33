import { describe, expect, it } from 'vitest';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

/** One frame's detections: rows of x1 y1 x2 y2 score. */
function dets(rows: ReadonlyArray<readonly [number, number, number, number, number]>): Detections {
  return new Detections(Float32Array.from(rows.flatMap((r) => r.slice(0, 4))), Float32Array.from(rows.map((r) => r[4])), new Int32Array(rows.length));
}

describe("ByteTracker: a new track's earlier sightings are its object's", () => {
  it('after a stage-1 id switch (two people passing close), the neighbour that gets a new track does not start with the other one’s sightings', () => {
    // B (60×160 px) stands at x = 300 from t = 0, scored 0.9: tracked. A walks towards it from the
    // left at 150 px/s (5 px a frame at 30 fps), scored 0.4 (in a doorway's shadow): its sightings
    // are kept, no track takes them. When A is 5 px from B, A is scored 0.9 and B, half hidden
    // behind A, 0.6: B's track takes A's box (an id switch) and B's box starts a new track.
    const tracker = new ByteTracker({ frameRateHint: 30 });
    const B = [300, 100, 360, 260] as const;
    const aAt = (k: number) => [150 + 5 * k, 100, 210 + 5 * k, 260] as const;
    const switchAt = 28; // A's x1 = 290
    const at = (k: number) => (k * 1000) / 30;
    let k = 0;
    for (; k < switchAt; k++) tracker.update(dets([[...B, 0.9], [...aAt(k), 0.4]]), at(k));
    const idB = tracker.tracks()[0].id;
    expect(idB).toBeGreaterThan(0);
    const switched = tracker.update(dets([[...B, 0.6], [...aAt(k), 0.9]]), at(k));
    expect([...switched.trackerId!]).toEqual([-1, idB]); // the switch: B's id on A's box, B's box a new track
    // Both at 0.9 from then on: B's box is confirmed under a new id.
    const origins = new Map<number, { box: Float32Array; before?: readonly { box: Float32Array }[] }>();
    for (k++; k < switchAt + 6; k++) for (const [id, o] of tracker.update(dets([[...B, 0.9], [...aAt(k), 0.9]]), at(k)).trackOrigins ?? []) origins.set(id, o);
    expect([...origins.keys()]).toEqual([idB + 1]);
    // It started on B's box where B stood: its first sighting is there, not on A's way in from the left.
    const origin = origins.get(idB + 1)!;
    expect([...origin.box]).toEqual([...B]);
    expect(origin.before!.map((s) => s.box[0])).toEqual([300, 300]);
  });
});

describe('ByteTracker: which unclaimed detections of a frame are kept', () => {
  it('the best-scoring ones whatever the row order (an end2end model’s rows come in its own order)', () => {
    // 40 weak boxes of clutter (0.15: shelves, a poster) in the first rows, and a person coming in
    // at 0.45 in the last row for 8 frames, then at 0.9: its track starts with those 8 sightings.
    const clutter: [number, number, number, number, number][] = [];
    for (let j = 0; j < 40; j++) clutter.push([10 + (j % 10) * 60, 400 + Math.floor(j / 10) * 50, 50 + (j % 10) * 60, 440 + Math.floor(j / 10) * 50, 0.15]);
    const person = (k: number, score: number): [number, number, number, number, number] => [100 + 4 * k, 100, 160 + 4 * k, 260, score];
    for (const personFirst of [false, true]) {
      const tracker = new ByteTracker({ frameRateHint: 30 });
      let origin;
      for (let k = 0; k < 12 && !origin; k++) {
        const p = person(k, k < 8 ? 0.45 : 0.9);
        const d = tracker.update(dets(personFirst ? [p, ...clutter] : [...clutter, p]), (k * 1000) / 30);
        const id = d.trackerId![personFirst ? 0 : 40];
        if (id > 0) origin = d.trackOrigins?.get(id);
      }
      expect(origin, `person in row ${personFirst ? 0 : 40}`).toBeDefined();
      expect([...origin!.box], `person in row ${personFirst ? 0 : 40}`).toEqual(person(0, 0).slice(0, 4));
      expect(origin!.before!.map((s) => s.box[0])).toEqual([100, 104, 108, 112, 116, 120, 124, 128, 132, 136]);
    }
  });
});

describe('ByteTracker: how far back the sightings before a track go', () => {
  /** Where the track of a person scored 0.45 for `lowSec`, then 0.9, was first seen (ms), and how many sightings its origin holds. */
  function originAt(fps: number, lowSec: number) {
    const tracker = new ByteTracker({ frameRateHint: fps });
    for (let k = 0; k < fps * (lowSec + 1); k++) {
      const t = k / fps;
      const d = tracker.update(dets([[300, 100 + 90 * t, 340, 200 + 90 * t, t < lowSec - 1e-9 ? 0.45 : 0.9]]), (k * 1000) / fps);
      const o = d.trackOrigins?.get(d.trackerId![0]);
      if (o) return { ms: Math.round(o.ms), sightings: o.before!.length };
    }
    return undefined;
  }

  it('a second of them at 10 to 120 fps, the latest 10 below 10 fps, the latest 120 above 120 fps', () => {
    // 0.8 s scored low at 30 fps: all 24 (and the 2 tentative ones). Before, the latest 10 frames
    // (a third of a second): first seen at 467 ms, past a line it crossed at 0.3 s.
    expect(originAt(30, 0.8)).toEqual({ ms: 0, sightings: 26 });
    expect(originAt(25, 0.8)).toEqual({ ms: 0, sightings: 22 });
    // 1.5 s: the latest second (30 of them at 30 fps).
    expect(originAt(30, 1.5)).toEqual({ ms: 500, sightings: 32 });
    expect(originAt(10, 1.5)).toEqual({ ms: 500, sightings: 12 });
    // 3 s at 5 fps: the latest 10 (2 s), as before.
    expect(originAt(5, 3)).toEqual({ ms: 1000, sightings: 12 });
    // 1.5 s at 60 and 120 fps: the latest second (before, the latest 30: half a second, from 1.0 s).
    expect(originAt(60, 1.5)).toEqual({ ms: 500, sightings: 62 });
    expect(originAt(120, 1.5)).toEqual({ ms: 500, sightings: 122 });
    // At 240 fps, the latest 120 (half a second): the bound on memory.
    expect(originAt(240, 1.5)).toEqual({ ms: 1000, sightings: 122 });
  });
});

describe("ByteTracker: a low-scored object's sightings follow its own motion past a tracked neighbour", () => {
  it('two people crossing: the one scored low keeps its sightings from before they passed', () => {
    // P (40 × 100, scored 0.9, tracked) walks right from x 100, Q (10 px lower, scored 0.35 until
    // 1.8 s, 0.9 after) walks left from x 500, 15 px a frame each at 10 fps. At 1.4 s P's box
    // (x 310) lies 5 px from Q's last sighting (x 305), nearer than Q's own (x 290). Before, Q's
    // sightings ended there (they went to P's detection): its track started with those from 1.4 s
    // only, and a line it crossed at 1.0 s was lost. Q's steady motion says which box is its.
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const P = (k: number) => [100 + 15 * k, 100, 140 + 15 * k, 200, 0.9] as const;
    const Q = (k: number) => [500 - 15 * k, 110, 540 - 15 * k, 210, k < 18 ? 0.35 : 0.9] as const;
    let origin: { box: Float32Array; before?: readonly { box: Float32Array }[] } | undefined;
    for (let k = 0; k < 24 && !origin; k++) {
      const d = tracker.update(dets([P(k), Q(k)]), k * 100);
      if (d.trackerId![1] > 0) origin = d.trackOrigins?.get(d.trackerId![1]);
    }
    expect(origin).toBeDefined();
    // Its last second before the track (0.8–1.7 s), then the tentative ones: from x 380 on.
    expect(origin!.before!.map((s) => s.box[0])).toEqual([380, 365, 350, 335, 320, 305, 290, 275, 260, 245, 230, 215]);
  });

  it('a person standing still beside where a tracked neighbour passes keeps its sightings (no motion: by overlap, as before)', () => {
    // Q stands at x 300 scored 0.35 until 1.8 s; P walks past 10 px above it, 15 px a frame.
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const P = (k: number) => [100 + 15 * k, 100, 140 + 15 * k, 200, 0.9] as const;
    const Q = (k: number) => [300, 110, 340, 210, k < 18 ? 0.35 : 0.9] as const;
    let origin: { box: Float32Array; before?: readonly { box: Float32Array }[] } | undefined;
    for (let k = 0; k < 24 && !origin; k++) {
      const d = tracker.update(dets([P(k), Q(k)]), k * 100);
      if (d.trackerId![1] > 0) origin = d.trackOrigins?.get(d.trackerId![1]);
    }
    expect(origin!.before!.length).toBe(12);
  });
});

describe('ByteTracker: the sightings a chain of them no longer holds are let go', () => {
  /** Every sighting the tracker's state still reaches from its latest unclaimed ones, through each one's links. */
  function reachable(tracker: ByteTracker): number {
    const seen = new Set<object>();
    // White box: the last update's unclaimed detections, and every link a sighting has.
    const stack: unknown[] = [...(tracker as unknown as { unclaimed: object[] }).unclaimed];
    while (stack.length) {
      const u = stack.pop() as { prev?: object; next?: object; oldest?: object } | undefined;
      if (!u || seen.has(u)) continue;
      seen.add(u);
      stack.push(u.prev, u.next, u.oldest);
    }
    return seen.size;
  }

  it('a poster scored 0.2 for two minutes: the latest second of it (10 at 5 fps, 120 at 120 fps), not all it ever had', () => {
    // Before, each sighting kept the chain's oldest of its time alive, and that one the oldest of
    // its own: all 600 sightings at 5 fps, 3600 at 30, 14400 at 120 (an hour at 120 fps: 432000).
    for (const [fps, kept] of [[5, 10], [10, 10], [30, 30], [60, 60], [120, 120]] as const) {
      const tracker = new ByteTracker({ frameRateHint: fps });
      for (let k = 0; k < fps * 120; k++) tracker.update(dets([[100, 100, 160, 260, 0.2]]), (k * 1000) / fps);
      expect(reachable(tracker), `${fps} fps`).toBe(kept);
    }
  });

  it('a low-scored person walking to and fro for a minute, then tracked: the track starts with its latest second, and nothing older is kept', () => {
    const tracker = new ByteTracker({ frameRateHint: 30 });
    let origin: { before?: readonly { ms: number }[] } | undefined;
    for (let k = 0; k < 30 * 60 + 10 && !origin; k++) {
      const x = 50 + Math.abs(((k * 2 + 400) % 800) - 400); // back and forth, 60 px/s
      const d = tracker.update(dets([[x, 100, x + 40, 200, k < 30 * 60 ? 0.35 : 0.9]]), (k * 1000) / 30);
      if (k === 30 * 60 - 1) expect(reachable(tracker)).toBe(30);
      if (d.trackerId![0] > 0) origin = d.trackOrigins?.get(d.trackerId![0]);
    }
    // The latest 30 (the last second scored low), then the two tentative ones.
    expect(origin!.before!.length).toBe(32);
    expect(Math.round(origin!.before![0].ms)).toBe(Math.round(((30 * 60 - 30) * 1000) / 30));
  });
});
