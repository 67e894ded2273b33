import { describe, expect, it } from 'vitest';
import { CONSUME_MAX_WINDOW, MAX_TIMER_SECONDS } from '../../src/tools/flags.js';
import { ARGUS, runCommand } from '../helpers/cli.js';

// Each case is refused while the command line is read: nothing is loaded, nothing connects. The
// bound only ends a hang (the sources run through tsx's loader when dist/ is older than src/).
const TIMEOUT = 120_000;
const argus = (...args: string[]) => runCommand(process.execPath, [ARGUS, ...args], {}, TIMEOUT - 10_000);
/** The first line on stderr that is argus's own. */
const coded = (stderr: string) => stderr.split('\n').find((l) => l.startsWith('argus: ')) ?? '';

describe('numeric flags whose size the process pays for are bounded (VAP_ERR_USAGE, exit 2)', () => {
  it.each([
    // A bound longer than Node's longest timer fired after 1 ms: every broker and first frame was
    // reported as not answering "within 3000000 s" (exit 2, the check failed for no reason).
    [['check', 'pipelines/demo.yaml', '--timeout', String(MAX_TIMER_SECONDS + 1)], '--timeout <seconds>', `expected a number above 0, at most ${MAX_TIMER_SECONDS}`],
    // The window's samples are one array of that size: 4e9 failed to allocate it (VAP_ERR_INTERNAL, exit 4).
    [['consume', '--brokers', '127.0.0.1:1', '--window', '4000000000'], '--window <n>', `expected a whole number from 1 to ${CONSUME_MAX_WINDOW}`],
    [['consume', '--brokers', '127.0.0.1:1', '--window', String(CONSUME_MAX_WINDOW + 1)], '--window <n>', `expected a whole number from 1 to ${CONSUME_MAX_WINDOW}`],
  ])('%j', async (args, flag, expected) => {
    const r = await argus(...args);
    expect(coded(r.stderr), r.stderr).toBe(`argus: VAP_ERR_USAGE: option '${flag}' argument '${args[args.length - 1]}' is invalid. ${expected}`);
    expect(r.code).toBe(2);
  }, TIMEOUT);

  it('the largest values are still taken', async () => {
    // --window at its most: read nothing from a port that refuses, and said so (not a usage error).
    const r = await argus('consume', '--brokers', '127.0.0.1:1', '--window', String(CONSUME_MAX_WINDOW));
    expect(coded(r.stderr), r.stderr).toMatch(/^argus: VAP_ERR_KAFKA_UNREACHABLE: /);
    expect(r.code).toBe(2);
  }, TIMEOUT);
});
