/**
 * The end of a stream at a door line (LineCounter.flush) against a stream that went on with no
 * more detections: seeded random walks of one to four people (stops, turns, occlusions longer
 * than the tracker's buffer: id switches and hand-overs, people who come into view late or leave),
 * through the real tracker in virtual time, cut soon after someone was found again (a hand-over
 * pending or owed at the end), at 10 and 30 fps.
 */
import { describe, expect, it } from 'vitest';
import { LineCounter } from '../../src/analytics/line.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { mulberry32 } from '../tracking/helpers.js';
import { walkingFeet } from './door-line.js';

const LINE_Y = 300;
const SECS = 8;
const door = () => new LineCounter('door', [640, LINE_Y], [0, LINE_Y], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });
const NONE = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));

interface Person { x: number; feet: (t: number) => number; hidden: [number, number][]; from: number; until: number }

function scene(seed: number, fps: number, most: number) {
  const rand = mulberry32(seed);
  const people: Person[] = [];
  const n = 1 + Math.floor(rand() * most);
  for (let p = 0; p < n; p++) {
    const feet = walkingFeet(rand, SECS);
    // Hidden 0.8–2.5 s at a time: past the tracker's buffer, found again under a new id.
    const hidden: [number, number][] = [];
    for (let h = 0; h < 3; h++) {
      if (rand() >= 0.7) continue;
      const a = rand() * 7;
      hidden.push([a, a + 0.8 + rand() * 1.7]);
    }
    people.push({ x: 60 + p * (40 + rand() * 150), feet, hidden, from: rand() < 0.5 ? rand() * 0.5 : rand() * 6, until: rand() < 0.3 ? 2 + rand() * 6 : Infinity });
  }
  // The stream ends up to 1.25 s after the first person is seen again.
  const back = people[0].hidden.length ? people[0].hidden[0][1] : 1 + rand() * 6;
  const cut = Math.min(SECS, Math.max(0.5, back + 0.05 + rand() * 1.2));
  const frames: { ms: number; d: Detections; keys: number[] }[] = [];
  for (let k = 0; k < cut * fps; k++) {
    const tt = k / fps;
    const boxes: number[] = [], keys: number[] = [];
    people.forEach((p, j) => {
      if (tt < p.from || tt >= p.until || p.hidden.some(([a, b]) => tt >= a && tt < b)) return;
      const f = p.feet(tt) + (rand() * 2 - 1);
      boxes.push(p.x, f - 160, p.x + 60, f);
      keys.push(j);
    });
    frames.push({ ms: Math.round(tt * 1000), d: new Detections(Float32Array.from(boxes), new Float32Array(keys.length).fill(0.9), new Int32Array(keys.length)), keys });
  }
  return { people, frames, cut };
}

describe('the end of the stream, on random walks (seeded)', () => {
  it('flush counts what a stream that went on with no detections would have, and no more than each person crossed', () => {
    const bad: string[] = [];
    let settled = 0;
    for (const fps of [10, 30]) {
      for (let seed = 1; seed <= 300; seed++) {
        for (const most of [2, 4]) {
          const { people, frames, cut } = scene(seed * 13 + fps + most * 100_000, fps, most);
          const play = (end: 'flush' | 'none') => {
            const tracker = new ByteTracker({ frameRateHint: fps });
            const l = door();
            const got = people.map(() => ({ in: 0, out: 0 }));
            const personOf = new Map<number, number>();
            const take = (e: { row: number; trackId: number; direction: 'in' | 'out' }, keys: number[]) => got[e.row >= 0 ? keys[e.row] : personOf.get(e.trackId)!][e.direction]++;
            let last = 0, atEnd = 0;
            for (const f of frames) {
              const d = tracker.update(f.d, f.ms);
              f.keys.forEach((j, row) => d.trackerId![row] >= 0 && personOf.set(d.trackerId![row], j));
              for (const e of l.update(d, f.ms)) take(e, f.keys);
              last = f.ms;
            }
            if (end === 'flush') {
              for (const e of l.flush()) (take(e, []), atEnd++);
            } else {
              // Frames without detections until every track is forgotten (forgetAfterMs 2 s, the tracker's buffer 1 s).
              for (let k = 1; k <= 5 * fps; k++) {
                const ms = last + Math.round((k * 1000) / fps);
                for (const e of l.update(tracker.update(NONE, ms), ms)) (take(e, []), atEnd++);
              }
            }
            return { got, atEnd, counts: [l.stats.in, l.stats.out] };
          };
          const flushed = play('flush'), went = play('none');
          settled += flushed.atEnd;
          const what = `${fps} fps seed ${seed} (up to ${most} people, cut at ${cut.toFixed(2)} s)`;
          if (flushed.counts.join() !== went.counts.join() || flushed.atEnd !== went.atEnd) bad.push(`${what}: flush ${flushed.counts} (${flushed.atEnd} at the end), went on ${went.counts} (${went.atEnd})`);
          // Per person where no one else is within a box's reach (README: the price of a hand-over).
          if (!people.every((p, j) => people.every((q, k) => k === j || Math.abs(p.x - q.x) > 220))) continue;
          people.forEach((p, j) => {
            const want = { in: 0, out: 0 };
            let side = 0;
            for (let k = 0; k < cut * fps; k++) {
              const tt = k / fps;
              const s = Math.sign(p.feet(tt) - LINE_Y);
              if (tt < p.from || tt >= p.until || s === 0) continue;
              if (side !== 0 && s !== side) want[s > 0 ? 'in' : 'out']++;
              side = s;
            }
            if (flushed.got[j].in > want.in || flushed.got[j].out > want.out) bad.push(`${what} person ${j}: counted ${JSON.stringify(flushed.got[j])}, crossed ${JSON.stringify(want)}`);
          });
        }
      }
    }
    expect(bad).toEqual([]);
    // The walks do end with hand-overs pending or owed.
    expect(settled).toBeGreaterThan(10);
  }, 120_000);
});
