import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { Transition } from '../../src/sources/health.js';
import { FrameRates, newSourceStats, recordTransition } from '../../src/sources/stats.js';

describe('recordTransition', () => {
  it('keeps the state and the latest change; each reconnect counts once, a resolution change reported while reconnecting does not', () => {
    const st = newSourceStats('cam');
    const t = (state: Transition['state'], previous: Transition['state'], code?: string): Transition => ({ source: 'cam', state, previous, reason: 'r', at: 0, attempt: 1, ...(code ? { code } : {}) });
    recordTransition(st, t('streaming', 'starting'));
    recordTransition(st, t('reconnecting', 'streaming', ErrorCodes.SOURCE_EXIT));
    recordTransition(st, t('reconnecting', 'reconnecting', ErrorCodes.SOURCE_RESIZED));
    recordTransition(st, t('reconnecting', 'reconnecting', ErrorCodes.SOURCE_EXIT)); // a second failed attempt
    expect(st.reconnects).toBe(2);
    expect(st.state).toBe('reconnecting');
    expect(st.lastTransition?.code).toBe(ErrorCodes.SOURCE_EXIT);
  });
});

describe('FrameRates', () => {
  const at = (id: string, framesIn: number, framesOut: number) => Object.assign(newSourceStats(id), { framesIn, framesOut });

  it('frames a second in and out since the previous sample; a source\'s first sample reports 0', () => {
    const m = new FrameRates();
    expect(m.sample([at('a', 100, 90)], 0).get('a')).toEqual({ fpsIn: 0, fpsOut: 0 });
    expect(m.sample([at('a', 130, 110)], 1000).get('a')).toEqual({ fpsIn: 30, fpsOut: 20 });
    expect(m.sample([at('a', 145, 125)], 1500).get('a')).toEqual({ fpsIn: 30, fpsOut: 30 });
  });

  it('a source no longer listed is forgotten: added again under its id (its counters from 0), it starts from a new baseline, not a negative rate', () => {
    const m = new FrameRates();
    m.sample([at('a', 500, 500), at('b', 1, 1)], 0);
    m.sample([at('a', 530, 530), at('b', 2, 2)], 1000);
    m.sample([at('b', 3, 3)], 2000); // a removed (or moved to another worker)
    expect(m.sample([at('a', 10, 10), at('b', 4, 4)], 3000).get('a')).toEqual({ fpsIn: 0, fpsOut: 0 });
    expect(m.sample([at('a', 40, 35), at('b', 5, 5)], 4000).get('a')).toEqual({ fpsIn: 30, fpsOut: 25 });
  });
});
