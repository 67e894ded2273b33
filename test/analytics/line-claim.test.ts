/**
 * A claim (a lost track a new id on its side was taken for) at a door line, through the real
 * tracker (virtual time): the claimant seen beside the object found again past the line.
 */
import { describe, expect, it } from 'vitest';
import type { SceneObject } from '../tracking/helpers.js';
import { cross, walker } from './door-line.js';

describe('a lost track claimed by a new id beside it', () => {
  it('found past the line under a third id while the claimant stands before it: counted once', () => {
    for (const fps of [10, 30]) {
      // A walks down, hidden 1.0–2.3 s (feet 260 → 390: it crosses unseen, and the tracker, which keeps
      // a lost track 1 s, finds it under a new id); B, A's size, appears at 1.1 s standing 100 px to the
      // right of where A was lost (feet 265, before the line) and stays there.
      const { events, tracked } = cross([walker({ hidden: [[1.0, 2.3]] }), { key: 'b', box: [400, 105, 460, 265], from: 1.1 }], 4, fps);
      expect(tracked.distinctIds('b'), `${fps} fps`).toHaveLength(1);
      expect(tracked.distinctIds('p'), `${fps} fps`).toHaveLength(2);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]), `${fps} fps`).toEqual([['in', tracked.distinctIds('p')[1], tracked.distinctIds('p')[0]]]);
    }
  });

  it('…but not while the claimant was found on its way (its object under a new id): a third id beside it past the line is another', () => {
    for (const fps of [10, 30]) {
      // A walks down and is lost at 1.0 s (feet 260); B, its size, is found on its way at 1.1 s (feet 270) and
      // walks on through the line (A under a new id: counted as B). C, their size, comes into view past the
      // line 40 px to the side of that way at 2.3 s, while B walks on: another person, not A.
      const objects: SceneObject[] = [walker({ box: [300, -100, 360, 60], until: 1.0 }), walker({ key: 'b', box: [300, -100, 360, 60], from: 2.2 }), { key: 'c', box: [340, 190, 400, 350], from: 2.7 }];
      const { events, tracked } = cross(objects, 4, fps);
      expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]), `${fps} fps`).toEqual([['in', tracked.distinctIds('b')[0], undefined]]);
    }
  });

  it('…nor once the claimant went through the line itself: another who appears past it on the lost way is not counted again', () => {
    for (const fps of [10, 30]) {
      for (const [from, feet] of [[1.9, 320], [2.2, 340], [2.2, 370]]) {
        // A walks down and is lost at 0.8 s (feet 240); found at 0.9 s 90 px to the side of its way under a new
        // id (B: a step aside, or another person), it walks on through the line (feet 300 at 1.4 s). C, their
        // size, comes into view standing past the line on A's old way at `from` s, while B walks on. B's
        // crossing is A's if B is A; C crossed nothing. Before, C took A over once B's claim lapsed: two
        // crossings for one person through the door.
        const objects: SceneObject[] = [walker({ until: 0.8 }), walker({ key: 'b', box: [390, 0, 450, 160], from: 0.9 }), { key: 'c', box: [300, feet - 160, 360, feet], from }];
        const { events, tracked } = cross(objects, 5, fps);
        expect(tracked.distinctIds('c'), `${fps} fps, C from ${from} s`).toHaveLength(1);
        expect(tracked.distinctIds('c')[0], `${fps} fps, C from ${from} s`).not.toBe(tracked.distinctIds('p')[0]);
        expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]), `${fps} fps, C from ${from} s at feet ${feet}`).toEqual([['in', tracked.distinctIds('b')[0], undefined]]);
      }
    }
  });
});
