import { describe, expect, it } from 'vitest';
import { KeyedTokenBuckets } from '../../src/core/rate.js';

describe('KeyedTokenBuckets', () => {
  it('a key takes up to `burst` at once, then one per 1/perSecond; a refusal takes nothing and says how long to wait; keys are apart', () => {
    const b = new KeyedTokenBuckets(3, 2);
    expect([0, 0, 0].map(() => b.take('a', 0))).toEqual([0, 0, 0]);
    expect(b.take('a', 0)).toBe(500);
    expect(b.take('a', 100)).toBe(400);
    expect(b.take('b', 100)).toBe(0);
    expect(b.take('a', 500)).toBe(0);
    expect(b.take('a', 500)).toBe(500);
    // Refilled up to the burst, never beyond: ten seconds idle still allows 3 in a row.
    expect([0, 0, 0, 0].map(() => b.take('a', 10_500))).toEqual([0, 0, 0, 500]);
  });

  it('a clock that goes back adds nothing', () => {
    const b = new KeyedTokenBuckets(1, 1);
    expect(b.take('a', 5000)).toBe(0);
    expect(b.take('a', 1000)).toBe(1000);
    expect(b.take('a', 5999)).toBe(1);
    expect(b.take('a', 6000)).toBe(0);
  });

  it('memory is bounded: a bucket full again is let go (prune), and beyond maxKeys the one used longest ago', () => {
    const b = new KeyedTokenBuckets(2, 1, 3);
    b.take('a', 0);
    b.take('b', 0);
    b.take('c', 0);
    b.take('a', 10); // a used last: b is the oldest
    b.take('d', 20);
    expect(b.size).toBe(3);
    expect(b.take('b', 20)).toBe(0); // let go: a fresh bucket
    b.take('b', 20);
    expect(b.take('b', 20)).toBeGreaterThan(0);
    b.prune(10_000);
    expect(b.size).toBe(0);
  });
});
