import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_CA_BYTES, readSmallFile } from '../../src/core/files.js';
import { readCameraCa } from '../../src/sources/rtsp-tap.js';

/**
 * A CA file (a source's `tls.ca`, an HTTP camera's `-ca_file`) is read bounded, and only when it
 * is a regular file: `tls.ca: /dev/zero` grew argus to 4.8 GB in 12 s (still growing, deaf to
 * SIGINT), and a named pipe nobody writes to held the start for ever, Ctrl-C and all.
 */
const dir = mkdtempSync(join(tmpdir(), 'argus-small-file-'));
const fifo = join(dir, 'ca.fifo');
execFileSync('mkfifo', [fifo]);

describe('readSmallFile', () => {
  it('reads a regular file whole', async () => {
    const f = join(dir, 'a.txt');
    writeFileSync(f, 'hello');
    expect((await readSmallFile(f, 5)).toString()).toBe('hello');
  });

  it.each([
    ['a device that never ends', '/dev/zero', 'not a regular file (a named pipe, a socket or a device)'],
    ['a named pipe nobody writes to', fifo, 'not a regular file (a named pipe, a socket or a device)'],
    ['a folder', dir, 'a folder, not a file'],
    ['a missing file', join(dir, 'missing'), 'cannot be read (ENOENT)'],
  ])('refuses %s at once', async (_n, path, why) => {
    await expect(readSmallFile(path, 1024)).rejects.toThrow(why);
  });

  it('refuses a file larger than the cap without reading it', async () => {
    const f = join(dir, 'big.txt');
    writeFileSync(f, 'x'.repeat(11));
    await expect(readSmallFile(f, 10)).rejects.toThrow('larger than 10 bytes');
  });
});

describe('tls.ca', () => {
  it.each([
    ['/dev/zero', '/dev/zero: not a regular file'],
    [fifo, `${fifo}: not a regular file`],
  ])('%s: a coded config error naming tls.ca, at once', async (path, why) => {
    await expect(readCameraCa(path)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `tls.ca: ${why} (a named pipe, a socket or a device)` });
  });

  it(`a CA file over ${MAX_CA_BYTES} bytes`, async () => {
    const f = join(dir, 'huge.pem');
    writeFileSync(f, Buffer.alloc(MAX_CA_BYTES + 1, 0x41));
    await expect(readCameraCa(f)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `tls.ca: ${f}: larger than ${MAX_CA_BYTES} bytes` });
  });
});
