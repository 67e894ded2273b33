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
