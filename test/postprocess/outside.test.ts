/** Boxes a model puts outside the picture (in the letterbox's padding, or beyond it). */
import { lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { InferredFrame } from '../../src/inference/infer.js';
import type { Candidates, ModelDecoder } from '../../src/models/decoder.js';
import { postprocess } from '../../src/postprocess/postprocess.js';

/** A decoder that gives these boxes (xyxy in the model's 640 × 640 input), score 0.9, class 0. */
function decoder(boxes: number[][]): ModelDecoder {
  return {
    family: 'yolox',
    numClasses: 1,
    maxCandidates: 16,
    outputNames: ['out'],
    nmsInGraph: true,
    decode(_o, _b, _t, out: Candidates) {
      boxes.forEach((b, i) => {
        out.xyxy.set(b, i * 4);
        out.score[i] = 0.9;
        out.classId[i] = 0;
      });
      return boxes.length;
    },
  } as ModelDecoder;
}

describe('postprocess: a box outside the picture', () => {
  it("is dropped: in the letterbox's padding, or wholly beyond the picture, it has no area once cut to it", async () => {
    // A 1280 × 720 picture fitted into 640 × 640: scale 0.5, at the top, padded below (y 360–640).
    const lb = letterbox(1280, 720, 640, 640);
    const frame = { source: 'cam', seq: 0, pts: 0, letterbox: lb, stamps: emptyStamps(0) } as unknown as Frame;
    const inPad = [100, 510, 200, 600]; // below the picture
    const beyond = [-80, 200, -10, 300]; // left of it
    const real = [100, 200, 200, 300];
    const run = (boxes: number[][]) => lastValueFrom(of({ frame, output: {} } as unknown as InferredFrame).pipe(postprocess(decoder(boxes), 1, { scoreThreshold: 0.3, iouThreshold: 0.45, preNmsTopK: 100, maxDetections: 100, classAgnostic: false })));
    // Before, both were kept as boxes of no area on the picture's edge: a conveyor-defect rule
    // counted them (a defect alert for something not in the picture), and they were published.
    const d = await run([inPad, real, beyond]);
    expect(d.detections.length).toBe(1);
    expect([...d.detections.xyxy]).toEqual([200, 400, 400, 600]);
    expect((await run([inPad])).detections.length).toBe(0);
  });
});
