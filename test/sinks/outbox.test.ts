import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import type { AlertMessage, Message, StatusMessage } from '../../src/sinks/message.js';
import { Outbox, parseJournal, readOutbox } from '../../src/sinks/outbox.js';

const dir = () => mkdtempSync(join(tmpdir(), 'argus-outbox-'));
const opts = (d: string, extra: Partial<Parameters<typeof Outbox.open>[0]> = {}) => ({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: true, ...extra });

function alert(id: string, pad = 0): [AlertMessage, string] {
  const m = { type: 'alert', version: 1, source: 'cam', alert: { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: 'x'.repeat(pad) } } as unknown as AlertMessage;
  return [m, JSON.stringify(m)];
}
function status(source: string, state: string, at: number): [StatusMessage, string] {
  const m = { type: 'status', version: 1, source, state, previous: 'starting', reason: 'r', at, attempt: 0, published: at } as unknown as StatusMessage;
  return [m, JSON.stringify(m)];
}

describe('Outbox (the durable alert journal)', () => {
  it('keeps what was not acknowledged across a reopen, and only that, in order', async () => {
    const d = dir();
    const ob = await Outbox.open(opts(d));
    const a = [alert('a1'), alert('a2'), alert('a3')];
    await Promise.all(a.map(([m, j]) => ob.append(m, j)));
    ob.ack([a[1][0]]);
    await ob.close();
    const again = await Outbox.open(opts(d));
    const rec = again.takeRecovered();
    expect(rec.map((r) => r.key)).toEqual(['alert:a1', 'alert:a3']);
    expect(rec[0].value).toBe(a[0][1]); // the exact JSON that was published
    expect(again.stats.recovered).toBe(2);
    expect(again.takeRecovered()).toEqual([]); // replayed once
    await again.close();
  });

  it('an append is on disk when it resolves: a process killed with SIGKILL right after loses nothing', async () => {
    const d = dir();
    // A child appends 50 alerts, prints "done" after the last append resolved, then waits to be killed.
    const script = `
      import { Outbox } from ${JSON.stringify(join(__dirname, '../../src/sinks/outbox.ts'))};
      const ob = await Outbox.open({ dir: ${JSON.stringify(d)}, maxBytes: 1 << 20, maxAgeMs: 3600000, fsync: true });
      const all = [];
      for (let i = 0; i < 50; i++) { const m = { type: 'alert', source: 'cam', alert: { id: 'k' + i } }; all.push(ob.append(m, JSON.stringify(m))); }
      await Promise.all(all);
      process.stdout.write('done\\n');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((res, rej) => {
      child.stdout!.on('data', (b: Buffer) => b.toString().includes('done') && res());
      child.on('exit', (c) => rej(new Error(`child exited ${c}`)));
    });
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    const left = await readOutbox(d);
    expect(left.map((r) => r.key)).toEqual(Array.from({ length: 50 }, (_, i) => `alert:k${i}`));
    // The lock of the killed process does not keep the next start out.
    const ob = await Outbox.open(opts(d));
    expect(ob.takeRecovered()).toHaveLength(50);
    await ob.close();
  }, 60_000);

  it('survives a torn last record and skips a damaged one in the middle', async () => {
    const d = dir();
    const ob = await Outbox.open(opts(d));
    for (const id of ['t1', 't2', 't3']) await ob.append(...alert(id));
    await ob.close();
    const file = join(d, 'outbox.log');
    const lines = readFileSync(file, 'utf8').split('\n');
    lines[1] = lines[1].replace('t2', 'tX'); // checksum no longer matches
    writeFileSync(file, lines.join('\n'));
    appendFileSync(file, lines[0].slice(0, 30)); // a write cut short by a crash
    const parsed = parseJournal(readFileSync(file, 'utf8'));
    expect(parsed.torn).toBe(true);
    expect(parsed.corrupt).toBe(1);
    const logs: string[] = [];
    const again = await Outbox.open(opts(d, { log: (m) => logs.push(m) }));
    expect(again.takeRecovered().map((r) => r.key)).toEqual(['alert:t1', 'alert:t3']);
    expect(again.stats.corrupt).toBe(2);
    expect(logs.join('\n')).toMatch(/torn/);
    // It was rewritten clean: appending after it works and reads back.
    await again.append(...alert('t4'));
    await again.close();
    expect((await readOutbox(d)).map((r) => r.key)).toEqual(['alert:t1', 'alert:t3', 'alert:t4']);
  });

  it('keeps only the latest status per source, and an ack of an older status does not remove a newer one', async () => {
    const d = dir();
    const ob = await Outbox.open(opts(d));
    const s1 = status('cam', 'reconnecting', 1000);
    const s2 = status('cam', 'streaming', 2000);
    await ob.append(...s1);
    await ob.append(...s2);
    await ob.append(...status('other', 'streaming', 1500));
    ob.ack([s1[0]]); // delivered late: the newer one must stay
    await ob.close();
    const rec = await readOutbox(d);
    expect(rec.map((r) => [r.key, JSON.parse(r.value).state])).toEqual([
      ['status:cam', 'streaming'],
      ['status:other', 'streaming'],
    ]);
  });

  it('is bounded by bytes and by age: the oldest alerts go first, each logged as an error', async () => {
    const d = dir();
    const logs: { m: string; level?: string }[] = [];
    let t = 1_000_000;
    const ob = await Outbox.open(opts(d, { maxBytes: 70_000, log: (m, _f, level) => logs.push({ m, level }), now: () => t }));
    for (let i = 0; i < 10; i++) await ob.append(...alert(`b${i}`, 10_000));
    expect(ob.stats.evicted).toBeGreaterThan(0);
    expect(ob.stats.pendingBytes).toBeLessThanOrEqual(70_000);
    const keys = (await readOutbox(d)).map((r) => r.key);
    expect(keys[keys.length - 1]).toBe('alert:b9'); // the newest is kept
    expect(keys).not.toContain('alert:b0');
    expect(logs.some((l) => l.level === 'error' && /b0 dropped undelivered/.test(l.m))).toBe(true);
    await ob.close();
    // Age: reopened two hours later with a one-hour bound, everything has expired.
    t += 2 * 3_600_000;
    const later = await Outbox.open(opts(d, { maxBytes: 70_000, now: () => t }));
    expect(later.takeRecovered()).toEqual([]);
    expect(later.stats.evicted).toBe(keys.length);
    await later.close();
  });

  it('refuses a folder another live process holds, naming it', async () => {
    const d = dir();
    writeFileSync(join(d, 'outbox.lock'), String(process.ppid)); // a live process that is not us
    const e = await Outbox.open(opts(d)).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_OUTBOX')).toBe(true);
    expect((e as Error).message).toContain(d);
    const ob = await Outbox.open(opts(dir()));
    const e2 = await Outbox.open(opts(ob.dir)).catch((x: unknown) => x);
    expect((e2 as Error).message).toMatch(/already open in this process/);
    await ob.close();
  });

  it('groups writes: many appends at once cost far fewer fsyncs than appends', async () => {
    const d = dir();
    const ob = await Outbox.open(opts(d));
    const fh = (ob as unknown as { fh: { datasync: () => Promise<void> } }).fh;
    let syncs = 0;
    const orig = fh.datasync.bind(fh);
    fh.datasync = () => (syncs++, orig());
    await Promise.all(Array.from({ length: 200 }, (_, i) => ob.append(...alert(`g${i}`))));
    expect(syncs).toBeGreaterThan(0);
    expect(syncs).toBeLessThan(20);
    await ob.close();
    expect(await readOutbox(d)).toHaveLength(200);
  });

  it('compacts: a long run of appends and acks does not grow the file', async () => {
    const d = dir();
    const ob = await Outbox.open(opts(d));
    for (let i = 0; i < 600; i++) {
      const a = alert(`c${i}`, 10_000);
      await ob.append(...a);
      ob.ack([a[0] as Message]);
    }
    await ob.append(...alert('last'));
    await ob.close();
    const size = readFileSync(join(d, 'outbox.log')).length;
    expect(size).toBeLessThan(4096); // ~6 MB written in all; only the one live record remains
    expect((await readOutbox(d)).map((r) => r.key)).toEqual(['alert:last']);
  });
});
