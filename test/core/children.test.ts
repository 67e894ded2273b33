import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childrenOf, killAll, record, type Recorded, running, until } from '../helpers/procs.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { spawnOwned } from '../../src/core/children.js';

/**
 * ffmpeg children end with argus. `argus detect FIFO.mp4` (a named pipe nobody writes to) then
 * Ctrl-C left ffmpeg blocked opening the pipe, orphaned (it takes SIGINT as a request to stop
 * once its input is open), for ever.
 */
const ffmpeg = resolveFfmpegSync().path;
const dir = mkdtempSync(join(tmpdir(), 'argus-children-'));
const fifo = join(dir, 'camera.mp4');
execFileSync('mkfifo', [fifo]);
const leftOver: Recorded[] = [];
/** The scripts started, killed at the end where a failed expectation left them running (one lived on for half an hour). */
const scripts: ChildProcess[] = [];
afterAll(() => {
  for (const c of scripts) c.kill('SIGKILL');
  killAll(leftOver);
  rmSync(dir, { recursive: true, force: true });
});

/** Starts `body` (after videoFrames began reading the FIFO), waits for its ffmpeg, sends `signal`; the exit and whether ffmpeg outlived it. */
async function signalled(body: string, signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; ffmpegLeft: boolean; ownGroup: boolean }> {
  const script = `
    import { videoFrames } from ${JSON.stringify(join(process.cwd(), 'src/tools/frames.ts'))};
    const frames = videoFrames({ ffmpegPath: ${JSON.stringify(ffmpeg)}, url: ${JSON.stringify(fifo)}, stallMs: 600_000 });
    frames.next().catch(() => {});
    ${body}`;
  // (No core file at a SIGQUIT: `ulimit -c 0`, the shell replaced by node, same pid.)
  const child = spawn('sh', ['-c', 'ulimit -c 0; exec "$0" "$@"', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
  scripts.push(child);
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
  let ff: number | undefined;
  // Until ffmpeg waits in open(2) for a writer (wait_for_partner): before, its first write to
  // the log after argus is gone could end it (SIGPIPE), which is not the case to test.
  const blocked = () => (ff = childrenOf(child.pid!).find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(fifo))) !== undefined && readFileSync(`/proc/${ff}/wchan`, 'utf8') === 'wait_for_partner';
  expect(await until(blocked, 20_000)).toBe(true);
  leftOver.push(record(ff!));
  // Its process group (/proc/PID/stat's fifth field, after the parenthesised name): its own, not argus's.
  const pgid = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
  const ownGroup = pgid(ff!) === ff && pgid(ff!) !== pgid(child.pid!);
  child.kill(signal);
  const [code, sig] = await exited;
  // Killed, its zombie is reaped by init at once; left behind, it stays blocked in open(2).
  const gone = await until(() => !running(ff!), 3000);
  return { code, signal: sig, ffmpegLeft: !gone, ownGroup };
}

describe('ffmpeg children (ownChild)', () => {
  it('Ctrl-C with nothing else listening (argus detect, preview): ffmpeg is killed, and the process ends by the signal', async () => {
    expect(existsSync(fifo)).toBe(true);
    expect(await signalled('', 'SIGINT')).toEqual({ code: null, signal: 'SIGINT', ffmpegLeft: false, ownGroup: true });
  }, 30_000);

  it('a process that exits on its own listener (argus run: a second signal, process.exit(130)): ffmpeg is killed at the exit', async () => {
    expect(await signalled(`process.on('SIGTERM', () => process.exit(130));`, 'SIGTERM')).toEqual({ code: 130, signal: null, ffmpegLeft: false, ownGroup: true });
  }, 30_000);

  // ffmpeg is in a process group of its own (a terminal's Ctrl-C reaches argus alone, which stops
  // it once: see spawnOwned), so only argus ends it: at an uncaught exception too.
  it('an uncaught exception: ffmpeg, in a process group of its own, is killed at the exit', async () => {
    expect(await signalled(`process.on('SIGUSR2', () => { throw new Error('boom'); });`, 'SIGUSR2')).toEqual({ code: 1, signal: null, ffmpegLeft: false, ownGroup: true });
  }, 30_000);

  // A terminal's Ctrl-\ (SIGQUIT to its foreground group) ends argus by the signal's default
  // action, with no exit event. In argus's group ffmpeg got it too and ended; in a group of its
  // own, an ffmpeg blocked opening a named pipe, or reading a stalled camera, lived on for ever.
  it('SIGQUIT (a terminal\'s Ctrl-\\), which argus does not stop in order: ffmpeg is killed, and the process still ends by SIGQUIT', async () => {
    expect(await signalled('', 'SIGQUIT')).toEqual({ code: null, signal: 'SIGQUIT', ffmpegLeft: false, ownGroup: true });
  }, 30_000);
});

// spawnOwned listens for the stop signals before it spawns (a signal between the spawn and
// ownChild ended argus by its default action). A spawn that throws (ENOMEM, E2BIG: node throws
// those; an argument with a NUL) left them listened for, for ever, with no child held.
describe('spawnOwned whose spawn throws', () => {
  it('holds no signal listener after the throw, which its child never started tells by its error event', async () => {
    const before = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));
    const child = spawnOwned('sleep', ['1\0'], { stdio: 'ignore' });
    expect(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s))).toEqual(before);
    await expect(new Promise((_, rej) => child.once('error', rej))).rejects.toThrow(/null bytes/);
  });
});
