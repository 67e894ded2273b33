import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, constants, mkdtempSync, openSync, readFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { SharedStdoutWriter, type SharedStream } from '../../src/core/log.js';
import { JsonlSink } from '../../src/sinks/jsonl.js';

// Real named pipes (mkfifo) in a temp folder. Nothing here reads a clock: each wait is for an
// event (a log line, a reader's exit), and vitest's bound only ends a hang.

const fifos: string[] = [];
const fds: number[] = [];
function mkfifo(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'argus-jsonl-')), 'out.fifo');
  const r = spawnSync('mkfifo', [path]);
  if (r.status !== 0) throw new Error(`mkfifo failed: ${r.stderr}`);
  fifos.push(path);
  return path;
}
afterEach(() => {
  // A writer still blocked in open() (the bug) is let go by a reader, so the worker can exit.
  for (const f of fifos.splice(0)) {
    try {
      closeSync(openSync(f, constants.O_RDONLY | constants.O_NONBLOCK));
    } catch {
      // removed
    }
  }
  for (const fd of fds.splice(0)) closeSync(fd);
});

/** A log that resolves `waiting` once the sink says it waits for a reader. */
function waitLog() {
  const lines: string[] = [];
  let onWait = () => {};
  const waiting = new Promise<void>((r) => (onWait = r));
  const log = (m: string) => {
    lines.push(m);
    if (m.includes('waiting for one')) onWait();
  };
  return { log, lines, waiting };
}

describe('JsonlSink on a named pipe', () => {
  it('with no reader: open waits without blocking a thread, says so naming the file, and a signal ends the wait (VAP_ERR_INTERRUPTED naming it)', async () => {
    const fifo = mkfifo();
    const ac = new AbortController();
    const { log, lines, waiting } = waitLog();
    const pending = JsonlSink.open(fifo, { log, signal: ac.signal }).catch((x: unknown) => x);
    await waiting;
    ac.abort();
    const e = await pending;
    expect(isArgusError(e, 'VAP_ERR_INTERRUPTED')).toBe(true);
    expect((e as Error).message).toBe(`sinks.jsonl.path: stopped while waiting for a reader of the named pipe ${fifo}`);
    expect(lines.filter((l) => l.includes('waiting for one'))).toEqual([`jsonl: ${fifo} is a named pipe with no reader yet; waiting for one (SIGINT or SIGTERM stops)`]);
  });

  it('a reader that comes later gets every line, and close() ends its input', async () => {
    const fifo = mkfifo();
    const { log, waiting } = waitLog();
    const opening = JsonlSink.open(fifo, { log });
    await waiting;
    const reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'inherit'] });
    let got = '';
    reader.stdout.setEncoding('utf8').on('data', (s: string) => (got += s));
    const ended = new Promise<number | null>((r) => reader.on('close', r));
    const sink = await opening;
    for (let i = 0; i < 1000; i++) sink.publish('detections', 'cam', JSON.stringify({ i }));
    await sink.close();
    expect(await ended).toBe(0);
    const out = got.trim().split('\n');
    expect(out).toHaveLength(1000);
    expect(JSON.parse(out[999])).toEqual({ i: 999 });
    expect(sink.error).toBeUndefined();
  });

  it('a reader that stops reading cannot hold close(): what it did not take is dropped, with a warning', async () => {
    const fifo = mkfifo();
    fds.push(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)); // a reader that never reads
    const lines: string[] = [];
    const sink = await JsonlSink.open(fifo, { log: (m) => lines.push(m), closeTimeoutMs: 50 });
    const line = JSON.stringify({ pad: 'x'.repeat(1000) });
    for (let i = 0; i < 1000; i++) sink.publish('alert', 'cam', line); // 1 MB: far more than a pipe holds
    await sink.close();
    expect(lines.some((l) => l.startsWith(`jsonl: the reader of ${fifo} did not take the last`))).toBe(true);
  });

  it('a reader that falls behind: the detection lines skipped are counted by source, told in a warning at once, and summed up at close (they were counted in a field nothing read)', async () => {
    const fifo = mkfifo();
    fds.push(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)); // a reader that never reads
    const lines: string[] = [];
    const sink = await JsonlSink.open(fifo, { log: (m) => lines.push(m), closeTimeoutMs: 50, maxBufferedBytes: 4096 });
    const line = JSON.stringify({ pad: 'x'.repeat(1000) });
    for (let i = 0; i < 300; i++) sink.publish('detections', i % 3 ? 'a' : 'b', line);
    sink.publish('alert', 'a', line); // alerts are never skipped for it
    expect(sink.skipped).toBeGreaterThan(200);
    expect((sink.behind.get('a') ?? 0) + (sink.behind.get('b') ?? 0)).toBe(sink.skipped);
    expect(sink.behind.get('b')).toBeGreaterThan(50);
    const warned = lines.filter((l) => l.includes('detection lines are skipped'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(fifo);
    await sink.close();
    expect(lines.some((l) => l === `jsonl: ${sink.skipped} detection lines were not written to ${fifo}: it was more than 4096 bytes behind (a slow reader or disk)`)).toBe(true);
  });

  it('stdout shared with stderr (`2>&1 |`) and a reader slower than the detections: at its default bound the sink skips detections while log lines through the same stream still go (the log dropped every line from 2 MiB on while the sink wrote on to 16 MiB)', async () => {
    const fifo = mkfifo();
    fds.push(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)); // a reader that never reads
    const sink = await JsonlSink.open(fifo, { closeTimeoutMs: 50 });
    // The stream the sink writes, as stderr's lines share stdout's (run.ts: JsonlSink.open('-') and the logger's SharedStdoutWriter).
    const out = (sink as unknown as { out: SharedStream }).out;
    const sent: string[] = [];
    const log = new SharedStdoutWriter(out, (s) => void sent.push(String(s)));
    const line = JSON.stringify({ pad: 'x'.repeat(1000) });
    for (let i = 0; sink.skipped === 0 && i < 40_000; i++) sink.publish('detections', 'a', line);
    expect(sink.skipped).toBe(1);
    log.write('{"msg":"a log line"}\n');
    expect(log.droppedLines).toBe(0);
    expect(sent).toEqual(['{"msg":"a log line"}\n']);
    await sink.close();
  });

  it('a regular file is still created and written as before', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-jsonl-')), 'out.jsonl');
    const sink = await JsonlSink.open(file);
    sink.publish('detections', 'cam', '{"a":1}');
    await sink.close();
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}\n');
  });
});

