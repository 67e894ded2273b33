import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import type { OutputData } from '../../src/models/decoder.js';
import { sessionTensors, type TensorInfo } from '../../src/models/tensor-info.js';

const { onnx } = onnxProto;
const DT = onnx.TensorProto.DataType;

export type ElemType = 'float32' | 'float16' | 'int32' | 'int64';

export interface OutputSpec {
  name: string;
  /** Declared dims; strings are symbolic (dim_param), e.g. 'batch'. */
  dims: (number | string)[];
  /** The constant's real shape; defaults to `dims` (all numeric then). Batch 1 broadcasts over the input's batch. */
  shape?: number[];
  /** Element type of the output. Default float32. float16 is made by a Cast node from float32 values. */
  type?: ElemType;
  /** The output's values in row-major order (zeros when absent). */
  values?: ArrayLike<number> | BigInt64Array;
  /**
   * Whether dim 0 is the batch (default true). When false (e.g. YOLOv7's [D, 7] detection
   * list) the constant is output as is, whatever the input's batch.
   */
  batched?: boolean;
}

export interface GraphSpec {
  /** Input dims; strings are symbolic. Default [1, 3, 64, 64] named 'images', float32 (uint8: cast to float inside). */
  input?: { name?: string; dims: (number | string)[]; type?: 'float32' | 'uint8' };
  /** More required float32 inputs (PP-YOLOE's scale_factor, say), consumed by the graph. */
  extraInputs?: { name: string; dims: number[] }[];
  /** The graph loads but every run fails (a Reshape of the input to 7 rows that cannot hold it). */
  failAtRun?: boolean;
  /**
   * Each run first goes round a Loop this many times (about 4 µs a turn on ONNX Runtime's CPU
   * provider): 10^12 is a run that never returns.
   */
  loopTurns?: number;
  /**
   * Opening the session first multiplies a 1024 × 1024 matrix of constants this many times
   * (ONNX Runtime folds constants as it opens a model; about 0.1 s a product): a
   * session whose creation takes as long as one likes, as a TensorRT engine build does.
   */
  openProducts?: number;
  outputs: OutputSpec[];
  /** metadata_props, e.g. Ultralytics' names/imgsz/stride/task. */
  metadata?: Record<string, string>;
  producerName?: string;
}

const dataType = (t: ElemType) => ({ float32: DT.FLOAT, float16: DT.FLOAT16, int32: DT.INT32, int64: DT.INT64 })[t];

function tensor(name: string, dims: number[], type: 'float32' | 'int32' | 'int64', values: ArrayLike<number> | BigInt64Array): onnxProto.onnx.TensorProto {
  const n = dims.reduce((a, b) => a * b, 1);
  if (values.length !== n) throw new Error(`${name}: ${values.length} values, shape [${dims.join(', ')}] needs ${n}`);
  let data: Float32Array | Int32Array | BigInt64Array;
  if (type === 'float32') data = Float32Array.from(values as ArrayLike<number>);
  else if (type === 'int32') data = Int32Array.from(values as ArrayLike<number>, Number);
  else data = values instanceof BigInt64Array ? values : BigInt64Array.from(Array.from(values as ArrayLike<number>, (v) => BigInt(v)));
  return onnx.TensorProto.create({
    name,
    dims,
    dataType: type === 'float32' ? DT.FLOAT : type === 'int32' ? DT.INT32 : DT.INT64,
    rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  });
}

function valueInfo(name: string, dims: (number | string)[], type: ElemType) {
  return onnx.ValueInfoProto.create({
    name,
    type: onnx.TypeProto.create({
      tensorType: onnx.TypeProto.Tensor.create({
        elemType: dataType(type),
        shape: onnx.TensorShapeProto.create({
          dim: dims.map((d) => onnx.TensorShapeProto.Dimension.create(typeof d === 'string' ? { dimParam: d } : { dimValue: d })),
        }),
      }),
    }),
  });
}

function uint8ValueInfo(name: string, dims: (number | string)[]) {
  const v = valueInfo(name, dims, 'float32');
  v.type!.tensorType!.elemType = DT.UINT8;
  return v;
}

