import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeDir, makeDirSync, writeWhole } from '../../src/core/files.js';
import { unwritableDir } from '../../src/sources/file-look.js';
import { Outbox } from '../../src/sinks/outbox.js';

describe('unwritableDir', () => {
  it('a folder that can be made and written: undefined; a file in the way: says so, not a bare EEXIST or ENOTDIR', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-files-'));
    expect(await unwritableDir(join(dir, 'new', 'sub'))).toBeUndefined();
    expect(statSync(join(dir, 'new', 'sub')).isDirectory()).toBe(true);
    writeFileSync(join(dir, 'plain'), 'x');
    expect(await unwritableDir(join(dir, 'plain'))).toBe('EEXIST: it, or a folder above it, is a file');
    expect(await unwritableDir(join(dir, 'plain', 'sub'))).toBe('ENOTDIR: it, or a folder above it, is a file');
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

describe('writeWhole: a file written whole or not at all', () => {
  const enospc = () => Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
  const renameFailed = (e: NodeJS.ErrnoException) => new Error(`cannot move it into place (${e.code})`);

  it('a writer that fails half-way (a full disk) leaves no file, and a file of that name from before as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    const half = async (p: string) => {
      await writeFile(p, Buffer.alloc(50_000, 1)); // what got to disk before it filled up
      throw enospc();
    };
    await expect(writeWhole(join(dir, 'copy.png'), half, renameFailed)).rejects.toThrow(/ENOSPC/);
    expect(readdirSync(dir)).toEqual([]);
    writeFileSync(join(dir, 'old.mp4'), 'the copy of an earlier run');
    await expect(writeWhole(join(dir, 'old.mp4'), half, renameFailed)).rejects.toThrow(/ENOSPC/);
    expect(readdirSync(dir)).toEqual(['old.mp4']);
    expect(readFileSync(join(dir, 'old.mp4'), 'utf8')).toBe('the copy of an earlier run');
  });

  it('written whole: the file, under its name and extension (ffmpeg picks the container by it), nothing else left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    const seen: string[] = [];
    const r = await writeWhole(join(dir, 'copy.mp4'), async (p) => {
      seen.push(p);
      await writeFile(p, 'video');
      return 7;
    }, renameFailed);
    expect(r).toBe(7);
    expect(seen[0]).toMatch(/\/\.copy\.part-\d+-\d+\.mp4$/);
    expect(readdirSync(dir)).toEqual(['copy.mp4']);
    expect(readFileSync(join(dir, 'copy.mp4'), 'utf8')).toBe('video');
  });

  it('its folder removed mid-write: the rename fails with the caller’s error, nothing is left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    const sub = join(dir, 'out');
    mkdirSync(sub);
    await expect(writeWhole(join(sub, 'copy.png'), async (p) => {
      await writeFile(p, 'x');
      rmSync(sub, { recursive: true });
    }, renameFailed)).rejects.toThrow('cannot move it into place (ENOENT)');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a link is followed (the file it names is replaced, the link kept); a device is written as it is, never replaced', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    mkdirSync(join(dir, 'real'));
    writeFileSync(join(dir, 'real', 'copy.png'), 'old');
    symlinkSync(join(dir, 'real', 'copy.png'), join(dir, 'link.png'));
    await writeWhole(join(dir, 'link.png'), (p) => writeFile(p, 'new'), renameFailed);
    expect(lstatSync(join(dir, 'link.png')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dir, 'real', 'copy.png'), 'utf8')).toBe('new');
    expect(readdirSync(dir).sort()).toEqual(['link.png', 'real']);
    symlinkSync('/dev/full', join(dir, 'full.png'));
    await expect(writeWhole(join(dir, 'full.png'), (p) => writeFile(p, 'x'), renameFailed)).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(lstatSync(join(dir, 'full.png')).isSymbolicLink()).toBe(true);
    expect(statSync('/dev/full').isCharacterDevice()).toBe(true);
  });

  it('a dangling link is followed as writeFile follows it (the file it names is made, the link kept)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    mkdirSync(join(dir, 'real'));
    symlinkSync('real/copy.png', join(dir, 'link.png'));
    await writeWhole(join(dir, 'link.png'), (p) => writeFile(p, 'new'), renameFailed);
    expect(lstatSync(join(dir, 'link.png')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dir, 'real', 'copy.png'), 'utf8')).toBe('new');
    expect(readdirSync(join(dir, 'real'))).toEqual(['copy.png']);
  });

  it('the file replaced keeps its permissions (a private copy stays private); a new one gets a new file’s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    writeFileSync(join(dir, 'private.png'), 'old');
    chmodSync(join(dir, 'private.png'), 0o600);
    writeFileSync(join(dir, 'shared.png'), 'old');
    chmodSync(join(dir, 'shared.png'), 0o664);
    const modes: number[] = [];
    for (const name of ['private.png', 'shared.png']) {
      await writeWhole(join(dir, name), async (p) => {
        modes.push(statSync(p).mode & 0o777); // before a byte is written
        await writeFile(p, 'new');
      }, renameFailed);
      expect(readFileSync(join(dir, name), 'utf8')).toBe('new');
    }
    expect(modes).toEqual([0o600, 0o664]);
    expect(statSync(join(dir, 'private.png')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'shared.png')).mode & 0o777).toBe(0o664);
    await writeWhole(join(dir, 'fresh.png'), (p) => writeFile(p, 'x'), renameFailed);
    writeFileSync(join(dir, 'plain.png'), 'x');
    expect(statSync(join(dir, 'fresh.png')).mode & 0o777).toBe(statSync(join(dir, 'plain.png')).mode & 0o777);
  });

  it('Ctrl-C (SIGINT) while the file is written removes the partial file, and the process ends by the signal as it would have', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    const script = `
      import { writeWhole } from ${JSON.stringify(join(process.cwd(), 'src/core/files.ts'))};
      import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
      await writeWhole(${JSON.stringify(join(dir, 'copy.mp4'))}, async (p) => {
        await writeFile(p, 'half');
        process.stdout.write('writing\\n');
        await new Promise(() => setInterval(() => {}, 1000));
      }, (e) => e);`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((r) => child.stdout.on('data', (d: Buffer) => d.toString().includes('writing') && r()));
    expect(readdirSync(dir)).toHaveLength(1); // the partial file
    child.kill('SIGINT');
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGINT' });
    expect(readdirSync(dir)).toEqual([]);
  }, 30_000);

  it('/dev/stdout, a pipe: written as it is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-whole-'));
    const script = join(dir, 'write.mts');
    writeFileSync(script, `
      import { writeWhole } from ${JSON.stringify(join(process.cwd(), 'src/core/files.ts'))};
      import { writeFile } from 'node:fs/promises';
      await writeWhole('/dev/stdout', (p) => writeFile(p, 'the picture'), (e) => e);`);
    // (A shell's pipe: node's own stdio 'pipe' is a socket, which /dev/stdout cannot open.)
    const child = spawn('sh', ['-c', `"${process.execPath}" --import tsx "${script}" | cat`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    expect(await new Promise((r) => child.on('exit', r))).toBe(0);
    expect(out).toBe('the picture');
    rmSync(dir, { recursive: true });
  }, 30_000);
});
