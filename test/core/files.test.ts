import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDir, makeDirSync, unwritableDir } from '../../src/core/files.js';
import { Outbox } from '../../src/sinks/outbox.js';

describe('unwritableDir', () => {
  it('a folder that can be made and written: undefined; a file in the way: says so, not a bare EEXIST or ENOTDIR', () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-files-'));
    expect(unwritableDir(join(dir, 'new', 'sub'))).toBeUndefined();
    writeFileSync(join(dir, 'plain'), 'x');
    expect(unwritableDir(join(dir, 'plain'))).toBe('EEXIST: it, or a folder above it, is a file');
    expect(unwritableDir(join(dir, 'plain', 'sub'))).toBe('ENOTDIR: it, or a folder above it, is a file');
  });
});

describe('makeDir / makeDirSync (mkdir -p without Node’s recursive mkdir)', () => {
  it('make a folder and its parents, take one that exists, and refuse a file in the way (EEXIST for the folder itself, ENOTDIR above it)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-mkdir-'));
    try {
      await makeDir(join(root, 'a', 'b', 'c'));
      expect(statSync(join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
      await makeDir(join(root, 'a', 'b', 'c')); // again: fine
      makeDirSync(join(root, 'x', 'y'));
      expect(statSync(join(root, 'x', 'y')).isDirectory()).toBe(true);
      writeFileSync(join(root, 'f'), '');
      await expect(makeDir(join(root, 'f'))).rejects.toMatchObject({ code: 'EEXIST' });
      await expect(makeDir(join(root, 'f', 'g'))).rejects.toMatchObject({ code: 'ENOTDIR' });
      expect(() => makeDirSync(join(root, 'f', 'g'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a folder under /proc/self (its parent takes no new entries) is an error at once, where Node’s recursive mkdir loops for ever', async () => {
    const t0 = performance.now();
    await expect(makeDir('/proc/self/argus-no/such')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(() => makeDirSync('/proc/self/argus-no')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(performance.now() - t0).toBeLessThan(30_000); // bounds a loop only: it takes microseconds
  });

  it('an outbox.dir there is VAP_ERR_OUTBOX naming the folder (argus’s start hung for good)', async () => {
    await expect(Outbox.open({ dir: '/proc/self/argus-ob', maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false })).rejects.toMatchObject({ code: 'VAP_ERR_OUTBOX', message: expect.stringContaining('/proc/self/argus-ob') });
  });
});
