// The reaper (core/children startReaper) signals, after argus's end, each target still listed:
// one whose process had exited, its exit not yet told (argus killed between node's reaping of
// it and the `- T` line; or ended by the SIGTERM, before the SIGKILL 1 s later), may have had its
// pid handed to another process (pid_max is 32768 here, and a test run starts thousands), and the
// reaper killed a stranger: its whole process group. It checks the start time argus told it now.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processStart, reaperScript } from '../../src/core/children.js';
import { killAll, record, type Recorded, running, until } from '../helpers/procs.js';

const leftOver: Recorded[] = [];
const dir = mkdtempSync(join(tmpdir(), 'argus-reaper-id-'));
afterAll(() => {
  killAll(leftOver);
  rmSync(dir, { recursive: true, force: true });
});

/** The shells the script is run by: /bin/sh (dash on Debian, bash or busybox ash elsewhere), and dash and bash where installed. */
const shells = [...new Set(['/bin/sh', '/bin/dash', '/bin/bash'].filter((p) => existsSync(p)).map((p) => realpathSync(p)))];

/** A `sleep` in a process group of its own (as spawnOwned starts ffmpeg), recorded to be killed at the end. */
async function grouped(command = 'sleep'): Promise<number> {
  const c = spawn(command, ['300'], { stdio: 'ignore', detached: true });
  c.unref();
  leftOver.push(record(c.pid!));
  // Until it runs sleep (its start time is the fork's, the same before and after the exec).
  expect(await until(() => processStart(c.pid!) !== undefined, 10_000)).toBe(true);
  return c.pid!;
}

/** Runs the reaper's script given `held` as its arguments and told `lines`, its stdin then closed (argus's end); resolves at its exit (its SIGKILL round done). */
function reaperTold(lines: string, held: string[] = [], shell = '/bin/sh'): Promise<void> {
  const r: ChildProcess = spawn(shell, ['-c', reaperScript(), 'argus-reaper', ...held], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise<void>((res) => r.once('exit', () => res()));
  r.stdin!.end(lines);
  return exited;
}

describe.each(shells)('the reaper at argus\'s end (run by %s)', (shell) => {
  it('passes over a target whose pid is another process\'s now (another start time), and ends those that are the ones told', async () => {
    const [stranger, ours, unknown, told] = [await grouped(), await grouped(), await grouped(), await grouped()];
    // A start time the stranger does not have (past PID_MAX_LIMIT, 2^22: no pid, whatever reads it as one).
    const other = String(Number(processStart(stranger)) + 4_194_304);
    await reaperTold([`+ -${stranger}:${other}`, `+ -${ours}:${processStart(ours)}`, `+ -${unknown}:`, `+ -${told}:${processStart(told)}`, `- -${told}`, ''].join('\n'), [], shell);
    expect({ stranger: running(stranger), ours: await until(() => !running(ours), 5000), unknown: await until(() => !running(unknown), 5000), told: running(told) }).toEqual({ stranger: true, ours: true, unknown: true, told: true });
  }, 30_000);

  // Started (again) while argus holds children, the reaper is given them as its arguments: argus
  // killed before it wrote their lines (a busy machine held it between the spawn and the write)
  // left a restarted reaper knowing of none, and the ffmpeg running on.
  it('ends the children it was started with (its arguments), told no line, checked as the lines are; a `- T` line takes one off', async () => {
    const [held, unknown, stranger, exited] = [await grouped(), await grouped(), await grouped(), await grouped()];
    const other = String(Number(processStart(stranger)) + 4_194_304);
    await reaperTold(`- -${exited}\n`, [`-${held}:${processStart(held)}`, `-${unknown}:`, `-${stranger}:${other}`, `-${exited}:${processStart(exited)}`], shell);
    expect({ held: await until(() => !running(held), 5000), unknown: await until(() => !running(unknown), 5000), stranger: running(stranger), exited: running(exited) }).toEqual({ held: true, unknown: true, stranger: true, exited: true });
  }, 30_000);

  // Started again while argus holds 1000 cameras' ffmpegs, the reaper is given 1000 arguments,
  // and each exit told takes one off the list it holds (a line at each camera's restart).
  it('started with 1000 children held (its arguments) and told 1000 exits, ends the one left', async () => {
    const left = await grouped();
    // Pids past PID_MAX_LIMIT (2^22): no process's, whatever reads them as one.
    const gone = Array.from({ length: 1000 }, (_, i) => `-${5_000_000 + i}`);
    await reaperTold(gone.map((t) => `- ${t}\n`).join(''), [...gone.map((t, i) => `${t}:${1000 + i}`), `-${left}:${processStart(left)}`], shell);
    expect(await until(() => !running(left), 5000)).toBe(true);
  }, 30_000);

  // A process names itself (its executable's file name, or prctl PR_SET_NAME), and a name may hold
  // a newline: the first line of its /proc/PID/stat then ends inside the name, no start time on
  // it, and the reaper signalled such a stranger whatever its start time (read as no answer).
  it('passes over a stranger whose name holds a newline (its stat on two lines), and ends its own so named', async () => {
    const named = join(dir, 'x\ny) 1 2');
    if (!existsSync(named)) symlinkSync(realpathSync('/bin/sleep'), named);
    const [stranger, ours] = [await grouped(named), await grouped(named)];
    const other = String(Number(processStart(stranger)) + 4_194_304);
    await reaperTold(`+ -${stranger}:${other}\n+ ${ours}:${processStart(ours)}\n`, [], shell);
    expect({ stranger: running(stranger), ours: await until(() => !running(ours), 5000) }).toEqual({ stranger: true, ours: true });
  }, 30_000);
});

// The same hazard in the tests themselves: killAll SIGKILLed pids recorded earlier, after their
// processes were expected gone; it passes over a pid with another start time now.
describe('killAll (test helper)', () => {
  it('kills a recorded process, and not one whose recorded start time is not the pid\'s now', async () => {
    const a = await grouped();
    killAll([{ pid: a, start: String(Number(processStart(a)) + 1) }]);
    await new Promise((r) => setTimeout(r, 100));
    expect(running(a)).toBe(true);
    killAll([record(a)]);
    expect(await until(() => !running(a), 5000)).toBe(true);
  }, 30_000);
});
