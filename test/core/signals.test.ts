import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SIGNAL_REPEAT_MS, STOP_WAIT_MAX_MS, StopSignals } from '../../src/core/signals.js';

describe('StopSignals', () => {
  const setup = () => {
    let t = 1000;
    const calls: string[] = [];
    const s = new StopSignals({ stop: (sig) => calls.push(`stop ${sig}`), force: (sig) => calls.push(`force ${sig}`) }, () => t);
    return { s, calls, advance: (ms: number) => (t += ms) };
  };

  it('the same signal delivered twice at once (GNU timeout: the command, then its group) is one orderly stop', () => {
    const { s, calls, advance } = setup();
    s.receive('SIGTERM');
    s.receive('SIGTERM');
    advance(SIGNAL_REPEAT_MS - 1);
    s.receive('SIGINT');
    expect(calls).toEqual(['stop SIGTERM']);
  });

  it('a second signal after the repeat window forces the exit, each time', () => {
    const { s, calls, advance } = setup();
    s.receive('SIGINT');
    advance(SIGNAL_REPEAT_MS);
    s.receive('SIGINT');
    advance(5000);
    s.receive('SIGTERM');
    expect(calls).toEqual(['stop SIGINT', 'force SIGINT', 'force SIGTERM']);
  });
});

/**
 * atStopSignal's cleanups in a process of their own (a signal ends the process): `body` runs
 * with `atStopSignal` imported, prints `ready`, and is sent `signal`; its exit, output and time.
 */
async function stopped(body: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; sig: NodeJS.Signals | null; out: string; ms: number }> {
  const script = `
    import { atStopSignal } from ${JSON.stringify(join(process.cwd(), 'src/core/signals.ts'))};
    ${body}
    process.stdout.write('ready\\n');`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
  const end = Date.now() + 30_000;
  while (!out.includes('ready') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  const t0 = performance.now();
  child.kill(signal);
  const [code, sig] = await exited;
  return { code, sig, out, ms: performance.now() - t0 };
}

describe('atStopSignal: a cleanup the process waits on before it ends by the signal', () => {
  it('a partial file made again during that wait (its write still under way) is removed as the process ends, not left behind', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'argus-signals-')), 'partial');
    writeFileSync(marker, 'partial');
    const r = await stopped(`
      import { rmSync, writeFileSync } from 'node:fs';
      setTimeout(() => {}, 60_000);
      // writeWhole's partial file, removed at the signal; the write under way makes it again.
      atStopSignal(() => {
        rmSync(${JSON.stringify(marker)}, { force: true });
        setTimeout(() => writeFileSync(${JSON.stringify(marker)}, 'written again'), 10);
      });
      atStopSignal(() => new Promise((resolve) => setTimeout(resolve, 300)));
    `);
    expect({ code: r.code, sig: r.sig }).toEqual({ code: null, sig: 'SIGTERM' });
    expect(existsSync(marker)).toBe(false);
    rmSync(dirname(marker), { recursive: true, force: true });
  }, 60_000);

  it('a cleanup registered during that wait (a partial file begun then) is run too, not left behind', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'argus-signals-')), 'partial');
    writeFileSync(marker, 'partial');
    const r = await stopped(`
      import { rmSync } from 'node:fs';
      setTimeout(() => {}, 60_000);
      atStopSignal(() => {
        // During the wait, work still under way begins a partial file, to be removed at a stop signal.
        setTimeout(() => atStopSignal(() => rmSync(${JSON.stringify(marker)}, { force: true })), 10);
        return new Promise((resolve) => setTimeout(resolve, 300));
      });
    `);
    expect({ code: r.code, sig: r.sig }).toEqual({ code: null, sig: 'SIGTERM' });
    expect(existsSync(marker)).toBe(false);
    rmSync(dirname(marker), { recursive: true, force: true });
  }, 60_000);

  it('a cleanup whose promise never settles: the process still ends by the signal (128 + n), within STOP_WAIT_MAX_MS, not with status 0 once its loop empties', async () => {
    const r = await stopped(`
      // (The loop's last handle: it empties before the bound, the promise still pending.)
      setTimeout(() => {}, 3000);
      atStopSignal(() => new Promise(() => {}));
    `);
    expect({ code: r.code, sig: r.sig }).toEqual({ code: null, sig: 'SIGTERM' });
    expect(r.ms).toBeLessThan(STOP_WAIT_MAX_MS + 5000);
  }, 60_000);

  it('a cleanup that throws, or whose promise rejects: the others run, and the process ends by the signal', async () => {
    const r = await stopped(`
      setTimeout(() => {}, 60_000);
      atStopSignal(() => { throw new Error('no'); });
      atStopSignal(() => Promise.reject(new Error('no')));
      atStopSignal(() => { process.stdout.write('ran\\n'); return new Promise((r) => setTimeout(r, 100)); });
    `, 'SIGINT');
    expect({ code: r.code, sig: r.sig }).toEqual({ code: null, sig: 'SIGINT' });
    expect(r.out).toContain('ran');
  }, 60_000);
});
