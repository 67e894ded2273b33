import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelManifest } from '../../src/assets/catalog.js';
import type { ModelManifest } from '../../src/config/schema.js';
import { isArgusError } from '../../src/core/errors.js';
import { Detector } from '../../src/inference/detector.js';
import { inspectModel } from '../../src/models/inspect.js';
import { MIRROR, MODEL } from '../helpers/assets.js';
import { detectFile } from '../helpers/detect.js';
import { writeConstantModel } from '../helpers/onnx.js';
import { writeModel } from '../helpers/onnx-graphs.js';

let manifest: ModelManifest;
let detector: Detector;
const logs: string[] = [];

beforeAll(async () => {
  manifest = (await loadModelManifest('yolox-nano')).manifest;
  // Asks for CUDA first: there is no CUDA provider library on CPU machines, so this proves the fallback.
  detector = await Detector.load(manifest, MODEL, { providers: ['cuda', 'cpu'], intraOpThreads: 2, warmupRuns: 1, log: (m) => logs.push(m) });
});
afterAll(() => detector?.release());

describe('Detector with the real YOLOX-Nano', () => {
  it('falls back from an unavailable provider to CPU and says which one runs', () => {
    expect(detector.provider).toBe('cpu');
    expect(logs).toContain('execution provider cuda unavailable, falling back');
    expect(logs).toContain('inference runs on execution provider cpu');
  });

  it('reads input and output names from the session', () => {
    expect(detector.inputName).toBe('images');
    expect(detector.decoder.outputNames).toEqual(['output']);
    expect(detector.decoder.family).toBe('yolox');
  });

  // People are visible in these COCO images (checked by eye: a man by a TV, a group with
  // umbrellas, a skier, a surfer, a woman behind bananas, people at a market).
  const withPeople = ['000000000139.jpg', '000000001268.jpg', '000000002532.jpg', '000000005193.jpg', '000000006460.jpg', '000000008844.jpg'];
  it.each(withPeople)('finds a person (score > 0.5) in %s, with boxes inside the image', async (file) => {
    const [r] = await detectFile(detector, join(MIRROR, 'images', file));
    const { detections: d, frame } = r;
    const people = Array.from(d.classId).map((c, i) => ({ c, s: d.confidence[i] })).filter((x) => x.c === 0 && x.s > 0.5);
    expect(people.length).toBeGreaterThan(0);
    const { srcWidth: w, srcHeight: h } = frame.letterbox;
    for (let i = 0; i < d.length; i++) {
      const [x1, y1, x2, y2] = d.xyxy.subarray(i * 4, i * 4 + 4);
      expect(x1).toBeGreaterThanOrEqual(0);
      expect(y1).toBeGreaterThanOrEqual(0);
      expect(x2).toBeLessThanOrEqual(w);
      expect(y2).toBeLessThanOrEqual(h);
      expect(x2).toBeGreaterThan(x1);
      expect(y2).toBeGreaterThan(y1);
    }
  });

  // Zebras and elephants: animals, no people.
  it.each(['000000001818.jpg', '000000007108.jpg'])('finds no person in %s', async (file) => {
    const [r] = await detectFile(detector, join(MIRROR, 'images', file));
    const people = Array.from(r.detections.classId).filter((c, i) => c === 0 && r.detections.confidence[i] > 0.5);
    expect(people).toHaveLength(0);
    expect(r.detections.length).toBeGreaterThan(0);
  });

  it('finds nothing in a flat grey frame', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-grey-'));
    const grey = join(dir, 'grey.png');
    const { execFileSync } = await import('node:child_process');
    const { defaultFfmpegPath } = await import('../../src/sources/ffmpeg-path.js');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=0x808080:size=640x480', '-frames:v', '1', grey]);
    const [r] = await detectFile(detector, grey);
    expect(r.detections.length).toBe(0);
  });
});

