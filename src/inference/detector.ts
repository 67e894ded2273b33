import { existsSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import type { ExecutionProviderName, ModelManifest } from '../config/schema.js';
import type { LogFn } from '../core/log.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LetterboxAlign } from '../core/geometry.js';
import type { Decoder } from '../models/decoder.js';
import { YoloxDecoder } from '../models/yolox.js';
import type { NormalizeOptions } from '../preprocess/normalize.js';
import { createWithFallback, type ProviderOptions } from './providers.js';

export interface DetectorOptions extends Partial<ProviderOptions> {
  providers: readonly ExecutionProviderName[];
  intraOpThreads: number;
  warmupRuns: number;
  log?: LogFn;
}

/** An input tensor whose data buffer is written in place for every frame. */
export interface InputBuffer {
  data: Float32Array;
  tensor: ort.Tensor;
}

/**
 * One loaded model: an ONNX Runtime session on the best available execution provider, its
 * pre-processing recipe and its decoder. Runs are serialised (one in flight per session),
 * first come first served, so sources sharing it take turns.
 */
export class Detector {
  private tail: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly manifest: ModelManifest,
    readonly modelPath: string,
    readonly session: ort.InferenceSession,
    readonly provider: ExecutionProviderName,
    readonly inputName: string,
    readonly outputName: string,
    readonly decoder: Decoder,
  ) {}

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

  static async load(manifest: ModelManifest, modelPath: string, options: DetectorOptions): Promise<Detector> {
    const log = options.log ?? (() => {});
    if (!existsSync(modelPath)) {
      throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${manifest.name}": file not found: ${modelPath}`);
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
      throw new ArgusError(ErrorCodes.MODEL_LOAD, `model "${manifest.name}": ONNX Runtime cannot load ${modelPath}: ${(e as Error).message}`, { cause: e });
    }
    for (const f of choice.failed) log(`execution provider ${f.provider} unavailable, falling back`, { provider: f.provider, reason: f.reason }, 'warn');
    log(`inference runs on execution provider ${choice.provider}`, { provider: choice.provider, threads: options.intraOpThreads, model: manifest.name });

    const session = choice.session;
    const inputName = pickName(session.inputNames, manifest.input.name);
    const outputName = pickName(session.outputNames, manifest.output.name);
    const decoder = makeDecoder(manifest, modelPath, session, inputName, outputName);
    const det = new Detector(manifest, modelPath, session, choice.provider, inputName, outputName, decoder);
    if (options.warmupRuns > 0) await det.warmup(options.warmupRuns);
    return det;
  }

  /** A tensor of the model's input shape backed by a reusable Float32Array. */
  createInput(): InputBuffer {
    const data = new Float32Array(3 * this.inputWidth * this.inputHeight);
    return { data, tensor: new ort.Tensor('float32', data, [1, 3, this.inputHeight, this.inputWidth]) };
  }

  /**
   * Runs the model once `input` reaches the front of the session's queue. `onStart` is called
   * when ONNX Runtime actually starts (after the wait), to stamp the frame.
   */
  run(input: InputBuffer, onStart?: () => void): Promise<Float32Array> {
    const job = this.tail.then(async () => {
      onStart?.();
      const out = await this.session.run({ [this.inputName]: input.tensor }, [this.outputName]);
      return out[this.outputName].data as Float32Array;
    });
    this.tail = job.catch(() => undefined);
    return job;
  }

  private async warmup(n: number): Promise<void> {
    const input = this.createInput();
    input.data.fill(this.padValue);
    for (let i = 0; i < n; i++) {
      const out = await this.session.run({ [this.inputName]: input.tensor }, [this.outputName]);
      const t = out[this.outputName];
      if (this.decoder instanceof YoloxDecoder) this.decoder.checkOutput(t.dims);
    }
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

function makeDecoder(m: ModelManifest, path: string, s: ort.InferenceSession, inputName: string, outputName: string): Decoder {
  const inMeta = s.inputMetadata[s.inputNames.indexOf(inputName)];
  const outMeta = s.outputMetadata[s.outputNames.indexOf(outputName)];
  const inShape = inMeta && 'shape' in inMeta ? inMeta.shape : [];
  const outShape = outMeta && 'shape' in outMeta ? outMeta.shape : [];
  const want = [1, 3, m.preprocess.height, m.preprocess.width];
  const inputOk = inShape.length === 4 && inShape.every((d, i) => typeof d === 'string' || d === want[i] || (i === 0 && d === -1));
  if (!inputOk) {
    throw new ArgusError(
      ErrorCodes.MODEL_SHAPE,
      `model "${m.name}" (${path}): input "${inputName}" has shape [${inShape.join(', ')}], the manifest's pre-processing makes [${want.join(', ')}]`,
    );
  }
  const dec = new YoloxDecoder({ inputWidth: m.preprocess.width, inputHeight: m.preprocess.height, numClasses: m.labels.length, strides: m.decoder.strides });
  try {
    dec.checkOutput(outShape);
  } catch (e) {
    throw new ArgusError(ErrorCodes.MODEL_SHAPE, `model "${m.name}" (${path}): output "${outputName}": ${(e as Error).message}`);
  }
  return dec;
}
