import { existsSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import type { ExecutionProviderName, ModelManifest } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LetterboxAlign } from '../core/geometry.js';
import type { LogFn } from '../core/log.js';
import { describeModel, type ResolvedManifest } from '../models/describe.js';
import { float16ToFloat32, float32ToFloat16 } from '../models/fp16.js';
import { createDecoder, type Family, type ModelDecoder, type OutputData } from '../models/registry.js';
import type { NormalizeOptions } from '../preprocess/normalize.js';
import { Batcher } from './batcher.js';
import { createWithFallback, type ProviderOptions } from './providers.js';

export interface DetectorOptions extends Partial<ProviderOptions> {
  providers: readonly ExecutionProviderName[];
  intraOpThreads: number;
  warmupRuns: number;
  /** Decoder family; default the manifest's, else detected from the outputs. */
  family?: Family | 'auto';
  /** Cross-source batching (models with a dynamic or fixed > 1 batch dimension). */
  batch?: { maxBatch: number; maxWaitMs: number };
  log?: LogFn;
}

/** One frame's input: the preprocessed image (CHW float32), reused for every frame of a source. */
export interface InputBuffer {
  data: Float32Array;
}

/** A run's outputs for one frame: the batch's outputs (decoder order) and this frame's index in them. */
export interface InferOutput {
  outputs: readonly OutputData[];
  batchIndex: number;
}

/**
 * One loaded model: an ONNX Runtime session on the best available execution provider, its
 * pre-processing recipe and its decoder. Runs are serialised (one in flight per session);
 * with batching, frames from several sources share a run.
 */
export class Detector {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly batcher: Batcher<InferOutput> | undefined;
  private readonly inputF16: boolean;
  private readonly f16Out = new Map<string, Float32Array>();
  /** Reused fp16 input buffer (fp16 models). */
  private f16In: Uint16Array | undefined;
  /** Batch dimension: a number for fixed-batch models, undefined for dynamic. */
  readonly fixedBatch: number | undefined;
  readonly maxBatch: number;

  private constructor(
    readonly manifest: ResolvedManifest,
    readonly modelPath: string,
    readonly session: ort.InferenceSession,
    readonly provider: ExecutionProviderName,
    readonly inputName: string,
    readonly decoder: ModelDecoder,
    batch: { maxBatch: number; maxWaitMs: number } | undefined,
    inputType: string,
    batchDim: number | string,
  ) {
    this.inputF16 = inputType === 'float16';
    this.fixedBatch = typeof batchDim === 'number' && batchDim > 0 ? batchDim : undefined;
    const want = batch?.maxBatch ?? 1;
    this.maxBatch = this.fixedBatch !== undefined ? this.fixedBatch : want;
    if (this.maxBatch > 1 || (this.fixedBatch ?? 1) > 1) {
      this.batcher = new Batcher<InferOutput>({ maxBatch: this.maxBatch, maxWaitMs: batch?.maxWaitMs ?? 4 }, (jobs) => this.runBatch(jobs.map((j) => j.image)));
    }
  }

  get inputWidth(): number {
    return this.manifest.preprocess.width;
  }
  get inputHeight(): number {
    return this.manifest.preprocess.height;
  }
  get pixelFormat(): 'bgr24' | 'rgb24' {
    return this.manifest.preprocess.channelOrder === 'bgr' ? 'bgr24' : 'rgb24';
  }
  get align(): LetterboxAlign {
    return this.manifest.preprocess.letterbox.align;
  }
  get padValue(): number {
    return this.manifest.preprocess.letterbox.pad;
  }
  get normalize(): NormalizeOptions {
    const p = this.manifest.preprocess;
    return { scale: p.scale, mean: p.mean, std: p.std };
  }
  get labels(): readonly string[] {
    return this.manifest.labels;
  }
  /** Batch sizes run so far (batching only). */
  get batchSizes(): readonly number[] {
    return this.batcher?.sizes ?? [];
  }

