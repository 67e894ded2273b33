// The frame channel (sources/frame-channel.ts, frame-channel.c): ffmpeg's frames read whole by a
// thread of argus's own. Real Unix sockets and real child processes in place of ffmpeg.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FRAME_CHANNELS, FrameChannel } from '../../src/sources/frame-channel.js';
import { BufferPool, FrameReader } from '../../src/sources/frame-reader.js';

const FRAME = 200_003; // more than a socket holds: the thread's one read waits for the rest
const dir = mkdtempSync(join(tmpdir(), 'argus-channel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const until = async (ok: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
};
const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
/** A child writing `bytes` into the channel (`cat` of a file), as ffmpeg would. */
const writer = (ch: FrameChannel, bytes: Buffer): ChildProcess => {
  const f = join(dir, `frames-${randomBytes(4).toString('hex')}`);
  writeFileSync(f, bytes);
  const c = spawn('cat', [f], { stdio: ['ignore', ch.childEnd!, 'ignore'] });
  ch.spawned();
  return c;
};

describe.runIf(FRAME_CHANNELS)('FrameChannel', () => {
  it('frames come whole and in order, each read into a pooled frame buffer; `hold` stops reading at a frame boundary until `resume`; the end is told once every byte is read', async () => {
    const ch = FrameChannel.open()!;
    const sent = randomBytes(FRAME * 5 + 77); // 5 frames and a partial one
    const got: Buffer[] = [];
    const pool = new BufferPool(FRAME);
    const reader = new FrameReader(FRAME, pool, (f) => {
      got.push(Buffer.from(f));
      pool.release(f);
    });
    let holding = true;
    let ends = 0;
    ch.onEnd = () => ends++;
    ch.onError = (e) => {
      throw e;
    };
    ch.feed(reader, () => holding && got.length === 2);
    expect(ch.childEnd).toBeTypeOf('number');
    writer(ch, sent);
    expect(ch.childEnd).toBeUndefined();
    ch.resume();
    ch.resume(); // a second resume while a read is on the thread: no second read
    await until(() => got.length === 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toHaveLength(2); // held after the second frame, though the rest was sent
    expect(ch.ended).toBe(false);
    holding = false;
    ch.resume();
    await until(() => ch.ended);
    expect(ends).toBe(1);
    expect(got).toHaveLength(5);
    expect(Buffer.concat(got).equals(sent.subarray(0, FRAME * 5))).toBe(true);
    expect(reader.pending).toBe(77); // the partial frame, never delivered
    expect(pool.allocated).toBeLessThanOrEqual(2);
    ch.destroy();
    ch.destroy(); // twice: nothing more
  });

  it("ffmpeg's end is not inherited by other children: the end of the stream is seen when the writer exits, though another child started after the channel still runs", async () => {
    const ch = FrameChannel.open()!;
    const other = spawn('sleep', ['60'], { stdio: 'ignore' }); // started while ffmpeg's end is open
    try {
      const got: Buffer[] = [];
      ch.feed(new FrameReader(4, new BufferPool(4), (f) => got.push(Buffer.from(f))));
      const c = writer(ch, Buffer.from('abcdefgh'));
      ch.resume();
      await exited(c);
      await until(() => ch.ended);
      expect(ch.ended).toBe(true);
      expect(got.map(String)).toEqual(['abcd', 'efgh']);
    } finally {
      other.kill('SIGKILL');
      ch.destroy();
    }
  });

  it('destroy while the thread waits on a silent writer: it returns, and nothing is told after it', async () => {
    const ch = FrameChannel.open()!;
    const silent = spawn('sleep', ['60'], { stdio: ['ignore', ch.childEnd!, 'ignore'] });
    ch.spawned();
    try {
      let told = 0;
      ch.onEnd = () => told++;
      ch.onError = () => told++;
      const frames: Buffer[] = [];
      ch.feed(new FrameReader(FRAME, new BufferPool(FRAME), (f) => frames.push(f)));
      ch.resume();
      await new Promise((r) => setTimeout(r, 50));
      ch.destroy();
      await new Promise((r) => setTimeout(r, 100));
      expect(told).toBe(0);
      expect(frames).toHaveLength(0);
      expect(ch.ended).toBe(false);
    } finally {
      silent.kill('SIGKILL');
    }
  });

  it('a channel left open does not keep the process from exiting once its work is done', async () => {
    const script = [
      "import { FrameChannel } from './src/sources/frame-channel.ts';",
      'const idle = FrameChannel.open();',
      "if (!idle) process.exit(3);",
      "process.stdout.write('opened');",
    ].join('\n');
    const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(import.meta.dirname, '..', '..'), stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout!.on('data', (b) => (out += b));
    const code = await new Promise<number | null>((r) => c.once('exit', r));
    expect(out).toBe('opened');
    expect(code).toBe(0);
  }, 30_000);

  it("an exception thrown by the frames' consumer reaches 'uncaughtException', as from a pipe's reader: never lost with the next read (the source stalled without an error)", async () => {
    const script = [
      "import { spawn } from 'node:child_process';",
      "import { FrameChannel } from './src/sources/frame-channel.ts';",
      "import { BufferPool, FrameReader } from './src/sources/frame-reader.ts';",
      "process.on('uncaughtException', (e) => { process.stdout.write('caught: ' + e.message); process.exit(0); });",
      'const ch = FrameChannel.open();',
      'if (!ch) process.exit(3);',
      "ch.feed(new FrameReader(4, new BufferPool(4), (f) => { throw new Error('consumer failed on ' + f); }));",
      "spawn('sh', ['-c', 'printf abcdefgh'], { stdio: ['ignore', ch.childEnd, 'ignore'] });",
      'ch.spawned();',
      'ch.resume();',
    ].join('\n');
    const c = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(import.meta.dirname, '..', '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout!.on('data', (b) => (out += b));
    c.stderr!.on('data', (b) => (err += b));
    const code = await new Promise<number | null>((r) => c.once('exit', r));
    expect(err).not.toContain('DEP0168'); // N-API's "Uncaught N-API callback exception detected"
    expect(out).toBe('caught: consumer failed on abcd');
    expect(code).toBe(0);
  }, 30_000);
});