describe('Detector load errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-model-'));

  it('a missing model file → VAP_ERR_MODEL_LOAD naming it', async () => {
    const e = await Detector.load(manifest, join(dir, 'missing.onnx'), { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_LOAD')).toBe(true);
    expect((e as Error).message).toBe(`model "yolox-nano": file not found: ${join(dir, 'missing.onnx')}`);
  });

  it('a named pipe, a device or a folder given as the model → VAP_ERR_MODEL_LOAD at once (ONNX Runtime waited on a pipe for ever, Ctrl-C and all)', async () => {
    const { execFileSync } = await import('node:child_process');
    const fifo = join(dir, 'model.onnx.fifo');
    execFileSync('mkfifo', [fifo]);
    const load = (p: string) => Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    for (const p of [fifo, '/dev/zero']) {
      const e = await load(p);
      expect(isArgusError(e, 'VAP_ERR_MODEL_LOAD')).toBe(true);
      expect((e as Error).message).toBe(`model "yolox-nano": not a regular file (a named pipe, a socket or a device): give the model as a file: ${p}`);
    }
    expect((await load(dir)) as Error).toMatchObject({ code: 'VAP_ERR_MODEL_LOAD', message: `model "yolox-nano": a folder, not a model file: ${dir}` });
    await expect(inspectModel(fifo)).rejects.toMatchObject({ code: 'VAP_ERR_MODEL_LOAD', message: `${fifo}: not a regular file (a named pipe, a socket or a device): give the model as a file` });
  });

  it('a file that is not ONNX → VAP_ERR_MODEL_LOAD', async () => {
    const p = join(dir, 'not-a-model.onnx');
    writeFileSync(p, 'definitely not protobuf');
    const e = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_LOAD')).toBe(true);
    expect((e as Error).message).toMatch(/ONNX Runtime cannot load .*not-a-model\.onnx/);
  });

  it('a model whose output does not fit the decoder → VAP_ERR_MODEL_SHAPE showing both shapes', async () => {
    const p = join(dir, 'v8-like.onnx');
    writeConstantModel(p, { inputShape: [1, 3, 416, 416], outputShape: [1, 84, 3549] });
    const e = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    expect((e as Error).message).toMatch(/the yolox decoder does not fit the model's outputs[\s\S]*Found: output \[1, 84, 3549\] float32[\s\S]*3549 for 416x416/);
  });

  it('a model whose input is not the manifest size → VAP_ERR_MODEL_SHAPE', async () => {
    const p = join(dir, 'small-input.onnx');
    writeConstantModel(p, { inputShape: [1, 3, 320, 320], outputShape: [1, 3549, 85] });
    const e = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    expect((e as Error).message).toMatch(/input "images" has shape \[1, 3, 320, 320\], the manifest's pre-processing makes \[1, 3, 416, 416\]/);
  });

  it('a channels-last (NHWC) or one-channel input → VAP_ERR_MODEL_SHAPE saying so (it said the pre-processing makes [1, 3, 64, 3], its W taken for H)', async () => {
    const names = { names: "{0: 'person', 1: 'car'}" };
    const cases: [number[], string][] = [
      [[1, 64, 64, 3], 'has shape [1, 64, 64, 3], the manifest\'s pre-processing makes [1, 3, 64, 3]: it is channels-last (NHWC, [N, H, W, C]); argus feeds channels-first [N, 3, H, W]: export the model with NCHW input'],
      [[1, 1, 64, 64], 'has shape [1, 1, 64, 64], the manifest\'s pre-processing makes [1, 3, 64, 64]: it takes 1 channel (greyscale); argus feeds 3 (colour)'],
    ];
    for (const [dims, says] of cases) {
      const p = join(dir, `input-${dims.join('x')}.onnx`);
      writeModel(p, { input: { dims }, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: names });
      const e = await Detector.load(undefined, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: 'VAP_ERR_MODEL_SHAPE', message: `model "input-${dims.join('x')}" (${p}): input "images" ${says}` });
    }
  });

  it('an image input that is not float (a uint8 export) or a second required input (scale_factor) → VAP_ERR_MODEL_SHAPE at load, naming them, not a failure of every frame', async () => {
    const yolox = { dims: [1, 3549, 85] };
    const u8 = join(dir, 'uint8-input.onnx');
    writeModel(u8, { input: { dims: [1, 3, 416, 416], type: 'uint8' }, outputs: [{ name: 'output', ...yolox }] });
    const two = join(dir, 'two-inputs.onnx');
    writeModel(two, { input: { dims: [1, 3, 416, 416] }, extraInputs: [{ name: 'scale_factor', dims: [1, 2] }], outputs: [{ name: 'output', ...yolox }] });
    const e1 = await Detector.load(manifest, u8, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e1, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    expect((e1 as Error).message).toBe(`model "yolox-nano" (${u8}): input "images" takes uint8; argus feeds float32 (or float16) images, normalised as the manifest says`);
    const e2 = await Detector.load(manifest, two, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(isArgusError(e2, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    expect((e2 as Error).message).toContain('besides the image "images", it requires "scale_factor" (float32[1, 2]); argus feeds only the image');
    // The same graphs without the extra input and with a float input load and run.
    const ok = join(dir, 'float-input.onnx');
    writeModel(ok, { input: { dims: [1, 3, 416, 416] }, outputs: [{ name: 'output', ...yolox }] });
    const d = await Detector.load(manifest, ok, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1 });
    await d.release();
  });

  it('a fixed batch dimension of 0 or over 64 → VAP_ERR_MODEL_SHAPE at load naming the input (100000 took a 5 GB tensor and 46 s a frame; 0 failed every run)', async () => {
    const names = { names: "{0: 'person', 1: 'car'}" };
    const load = (p: string) => Detector.load(undefined, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1 }).catch((x: unknown) => x);
    for (const b of [0, 65, 100_000]) {
      const p = join(dir, `batch-${b}.onnx`);
      writeModel(p, { input: { dims: [b, 3, 64, 64] }, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: names });
      const e = await load(p);
      expect(e, `batch ${b}`).toMatchObject({
        code: 'VAP_ERR_MODEL_SHAPE',
        message: `model "batch-${b}" (${p}): input "images" [${b}, 3, 64, 64] has a fixed batch dimension of ${b}; argus runs 1 to 64 images at once (model.batch.maxBatch): export the model with batch 1 or a dynamic batch`,
      });
      expect(await inspectModel(p)).toContain(`batch:         fixed ${b} (refused at load: argus runs 1 to 64 images at once)`);
    }
    // 64, the most maxBatch takes, still loads and runs.
    const ok = join(dir, 'batch-64.onnx');
    writeModel(ok, { input: { dims: [64, 3, 64, 64] }, outputs: [{ name: 'output0', dims: [1, 4, 6] }], metadata: names });
    const d = (await load(ok)) as Detector;
    expect(d.maxBatch).toBe(64);
    await d.release();
  });

  it('a file whose metadata names list a label twice → VAP_ERR_MODEL_LOAD naming it and both classes (a zone of helmets counted class 0 only); inspect shows the repeat', async () => {
    const p = join(dir, 'repeated-names.onnx');
    const A = 8 * 8 + 4 * 4 + 2 * 2;
    writeModel(p, { input: { dims: [1, 3, 64, 64] }, outputs: [{ name: 'output0', dims: [1, 4 + 3, A] }], metadata: { names: "{0: 'helmet', 1: 'head', 2: 'helmet'}", imgsz: '[64, 64]' } });
    const e = await Detector.load(undefined, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 }).catch((x: unknown) => x);
    expect(e).toMatchObject({
      code: 'VAP_ERR_MODEL_LOAD',
      message: `model ${p}: its metadata "names" lists "helmet" twice (classes 0 and 2): zones, lines and rules name classes by label, so class 2 would never be counted as it. Give a manifest of your own with unique labels beside the file (model: { manifest: my-model.yaml, path: ${p} })`,
    });
    expect(await inspectModel(p)).toContain('labels:        3 (from metadata names): helmet, head, helmet ("helmet" twice, classes 0 and 2: refused at load; a manifest of your own lists unique labels)');
    // A manifest's own labels replace the file's names: the model loads.
    const own = { ...manifest, name: 'own', preprocess: { ...manifest.preprocess, width: 64, height: 64 }, decoder: { type: 'yolov8' as const, strides: [8, 16, 32] }, labels: ['helmet', 'head', 'vest'] };
    const d = await Detector.load(own, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1 });
    expect(d.labels).toEqual(['helmet', 'head', 'vest']);
    await d.release();
  });

  it('a model that loads but fails to run → VAP_ERR_MODEL_RUN, on the main thread and in a worker', async () => {
    const p = join(dir, 'fails-at-run.onnx');
    // Dynamic input dims: ONNX Runtime cannot tell at load that the Reshape will fail.
    writeModel(p, { input: { dims: ['batch', 3, 'height', 'width'] }, failAtRun: true, outputs: [{ name: 'output', dims: [1, 3549, 85] }] });
    for (const workers of [0, 1]) {
      const e = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1, workers }).catch((x: unknown) => x);
      expect(isArgusError(e, 'VAP_ERR_MODEL_RUN'), `workers ${workers}: ${String(e)}`).toBe(true);
      expect((e as Error).message).toMatch(/^ONNX Runtime run failed: .*reshape/i);
    }
  });

  it('decodes a graph with a known output exactly, through the whole post-processing', async () => {
    // One strong "dog" (class 16) box at anchor 270 (stride 8, cell x 10, y 5):
    // cx = (0.5 + 10)·8 = 84, cy = (0.5 + 5)·8 = 44, w = e^ln2·8 = 16, h = e^0·8 = 8 → [76, 40, 92, 48].
    const out = new Float32Array(3549 * 85);
    out.set([0.5, 0.5, Math.log(2), 0, 1], 270 * 85);
    out[270 * 85 + 5 + 16] = 0.9;
    const p = join(dir, 'const.onnx');
    writeConstantModel(p, { inputShape: [1, 3, 416, 416], outputShape: [1, 3549, 85], values: out });
    const det = await Detector.load(manifest, p, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 1 });
    const img = join(dir, 'frame.png');
    const { execFileSync } = await import('node:child_process');
    const { defaultFfmpegPath } = await import('../../src/sources/ffmpeg-path.js');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'color=c=black:size=832x468', '-frames:v', '1', img]);
    const [r] = await detectFile(det, img);
    // 832x468 → scale 0.5: the model box is twice as large in source pixels.
    expect(r.detections.length).toBe(1);
    expect(Array.from(r.detections.xyxy)).toEqual([152, 80, 184, 96]);
    expect(r.detections.classId[0]).toBe(16);
    expect(r.detections.confidence[0]).toBeCloseTo(0.9, 6);
    await det.release();
  });
});
