import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { constants, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { KafkaSink, type KafkaSinkOptions } from '../../src/sinks/kafka.js';
import type { AlertMessage } from '../../src/sinks/message.js';

/**
 * The dead-letter file (sinks.kafka.deadLetterPath) is opened without waiting: a named pipe
 * whose reader was away froze the whole process in a synchronous open as the first too-large
 * alert was parked (no timer, no other camera, no heartbeat ran again). No broker is needed: a
 * message over maxMessageBytes is parked before any request.
 */
const dir = mkdtempSync(join(tmpdir(), 'argus-dead-letter-'));

function parkOne(deadLetterPath: string, pad = 5000, extra: Partial<KafkaSinkOptions> = {}) {
  const logs: string[] = [];
  // Port 1 of loopback: nothing listens (the sink retries in the background; nothing waits on it).
  const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:1'] }), ssl: undefined, closeTimeoutMs: 200, maxMessageBytes: 1024, deadLetterPath, log: (m: string) => logs.push(m), ...extra });
  const m = { type: 'alert', source: 'cam', alert: { id: 'a1' }, pad: 'x'.repeat(pad) } as unknown as AlertMessage;
  return { sink, logs, publish: () => sink.publish('alert', 'cam', JSON.stringify(m), m) };
}

async function until(cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

/**
 * A named pipe made in `dir`, and a process holding it open (read and write: it waits for no
 * writer) that then runs `then` (sh; the pipe is its descriptor 3). Resolves once it has said
 * so; `printed()` is all it has printed, its `ready` line first.
 */
async function heldFifo(name: string, then: string): Promise<{ fifo: string; proc: ChildProcess; printed: () => string }> {
  const fifo = join(dir, name);
  execFileSync('mkfifo', [fifo]);
  const proc = spawn('sh', ['-c', `exec 3<>"$0"; echo ready; ${then}`, fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  if (!(await until(() => out.startsWith('ready\n')))) {
    proc.kill();
    throw new Error(`${name}: the process holding it did not start`);
  }
  return { fifo, proc, printed: () => out };
}

describe('the dead-letter file', () => {
  it('a named pipe nobody reads: the parked alert is logged as not written, and the process goes on', async () => {
    const fifo = join(dir, 'dead.fifo');
    execFileSync('mkfifo', [fifo]);
    const { sink, logs, publish } = parkOne(fifo);
    void sink.start().catch(() => undefined);
    publish();
    expect(await until(() => sink.stats.parked === 1 && logs.some((l) => l.includes('cannot write the dead-letter file')))).toBe(true);
    expect(logs.find((l) => l.includes('cannot write the dead-letter file'))).toBe(`kafka: cannot write the dead-letter file ${fifo} (ENXIO: no such device or address, open '${fifo}'); parked messages are only counted`);
    expect(sink.stats.deadLettered).toBe(0);
    await sink.close();
  });

  it('a named pipe with a reader takes a parked message larger than the pipe holds, whole', async () => {
    // Opened without waiting (ed40498), its writes did not wait either: a parked message (too
    // large for the broker, so usually over the pipe's 64 KiB) was cut at 64 KiB with EAGAIN,
    // the fragment left in the pipe, the alert kept in the outbox and written again at the next
    // start after the fragment: the reader got a torn line.
    // The reader holds the pipe open (read and write: no wait for a writer), then reads after a second.
    const { fifo, proc: reader, printed } = await heldFifo('read.fifo', 'sleep 1; exec cat <&3');
    try {
      const { sink, logs, publish } = parkOne(fifo, 200_000);
      void sink.start().catch(() => undefined);
      publish();
      // Written as the reader reads (after its second), the process going on meanwhile.
      expect(await until(() => sink.stats.deadLettered === 1 || logs.some((l) => l.includes('cannot write the dead-letter file')))).toBe(true);
      expect(logs.filter((l) => l.includes('cannot write the dead-letter file'))).toEqual([]);
      expect(sink.stats).toMatchObject({ parked: 1, deadLettered: 1 });
      // (After an empty line: a run's first line in a pipe starts on a line of its own.)
      expect(await until(() => printed().split('\n').length > 3)).toBe(true);
      expect(printed().split('\n')[1]).toBe('');
      const line = printed().split('\n')[2];
      expect(JSON.parse(line).key).toBe('cam');
      await sink.close();
    } finally {
      reader.kill();
    }
  });

  it('a named pipe whose reader holds it and reads nothing: never waited on (the process goes on), given up after the wait (virtual time), the alert kept in the outbox', async () => {
    // The write to a pipe waited (a second, blocking open of it, and blocking writes): a reader
    // that stopped reading froze the process, and one that left between the two opens made the
    // second wait for ever for another.
    const { fifo, proc: reader } = await heldFifo('stalled.fifo', 'exec sleep 20');
    try {
      let t = 0;
      let pauses = 0;
      const outcomes: string[] = [];
      const spill = { key: () => 'k', load: () => undefined, has: () => true };
      const { sink, logs, publish } = parkOne(fifo, 200_000, {
        deadLetterWait: { waitMs: 1000, now: () => t, sleep: async (ms) => void (pauses++, (t += ms)) },
        spill,
        onDelivered: (_m, outcome) => void outcomes.push(outcome),
      });
      void sink.start().catch(() => undefined);
      publish();
      expect(await until(() => logs.some((l) => l.includes('stays in the outbox')))).toBe(true);
      expect(logs.find((l) => l.includes('cannot write the dead-letter file'))).toMatch(new RegExp(`^kafka: cannot write the dead-letter file ${fifo} \\(a pipe whose reader took no more within 1 s \\(\\d+ of \\d+ bytes written\\)\\)`));
      expect(pauses).toBeGreaterThan(0);
      expect(t).toBeGreaterThanOrEqual(1000);
      expect(sink.stats).toMatchObject({ parked: 1, deadLettered: 0 });
      expect(outcomes).toEqual([]);
      await sink.close();
    } finally {
      reader.kill();
    }
  }, 60_000);

  it('after a line the stalled pipe took in part, the next parked alert still has a line of its own (it is acknowledged to the outbox as written there)', async () => {
    // The fragment of the line given up was left without its end: the next line went on after it,
    // the two one unreadable line, and that alert was forgotten by the outbox all the same.
    const { fifo, proc: holder } = await heldFifo('torn.fifo', 'exec sleep 30');
    let reader: ReturnType<typeof spawn> | undefined;
    try {
      let t = 0;
      const outcomes: string[] = [];
      const spill = { key: () => 'k', load: () => undefined, has: () => true };
      const { sink, logs, publish } = parkOne(fifo, 200_000, {
        deadLetterWait: { waitMs: 1000, now: () => t, sleep: async (ms) => void (t += ms) },
        spill,
        onDelivered: (m, outcome) => void outcomes.push(`${(m[0] as AlertMessage).alert.id} ${outcome}`),
      });
      void sink.start().catch(() => undefined);
      publish();
      expect(await until(() => logs.some((l) => l.includes('stays in the outbox')))).toBe(true);
      // A reader now takes what the pipe holds (the fragment), then the next parked alert.
      let out = '';
      reader = spawn('cat', [fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
      reader.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const b = { type: 'alert', source: 'cam', alert: { id: 'b2' }, pad: 'y'.repeat(5000) } as unknown as AlertMessage;
      sink.publish('alert', 'cam', JSON.stringify(b), b);
      expect(await until(() => outcomes.length === 1 && out.endsWith('\n') && out.includes('"key":"cam"'))).toBe(true);
      expect(outcomes).toEqual(['b2 dead-lettered']);
      const lines = out.split('\n').filter(Boolean);
      expect(lines.length).toBe(2);
      expect(JSON.parse(JSON.parse(lines[1]).value).alert.id).toBe('b2');
      await sink.close();
    } finally {
      reader?.kill();
      holder.kill();
    }
  }, 60_000);

  it('a named pipe in which an earlier run left a line cut short (killed, or stopped, mid-write): this run\'s first parked message has a line of its own', async () => {
    // A reader that outlives argus's runs (a shipper's, or a loop of cat) joins what each run
    // writes: the fragment the last one left went on into this run's first line, the two one
    // line that parses as neither, and that alert was acknowledged to the outbox as written.
    const { fifo, proc: reader, printed } = await heldFifo('earlier.fifo', 'exec cat <&3');
    try {
      // The earlier run's fragment: a line without its end.
      const earlier = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      await earlier.write('{"topic":"argus.alerts","key":"cam","val');
      await earlier.close();
      expect(await until(() => printed().endsWith('"val'))).toBe(true);
      const outcomes: string[] = [];
      const { sink, publish } = parkOne(fifo, 5000, { onDelivered: (m, outcome) => void outcomes.push(`${(m[0] as AlertMessage).alert.id} ${outcome}`) });
      void sink.start().catch(() => undefined);
      publish();
      expect(await until(() => outcomes.length === 1 && printed().endsWith('\n'))).toBe(true);
      expect(outcomes).toEqual(['a1 dead-lettered']);
      const last = printed().slice('ready\n'.length).split('\n').filter(Boolean).at(-1)!;
      expect(JSON.parse(JSON.parse(last).value).alert.id).toBe('a1');
      await sink.close();
    } finally {
      reader.kill();
    }
  }, 60_000);

  it('deadLetterMaxBytes bounds a file, not a named pipe: what passed through a pipe is its reader\'s, and a long-lived one was reported full', async () => {
    const bound = { deadLetterMaxBytes: 8000 }; // one ~5 KB line fits, two do not
    const alert = (id: string) => ({ type: 'alert', source: 'cam', alert: { id }, pad: 'x'.repeat(5000) }) as unknown as AlertMessage;
    // A file: the second line would pass the bound; it is only counted, said once.
    const file = join(dir, 'bounded.jsonl');
    const f = parkOne(file, 5000, bound);
    void f.sink.start().catch(() => undefined);
    f.publish();
    f.sink.publish('alert', 'cam', JSON.stringify(alert('a2')), alert('a2'));
    expect(await until(() => f.logs.some((l) => l.includes('is full')))).toBe(true);
    expect(f.sink.stats).toMatchObject({ parked: 2, deadLettered: 1 });
    await f.sink.close();
    // A pipe with a reader: every line goes through, however many bytes that makes.
    const { fifo, proc: reader, printed } = await heldFifo('unbounded.fifo', 'exec cat <&3');
    try {
      const p = parkOne(fifo, 5000, bound);
      void p.sink.start().catch(() => undefined);
      p.publish();
      for (const id of ['a2', 'a3', 'a4']) p.sink.publish('alert', 'cam', JSON.stringify(alert(id)), alert(id));
      expect(await until(() => p.sink.stats.deadLettered === 4 || p.logs.some((l) => l.includes('is full')))).toBe(true);
      expect(p.logs.filter((l) => l.includes('is full'))).toEqual([]);
      expect(p.sink.stats).toMatchObject({ parked: 4, deadLettered: 4 });
      expect(await until(() => printed().split('\n').filter(Boolean).length === 5)).toBe(true);
      expect(printed().split('\n').filter(Boolean).slice(1).map((l) => JSON.parse(JSON.parse(l).value).alert.id)).toEqual(['a1', 'a2', 'a3', 'a4']);
      await p.sink.close();
    } finally {
      reader.kill();
    }
  }, 60_000);

  it('a regular file takes the parked message', async () => {
    const file = join(dir, 'dead.jsonl');
    const { sink, publish } = parkOne(file);
    void sink.start().catch(() => undefined);
    publish();
    expect(await until(() => sink.stats.deadLettered === 1)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8')).key).toBe('cam');
    await sink.close();
  });

  it('a parked alert is on disk (synced, and the new file\'s name with it) before the outbox is told to forget it: a power cut then loses neither', async () => {
    const file = join(dir, 'synced.jsonl');
    const events: string[] = [];
    // Every FileHandle's syncs, recorded with the file's descriptor kind.
    const probe = await open(join(dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; sync: () => Promise<void> };
    await probe.close();
    const own = { datasync: proto.datasync, sync: proto.sync };
    proto.datasync = function (this: unknown) {
      events.push('sync');
      return own.datasync.call(this);
    };
    proto.sync = function (this: unknown) {
      events.push('sync');
      return own.sync.call(this);
    };
    try {
      const { sink, publish } = parkOne(file, 5000, { onDelivered: (_m, outcome) => events.push(outcome) });
      void sink.start().catch(() => undefined);
      publish();
      expect(await until(() => events.includes('dead-lettered'))).toBe(true);
      expect(JSON.parse(readFileSync(file, 'utf8')).key).toBe('cam');
      // The file's data, and the folder's entry of the file it made: both before the outbox forgets the alert.
      expect(events).toEqual(['sync', 'sync', 'dead-lettered']);
      await sink.close();
    } finally {
      proto.datasync = own.datasync;
      proto.sync = own.sync;
    }
  });

  it('a file whose last line a killed process left cut short: the next parked message has a line of its own', async () => {
    const file = join(dir, 'torn.jsonl');
    writeFileSync(file, '{"topic":"argus.alerts","key":"cam","val');
    const { sink, publish } = parkOne(file);
    void sink.start().catch(() => undefined);
    publish();
    expect(await until(() => sink.stats.deadLettered === 1)).toBe(true);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines.length).toBe(3);
    expect(lines[0]).toBe('{"topic":"argus.alerts","key":"cam","val');
    expect(JSON.parse(lines[1]).key).toBe('cam');
    await sink.close();
  });
});
