// A stop signal while a file is written whole (writeWhole: argus preview's PNG, detect's --out)
// removes the partial file at once, and the process ends by the signal once its waits are done
// (an RTSP camera's ffmpeg given its grace). The write under way then failed at its rename
// (ENOENT: the partial was gone) and its error was said, `argus: VAP_ERR_SINK_FILE: preview --out
// p.png: cannot write it (ENOENT)`, before the process ended by the signal: an error that was none.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/procs.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-write-whole-signal-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeWhole at a stop signal', () => {
  it.each([
    ['the write cut by the signal says nothing: the process ends by the signal, no file, no partial left', false],
    // argus as a container's pid 1 without an init (docker run without --init, Kubernetes): the
    // kernel drops a signal pid 1 has no handler for, the one it sends itself to end by it
    // included. The write cut by the signal awaited a promise that never settles, the process
    // went on, its loop emptied, and it ended with 13 (the CLI's unsettled top-level await:
    // "Warning: Detected unsettled top-level await"), or 0 in a library, not by the signal.
    ['as pid 1 (its signal to itself dropped): it ends all the same, with 128 + n, not 13 or 0', true],
  ])('%s', async (_name, asInit) => {
    const out = join(dir, 'p.png');
    const src = (f: string) => JSON.stringify(join(process.cwd(), 'src', f));
    const script = `
      import { spawn } from 'node:child_process';
      import { writeFile } from 'node:fs/promises';
      import { writeWhole } from ${src('core/files.ts')};
      import { ownChild } from ${src('core/children.ts')};
      import { stopFfmpeg } from ${src('sources/ffmpeg-source.ts')};
      if (${asInit}) {
        // What the kernel does for pid 1: a signal it sends itself, with no handler, is dropped.
        const kill = process.kill.bind(process);
        process.kill = (pid, sig) => (pid === process.pid && process.listenerCount(sig) === 0 ? true : kill(pid, sig));
      }
      // A camera's ffmpeg that does not end at SIGTERM: the process's end waits its grace (1 s).
      const c = spawn('sh', ['-c', "trap '' TERM INT; exec sleep 60"], { stdio: 'ignore' });
      ownChild(c, () => stopFfmpeg(c));
      try {
        await writeWhole(${JSON.stringify(out)}, async (partial) => {
          await writeFile(partial, 'picture');
          process.stdout.write('writing\\n');
          await new Promise((r) => setTimeout(r, 300));
        }, (e) => new Error('cannot write it (' + e.code + ')'));
        process.stderr.write('written\\n');
      } catch (e) {
        // What the CLI does with an error: says it.
        process.stderr.write('error: ' + e.message + '\\n');
      }`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out1 = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out1 += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
    expect(await until(() => out1.includes('writing'), 30_000)).toBe(true);
    child.kill('SIGINT');
    const [code, sig] = await exited;
    expect(err).toBe('');
    expect({ code, sig }).toEqual(asInit ? { code: 130, sig: null } : { code: null, sig: 'SIGINT' });
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);
});
