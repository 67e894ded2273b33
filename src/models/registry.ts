import { ArgusError, ErrorCodes } from '../core/errors.js';
import { FAMILIES, type Family } from '../core/families.js';
import type { Candidates, ModelDecoder, OutputData } from './decoder.js';
import { End2EndDecoder, End2EndSplitDecoder } from './end2end.js';
import { Yolov5Decoder } from './yolov5.js';
import { gridPoints, Yolov8Decoder } from './yolov8.js';
import { YoloxDecoder } from './yolox.js';
import type { TensorInfo } from './tensor-info.js';

export interface CreateDecoderOptions {
  inputWidth: number;
  inputHeight: number;
  /** Classes; inferred from the output shape when absent (grid families). Checked when both are known. */
  numClasses?: number;
  /** Head strides for the grid families. Default [8, 16, 32]. */
  strides?: number[];
  /** Candidate capacity for end-to-end outputs whose detection count is dynamic. Default 1000. */
  maxDetections?: number;
  /** The model's outputs (`sessionTensors(session).outputs`). */
  outputs: readonly TensorInfo[];
}

/**
 * YOLOX through the multi-output interface: the existing `YoloxDecoder` on one output, with
 * image `batchIndex` found at offset batchIndex × A × (5 + C). Image 0 is passed as is; later
 * images as a `subarray` view (no copy). Non-Float32Array data is copied into a scratch buffer.
 */
export class YoloxModelDecoder implements ModelDecoder {
  readonly family = 'yolox' as const;
  readonly nmsInGraph = false;
  readonly numClasses: number;
  readonly maxCandidates: number;
  readonly outputNames: readonly string[];
  readonly inner: YoloxDecoder;
  private readonly imageStride: number;
  private scratch: Float32Array | undefined;

  constructor(options: { inputWidth: number; inputHeight: number; numClasses: number; strides?: readonly number[]; outputName?: string }) {
    this.inner = new YoloxDecoder(options);
    this.numClasses = this.inner.numClasses;
    this.maxCandidates = this.inner.maxCandidates;
    this.outputNames = [options.outputName ?? 'output'];
    this.imageStride = this.maxCandidates * (5 + this.numClasses);
  }

  decode(outputs: readonly OutputData[], batchIndex: number, scoreThreshold: number, out: Candidates): number {
    const o = outputs[0] as ArrayLike<number>;
    const size = this.imageStride;
    const base = batchIndex * size;
    if (o.length < base + size) {
      throw new ArgusError(ErrorCodes.MODEL_SHAPE, `yolox: output has ${o.length} values, image ${batchIndex} needs ${base + size}`);
    }
    if (out.capacity < this.maxCandidates) throw new RangeError(`yolox: candidates hold ${out.capacity}, the decoder needs ${this.maxCandidates}`);
    let data: Float32Array;
    if (o instanceof Float32Array) {
      data = base === 0 ? o : o.subarray(base, base + size);
    } else {
      data = this.scratch ??= new Float32Array(size);
      for (let i = 0; i < size; i++) data[i] = o[base + i];
    }
    return this.inner.decode(data, scoreThreshold, out);
  }
}

