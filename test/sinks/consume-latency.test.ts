// argus consume's source → consumption latency: the consumer's clock against the stamp of
// another process (argus, often on another machine), which may be ahead of it.
import { describe, expect, it } from 'vitest';
import { SampleWindow } from '../../src/core/stats.js';
import { latencyFigures, sourceToConsume } from '../../src/sinks/consume.js';

const det = (produced: unknown) => ({ stamps: { produced } });

describe('argus consume: source → consume latency', () => {
  it('a stamp after this clock (the producer\'s clock ahead of this one\'s) is no latency: said as such, not a negative one', () => {
    const t = Date.UTC(2026, 11, 6, 8, 0, 0);
    expect(sourceToConsume(det(t - 40), t)).toEqual({ ms: 40 });
    // Before: -200 ms, printed and counted into p50/p99 as a latency.
    expect(sourceToConsume(det(t + 200), t)).toEqual({ aheadMs: 200 });
    expect(sourceToConsume(det(-1e308), t)).toBe('implausible');
    expect(sourceToConsume(det(t + 2 * 24 * 3600 * 1000), t)).toBe('implausible');
    expect(sourceToConsume({}, t)).toBeUndefined(); // a status message
  });

  it('p50/p99 of a window without a stamped record (a status topic) are said to be none, not NaN', () => {
    const w = new SampleWindow(10);
    expect(latencyFigures(w)).toBe('source→consume: no stamped records');
    w.add(12.34);
    w.add(20);
    expect(latencyFigures(w)).toBe('source→consume p50 12.3 ms  p99 20.0 ms');
  });
});
