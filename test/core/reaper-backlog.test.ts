// argus tells its reaper (core/children startReaper) a line at each child's start and exit, into
// a pipe. With the reaper stopped (SIGSTOP: a debugger, a frozen cgroup) the pipe filled (64 KB)
// and node queued every later line in argus's memory, without bound. Now no more is queued past
// a small bound; once the reaper takes what was, it is told the whole set again, as one write.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childrenOf, killAll, record, type Recorded, running, until } from '../helpers/procs.js';

const leftOver: Recorded[] = [];
afterAll(() => killAll(leftOver));

describe('a stopped reaper', () => {
  it('holds argus\'s queue for it to a few KB, and once let go, still ends argus\'s children at its end, one started meanwhile too', async () => {
    // Children that start and exit (ownChild given stand-ins: 20 000 of them, 440 KB of lines,
    // pids past PID_MAX_LIMIT, no process's), and real ones before and during the stop.
    const script = `
      import { EventEmitter } from 'node:events';
      import { readFileSync } from 'node:fs';
      import { ownChild, reaperBacklog, spawnOwned } from ${JSON.stringify(join(process.cwd(), 'src/core/children.ts'))};
      spawnOwned('sleep', ['311'], { stdio: 'ignore' });
      const named = (cmd) => readFileSync('/proc/' + process.pid + '/task/' + process.pid + '/children', 'utf8').split(' ').filter(Boolean).find((p) => readFileSync('/proc/' + p + '/cmdline', 'utf8').startsWith(cmd));
      while (!named('/bin/sh')) await new Promise((r) => setTimeout(r, 20));
      const reaper = Number(named('/bin/sh'));
      process.kill(reaper, 'SIGSTOP');
      let most = 0;
      for (let i = 0; i < 20000; i++) {
        const c = Object.assign(new EventEmitter(), { pid: 5_000_000 + i, exitCode: null, signalCode: null, kill: () => true });
        ownChild(c, undefined, 'group');
        if (i === 10000) spawnOwned('sleep', ['312'], { stdio: 'ignore' });
        c.emit('exit', 0, null);
        most = Math.max(most, reaperBacklog());
      }
      console.log('most ' + most);
      process.kill(reaper, 'SIGCONT');
      while (reaperBacklog() > 0) await new Promise((r) => setTimeout(r, 20));
      console.log('taken');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    try {
      expect(await until(() => out.includes('taken') || child.exitCode !== null, 60_000)).toBe(true);
      const sleeps = childrenOf(child.pid!).filter((p) => running(p) && /^sleep\0/.test(readCmd(p)));
      leftOver.push(...sleeps.map(record));
      expect(sleeps).toHaveLength(2);
      // (Without a bound: 437 KB here, the 440 KB told less what the pipe held.)
      expect(Number(/most (\d+)/.exec(out)?.[1])).toBeLessThan(8192);
      child.kill('SIGKILL');
      await exited;
      expect(await until(() => sleeps.every((p) => !running(p)), 10_000)).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  }, 90_000);
});

function readCmd(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}
