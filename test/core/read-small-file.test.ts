import { execFileSync } from 'node:child_process';
import { constants, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
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

/** The pipe `p` opened for writing once a reader has it open (polled, within `ms`). */
async function writerOf(p: string, ms: number): Promise<Awaited<ReturnType<typeof open>>> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await open(p, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

describe('readSmallFile', () => {
  it('reads a regular file whole', async () => {
    const f = join(dir, 'a.txt');
    writeFileSync(f, 'hello');
    expect((await readSmallFile(f, 5)).toString()).toBe('hello');
  });

  it.each([
    ['a device that never ends', '/dev/zero', 'not a regular file or a pipe (a socket or a device)'],
    ['a folder', dir, 'a folder, not a file'],
    ['a missing file', join(dir, 'missing'), 'cannot be read (ENOENT)'],
  ])('refuses %s at once', async (_n, path, why) => {
    await expect(readSmallFile(path, 1024)).rejects.toThrow(why);
  });

  it('a named pipe nobody writes to: refused once the wait is over (virtual time), the event loop never held', async () => {
    let t = 0;
    const waits: number[] = [];
    const wait = { waitMs: 5000, now: () => t, sleep: async (ms: number) => void (waits.push(ms), (t += ms)) };
    await expect(readSmallFile(fifo, 1024, wait)).rejects.toThrow('a pipe nobody wrote to within 5 s');
    expect(t).toBeGreaterThanOrEqual(5000);
    expect(t).toBeLessThan(5100);
    expect(Math.max(...waits)).toBeLessThanOrEqual(20);
  });

  it('a file of /proc, whose size says 0, is read to its end (was refused as "changed while it was read")', async () => {
    expect(statSync('/proc/version').size).toBe(0);
    expect((await readSmallFile('/proc/version', 4096)).toString()).toBe(readFileSync('/proc/version', 'utf8'));
    // Bounded all the same.
    await expect(readSmallFile('/proc/self/maps', 10)).rejects.toThrow('larger than 10 bytes');
  });

  it('a named pipe with a writer: read until the writer closes it, and the same bytes for the next read of that path (a pipe gives them once)', async () => {
    const p = join(dir, 'written.fifo');
    execFileSync('mkfifo', [p]);
    const read = readSmallFile(p, 1024, { waitMs: 60_000 });
    const w = await open(p, 'w');
    await w.write('first part, ');
    await w.write('second part');
    await w.close();
    expect((await read).toString()).toBe('first part, second part');
    expect((await readSmallFile(p, 1024)).toString()).toBe('first part, second part');
    // Over the cap: refused.
    const q = join(dir, 'big.fifo');
    execFileSync('mkfifo', [q]);
    const big = readSmallFile(q, 10, { waitMs: 60_000 });
    const wq = await open(q, 'w');
    await wq.write('x'.repeat(11)).catch(() => undefined);
    await wq.close();
    await expect(big).rejects.toThrow('larger than 10 bytes');
  });

  it('process substitution (--ca <(cat ca.pem): /dev/fd/N, a pipe): read', async () => {
    const script = `import { readSmallFile } from ${JSON.stringify(join(process.cwd(), 'src/core/files.ts'))};
      process.stdout.write((await readSmallFile(process.argv[1], 4096)).toString());`;
    const out = execFileSync('bash', ['-c', `"${process.execPath}" --import tsx --input-type=module -e '${script}' <(printf 'the CA')`], { encoding: 'utf8' });
    expect(out).toBe('the CA');
  }, 30_000);

  it('two reads of one pipe at once (two cameras naming one CA pipe, checked together at start) both get its bytes', async () => {
    const p = join(dir, 'shared.fifo');
    execFileSync('mkfifo', [p]);
    // (The second failed as 'a pipe nobody wrote to': the first had taken the bytes.)
    const [a, b] = [readSmallFile(p, 1024, { waitMs: 10_000 }), readSmallFile(p, 1024, { waitMs: 10_000 })];
    const w = await open(p, 'w');
    await w.write('the CA');
    await w.close();
    expect((await a).toString()).toBe('the CA');
    expect((await b).toString()).toBe('the CA');
  }, 20_000);

  it('a pipe read that failed is not kept: the pipe is read again, once a writer is there', async () => {
    const p = join(dir, 'late.fifo');
    execFileSync('mkfifo', [p]);
    let t = 0;
    await expect(readSmallFile(p, 1024, { waitMs: 100, now: () => t, sleep: async (ms) => void (t += ms) })).rejects.toThrow('a pipe nobody wrote to within 0.1 s');
    const read = readSmallFile(p, 1024, { waitMs: 10_000 });
    // Opened without waiting (ENXIO while no reader has it open: the failure kept, nothing reads it), within a bound.
    const w = await writerOf(p, 10_000);
    await w.write('written later');
    await w.close();
    expect((await read).toString()).toBe('written later');
  }, 20_000);

  it('refuses a file larger than the cap without reading it', async () => {
    const f = join(dir, 'big.txt');
    writeFileSync(f, 'x'.repeat(11));
    await expect(readSmallFile(f, 10)).rejects.toThrow('larger than 10 bytes');
  });
});

describe('tls.ca', () => {
  it('/dev/zero: a coded config error naming tls.ca, at once', async () => {
    await expect(readCameraCa('/dev/zero')).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: 'tls.ca: /dev/zero: not a regular file or a pipe (a socket or a device)' });
  });

  it(`a CA file over ${MAX_CA_BYTES} bytes`, async () => {
    const f = join(dir, 'huge.pem');
    writeFileSync(f, Buffer.alloc(MAX_CA_BYTES + 1, 0x41));
    await expect(readCameraCa(f)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `tls.ca: ${f}: larger than ${MAX_CA_BYTES} bytes` });
  });
});
