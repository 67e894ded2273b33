import * as ort from 'onnxruntime-node';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { describeModel } from './describe.js';
import type { Family } from '../core/families.js';
import { createDecoder } from './registry.js';

/** What argus makes of an ONNX file: metadata, tensors, decoder family, labels, pre-processing. */
export async function inspectModel(path: string, family: Family | 'auto' = 'auto'): Promise<string> {
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(path, { logSeverityLevel: 4 });
  } catch (e) {
    throw new ArgusError(ErrorCodes.MODEL_LOAD, `${path}: ONNX Runtime cannot load it: ${(e as Error).message}`, { cause: e });
  }
  try {
    const { manifest: m, meta } = await describeModel(path, undefined, family, true);
    const outputs = session.outputNames.map((n, i) => {
      const md = session.outputMetadata[i];
      return { name: n, dims: md && 'shape' in md ? md.shape : [], type: md && 'type' in md ? String(md.type) : '?' };
    });
    const inputs = session.inputNames.map((n, i) => {
      const md = session.inputMetadata[i];
      return `${n} ${md && 'type' in md ? md.type : '?'} [${md && 'shape' in md ? md.shape.join(', ') : ''}]`;
    });
    const lines = [
      `file:          ${path}`,
      `producer:      ${meta.producer ?? '?'} ${meta.producerVersion ?? ''}`.trimEnd(),
      `opset:         ${meta.opset ?? '?'}`,
      `inputs:        ${inputs.join('; ')}`,
      `outputs:       ${outputs.map((o) => `${o.name} ${o.type} [${o.dims.join(', ')}]`).join('; ')}`,
    ];
    if (Object.keys(meta.props).length) lines.push(`metadata:      ${Object.entries(meta.props).map(([k, v]) => `${k}=${v.length > 60 ? v.slice(0, 57) + '…' : v}`).join(', ')}`);
    try {
      const dec = createDecoder(family, { inputWidth: m.preprocess.width, inputHeight: m.preprocess.height, numClasses: m.labels.length || undefined, strides: m.decoder.strides, outputs });
      lines.push(`decoder:       ${dec.family}${dec.nmsInGraph ? ' (NMS in the graph)' : ''}, ${dec.numClasses || m.labels.length} classes, up to ${dec.maxCandidates} candidates per image`);
    } catch (e) {
      lines.push(`decoder:       none fits — ${(e as Error).message}`);
    }
    const p = m.preprocess;
    lines.push(
      `input size:    ${p.width}x${p.height} (${meta.imgsz ? 'from metadata imgsz' : 'from the input shape'})`,
      `preprocess:    letterbox ${p.letterbox.align}, pad ${p.letterbox.pad}, ${p.channelOrder.toUpperCase()}, scale ${p.scale === 1 ? '1 (0–255)' : p.scale.toFixed(6)}`,
      `labels:        ${m.labels.length} (${meta.names ? 'from metadata names' : 'none in the file'}): ${m.labels.slice(0, 8).join(', ')}${m.labels.length > 8 ? ', …' : ''}`,
      `batch:         ${(() => {
        const md = session.inputMetadata[0];
        const d0 = md && 'shape' in md ? md.shape[0] : 1;
        return typeof d0 === 'string' || d0 === -1 ? 'dynamic (cross-source batching possible)' : `fixed ${d0}`;
      })()}`,
    );
    return lines.join('\n');
  } finally {
    await session.release();
  }
}
