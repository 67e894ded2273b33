import { InlineSession } from './inline-session.js';
import type { ModelSession, SessionOptions } from './session.js';
import { WorkerPool } from './worker-pool.js';

/** Opens the model: on worker threads when `workers` > 0, else on this thread. */
export function openSession(modelPath: string, o: SessionOptions): Promise<ModelSession> {
  return o.workers > 0 ? WorkerPool.open(modelPath, o) : InlineSession.open(modelPath, o);
}
