/**
 * Numeric flags of the benchmark and soak scripts. `Number()` alone took `--rounds ''` as 0 and
 * `--seconds abc` as NaN, and the script ran on with it; a value that is not a number in range
 * ends the script at once with status 2, naming the flag.
 */
import { decimal } from '../../src/tools/flags.js';

export interface NumberFlag {
  /** Default 0. */
  min?: number;
  /** Default Number.MAX_SAFE_INTEGER. */
  max?: number;
  /** A whole number. Default true. */
  whole?: boolean;
}

/** The value of `--name` in `argv` (`def` when absent), or the end of the script with status 2. */
export function numberFlag(argv: readonly string[], name: string, def: number, o: NumberFlag = {}): number {
  const i = argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const text = argv[i + 1] ?? '';
  const n = decimal(text);
  const { min = 0, max = Number.MAX_SAFE_INTEGER, whole = true } = o;
  if (!Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n))) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of ${min} or more` : `from ${min} to ${max}`;
    process.stderr.write(`--${name}: ${JSON.stringify(text)} is not ${whole ? 'a whole number' : 'a number'} ${range}\n`);
    process.exit(2);
  }
  return n;
}
