import * as ort from 'onnxruntime-node';
import { MAX_MODEL_BATCH, type ExecutionProviderName, type ModelManifest } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { Family } from '../core/families.js';
import type { LetterboxAlign, LetterboxRounding } from '../core/geometry.js';
import { envChoice, type LogFn } from '../core/log.js';
import { describeModel, type ResolvedManifest } from '../models/describe.js';
import { modelFileProblem } from '../models/metadata.js';
import type { ModelDecoder, OutputData } from '../models/decoder.js';
import { createDecoder } from '../models/registry.js';
import type { NormalizeOptions } from '../preprocess/normalize.js';
import { Batcher } from './batcher.js';
import type { ProviderOptions } from './providers.js';
import { openSession } from './open-session.js';
import { releasedError, type ModelSession, type RunRequest, type StuckRun } from './session.js';

export interface DetectorOptions extends Partial<ProviderOptions> {
  providers: readonly ExecutionProviderName[];
  intraOpThreads: number;
  /** ONNX Runtime's intra-op threads may spin between operators. Default true (ONNX Runtime's default). */
  allowSpinning?: boolean;
  /** With spinning: at most this long, µs, before a thread sleeps. Default ONNX Runtime's. */
  spinMicros?: number;
  warmupRuns: number;
  /** Decoder family; default the manifest's, else detected from the outputs. */
  family?: Family | 'auto';
  /** Cross-source batching (models with a dynamic or fixed > 1 batch dimension). */
  batch?: { maxBatch: number; maxWaitMs: number };
  /** Sessions on worker threads (0, the default here: one session on the main thread). */
  workers?: number;
  /** Opens the session (default ONNX Runtime's; tests give a fake session with controllable outputs and timing). */
  openSession?: typeof openSession;
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

/** Per-run scratch (main-thread sessions): the batch tensor, one per run that can be in flight. */
interface Scratch {
  batch?: Float32Array;
}

/**
 * One loaded model: ONNX Runtime session(s) on the best available execution provider, its
 * pre-processing recipe and its decoder. As many runs execute at once as the session has
 * slots (worker threads); the rest wait in arrival order. With batching, frames from several
 * sources share a run.
 */
export class Detector {
  private readonly batcher: Batcher<InferOutput> | undefined;
  private readonly inputF16: boolean;
  private readonly scratch: Scratch[] = [];
  private released = false;
  /** Batch dimension: a number for fixed-batch models, undefined for dynamic. */
  readonly fixedBatch: number | undefined;
  readonly maxBatch: number;

  private constructor(
    readonly manifest: ResolvedManifest,
    readonly modelPath: string,
    readonly session: ModelSession,
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
      this.batcher = new Batcher<InferOutput>(
        { maxBatch: this.maxBatch, maxWaitMs: batch?.maxWaitMs ?? 4, concurrency: session.slots },
        (jobs, onStart) => this.runBatch(jobs.map((j) => j.image), onStart),
      );
    }
  }

  get provider(): ExecutionProviderName {
    return this.session.provider;
  }

