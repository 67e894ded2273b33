import { afterAll, describe, expect, it } from 'vitest';
import { inspectModel } from '../../src/models/inspect.js';
import { MODEL } from '../helpers/assets.js';
import { modelDir, writeModel } from '../helpers/onnx-graphs.js';
import { TERMINAL_CONTROLS, writeHostileModel } from '../helpers/hostile-model.js';

const dir = modelDir();
afterAll(() => dir.cleanup());

describe('argus models inspect', () => {
  it('a manifest name, a YAML file or an empty file given for the ONNX file: says what was given (ONNX Runtime said "file not found", "Protobuf parsing failed", a C++ signature)', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    await expect(inspectModel('yolox-nano')).rejects.toMatchObject({ code: 'VAP_ERR_MODEL_LOAD', message: expect.stringMatching(/^yolox-nano: file not found; "yolox-nano" is the name of a model manifest: inspect takes the ONNX file/) });
    await expect(inspectModel('no-such-model')).rejects.toMatchObject({ message: 'no-such-model: file not found' });
    const d = mkdtempSync(join(tmpdir(), 'argus-inspect-'));
    const yaml = join(d, 'manifest.yaml');
    writeFileSync(yaml, 'version: 1\nfile: x.onnx\n');
    await expect(inspectModel(yaml)).rejects.toMatchObject({ message: expect.stringContaining(`${yaml}: ONNX Runtime cannot load it (a text file, such as a model manifest or a pipeline YAML: inspect takes the ONNX file): `) });
    const empty = join(d, 'empty.onnx');
    writeFileSync(empty, '');
    await expect(inspectModel(empty)).rejects.toMatchObject({ code: 'VAP_ERR_MODEL_LOAD', message: `${empty}: empty (0 bytes), not a model file` });
  });

  it('shows escape sequences in the file’s labels and metadata as text, never as control characters (Unicode kept)', async () => {
    const path = dir.path('hostile.onnx');
    writeHostileModel(path);
    const text = await inspectModel(path);
    expect(text).not.toMatch(TERMINAL_CONTROLS);
    expect(text).toContain('labels:        3 (from metadata names): \\x1b]0;TITLE\\x07\\x1b[2J\\x1b[31mRED, v\\x0btab\\x9b2J, café 人');
    expect(text).toContain('author=x\\x1b[2Ky');
    expect(text.split('\n')[0]).toBe(`file:          ${path}`);
  });

  it('a file without labels says where they come from (it printed `labels: 0 (none in the file): ` and nothing after)', async () => {
    const text = await inspectModel(MODEL); // the official YOLOX-Nano: no names in its metadata
    const line = text.split('\n').find((l) => l.startsWith('labels:'));
    expect(line).toBe(`labels:        none in the file: a manifest lists them (a pipeline: model: { manifest: yolox-nano, path: ${MODEL} } for the official YOLOX files, COCO's 80 classes)`);
  });

  it('a model no decoder fits: what was found and what each decoder accepts, one line each under the field (its line breaks were printed as \\x0a)', async () => {
    const text = await inspectModel(MODEL, 'yolov8'); // YOLOX's [1, 3549, 85] is no YOLOv8 output
    expect(text).not.toContain('\\x0a');
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.startsWith('decoder:       none fits — the yolov8 decoder does not fit'));
    expect(at).toBeGreaterThan(0);
    expect(lines[at + 1]).toBe('               Found: output [1, 3549, 85] float32.');
    expect(lines[at + 2]).toBe('               It accepts:');
    expect(lines.find((l) => l.startsWith('input size:'))).toBeDefined();
  });

  it('a file of another family without labels is not sent to the YOLOX manifest (its decoder and preprocessing: a YOLOv8 file given it is refused at load)', async () => {
    const path = dir.path('v8-no-names.onnx');
    writeModel(path, { input: { dims: [1, 3, 32, 32] }, outputs: [{ name: 'output0', dims: [1, 84, 21] }] });
    const text = await inspectModel(path);
    expect(text).toContain('decoder:       yolov8, 80 classes');
    const line = text.split('\n').find((l) => l.startsWith('labels:'));
    expect(line).toBe('labels:        none in the file: a manifest of your own lists them (labels: [...], with its preprocess and decoder; models/*.yaml show the form)');
  });
});
