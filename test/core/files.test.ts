import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unwritableDir } from '../../src/core/files.js';

describe('unwritableDir', () => {
  it('a folder that can be made and written: undefined; a file in the way: says so, not a bare EEXIST or ENOTDIR', () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-files-'));
    expect(unwritableDir(join(dir, 'new', 'sub'))).toBeUndefined();
    writeFileSync(join(dir, 'plain'), 'x');
    expect(unwritableDir(join(dir, 'plain'))).toBe('EEXIST: it, or a folder above it, is a file');
    expect(unwritableDir(join(dir, 'plain', 'sub'))).toBe('ENOTDIR: it, or a folder above it, is a file');
  });
});
