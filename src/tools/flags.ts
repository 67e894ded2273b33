import { InvalidArgumentError } from 'commander';
import { MAX_TIMER_MS, topicNameProblem } from '../config/schema/common.js';

/**
 * Parsers of the command line's numeric flags. Each refuses what is not a number as written, or
 * out of its range, with commander's InvalidArgumentError, which the CLI reports as
 * `VAP_ERR_USAGE` naming the flag (exit status 2). `Number()` alone took '' and ' ' as 0, `0x10`
 * as 16, and let `--batch-sources -3` or `--budget-ms abc` (NaN) through to a run that exited 0.
 */

/** Decimal, with a fraction and an exponent: `30`, `0.5`, `1e3`, `-1` (not hex, `Infinity` or empty). */
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i;

/** The number a flag's text spells, or NaN. */
export function decimal(text: string): number {
  const t = text.trim();
  return DECIMAL.test(t) ? Number(t) : NaN;
}

/** A whole number from `min` to `max`. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (text: string) => number {
  const expected = min === 1 && max === Number.MAX_SAFE_INTEGER ? 'expected a positive whole number' : `expected a whole number from ${min} to ${max}`;
  return (text) => {
    const n = decimal(text);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(expected);
    return n;
  };
}

/** A whole number ≥ 1. */
export const positiveInt = wholeNumber(1);

/** A number above 0 (and at most `max`). */
export function positiveNumber(max = Number.MAX_VALUE): (text: string) => number {
  const expected = max === Number.MAX_VALUE ? 'expected a number above 0' : `expected a number above 0, at most ${max}`;
  return (text) => {
    const n = decimal(text);
    if (!(Number.isFinite(n) && n > 0 && n <= max)) throw new InvalidArgumentError(expected);
    return n;
  };
}

/** A number from 0 to 1 (a score or IoU threshold). */
export function fraction(text: string): number {
  const n = decimal(text);
  if (!(n >= 0 && n <= 1)) throw new InvalidArgumentError('expected a number from 0 to 1');
  return n;
}

/** Seconds, 0 or more (a time in a video). */
export function seconds(text: string): number {
  const n = decimal(text);
  if (!(Number.isFinite(n) && n >= 0)) throw new InvalidArgumentError('expected seconds, 0 or more');
  return n;
}

/** The longest timer Node runs, in whole seconds (a longer one fires after 1 ms). */
export const MAX_TIMER_SECONDS = Math.floor(MAX_TIMER_MS / 1000);

/**
 * `consume --window`'s most records: its samples are held in one array of that size (8 bytes a
 * record), and the run's own p50/p99 are over its latest 100 000 records too.
 */
export const CONSUME_MAX_WINDOW = 100_000;

/** `bench --batch-sources`: 0 (off), or 2 to 64 sources (a batch of 64 is the most a model takes: model.batch.maxBatch). */
export function batchSources(text: string): number {
  const n = decimal(text);
  if (!(Number.isInteger(n) && (n === 0 || (n >= 2 && n <= 64)))) throw new InvalidArgumentError('expected 0 (off) or a whole number of sources from 2 to 64');
  return n;
}

/** A path flag's value: not empty (`--jsonl ""` was taken as no flag at all, and the run wrote nothing). */
export function pathFlag(text: string): string {
  if (text === '') throw new InvalidArgumentError('expected a path, not an empty string');
  return text;
}

/** A Kafka topic name (`argus consume --topic`): kafkajs's own errors named no flag (`--topic ''`: 'Missing required argument "topics"'). */
export function topicFlag(text: string): string {
  const problem = topicNameProblem(text);
  if (problem) throw new InvalidArgumentError(`expected ${problem}`);
  return text;
}

/** A choice among `names` (`models inspect --family`): another word was taken, and said only as "none fits" with exit status 0. */
export function oneOf(names: readonly string[]): (text: string) => string {
  return (text) => {
    if (!names.includes(text)) throw new InvalidArgumentError(`expected one of ${names.join(', ')}`);
    return text;
  };
}
