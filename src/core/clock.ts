const origin = performance.timeOrigin;

/** Wall-clock epoch milliseconds with sub-millisecond precision (monotonic within a process). */
export function now(): number {
  return origin + performance.now();
}
