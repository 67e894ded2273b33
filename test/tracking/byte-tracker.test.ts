import { OUTAGE_MS } from '../../src/core/clock.js';
import { describe, expect, it } from 'vitest';
import { Detections } from '../../src/core/detections.js';
import { iouXyxy } from '../../src/core/geometry.js';
import { BYTE_TRACKER_DEFAULTS, ByteTracker } from '../../src/tracking/byte-tracker.js';
import type { ByteTrackerOptions } from '../../src/tracking/byte-tracker.js';
import { createKalmanState, kalmanBoxXyxy, kalmanInitiate, kalmanPredict, kalmanUpdate } from '../../src/tracking/kalman.js';
import { feed, mulberry32, run } from './helpers.js';
import type { Scene, SceneObject } from './helpers.js';

const FPS = 30;
/** A walking person: 50×120 px, 90 px/s to the right. */
const walker = (key: string, extra: Partial<SceneObject> = {}): SceneObject => ({
  key,
  box: [100, 200, 150, 320],
  velocity: [90, 0],
  ...extra,
});

function dets(rows: Array<[x1: number, y1: number, x2: number, y2: number, score: number, cls?: number]>): Detections {
  return new Detections(
    Float32Array.from(rows.flatMap((r) => r.slice(0, 4))),
    Float32Array.from(rows.map((r) => r[4])),
    Int32Array.from(rows.map((r) => r[5] ?? 0)),
  );
}

