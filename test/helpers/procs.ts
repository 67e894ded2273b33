import { readFileSync } from 'node:fs';
import { processStart } from '../../src/core/children.js';

/** The pids of `pid`'s children (Linux's /proc). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Running: there, and not a zombie waiting to be reaped. */
export function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls `ok` every 20 ms until it holds or `ms` have passed (a bounded wait on another process, not a timing assumption); whether it held. */
export async function until(ok: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!ok() && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
  return ok();
}

/** A process as a test records it, to kill it later should it be left running (killAll): its pid and start time. */
export interface Recorded {
  pid: number;
  start: string | undefined;
}

/** Records process `pid` (while it is known to be the one meant: running, or a zombie not yet reaped). */
export function record(pid: number): Recorded {
  return { pid, start: processStart(pid) };
}

/**
 * Kills each of `procs` with SIGKILL (what a test left running), those gone already passed over,
 * and those whose pid is another process's now (another start time): recorded earlier and
 * expected gone by then, a pid may have been handed to a process of another test, or of anyone.
 */
export function killAll(procs: Iterable<Recorded>): void {
  for (const { pid, start } of procs) {
    if (start === undefined || processStart(pid) !== start) continue;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
