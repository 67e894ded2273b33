// `argus cameras` and `argus cluster` stopped (Ctrl-C, SIGTERM) while they connect to brokers that
// never answer: they had no listener of their own, and ended by the signal without a word (no
// code, no message); `argus consume` said VAP_ERR_INTERRUPTED and exited 130. Now they all do.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ARGUS, ROOT } from '../helpers/cli.js';
import { until } from '../helpers/procs.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A "broker" that takes connections and never answers; `seen` resolves at the first bytes of a request. */
async function silentBroker(): Promise<{ port: number; seen: Promise<void> }> {
  const sockets: Socket[] = [];
  let onSeen!: () => void;
  const seen = new Promise<void>((r) => (onSeen = r));
  const server = createServer((s) => {
    sockets.push(s);
    s.on('error', () => undefined);
    s.once('data', () => onSeen());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return { port: (server.address() as AddressInfo).port, seen };
}

describe('argus cameras / cluster: a stop while connecting', () => {
  it.each([
    [['cameras', 'ls'], 'SIGINT'],
    [['cluster', 'status'], 'SIGTERM'],
  ] as const)('argus %j, %s: VAP_ERR_INTERRUPTED naming the step and the broker, exit 130 (it ended by the signal, silent)', async (cmd, sig) => {
    const b = await silentBroker();
    const p = spawn(process.execPath, [ARGUS, ...cmd, '--brokers', `127.0.0.1:${b.port}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 120_000); // a hang bound only
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
    await b.seen;
    p.kill(sig);
    const r = await exited;
    clearTimeout(bound);
    expect(r).toEqual({ code: 130, signal: null });
    expect(stderr).toBe(`argus: VAP_ERR_INTERRUPTED: ${cmd.join(' ')}: ${sig} while connecting to the Kafka broker 127.0.0.1:${b.port}: stopped on the signal\n`);
  }, 180_000);

  // The same stop delivered twice at once (a supervisor or script that signals argus and then
  // its process group; GNU timeout does, unless the kernel merges the two): stopSignal took the
  // first and left the second to the signal's default action, which ended the command by the
  // signal (killed, no status 130; `argus consume` reading lost its summary), where `argus run`
  // takes a repeat within SIGNAL_REPEAT_MS as the same stop (StopSignals).
  it('argus ["cameras","ls"], SIGTERM twice 50 ms apart (one stop sent to argus and its group): one stop, exit 130', async () => {
    const b = await silentBroker();
    const p = spawn(process.execPath, [ARGUS, 'cameras', 'ls', '--brokers', `127.0.0.1:${b.port}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 120_000); // a hang bound only
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
    await b.seen;
    p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 50));
    p.kill('SIGTERM');
    const r = await exited;
    clearTimeout(bound);
    expect(r).toEqual({ code: 130, signal: null });
    expect(stderr).toBe(`argus: VAP_ERR_INTERRUPTED: cameras ls: SIGTERM while connecting to the Kafka broker 127.0.0.1:${b.port}: stopped on the signal\n`);
  }, 180_000);

  // `argus cameras apply` reads its file after its stop listener is set: a stop while it read (a
  // named pipe whose writer has not written, waited for up to 30 s; a hung mount) was said at the
  // next step, once the read ended: "SIGINT while connecting to the Kafka broker …", or the pipe's
  // wait ran out (VAP_ERR_CONFIG_FILE, exit 2) with the stop not said at all.
  it('argus ["cameras","apply"], SIGINT while it reads its file (a named pipe nobody writes yet): VAP_ERR_INTERRUPTED naming that step and the file, exit 130', async () => {
    const b = await silentBroker();
    const dir = mkdtempSync(join(tmpdir(), 'argus-cameras-stop-'));
    closers.push(async () => rmSync(dir, { recursive: true, force: true }));
    const fifo = join(dir, 'cameras.yaml');
    execFileSync('mkfifo', [fifo]);
    const p = spawn(process.execPath, [ARGUS, 'cameras', 'apply', fifo, '--brokers', `127.0.0.1:${b.port}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 120_000); // a hang bound only
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (code, signal) => r({ code, signal })));
    // Reading it: the pipe open among the process's files.
    const reading = () => {
      try {
        return readdirSync(`/proc/${p.pid}/fd`).some((fd) => {
          try {
            return readlinkSync(`/proc/${p.pid}/fd/${fd}`) === fifo;
          } catch {
            return false;
          }
        });
      } catch {
        return false;
      }
    };
    expect(await until(reading, 60_000)).toBe(true);
    p.kill('SIGINT');
    const r = await exited;
    clearTimeout(bound);
    expect(r).toEqual({ code: 130, signal: null });
    expect(stderr).toBe(`argus: VAP_ERR_INTERRUPTED: cameras apply: SIGINT while reading the cameras file ${fifo}: stopped on the signal\n`);
  }, 180_000);
});
