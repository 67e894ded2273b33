/**
 * A camera's line counts across a move (a hand-over to another worker, an edit that restarts its
 * chain, a rolling restart): the old owner's chain ends (its analyzer settles what its lines had
 * pending: SourceAnalyzer.finish, LineCounter.flush) and the new owner's starts afresh on the frames
 * after it (a new tracker, a new analyzer: README, "Analytics state on the moved camera"). A
 * crossing the old owner's end counts is never counted again by the new owner, and one counted by
 * neither is what the move cost. Virtual time: the real tracker on seeded walks at a door line.
 */
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { LineCounter } from '../../src/analytics/line.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, mulberry32, type SceneObject } from '../tracking/helpers.js';
import { walker, walkingFeet } from '../analytics/door-line.js';

const LINE_Y = 300;
const FPS = 10;
const door = () => new LineCounter('door', [640, LINE_Y], [0, LINE_Y], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });
const cfg = SourceSchema.parse({ id: 'cam', uri: 'rtsp://127.0.0.1/cam', lines: [{ id: 'door', units: 'pixel', from: [640, LINE_Y], to: [0, LINE_Y], anchor: 'bottom-center' }], rules: [{ id: 'door-any', type: 'line-cross', line: 'door', direction: 'any' }] });

/** One owner's chain on `frames` (each owner has its own tracker and analyzer), through the analyze operator to its end: its line counts and the alerts its frames carried. */
async function owner(frames: { ms: number; d: Detections }[]) {
  const a = new SourceAnalyzer(cfg, ['person'], 'camera cam');
  const tracker = new ByteTracker({ frameRateHint: FPS });
  const lb = letterbox(640, 480, 640, 480, 'top-left');
  const detected: DetectedFrame[] = frames.map((f) => ({
    frame: { source: 'cam', seq: Math.round(f.ms / 100), pts: f.ms / 1000, data: Buffer.alloc(0), letterbox: lb, stamps: emptyStamps(1), producedBy: 'captured', release: () => {} },
    detections: tracker.update(f.d, f.ms),
  }));
  const out = await lastValueFrom(from(detected).pipe(analyze(a), toArray()), { defaultValue: [] });
  const door = a.report().lines.door;
  return { in: door.in, out: door.out, alerts: out.flatMap((r) => r.alerts).length };
}

const framesOf = (objects: SceneObject[], secs: number) => feed(FPS, secs, { objects, jitter: 1, seed: 3 }).map((f) => ({ ms: f.timestampMs, d: f.detections }));

describe('a camera moved while a crossing at its line is pending', () => {
  // A walks down and is lost at 0.8 s (feet 240); B, its size, is found standing past the line
  // (feet 350) from 2.3 s, then walks on down: taken for A, its crossing pending until B has stood
  // there a second (HANDOVER_SETTLE_MS). The camera moves at 2.6 s, the crossing still pending.
  const scene: SceneObject[] = [walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3, until: 4 }, { key: 'b', box: [300, 190, 360, 350], velocity: [0, 40], from: 4 }];

  it('the old owner counts it at its chain\'s end, the new owner does not count it again: once, as without the move', async () => {
    const frames = framesOf(scene, 6);
    const whole = await owner(frames);
    expect([whole.in, whole.out]).toEqual([1, 0]);
    for (const moveAt of [2600, 3000, 3200]) {
      const old = await owner(frames.filter((f) => f.ms < moveAt));
      const next = await owner(frames.filter((f) => f.ms >= moveAt));
      expect([old.in, old.out], `moved at ${moveAt} ms`).toEqual([1, 0]);
      expect([next.in, next.out], `moved at ${moveAt} ms`).toEqual([0, 0]);
    }
    // Moved before the old owner's tracker had B (confirmed after a few frames): neither counts it (the move's cost, README).
    const early = [await owner(frames.filter((f) => f.ms < 2400)), await owner(frames.filter((f) => f.ms >= 2400))];
    expect(early.map((o) => o.in + o.out)).toEqual([0, 0]);
  });

  it('…and walking back up through the line after the move, it is counted out by the new owner alone', async () => {
    // B goes back up from 3.2 s (through the line at about 4.5 s) and on.
    const back: SceneObject[] = [walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3, until: 3.2 }, { key: 'b', box: [300, 190, 360, 350], velocity: [0, -40], from: 3.2, until: 6 }];
    const frames = framesOf(back, 6);
    const whole = await owner(frames);
    const old = await owner(frames.filter((f) => f.ms < 2600));
    const next = await owner(frames.filter((f) => f.ms >= 2600));
    // Without the move, B's way back out settles A's hand-over against it (it went back: another
    // object, or the person turning back) and counts B out; with it, the old owner could not see
    // B turn back: it counted A in, and the new owner B out. Never more than the object crossed.
    expect(whole.in + whole.out).toBeLessThanOrEqual(2);
    expect(old.in + old.out + next.in + next.out).toBeLessThanOrEqual(2);
    expect(next.in).toBe(0);
  });
});

