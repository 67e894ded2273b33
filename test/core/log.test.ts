import { spawn, spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PipeWriter, SHARED_QUEUE_BYTES, SharedStdoutWriter, STDERR_QUEUE_BYTES, ThrottledLog, type LogFn } from '../../src/core/log.js';

/**
 * Reads `reader` (a FIFO's non-blocking end) 4 KB every 20 ms, as a slow reader does, until every
 * writer has closed it, or `ended()` says the writer is gone and nothing more is there (at most 60 s).
 */
async function readSlowly(reader: number, ended: () => boolean): Promise<string> {
  let got = '';
  const b = Buffer.alloc(4096);
  const end = Date.now() + 60_000;
  for (;;) {
    let n = 0;
    try {
      n = readSync(reader, b);
    } catch {
      n = -1; // EAGAIN
    }
    if (n > 0) got += b.toString('utf8', 0, n);
    else if (n === 0 || ended()) return got; // n 0: every writer has closed
    if (Date.now() > end) return got;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('ThrottledLog', () => {
  afterEach(() => vi.useRealTimers());

  it('logs the first event of a kind at once, then one line at the end of the window with how many more there were', () => {
    vi.useFakeTimers();
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const out: LogFn = (m, f) => lines.push([m, f]);
    const t = new ThrottledLog(out, 10_000);
    for (let i = 0; i < 500; i++) t.log('origin', 'refused', { origin: `o${i}` }, 'warn');
    t.log('kick', 'kicked', { code: 1008 }, 'warn'); // another kind: its own window
    expect(lines).toEqual([['refused', { origin: 'o0' }], ['kicked', { code: 1008 }]]);
    vi.advanceTimersByTime(10_000);
    expect(lines.slice(2)).toEqual([['refused (and 499 more like it in 10 s)', { origin: 'o499', suppressed: 499 }]]);
    // A window with nothing more closes silently, and the next event is logged at once again.
    t.log('origin', 'refused', { origin: 'later' }, 'warn');
    expect(lines.at(-1)).toEqual(['refused', { origin: 'later' }]);
    expect(lines).toHaveLength(4);
  });

  it('flush (its owner stopping) says the count of every open window at once, for the time it lasted, and nothing twice', () => {
    vi.useFakeTimers();
    const lines: [string, Record<string, unknown> | undefined][] = [];
    const t = new ThrottledLog((m, f) => lines.push([m, f]), 600_000);
    t.log('jump', 'jumped', { n: 0 });
    t.log('jump', 'jumped', { n: 1 });
    t.log('jump', 'jumped', { n: 2 });
    t.log('quiet', 'once'); // nothing counted: no line
    vi.advanceTimersByTime(42_000);
    t.flush();
    expect(lines).toEqual([['jumped', { n: 0 }], ['once', undefined], ['jumped (and 2 more like it in 42 s)', { n: 2, suppressed: 2 }]]);
    vi.advanceTimersByTime(600_000); // the windows' own ends: already said
    expect(lines).toHaveLength(3);
    t.log('jump', 'jumped', { n: 3 }); // a new window
    expect(lines.at(-1)).toEqual(['jumped', { n: 3 }]);
  });
});

describe('stderr as a pipe whose reader stops reading (PipeWriter)', () => {
  const fifo = () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
    const path = join(d, 'err');
    expect(spawnSync('mkfifo', [path]).status).toBe(0);
    // The reader's end first (non-blocking: no wait for a writer), as a reader that reads nothing yet.
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    return { d, path, reader };
  };
  const drain = (fd: number): string => {
    const b = Buffer.alloc(1 << 16);
    let out = '';
    for (;;) {
      try {
        const n = readSync(fd, b);
        if (n <= 0) return out;
        out += b.toString('utf8', 0, n);
      } catch {
        return out; // EAGAIN: nothing more now
      }
    }
  };

  it('holds what the pipe does not take (at most STDERR_QUEUE_BYTES), drops the rest counted, and once read again writes the held lines in order and one line saying how many were dropped', async () => {
    const { d, path, reader } = fifo();
    const w = new PipeWriter(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    try {
      const line = (i: number) => `${JSON.stringify({ i, pad: 'x'.repeat(1000) })}\n`;
      const t0 = performance.now();
      for (let i = 0; i < 3000; i++) w.write(line(i)); // 3 MB into a 64 KB pipe nobody reads
      expect(performance.now() - t0).toBeLessThan(10_000); // returned: no write waited for the reader (bounds a hang only)
      expect(w.heldBytes).toBeLessThanOrEqual(STDERR_QUEUE_BYTES);
      const dropped = w.droppedLines;
      expect(dropped).toBeGreaterThan(1000);
      // The reader reads again: everything held comes, in order, then the count.
      let got = '';
      const end = Date.now() + 30_000;
      while (!got.includes('dropped') && Date.now() < end) {
        got += drain(reader);
        await new Promise((r) => setTimeout(r, 10));
      }
      const lines = got.trim().split('\n').map((l) => JSON.parse(l) as { i?: number; dropped?: number; msg?: string });
      const kept = lines.filter((l) => l.i !== undefined).map((l) => l.i);
      expect(kept).toEqual(Array.from({ length: 3000 - dropped }, (_, i) => i)); // the first ones, none skipped, none twice
      expect(lines.at(-1)).toMatchObject({ dropped, msg: `${dropped} log line(s) dropped: stderr was not read` });
    } finally {
      closeSync(reader);
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('argus’s logger on a stderr pipe that is never read: the process goes on and ends (it blocked at the first line the pipe could not take)', async () => {
    const { d, path, reader } = fifo();
    const err = openSync(path, constants.O_WRONLY); // blocking, as a shell or Docker hands it over
    try {
      const script = `
        import { createLogger, writeStderr } from ${JSON.stringify(join(__dirname, '../../src/core/log.ts'))};
        const log = createLogger('info');
        for (let i = 0; i < 5000; i++) log.info({ i, pad: 'x'.repeat(1000) }, 'line');
        writeStderr('argus: the exit summary\\n');
        process.stdout.write('done');
      `;
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', err] });
      let out = '';
      child.stdout!.on('data', (b: Buffer) => (out += b));
      const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
      expect({ code, out }).toEqual({ code: 0, out: 'done' });
      // What the pipe took first is there, from the start.
      expect(drain(reader).split('\n')[0]).toMatch(/"i":0,/);
    } finally {
      closeSync(err);
      closeSync(reader);
      rmSync(d, { recursive: true, force: true });
    }
  }, 120_000); // a child node with tsx: seconds idle, longer on a busy machine (bounds a hang only)

  it('a slow reader: a line the pipe took in part is finished before anything else written to stderr (console.error, the exit summary), and the summary written at exit reaches it', async () => {
    const { d, path, reader } = fifo();
    const err = openSync(path, constants.O_WRONLY);
    try {
      const script = `
        import { createLogger, writeStderr } from ${JSON.stringify(join(__dirname, '../../src/core/log.ts'))};
        const log = createLogger('info');
        log.info({ pad: 'y'.repeat(200000) }, 'big');
        console.error('plain line');
        writeStderr('argus: the exit summary\\n');
        process.exit(0);
      `;
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', err] });
      let closed = false;
      child.on('close', () => (closed = true));
      await new Promise((r) => setTimeout(r, 300));
      // A slow reader, until the child has ended and the pipe is empty (the test holds a writer too).
      const got = await readSlowly(reader, () => closed);
      const lines = got.split('\n');
      expect(JSON.parse(lines[0]).msg).toBe('big'); // whole: nothing landed inside it
      expect(lines.slice(1)).toEqual(['plain line', 'argus: the exit summary', '']);
    } finally {
      closeSync(err);
      closeSync(reader);
      rmSync(d, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('stderr as a socket whose reader stops reading (systemd’s journal, a Node parent’s pipe)', () => {
  const logScript = (body: string) => `
    import { createLogger, writeStderr } from ${JSON.stringify(join(__dirname, '../../src/core/log.ts'))};
    const log = createLogger('info');
    ${body}
  `;

  it('argus’s logger on a socket that is not read: the process goes on and ends, and what the socket took first is there from the start (it slept 100 ms a line, on the event loop, for as long as the reader stalled)', async () => {
    const script = logScript(`
      for (let i = 0; i < 5000; i++) log.info({ i, pad: 'x'.repeat(1000) }, 'line');
      writeStderr('argus: the exit summary\\n');
      process.stdout.write('done');
    `);
    // Node's stdio 'pipe' is a socket pair: stderr is not read until the child has ended.
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    // (A listener first: Node throws away what an unused stdio stream holds when the child exits.)
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err += b));
    child.stderr!.pause();
    let out = '';
    child.stdout!.on('data', (b: Buffer) => (out += b));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect({ code, out }).toEqual({ code: 0, out: 'done' });
    child.stderr!.resume();
    await new Promise((r) => child.stderr!.on('end', r));
    const lines = err.trim().split('\n');
    expect(lines[0]).toMatch(/"i":0,/);
    // 5 MB for a socket that holds a few hundred KB, plus the 1 MiB held: most lines dropped, none written twice or out of order.
    const kept = lines.filter((l) => l.includes('"i":')).map((l) => (JSON.parse(l) as { i: number }).i);
    expect(kept.length).toBeLessThan(5000);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => i));
  }, 120_000); // a child node with tsx: seconds idle, longer on a busy machine (bounds a hang only)

  it('a slow reader: a line the socket took in part is finished before anything else written to stderr (console.error, the exit summary), which reaches it at exit', async () => {
    const script = logScript(`
      log.info({ pad: 'y'.repeat(900_000) }, 'big');
      console.error('plain line');
      writeStderr('argus: the exit summary\\n');
      process.exit(0);
    `);
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
    // Reads a chunk every 20 ms.
    let got = '';
    child.stderr!.on('data', (b: Buffer) => {
      got += b;
      child.stderr!.pause();
      setTimeout(() => child.stderr!.resume(), 20);
    });
    await new Promise((r) => child.on('close', r));
    const lines = got.split('\n');
    expect(JSON.parse(lines[0]).msg).toBe('big'); // whole: nothing landed inside it
    expect(lines.slice(1)).toEqual(['plain line', 'argus: the exit summary', '']);
  }, 120_000);
});

describe('stderr that is stdout’s own pipe or socket (`2>&1 |`, systemd’s one journal socket for both)', () => {
  const logScript = (body: string) => `
    import { createLogger, writeStderr } from ${JSON.stringify(join(__dirname, '../../src/core/log.ts'))};
    const log = createLogger('info');
    ${body}
  `;
  // A log line the reader takes in part, data written to stdout (as `--jsonl -` does), more lines.
  const body = `
    log.info({ pad: 'y'.repeat(900_000) }, 'big');
    process.stdout.write(JSON.stringify({ jsonl: 1 }) + '\\n');
    console.error('plain line');
    log.info('after');
    process.stdout.write(JSON.stringify({ jsonl: 2 }) + '\\n');
    // Ends by itself, as argus does (process.exitCode): Node writes what its stream holds first.
  `;
  const expectInOrder = (got: string) => {
    const lines = got.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(JSON.parse(lines[0]).msg).toBe('big'); // whole: the JSONL line did not land inside it
    expect(lines.slice(1, -1).map((l) => (l.startsWith('{') ? JSON.parse(l).jsonl ?? JSON.parse(l).msg : l))).toEqual([1, 'plain line', 'after', 2]);
  };

  it('a socket read slowly: log lines and stdout’s data leave whole, in the order written (a log line held in part had a JSONL line written into it)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-shared-'));
    const path = join(dir, 's.sock');
    let got = '';
    const server = createServer((c) => {
      c.on('data', (b: Buffer) => {
        got += b;
        c.pause();
        setTimeout(() => c.resume(), 20);
      });
    });
    try {
      await new Promise<void>((r) => server.listen(path, r));
      const client = connect(path);
      await new Promise((r) => client.on('connect', r));
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', logScript(body)], { stdio: ['ignore', client, client] });
      await new Promise((r) => child.on('exit', r));
      client.destroy();
      const end = Date.now() + 30_000;
      while (!got.includes('"jsonl":2') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      expectInOrder(got);
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a pipe read slowly (`2>&1 |`): the same', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-fifo-'));
    const path = join(d, 'out');
    expect(spawnSync('mkfifo', [path]).status).toBe(0);
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const w = openSync(path, constants.O_WRONLY);
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', logScript(body)], { stdio: ['ignore', w, w] });
      let closed = false;
      child.on('close', () => (closed = true));
      closeSync(w);
      expectInOrder(await readSlowly(reader, () => closed));
    } finally {
      closeSync(reader);
      rmSync(d, { recursive: true, force: true });
    }
  }, 120_000);

  it('drops lines while the stream holds more than SHARED_QUEUE_BYTES (a line alone larger still goes), and goes on, the count first, once it holds at most STDERR_QUEUE_BYTES', async () => {
    vi.useFakeTimers();
    try {
      const stream = { writableLength: 0, destroyed: false, writableEnded: false };
      const sent: string[] = [];
      const w = new SharedStdoutWriter(stream, (s) => void sent.push(String(s)), () => 7);
      w.write('x'.repeat(SHARED_QUEUE_BYTES + 10)); // nothing held: goes
      // The JSONL sink's own bound (1 MiB by default) reached: detections are skipped, lines still go.
      stream.writableLength = STDERR_QUEUE_BYTES + 100;
      w.write('line');
      expect(sent).toHaveLength(2);
      stream.writableLength = SHARED_QUEUE_BYTES - 5;
      w.write('0123456789'); // would pass the bound: dropped
      w.write('a'); // dropped too, so that no line overtakes the count
      expect(sent).toHaveLength(2);
      expect(w.droppedLines).toBe(2);
      stream.writableLength = STDERR_QUEUE_BYTES + 1;
      await vi.advanceTimersByTimeAsync(100);
      expect(sent).toHaveLength(2); // still more than STDERR_QUEUE_BYTES held
      stream.writableLength = STDERR_QUEUE_BYTES; // a steady flow need not empty the stream
      await vi.advanceTimersByTimeAsync(100);
      expect(JSON.parse(sent[2])).toEqual({ level: 40, time: 7, dropped: 2, msg: '2 log line(s) dropped: stderr was not read' });
      w.write('b');
      expect(sent[3]).toBe('b');
      stream.destroyed = true; // the reader gone: nothing more
      w.write('c');
      expect(sent).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });
});