const attrInt = (name: string, i: number) => onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INT, i });

/**
 * An ONNX model whose outputs are known constants, each added to 0 × (the input summed over
 * C, H, W, reshaped to [B, 1, …]) so ONNX Runtime keeps the input and batch-1 constants
 * broadcast over the input's batch. Outputs declared with a symbolic batch dim and a constant
 * of several images are sliced to the input's batch size. Integer outputs add a Cast of that
 * zero; float16 outputs are a Cast of the float32 sum.
 */
export function buildModel(spec: GraphSpec): Uint8Array {
  const inputName = spec.input?.name ?? 'images';
  const inputDims = spec.input?.dims ?? [1, 3, 64, 64];
  const extras = spec.extraInputs ?? [];
  const nodes: onnxProto.onnx.NodeProto[] = [];
  let floatInput = inputName;
  if (spec.input?.type === 'uint8') {
    nodes.push(onnx.NodeProto.create({ opType: 'Cast', input: [inputName], output: ['input_f32'], attribute: [attrInt('to', DT.FLOAT)] }));
    floatInput = 'input_f32';
  }
  // Tensors that add 0 to the input's sum: the extra inputs, and the failing Reshape.
  const zeros = extras.map((x) => x.name);
  if (spec.failAtRun) {
    nodes.push(onnx.NodeProto.create({ opType: 'Reshape', input: [floatInput, 'seven_rows'], output: ['bad_reshape'] }));
    zeros.push('bad_reshape');
  }
  nodes.push(onnx.NodeProto.create({ opType: 'ReduceSum', input: [floatInput, 'axes_chw'], output: [zeros.length ? 'acc_0' : 'sum'], attribute: [attrInt('keepdims', 1)] }));
  zeros.forEach((name, j) => {
    nodes.push(onnx.NodeProto.create({ opType: 'ReduceSum', input: [name], output: [`extra_sum_${j}`], attribute: [attrInt('keepdims', 0)] }));
    nodes.push(onnx.NodeProto.create({ opType: 'Mul', input: [`extra_sum_${j}`, 'zero'], output: [`extra_zero_${j}`] }));
    nodes.push(onnx.NodeProto.create({ opType: 'Add', input: [`acc_${j}`, `extra_zero_${j}`], output: [j === zeros.length - 1 ? 'sum' : `acc_${j + 1}`] }));
  });
  const inits = [...(spec.failAtRun ? [tensor('seven_rows', [2], 'int64', [7, -1])] : []), tensor('axes_chw', [3], 'int64', [1, 2, 3]), tensor('zero', [], 'float32', [0]), tensor('zero_i64', [1], 'int64', [0]), tensor('one_i64', [1], 'int64', [1])];
  // batch_size = Shape(input)[0:1], for slicing per-image constants.
  nodes.push(onnx.NodeProto.create({ opType: 'Shape', input: [inputName], output: ['input_shape'] }));
  nodes.push(onnx.NodeProto.create({ opType: 'Slice', input: ['input_shape', 'zero_i64', 'one_i64', 'zero_i64'], output: ['batch_size'] }));
  spec.outputs.forEach((o, k) => {
    const type = o.type ?? 'float32';
    const shape = o.shape ?? o.dims.map((d) => {
      if (typeof d !== 'number') throw new Error(`output ${o.name}: symbolic dims need an explicit shape`);
      return d;
    });
    if (shape.length !== o.dims.length) throw new Error(`output ${o.name}: shape and dims differ in rank`);
    const n = shape.reduce((a, b) => a * b, 1);
    const values = o.values ?? new Float32Array(n);
    const rank = shape.length;
    const batched = o.batched ?? true;
    if (batched) {
      inits.push(tensor(`reshape_${k}`, [rank], 'int64', [-1, ...new Array<number>(rank - 1).fill(1)]));
      nodes.push(onnx.NodeProto.create({ opType: 'Reshape', input: ['sum', `reshape_${k}`], output: [`sum_${k}`] }));
    } else {
      nodes.push(onnx.NodeProto.create({ opType: 'ReduceSum', input: ['sum'], output: [`sum_${k}`], attribute: [attrInt('keepdims', 0)] }));
    }
    nodes.push(onnx.NodeProto.create({ opType: 'Mul', input: [`sum_${k}`, 'zero'], output: [`zero_${k}`] }));
    inits.push(tensor(`const_${k}`, shape, type === 'float16' ? 'float32' : type, values));
    // A symbolic batch stays symbolic: the constant holds one block per image and is sliced to
    // the input's batch size (a batch-1 constant is then broadcast).
    let c = `const_${k}`;
    if (batched && typeof o.dims[0] === 'string' && shape[0] > 1) {
      nodes.push(onnx.NodeProto.create({ opType: 'Slice', input: [c, 'zero_i64', 'batch_size', 'zero_i64'], output: [`batch_const_${k}`] }));
      c = `batch_const_${k}`;
    }
    if (type === 'float32') {
      nodes.push(onnx.NodeProto.create({ opType: 'Add', input: [c, `zero_${k}`], output: [o.name] }));
    } else if (type === 'float16') {
      nodes.push(onnx.NodeProto.create({ opType: 'Add', input: [c, `zero_${k}`], output: [`f32_${k}`] }));
      nodes.push(onnx.NodeProto.create({ opType: 'Cast', input: [`f32_${k}`], output: [o.name], attribute: [attrInt('to', DT.FLOAT16)] }));
    } else {
      nodes.push(onnx.NodeProto.create({ opType: 'Cast', input: [`zero_${k}`], output: [`izero_${k}`], attribute: [attrInt('to', dataType(type))] }));
      nodes.push(onnx.NodeProto.create({ opType: 'Add', input: [c, `izero_${k}`], output: [o.name] }));
    }
  });
  if (spec.loopTurns !== undefined) addLoop(nodes, inits, floatInput, spec.loopTurns);
  if (spec.openProducts !== undefined) addProducts(nodes, inits, spec.openProducts);
  const graph = onnx.GraphProto.create({
    name: 'constant-outputs',
    node: nodes,
    initializer: inits,
    input: [
      spec.input?.type === 'uint8' ? uint8ValueInfo(inputName, inputDims) : valueInfo(inputName, inputDims, 'float32'),
      ...extras.map((x) => valueInfo(x.name, x.dims, 'float32')),
    ],
    output: spec.outputs.map((o) => valueInfo(o.name, o.dims, o.type ?? 'float32')),
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: spec.producerName ?? 'argus-tests',
    opsetImport: [onnx.OperatorSetIdProto.create({ domain: '', version: 13 })],
    metadataProps: Object.entries(spec.metadata ?? {}).map(([key, value]) => onnx.StringStringEntryProto.create({ key, value })),
    graph,
  });
  return onnx.ModelProto.encode(model).finish();
}

