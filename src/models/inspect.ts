import { existsSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { PACKAGE_ROOT } from '../assets/paths.js';
import { repeatedLabel } from '../config/labels.js';
import { MAX_MODEL_BATCH } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { forTerminal } from '../core/text.js';
import { describeModel } from './describe.js';
import type { Family } from '../core/families.js';
import { modelFileProblem } from './metadata.js';
import { createDecoder } from './registry.js';
import { sessionTensors, type TensorInfo } from './tensor-info.js';

/**
 * What argus makes of an ONNX file: metadata, tensors, decoder family, labels, pre-processing.
 * Text for a terminal: everything read from the file (names, metadata, labels) is untrusted, so
 * each line goes through forTerminal (an escape sequence in a class name is shown, not run).
 */
export async function inspectModel(path: string, family: Family | 'auto' = 'auto'): Promise<string> {
  const problem = modelFileProblem(path);
  // `argus models inspect yolox-nano`: a manifest's name where its file goes.
  const manifest = problem === 'file not found' && /^[A-Za-z0-9_.-]+$/.test(path) && existsSync(join(PACKAGE_ROOT, 'models', `${path}.yaml`));
  if (manifest) throw new ArgusError(ErrorCodes.MODEL_LOAD, `${path}: file not found; "${path}" is the name of a model manifest: inspect takes the ONNX file (\`argus assets\` fetches the default model and says where it is)`);
  if (problem) throw new ArgusError(ErrorCodes.MODEL_LOAD, `${path}: ${problem}`);
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(path, { logSeverityLevel: 4 });
  } catch (e) {
    const text = looksLikeText(path) ? ' (a text file, such as a model manifest or a pipeline YAML: inspect takes the ONNX file)' : '';
    throw new ArgusError(ErrorCodes.MODEL_LOAD, `${path}: ONNX Runtime cannot load it${text}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const { manifest: m, meta } = await describeModel(path, undefined, family, true);
    const { inputs, outputs } = sessionTensors(session);
    const tensor = (t: TensorInfo) => `${t.name} ${t.type} [${t.dims.join(', ')}]`;
    const lines = [
      `file:          ${path}`,
      `producer:      ${meta.producer ?? '?'} ${meta.producerVersion ?? ''}`.trimEnd(),
      `opset:         ${meta.opset ?? '?'}`,
      `inputs:        ${inputs.map(tensor).join('; ')}`,
      `outputs:       ${outputs.map(tensor).join('; ')}`,
    ];
    if (Object.keys(meta.props).length) lines.push(`metadata:      ${Object.entries(meta.props).map(([k, v]) => `${k}=${v.length > 60 ? v.slice(0, 57) + '…' : v}`).join(', ')}`);
    let decoded: string | undefined;
    try {
      const dec = createDecoder(family, { inputWidth: m.preprocess.width, inputHeight: m.preprocess.height, numClasses: m.labels.length || undefined, strides: m.decoder.strides, outputs });
      decoded = dec.family;
      lines.push(`decoder:       ${dec.family}${dec.nmsInGraph ? ' (NMS in the graph)' : ''}, ${dec.numClasses || m.labels.length} classes, up to ${dec.maxCandidates} candidates per image`);
    } catch (e) {
      // The decoders' message has lines of its own (what was found, what each accepts): each is
      // a line here, under the field, not one line with its breaks shown as \x0a.
      const [first, ...rest] = (e as Error).message.split('\n');
      lines.push(`decoder:       none fits — ${first}`, ...rest.map((l) => `               ${l}`));
    }
    const p = m.preprocess;
    const batchDim = inputs[0]?.dims[0] ?? 1;
    const repeat = repeatedLabel(m.labels);
    lines.push(
      `input size:    ${p.width}x${p.height} (${meta.imgsz ? 'from metadata imgsz' : 'from the input shape'})`,
      `preprocess:    letterbox ${p.letterbox.align}, pad ${p.letterbox.pad}, ${p.channelOrder.toUpperCase()}, scale ${p.scale === 1 ? '1 (0–255)' : p.scale.toFixed(6)}`,
      m.labels.length
        ? `labels:        ${m.labels.length} (${meta.names ? 'from metadata names' : 'none in the file'}): ${m.labels.slice(0, 8).join(', ')}${m.labels.length > 8 ? ', …' : ''}${repeat ? ` (${JSON.stringify(repeat.label)} twice, classes ${repeat.first} and ${repeat.again}: refused at load; a manifest of your own lists unique labels)` : ''}`
        : // yolox-nano's manifest only for a YOLOX file: it also sets the decoder and the preprocessing (BGR 0–255); a YOLOv8 file given it is refused at load.
          decoded === 'yolox'
          ? `labels:        none in the file: a manifest lists them (a pipeline: model: { manifest: yolox-nano, path: ${path} } for the official YOLOX files, COCO's 80 classes)`
          : `labels:        none in the file: a manifest of your own lists them (labels: [...], with its preprocess and decoder; models/*.yaml show the form)`,
      `batch:         ${typeof batchDim === 'string' || batchDim < 0 ? 'dynamic (cross-source batching possible)' : `fixed ${batchDim}${batchDim === 0 || batchDim > MAX_MODEL_BATCH ? ` (refused at load: argus runs 1 to ${MAX_MODEL_BATCH} images at once)` : ''}`}`,
    );
    return lines.map(forTerminal).join('\n');
  } finally {
    await session.release();
  }
}

/** True when the file's first bytes are printable UTF-8 text (YAML, JSON): never an ONNX protobuf, whose first byte is a field tag. */
function looksLikeText(path: string): boolean {
  const b = Buffer.alloc(512);
  let n = 0;
  try {
    const fd = openSync(path, 'r');
    try {
      n = readSync(fd, b, 0, b.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  if (n === 0) return false;
  const head = b.subarray(0, n);
  return !head.some((c) => c < 0x09 || (c > 0x0d && c < 0x20) || c === 0x7f) && !head.toString('utf8').includes('\ufffd');
}