describe('a camera moved at every frame of seeded walks (1–3 people, hidden 0.8–2.5 s at a time)', () => {
  it('what the old owner\'s end settles is never counted again: old + new owner count no more than the people crossed', () => {
    let settled = 0, agree = 0, lostWithout = 0;
    const bad: string[] = [];
    for (let seed = 1; seed <= 160; seed++) {
      const rand = mulberry32(seed);
      const secs = 8;
      const people: { x: number; feet: (t: number) => number; hidden: [number, number][] }[] = [];
      const n = 1 + Math.floor(rand() * 3);
      for (let p = 0; p < n; p++) {
        const feet = walkingFeet(rand, secs);
        const hidden: [number, number][] = [];
        for (let h = 0; h < 3; h++) {
          if (rand() >= 0.7) continue;
          const a = rand() * 7;
          hidden.push([a, a + 0.8 + rand() * 1.7]);
        }
        people.push({ x: 60 + p * (40 + rand() * 150), feet, hidden });
      }
      const frames: { ms: number; d: Detections }[] = [];
      for (let k = 0; k < secs * FPS; k++) {
        const t = k / FPS;
        const boxes: number[] = [];
        for (const p of people) {
          if (p.hidden.some(([a, b]) => t >= a && t < b)) continue;
          const f = p.feet(t) + (rand() * 2 - 1);
          boxes.push(p.x, f - 160, p.x + 60, f);
        }
        frames.push({ ms: Math.round(t * 1000), d: new Detections(Float32Array.from(boxes), new Float32Array(boxes.length / 4).fill(0.9), new Int32Array(boxes.length / 4)) });
      }
      // What the people crossed (sides beyond the line's margin, sampled every 10 ms).
      let crossed = 0;
      for (const p of people) {
        let side = 0;
        for (let t = 0; t < secs; t += 0.01) {
          const y = p.feet(t);
          const s = y > LINE_Y + 10 ? 1 : y < LINE_Y - 10 ? -1 : 0;
          if (s !== 0 && side !== 0 && s !== side) crossed++;
          if (s !== 0) side = s;
        }
      }
      const chain = (part: typeof frames) => {
        const tracker = new ByteTracker({ frameRateHint: FPS });
        const l = door();
        for (const f of part) l.update(tracker.update(f.d, f.ms), f.ms);
        const atEnd = l.flush().length;
        return { counted: l.stats.in + l.stats.out, atEnd };
      };
      const whole = chain(frames).counted;
      for (let cut = 5; cut < secs * FPS - 5; cut++) {
        const old = chain(frames.slice(0, cut));
        if (old.atEnd === 0) continue;
        settled++;
        const both = old.counted + chain(frames.slice(cut)).counted;
        if (both > Math.max(crossed, whole)) bad.push(`seed ${seed}, moved at ${cut * 100} ms: old + new owner ${both}, crossed ${crossed}, unmoved ${whole}`);
        if (both === whole) agree++;
        if (both - old.atEnd < whole) lostWithout++;
      }
    }
    expect(bad).toEqual([]);
    // The moves do come while crossings are pending (68 of the 11 200 moves), most counted as without the move
    // (59), and the old owner's end is what keeps them: without it, 66 would be lost. (Had the new owner
    // analysed frames the old one had, 1.5 s of them, this fails: seed 81 counted 4 for 2 crossings. The
    // worker admits the new owner only after the old owner's release, its chain ended: no frame is
    // analysed by both.)
    expect(settled).toBeGreaterThan(20);
    expect(agree / settled).toBeGreaterThan(0.7);
    expect(lostWithout / settled).toBeGreaterThan(0.7);
  }, 120_000);
});