/**
 * A Loop of `turns` (body: v + 1) started from 0 × the input's sum, whose result × 0 is added
 * to `sum`: every run goes round it, and ONNX Runtime cannot fold it away.
 */
function addLoop(nodes: onnxProto.onnx.NodeProto[], inits: onnxProto.onnx.TensorProto[], input: string, turns: number): void {
  const scalar = (name: string, type: number) => onnx.ValueInfoProto.create({ name, type: onnx.TypeProto.create({ tensorType: onnx.TypeProto.Tensor.create({ elemType: type, shape: onnx.TensorShapeProto.create({ dim: [] }) }) }) });
  const body = onnx.GraphProto.create({
    name: 'turn',
    node: [onnx.NodeProto.create({ opType: 'Identity', input: ['cond_in'], output: ['cond_out'] }), onnx.NodeProto.create({ opType: 'Add', input: ['v_in', 'one_f'], output: ['v_out'] })],
    initializer: [onnx.TensorProto.create({ name: 'one_f', dims: [], dataType: DT.FLOAT, floatData: [1] })],
    input: [scalar('turn', DT.INT64), scalar('cond_in', DT.BOOL), scalar('v_in', DT.FLOAT)],
    output: [scalar('cond_out', DT.BOOL), scalar('v_out', DT.FLOAT)],
  });
  inits.push(onnx.TensorProto.create({ name: 'loop_turns', dims: [], dataType: DT.INT64, int64Data: [turns] }), onnx.TensorProto.create({ name: 'loop_cond', dims: [], dataType: DT.BOOL, int32Data: [1] }));
  const at = nodes.findIndex((n) => n.output.includes('sum'));
  nodes[at].output = ['sum_before_loop'];
  nodes.splice(
    at + 1,
    0,
    onnx.NodeProto.create({ opType: 'ReduceSum', input: [input], output: ['loop_sum'], attribute: [attrInt('keepdims', 0)] }),
    onnx.NodeProto.create({ opType: 'Mul', input: ['loop_sum', 'zero'], output: ['loop_v0'] }),
    onnx.NodeProto.create({ opType: 'Loop', input: ['loop_turns', 'loop_cond', 'loop_v0'], output: ['loop_v'], attribute: [onnx.AttributeProto.create({ name: 'body', type: onnx.AttributeProto.AttributeType.GRAPH, g: body })] }),
    onnx.NodeProto.create({ opType: 'Mul', input: ['loop_v', 'zero'], output: ['loop_zero'] }),
    onnx.NodeProto.create({ opType: 'Add', input: ['sum_before_loop', 'loop_zero'], output: ['sum'] }),
  );
}

