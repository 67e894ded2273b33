import { readFileSync } from 'node:fs';

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
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
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

/** Kills each of `pids` with SIGKILL, those gone already passed over (what a test left running). */
export function killAll(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
