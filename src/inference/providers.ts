import type { InferenceSession } from 'onnxruntime-node';
import type { ExecutionProviderName } from '../config/schema.js';
import { openFirstWorking, type ProviderAttempt, type ProviderChoice } from './provider-fallback.js';

export interface ProviderOptions {
  deviceId: number;
  /** TensorRT: where built engines are cached between runs. */
  trtEngineCacheDir?: string;
  /** TensorRT: build fp16 engines. */
  trtFp16?: boolean;
}

/**
 * The order in which execution providers are tried: the configured ones, de-duplicated, with
 * CPU last whether or not it was asked for. Each attempt is one provider (plus CPU for the
 * operators it does not cover).
 */
export function providerAttempts(requested: readonly ExecutionProviderName[]): ExecutionProviderName[] {
  const out: ExecutionProviderName[] = [];
  for (const p of requested) if (p !== 'cpu' && !out.includes(p)) out.push(p);
  out.push('cpu');
  return out;
}

export function providerConfig(name: ExecutionProviderName, o: ProviderOptions): InferenceSession.ExecutionProviderConfig[] {
  switch (name) {
    case 'cpu':
      return ['cpu'];
    case 'cuda':
      return [{ name: 'cuda', deviceId: o.deviceId } as InferenceSession.ExecutionProviderConfig, 'cpu'];
    case 'tensorrt': {
      const trt: Record<string, unknown> = { name: 'tensorrt', deviceId: o.deviceId };
      if (o.trtEngineCacheDir) {
        trt.trt_engine_cache_enable = '1';
        trt.trt_engine_cache_path = o.trtEngineCacheDir;
      }
      if (o.trtFp16) trt.trt_fp16_enable = '1';
      return [trt as unknown as InferenceSession.ExecutionProviderConfig, { name: 'cuda', deviceId: o.deviceId } as InferenceSession.ExecutionProviderConfig, 'cpu'];
    }
  }
}

/** `names` in order, each with the provider list ONNX Runtime is given for it. */
export function attemptList(names: readonly ExecutionProviderName[], o: ProviderOptions): ProviderAttempt<InferenceSession.ExecutionProviderConfig[]>[] {
  return names.map((provider) => ({ provider, config: providerConfig(provider, o) }));
}

/**
 * Creates a session with the first provider that works, in `providerAttempts` order (CPU last).
 * `create` is ONNX Runtime's `InferenceSession.create` in production and a fake in tests of
 * the selection logic. Throws the CPU attempt's error if even CPU fails (then the model itself
 * is at fault). The worker threads run the same loop (`openFirstWorking`) on `attemptList`.
 */
export function createWithFallback<S>(
  requested: readonly ExecutionProviderName[],
  create: (providers: InferenceSession.ExecutionProviderConfig[], provider: ExecutionProviderName) => Promise<S>,
  options: ProviderOptions,
): Promise<ProviderChoice<S>> {
  return openFirstWorking(attemptList(providerAttempts(requested), options), create);
}
