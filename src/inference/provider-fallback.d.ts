/** Types of provider-fallback.js (plain JavaScript, shared with the inference worker thread). */
import type { ExecutionProviderName } from '../config/schema.js';

/** One execution provider to try, with the provider list ONNX Runtime is given for it. */
export interface ProviderAttempt<C> {
  provider: ExecutionProviderName;
  config: C;
}

/** A provider that was tried and failed, with the first line of ONNX Runtime's reason. */
export interface ProviderFailure {
  provider: ExecutionProviderName;
  reason: string;
}

export interface ProviderChoice<S> {
  session: S;
  provider: ExecutionProviderName;
  /** Providers that were tried first and failed. */
  failed: ProviderFailure[];
}

/**
 * Creates a session with the first attempt that works, trying `attempts` in order; throws the
 * last attempt's error when every one fails (with CPU last: the model itself is at fault).
 */
export function openFirstWorking<S, C>(attempts: readonly ProviderAttempt<C>[], create: (config: C, provider: ExecutionProviderName) => Promise<S>): Promise<ProviderChoice<S>>;