describe('ByteTracker', () => {
  describe('input and output', () => {
    it('empty input: empty output with track ids, no tracks', () => {
      const t = new ByteTracker();
      const out = t.update(Detections.empty(), 0);
      expect(out.length).toBe(0);
      expect(out.trackerId).toEqual(new Int32Array(0));
      expect(t.tracks()).toEqual([]);
    });

    it('keeps every row in input order, shares the columns, and marks untracked rows −1', () => {
      const t = new ByteTracker({ minConfirmFrames: 1 });
      const d = dets([
        [0, 0, 10, 20, 0.9], // confident: starts a track, confirmed at once
        [50, 50, 60, 70, 0.05], // below trackLowThresh: ignored
        [100, 100, 100, 140, 0.9], // zero width: not a box
        [200, 0, 220, 40, 0.3], // low score, nothing to continue
      ]);
      const out = t.update(d, 0);
      expect(Array.from(out.trackerId!)).toEqual([1, -1, -1, -1]);
      expect(out.xyxy).toBe(d.xyxy);
      expect(out.confidence).toBe(d.confidence);
      expect(out.classId).toBe(d.classId);
    });

    it('an empty frame after a confirmed track turns it lost, and it is still listed', () => {
      const t = new ByteTracker({ minConfirmFrames: 1 });
      t.update(dets([[0, 0, 10, 20, 0.9]]), 0);
      t.update(Detections.empty(), 33);
      expect(t.tracks().map((s) => [s.id, s.state])).toEqual([[1, 'lost']]);
    });

    it('tracks() reports the filter state of each track', () => {
      const t = new ByteTracker();
      const { outputs } = run(t, feed(FPS, 1, { objects: [walker('a')] }));
      expect(outputs.at(-1)!.trackerId![0]).toBe(1);
      const [s] = t.tracks();
      expect(s).toMatchObject({ id: 1, state: 'tracked', classId: 0, score: expect.closeTo(0.9, 6), hits: 30, lastSeenMs: expect.closeTo(29000 / 30, 6) });
      expect(s.ageMs).toBeCloseTo(29000 / 30, 6);
      const truth = [100 + 90 * (29 / 30), 200, 150 + 90 * (29 / 30), 320];
      s.xyxy.forEach((v, i) => expect(v).toBeCloseTo(truth[i], 0));
    });

    it.each<[string, ByteTrackerOptions, RegExp]>([
      // [name, options, error]
      ['threshold above 1', { matchThresh: 1.5 }, /matchThresh must be in \[0, 1\], got 1.5/],
      ['negative threshold', { trackLowThresh: -0.1 }, /trackLowThresh must be in \[0, 1\]/],
      ['low above high', { trackLowThresh: 0.6, trackHighThresh: 0.5 }, /trackLowThresh \(0.6\) exceeds trackHighThresh \(0.5\)/],
      ['zero frame rate', { frameRateHint: 0 }, /frameRateHint must be a positive number/],
      ['negative buffer', { lostTrackBufferMs: -1 }, /lostTrackBufferMs must be >= 0/],
      ['fractional confirmation', { minConfirmFrames: 1.5 }, /minConfirmFrames must be an integer >= 1/],
      ['zero confirmation', { minConfirmFrames: 0 }, /minConfirmFrames must be an integer >= 1/],
    ])('rejects bad options: %s', (_name, options, message) => {
      expect(() => new ByteTracker(options)).toThrow(RangeError);
      expect(() => new ByteTracker(options)).toThrow(message);
    });

    it('options: defaults filled in, undefined means default', () => {
      expect(new ByteTracker().options).toEqual(BYTE_TRACKER_DEFAULTS);
      expect(new ByteTracker({ minConfirmFrames: undefined, lostTrackBufferMs: 500 }).options).toEqual({ ...BYTE_TRACKER_DEFAULTS, lostTrackBufferMs: 500 });
    });

    it('rejects a non-finite timestamp; one going backwards counts as no time passing', () => {
      const t = new ByteTracker({ minConfirmFrames: 1 });
      expect(() => t.update(Detections.empty(), NaN)).toThrow(/timestamp must be finite/);
      t.update(dets([[0, 0, 10, 20, 0.9]]), 5000);
      expect(t.tracks()[0].lastSeenMs).toBe(5000);
      const out = t.update(dets([[0, 0, 10, 20, 0.9]]), 0);
      expect(Array.from(out.trackerId!)).toEqual([1]);
      expect(t.tracks()[0].lastSeenMs).toBe(5000);
      t.update(dets([[0, 0, 10, 20, 0.9]]), 40);
      expect(t.tracks()[0].lastSeenMs).toBe(5040);
    });
  });

  describe('one object', () => {
    it('keeps one id over 100 frames of a noisy walk', () => {
      const frames = feed(FPS, 100 / FPS, { objects: [walker('a')], jitter: 2, seed: 3 });
      const ids = run(new ByteTracker(), frames).ids('a');
      expect(ids).toHaveLength(100);
      expect(ids.slice(0, 2)).toEqual([-1, -1]);
      expect(new Set(ids.slice(2))).toEqual(new Set([1]));
    });

    it.each([
      // [minConfirmFrames, first frame with an id]
      [1, 0],
      [2, 1],
      [3, 2],
      [5, 4],
    ])('minConfirmFrames %i: no id before frame %i', (minConfirmFrames, first) => {
      const t = new ByteTracker({ minConfirmFrames });
      const frames = feed(FPS, 0.5, { objects: [walker('a')] });
      const ids = frames.map((f) => {
        const id = t.update(f.detections, f.timestampMs).trackerId![0];
        if (id < 0) expect(t.tracks().map((s) => [s.id, s.state])).toEqual([[-1, 'tentative']]);
        return id;
      });
      expect(ids.findIndex((id) => id > 0)).toBe(first);
      expect(ids.slice(first).every((id) => id === 1)).toBe(true);
    });

    it('a tentative track that misses one frame is dropped; confirmation starts over', () => {
      // Seen on frames 0 and 1, missed on frame 2, seen again from frame 3: confirmed on frame 5.
      const frames = feed(FPS, 0.5, { objects: [walker('a', { hidden: [[2 / FPS, 3 / FPS]] })] });
      const t = new ByteTracker();
      const ids: number[] = [];
      const tracksAfter: number[] = [];
      for (const f of frames) {
        ids.push(t.update(f.detections, f.timestampMs).trackerId![0] ?? -2);
        tracksAfter.push(t.tracks().length);
      }
      // Frame 2 has no detection, so no row; the track list is empty after it.
      expect(ids.slice(0, 6)).toEqual([-1, -1, -2, -1, -1, 1]);
      expect(tracksAfter[2]).toBe(0);
    });

    it('ids count up per tracker and are never reused, not even after reset()', () => {
      const t = new ByteTracker({ minConfirmFrames: 1 });
      expect(t.update(dets([[0, 0, 10, 20, 0.9]]), 0).trackerId![0]).toBe(1);
      expect(t.update(dets([[0, 0, 10, 20, 0.9], [100, 0, 110, 20, 0.9]]), 33).trackerId).toEqual(Int32Array.from([1, 2]));
      t.reset();
      expect(t.tracks()).toEqual([]);
      expect(t.update(dets([[0, 0, 10, 20, 0.9]]), 0).trackerId![0]).toBe(3);
      expect(new ByteTracker({ minConfirmFrames: 1 }).update(dets([[0, 0, 10, 20, 0.9]]), 0).trackerId![0]).toBe(1);
    });
  });

  describe('occlusion and the lost buffer', () => {
    it('a person hidden for 500 ms keeps the id; the lost track is predicted along the path', () => {
      const frames = feed(FPS, 3, { objects: [walker('a', { hidden: [[1, 1.5]] })] });
      const t = new ByteTracker();
      for (const f of frames) {
        t.update(f.detections, f.timestampMs);
        if (f.index === 44) {
          // 1.4 s into the walk, 400 ms into the gap.
          const [s] = t.tracks();
          expect(s.state).toBe('lost');
          const truth = [100 + 90 * (44 / 30), 200, 150 + 90 * (44 / 30), 320];
          expect(iouXyxy(s.xyxy, 0, truth, 0)).toBeGreaterThan(0.8);
        }
      }
      const r = run(new ByteTracker(), frames);
      expect(r.distinctIds('a')).toEqual([1]);
      expect(r.ids('a').slice(2).every((id) => id === 1)).toBe(true);
    });

    it.each([
      // [name, fps the tracker receives, hidden for (s), ids]
      ['hidden 500 ms: same id', 30, 0.5, [1]],
      ['hidden 900 ms: same id', 30, 0.9, [1]],
      ['hidden 1.5 s: lost track expired, reappearance is a new id', 30, 1.5, [1, 2]],
      ['only 10 fps arrive, hidden 800 ms: same id', 10, 0.8, [1]],
      ['only 10 fps arrive, hidden 1.5 s: the buffer is time, not 30 frames', 10, 1.5, [1, 2]],
    ])('%s', (_name, fps, hiddenSec, expected) => {
      const scene: Scene = { objects: [{ key: 'a', box: [300, 100, 360, 250], hidden: [[1, 1 + hiddenSec]] }] };
      const r = run(new ByteTracker(), feed(fps, 4, scene));
      expect(r.distinctIds('a')).toEqual(expected);
    });

    it('a stall (no frame for 5 s) counts as one usual gap: missed on the first frame back, an object keeps its id and is not carried on by its old velocity', () => {
      // 10 fps: walks right at 30 px/s for 2.5 s, stands until 3 s; no frame until 8 s; missed at 8.0 s, seen from 8.1 s.
      const t = new ByteTracker({ frameRateHint: 10 });
      const at = (ms: number) => 350 + 0.03 * Math.min(ms, 2500);
      const ids = new Set<number>();
      const see = (ms: number) => ids.add(t.update(dets([[at(ms), 300, at(ms) + 60, 450, 0.9]]), ms).trackerId![0]);
      for (let ms = 0; ms < 3000; ms += 100) see(ms);
      t.update(dets([]), 8000);
      const [lost] = t.tracks();
      expect(lost.state).toBe('lost');
      // Predicted one usual gap on, not 5 s at the speed it had when it stopped.
      expect(lost.xyxy[0]).toBeCloseTo(at(3000), -1);
      for (let ms = 8100; ms < 9000; ms += 100) see(ms);
      ids.delete(-1);
      expect([...ids]).toEqual([1]);
    });

    it('a stall while an object walks on: the detection where its speed took it is matched too, and it keeps its id', () => {
      // 10 fps, a 40 px wide person walking 60–150 px/s; no frame for 1.1 s or 2.1 s (a stall:
      // over 1 s and 4 usual gaps). Predicted one usual gap on only, it was 60–300 px from there
      // when the frames came back: the track was lost, and the person got a new id (a line crossed
      // in the gap was not counted; in a zone, a second entry).
      for (const v of [60, 100, 150]) {
        for (const gap of [[2.5, 3.5], [2, 4]]) {
          const scene: Scene = { objects: [{ key: 'p', box: [0, 300, 40, 400], velocity: [v, 0] }], drop: (_i, t) => t >= gap[0] && t < gap[1] };
          const r = run(new ByteTracker({ frameRateHint: 10 }), feed(10, 5, scene));
          expect(r.distinctIds('p'), `${v} px/s, no frame ${gap[0]}–${gap[1]} s`).toEqual([1]);
          // Missed on the first frames back too: the lost track keeps the time it is owed.
          const missed: Scene = { ...scene, objects: [{ ...scene.objects[0], hidden: [[gap[1], gap[1] + 0.2]] }] };
          expect(run(new ByteTracker({ frameRateHint: 10 }), feed(10, 5, missed)).distinctIds('p'), `${v} px/s, missed after the stall`).toEqual([1]);
        }
      }
    });

    it('an outage (no frame for longer than OUTAGE_MS) counts in full: what stands at the same spot afterwards is a new track, not the old one carried across 10 minutes', () => {
      const t = new ByteTracker({ frameRateHint: 10 });
      const box = dets([[350, 300, 410, 450, 0.9]]);
      const ids = new Set<number>();
      for (let ms = 0; ms < 3000; ms += 100) ids.add(t.update(box, ms).trackerId![0]);
      // 10 minutes without a frame (the camera down), then someone at the same spot.
      for (let ms = 603_000; ms < 604_000; ms += 100) ids.add(t.update(box, ms).trackerId![0]);
      ids.delete(-1);
      expect([...ids]).toEqual([1, 2]);
      // A stall just within it still keeps the id.
      const u = new ByteTracker({ frameRateHint: 10 });
      const kept = new Set<number>();
      for (let ms = 0; ms < 3000; ms += 100) kept.add(u.update(box, ms).trackerId![0]);
      for (let ms = 2900 + OUTAGE_MS; ms < 3900 + OUTAGE_MS; ms += 100) kept.add(u.update(box, ms).trackerId![0]);
      kept.delete(-1);
      expect([...kept]).toEqual([1]);
    });

    it('an expired track leaves tracks()', () => {
      const scene: Scene = { objects: [{ key: 'a', box: [300, 100, 360, 250], until: 1 }] };
      const t = new ByteTracker();
      const seen: Array<[number, number]> = [];
      for (const f of feed(25, 2.5, scene)) {
        t.update(f.detections, f.timestampMs);
        seen.push([f.index, t.tracks().length]);
      }
      // 25 fps: last seen on frame 24 (960 ms); still there exactly 1000 ms later (frame 49),
      // gone once more than 1000 ms have passed (frame 50).
      expect(seen.filter(([, n]) => n === 1).at(-1)![0]).toBe(49);
    });
  });

  describe('dropped frames and time-based prediction', () => {
    /** 60×120 px box moving 450 px/s: 15 px per nominal frame. */
    const fast = (key: string): SceneObject => ({ key, box: [0, 100, 60, 220], velocity: [450, 0] });
    /** After the first second, 3 of every 10 frames never arrive: gaps of 4 frame periods. */
    const burstyDrop = (i: number) => i >= 30 && i % 10 >= 7;

    it.each<[string, Scene]>([
      // [name, scene]
      ['every other frame missing, from the first second on', { objects: [fast('a')], drop: (i) => i >= 30 && i % 2 === 1 }],
      ['every other frame missing from the start, 300 px/s', { objects: [{ ...fast('a'), velocity: [300, 0] }], drop: (i) => i % 2 === 1 }],
      ['gaps of 4 frame periods at irregular times', { objects: [fast('a')], drop: burstyDrop }],
      ['long gaps (6 periods) in a noisy stream', { objects: [fast('a')], drop: (i) => i >= 30 && i % 12 >= 7, jitter: 2 }],
    ])('a fast object keeps its id: %s', (_name, scene) => {
      const r = run(new ByteTracker(), feed(FPS, 3, scene));
      expect(r.distinctIds('a')).toEqual([1]);
      expect(r.ids('a').slice(2).every((id) => id === 1)).toBe(true);
    });

    it('a new object that moves 0.6–0.75 of its width between the frames processed gets an id (tentative tracks match widened boxes); one that moves more than its width does not', () => {
      // A person 100 px wide walking 300 px/s; the camera runs at 25 fps, inference keeps up with 5 or 4 of them.
      const firstId = (fps: number, pxPerSec = 300) => {
        const t = new ByteTracker({ frameRateHint: 25 });
        for (let k = 0; k * 1000 / fps < 4000; k++) {
          const ms = (k * 1000) / fps, x = (pxPerSec * ms) / 1000;
          if (t.update(dets([[x, 300, x + 100, 550, 0.9]]), ms).trackerId![0] > 0) return ms;
        }
        return -1;
      };
      expect(firstId(5)).toBe(400); // 60 px a frame: plain IoU 0.25 × 0.9, over the 0.7 cost threshold: it never had an id
      expect(firstId(4)).toBe(500); // 75 px a frame
      expect(firstId(2)).toBe(-1); // 150 px a frame
    });

    it('a frame-count based tracker loses the same object at the first gap', () => {
      const frames = feed(FPS, 3, { objects: [fast('a')], drop: burstyDrop });
      // Same tracker, told that frames arrive one nominal period apart: a frame counter.
      const r = run(new ByteTracker(), frames, (_f, k) => (k * 1000) / FPS);
      expect(r.distinctIds('a').length).toBeGreaterThan(1);
    });

    it('after a 4-period gap the time-based prediction overlaps the object, a 1-frame step does not', () => {
      const box = (k: number) => [15 * k, 100, 60 + 15 * k, 220];
      const s = createKalmanState();
      const b0 = box(0);
      kalmanInitiate(s, (b0[0] + b0[2]) / 2, 160, 0.5, 120);
      for (let k = 1; k <= 30; k++) {
        kalmanPredict(s, 1);
        const b = box(k);
        kalmanUpdate(s, (b[0] + b[2]) / 2, 160, 0.5, 120);
      }
      const truth = box(34); // frames 31..33 dropped
      const predictedBy = (dt: number) => {
        const copy = { mean: s.mean.slice(), cov: s.cov.slice() };
        kalmanPredict(copy, dt);
        const out = new Float64Array(4);
        kalmanBoxXyxy(copy, out, 0);
        return iouXyxy(out, 0, truth, 0);
      };
      expect(predictedBy(4)).toBeGreaterThan(0.9);
      // Below 1 − matchThresh (0.2): the first stage could not match it.
      expect(predictedBy(1)).toBeLessThan(1 - BYTE_TRACKER_DEFAULTS.matchThresh);
    });
  });

  describe('two-stage association', () => {
    it.each<[string, SceneObject, number[]]>([
      // [name, object, distinct ids]
      ['low score (0.3) continues an existing track through a second', walker('a', { score: (t) => (t >= 1 && t < 2 ? 0.3 : 0.9) }), [1]],
      ['a low-score-only object (0.3) never gets a track', walker('a', { score: 0.3 }), []],
      ['high but below newTrackThresh (0.55) starts nothing', walker('a', { score: 0.55 }), []],
      ['0.55 continues an existing track (first stage)', walker('a', { score: (t) => (t >= 1 ? 0.55 : 0.9) }), [1]],
    ])('%s', (_name, object, expected) => {
      const r = run(new ByteTracker(), feed(FPS, 3, { objects: [object] }));
      expect(r.distinctIds('a')).toEqual(expected);
    });

    it('low-score detections are published with the track id on every frame', () => {
      const object = walker('a', { score: (t) => (t >= 1 ? 0.3 : 0.9) });
      const r = run(new ByteTracker(), feed(FPS, 2, { objects: [object] }));
      expect(r.ids('a').slice(30)).toEqual(new Array(30).fill(1));
    });

    it('low-score detections cannot revive a lost track; a confident one can', () => {
      // Tracked until 1 s, unseen until 1.3 s, then 0.3 until 1.8 s, then 0.9 again.
      const object = walker('a', { hidden: [[1, 1.3]], score: (t) => (t < 1.8 ? (t < 1 ? 0.9 : 0.3) : 0.9) });
      const frames = feed(FPS, 2.5, { objects: [object] });
      const r = run(new ByteTracker(), frames);
      const ids = r.ids('a');
      const lowFrames = frames.filter((f) => f.keys.includes('a')).map((f) => f.index / FPS);
      expect(ids.filter((_, k) => lowFrames[k] >= 1.3 && lowFrames[k] < 1.8).every((id) => id === -1)).toBe(true);
      expect(ids.at(-1)).toBe(1);
      expect(r.distinctIds('a')).toEqual([1]);
    });

    it('below trackLowThresh a detection is ignored and the track goes lost', () => {
      const t = new ByteTracker({ minConfirmFrames: 1 });
      t.update(dets([[0, 0, 10, 20, 0.9]]), 0);
      expect(t.update(dets([[0, 0, 10, 20, 0.05]]), 33).trackerId![0]).toBe(-1);
      expect(t.tracks()[0].state).toBe('lost');
    });
  });

  describe('several objects', () => {
    it.each([
      // [vertical offset px, speed px/s]: walking towards each other, 50×120 boxes, noisy
      [30, 120], // boxes overlap up to IoU 0.6 for about a second
      [10, 120], // nearly head-on
      [5, 240], // nearly head-on, fast
    ])('two people crossing paths keep their ids (offset %i px, %i px/s)', (dy, speed) => {
      // Exactly head-on at the same height the boxes coincide, and without an appearance
      // model the ids may swap (see ByteTracker's doc); a few pixels apart, velocity decides.
      const scene: Scene = {
        objects: [
          { key: 'a', box: [0, 200, 50, 320], velocity: [speed, 0] },
          { key: 'b', box: [480, 200 + dy, 530, 320 + dy], velocity: [-speed, 0] },
        ],
        jitter: 2,
        seed: 5,
      };
      const r = run(new ByteTracker(), feed(FPS, 8, scene));
      expect(r.distinctIds('a')).toEqual([1]);
      expect(r.distinctIds('b')).toEqual([2]);
    });

    it('class-aware: a person and the bag in the same box are two tracks', () => {
      const scene: Scene = {
        objects: [
          walker('person', { classId: 0 }),
          walker('bag', { classId: 1, box: [105, 205, 150, 315] }),
        ],
      };
      const r = run(new ByteTracker(), feed(FPS, 2, scene));
      expect(r.distinctIds('person')).toEqual([1]);
      expect(r.distinctIds('bag')).toEqual([2]);
    });

    it.each([
      // [classAware, ids of an object whose class flips from 0 to 1 at 1 s]
      [true, [1, 2]],
      [false, [1]],
    ])('classAware %s: class flip gives ids %j', (classAware, expected) => {
      const object = walker('a', { classId: (t) => (t < 1 ? 0 : 1) });
      const r = run(new ByteTracker({ classAware }), feed(FPS, 2, { objects: [object] }));
      expect(r.distinctIds('a')).toEqual(expected);
    });

    it('50 objects for 300 frames, with noise, varying scores and dropped frames: ids stable', () => {
      const rand = mulberry32(11);
      const objects: SceneObject[] = [];
      for (let row = 0; row < 10; row++) {
        for (let col = 0; col < 5; col++) {
          const x = 40 + col * 250;
          const y = 20 + row * 110;
          const phase = rand() * 6;
          objects.push({
            key: `${row}.${col}`,
            box: [x, y, x + 40, y + 90],
            velocity: [(row - 4.5) * 20, (col - 2) * 3],
            classId: col % 2,
            score: (t) => 0.8 + 0.15 * Math.sin(phase + t * 3),
          });
        }
      }
      const frames = feed(FPS, 10, { objects, jitter: 1.5, seed: 2, drop: (i) => i % 17 === 5 || i % 23 === 7 });
      const r = run(new ByteTracker(), frames);
      const all = new Set<number>();
      for (const o of objects) {
        expect(r.distinctIds(o.key), o.key).toHaveLength(1);
        expect(r.ids(o.key).slice(3).every((id) => id > 0), o.key).toBe(true);
        all.add(r.distinctIds(o.key)[0]);
      }
      expect(all.size).toBe(50);
    });
  });
});

describe('ByteTracker: where a track was seen before it was confirmed', () => {
  it('the confirming frame gives every earlier sighting, first to last, in the picture scaled since', () => {
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const at = (x: number, k = 1) => new Detections(Float32Array.of(k * x, k * 100, k * (x + 50), k * 200), Float32Array.of(0.9), Int32Array.of(0));
    expect(tracker.update(at(100), 0).trackOrigins).toBeUndefined();
    tracker.update(at(110), 100);
    tracker.rescale(2, 2); // the source doubled its resolution
    const d = tracker.update(at(120, 2), 200);
    const origin = d.trackOrigins!.get(d.trackerId![0])!;
    expect({ box: [...origin.box], ms: origin.ms }).toEqual({ box: [200, 200, 300, 400], ms: 0 });
    expect(origin.before!.map((s) => [[...s.box], s.ms])).toEqual([[[200, 200, 300, 400], 0], [[220, 200, 320, 400], 100]]);
    expect(tracker.update(at(130, 2), 300).trackOrigins).toBeUndefined();
  });
});
