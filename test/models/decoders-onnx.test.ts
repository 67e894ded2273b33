import { afterAll, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { Candidates } from '../../src/models/decoder.js';
import { float16ToFloat32 } from '../../src/models/fp16.js';
import type { ModelDecoder, OutputData } from '../../src/models/decoder.js';
import { createDecoder } from '../../src/models/registry.js';
import { type GraphSpec, modelDir, runModel } from '../helpers/onnx-graphs.js';

/**
 * Every test builds a small ONNX graph with known constant outputs, runs it with ONNX Runtime,
 * builds the decoder with family 'auto' from the session's own output metadata, and checks the
 * decoded candidates exactly.
 */

const dir = modelDir();
afterAll(() => dir.cleanup());

interface Row {
  box: [number, number, number, number];
  score: number;
  cls: number;
}

/** Decoded candidates of image `b`, in decode order. */
function rows(dec: ModelDecoder, data: OutputData[], b: number, threshold: number): Row[] {
  const c = new Candidates(dec.maxCandidates);
  const n = dec.decode(data, b, threshold, c);
  return Array.from({ length: n }, (_, i) => ({
    box: Array.from(c.xyxy.subarray(i * 4, i * 4 + 4)) as Row['box'],
    score: c.score[i],
    cls: c.classId[i],
  }));
}

function expectRows(actual: Row[], expected: Row[]): void {
  expect(actual.map((r) => [r.box, r.cls])).toEqual(expected.map((r) => [r.box, r.cls]));
  actual.forEach((r, i) => expect(r.score).toBeCloseTo(expected[i].score, 6));
}

/** Runs the graph on a zero input and returns the auto-detected decoder with its inputs. */
async function autoDecode(file: string, spec: GraphSpec, inputShape: number[], extra: { numClasses?: number } = {}) {
  const [, , h, w] = inputShape;
  const run = await runModel(dir.path(file), spec, inputShape);
  const dec = createDecoder('auto', { inputWidth: w, inputHeight: h, outputs: run.infos, ...extra });
  return { dec, data: run.data(dec.outputNames), run };
}

/** A channels-first YOLOv8 output [B, 4 + C, A] with boxes set per (image, anchor). */
function yolov8Output(batch: number, C: number, A: number, boxes: { b?: number; a: number; cxcywh: number[]; scores: Record<number, number> }[]) {
  const ch = 4 + C;
  const v = new Float32Array(batch * ch * A);
  for (const { b = 0, a, cxcywh, scores } of boxes) {
    cxcywh.forEach((x, i) => (v[b * ch * A + i * A + a] = x));
    for (const [k, s] of Object.entries(scores)) v[b * ch * A + (4 + Number(k)) * A + a] = s;
  }
  return v;
}

describe('yolov8 / YOLO11 [N, 4+C, A] on real ONNX graphs', () => {
  it('decodes [1, 84, 8400] at 640: cx,cy,w,h → xyxy, best class, ties to the lower class, under-threshold dropped', async () => {
    const values = yolov8Output(1, 80, 8400, [
      { a: 0, cxcywh: [4, 4, 8, 8], scores: { 0: 0.9, 1: 0.1 } },
      { a: 100, cxcywh: [50, 50, 10, 10], scores: { 5: 0.2 } }, // under 0.25
      { a: 200, cxcywh: [300, 310, 20, 40], scores: { 2: 0.5, 7: 0.5 } }, // tie: class 2
      { a: 6500, cxcywh: [100, 200, 50, 80], scores: { 3: 0.5, 79: 0.6 } },
      { a: 8399, cxcywh: [620, 600, 40, 60], scores: { 17: 0.3 } },
    ]);
    const { dec, data } = await autoDecode('v8.onnx', { input: { dims: [1, 3, 640, 640] }, outputs: [{ name: 'output0', dims: [1, 84, 8400], values }] }, [1, 3, 640, 640]);
    expect(dec.family).toBe('yolov8');
    expect(dec.numClasses).toBe(80);
    expect(dec.maxCandidates).toBe(8400);
    expect(dec.nmsInGraph).toBe(false);
    expect(dec.outputNames).toEqual(['output0']);
    expectRows(rows(dec, data, 0, 0.25), [
      { box: [0, 0, 8, 8], score: 0.9, cls: 0 },
      { box: [290, 290, 310, 330], score: 0.5, cls: 2 },
      { box: [75, 160, 125, 240], score: 0.6, cls: 79 },
      { box: [600, 570, 640, 630], score: 0.3, cls: 17 },
    ]);
    expect(rows(dec, data, 0, 0.55).map((r) => r.cls)).toEqual([0, 79]);
  });

  it('decodes each image of a dynamic batch [batch, 84, anchors] (batch 2, 320x320)', async () => {
    const A = 40 * 40 + 20 * 20 + 10 * 10; // 2100
    const values = yolov8Output(2, 80, A, [
      { b: 0, a: 10, cxcywh: [84, 4, 8, 8], scores: { 0: 0.8 } },
      { b: 1, a: 1700, cxcywh: [100, 60, 32, 16], scores: { 2: 0.7 } },
      { b: 1, a: 2099, cxcywh: [304, 304, 32, 32], scores: { 9: 0.4 } },
    ]);
    const { dec, data, run } = await autoDecode(
      'v8-batch.onnx',
      { input: { dims: ['batch', 3, 'height', 'width'] }, outputs: [{ name: 'output0', dims: ['batch', 84, 'anchors'], shape: [2, 84, A], values }] },
      [2, 3, 320, 320],
    );
    expect(run.infos[0].dims).toEqual(['batch', 84, 'anchors']);
    expect(run.tensors.output0.dims).toEqual([2, 84, A]);
    expect(dec.family).toBe('yolov8');
    expect(dec.maxCandidates).toBe(A);
    expectRows(rows(dec, data, 0, 0.25), [{ box: [80, 0, 88, 8], score: 0.8, cls: 0 }]);
    expectRows(rows(dec, data, 1, 0.25), [
      { box: [84, 52, 116, 68], score: 0.7, cls: 2 },
      { box: [288, 288, 320, 320], score: 0.4, cls: 9 },
    ]);
  });

  it('decodes a float16 output once widened to float32', async () => {
    const A = 2100;
    // Every value is exact in half precision.
    const values = yolov8Output(1, 2, A, [
      { a: 5, cxcywh: [100.5, 20.25, 9, 7], scores: { 1: 0.875 } },
      { a: 2000, cxcywh: [250, 300, 64, 32], scores: { 0: 0.75, 1: 0.125 } },
    ]);
    const run = await runModel(dir.path('v8-fp16.onnx'), { input: { dims: [1, 3, 320, 320] }, outputs: [{ name: 'output0', dims: [1, 6, A], type: 'float16', values }] }, [1, 3, 320, 320]);
    expect(run.infos[0].type).toBe('float16');
    const raw = run.tensors.output0.data;
    expect(raw).toBeInstanceOf(Uint16Array);
    const dec = createDecoder('auto', { inputWidth: 320, inputHeight: 320, outputs: run.infos });
    expect(dec.family).toBe('yolov8');
    expect(dec.numClasses).toBe(2);
    const f32 = float16ToFloat32(raw as Uint16Array, new Float32Array(raw.length));
    expect(Array.from(f32)).toEqual(Array.from(values));
    expectRows(rows(dec, [f32], 0, 0.25), [
      { box: [96, 16.75, 105, 23.75], score: 0.875, cls: 1 },
      { box: [218, 284, 282, 316], score: 0.75, cls: 0 },
    ]);
  });
});

describe('yolov5 / v7 [N, A, 5+C] on real ONNX graphs', () => {
  it('decodes [1, 25200, 85] at 640 with obj × class scores', async () => {
    const A = 25200;
    const values = new Float32Array(A * 85);
    const set = (a: number, box: number[], obj: number, cls: Record<number, number>) => {
      values.set([...box, obj], a * 85);
      for (const [k, s] of Object.entries(cls)) values[a * 85 + 5 + Number(k)] = s;
    };
    set(7, [20, 30, 10, 20], 0.8, { 0: 0.9, 4: 0.3 }); // 0.72, class 0
    set(12000, [320, 320, 100, 50], 0.9, { 1: 0.2 }); // 0.18: objectness passes, product does not
    set(20000, [500, 500, 10, 10], 0.2, { 1: 1 }); // objectness under threshold
    set(25199, [600, 610, 80, 60], 0.5, { 3: 0.6, 79: 0.7 }); // 0.35, class 79
    const { dec, data } = await autoDecode('v5.onnx', { input: { dims: [1, 3, 640, 640] }, outputs: [{ name: 'output0', dims: [1, A, 85], values }] }, [1, 3, 640, 640]);
    expect(dec.family).toBe('yolov5');
    expect(dec.numClasses).toBe(80);
    expect(dec.maxCandidates).toBe(A);
    expectRows(rows(dec, data, 0, 0.25), [
      { box: [15, 20, 25, 40], score: 0.72, cls: 0 },
      { box: [560, 580, 640, 640], score: 0.35, cls: 79 },
    ]);
    expect(rows(dec, data, 0, 0.1)).toHaveLength(4); // 0.18 and 0.2 × 1 come in
  });
});

describe('yolox [N, A, 5+C] through the registry on real ONNX graphs', () => {
  // 64x64, strides 8/16/32: 84 anchors, 3 classes (the rows of test/models/yolox.test.ts).
  const row = 8;
  const image = (rowsByAnchor: Record<number, number[]>) => {
    const v = new Float32Array(84 * row);
    for (const [a, r] of Object.entries(rowsByAnchor)) v.set(r, Number(a) * row);
    return v;
  };
  const img0 = image({ 9: [0.5, 0.25, 0, Math.log(2), 0.9, 0.1, 0.8, 0.2], 69: [0, 0, 0, 0, 0.6, 0.5, 0.1, 0.0], 83: [0, 0, 0, 0, 0.05, 0.9, 0.9, 0.9] });
  // Anchor 83: stride 32, grid (1, 1): cx = cy = (0 + 1) × 32 = 32, w = h = 32.
  const img1 = image({ 83: [0, 0, 0, 0, 0.7, 0, 0, 1] });

  it('is detected from A = Σ grid points and decodes like YoloxDecoder, per image of a batch', async () => {
    const values = new Float32Array([...img0, ...img1]);
    const { dec, data } = await autoDecode(
      'yolox.onnx',
      { input: { dims: ['batch', 3, 64, 64] }, outputs: [{ name: 'output', dims: ['batch', 84, 8], shape: [2, 84, 8], values }] },
      [2, 3, 64, 64],
    );
    expect(dec.family).toBe('yolox');
    expect(dec.numClasses).toBe(3);
    expect(dec.maxCandidates).toBe(84);
    expect(dec.outputNames).toEqual(['output']);
    expectRows(rows(dec, data, 0, 0.25), [
      { box: [8, 2, 16, 18], score: 0.72, cls: 1 },
      { box: [8, 8, 24, 24], score: 0.3, cls: 0 },
    ]);
    expectRows(rows(dec, data, 1, 0.25), [{ box: [16, 16, 48, 48], score: 0.7, cls: 2 }]);
  });

  it('reads [1, 3549, 85] at 416 as yolox, not yolov5', async () => {
    const values = new Float32Array(3549 * 85);
    // Anchor 3548: stride 32, grid (12, 12): cx = cy = (0 + 12) × 32 = 384, w = h = 32.
    values.set([0, 0, 0, 0, 1, 0.5], 3548 * 85);
    const { dec, data } = await autoDecode('yolox416.onnx', { input: { dims: [1, 3, 416, 416] }, outputs: [{ name: 'output', dims: [1, 3549, 85], values }] }, [1, 3, 416, 416]);
    expect(dec.family).toBe('yolox');
    expectRows(rows(dec, data, 0, 0.25), [{ box: [368, 368, 400, 400], score: 0.5, cls: 0 }]);
  });
});

describe('end2end (NMS in the graph) on real ONNX graphs', () => {
  it('reads [1, 100, 6] x1,y1,x2,y2,score,class and skips the zero padding rows', async () => {
    const values = new Float32Array(100 * 6);
    values.set([10, 20, 110, 220, 0.95, 0], 0);
    values.set([300, 300, 400, 380, 0.6, 56], 6);
    values.set([5, 5, 15, 15, 0.3, 2], 12);
    const { dec, data } = await autoDecode('e2e.onnx', { input: { dims: [1, 3, 640, 640] }, outputs: [{ name: 'output0', dims: [1, 100, 6], values }] }, [1, 3, 640, 640]);
    expect(dec.family).toBe('end2end');
    expect(dec.nmsInGraph).toBe(true);
    expect(dec.maxCandidates).toBe(100);
    expect(dec.numClasses).toBe(0);
    const all = [
      { box: [10, 20, 110, 220], score: 0.95, cls: 0 },
      { box: [300, 300, 400, 380], score: 0.6, cls: 56 },
      { box: [5, 5, 15, 15], score: 0.3, cls: 2 },
    ] as Row[];
    expectRows(rows(dec, data, 0, 0), all); // threshold 0: the 97 padding rows still do not count
    expectRows(rows(dec, data, 0, 0.5), all.slice(0, 2));
  });

  it('reads YOLOv7 ONNX Runtime NMS [D, 7] rows batch,x1,y1,x2,y2,class,score, per image', async () => {
    const values = [
      [0, 1, 2, 3, 4, 7, 0.9],
      [1, 10, 20, 30, 40, 1, 0.8],
      [0, 50, 60, 70, 80, 2, 0.4],
      [1, 5, 6, 7, 8, 3, 0.2],
    ].flat();
    const { dec, data } = await autoDecode(
      'v7-ort.onnx',
      { input: { dims: ['batch', 3, 640, 640] }, outputs: [{ name: 'output', dims: ['num_dets', 7], shape: [4, 7], values, batched: false }] },
      [2, 3, 640, 640],
    );
    expect(dec.family).toBe('end2end');
    expect(dec.nmsInGraph).toBe(true);
    expectRows(rows(dec, data, 0, 0.25), [
      { box: [1, 2, 3, 4], score: 0.9, cls: 7 },
      { box: [50, 60, 70, 80], score: 0.4, cls: 2 },
    ]);
    expectRows(rows(dec, data, 1, 0.25), [{ box: [10, 20, 30, 40], score: 0.8, cls: 1 }]);
  });

  const K = 100;
  function splitValues() {
    const boxes = new Float32Array(2 * K * 4);
    const scores = new Float32Array(2 * K);
    const classes = new Int32Array(2 * K);
    const put = (b: number, r: number, box: number[], s: number, c: number) => {
      boxes.set(box, (b * K + r) * 4);
      scores[b * K + r] = s;
      classes[b * K + r] = c;
    };
    put(0, 0, [1, 2, 30, 40], 0.9, 5);
    put(0, 1, [100, 100, 200, 150], 0.3, 0);
    put(0, 2, [7, 7, 9, 9], 0.99, 1); // past num_dets: ignored
    put(1, 0, [60, 70, 80, 90], 0.7, 3);
    return { boxes, scores, classes, num: BigInt64Array.from([2n, 1n]) };
  }
  const expected0: Row[] = [
    { box: [1, 2, 30, 40], score: 0.9, cls: 5 },
    { box: [100, 100, 200, 150], score: 0.3, cls: 0 },
  ];
  const expected1: Row[] = [{ box: [60, 70, 80, 90], score: 0.7, cls: 3 }];

  it('reads the EfficientNMS split form by name (int64 num_dets, int32 classes, batch 2), first num_dets rows only', async () => {
    const v = splitValues();
    const { dec, data, run } = await autoDecode(
      'split.onnx',
      {
        input: { dims: ['batch', 3, 640, 640] },
        outputs: [
          { name: 'num_dets', dims: ['batch', 1], shape: [2, 1], type: 'int64', values: v.num },
          { name: 'det_boxes', dims: ['batch', K, 4], shape: [2, K, 4], values: v.boxes },
          { name: 'det_scores', dims: ['batch', K], shape: [2, K], values: v.scores },
          { name: 'det_classes', dims: ['batch', K], shape: [2, K], type: 'int32', values: v.classes },
        ],
      },
      [2, 3, 640, 640],
    );
    expect(run.tensors.num_dets.data).toBeInstanceOf(BigInt64Array);
    expect(dec.family).toBe('end2end-split');
    expect(dec.nmsInGraph).toBe(true);
    expect(dec.outputNames).toEqual(['num_dets', 'det_boxes', 'det_scores', 'det_classes']);
    expect(dec.maxCandidates).toBe(K);
    expectRows(rows(dec, data, 0, 0.25), expected0);
    expectRows(rows(dec, data, 1, 0.25), expected1);
    expectRows(rows(dec, data, 0, 0.5), expected0.slice(0, 1));
  });

  it('matches the split outputs by shape and type when the names say nothing, in any order', async () => {
    const v = splitValues();
    const { dec, data } = await autoDecode(
      'split-shapes.onnx',
      {
        input: { dims: [2, 3, 640, 640] },
        outputs: [
          { name: 'out_a', dims: [2, K], values: v.scores },
          { name: 'out_b', dims: [2, K], type: 'int64', values: v.classes },
          { name: 'out_c', dims: [2, K, 4], values: v.boxes },
          { name: 'out_d', dims: [2, 1], type: 'int64', values: v.num },
        ],
      },
      [2, 3, 640, 640],
    );
    expect(dec.family).toBe('end2end-split');
    expect(dec.outputNames).toEqual(['out_d', 'out_c', 'out_a', 'out_b']);
    expectRows(rows(dec, data, 0, 0.25), expected0);
    expectRows(rows(dec, data, 1, 0.25), expected1);
  });
});

describe('auto-detection errors on real ONNX graphs', () => {
  it('rejects a [1, 10, 7] output with MODEL_SHAPE, listing the shapes found and what each decoder accepts', async () => {
    const run = await runModel(dir.path('nonsense.onnx'), { input: { dims: [1, 3, 416, 416] }, outputs: [{ name: 'output0', dims: [1, 10, 7] }] }, [1, 3, 416, 416]);
    let err: unknown;
    try {
      createDecoder('auto', { inputWidth: 416, inputHeight: 416, outputs: run.infos });
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    const msg = (err as Error).message;
    expect(msg).toContain('Found: output0 [1, 10, 7] float32');
    expect(msg).toContain('yolox: [N, A, 5+C] with A = Σ(W/s·H/s) for strides 8,16,32 (3549 for 416x416)');
    expect(msg).toContain('yolov8: [N, 4+C, A]');
    expect(msg).toContain('yolov5: [N, A, 5+C] with A = 3·Σ(W/s·H/s) for strides 8,16,32 (10647 for 416x416)');
    expect(msg).toContain('end2end: [N, K, 6] rows x1,y1,x2,y2,score,class');
    expect(msg).toContain('[D, 7] rows batch index,x1,y1,x2,y2,class,score');
    expect(msg).toContain('end2end-split: num_dets [N,1], boxes [N,K,4], scores [N,K], classes [N,K]');
  });
});