  /** How long a model run has been in flight, ms, once it is past the session's stuck bound, and how many workers are stuck (ModelSession.stuckRun); else undefined. */
  stuckRun(): StuckRun | undefined {
    return this.session.stuckRun?.();
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
  get rounding(): LetterboxRounding {
    return this.manifest.preprocess.letterbox.rounding;
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
    const problem = modelFileProblem(modelPath);
    if (problem) throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${name}": ${problem}: ${modelPath}`);
    let session: ModelSession;
    try {
      session = await (options.openSession ?? openSession)(modelPath, {
        providers: options.providers,
        intraOpThreads: options.intraOpThreads,
        allowSpinning: options.allowSpinning,
        spinMicros: options.spinMicros,
        workers: options.workers ?? 0,
        deviceId: options.deviceId ?? 0,
        trtEngineCacheDir: options.trtEngineCacheDir,
        trtFp16: options.trtFp16,
        log,
      });
    } catch (e) {
      throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${name}": ONNX Runtime cannot load ${modelPath}: ${(e as Error).message}`, { cause: e });
    }
    for (const f of session.failed) log(`execution provider ${f.provider} unavailable, falling back`, { provider: f.provider, reason: f.reason }, 'warn');
    try {
      return await Detector.describe(manifest, modelPath, session, options, log);
    } catch (e) {
      await session.release().catch(() => {});
      throw e;
    }
  }

  private static async describe(manifest: ModelManifest | undefined, modelPath: string, session: ModelSession, options: DetectorOptions, log: LogFn): Promise<Detector> {
    const { manifest: m, family } = await describeModel(modelPath, manifest, options.family);
    const inputName = pickName(session.inputs.map((i) => i.name), m.input?.name);
    const inMeta = session.inputs.find((i) => i.name === inputName)!;
    const inShape = inMeta.dims;
    const inType = inMeta.type;
    const want = [1, 3, m.preprocess.height, m.preprocess.width];
    const inputOk = inShape.length === 4 && inShape.every((d, i) => typeof d === 'string' || d === -1 || d === want[i] || i === 0);
    if (!inputOk) {
      throw new ArgusError(
        ErrorCodes.MODEL_SHAPE,
        `model "${m.name}" (${modelPath}): input "${inputName}" has shape [${inShape.join(', ')}], the manifest's pre-processing makes [${want.join(', ')}]${layoutHint(inShape)}`,
      );
    }
    // argus feeds one float tensor: a uint8 image input (some exports take bytes) or a second
    // required input (PP-YOLOE's and RT-DETR's scale_factor, orig_target_sizes) would otherwise
    // fail every run, blamed on the frame.
    if (inType !== 'float32' && inType !== 'float16') {
      throw new ArgusError(ErrorCodes.MODEL_SHAPE, `model "${m.name}" (${modelPath}): input "${inputName}" takes ${inType}; argus feeds float32 (or float16) images, normalised as the manifest says`);
    }
    // A fixed batch dimension is what every run feeds, one camera's frame or not: 100000 took a
    // 5 GB input tensor and 46 s a frame at 64x64 (at 640x640, an uncoded typed-array error at
    // warm-up), and 0 failed every run ("Got: 1 Expected: 0"), blamed on the frame.
    const batchDim = inShape[0];
    if (typeof batchDim === 'number' && (batchDim === 0 || batchDim > MAX_MODEL_BATCH)) {
      throw new ArgusError(
        ErrorCodes.MODEL_SHAPE,
        `model "${m.name}" (${modelPath}): input "${inputName}" [${inShape.join(', ')}] has a fixed batch dimension of ${batchDim}; argus runs 1 to ${MAX_MODEL_BATCH} images at once (model.batch.maxBatch): export the model with batch 1 or a dynamic batch`,
      );
    }
    const others = session.inputs.filter((i) => i.name !== inputName).map((i) => `"${i.name}" (${i.type}[${i.dims.join(', ')}])`);
    if (others.length) {
      throw new ArgusError(ErrorCodes.MODEL_SHAPE, `model "${m.name}" (${modelPath}): besides the image "${inputName}", it requires ${others.join(', ')}; argus feeds only the image (export the model with those inputs folded in)`);
    }
    let decoder: ModelDecoder;
    try {
      decoder = createDecoder(family, { inputWidth: m.preprocess.width, inputHeight: m.preprocess.height, numClasses: m.labels.length, strides: m.decoder.strides, outputs: session.outputs });
    } catch (e) {
      if (e instanceof ArgusError) throw new ArgusError(e.code, `model "${m.name}" (${modelPath}): ${e.message}`);
      throw e;
    }
    const det = new Detector(m, modelPath, session, inputName, decoder, options.batch, inType, batchDim);
    log(`inference runs on execution provider ${session.provider}`, {
      provider: session.provider,
      threads: options.intraOpThreads,
      workers: options.workers ?? 0,
      model: m.name,
      family: decoder.family,
      batch: det.maxBatch,
      input: `${inType}[${inShape.join(',')}]`,
    });
    if (options.warmupRuns > 0) await det.warmup(options.warmupRuns);
    return det;
  }

  /** A reusable input buffer for one source's frames (shared memory when a worker runs the model). */
  createInput(): InputBuffer {
    return { data: this.floats(3 * this.inputWidth * this.inputHeight) };
  }

  private floats(n: number): Float32Array {
    return new Float32Array(this.session.sharedInputs ? new SharedArrayBuffer(n * 4) : new ArrayBuffer(n * 4));
  }

  /**
   * Runs the model on `input`. `onStart` is called when ONNX Runtime actually starts (after
   * the wait for a session or for a batch to fill), to stamp the frame. The input buffer
   * must not change until the promise settles. `bulk`: a fast file's frame, which waits behind
   * other sources' (ModelSession.run).
   */
  run(input: InputBuffer, onStart?: () => void, bulk?: boolean): Promise<InferOutput> {
    if (this.released) return Promise.reject(releasedError());
    if (this.batcher) return this.batcher.submit(input.data, onStart, bulk);
    return this.runBatch([input.data], onStart, bulk).then((r) => r[0]);
  }

  /** One ONNX Runtime run over `images` (copied into one batch tensor when more than one). */
  private async runBatch(images: Float32Array[], onStart?: () => void, bulk?: boolean): Promise<InferOutput[]> {
    const plane = 3 * this.inputWidth * this.inputHeight;
    const n = this.fixedBatch ?? images.length;
    const s = this.scratch.pop() ?? {};
    try {
      const dims = [n, 3, this.inputHeight, this.inputWidth];
      const base = { name: this.inputName, dims, outputNames: this.decoder.outputNames };
      const type = this.inputF16 ? 'float16' : 'float32';
      let req: RunRequest;
      if (n > 1 && this.session.sharedInputs) {
        // A worker session concatenates the images as it copies them (one copy, off this thread).
        req = { ...base, type, data: images[0], parts: images };
      } else if (n === 1) {
        req = { ...base, type, data: images[0] };
      } else {
        s.batch ??= this.floats(plane * this.maxBatch);
        images.forEach((img, i) => s.batch!.set(img, i * plane));
        if (this.fixedBatch && images.length < n) s.batch.fill(0, images.length * plane, n * plane);
        req = { ...base, type, data: s.batch.subarray(0, n * plane) };
      }
      const out = await this.session.run(req, onStart, bulk);
      const outputs = out.map((t) => t.data);
      return images.map((_, batchIndex) => ({ outputs, batchIndex }));
    } finally {
      this.scratch.push(s);
    }
  }

  private async warmup(n: number): Promise<void> {
    const input = this.createInput();
    input.data.fill(this.padValue * this.manifest.preprocess.scale);
    // Every worker's session warms up (each has its own).
    for (let i = 0; i < n; i++) await Promise.all(Array.from({ length: this.session.slots }, () => this.runBatch([input.data])));
  }

  /** Frames waiting for a batch and later runs are rejected at once; runs in flight finish first. */
  release(): Promise<void> {
    this.released = true;
    this.batcher?.close(releasedError());
    return this.session.release();
  }
}

/** The levels ARGUS_ORT_LOG_LEVEL may name (ONNX Runtime's). */
export const ORT_LOG_LEVELS = ['verbose', 'info', 'warning', 'error', 'fatal'] as const;

/**
 * $ARGUS_ORT_LOG_LEVEL's level, `fatal` by default (envChoice). ONNX Runtime's setter threw on
 * another as this module loaded: a stack trace, and no code.
 */
export function ortLogLevel(env: NodeJS.ProcessEnv = process.env): (typeof ORT_LOG_LEVELS)[number] {
  return envChoice(env, 'ARGUS_ORT_LOG_LEVEL', ORT_LOG_LEVELS, 'fatal');
}

// ONNX Runtime's own logger would print each failed provider load as an error before we fall
// back; the fallback is logged by us instead. ARGUS_ORT_LOG_LEVEL restores its output. A value
// that is no level is refused by the CLI as it starts (cli.ts); here, where a throw would fail
// the import, it stays at fatal.
ort.env.logLevel = (() => {
  try {
    return ortLogLevel();
  } catch {
    return 'fatal';
  }
})();

/**
 * Why an image input argus cannot feed is not its layout, when its shape says: channels last
 * ([1, 640, 640, 3], a TensorFlow-style export: its H and W were read as [640, 3]) or one channel
 * (a greyscale model).
 */
function layoutHint(dims: readonly (number | string)[]): string {
  if (dims.length !== 4) return `: argus feeds one image tensor [N, 3, H, W] (rank 4, channels first)`;
  const c = (d: number | string | undefined) => d === 1 || d === 3;
  if (c(dims[3]) && !c(dims[1])) return `: it is channels-last (NHWC, [N, H, W, C]); argus feeds channels-first [N, 3, H, W]: export the model with NCHW input`;
  if (dims[1] === 1) return `: it takes 1 channel (greyscale); argus feeds 3 (colour)`;
  return '';
}

function pickName(names: readonly string[], wanted: string | undefined): string {
  if (wanted && names.includes(wanted)) return wanted;
  return names[0];
}
