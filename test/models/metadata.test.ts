import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { parseNames, parsePythonLiteral, readOnnxMetadata } from '../../src/models/metadata.js';
import { createDecoder } from '../../src/models/registry.js';
import { describeModel } from '../../src/models/describe.js';
import { ModelManifestSchema } from '../../src/config/schema.js';
import { modelDir, writeModel } from '../helpers/onnx-graphs.js';
import { MODEL } from '../helpers/assets.js';

const { onnx } = onnxProto;

const dir = modelDir();
afterAll(() => dir.cleanup());

describe('readOnnxMetadata', () => {
  it('reads an Ultralytics-style model: names, imgsz, stride, task, producer, inputs and outputs', async () => {
    const path = dir.path('ultra.onnx');
    writeModel(path, {
      producerName: 'pytorch',
      input: { dims: ['batch', 3, 640, 480] },
      outputs: [{ name: 'output0', dims: ['batch', 7, 'anchors'], shape: [1, 7, 6300] }],
      metadata: {
        description: 'Ultralytics YOLO11n model trained on custom.yaml',
        author: 'Ultralytics',
        stride: '32',
        task: 'detect',
        batch: '1',
        imgsz: '[640, 480]',
        names: `{0: 'person', 1: "traffic light", 2: 'it\\'s a dog'}`,
        end2end: 'False',
      },
    });
    const m = await readOnnxMetadata(path);
    expect(m.producer).toBe('pytorch');
    expect(m.irVersion).toBe(8);
    expect(m.opset).toBe(13);
    expect(m.names).toEqual(['person', 'traffic light', "it's a dog"]);
    expect(m.imgsz).toEqual([640, 480]);
    expect(m.stride).toBe(32);
    expect(m.task).toBe('detect');
    expect(m.end2end).toBe(false);
    expect(m.props.author).toBe('Ultralytics');
    expect(m.props.names).toBe(`{0: 'person', 1: "traffic light", 2: 'it\\'s a dog'}`);
    expect(m.inputs).toEqual([{ name: 'images', dims: ['batch', 3, 640, 480], elemType: 'float32' }]);
    expect(m.outputs).toEqual([{ name: 'output0', dims: ['batch', 7, 'anchors'], elemType: 'float32' }]);
    // Enough to build the decoder without a session: imgsz is [height, width].
    const dec = createDecoder('auto', {
      inputHeight: m.imgsz![0],
      inputWidth: m.imgsz![1],
      numClasses: m.names!.length,
      outputs: m.outputs.map((o) => ({ name: o.name, dims: o.dims, type: o.elemType })),
    });
    expect(dec.family).toBe('yolov8');
    expect(dec.maxCandidates).toBe(80 * 60 + 40 * 30 + 20 * 15);
  });

  it('reports fp16 and int64 output types, and a model without metadata', async () => {
    const path = dir.path('plain.onnx');
    writeModel(path, {
      outputs: [
        { name: 'num_dets', dims: [1, 1], type: 'int64' },
        { name: 'boxes', dims: [1, 5, 4], type: 'float16' },
      ],
    });
    const m = await readOnnxMetadata(path);
    expect(m.producer).toBe('argus-tests');
    expect(m.props).toEqual({});
    expect(m.names).toBeUndefined();
    expect(m.imgsz).toBeUndefined();
    expect(m.outputs.map((o) => [o.name, o.elemType, o.dims])).toEqual([
      ['num_dets', 'int64', [1, 1]],
      ['boxes', 'float16', [1, 5, 4]],
    ]);
  });

  it('throws MODEL_LOAD for a missing file and for bytes that are not a model', async () => {
    await expect(readOnnxMetadata(dir.path('missing.onnx'))).rejects.toSatisfy((e) => isArgusError(e, 'VAP_ERR_MODEL_LOAD'));
    const junk = dir.path('junk.onnx');
    writeFileSync(junk, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 1, 2]));
    await expect(readOnnxMetadata(junk)).rejects.toSatisfy((e) => isArgusError(e, 'VAP_ERR_MODEL_LOAD'));
  });
});

