import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { MODEL_RUN_TIMEOUT_MS } from '../helpers/cli.js';
import { writeModel } from '../helpers/onnx-graphs.js';

const ROOT = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'argus-byo-'));

/** An Ultralytics-style YOLOv8 export, 640x640, 3 classes, whose output is one known box. */
function yolov8Model(): string {
  const A = 80 * 80 + 40 * 40 + 20 * 20;
  const C = 3;
  const out = new Float32Array((4 + C) * A);
  const set = (row: number, anchor: number, v: number) => (out[row * A + anchor] = v);
  // Anchor 1000: a "forklift" (class 2) centred at (320, 200), 100 x 80 model pixels, score 0.9.
  [320, 200, 100, 80].forEach((v, r) => set(r, 1000, v));
  set(4 + 2, 1000, 0.9);
  const p = join(dir, 'yard.onnx');
  writeModel(p, {
    input: { name: 'images', dims: [1, 3, 640, 640] },
    outputs: [{ name: 'output0', dims: [1, 4 + C, A], values: out }],
    metadata: { names: "{0: 'person', 1: 'pallet', 2: 'forklift'}", imgsz: '[640, 640]', stride: '32', task: 'detect', author: 'Ultralytics' },
    producerName: 'pytorch',
  });
  return p;
}

describe('bring your own model (an Ultralytics YOLOv8 export given by path alone)', () => {
  it('argus models inspect says what it found', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin/argus.js'), 'models', 'inspect', yolov8Model()], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^outputs: +output0 float32 \[1, 7, 8400\]$/m);
    expect(r.stdout).toMatch(/^decoder: +yolov8, 3 classes/m);
    expect(r.stdout).toMatch(/^input size: +640x640 \(from metadata imgsz\)$/m);
    expect(r.stdout).toMatch(/^preprocess: +letterbox center, pad 114, RGB, scale 0\.003922$/m);
    expect(r.stdout).toMatch(/^labels: +3 \(from metadata names\): person, pallet, forklift$/m);
  }, MODEL_RUN_TIMEOUT_MS);

  it('runs in the pipeline: labels, input size, pre-processing and decoder all come from the file', async () => {
    const out = join(dir, 'out.jsonl');
    const config = PipelineSchema.parse({ sources: [{ id: 'yard', uri: PERSON_VIDEO, rate: 'fast' }], model: { path: yolov8Model(), warmupRuns: 1 }, tracking: { enabled: false } });
    const summary = await runPipeline(config, { maxFrames: 5, jsonl: out, status: false });
    expect(summary.frames).toBe(5);
    const msgs = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // 768x432 → 640 wide, centred: scale 640/768, pad y = (640 − 360) / 2 = 140.
    // Model box centre (320, 200) ± (50, 40) → source x (270..370)/s, y (160..240 − 140)/s.
    const s = 640 / 768;
    for (const m of msgs) {
      expect(m.model.name).toBe('yard');
      expect(m.detections).toHaveLength(1);
      const d = m.detections[0];
      expect([d.label, d.classId, d.score]).toEqual(['forklift', 2, 0.9]);
      expect(d.box[0]).toBeCloseTo(270 / s, 1);
      expect(d.box[1]).toBeCloseTo((160 - 140) / s, 1);
      expect(d.box[2]).toBeCloseTo(370 / s, 1);
      expect(d.box[3]).toBeCloseTo((240 - 140) / s, 1);
    }
  }, MODEL_RUN_TIMEOUT_MS); // bounds a hang only
});
