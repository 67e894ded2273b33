import { describe, expect, it } from 'vitest';
import { ARGUS, runCommand } from '../helpers/cli.js';

// Each case is refused while the command line is read: nothing is loaded, nothing runs. The
// bound only ends a hang (the sources run through tsx's loader when dist/ is older than src/).
const TIMEOUT = 120_000;
const argus = (...args: string[]) => runCommand(process.execPath, [ARGUS, ...args], {}, TIMEOUT - 10_000);

/** The first line on stderr that is argus's own (commander may print a help text before it). */
const coded = (stderr: string) => stderr.split('\n').find((l) => l.startsWith('argus: ')) ?? '';

describe('command-line usage errors are coded (VAP_ERR_USAGE) and exit with status 2', () => {
  it.each([
    ['an unknown option', ['run', 'pipelines/demo.yaml', '--bogus'], /^argus: VAP_ERR_USAGE: unknown option '--bogus'$/],
    ['an unknown command', ['frobnicate'], /^argus: VAP_ERR_USAGE: unknown command 'frobnicate'$/],
    ['a missing argument', ['run'], /^argus: VAP_ERR_USAGE: missing required argument 'pipeline'$/],
    ['a missing required option', ['preview', 'pipelines/demo.yaml'], /^argus: VAP_ERR_USAGE: required option '--out <file>' not specified$/],
    ['an option without its value', ['run', 'pipelines/demo.yaml', '--max-frames'], /^argus: VAP_ERR_USAGE: option '--max-frames <n>' argument missing$/],
    ['a bad number', ['run', 'pipelines/demo.yaml', '--max-frames', 'abc'], /^argus: VAP_ERR_USAGE: option '--max-frames <n>' argument 'abc' is invalid\. expected a positive whole number$/],
    ['no command at all', [], /^argus: VAP_ERR_USAGE: a command is needed \(listed above\)$/],
    ['a group without its command', ['cameras'], /^argus: VAP_ERR_USAGE: a command is needed \(listed above\)$/],
    ['a check inside a command (cameras add without a file or --id and --uri)', ['cameras', 'add', '--brokers', '127.0.0.1:1'], /^argus: VAP_ERR_USAGE: give a cameras YAML file, or --id and --uri$/],
  ])('%s', async (_n, args, want) => {
    const r = await argus(...args);
    expect(coded(r.stderr), r.stderr).toMatch(want);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  }, TIMEOUT);

  it('a usage error says where the options are listed, not the whole help', async () => {
    const r = await argus('bench', '--bogus');
    expect(r.stderr).toBe("argus: VAP_ERR_USAGE: unknown option '--bogus'\n(argus bench --help lists its arguments and options)\n");
    const sub = await argus('cameras', 'add', '--bogus');
    expect(sub.stderr).toContain('(argus cameras add --help lists its arguments and options)');
  }, TIMEOUT);

  it('--help and help still exit 0, on stdout', async () => {
    for (const args of [['--help'], ['run', '--help'], ['help', 'bench']]) {
      const r = await argus(...args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^Usage: argus/);
      expect(r.stderr).toBe('');
    }
  }, TIMEOUT);
});
