import type { Detector, InferOutput, InputBuffer } from '../../src/inference/detector.js';

/**
 * `det` as the stages see it, except that its runs are held until `n` have been asked for and
 * are then submitted to `det` in one go (one synchronous block), as `n` sources whose frames
 * arrive at the same moment would. With `maxBatch` = `n`, the batcher then sends exactly one
 * batch of `n`, however far apart the decodes finished: no dependence on `maxWaitMs`.
 */
export function together(det: Detector, n: number): Detector {
  const held: { input: InputBuffer; onStart?: () => void; resolve: (r: InferOutput) => void; reject: (e: unknown) => void }[] = [];
  const run = (input: InputBuffer, onStart?: () => void) =>
    new Promise<InferOutput>((resolve, reject) => {
      held.push({ input, onStart, resolve, reject });
      if (held.length < n) return;
      for (const h of held.splice(0)) det.run(h.input, h.onStart).then(h.resolve, h.reject);
    });
  return Object.create(det, { run: { value: run } }) as Detector;
}