describe('JsonlSink on stdout whose reader stops reading', () => {
  it('close() gives it closeTimeoutMs to take what is buffered, then drops the rest, logged (it waited for as long as the reader stalled)', async () => {
    const sink = new URL('../../src/sinks/jsonl.ts', import.meta.url).href;
    const script = `
      const { JsonlSink } = await import(${JSON.stringify(sink)});
      const s = await JsonlSink.open('-', { closeTimeoutMs: 300, log: (m) => process.stderr.write('LOG ' + m + '\\n') });
      const line = JSON.stringify({ type: 'detections', pad: 'x'.repeat(1000) });
      for (let i = 0; i < 900; i++) s.publish('detections', 'cam', line);
      const t = Date.now();
      await s.close();
      process.stderr.write('CLOSED ' + (Date.now() - t) + '\\n');
      process.exit(0);
    `;
    // The test holds the read end of the child's stdout and never reads it: a stalled reader.
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.pause();
    let err = '';
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    child.stdout!.destroy();
    expect(code).toBe(0);
    expect(err).toMatch(/LOG jsonl: the reader of stdout did not take the last \d+ bytes within 0\.3 s; they are dropped/);
    expect(err).toMatch(/CLOSED \d+/);
  }, 60_000);
});

describe('JsonlSink on a file, across starts of argus', () => {
  it("appends: a restart keeps the run before's lines (each start emptied the file, erasing its alerts), and a line a killed run cut short is ended first", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-jsonl-')), 'out.jsonl');
    const first = await JsonlSink.open(file);
    first.publish('alert', 'cam', '{"type":"alert","run":"a","seq":7}');
    await first.close();
    // A run killed mid-write left half a line.
    appendFileSync(file, '{"type":"detections","run":"b","se');
    const second = await JsonlSink.open(file);
    second.publish('alert', 'cam', '{"type":"alert","run":"c","seq":0}');
    await second.close();
    const third = await JsonlSink.open(file);
    third.publish('detections', 'cam', '{"type":"detections","run":"d","seq":0}');
    await third.close();
    expect(readFileSync(file, 'utf8')).toBe(
      '{"type":"alert","run":"a","seq":7}\n{"type":"detections","run":"b","se\n{"type":"alert","run":"c","seq":0}\n{"type":"detections","run":"d","seq":0}\n',
    );
  });
});

describe('JsonlSink on a file that is rotated (README: logrotate copytruncate)', () => {
  it('goes on at the start of a file cut to 0 bytes (appended to: no hole of NUL bytes where the cut lines were)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'argus-jsonl-')), 'out.jsonl');
    const sink = await JsonlSink.open(file);
    sink.publish('alert', 'cam', '{"type":"alert","seq":1}');
    await vi.waitFor(() => expect(readFileSync(file, 'utf8')).toBe('{"type":"alert","seq":1}\n'));
    truncateSync(file, 0); // what copytruncate does after its copy
    sink.publish('alert', 'cam', '{"type":"alert","seq":2}');
    await sink.close();
    expect(readFileSync(file, 'utf8')).toBe('{"type":"alert","seq":2}\n');
  });
});