const INT_TYPES = new Set(['int8', 'uint8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'uint64', 'bool']);

const isNum = (d: number | string | undefined): d is number => typeof d === 'number' && d >= 0;
const isFloat = (o: TensorInfo) => !INT_TYPES.has(o.type);
const fmtDims = (dims: readonly (number | string)[]) => `[${dims.map((d) => (d === -1 ? '?' : String(d))).join(', ')}]`;

interface Ctx {
  w: number;
  h: number;
  strides: number[];
  /** Grid points for the strides, undefined when the input is not a multiple of them. */
  grid: number | undefined;
  o: CreateDecoderOptions;
}

/**
 * Picks and builds the decoder for a model's outputs. `'auto'` detects the family from the
 * shapes (see `acceptedLayouts` for what each family reads); an explicit family is taken as
 * given and only checked against the shapes, dynamic dims matching anything. Throws
 * `ArgusError(MODEL_SHAPE)` naming the shapes found and the shapes each decoder accepts.
 */
export function createDecoder(family: Family | 'auto', o: CreateDecoderOptions): ModelDecoder {
  const strides = o.strides ?? [8, 16, 32];
  const ctx: Ctx = { w: o.inputWidth, h: o.inputHeight, strides, grid: gridPoints(o.inputWidth, o.inputHeight, strides), o };
  if (family !== 'auto' && !(FAMILIES as readonly string[]).includes(family)) {
    throw new ArgusError(ErrorCodes.MODEL_SHAPE, `unknown decoder family "${String(family)}" (known: ${FAMILIES.join(', ')}, auto)`);
  }
  if (family === 'auto') {
    const split = matchSplit(o.outputs);
    if (split) return buildSplit(split, ctx);
    const ambiguous: string[] = [];
    for (const out of o.outputs) {
      const c = classify(out, ctx);
      if (c === undefined) continue;
      if (typeof c === 'object') {
        ambiguous.push(`${out.name} ${fmtDims(out.dims)} could be ${c.ambiguous.join(' or ')}`);
        continue;
      }
      return build(c, out, ctx);
    }
    const why = ambiguous.length > 0 ? `the family is ambiguous (${ambiguous.join('; ')}); name it explicitly` : 'no decoder fits the model\'s outputs';
    throw shapeError(why, ctx);
  }
  if (family === 'end2end-split') {
    const split = matchSplit(o.outputs);
    if (!split) throw shapeError('the end2end-split decoder does not fit the model\'s outputs', ctx, family);
    return buildSplit(split, ctx);
  }
  const out = o.outputs.find((x) => fits(family, x, ctx));
  if (!out) throw shapeError(`the ${family} decoder does not fit the model's outputs`, ctx, family);
  return build(family, out, ctx);
}

/** What each family accepts, for the input size and strides (one line per family). */
export function acceptedLayouts(inputWidth: number, inputHeight: number, strides: readonly number[] = [8, 16, 32]): Record<Family, string> {
  const g = gridPoints(inputWidth, inputHeight, strides);
  const size = `${inputWidth}x${inputHeight}`;
  const sl = strides.join(',');
  const gs = g === undefined ? `none: ${size} is not a multiple of every stride` : `${g} for ${size}`;
  const g3 = g === undefined ? `none: ${size} is not a multiple of every stride` : `${3 * g} for ${size}`;
  return {
    yolox: `yolox: [N, A, 5+C] with A = Σ(W/s·H/s) for strides ${sl} (${gs}); rows cx,cy,log w,log h (grid units), obj, C scores`,
    yolov8: `yolov8: [N, 4+C, A] channels first, A = Σ(W/s·H/s) for strides ${sl} (${gs}); rows cx,cy,w,h, C scores (YOLOv8/YOLO11; channels-last [N, A, 4+C] is not read)`,
    yolov5: `yolov5: [N, A, 5+C] with A = 3·Σ(W/s·H/s) for strides ${sl} (${g3}); rows cx,cy,w,h, obj, C scores (YOLOv5/YOLOv7)`,
    end2end: `end2end: [N, K, 6] rows x1,y1,x2,y2,score,class (YOLOv10, Ultralytics nms=True), or [D, 7] rows batch index,x1,y1,x2,y2,class,score (YOLOv7 --end2end for ONNX Runtime)`,
    'end2end-split': `end2end-split: num_dets [N,1], boxes [N,K,4], scores [N,K], classes [N,K] (EfficientNMS)`,
  };
}

function shapeError(why: string, ctx: Ctx, family?: Family): ArgusError {
  const found = ctx.o.outputs.length === 0 ? '(none)' : ctx.o.outputs.map((x) => `${x.name} ${fmtDims(x.dims)} ${x.type}`).join(', ');
  const all = acceptedLayouts(ctx.w, ctx.h, ctx.strides);
  const accepted = family ? [all[family]] : FAMILIES.map((f) => all[f]);
  return new ArgusError(
    ErrorCodes.MODEL_SHAPE,
    `${why} (input ${ctx.w}x${ctx.h}).\nFound: ${found}.\n${family ? 'It accepts' : 'Accepted'}:\n${accepted.map((l) => `  ${l}`).join('\n')}`,
  );
}

/** The family an output's shape identifies, an ambiguity, or undefined when none fits. */
function classify(out: TensorInfo, ctx: Ctx): Family | { ambiguous: Family[] } | undefined {
  const d = out.dims;
  if (!isFloat(out)) return undefined;
  const G = ctx.grid;
  if (d.length === 2 && d[1] === 7) return 'end2end';
  if (d.length !== 3) return undefined;
  const [, a, b] = d;
  if (G !== undefined) {
    if (isNum(a) && a >= 5 && b === G) return 'yolov8';
    if (isNum(b) && b >= 6 && a === G) return 'yolox';
    if (isNum(b) && b >= 6 && a === 3 * G) return 'yolov5';
  }
  if (b === 6) return isNum(a) ? 'end2end' : { ambiguous: ['end2end', 'yolov5'] };
  // Dynamic anchor dims, as Ultralytics writes with dynamic=True: YOLOv8 [batch, 4+C, anchors],
  // YOLOv5 [batch, anchors, 5+C]. (YOLOX exports fix A.)
  if (isNum(a) && a >= 5 && !isNum(b)) return 'yolov8';
  if (!isNum(a) && isNum(b) && b >= 7) return 'yolov5';
  return undefined;
}

/** Whether an output can be read by an explicitly named family (dynamic dims match anything). */
function fits(family: Family, out: TensorInfo, ctx: Ctx): boolean {
  const d = out.dims;
  if (!isFloat(out)) return false;
  const C = ctx.o.numClasses;
  const G = ctx.grid;
  const dimIs = (x: number | string, want: number | undefined) => !isNum(x) || want === undefined || x === want;
  switch (family) {
    case 'yolov8':
      return d.length === 3 && G !== undefined && dimIs(d[1], C === undefined ? undefined : 4 + C) && (!isNum(d[1]) || d[1] >= 5) && dimIs(d[2], G);
    case 'yolox':
    case 'yolov5':
      return (
        d.length === 3 && G !== undefined && dimIs(d[1], family === 'yolox' ? G : 3 * G) && dimIs(d[2], C === undefined ? undefined : 5 + C) && (!isNum(d[2]) || d[2] >= 6)
      );
    case 'end2end':
      return (d.length === 3 && d[2] === 6) || (d.length === 2 && d[1] === 7);
    default:
      return false;
  }
}

function build(family: Family, out: TensorInfo, ctx: Ctx): ModelDecoder {
  const d = out.dims;
  const { o } = ctx;
  const common = { inputWidth: ctx.w, inputHeight: ctx.h, strides: ctx.strides, outputName: out.name };
  switch (family) {
    case 'yolov8':
      return new Yolov8Decoder({ ...common, numClasses: classes(family, out, isNum(d[1]) ? d[1] - 4 : undefined, ctx) });
    case 'yolox':
      return new YoloxModelDecoder({ ...common, numClasses: classes(family, out, isNum(d[2]) ? d[2] - 5 : undefined, ctx) });
    case 'yolov5':
      return new Yolov5Decoder({ ...common, numClasses: classes(family, out, isNum(d[2]) ? d[2] - 5 : undefined, ctx) });
    case 'end2end':
      return d.length === 2
        ? new End2EndDecoder({ layout: 'batch-xyxy-class-score', numClasses: o.numClasses, maxDetections: isNum(d[0]) ? d[0] : o.maxDetections, outputName: out.name })
        : new End2EndDecoder({
            layout: 'xyxy-score-class',
            rowsPerImage: isNum(d[1]) ? d[1] : undefined,
            batchSize: isNum(d[0]) ? d[0] : undefined,
            numClasses: o.numClasses,
            maxDetections: o.maxDetections,
            outputName: out.name,
          });
    default:
      throw new Error(`build: ${family}`);
  }
}

/** numClasses from the shape and/or the options; MODEL_SHAPE when they disagree or neither says. */
function classes(family: Family, out: TensorInfo, fromShape: number | undefined, ctx: Ctx): number {
  const given = ctx.o.numClasses;
  if (given !== undefined && fromShape !== undefined && given !== fromShape) {
    const hint =
      (family === 'yolox' || family === 'yolov5') && fromShape === given - 1
        ? ` (rows of 4+${given} look like YOLOv8 channels-last [N, A, 4+C], which is not read: export channels-first [N, 4+C, A])`
        : '';
    throw shapeError(`${family}: output ${out.name} ${fmtDims(out.dims)} carries ${fromShape} classes, ${given} were configured${hint}`, ctx, family);
  }
  const n = given ?? fromShape;
  if (n === undefined || n < 1) throw shapeError(`${family}: the class count of output ${out.name} ${fmtDims(out.dims)} is dynamic; configure numClasses`, ctx, family);
  return n;
}

interface SplitMatch {
  num: TensorInfo;
  boxes: TensorInfo;
  scores: TensorInfo;
  classes: TensorInfo;
}

const SPLIT_NAMES: Record<keyof SplitMatch, RegExp> = {
  num: /^(num_?dets|num_?detections|num)$/i,
  boxes: /^(det_?)?(boxes|bboxes)$/i,
  scores: /^(det_?)?scores$/i,
  classes: /^(det_?)?(classes|labels|class_?ids?)$/i,
};

/**
 * Finds the four EfficientNMS outputs: by name first (num_dets/num_detections, boxes/det_boxes,
 * scores/det_scores, classes/det_classes/labels), then by shape for the rest (num_dets
 * [N, 1] or [N] integer, boxes [N, K, 4], scores [N, K] float, classes [N, K], integer
 * preferred). The four must agree on K.
 */
function matchSplit(outputs: readonly TensorInfo[]): SplitMatch | undefined {
  if (outputs.length < 4) return undefined;
  const m: Partial<SplitMatch> = {};
  const used = new Set<TensorInfo>();
  for (const key of Object.keys(SPLIT_NAMES) as (keyof SplitMatch)[]) {
    const hit = outputs.find((x) => !used.has(x) && SPLIT_NAMES[key].test(x.name));
    if (hit) {
      m[key] = hit;
      used.add(hit);
    }
  }
  const free = () => outputs.filter((x) => !used.has(x));
  const take = (key: keyof SplitMatch, pred: (x: TensorInfo) => boolean) => {
    if (m[key]) return;
    const hit = free().find(pred);
    if (hit) {
      m[key] = hit;
      used.add(hit);
    }
  };
  const isInt = (x: TensorInfo) => INT_TYPES.has(x.type);
  take('num', (x) => isInt(x) && ((x.dims.length === 2 && x.dims[1] === 1) || x.dims.length === 1));
  take('boxes', (x) => x.dims.length === 3 && x.dims[2] === 4);
  take('classes', (x) => isInt(x) && x.dims.length === 2 && x.dims[1] !== 1);
  take('scores', (x) => !isInt(x) && x.dims.length === 2);
  take('classes', (x) => x.dims.length === 2);
  if (!m.num || !m.boxes || !m.scores || !m.classes) return undefined;
  const { num, boxes, scores, classes } = m as SplitMatch;
  // Shapes must agree: boxes [N, K, 4], scores and classes [N, K].
  const ok =
    (num.dims.length === 1 || (num.dims.length === 2 && (num.dims[1] === 1 || !isNum(num.dims[1])))) &&
    boxes.dims.length === 3 &&
    (boxes.dims[2] === 4 || !isNum(boxes.dims[2])) &&
    scores.dims.length === 2 &&
    classes.dims.length === 2 &&
    sameDim(boxes.dims[1], scores.dims[1]) &&
    sameDim(scores.dims[1], classes.dims[1]);
  return ok ? { num, boxes, scores, classes } : undefined;
}

const sameDim = (a: number | string, b: number | string) => !isNum(a) || !isNum(b) || a === b;

function buildSplit(m: SplitMatch, ctx: Ctx): ModelDecoder {
  const K = m.scores.dims[1];
  return new End2EndSplitDecoder({
    outputNames: [m.num.name, m.boxes.name, m.scores.name, m.classes.name],
    rowsPerImage: isNum(K) ? K : undefined,
    numClasses: ctx.o.numClasses,
    maxDetections: ctx.o.maxDetections,
  });
}
