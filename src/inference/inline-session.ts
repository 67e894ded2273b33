import * as ort from 'onnxruntime-node';
import type { ExecutionProviderName } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { OutputData } from '../models/decoder.js';
import { float16ToFloat32, float32ToFloat16 } from '../models/fp16.js';
import { sessionTensors, type TensorInfo } from '../models/tensor-info.js';
import type { ProviderFailure } from './provider-fallback.js';
import { createWithFallback } from './providers.js';
import { enqueue, ortSessionOptions, type ModelSession, type RunOutput, type RunRequest, type SessionOptions } from './session.js';

/** One session on the calling thread: each run blocks the event loop while it executes. */
export class InlineSession implements ModelSession {
  readonly slots = 1;
  readonly sharedInputs = false;
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  /** Runs waiting for the one in flight (fast files' after the others: enqueue). */
  private readonly queue: { start: () => void; bulk?: boolean; overtaken?: number }[] = [];
  private running = false;
  /** fp16 models: the narrowed input and the widened outputs, reused (runs are serialised). */
  private f16In: Uint16Array | undefined;
  private readonly f16Out = new Map<string, Float32Array>();

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly provider: ExecutionProviderName,
    readonly failed: readonly ProviderFailure[],
  ) {
    ({ inputs: this.inputs, outputs: this.outputs } = sessionTensors(session));
  }

  static async open(modelPath: string, o: SessionOptions): Promise<InlineSession> {
    const choice = await createWithFallback(o.providers, (executionProviders) => ort.InferenceSession.create(modelPath, { ...ortSessionOptions(o), executionProviders }), o);
    return new InlineSession(choice.session, choice.provider, choice.failed);
  }

  /** Runs one at a time, in call order, fast files' after the others' (each waits for the one before to settle). */
  run(req: RunRequest, onStart?: () => void, bulk?: boolean): Promise<RunOutput[]> {
    return new Promise<RunOutput[]>((resolve, reject) => {
      enqueue(this.queue, { bulk, start: () => this.execute(req, onStart).then(resolve, reject).finally(() => this.next()) });
      if (!this.running) this.next();
    });
  }

  private next(): void {
    const job = this.queue.shift();
    this.running = job !== undefined;
    job?.start();
  }

  private async execute(req: RunRequest, onStart?: () => void): Promise<RunOutput[]> {
    onStart?.();
    let tensor: ort.Tensor;
    if (req.type === 'float16') {
      if (this.f16In?.length !== req.data.length) this.f16In = new Uint16Array(req.data.length);
      tensor = new ort.Tensor('float16', float32ToFloat16(req.data, this.f16In), req.dims);
    } else tensor = new ort.Tensor('float32', req.data, req.dims);
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await this.session.run({ [req.name]: tensor }, req.outputNames as string[]);
    } catch (e) {
      throw new ArgusError(ErrorCodes.MODEL_RUN, `ONNX Runtime run failed: ${(e as Error).message}`, { cause: e });
    }
    return req.outputNames.map((n) => {
      const t = out[n];
      if (t.type !== 'float16') return { type: t.type, data: t.data as OutputData };
      const src = t.data as Uint16Array;
      let dst = this.f16Out.get(n);
      if (dst?.length !== src.length) this.f16Out.set(n, (dst = new Float32Array(src.length)));
      return { type: 'float32', data: float16ToFloat32(src, dst) };
    });
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
