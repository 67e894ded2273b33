import { lastValueFrom, of, type OperatorFunction } from 'rxjs';
import { PipelineSchema, type ModelRefConfig, type PipelineConfig, type PostprocessConfig } from '../config/schema.js';
import { now } from '../core/clock.js';
import { emptyStamps, type Frame } from '../core/frame.js';
import { letterbox } from '../core/geometry.js';
import type { LogFn } from '../core/log.js';
import { Pool } from '../core/pool.js';
import type { Detector } from '../inference/detector.js';
import { infer, type InferredFrame } from '../inference/infer.js';
import { loadDetector } from '../pipeline/pipeline.js';
import { postprocess, type DetectedFrame } from '../postprocess/postprocess.js';
import { letterboxTensor } from '../preprocess/letterbox.js';
import type { InputTensor, TensorFrame } from '../preprocess/preprocess.js';
import type { RawFrame } from './frames.js';

/**
 * `--model`: an ONNX file (`*.onnx`: the model describes itself) or a manifest, by name
 * (`yolox-nano`, models/NAME.yaml) or path. Default: the demo's, yolox-nano.
 */
export function modelRef(model: string | undefined): Pick<ModelRefConfig, 'manifest' | 'path'> {
  if (!model) return { manifest: 'yolox-nano' };
  return /\.onnx$/i.test(model) ? { path: model } : { manifest: model };
}

/**
 * The model for a one-off command: the pipeline's own loader on one session on this thread
 * (a worker thread would only add its start-up), no warm-up runs; the rest of the model
 * settings are the config's defaults, as the demo's. `base` is a pipeline's model section to
 * start from (`preview` uses its pipeline's).
 */
export function loadToolDetector(model: Pick<ModelRefConfig, 'manifest' | 'path'>, options: { baseDir?: string; log?: LogFn; base?: ModelRefConfig; field?: string } = {}): Promise<Detector> {
  const { manifest: _m, path: _p, ...rest } = options.base ?? {};
  const config: PipelineConfig = PipelineSchema.parse({ sources: [{ id: 'tool', uri: 'tool' }], model: { ...rest, ...model, workers: 0, warmupRuns: 0, batch: undefined } });
  return loadDetector(config, { baseDir: options.baseDir ?? process.cwd(), log: options.log }, options.field);
}

/**
 * Detection on full-resolution frames: the exact letterbox straight into the model's tensor,
 * then the pipeline's own inference and post-processing operators (decode, NMS, boxes mapped
 * back to source pixels). One frame at a time.
 */
export class FrameDetector {
  private readonly tensors: Pool<InputTensor>;
  private readonly run: OperatorFunction<TensorFrame, InferredFrame>;
  private readonly post: OperatorFunction<InferredFrame, DetectedFrame>;

  constructor(
    readonly detector: Detector,
    readonly options: PostprocessConfig,
  ) {
    this.tensors = new Pool(() => detector.createInput(), 1);
    this.run = infer(detector, this.tensors);
    this.post = postprocess(detector.decoder, detector.labels.length, options);
  }

  /** Detections of one packed RGB frame, in its pixels, with the pipeline frame they belong to (its letterbox maps from the full size). */
  async detect(f: RawFrame, source = 'tool'): Promise<DetectedFrame> {
    const d = this.detector;
    const lb = letterbox(f.width, f.height, d.inputWidth, d.inputHeight, d.align, d.rounding);
    const tensor = this.tensors.acquire();
    letterboxTensor(f.data, f.width, f.height, 'rgb', lb, tensor.data, { modelOrder: d.manifest.preprocess.channelOrder, normalize: d.normalize, padValue: d.padValue });
    const frame: Frame = { source, seq: f.index, pts: f.pts, data: f.data, layout: 'source', letterbox: lb, stamps: emptyStamps(now()), producedBy: 'captured', release: () => {} };
    frame.stamps.preprocessed = now();
    return lastValueFrom(of({ frame, tensor }).pipe(this.run, this.post));
  }
}
