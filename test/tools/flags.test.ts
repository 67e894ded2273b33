import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { batchSources, decimal, fraction, MAX_TIMER_SECONDS, positiveInt, positiveNumber, seconds, wholeNumber } from '../../src/tools/flags.js';

const refused = (parse: (t: string) => number, text: string) => expect(() => parse(text), JSON.stringify(text)).toThrow(InvalidArgumentError);

describe('numeric flags of the command line', () => {
  it('a number is decimal as typed: not empty, hex, Infinity or words (Number() took "" as 0 and 0x10 as 16)', () => {
    expect([decimal('30'), decimal(' 2.5 '), decimal('1e3'), decimal('-1'), decimal('.5')]).toEqual([30, 2.5, 1000, -1, 0.5]);
    for (const t of ['', ' ', '0x10', '0b1', 'Infinity', '-Infinity', 'NaN', 'abc', '1,5', '5s']) expect(decimal(t), t).toBeNaN();
  });

  it('whole numbers in their range', () => {
    expect(positiveInt('300')).toBe(300);
    for (const t of ['0', '-5', '1.5', 'abc', '', '1e300']) refused(positiveInt, t);
    const live = wholeNumber(1, MAX_TIMER_SECONDS);
    expect(live(String(MAX_TIMER_SECONDS))).toBe(MAX_TIMER_SECONDS);
    refused(live, String(MAX_TIMER_SECONDS + 1));
    expect(() => live('0')).toThrow(`expected a whole number from 1 to ${MAX_TIMER_SECONDS}`);
  });

  it('--batch-sources: 0 (off) or 2 to 64', () => {
    expect([batchSources('0'), batchSources('2'), batchSources('64')]).toEqual([0, 2, 64]);
    for (const t of ['1', '-3', '65', '2.5', 'abc', '']) refused(batchSources, t);
  });

  it('positive numbers, fractions and seconds', () => {
    expect([positiveNumber()('33'), positiveNumber(240)('240'), positiveNumber()('0.5')]).toEqual([33, 240, 0.5]);
    for (const t of ['0', '-1', 'abc', 'Infinity', '']) refused(positiveNumber(), t);
    refused(positiveNumber(240), '241');
    expect([fraction('0'), fraction('1'), fraction('0.45')]).toEqual([0, 1, 0.45]);
    for (const t of ['7', '-0.1', '', ' ', 'abc']) refused(fraction, t);
    expect([seconds('0'), seconds('30.5')]).toEqual([0, 30.5]);
    for (const t of ['-1', 'Infinity', '', '0x10']) refused(seconds, t);
  });
});
