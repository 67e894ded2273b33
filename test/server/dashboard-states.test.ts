// Every source state has a name on the dashboard (its badge and its "down" banner) and a style:
// `stuck` (an ffmpeg stuck in the kernel) was added to sources/health.ts and not here, and such a
// tile showed the grey `unknown` badge, like a source of no known state.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SOURCE_STATES } from '../../src/sources/health.js';
// @ts-expect-error: the dashboard's own JavaScript, served as is (no types)
import { STATE_NAMES } from '../../src/server/dashboard/js/tile-state.js';

describe('the dashboard knows every source state', () => {
  it('each of SOURCE_STATES has a dashboard name, a badge style and, when down, a banner style', () => {
    const css = readFileSync(new URL('../../src/server/dashboard/style.css', import.meta.url), 'utf8');
    for (const state of SOURCE_STATES) {
      expect(STATE_NAMES, state).toContain(state);
      expect(css, `.state-${state}`).toMatch(new RegExp(`\\.state-${state}\\b`));
      // streaming is never down; the others have a banner colour of their own (or the grey default of ended and stopped)
      if (!['streaming', 'ended', 'stopped'].includes(state)) expect(css, `.down-${state}`).toMatch(new RegExp(`\\.down-${state}\\b`));
    }
  });
});
