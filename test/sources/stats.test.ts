import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { Transition } from '../../src/sources/health.js';
import { newSourceStats, recordTransition } from '../../src/sources/stats.js';

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