describe('Ultralytics metadata values', () => {
  // (text, names, why)
  const names: [string, string[] | undefined, string][] = [
    ['{}', undefined, 'empty dict'],
    [`{0: 'person', 1: 'bicycle', 2: 'traffic light'}`, ['person', 'bicycle', 'traffic light'], 'repr of a dict'],
    [`{0: "it's", 1: 'say \\"hi\\"'}`, ["it's", 'say "hi"'], 'both quote styles and escapes'],
    [`{0: 'a', 2: 'c'}`, ['a', '1', 'c'], 'a gap is filled with the index'],
    [`{1: 'b', 0: 'a'}`, ['a', 'b'], 'keys out of order'],
    [`{"0": "a", "1": "b"}`, ['a', 'b'], 'JSON with string keys'],
    [`['cat', 'dog']`, ['cat', 'dog'], 'a list'],
    [`{0: 'caf\\xe9', 1: 'ü'}`, ['café', 'ü'], '\\x escapes and non-ASCII text'],
    [`{0: 'person',}`, ['person'], 'trailing comma'],
    [`{0: 'person'`, undefined, 'unterminated'],
    [`__import__('os').system('x')`, undefined, 'code is not evaluated'],
    [`{'a': 'x'}`, undefined, 'non-integer keys'],
  ];
  it.each(names)('%s → %j (%s)', (text, expected) => {
    expect(parseNames(text)).toEqual(expected);
  });

  it('describeModel: a file that names no classes (the official YOLOX exports) is refused saying how a pipeline names them', async () => {
    const e = await describeModel(MODEL, undefined, undefined).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_LOAD')).toBe(true);
    expect((e as Error).message).toContain(`no class labels: the ONNX file has no "names" metadata and no manifest lists labels. A pipeline gives them with a manifest and the file, model: { manifest: yolox-nano, path: ${MODEL} }`);
    // The message is whole: it ended on 'a manifest of your own with labels:', the list it announced missing.
    expect((e as Error).message).toMatch(/, or a manifest of your own that lists them \(labels: \[person, …\]\)$/);
  });

  it('describeModel: a P6 export (stride 64) gets the four grids 8, 16, 32, 64; an input size past 4096 px a side is refused naming where it came from', async () => {
    const p6 = dir.path('p6.onnx');
    const anchors = [8, 16, 32, 64].reduce((n, s) => n + (256 / s) ** 2, 0); // 1360
    writeModel(p6, {
      producerName: 'pytorch',
      input: { dims: [1, 3, 256, 256] },
      outputs: [{ name: 'output0', dims: [1, 6, anchors] }],
      metadata: { names: "{0: 'cat', 1: 'dog'}", imgsz: '[256, 256]', stride: '64', task: 'detect' },
    });
    const d = await describeModel(p6, undefined, undefined);
    expect(d.manifest.decoder.strides).toEqual([8, 16, 32, 64]);
    const dec = createDecoder('auto', { inputHeight: 256, inputWidth: 256, numClasses: 2, strides: d.manifest.decoder.strides, outputs: d.meta.outputs.map((o) => ({ name: o.name, dims: o.dims, type: o.elemType })) });
    expect(dec.family).toBe('yolov8');
    expect(dec.maxCandidates).toBe(anchors);
    // Nonsense strides fall back to the usual three.
    for (const stride of ['32', '3', '48']) {
      const p = dir.path(`stride-${stride}.onnx`);
      writeModel(p, { producerName: 'pytorch', input: { dims: [1, 3, 256, 256] }, outputs: [{ name: 'output0', dims: [1, 6, 1344] }], metadata: { names: "{0: 'a', 1: 'b'}", imgsz: '[256, 256]', stride } });
      expect((await describeModel(p, undefined, undefined)).manifest.decoder.strides, stride).toEqual([8, 16, 32]);
    }
    const huge = dir.path('huge.onnx');
    writeModel(huge, { producerName: 'pytorch', input: { dims: ['batch', 3, 'height', 'width'] }, outputs: [{ name: 'output0', dims: ['batch', 6, 'anchors'], shape: [1, 6, 10] }], metadata: { names: "{0: 'a', 1: 'b'}", imgsz: '[40000, 40000]', stride: '32' } });
    const e = await describeModel(huge, undefined, undefined).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_SHAPE')).toBe(true);
    expect((e as Error).message).toContain('its input size 40000x40000 (metadata imgsz) is beyond the 4096 px a side argus takes');
    const manifest = (width: number) => ModelManifestSchema.safeParse({ name: 'm', version: '1', file: 'm.onnx', preprocess: { width, height: 416, channelOrder: 'bgr' }, labels: ['a'] });
    expect(manifest(4096).success).toBe(true);
    expect(manifest(5000).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(['preprocess.width: Number must be less than or equal to 4096']);
  });

  it('parses Python literals without evaluating them', () => {
    expect(parsePythonLiteral('[640, 640]')).toEqual([640, 640]);
    expect(parsePythonLiteral('(1, 2.5, -3e2)')).toEqual([1, 2.5, -300]);
    expect(parsePythonLiteral('True')).toBe(true);
    expect(parsePythonLiteral('None')).toBeNull();
    expect(parsePythonLiteral(`{'a': [1, {'b': False}]}`)).toEqual(new Map([['a', [1, new Map([['b', false]])]]]));
    expect(() => parsePythonLiteral('[1, 2] + [3]')).toThrow(SyntaxError);
    expect(() => parsePythonLiteral('os.system')).toThrow(SyntaxError);
  });
});

describe('readOnnxMetadata reads only what it needs', () => {
  it('skips the weights: a model with 32 MB of them is described from under 1 MB read', async () => {
    const path = dir.path('heavy.onnx');
    // One output constant of 8M floats: 32 MB of initializer data, before the metadata (field 14
    // comes after the graph, field 7), so the reader has to skip over it.
    writeModel(path, { outputs: [{ name: 'big', dims: [1, 8_000_000] }], metadata: { names: "['a', 'b']", imgsz: '[64, 64]' } });
    expect(statSync(path).size).toBeGreaterThan(32_000_000);
    const probe = await open(path, 'r');
    const proto = Object.getPrototypeOf(probe) as { read(this: unknown, ...args: unknown[]): Promise<{ bytesRead: number }> };
    await probe.close();
    const original = proto.read;
    let read = 0;
    const spy = vi.spyOn(proto, 'read').mockImplementation(async function (this: unknown, ...args: unknown[]) {
      const r = await original.apply(this, args);
      read += r.bytesRead;
      return r;
    });
    try {
      const m = await readOnnxMetadata(path);
      expect(m.names).toEqual(['a', 'b']);
      expect(m.imgsz).toEqual([64, 64]);
      expect(m.outputs).toEqual([{ name: 'big', dims: [1, 8_000_000], elemType: 'float32' }]);
      expect(m.inputs.map((i) => i.name)).toEqual(['images']);
    } finally {
      spy.mockRestore();
    }
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(1024 * 1024);
  });

  it('gives for YOLOX-Nano what decoding the whole file gives', async () => {
    const whole = onnx.ModelProto.decode(readFileSync(MODEL));
    const m = await readOnnxMetadata(MODEL);
    const graph = whole.graph as onnxProto.onnx.IGraphProto;
    const inits = new Set((graph.initializer ?? []).map((t) => t.name));
    expect(m.producer).toBe(whole.producerName);
    expect(m.irVersion).toBe(Number(whole.irVersion));
    expect(m.opset).toBe(Number(whole.opsetImport.find((o) => !o.domain)!.version));
    expect(m.inputs.map((i) => i.name)).toEqual((graph.input ?? []).filter((i) => !inits.has(i.name)).map((i) => i.name));
    expect(m.outputs.map((o) => o.name)).toEqual((graph.output ?? []).map((o) => o.name));
    expect(m.inputs[0].dims).toEqual([1, 3, 416, 416]);
  });
});

describe('readOnnxMetadata on unusual files', () => {
  const varint = (v: number) => {
    const o: number[] = [];
    while (v >= 128) {
      o.push((v % 128) | 128);
      v = Math.floor(v / 128);
    }
    o.push(v);
    return Buffer.from(o);
  };
  const field = (no: number, payload: Buffer) => Buffer.concat([varint(no * 8 + 2), varint(payload.length), payload]);
  const str = (no: number, s: string) => field(no, Buffer.from(s));
  // ValueInfoProto: name, type.tensor_type { elem_type 1, shape { dim { dim_value 3 } } }
  const valueInfo = (name: string) => Buffer.concat([str(1, name), field(2, field(1, Buffer.concat([varint(8), varint(1), field(2, field(1, Buffer.concat([varint(8), varint(3)])))])))]);
  const prop = (k: string, v: string) => field(14, Buffer.concat([str(1, k), str(2, v)]));

  it('a weight of a million floats stored unpacked (a field each), a property larger than the window, unknown fields: read as the whole-file parser read them', async () => {
    const N = 1_000_000;
    const floats = Buffer.alloc(N * 5);
    for (let i = 0; i < N; i++) floats[i * 5] = 4 * 8 + 5; // float_data (4), wire type 5, value 0
    const init = field(5, Buffer.concat([floats, str(8, 'w')])); // its name after the data
    const graph = field(7, Buffer.concat([init, field(11, valueInfo('w')), field(11, valueInfo('images')), field(12, valueInfo('out'))]));
    const junk = Buffer.concat(Array.from({ length: 1000 }, () => Buffer.from([(99 * 8) % 128 | 128, Math.floor((99 * 8) / 128), 1])));
    const names = `[${Array.from({ length: 20_000 }, (_, i) => `'class_${i}'`).join(', ')}]`; // ~250 KB
    const path = dir.path('unusual.onnx');
    writeFileSync(path, Buffer.concat([varint(8), varint(8), str(2, 'hand-made'), graph, junk, prop('names', names)]));
    const m = await readOnnxMetadata(path);
    expect(m.producer).toBe('hand-made');
    expect(m.irVersion).toBe(8);
    expect(m.inputs.map((i) => i.name)).toEqual(['images']); // 'w' is an initializer
    expect(m.outputs).toEqual([{ name: 'out', dims: [3], elemType: 'float32' }]);
    expect(m.names).toHaveLength(20_000);
    expect(m.names![19_999]).toBe('class_19999');
  });
});
