import { MAX_MODEL_SIDE, type ModelManifest } from '../config/schema.js';
import { repeatedLabel } from '../config/labels.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { forTerminal } from '../core/text.js';
import type { Family } from '../core/families.js';
import { basename } from 'node:path';
import { readOnnxMetadata, type OnnxMetadata } from './metadata.js';
import { createDecoder } from './registry.js';

/** A manifest with everything the detector needs filled in (labels, input size). */
export type ResolvedManifest = ModelManifest & { labels: string[] };

/**
 * What a model is and how to feed it: the manifest's word where it has one, else the ONNX
 * file's own metadata (Ultralytics writes names, imgsz, stride) and input shape. A model
 * without a manifest gets the Ultralytics pre-processing (RGB, 0–1, letterbox centred, pad 114)
 * unless it is YOLOX.
 */
export async function describeModel(
  path: string,
  manifest: ModelManifest | undefined,
  family: Family | 'auto' | undefined,
  /** Inspecting only: a model without labels is described with none. */
  allowNoLabels = false,
): Promise<{ manifest: ResolvedManifest; meta: OnnxMetadata; family: Family | 'auto' }> {
  const meta = await readOnnxMetadata(path);
  const fam = family ?? manifest?.decoder.type ?? 'auto';
  const labels = manifest?.labels ?? meta.names ?? (allowNoLabels ? [] : undefined);
  if (!labels || (labels.length === 0 && !allowNoLabels)) {
    throw new ArgusError(
      ErrorCodes.MODEL_LOAD,
      `model ${path}: no class labels: the ONNX file has no "names" metadata and no manifest lists labels. A pipeline gives them with a manifest and the file, model: { manifest: yolox-nano, path: ${path} } (the official YOLOX files: COCO's 80 classes), or a manifest of your own that lists them (labels: [person, …])`,
    );
  }
  // A manifest's labels are checked by its schema; the file's own names here. Inspecting, they
  // are shown as they are (inspect says which repeat).
  const repeat = manifest?.labels || allowNoLabels ? undefined : repeatedLabel(labels);
  if (repeat) {
    throw new ArgusError(
      ErrorCodes.MODEL_LOAD,
      `model ${path}: its metadata "names" lists ${forTerminal(JSON.stringify(repeat.label))} twice (classes ${repeat.first} and ${repeat.again}): zones, lines and rules name classes by label, so class ${repeat.again} would never be counted as it. Give a manifest of your own with unique labels beside the file (model: { manifest: my-model.yaml, path: ${path} })`,
    );
  }
  if (manifest) return { manifest: { ...manifest, labels }, meta, family: fam };
  const input = meta.inputs[0];
  const dimsHW = input && typeof input.dims[2] === 'number' && typeof input.dims[3] === 'number' && (input.dims[2] as number) > 0 ? [input.dims[2] as number, input.dims[3] as number] : undefined;
  const [height, width] = meta.imgsz ?? dimsHW ?? [640, 640];
  if (!(height <= MAX_MODEL_SIDE && width <= MAX_MODEL_SIDE)) {
    throw new ArgusError(
      ErrorCodes.MODEL_SHAPE,
      `model ${path}: its input size ${width}x${height} (${meta.imgsz ? 'metadata imgsz' : 'input shape'}) is beyond the ${MAX_MODEL_SIDE} px a side argus takes; give a manifest with preprocess.width and height`,
    );
  }
  let detected: Family | 'auto' = fam;
  if (fam === 'auto') {
    try {
      detected = createDecoder('auto', { inputWidth: width, inputHeight: height, numClasses: labels.length || undefined, outputs: meta.outputs.map((o) => ({ name: o.name, dims: o.dims, type: o.elemType })) }).family;
    } catch {
      // Left to the detector, which reports the shapes.
    }
  }
  const yolox = detected === 'yolox';
  const synthesized: ResolvedManifest = {
    name: basename(path).replace(/\.onnx$/i, ''),
    version: meta.props.version ?? meta.producerVersion ?? 'local',
    description: meta.props.description,
    file: basename(path),
    alternates: [],
    preprocess: {
      width,
      height,
      letterbox: { align: yolox ? 'top-left' : 'center', pad: 114, rounding: yolox ? 'floor' : 'round' },
      resize: 'cv2-linear',
      channelOrder: yolox ? 'bgr' : 'rgb',
      scale: yolox ? 1 : 1 / 255,
      mean: [0, 0, 0],
      std: [1, 1, 1],
    },
    // Ultralytics writes the largest stride: 32 for the usual P3–P5 heads, 64 for P6 models
    // (yolov5s6, yolov8-p6: strides 8, 16, 32, 64).
    decoder: { type: fam, strides: strides(meta.stride) },
    labels,
  };
  return { manifest: synthesized, meta, family: fam };
}

/** Grid strides from Ultralytics' `stride` (the largest): 32 → 8, 16, 32; 64 (P6) → 8, 16, 32, 64; else the usual three. */
function strides(largest: number | undefined): number[] {
  const all = [8, 16, 32, 64, 128];
  return largest !== undefined && all.includes(largest) && largest >= 16 ? all.filter((s) => s <= largest) : [8, 16, 32];
}
