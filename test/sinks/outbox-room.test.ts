import { execFileSync } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox } from '../../src/sinks/outbox.js';

/**
 * The room the outbox's volume needs, said at open. Sized as advised (three times maxBytes), a
 * volume shared with the Kafka dead-letter file (in the outbox folder by default, up to 100 MB)
 * filled with a few parked alerts: no compaction copy fitted, and every alert of the next broker
 * outage was in memory only. Reproduced on a 192 KiB tmpfs with maxBytes 64 KiB: four 25 KB
 * alerts parked, then ten 4 KB alerts during an outage (43 KB, within maxBytes), none on disk.
 * The volume's free space is the test's (freeBytes); the devices are the real ones.
 */
const MAX = 1 << 20; // three times: 3 MiB
const MiB = 1 << 20;
async function opened(free: number, beside: { path: string; maxBytes: number; field: string }[] = [], d = mkdtempSync(join(tmpdir(), 'argus-room-'))) {
  const said: { msg: string; level?: string }[] = [];
  const ob = await Outbox.open({ dir: d, maxBytes: MAX, maxAgeMs: 3_600_000, fsync: false, beside, freeBytes: async () => free, log: (msg, _f, level) => said.push({ msg, level }) });
  await ob.close();
  return { warned: said.filter((s) => s.level === 'warn' && /has room for/.test(s.msg)).map((s) => s.msg), dir: d };
}
const dlq = (path: string, maxBytes = MiB) => ({ path, maxBytes, field: 'sinks.kafka.deadLetterMaxBytes' });

describe('Outbox.open: the room its volume needs', () => {
  it('warns when the volume has less than three times maxBytes (free space and the journal)', async () => {
    const { warned } = await opened(2.5 * MiB);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/has room for 2\.5 MiB, less than the 3\.0 MiB the outbox needs \(three times outbox\.maxBytes\).*lower outbox\.maxBytes/);
    expect((await opened(3 * MiB)).warned).toEqual([]);
    expect((await opened(3 * MiB - 16_384)).warned).toEqual([]); // the lock's and the marks' blocks: not warned of
  });

  it('counts the dead-letter file on the same volume (in the outbox folder: its default place), naming its bound and path', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    const path = join(d, 'kafka-dead-letter.jsonl');
    expect((await opened(3.5 * MiB, [], d)).warned).toEqual([]); // enough for the journal alone
    const { warned } = await opened(3.5 * MiB, [dlq(path)], d); // before: not said, and the volume filled
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(`and sinks.kafka.deadLetterMaxBytes (1048576 bytes) for ${path} on the same volume`);
    expect(warned[0]).toMatch(/or sinks\.kafka\.deadLetterMaxBytes, or put sinks\.kafka\.deadLetterPath on another volume/);
  });

  it("what the dead-letter file holds already is room of its bound: counted as the volume's", async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    const path = join(d, 'kafka-dead-letter.jsonl');
    writeFileSync(path, Buffer.alloc(0.5 * MiB, 0x61));
    expect((await opened(3.5 * MiB, [dlq(path)], d)).warned).toEqual([]); // 3.5 MiB free + 0.5 MiB written ≥ 3 MiB + 1 MiB
    expect((await opened(3.3 * MiB, [dlq(path)], d)).warned).toHaveLength(1);
  });

  it('a dead-letter file on another volume, or a named pipe (it holds nothing), or a bound of 0 is not counted', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    expect((await opened(3.5 * MiB, [dlq('/proc/argus-no-such/dead-letter.jsonl')], d)).warned).toEqual([]);
    const fifo = join(d, 'dead-letter.pipe');
    execFileSync('mkfifo', [fifo]);
    expect((await opened(3.5 * MiB, [dlq(fifo)], d)).warned).toEqual([]);
    expect((await opened(3.5 * MiB, [dlq(join(d, 'dl.jsonl'), 0)], d)).warned).toEqual([]);
  });

  it('a dead-letter path that is a link to a file not made yet on another volume is on that volume, not the link\'s (it was counted, and warned of)', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    const path = join(d, 'kafka-dead-letter.jsonl');
    symlinkSync('/proc/argus-no-such/dl.jsonl', path);
    expect((await opened(3.5 * MiB, [dlq(path)], d)).warned).toEqual([]);
    // A link to a file not made yet in the outbox's own folder is on its volume.
    const here = join(d, 'here.jsonl');
    symlinkSync('later.jsonl', here);
    expect((await opened(3.5 * MiB, [dlq(here)], d)).warned).toHaveLength(1);
  });

  it('a dead-letter file not made yet, in a folder not made yet, is on the volume of the nearest folder that is', async () => {
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    expect((await opened(3.5 * MiB, [dlq(join(d, 'later', 'deeper', 'dl.jsonl'))], d)).warned).toHaveLength(1);
  });
});

describe('Outbox.adoptOnce: the folder an older release kept', () => {
  it("is only read and emptied: its volume's room is not said (it was, as if the outbox were there)", async () => {
    const legacy = mkdtempSync(join(tmpdir(), 'argus-room-legacy-'));
    const old = await Outbox.open({ dir: legacy, maxBytes: MAX, maxAgeMs: 3_600_000, fsync: false, freeBytes: async () => 10 * MiB, log: () => {} });
    const m = { type: 'alert', version: 1, source: 'cam', alert: { id: 'old1' } } as unknown as AlertMessage;
    await old.append(m, JSON.stringify(m));
    await old.close();
    const said: string[] = [];
    const d = mkdtempSync(join(tmpdir(), 'argus-room-'));
    // The outbox's own volume has room; the old folder's (the same test volume) is said to have little.
    const ob = await Outbox.open({ dir: d, maxBytes: MAX, maxAgeMs: 3_600_000, fsync: false, freeBytes: async (dir) => (dir === d ? 10 * MiB : 1 * MiB), log: (msg, _f, level) => void (level === 'warn' && /has room for/.test(msg) && said.push(msg)) });
    expect(await ob.adoptOnce([legacy])).toBe(1);
    await ob.close();
    expect(said).toEqual([]);
  });
});

describe('Outbox: a full disk during the run', () => {
  it("is said with the outbox's code and the disk's error, the alert kept in memory and counted, its append never failing", async () => {
    const said: { msg: string; fields: Record<string, unknown>; level?: string }[] = [];
    const ob = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-room-')), maxBytes: MAX, maxAgeMs: 3_600_000, fsync: true, log: (msg, fields, level) => said.push({ msg, fields: fields ?? {}, level }) });
    const inner = ob as unknown as { fh: { write: unknown }; writeCopy: unknown };
    const noRoom = async () => {
      throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    };
    inner.fh.write = noRoom;
    inner.writeCopy = noRoom;
    const m = { type: 'alert', version: 1, source: 'cam', alert: { id: 'full1' } } as unknown as AlertMessage;
    await ob.append(m, JSON.stringify(m)); // resolves: the alert goes on to the sinks
    expect(ob.pendingAlerts).toBe(1);
    expect(ob.journaled).toBe(false);
    expect(ob.stats.writeErrors).toBeGreaterThanOrEqual(2); // the write, and the compaction it tried
    const errors = said.filter((s) => s.level === 'error');
    expect(errors.map((s) => s.msg.replace(/ \(.*/, ''))).toEqual(['outbox: journal write failed', 'outbox: compaction failed']);
    for (const e of errors) expect(e.fields).toMatchObject({ code: ErrorCodes.OUTBOX, errno: 'ENOSPC' }); // before: no code
    delete (inner.fh as { write?: unknown }).write;
    delete (inner as { writeCopy?: unknown }).writeCopy;
    await ob.close();
  });
});
