import { describe, expect, it } from 'vitest';
import {
  boxIou,
  compareWithReference,
  detectArgs,
  formatDifferences,
  matchDetections,
  parseBenchReferenceArgs,
  parseDetectOutput,
  parseReferenceOutput,
  percentOf,
  referenceCommand,
  type FileDetections,
  type RefDetection,
} from '../../src/bench/reference.js';

const det = (classId: number, score: number, box: [number, number, number, number]): RefDetection => ({ classId, score, box });
const file = (name: string, detections: RefDetection[]): FileDetections => ({ file: name, width: 640, height: 480, detections });

const person = det(0, 0.8, [100, 100, 200, 300]);
const car = det(2, 0.6, [300, 200, 400, 260]);

describe('reference matcher', () => {
  it('boxIou: identical boxes 1, disjoint 0, half-overlapping 1/3', () => {
    expect(boxIou([0, 0, 10, 10], [0, 0, 10, 10])).toBe(1);
    expect(boxIou([0, 0, 10, 10], [20, 20, 30, 30])).toBe(0);
    expect(boxIou([0, 0, 10, 10], [5, 0, 15, 10])).toBeCloseTo(50 / 150, 12);
  });

  it('identical detections are all exact, nothing missing or extra', () => {
    const c = compareWithReference([file('a.jpg', [person, car])], [file('a.jpg', [{ ...car }, { ...person }])]);
    expect(c.counts).toEqual({ reference: 2, argus: 2, exact: 2, agree: 2, missing: 0, extra: 0 });
    expect(c.files).toEqual([]);
  });

  it('a box shifted a little agrees but is not exact; shifted far it is missing and the argus box extra', () => {
    // IoU of a 100×200 box shifted 10 px right: 90·200 / (2·20000 − 18000) = 0.818.
    const near = compareWithReference([file('a.jpg', [person])], [file('a.jpg', [det(0, 0.8, [110, 100, 210, 300])])]);
    expect(near.counts).toMatchObject({ exact: 0, agree: 1, missing: 0, extra: 0 });
    expect(near.files[0].inexact[0].iou).toBeCloseTo(18000 / 22000, 6);
    // Shifted 60 px: IoU 40/160 = 0.25 < 0.5.
    const far = compareWithReference([file('a.jpg', [person])], [file('a.jpg', [det(0, 0.8, [160, 100, 260, 300])])]);
    expect(far.counts).toMatchObject({ exact: 0, agree: 0, missing: 1, extra: 1 });
  });

  it('a score off by more than 0.01 is not exact, within 0.01 it is', () => {
    expect(compareWithReference([file('a.jpg', [person])], [file('a.jpg', [{ ...person, score: 0.815 }])]).counts.exact).toBe(0);
    expect(compareWithReference([file('a.jpg', [person])], [file('a.jpg', [{ ...person, score: 0.805 }])]).counts.exact).toBe(1);
  });

  it('the same box with another class does not match: missing and extra', () => {
    const c = compareWithReference([file('a.jpg', [person])], [file('a.jpg', [{ ...person, classId: 1 }])]);
    expect(c.counts).toMatchObject({ exact: 0, agree: 0, missing: 1, extra: 1 });
    expect(c.files[0].missing).toEqual([person]);
    expect(c.files[0].extra).toEqual([{ ...person, classId: 1 }]);
  });

  it('an argus detection the reference lacks is extra; a lacking one is missing', () => {
    const extra = compareWithReference([file('a.jpg', [person])], [file('a.jpg', [person, car])]);
    expect(extra.counts).toMatchObject({ exact: 1, missing: 0, extra: 1 });
    expect(extra.files[0].extra).toEqual([car]);
    const missing = compareWithReference([file('a.jpg', [person, car])], [file('a.jpg', [person])]);
    expect(missing.counts).toMatchObject({ exact: 1, missing: 1, extra: 0 });
    expect(missing.files[0].missing).toEqual([car]);
  });

  it('one to one: two reference boxes cannot both take one argus box; the higher-scored takes its best', () => {
    const a = det(0, 0.9, [0, 0, 100, 100]);
    const b = det(0, 0.5, [5, 0, 105, 100]);
    const m = matchDetections([b, a], [det(0, 0.9, [0, 0, 100, 100])]);
    expect(m.pairs).toHaveLength(1);
    expect(m.pairs[0].reference).toBe(a);
    expect(m.missing).toEqual([b]);
    expect(m.extra).toEqual([]);
  });

  it('an image absent from argus counts all its detections missing; one absent from the reference, extra', () => {
    const c = compareWithReference([file('a.jpg', [person, car])], [file('b.jpg', [car])]);
    expect(c.counts).toMatchObject({ reference: 2, argus: 1, exact: 0, missing: 2, extra: 1 });
    expect(c.files.map((f) => [f.file, f.absentFrom])).toEqual([
      ['a.jpg', 'argus'],
      ['b.jpg', 'reference'],
    ]);
  });

  it('reference boxes past the picture are clamped to it before matching, as argus clamps its own', () => {
    // The demo's box runs 40 px past the right edge of a 640-wide picture; argus's stops at 640.
    const ref = det(0, 0.8, [560, 100, 680, 300]);
    const c = compareWithReference([file('a.jpg', [ref])], [file('a.jpg', [det(0, 0.8, [560, 100, 640, 300])])]);
    expect(c.counts.exact).toBe(1);
    expect(boxIou(ref.box, [560, 100, 640, 300])).toBeLessThan(0.9);
  });

  it('percentages are of the reference detections', () => {
    const c = compareWithReference([file('a.jpg', [person, car])], [file('a.jpg', [person])]);
    expect(percentOf(c.counts.exact, c.counts)).toBe(50);
  });

  it('the failure message names the file and each difference with its class label', () => {
    const c = compareWithReference([file('a.jpg', [person, car])], [file('a.jpg', [det(0, 0.7, [110, 100, 210, 300]), det(5, 0.4, [0, 0, 10, 10])])]);
    const text = formatDifferences(c, ['person', 'bicycle', 'car', 'motorcycle', 'airplane', 'bus']);
    expect(text).toContain('a.jpg:');
    expect(text).toMatch(/inexact {2}reference person 0\.800 .* argus person 0\.700 .* IoU 0\.818, score -0\.100/);
    expect(text).toMatch(/missing {2}reference car 0\.600 \[300\.0, 200\.0, 400\.0, 260\.0\]/);
    expect(text).toMatch(/extra {4}argus bus 0\.400/);
  });
});

