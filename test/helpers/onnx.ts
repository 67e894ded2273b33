import { writeFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

/**
 * Writes a tiny ONNX model whose output is a constant tensor (so its values are known
 * exactly): input `images` of `inputShape` float32 is reduced to a scalar and multiplied by 0,
 * then added to the constant, so ONNX Runtime keeps the input and the output is `values`.
 */
export function writeConstantModel(path: string, opts: { inputShape: number[]; outputShape: number[]; values?: Float32Array; inputName?: string; outputName?: string }): void {
  const inputName = opts.inputName ?? 'images';
  const outputName = opts.outputName ?? 'output';
  const n = opts.outputShape.reduce((a, b) => a * b, 1);
  const values = opts.values ?? new Float32Array(n);
  if (values.length !== n) throw new Error(`values has ${values.length} entries, shape needs ${n}`);
  const tensor = (name: string, dims: number[], data: Float32Array) =>
    onnx.TensorProto.create({ name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
  const vi = (name: string, dims: number[]) =>
    onnx.ValueInfoProto.create({
      name,
      type: onnx.TypeProto.create({
        tensorType: onnx.TypeProto.Tensor.create({
          elemType: onnx.TensorProto.DataType.FLOAT,
          shape: onnx.TensorShapeProto.create({ dim: dims.map((d) => onnx.TensorShapeProto.Dimension.create({ dimValue: d })) }),
        }),
      }),
    });
  const graph = onnx.GraphProto.create({
    name: 'constant',
    node: [
      onnx.NodeProto.create({ opType: 'ReduceSum', input: [inputName], output: ['sum'], attribute: [onnx.AttributeProto.create({ name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 0 })] }),
      onnx.NodeProto.create({ opType: 'Mul', input: ['sum', 'zero'], output: ['nothing'] }),
      onnx.NodeProto.create({ opType: 'Add', input: ['const', 'nothing'], output: [outputName] }),
    ],
    initializer: [tensor('zero', [], new Float32Array([0])), tensor('const', opts.outputShape, values)],
    input: [vi(inputName, opts.inputShape)],
    output: [vi(outputName, opts.outputShape)],
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'argus-tests',
    opsetImport: [onnx.OperatorSetIdProto.create({ domain: '', version: 13 })],
    graph,
  });
  writeFileSync(path, onnx.ModelProto.encode(model).finish());
}
