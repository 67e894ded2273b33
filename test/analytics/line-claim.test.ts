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

  it('two walking through side by side, one hidden as the other came into view beside it: both counted', () => {
    for (const fps of [10, 30]) {
      for (const [dx, bFrom, v] of [[65, 0.9, 100], [65, 1.1, 80], [80, 0.9, 100], [100, 1.1, 100]]) {
        // A walks down, hidden 0.9–2.2 s (it crosses unseen; found past the line under a new id); B, its size,
        // comes into view `dx` px beside A's way at `bFrom` s (claiming A: first seen on its side, beside its way)
        // and walks through too, at `v` px/s. B's claim lapses once A's new id is found on A's way while B is
        // seen elsewhere, though B went through the line itself: B's crossing is B's. (Were it taken for A's,
        // these two would be counted once; the price: one who stepped aside while hidden and walked through,
        // another coming into view past the line on their old way, is counted twice: README.)
        const objects: SceneObject[] = [walker({ hidden: [[0.9, 2.2]] }), { key: 'b', box: [300 + dx, 0, 360 + dx, 160], velocity: [0, v], from: bFrom }];
        const { events, tracked } = cross(objects, 4, fps);
        const what = `${fps} fps, B ${dx} px beside from ${bFrom} s at ${v} px/s`;
        expect(tracked.distinctIds('p'), what).toHaveLength(2);
        expect(tracked.distinctIds('b'), what).toHaveLength(1);
        const [a1, a2] = tracked.distinctIds('p');
        expect(events.map((e) => [e.direction, e.trackId, e.previousTrackId]).sort(), what).toEqual([['in', a2, a1], ['in', tracked.distinctIds('b')[0], undefined]].sort());
      }
    }
  });
});