/** A chain of `n` products of a constant matrix, whose sum × 0 is added to `sum`: folded as the session opens. */
function addProducts(nodes: onnxProto.onnx.NodeProto[], inits: onnxProto.onnx.TensorProto[], n: number): void {
  inits.push(tensor('prod_one', [], 'float32', [1 / 1024]), tensor('prod_shape', [2], 'int64', [1024, 1024]));
  const at = nodes.findIndex((x) => x.output.includes('sum'));
  nodes[at].output = ['sum_before_products'];
  const chain = [onnx.NodeProto.create({ opType: 'Expand', input: ['prod_one', 'prod_shape'], output: ['prod_0'] })];
  for (let i = 0; i < n; i++) chain.push(onnx.NodeProto.create({ opType: 'MatMul', input: [`prod_${i}`, 'prod_0'], output: [`prod_${i + 1}`] }));
  chain.push(
    onnx.NodeProto.create({ opType: 'ReduceSum', input: [`prod_${n}`], output: ['prod_sum'], attribute: [attrInt('keepdims', 0)] }),
    onnx.NodeProto.create({ opType: 'Mul', input: ['prod_sum', 'zero'], output: ['prod_zero'] }),
    onnx.NodeProto.create({ opType: 'Add', input: ['sum_before_products', 'prod_zero'], output: ['sum'] }),
  );
  nodes.splice(at + 1, 0, ...chain);
}

/** A temp dir for model files, removed by `cleanup()`. */
export function modelDir(): { path: (file: string) => string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'argus-models-'));
  return { path: (file) => join(dir, file), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function writeModel(path: string, spec: GraphSpec): void {
  writeFileSync(path, buildModel(spec));
}

/** The session's outputs as the decoder registry takes them. */
export function outputInfos(session: ort.InferenceSession): TensorInfo[] {
  return sessionTensors(session).outputs;
}

export interface RunResult {
  infos: TensorInfo[];
  /** Output tensors by name. */
  tensors: Record<string, ort.Tensor>;
  /** Data of the outputs `names` in that order, as decode() takes them. */
  data(names: readonly string[]): OutputData[];
}

/** Writes the model, runs it once on a zero input of `inputShape` and returns its outputs. */
export async function runModel(path: string, spec: GraphSpec, inputShape: number[]): Promise<RunResult> {
  writeModel(path, spec);
  const session = await ort.InferenceSession.create(path, { logSeverityLevel: 3 });
  try {
    const n = inputShape.reduce((a, b) => a * b, 1);
    const input = new ort.Tensor('float32', new Float32Array(n), inputShape);
    const tensors = await session.run({ [session.inputNames[0]]: input });
    const infos = outputInfos(session);
    return { infos, tensors, data: (names) => names.map((name) => tensors[name].data as OutputData) };
  } finally {
    await session.release();
  }
}
