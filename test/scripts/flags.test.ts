import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';

/** Runs `numberFlag(argv, 'n', 7, o)` in a process of its own (it may end the process) and returns what it printed and its status. */
function flag(argv: string[], o: object = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const code = `import { numberFlag } from './scripts/lib/flags.ts'; console.log(numberFlag(${JSON.stringify(argv)}, 'n', 7, ${JSON.stringify(o)}));`;
  return new Promise((res) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT }, (e, stdout, stderr) => res({ code: e ? ((e as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

describe('the scripts\' numeric flags (scripts/lib/flags.ts)', () => {
  it('the default when absent, the value when it is a number in range', async () => {
    expect((await flag([])).stdout.trim()).toBe('7');
    expect((await flag(['--n', '12'])).stdout.trim()).toBe('12');
    expect((await flag(['--n', '2.5'], { whole: false, min: 0.1 })).stdout.trim()).toBe('2.5');
  }, 60_000);

  it('what Number() let through (empty, NaN, hex, out of range, a fraction where a whole number is needed) ends the process with status 2 naming the flag', async () => {
    for (const [argv, o, said] of [
      [['--n', ''], {}, '--n: "" is not a whole number of 0 or more'],
      [['--n', 'abc'], {}, '--n: "abc" is not a whole number of 0 or more'],
      [['--n', '0x10'], { min: 1 }, '--n: "0x10" is not a whole number of 1 or more'],
      [['--n', '70000'], { min: 1, max: 65535 }, '--n: "70000" is not a whole number from 1 to 65535'],
      [['--n', '1.5'], {}, '--n: "1.5" is not a whole number of 0 or more'],
      [['--n'], {}, '--n: "" is not a whole number of 0 or more'],
    ] as const) {
      const r = await flag([...argv], o);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(said);
      expect(r.stdout).toBe('');
    }
  }, 60_000);
});
