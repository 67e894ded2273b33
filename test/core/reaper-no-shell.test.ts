// Where /bin/sh cannot be started (a distroless image has none), argus runs without its reaper
// (core/children startReaper). It tried again at each child it started: a failed spawn (a fork
// of argus, the exec's ENOENT) at each ffmpeg start, each camera restart, for the whole run.
import { describe, expect, it, vi } from 'vitest';

// The reaper's shell, started where none is (a path that does not exist); every spawn of it counted.
const shells = vi.hoisted(() => ({ n: 0 }));
vi.mock('node:child_process', async (original) => {
  const real = await original<typeof import('node:child_process')>();
  const spawn = ((cmd: string, ...rest: unknown[]) => {
    if (cmd !== '/bin/sh') return (real.spawn as (...a: unknown[]) => unknown)(cmd, ...rest);
    shells.n++;
    return (real.spawn as (...a: unknown[]) => unknown)('/nonexistent/argus-test/sh', ...rest);
  }) as typeof real.spawn;
  return { ...real, spawn };
});

const { spawnOwned } = await import('../../src/core/children.js');

describe('the reaper where no shell can be started', () => {
  it('is tried once, not at each child: each child still runs and ends', async () => {
    for (let i = 0; i < 3; i++) {
      const child = spawnOwned('true', [], { stdio: 'ignore' });
      const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
      expect(code).toBe(0);
      // (The shell's failure is told on a later tick: said by then.)
      await new Promise((r) => setImmediate(r));
    }
    expect(shells.n).toBe(1);
  });
});