describe('reference outputs and commands', () => {
  it('parses the reference script output and argus detect --json (one frame per image)', () => {
    const ref = parseReferenceOutput(JSON.stringify({ files: [{ file: 'a.jpg', width: 640, height: 480, detections: [person] }] }));
    expect(ref).toEqual([file('a.jpg', [person])]);
    const mine = parseDetectOutput(JSON.stringify({ model: 'yolox-nano', files: [{ file: 'a.jpg', width: 640, height: 480, frames: [{ index: 0, pts: 0, detections: [{ ...person, label: 'person' }] }] }] }));
    expect(mine).toEqual([file('a.jpg', [{ ...person, label: 'person' }])]);
  });

  it('refuses output it cannot compare, naming the producer', () => {
    expect(() => parseReferenceOutput('Traceback')).toThrow(/yolox_reference\.py: not JSON/);
    expect(() => parseDetectOutput(JSON.stringify({ files: [{ file: 'a.gif', width: 1, height: 1, frames: [] }] }))).toThrow(/a\.gif: 0 frames/);
    expect(() => parseDetectOutput(JSON.stringify({ files: [{ file: 'a.jpg', width: 1, height: 1, frames: [{ index: 0, detections: [{ classId: 0, score: 1, box: [1, 2] }] }] }] }))).toThrow(/argus detect --json: unexpected output: files\.0\.frames\.0\.detections\.0\.box/);
  });

  it('runs the reference with argus settings and argus detect with the score', () => {
    const [py, args] = referenceCommand({ venv: '/v', model: '/m.onnx', inputHeight: 416, inputWidth: 416, score: 0.3, iouThreshold: 0.45, classAgnostic: false }, ['a.jpg']);
    expect(py).toBe('/v/bin/python');
    expect(args.slice(1)).toEqual(['--demo', '/v/yolox-demo', '--model', '/m.onnx', '--score', '0.3', '--input-shape', '416,416', '--nms', '0.45', 'a.jpg']);
    expect(referenceCommand({ venv: '/v', model: '/m.onnx', inputHeight: 416, inputWidth: 416, score: 0.5, iouThreshold: 0.45, classAgnostic: true }, [])[1]).toContain('--class-agnostic');
    expect(referenceCommand({ venv: '/v', model: '/m.onnx', inputHeight: 416, inputWidth: 416, score: 0.5, iouThreshold: 0.45, classAgnostic: false, tensors: '/t' }, ['a.jpg'])[1].slice(-3)).toEqual(['--tensors', '/t', 'a.jpg']);
    expect(detectArgs(['a.jpg', 'b.jpg'], 0.5)).toEqual(['detect', '--json', '--score', '0.5', 'a.jpg', 'b.jpg']);
  });

  it('bench:reference arguments', () => {
    expect(parseBenchReferenceArgs(['--json', 'o.json', '--images', 'x', '--images', 'y'])).toEqual({ json: 'o.json', images: ['x', 'y'] });
    expect(() => parseBenchReferenceArgs(['--json'])).toThrow(/--json needs a value/);
    expect(() => parseBenchReferenceArgs(['--fast'])).toThrow(/unknown argument --fast/);
  });
});
