import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { childrenOf, killAll, record, type Recorded, running, until } from '../helpers/procs.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

/**
 * An ffmpeg outliving an argus killed outright (SIGKILL, the OOM killer; a supervisor that kills
 * argus's process group: `timeout -k`, supervisord's `killasgroup`, which no longer reach ffmpeg
 * in its group of its own). One that writes frames ends at its next write into the dead pipe; one
 * reading a stalled camera, or blocked opening a named pipe nobody writes to, lived on for ever:
 * nothing of argus's was left to end it. A real ffmpeg, started as a source's is (spawnOwned,
 * through videoFrames), on a real stalled input.
 */
const ffmpeg = resolveFfmpegSync().path;
const dir = mkdtempSync(join(tmpdir(), 'argus-orphan-'));
const fifo = join(dir, 'camera.ts');
execFileSync('mkfifo', [fifo]);
const leftOver: Recorded[] = [];
/** The scripts started, killed at the end where a failed expectation left them running. */
const scripts: ChildProcess[] = [];
const sockets = new Set<Socket>();
let server: Server | undefined;
afterAll(async () => {
  for (const c of scripts) c.kill('SIGKILL');
  killAll(leftOver);
  for (const s of sockets) s.destroy();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  rmSync(dir, { recursive: true, force: true });
});

/** A camera that accepts the connection and sends one MPEG-TS packet, then nothing: ffmpeg waits in its read. */
async function stalledCamera(): Promise<{ url: string; accepted: () => boolean }> {
  let accepted = false;
  server = createServer((s) => {
    accepted = true;
    sockets.add(s);
    s.on('error', () => {});
    const packet = Buffer.alloc(188, 0xff);
    packet[0] = 0x47;
    s.write(packet);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `tcp://127.0.0.1:${port}`, accepted: () => accepted };
}

/**
 * Runs videoFrames on `url` in a node process of its own (argus), waits until its ffmpeg waits
 * (`ready`), kills that process with `kill` (SIGKILL itself, or its whole process group as a
 * supervisor does); whether ffmpeg was gone `withinMs` later.
 */
async function orphaned(url: string, ready: (ff: number) => boolean, kill: (argus: number) => void, withinMs: number): Promise<{ ownGroup: boolean; gone: boolean }> {
  const script = `
    import { videoFrames } from ${JSON.stringify(join(process.cwd(), 'src/tools/frames.ts'))};
    const frames = videoFrames({ ffmpegPath: ${JSON.stringify(ffmpeg)}, url: ${JSON.stringify(url)}, stallMs: 600_000 });
    frames.next().catch(() => {});`;
  // In a process group of its own (as a shell's job), which a supervisor's kill of the group reaches.
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  let ff: number | undefined;
  const waiting = () => (ff = childrenOf(child.pid!).find((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(url))) !== undefined && ready(ff);
  expect(await until(waiting, 30_000)).toBe(true);
  leftOver.push(record(ff!));
  const pgid = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
  const ownGroup = pgid(ff!) === ff && pgid(ff!) !== pgid(child.pid!);
  kill(child.pid!);
  await exited;
  // Ended, its zombie is reaped by init at once; left behind, it stays in its read or its open(2).
  return { ownGroup, gone: await until(() => !running(ff!), withinMs) };
}

/** ffmpeg's kernel wait: in open(2) for a named pipe's writer, or polling a silent socket. */
const wchan = (pid: number) => readFileSync(`/proc/${pid}/wchan`, 'utf8');

describe('an ffmpeg left by an argus killed outright', () => {
  it('argus killed with SIGKILL while its ffmpeg reads a camera that stopped sending: ffmpeg ends, within seconds', async () => {
    const camera = await stalledCamera();
    // Once connected and read what came: then blocked polling the silent socket.
    const polling = (ff: number) => camera.accepted() && /poll|select/.test(wchan(ff));
    expect(await orphaned(camera.url, polling, (pid) => process.kill(pid, 'SIGKILL'), 10_000)).toEqual({ ownGroup: true, gone: true });
  }, 60_000);

  it('a supervisor killing argus\'s process group (timeout -k, killasgroup) while its ffmpeg is blocked opening a named pipe nobody writes to: ffmpeg ends, within seconds', async () => {
    const blocked = (ff: number) => wchan(ff) === 'wait_for_partner';
    expect(await orphaned(fifo, blocked, (pid) => process.kill(-pid, 'SIGKILL'), 10_000)).toEqual({ ownGroup: true, gone: true });
  }, 60_000);

  // The annotated video's encoder (spawnOwned endsAlone) reads argus's pipe to its end and then
  // writes the file's index: the reaper leaves it be, whose SIGKILL 1 s after argus's end would
  // cut that short. A child that takes 2 s after the end of its input to finish models it.
  it('a child that ends by itself (the annotated video\'s encoder) is left to finish its file', async () => {
    const marker = join(dir, 'finished');
    const script = `
      import { spawnOwned } from ${JSON.stringify(join(process.cwd(), 'src/core/children.ts'))};
      spawnOwned('sh', ['-c', 'cat >/dev/null; sleep 2; echo done > ${marker}'], { stdio: ['pipe', 'ignore', 'ignore'] }, undefined, true);
      // An ffmpeg of a source's beside it: the reaper is started.
      spawnOwned('sleep', ['300'], { stdio: 'ignore' });
      process.stdout.write('started\\n');
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    expect(await until(() => out.includes('started'), 30_000)).toBe(true);
    const kids = childrenOf(child.pid!);
    leftOver.push(...kids.map(record));
    child.kill('SIGKILL');
    await exited;
    expect(await until(() => existsSync(marker), 10_000)).toBe(true);
  }, 60_000);

  // The reaper is a shell argus does not otherwise watch: killed while argus lives (`pkill sh`,
  // `killall sh`, the OOM killer), it was started again only at argus's next child, and the
  // ffmpegs of cameras that did not restart were left to live on after a kill -9 of argus.
  it('a reaper killed while argus lives is started again: the ffmpeg already running still ends with an argus killed outright', async () => {
    const script = `
      import { spawnOwned } from ${JSON.stringify(join(process.cwd(), 'src/core/children.ts'))};
      spawnOwned('sleep', ['301'], { stdio: 'ignore' });
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'inherit'] });
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    scripts.push(child);
    const named = (cmd: string) => childrenOf(child.pid!).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith(cmd));
    let first: number[] = [];
    expect(await until(() => named('sleep').length === 1 && (first = named('/bin/sh')).length === 1, 30_000)).toBe(true);
    const sleeper = named('sleep')[0];
    leftOver.push(record(sleeper));
    process.kill(first[0], 'SIGKILL');
    let again: number[] = [];
    expect(await until(() => (again = named('/bin/sh').filter((p) => p !== first[0])).length === 1, 10_000)).toBe(true);
    child.kill('SIGKILL');
    await exited;
    expect(await until(() => !running(sleeper), 10_000)).toBe(true);
  }, 60_000);
});
