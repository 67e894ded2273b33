import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox } from '../../src/sinks/outbox.js';

describe("the outbox's files are its user's alone (alerts, snapshots embedded, are not for other local users)", () => {
  it('a folder argus makes is 0700 and the journal and lock 0600, under a umask of 022', async () => {
    const old = process.umask(0o022);
    try {
      const d = join(mkdtempSync(join(tmpdir(), 'argus-outbox-')), 'state', 'cam');
      const ob = await Outbox.open({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
      const m = { type: 'alert', version: 1, source: 'cam', alert: { id: 'a1', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'x' } } as unknown as AlertMessage;
      await ob.append(m, JSON.stringify(m));
      expect(statSync(d).mode & 0o777).toBe(0o700);
      const files = readdirSync(d);
      expect(files.length).toBeGreaterThan(0);
      for (const f of files) expect([f, statSync(join(d, f)).mode & 0o777]).toEqual([f, 0o600]);
      await ob.close();
      for (const f of readdirSync(d)) expect([f, statSync(join(d, f)).mode & 0o777]).toEqual([f, 0o600]);
    } finally {
      process.umask(old);
    }
  });
});

describe('an outbox folder another local user can write is refused (its journal is replayed to Kafka as alerts argus raised)', () => {
  it('a world-writable folder (one made first under /tmp by anyone, say) is VAP_ERR_OUTBOX, and nothing in it is read', async () => {
    const { chmodSync, mkdtempSync: mk } = await import('node:fs');
    const d = mk(join(tmpdir(), 'argus-outbox-'));
    chmodSync(d, 0o777);
    await expect(Outbox.open({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false })).rejects.toThrow(/VAP_ERR_OUTBOX|writable by every user/);
    expect(readdirSync(d)).toEqual([]);
    chmodSync(d, 0o1777);
    await expect(Outbox.open({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false })).rejects.toThrow(/writable by every user/);
  });

  it.runIf(process.getuid?.() === 0)("(as root) a folder another user owns, in a folder every user may write (as /tmp), is refused; root's own is taken", async () => {
    const { chmodSync, chownSync, mkdirSync, mkdtempSync: mk } = await import('node:fs');
    // The parent as /tmp is (sticky, world-writable), whatever TMPDIR the test command set (its
    // own folder, which only root writes: there another user's folder is taken, see below).
    const shared = mk(join(tmpdir(), 'argus-outbox-'));
    chmodSync(shared, 0o1777);
    const d = join(shared, 'lobby');
    mkdirSync(d, { mode: 0o755 });
    chownSync(d, 65534, 65534);
    await expect(Outbox.open({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false })).rejects.toThrow(/belongs to another user \(uid 65534/);
    chownSync(d, 0, 0);
    const ob = await Outbox.open({ dir: d, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    await ob.close();
  });
});

describe.runIf(process.getuid?.() === 0)("(as root) another user's folder is taken where only root could have given it (a Docker bind mount of the host user's folder)", () => {
  const open = (dir: string) => Outbox.open({ dir, maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });

  it("a folder of the host's user (uid 1000) in a folder only root writes, as `-v ./data:/data` gives argus running as root: taken", async () => {
    const { chmodSync, chownSync, mkdirSync, mkdtempSync: mk } = await import('node:fs');
    const root = mk(join(tmpdir(), 'argus-mount-'));
    chmodSync(root, 0o755);
    const data = join(root, 'data');
    mkdirSync(data, { mode: 0o755 });
    chownSync(data, 1000, 1000);
    const ob = await open(data);
    await ob.close();
  });

  it('one in a folder that user owns (they could put another in its place), or in a world-writable one, is still refused', async () => {
    const { chmodSync, chownSync, mkdirSync, mkdtempSync: mk } = await import('node:fs');
    const home = mk(join(tmpdir(), 'argus-home-'));
    chownSync(home, 1000, 1000);
    const d = join(home, 'outbox');
    mkdirSync(d, { mode: 0o755 });
    chownSync(d, 1000, 1000);
    await expect(open(d)).rejects.toThrow(/belongs to another user \(uid 1000/);
    const shared = mk(join(tmpdir(), 'argus-shared-'));
    chmodSync(shared, 0o1777);
    const e = join(shared, 'outbox');
    mkdirSync(e, { mode: 0o755 });
    chownSync(e, 1000, 1000);
    await expect(open(e)).rejects.toThrow(/belongs to another user \(uid 1000/);
  });

  it("a link another user made (in /tmp) to argus's own folder is refused: they can point it elsewhere", async () => {
    const { chmodSync, lchownSync, mkdirSync, mkdtempSync: mk, symlinkSync } = await import('node:fs');
    const base = mk(join(tmpdir(), 'argus-link-'));
    chmodSync(base, 0o755);
    const own = join(base, 'own');
    mkdirSync(own, { mode: 0o700 });
    const l = join(base, 'lobby');
    symlinkSync(own, l);
    const ob = await open(l);
    await ob.close();
    lchownSync(l, 1000, 1000);
    await expect(open(l)).rejects.toThrow(/a link that belongs to another user/);
  });
});
