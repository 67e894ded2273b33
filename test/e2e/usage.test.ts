import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIRROR } from '../helpers/assets.js';
import { ARGUS, ROOT, runCommand } from '../helpers/cli.js';

// Each case is refused while the command line is read: nothing is loaded, nothing runs. The
// bound only ends a hang (the sources run through tsx's loader when dist/ is older than src/).
const TIMEOUT = 120_000;
/** Where a preview would write, were its flags taken (never in the checkout). */
const OUT = join(tmpdir(), 'argus-usage-test.png');
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
    // The file's cameras were added and the flags dropped without a word.
    ['cameras add with a file and a camera field', ['cameras', 'add', 'pipelines/cameras.yaml', '--pin', 'w1', '--fps', '5', '--brokers', '127.0.0.1:1'], /^argus: VAP_ERR_USAGE: --fps, --pin: a camera's fields are given by the file or by flags, not both \(put them in pipelines\/cameras\.yaml\)$/],
    // Another family was taken, said as "none fits" with exit status 0.
    ['an unknown decoder family', ['models', 'inspect', 'x.onnx', '--family', 'yolo'], /^argus: VAP_ERR_USAGE: option '--family <name>' argument 'yolo' is invalid\. expected one of auto, yolox, /],
    // '' was opened as a file named '' ("VAP_ERR_CONFIG_FILE: : cannot read (ENOENT)").
    ['an empty bench --pipeline', ['bench', '--only-extras', '--pipeline', ''], /^argus: VAP_ERR_USAGE: option '--pipeline <file>' argument '' is invalid\. expected a path, not an empty string$/],
    ['an empty bench --json', ['bench', '--only-extras', '--json', ''], /^argus: VAP_ERR_USAGE: option '--json <file>' argument '' is invalid\. expected a path, not an empty string$/],
    // --model "$MODEL" with MODEL unset ran the default model without a word.
    ['an empty detect --model', ['detect', 'x.jpg', '--model', ''], /^argus: VAP_ERR_USAGE: option '--model <name\|path>' argument '' is invalid\. expected a path, not an empty string$/],
    // kafkajs's own errors, after connecting, named no flag: 'Missing required argument "topics"', 'an invalid topic'.
    ['an empty topic', ['consume', '--brokers', '127.0.0.1:1', '--topic', ''], /^argus: VAP_ERR_USAGE: option '--topic <name>' argument '' is invalid\. expected a Kafka topic name: letters, digits, dot, dash or underscore$/],
    ['a topic Kafka refuses', ['consume', '--brokers', '127.0.0.1:1', '--topic', '..'], /^argus: VAP_ERR_USAGE: option '--topic <name>' argument '\.\.' is invalid\. expected a Kafka topic name: not \. or \.\.$/],
  ])('%s', async (_n, args, want) => {
    const r = await argus(...args);
    expect(coded(r.stderr), r.stderr).toMatch(want);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  }, TIMEOUT);

  it("a word it names is shown with its control characters escaped (argus detect * among downloads, one named -<ESC>]0;TITLE<BEL><ESC>[2J.jpg: an unknown option that retitled the window and cleared the screen)", async () => {
    const r = await argus('detect', '-\x1b]0;TITLE\x07\x1b[2J.jpg');
    expect(r.code).toBe(2);
    expect(coded(r.stderr)).toBe("argus: VAP_ERR_USAGE: unknown option '-\\x1b]0;TITLE\\x07\\x1b[2J.jpg'");
    expect(r.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/); // line breaks only
  }, TIMEOUT);

  it("a file whose name starts with '-' (argus detect -photo.jpg): the usage error says how to give it; a word that is no file gets no such line", async () => {
    const { spawnSync } = await import('node:child_process');
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const dir = mkdtempSync(join(tmpdir(), 'argus-dash-'));
    writeFileSync(join(dir, '-photo.jpg'), '');
    const run = (word: string) => spawnSync(process.execPath, [ARGUS, 'detect', word], { cwd: dir, encoding: 'utf8', timeout: TIMEOUT - 10_000 });
    const r = run('-photo.jpg');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("argus: VAP_ERR_USAGE: unknown option '-photo.jpg'\n(-photo.jpg is a file: give it as ./-photo.jpg, or after --)\n(argus detect --help lists its arguments and options)\n");
    expect(run('-other.jpg').stderr).toBe("argus: VAP_ERR_USAGE: unknown option '-other.jpg'\n(argus detect --help lists its arguments and options)\n");
    // After commander's own suggestion, where it makes one.
    writeFileSync(join(dir, '--jsn'), '');
    expect(run('--jsn').stderr).toBe("argus: VAP_ERR_USAGE: unknown option '--jsn'\n(Did you mean --json?)\n(--jsn is a file: give it as ./--jsn, or after --)\n(argus detect --help lists its arguments and options)\n");
  }, TIMEOUT);

  it('a usage error says where the options are listed, not the whole help', async () => {
    const r = await argus('bench', '--bogus');
    expect(r.stderr).toBe("argus: VAP_ERR_USAGE: unknown option '--bogus'\n(argus bench --help lists its arguments and options)\n");
    const sub = await argus('cameras', 'add', '--bogus');
    expect(sub.stderr).toContain('(argus cameras add --help lists its arguments and options)');
  }, TIMEOUT);

  it('argus bench outside the repository reads the demo pipeline of this installation by default (it read pipelines/demo.yaml from the current folder: ENOENT)', async () => {
    const { spawn } = await import('node:child_process');
    const r = await new Promise<{ code: number | null; stderr: string }>((res, rej) => {
      const p = spawn(process.execPath, [ARGUS, 'bench', '--only-extras'], { cwd: tmpdir(), env: { ...process.env, ARGUS_MIRROR: MIRROR }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const t = setTimeout(() => p.kill('SIGKILL'), TIMEOUT - 10_000);
      p.on('error', rej);
      p.on('close', (code) => {
        clearTimeout(t);
        res({ code, stderr });
      });
    });
    expect(r.stderr).not.toMatch(/cannot read/);
    expect(r.code).toBe(0);
  }, TIMEOUT);

  it('--version (and -V) prints the package version on stdout and exits 0 (it was an unknown option, exit 2)', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await argus(flag);
      expect(r.code, flag).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
      expect(r.stderr).toBe('');
    }
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

describe('every numeric flag refuses what is not a number in its range, naming the flag (VAP_ERR_USAGE, exit 2)', () => {
  // Each of these ran before (bench with --only-extras exited 0 with --batch-sources -3 or
  // --budget-ms abc), or was refused uncoded with exit status 1. --only-extras keeps a bench
  // that would be accepted short.
  it.each([
    [['bench', '--only-extras', '--live-seconds', '-5'], '--live-seconds <n>'],
    [['bench', '--only-extras', '--live-seconds', 'abc'], '--live-seconds <n>'],
    [['bench', '--only-extras', '--live-seconds', '1e9'], '--live-seconds <n>'], // a timer Node would fire after 1 ms
    [['bench', '--only-extras', '--raw-runs', '0'], '--raw-runs <n>'],
    [['bench', '--only-extras', '--file-frames', ''], '--file-frames <n>'],
    [['bench', '--only-extras', '--sweep-runs', '1.5'], '--sweep-runs <n>'],
    [['bench', '--only-extras', '--batch-sources', '-3'], '--batch-sources <n>'],
    [['bench', '--only-extras', '--batch-sources', '1'], '--batch-sources <n>'],
    [['bench', '--only-extras', '--batch-sources', 'abc'], '--batch-sources <n>'],
    [['bench', '--only-extras', '--budget-ms', 'abc'], '--budget-ms <ms>'],
    [['bench', '--only-extras', '--budget-ms', '-1'], '--budget-ms <ms>'],
    [['detect', 'none.jpg', '--score', '7'], '--score <n>'],
    [['detect', 'none.jpg', '--score', ''], '--score <n>'],
    [['detect', 'none.jpg', '--iou', '-0.5'], '--iou <n>'],
    [['detect', 'none.jpg', '--fps', '0'], '--fps <n>'],
    [['detect', 'none.jpg', '--fps', 'Infinity'], '--fps <n>'],
    [['preview', 'pipelines/demo.yaml', '--out', OUT, '--at', '-1'], '--at <seconds>'],
    [['preview', 'pipelines/demo.yaml', '--out', OUT, '--at', '0x10'], '--at <seconds>'],
    [['run', 'pipelines/demo.yaml', '--max-frames', '0'], '--max-frames <n>'],
    [['consume', '--brokers', '127.0.0.1:1', '--window', '0'], '--window <n>'],
    [['consume', '--brokers', '127.0.0.1:1', '--count', '-1'], '--count <n>'],
    [['cameras', 'add', '--brokers', '127.0.0.1:1', '--id', 'a', '--uri', '/x.mp4', '--fps', 'abc'], '--fps <n>'],
    [['cameras', 'add', '--brokers', '127.0.0.1:1', '--id', 'a', '--uri', '/x.mp4', '--fps', '1000'], '--fps <n>'],
    [['cameras', 'add', '--brokers', '127.0.0.1:1', '--id', 'a', '--uri', '/x.mp4', '--cost', '-2'], '--cost <n>'],
  ])('%j', async (args, flag) => {
    const r = await argus(...args);
    expect(coded(r.stderr), r.stderr).toContain(`argus: VAP_ERR_USAGE: option '${flag}' argument '${args[args.length - 1]}' is invalid. expected `);
    expect(r.code).toBe(2);
  }, TIMEOUT);
});

describe('environment variables read as argus starts refuse a value that is no level, naming the variable (VAP_ERR_CONFIG, exit 2)', () => {
  // pino and ONNX Runtime threw on these as argus started: a stack trace, exit status 1, no code.
  it.each([
    ['ARGUS_LOG_LEVEL', 'verbose', /^argus: VAP_ERR_CONFIG: ARGUS_LOG_LEVEL: expected one of trace, debug, info, warn, error, fatal, silent; got "verbose"$/],
    ['ARGUS_ORT_LOG_LEVEL', 'debug', /^argus: VAP_ERR_CONFIG: ARGUS_ORT_LOG_LEVEL: expected one of verbose, info, warning, error, fatal; got "debug"$/],
  ])('%s=%s', async (name, value, want) => {
    const r = await runCommand(process.execPath, [ARGUS, 'run', 'pipelines/demo.yaml'], { [name]: value }, TIMEOUT - 10_000);
    expect(r.stderr.trim(), r.stderr).toMatch(want);
    expect(r.code).toBe(2);
  }, TIMEOUT);

  it.each([
    ['empty (a compose file passing an unset variable on)', ''],
    ['another case and blanks', ' DEBUG '],
  ])('ARGUS_LOG_LEVEL %s is taken', async (_n, value) => {
    const r = await runCommand(process.execPath, [ARGUS, 'run', join(tmpdir(), 'argus-no-such-pipeline.yaml')], { ARGUS_LOG_LEVEL: value, ARGUS_ORT_LOG_LEVEL: '' }, TIMEOUT - 10_000);
    expect(coded(r.stderr), r.stderr).toMatch(/^argus: VAP_ERR_CONFIG_FILE: .*argus-no-such-pipeline\.yaml: cannot read \(ENOENT\)$/);
    expect(r.code).toBe(2);
  }, TIMEOUT);
});