  /**
   * Loads the model. `manifest` undefined: the model describes itself (ONNX metadata, shapes).
   * Errors: MODEL_LOAD (missing file, not ONNX, no labels), MODEL_SHAPE (outputs fit no
   * decoder, input size differs from the pre-processing).
   */
  static async load(manifest: ModelManifest | undefined, modelPath: string, options: DetectorOptions): Promise<Detector> {
    const log = options.log ?? (() => {});
    const name = manifest?.name ?? modelPath;
    if (!existsSync(modelPath)) {
      throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${name}": file not found: ${modelPath}`);
    }
    let choice;
    try {
      choice = await createWithFallback(
        options.providers,
        (executionProviders) =>
          ort.InferenceSession.create(modelPath, {
            executionProviders,
            intraOpNumThreads: options.intraOpThreads,
            interOpNumThreads: 1,
            graphOptimizationLevel: 'all',
            // EP load failures are reported by us, once, with the fallback taken.
            logSeverityLevel: 4,
          }),
        { deviceId: options.deviceId ?? 0, trtEngineCacheDir: options.trtEngineCacheDir, trtFp16: options.trtFp16 },
      );
    } catch (e) {
      throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${name}": ONNX Runtime cannot load ${modelPath}: ${(e as Error).message}`, { cause: e });
    }
    for (const f of choice.failed) log(`execution provider ${f.provider} unavailable, falling back`, { provider: f.provider, reason: f.reason }, 'warn');
    const session = choice.session;
    const { manifest: m, family } = await describeModel(modelPath, manifest, options.family);
    const inputName = pickName(session.inputNames, m.input?.name);
    const inMeta = session.inputMetadata[session.inputNames.indexOf(inputName)];
    const inShape = inMeta && 'shape' in inMeta ? inMeta.shape : [];
    const inType = inMeta && 'type' in inMeta ? String(inMeta.type) : 'float32';
    const want = [1, 3, m.preprocess.height, m.preprocess.width];
    const inputOk = inShape.length === 4 && inShape.every((d, i) => typeof d === 'string' || d === -1 || d === want[i] || i === 0);
    if (!inputOk) {
      throw new ArgusError(
        ErrorCodes.MODEL_SHAPE,
        `model "${m.name}" (${modelPath}): input "${inputName}" has shape [${inShape.join(', ')}], the manifest's pre-processing makes [${want.join(', ')}]`,
      );
    }
    const outputs = session.outputNames.map((n, i) => {
      const md = session.outputMetadata[i];
      return { name: n, dims: md && 'shape' in md ? md.shape : [], type: md && 'type' in md ? String(md.type) : 'float32' };
    });
    let decoder: ModelDecoder;
    try {
      decoder = createDecoder(family, { inputWidth: m.preprocess.width, inputHeight: m.preprocess.height, numClasses: m.labels.length, strides: m.decoder.strides, outputs });
    } catch (e) {
      if (e instanceof ArgusError) throw new ArgusError(e.code, `model "${m.name}" (${modelPath}): ${e.message}`);
      throw e;
    }
    const det = new Detector(m, modelPath, session, choice.provider, inputName, decoder, options.batch, inType, inShape[0]);
    log(`inference runs on execution provider ${choice.provider}`, {
      provider: choice.provider,
      threads: options.intraOpThreads,
      model: m.name,
      family: decoder.family,
      batch: det.maxBatch,
      input: `${inType}[${inShape.join(',')}]`,
    });
    if (options.warmupRuns > 0) await det.warmup(options.warmupRuns);
    return det;
  }

  /** A reusable input buffer for one source's frames. */
  createInput(): InputBuffer {
    return { data: new Float32Array(3 * this.inputWidth * this.inputHeight) };
  }

  /**
   * Runs the model on `input`. `onStart` is called when ONNX Runtime actually starts (after
   * the wait for the session or for a batch to fill), to stamp the frame.
   */
  run(input: InputBuffer, onStart?: () => void): Promise<InferOutput> {
    if (this.batcher) return this.batcher.submit(input.data, onStart);
    const job = this.tail.then(async () => {
      onStart?.();
      const [r] = await this.runBatch([input.data]);
      return r;
    });
    this.tail = job.catch(() => undefined);
    return job;
  }

  private batchBuffer: Float32Array | undefined;

  /** One ONNX Runtime run over `images` (copied into one batch tensor when more than one). */
  private async runBatch(images: Float32Array[]): Promise<InferOutput[]> {
    const plane = 3 * this.inputWidth * this.inputHeight;
    const n = this.fixedBatch ?? images.length;
    let data: Float32Array;
    if (n === 1) data = images[0];
    else {
      this.batchBuffer ??= new Float32Array(plane * this.maxBatch);
      images.forEach((img, i) => this.batchBuffer!.set(img, i * plane));
      if (this.fixedBatch && images.length < n) this.batchBuffer.fill(0, images.length * plane, n * plane);
      data = this.batchBuffer.subarray(0, n * plane);
    }
    const dims = [n, 3, this.inputHeight, this.inputWidth];
    let tensor: ort.Tensor;
    if (this.inputF16) {
      if (this.f16In?.length !== data.length) this.f16In = new Uint16Array(data.length);
      tensor = new ort.Tensor('float16', float32ToFloat16(data, this.f16In), dims);
    } else tensor = new ort.Tensor('float32', data, dims);
    const out = await this.session.run({ [this.inputName]: tensor }, this.decoder.outputNames as string[]);
    const outputs = this.decoder.outputNames.map((name) => {
      const t = out[name];
      if (t.type === 'float16') {
        const src = t.data as Uint16Array;
        let dst = this.f16Out.get(name);
        if (!dst || dst.length !== src.length) this.f16Out.set(name, (dst = new Float32Array(src.length)));
        return float16ToFloat32(src, dst);
      }
      return t.data as OutputData;
    });
    return images.map((_, batchIndex) => ({ outputs, batchIndex }));
  }

  private async warmup(n: number): Promise<void> {
    const input = this.createInput();
    input.data.fill(this.padValue * this.manifest.preprocess.scale);
    for (let i = 0; i < n; i++) await this.runBatch([input.data]);
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

// ONNX Runtime's own logger would print each failed provider load as an error before we fall
// back; the fallback is logged by us instead. ARGUS_ORT_LOG_LEVEL restores its output.
ort.env.logLevel = (process.env.ARGUS_ORT_LOG_LEVEL as typeof ort.env.logLevel | undefined) ?? 'fatal';

function pickName(names: readonly string[], wanted: string | undefined): string {
  if (wanted && names.includes(wanted)) return wanted;
  return names[0];
}
