// A stop signal while argus starts (its modules loading, its pipeline being read): said, then the
// process exits 130 (every interruption's status) for SIGINT, SIGTERM and SIGHUP alike, a named
// pipe nobody writes to being read included (the read holds no thread that the exit waits for).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ARGUS, ROOT } from '../helpers/cli.js';

const children = new Set<ReturnType<typeof spawn>>();
afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

/**
 * Preloaded into argus (`--require`): writes a byte to fd 3 as soon as the process listens for
 * SIGINT, so that the test signals it at the first moment it could be told apart from the
 * default action (a timer of the preload's, run between the modules' loads).
 */
const WATCH_SIGINT = `const t = setInterval(() => { if (process.listenerCount('SIGINT') > 0) { clearInterval(t); require('node:fs').writeSync(3, 'L'); } }, 1); t.unref();`;

/**
 * `argus run` of a pipeline that is a named pipe: its start cannot get past reading it until the
 * test writes there, which it never does, so a signal sent at any time before lands in the start.
 */
function startOnFifo(command: 'run' | 'check' = 'run') {
  const dir = mkdtempSync(join(tmpdir(), 'argus-start-signal-'));
  const fifo = join(dir, 'p.yaml');
  execFileSync('mkfifo', [fifo]);
  const watch = join(dir, 'watch.cjs');
  writeFileSync(watch, WATCH_SIGINT);
  const p = spawn(process.execPath, ['--require', watch, ARGUS, command, fifo, ...(command === 'run' ? ['--no-status'] : [])], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  children.add(p);
  let stderr = '';
  p.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const listening = new Promise<void>((r) => (p.stdio[3] as Readable).once('data', () => r()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
  return { p, fifo, listening, exited, stderr: () => stderr };
}

describe('a stop signal while argus run starts', () => {
  it('while its modules load: says so, then exits 130 (it ended without a word)', async () => {
    const s = startOnFifo();
    // At the first moment argus listens for SIGINT: the entry's listener, before the CLI's modules load.
    await s.listening;
    s.p.kill('SIGINT');
    const { code, signal } = await s.exited;
    expect({ code, signal }).toEqual({ code: 130, signal: null });
    expect(s.stderr()).toMatch(new RegExp(`^argus: VAP_ERR_INTERRUPTED: SIGINT while (loading argus|reading the pipeline ${s.fifo.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}): stopped on the signal, before anything ran\n$`));
  }, 120_000);

  it.each(['SIGTERM', 'SIGHUP'] as const)('%s while reading its pipeline from a named pipe nobody writes to: names the file, exits 130 at once (ended by the signal: 143, 129; an exit then waited for the read for ever)', async (sig) => {
    const s = startOnFifo();
    // Opening the pipe for writing returns once argus has opened it to read: it is reading it now.
    const writer = await open(s.fifo, 'w');
    try {
      s.p.kill(sig);
      const { code, signal } = await s.exited;
      expect({ code, signal }).toEqual({ code: 130, signal: null });
      expect(s.stderr()).toBe(`argus: VAP_ERR_INTERRUPTED: ${sig} while reading the pipeline ${s.fifo}: stopped on the signal, before anything ran\n`);
    } finally {
      await writer.close();
    }
  }, 120_000);

  it('argus check, while reading its pipeline from a named pipe nobody writes to: names the file as run does (it ended without a word)', async () => {
    const s = startOnFifo('check');
    const writer = await open(s.fifo, 'w');
    try {
      s.p.kill('SIGINT');
      const { code, signal } = await s.exited;
      expect({ code, signal }).toEqual({ code: 130, signal: null });
      expect(s.stderr()).toBe(`argus: VAP_ERR_INTERRUPTED: SIGINT while reading the pipeline ${s.fifo}: stopped on the signal, before anything ran\n`);
    } finally {
      await writer.close();
    }
  }, 120_000);
});
