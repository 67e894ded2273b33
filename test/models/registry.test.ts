import { describe, expect, it } from 'vitest';
import { ArgusError, isArgusError } from '../../src/core/errors.js';
import { Candidates } from '../../src/models/decoder.js';
import { End2EndDecoder } from '../../src/models/end2end.js';
import type { Family } from '../../src/core/families.js';
import { acceptedLayouts, createDecoder } from '../../src/models/registry.js';
import type { TensorInfo } from '../../src/models/tensor-info.js';

const f32 = (name: string, ...dims: (number | string)[]): TensorInfo => ({ name, dims, type: 'float32' });
const at640 = (outputs: TensorInfo[], extra: { numClasses?: number; strides?: number[] } = {}) => ({ inputWidth: 640, inputHeight: 640, outputs, ...extra });

function shapeError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(isArgusError(e, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    return (e as ArgusError).message;
  }
  throw new Error('expected a MODEL_SHAPE error');
}

describe('createDecoder auto-detection from shapes', () => {
  // (outputs, family, classes, why) at 640x640, strides 8/16/32: 8400 grid points.
  const table: [TensorInfo[], Family, number, string][] = [
    [[f32('output0', 1, 84, 8400)], 'yolov8', 80, 'YOLOv8/YOLO11 channels first'],
    [[f32('output0', 'batch', 84, 'anchors')], 'yolov8', 80, 'Ultralytics dynamic=True'],
    [[f32('output0', 1, 25200, 85)], 'yolov5', 80, '3 anchors per grid point'],
    [[f32('output0', 'batch', 'anchors', 85)], 'yolov5', 80, 'YOLOv5 dynamic=True (YOLOX exports fix A)'],
    [[f32('output', 1, 8400, 85)], 'yolox', 80, 'one anchor per grid point'],
    [[f32('output', 1, 8400, 6)], 'yolox', 1, 'one class: A decides before the end2end row width'],
    [[f32('output0', 1, 300, 6)], 'end2end', 0, 'YOLOv10 / nms=True'],
    [[f32('output', 'num_dets', 7)], 'end2end', 0, 'YOLOv7 ONNX Runtime NMS'],
    [[f32('output', 1, 25200, 85), f32('onnx::Sigmoid_1', 1, 3, 80, 80, 85)], 'yolov5', 80, 'extra raw head outputs are ignored'],
    [
      [{ name: 'num_dets', dims: [1, 1], type: 'int32' }, f32('det_boxes', 1, 100, 4), f32('det_scores', 1, 100), { name: 'det_classes', dims: [1, 100], type: 'int32' }],
      'end2end-split',
      0,
      'EfficientNMS',
    ],
  ];
  it.each(table.map(([o, f, c, why]) => [why, f, o, c] as const))('%s → %s', (_, family, outputs, classes) => {
    const dec = createDecoder('auto', at640(outputs));
    expect(dec.family).toBe(family);
    expect(dec.numClasses).toBe(classes);
  });

  it('uses the configured strides (P6 models: 8/16/32/64)', () => {
    const A = 80 * 80 + 40 * 40 + 20 * 20 + 10 * 10;
    expect(createDecoder('auto', at640([f32('output0', 1, 3 * A, 85)], { strides: [8, 16, 32, 64] })).family).toBe('yolov5');
    expect(createDecoder('auto', at640([f32('output0', 1, 84, A)], { strides: [8, 16, 32, 64] })).maxCandidates).toBe(A);
  });

  it('takes numClasses when given and checks it against the shape', () => {
    expect(createDecoder('auto', at640([f32('output0', 1, 84, 8400)], { numClasses: 80 })).numClasses).toBe(80);
    expect(createDecoder('auto', at640([f32('output0', 1, 300, 6)], { numClasses: 3 })).numClasses).toBe(3);
    expect(shapeError(() => createDecoder('auto', at640([f32('output0', 1, 84, 8400)], { numClasses: 3 })))).toMatch(/output0 \[1, 84, 8400\] carries 80 classes, 3 were configured/);
  });

  it('lists every accepted layout and the shapes found when nothing fits', () => {
    const msg = shapeError(() => createDecoder('auto', at640([f32('output0', 1, 10, 7), { name: 'aux', dims: [1, 2], type: 'int64' }])));
    expect(msg).toMatch(/^no decoder fits the model's outputs \(input 640x640\)/);
    expect(msg).toContain('Found: output0 [1, 10, 7] float32, aux [1, 2] int64.');
    for (const line of Object.values(acceptedLayouts(640, 640))) expect(msg).toContain(line);
    expect(msg).toContain('(8400 for 640x640)');
    expect(msg).toContain('(25200 for 640x640)');
  });

  it('cannot tell YOLOv8 channels-last [N, A, 4+C] from YOLOX by shape, but the class count exposes it', () => {
    // [1, 8400, 84] is exactly YOLOX with 79 classes.
    expect(createDecoder('auto', at640([f32('output0', 1, 8400, 84)])).family).toBe('yolox');
    const msg = shapeError(() => createDecoder('auto', at640([f32('output0', 1, 8400, 84)], { numClasses: 80 })));
    expect(msg).toContain('carries 79 classes, 80 were configured (rows of 4+80 look like YOLOv8 channels-last [N, A, 4+C], which is not read');
  });

  it('calls a dynamic-anchor [N, ?, 6] ambiguous and asks for the family', () => {
    const msg = shapeError(() => createDecoder('auto', at640([f32('output0', 'batch', 'anchors', 6)])));
    expect(msg).toMatch(/ambiguous \(output0 \[batch, anchors, 6\] could be end2end or yolov5\); name it explicitly/);
    expect(createDecoder('end2end', at640([f32('output0', 'batch', 'anchors', 6)])).family).toBe('end2end');
    expect(createDecoder('yolov5', at640([f32('output0', 'batch', 'anchors', 6)])).numClasses).toBe(1);
  });

  it('reports an input that is not a multiple of the strides', () => {
    const msg = shapeError(() => createDecoder('auto', { inputWidth: 100, inputHeight: 100, outputs: [f32('output0', 1, 84, 8400)] }));
    expect(msg).toContain('none: 100x100 is not a multiple of every stride');
  });
});

describe('createDecoder with an explicit family', () => {
  it('wins over detection where shapes allow both (dynamic A: yolox, not yolov5)', () => {
    const outputs = [f32('output', 'batch', 'anchors', 85)];
    expect(createDecoder('auto', at640(outputs)).family).toBe('yolov5');
    const dec = createDecoder('yolox', at640(outputs));
    expect(dec.family).toBe('yolox');
    expect(dec.maxCandidates).toBe(8400);
  });

  it('picks the first output the family can read', () => {
    const dec = createDecoder('yolov8', at640([f32('aux', 1, 2), f32('output0', 1, 84, 8400)]));
    expect(dec.outputNames).toEqual(['output0']);
  });

  it("rejects shapes the family cannot read, with that family's layout only", () => {
    const msg = shapeError(() => createDecoder('yolov5', at640([f32('output0', 1, 8400, 85)])));
    expect(msg).toMatch(/^the yolov5 decoder does not fit the model's outputs \(input 640x640\)/);
    expect(msg).toContain('Found: output0 [1, 8400, 85] float32.');
    expect(msg).toContain('It accepts:\n  yolov5: [N, A, 5+C] with A = 3·Σ(W/s·H/s)');
    expect(msg).not.toContain('yolov8:');
    expect(shapeError(() => createDecoder('end2end-split', at640([f32('output0', 1, 300, 6)])))).toContain('end2end-split: num_dets [N,1]');
  });

  it('needs numClasses when the class dim is dynamic', () => {
    expect(shapeError(() => createDecoder('yolov8', at640([f32('output0', 'batch', 'channels', 8400)])))).toContain('is dynamic; configure numClasses');
    expect(createDecoder('yolov8', at640([f32('output0', 'batch', 'channels', 8400)], { numClasses: 2 })).numClasses).toBe(2);
  });

  it('rejects an unknown family name', () => {
    expect(shapeError(() => createDecoder('yolov9' as Family, at640([f32('output0', 1, 84, 8400)])))).toContain('unknown decoder family "yolov9"');
  });
});

describe('decoders on hand-made outputs', () => {
  it('yolov8 and yolov5 reject an image index past the batch', () => {
    const v8 = createDecoder('auto', { inputWidth: 64, inputHeight: 64, outputs: [f32('o', 1, 6, 84)] });
    expect(shapeError(() => v8.decode([new Float32Array(6 * 84)], 1, 0.5, new Candidates(84)))).toContain('image 1 needs 1008');
    const v5 = createDecoder('auto', { inputWidth: 64, inputHeight: 64, outputs: [f32('o', 1, 252, 7)] });
    expect(shapeError(() => v5.decode([new Float32Array(252 * 7)], 1, 0.5, new Candidates(252)))).toContain('image 1 needs');
  });

  it('stop at the capacity of the candidates they are given', () => {
    const v8 = createDecoder('auto', { inputWidth: 64, inputHeight: 64, outputs: [f32('o', 1, 5, 84)] });
    const out = new Float32Array(5 * 84).fill(1); // every anchor scores 1
    expect(v8.decode([out], 0, 0.5, new Candidates(84))).toBe(84);
    expect(v8.decode([out], 0, 0.5, new Candidates(10))).toBe(10);
  });

  it('end2end [N, K, 6] with K dynamic splits images by a fixed N, and refuses image > 0 when N is dynamic too', () => {
    const rows = new Float32Array([1, 1, 2, 2, 0.9, 3, 0, 0, 0, 0, 0, 0, 5, 5, 6, 6, 0.8, 4, 0, 0, 0, 0, 0, 0]);
    const fixedN = createDecoder('end2end', at640([f32('o', 2, 'k', 6)]));
    const c = new Candidates(fixedN.maxCandidates);
    expect(fixedN.decode([rows], 1, 0.5, c)).toBe(1);
    expect(Array.from(c.xyxy.subarray(0, 4))).toEqual([5, 5, 6, 6]);
    expect(c.classId[0]).toBe(4);
    const dynamic = new End2EndDecoder({ layout: 'xyxy-score-class' });
    expect(dynamic.maxCandidates).toBe(1000);
    expect(dynamic.decode([rows], 0, 0.5, c)).toBe(2); // batch 1 assumed: all four rows are image 0
    expect(shapeError(() => dynamic.decode([rows], 1, 0.5, c))).toContain('both N and K dynamic');
  });

  it('end2end-split reads float class ids and caps num_dets at K', () => {
    const dec = createDecoder('auto', at640([f32('num_dets', 1, 1), f32('boxes', 1, 2, 4), f32('scores', 1, 2), f32('classes', 1, 2)]));
    expect(dec.family).toBe('end2end-split');
    const c = new Candidates(dec.maxCandidates);
    const n = dec.decode([new Float32Array([9]), new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), new Float32Array([0.5, 0.6]), new Float32Array([2, 7])], 0, 0.1, c);
    expect(n).toBe(2);
    expect(Array.from(c.classId.subarray(0, 2))).toEqual([2, 7]);
  });

  it('end2end decoders: a class id that is not a whole number ≥ 0 (NaN, ±Infinity, 2^32, -0.9, 1.5) is dropped as invalid, never read as class 0', async () => {
    const { selectDetections } = await import('../../src/postprocess/select.js');
    const bad = [NaN, 2 ** 32, -0.9, Infinity, -Infinity, 1.5];
    // [N, K, 6]: one good row (class 2) and one row per bad class id, all scoring 0.9, boxes apart.
    const rows = [[0, 0, 10, 10, 0.9, 2], ...bad.map((k, i) => [100 * (i + 1), 0, 100 * (i + 1) + 10, 10, 0.9, k])];
    const e2e = createDecoder('end2end', at640([f32('o', 1, rows.length, 6)]));
    const c = new Candidates(e2e.maxCandidates);
    const n = e2e.decode([new Float32Array(rows.flat())], 0, 0.5, c);
    const d = selectDetections(c, n, { numClasses: 80, iouThreshold: 0.45, maxDetections: 100, preNmsTopK: 1000, classAgnostic: false });
    expect(Array.from(d.classId)).toEqual([2]);
    // The split form, with float class ids.
    const split = createDecoder('auto', at640([f32('num_dets', 1, 1), f32('boxes', 1, 7, 4), f32('scores', 1, 7), f32('classes', 1, 7)]));
    const c2 = new Candidates(split.maxCandidates);
    const n2 = split.decode([new Float32Array([7]), new Float32Array(rows.flatMap((r) => r.slice(0, 4))), new Float32Array(7).fill(0.9), new Float32Array([2, ...bad])], 0, 0.5, c2);
    expect(Array.from(selectDetections(c2, n2, { numClasses: 80, iouThreshold: 0.45, maxDetections: 100, preNmsTopK: 1000, classAgnostic: false }).classId)).toEqual([2]);
  });
});
