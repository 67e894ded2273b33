import { describe, expect, it } from 'vitest';
import { Cooldown } from '../../src/analytics/cooldown.js';

describe('a rule cooldown given times out of order (when each alert happened, not the frame that raised it)', () => {
  it('under a cooldown of 0 (the default) nothing is held back, whatever the order', () => {
    const cd = new Cooldown(0);
    expect([cd.allow('7', 1000), cd.allow('7', 900), cd.allow('7', 1000), cd.allow('7', 400)]).toEqual([true, true, true, true]);
  });

  it('under 1 s: one within 1 s either side of the last allowed is held back; the key goes on from the later', () => {
    const cd = new Cooldown(1000);
    expect(cd.allow('7', 5000)).toBe(true);
    expect(cd.allow('7', 4200)).toBe(false); // 0.8 s before it
    expect(cd.allow('7', 3500)).toBe(true); // 1.5 s before it
    expect(cd.allow('7', 5900)).toBe(false); // 0.9 s after 5.0 s: not counted from 3.5 s
    expect(cd.allow('7', 6000)).toBe(true);
  });
});
