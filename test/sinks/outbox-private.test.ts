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
