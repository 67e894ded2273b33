import { afterEach, describe, expect, it, vi } from 'vitest';
import { ThrottledLog, type LogFn } from '../../src/core/log.js';

describe('ThrottledLog', () => {
  afterEach(() => vi.useRealTimers());

  it('logs the first event of a kind at once, then one line at the end of the window with how many more there were', () => {
    vi.useFakeTimers();
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const out: LogFn = (m, f) => lines.push([m, f]);
    const t = new ThrottledLog(out, 10_000);
    for (let i = 0; i < 500; i++) t.log('origin', 'refused', { origin: `o${i}` }, 'warn');
    t.log('kick', 'kicked', { code: 1008 }, 'warn'); // another kind: its own window
    expect(lines).toEqual([['refused', { origin: 'o0' }], ['kicked', { code: 1008 }]]);
    vi.advanceTimersByTime(10_000);
    expect(lines.slice(2)).toEqual([['refused (and 499 more like it in 10 s)', { origin: 'o499', suppressed: 499 }]]);
    // A window with nothing more closes silently, and the next event is logged at once again.
    t.log('origin', 'refused', { origin: 'later' }, 'warn');
    expect(lines.at(-1)).toEqual(['refused', { origin: 'later' }]);
    expect(lines).toHaveLength(4);
  });
});
