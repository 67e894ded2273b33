// argus preview and detect look at their input files asynchronously and bounded (sources/file-look:
// the look a run's file source makes at each start). They stat them synchronously (existsSync,
// statSync, readsOnce's and sameFile's statSync): on a network mount that stopped answering, the
// event loop was held as long as the mount, Ctrl-C with it (a signal's handler is JavaScript).
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

// `late`: a mount that answered the look at a file in it (not there) and stopped answering
// before its folder was made and checked (mkdir, access).
const hung = vi.hoisted(() => ({ dir: '/argus-test-hung-mount/', late: '/argus-test-late-hang/', waiting: 0 }));
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>();
  // A stat on the hung mount never answers (it waits in the kernel, in one of libuv's 4 threads
  // for good: `waiting` counts them).
  const stat = (p: string, ...rest: unknown[]) => (String(p).startsWith(hung.dir) ? (hung.waiting++, new Promise(() => {})) : (real.stat as (...a: unknown[]) => Promise<unknown>)(p, ...rest));
  const silentOnBoth = <F extends (...a: never[]) => Promise<unknown>>(f: F): F =>
    ((p: string, ...rest: unknown[]) => (String(p).startsWith(hung.dir) || String(p).startsWith(hung.late) ? (hung.waiting++, new Promise(() => {})) : (f as unknown as (...a: unknown[]) => Promise<unknown>)(p, ...rest))) as unknown as F;
  const mkdir = silentOnBoth(real.mkdir);
  const access = silentOnBoth(real.access);
  return { ...real, default: { ...real, stat, mkdir, access }, stat, mkdir, access };
});

// A synchronous look at it would hold the event loop for as long as the mount does not answer:
// noted here, and failed, as the kernel would not.
const syncLooks = vi.hoisted(() => [] as string[]);
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  const watched = <F extends (...a: never[]) => unknown>(f: F, name: string): F =>
    ((p: string, ...rest: unknown[]) => {
      if (String(p).startsWith(hung.dir) || String(p).startsWith(hung.late)) {
        syncLooks.push(`${name}(${p})`);
        if (name === 'existsSync') return false;
        throw Object.assign(new Error(`EIO: ${name}(${p}) on the hung mount`), { code: 'EIO' });
      }
      return (f as unknown as (...a: unknown[]) => unknown)(p, ...rest);
    }) as unknown as F;
  const own = { statSync: watched(real.statSync, 'statSync'), existsSync: watched(real.existsSync, 'existsSync'), lstatSync: watched(real.lstatSync, 'lstatSync'), accessSync: watched(real.accessSync, 'accessSync'), mkdirSync: watched(real.mkdirSync, 'mkdirSync') };
  return { ...real, default: { ...real, ...own }, ...own };
});

const { runDetect } = await import('../../src/tools/detect.js');
const { runPreview } = await import('../../src/tools/preview.js');
const { FILE_STAT_TIMEOUT_MS, ffmpegSource } = await import('../../src/sources/ffmpeg-source.js');
const { resolveFfmpegSync } = await import('../../src/sources/ffmpeg-path.js');
const { ErrorCodes } = await import('../../src/core/errors.js');
const { writeHostileModel } = await import('../helpers/hostile-model.js');
const { modelDir } = await import('../helpers/onnx-graphs.js');

const work = mkdtempSync(join(tmpdir(), 'argus-hung-mount-'));
const models = modelDir();
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  models.cleanup();
});

/** `p`'s rejection, how long it took (ms), and how many times a 50 ms timer fired meanwhile (the loop ran). */
async function timed(p: Promise<unknown>): Promise<{ error: Error & { code?: string }; ms: number; ticks: number }> {
  const t0 = performance.now();
  let ticks = 0;
  const tick = setInterval(() => ticks++, 50);
  try {
    const error = await p.then(
      () => {
        throw new Error('resolved');
      },
      (e: Error) => e,
    );
    return { error, ms: performance.now() - t0, ticks };
  } finally {
    clearInterval(tick);
  }
}

describe('argus detect and preview on a mount that does not answer', () => {
  it(`detect: VAP_ERR_SOURCE_TIMEOUT naming the file after ${FILE_STAT_TIMEOUT_MS / 1000} s, no synchronous look, the loop running meanwhile`, async () => {
    syncLooks.length = 0;
    const file = `${hung.dir}clip.mp4`;
    const r = await timed(runDetect([file], { write: () => {} }));
    expect(r.error.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    expect(r.error.message).toContain(`detect: ${file}: the file system gave no answer about it within ${FILE_STAT_TIMEOUT_MS / 1000} s`);
    expect(syncLooks).toEqual([]);
    expect(r.ms).toBeGreaterThanOrEqual(FILE_STAT_TIMEOUT_MS - 50);
    expect(r.ticks).toBeGreaterThan(10);
  }, 60_000);

  it('detect --json: the file on the hung mount and a missing one, each with its own coded error, before the model loads', async () => {
    syncLooks.length = 0;
    let out = '';
    const doc = await runDetect([`${hung.dir}a.jpg`, join(work, 'none.jpg')], { json: true, write: (t) => (out += t) });
    expect(doc.failed).toBe(2);
    expect(doc.files.map((f) => f.error?.code)).toEqual([ErrorCodes.SOURCE_TIMEOUT, ErrorCodes.SOURCE_OPEN]);
    expect(doc.files[1].error?.message).toBe(`detect: file not found: ${join(work, 'none.jpg')}`);
    expect(JSON.parse(out).failed).toBe(2);
    expect(syncLooks).toEqual([]);
  }, 60_000);

  it("detect of many files on the hung mount: at most 2 of libuv's 4 threads taken by their looks, each file failed naming it, a local file still looked at", async () => {
    const files = Array.from({ length: 8 }, (_, i) => `${hung.dir}many/f${i}.jpg`);
    const local = join(work, 'gone.jpg');
    const before = hung.waiting;
    let out = '';
    const r = await timed(runDetect([files[0], local, ...files.slice(1)], { json: true, write: (t) => (out += t) }).then(() => { throw new Error('resolved'); }));
    expect(r.error.message).toBe('resolved');
    const doc = JSON.parse(out) as { files: { file: string; error?: { code: string; message: string } }[] };
    expect(hung.waiting - before).toBeLessThanOrEqual(2);
    expect(doc.files.map((f) => f.error?.code)).toEqual([ErrorCodes.SOURCE_TIMEOUT, ErrorCodes.SOURCE_OPEN, ...files.slice(1).map(() => ErrorCodes.SOURCE_TIMEOUT)]);
    expect(doc.files[1].error?.message).toBe(`detect: file not found: ${local}`);
    expect(doc.files[0].error?.message).toBe(`detect: ${files[0]}: the file system gave no answer about it within ${FILE_STAT_TIMEOUT_MS / 1000} s (a network mount that stopped answering?)`);
    // The others: not looked at, behind the two looks that hold their threads, each named.
    expect(doc.files[8].error?.message).toBe(`detect: ${files[7]}: not looked at: the file system gave no answer about ${files[0]} nor ${files[1]} within ${FILE_STAT_TIMEOUT_MS / 1000} s (a network mount that stopped answering?), and a look at one more would wait behind them`);
    // One bound, not one a file.
    expect(r.ms).toBeLessThan(3 * FILE_STAT_TIMEOUT_MS);
  }, 60_000);

  it('detect of one file on the hung mount named twice: one look, one thread, the files after it still looked at', async () => {
    const twice = `${hung.dir}twice/f.jpg`;
    const local = join(work, 'gone-too.jpg');
    let out = '';
    await runDetect([twice, twice, local], { json: true, write: (t) => (out += t) });
    const doc = JSON.parse(out) as { files: { file: string; error?: { code: string; message: string } }[] };
    expect(doc.files.map((f) => f.error?.code)).toEqual([ErrorCodes.SOURCE_TIMEOUT, ErrorCodes.SOURCE_TIMEOUT, ErrorCodes.SOURCE_OPEN]);
    expect(doc.files[2].error?.message).toBe(`detect: file not found: ${local}`);
  }, 60_000);

  it('detect --out on the hung mount: VAP_ERR_SINK_FILE naming it, no synchronous look', async () => {
    syncLooks.length = 0;
    const pic = join(work, 'in.png');
    writeFileSync(pic, Buffer.from('not read'));
    const r = await timed(runDetect([pic], { out: `${hung.dir}out.png`, write: () => {} }));
    expect(r.error.code).toBe(ErrorCodes.SINK_FILE);
    expect(r.error.message).toContain(`detect --out ${hung.dir}out.png: ${hung.dir}out.png: the file system gave no answer`);
    expect(syncLooks).toEqual([]);
  }, 60_000);

  it(`preview of a source on the hung mount: VAP_ERR_SOURCE_TIMEOUT naming the file after ${FILE_STAT_TIMEOUT_MS / 1000} s, no synchronous look`, async () => {
    syncLooks.length = 0;
    const model = models.path('hung-mount.onnx');
    writeHostileModel(model);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${hung.dir}clip.mp4`, 'model:', `  path: ${model}`, ''].join('\n'));
    const r = await timed(runPreview(yaml, { out: join(work, 'p.png'), write: () => {} }));
    expect(r.error.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    expect(r.error.message).toContain(`${hung.dir}clip.mp4: the file system gave no answer about it within ${FILE_STAT_TIMEOUT_MS / 1000} s`);
    expect(syncLooks).toEqual([]);
    expect(r.ticks).toBeGreaterThan(10);
  }, 60_000);
});

describe('the --out folder and a source without a memo, on a mount that stops answering', () => {
  it(`preview --out into a folder whose file system stopped answering: VAP_ERR_SINK_FILE naming it after ${FILE_STAT_TIMEOUT_MS / 1000} s, no synchronous mkdir or access, the loop running`, async () => {
    syncLooks.length = 0;
    const model = models.path('late-hang.onnx');
    writeHostileModel(model);
    const yaml = join(work, 'late.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${join(work, 'none.mp4')}`, 'model:', `  path: ${model}`, ''].join('\n'));
    const out = `${hung.late}shots/p.png`;
    const r = await timed(runPreview(yaml, { out, write: () => {} }));
    expect(r.error.code).toBe(ErrorCodes.SINK_FILE);
    expect(r.error.message).toBe(`preview --out ${out}: cannot write into ${hung.late}shots (the file system gave no answer about it within ${FILE_STAT_TIMEOUT_MS / 1000} s (a network mount that stopped answering?))`);
    expect(syncLooks).toEqual([]);
    expect(r.ticks).toBeGreaterThan(10);
  }, 60_000);

  it(`ffmpegSource without a memo (bench, a test) of a file on the hung mount: VAP_ERR_SOURCE_TIMEOUT naming it, no synchronous stat (readsOnce's)`, async () => {
    syncLooks.length = 0;
    const file = `${hung.dir}bench.mp4`;
    const src = ffmpegSource({ id: 'bench', input: { url: file, kind: 'file', rate: 'fast', loop: false }, output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, frame: 'letterbox' }, ffmpegPath: resolveFfmpegSync().path });
    const r = await timed(new Promise((_res, rej) => src.subscribe({ error: rej, complete: () => rej(new Error('completed')) })));
    expect(syncLooks).toEqual([]);
    expect(r.error.code).toBe(ErrorCodes.SOURCE_TIMEOUT);
    expect(r.error.message).toBe(`source "bench": ${file}: the file system gave no answer about it within ${FILE_STAT_TIMEOUT_MS / 1000} s (a network mount that stopped answering?)`);
    expect(r.ticks).toBeGreaterThan(10);
  }, 60_000);
});

describe("a stat's error other than not found, said as it is", () => {
  const loop = join(work, 'loop.mp4');
  symlinkSync(loop, loop);
  const plain = join(work, 'plain');
  writeFileSync(plain, 'x');
  const cases: [string, string, RegExp][] = [
    ['a link loop', loop, /loop\.mp4: too many levels of symbolic links \(ELOOP\)/],
    ['a path through a file', join(plain, 'x.mp4'), /plain\/x\.mp4: not found: a part of its path is a file, not a folder \(ENOTDIR\)/],
    ['a name too long', join(work, `${'n'.repeat(300)}.mp4`), /: its name, or a part of it, is too long for the file system \(ENAMETOOLONG\)/],
  ];

  it.each(cases)('detect, %s: VAP_ERR_SOURCE_OPEN saying what it is, not "file not found"', async (_what, file, said) => {
    const e = await runDetect([file], { write: () => {} }).then(
      () => undefined,
      (x: Error & { code?: string }) => x,
    );
    expect(e?.code).toBe(ErrorCodes.SOURCE_OPEN);
    expect(e?.message).toMatch(said);
    expect(e?.message).not.toMatch(/file not found/);
  });

  it.each(cases)('preview, %s: VAP_ERR_SOURCE_OPEN saying what it is, not "file not found"', async (_what, file, said) => {
    const model = models.path('stat-error.onnx');
    writeHostileModel(model);
    const yaml = join(work, 'e.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${file}`, 'model:', `  path: ${model}`, ''].join('\n'));
    const e = await runPreview(yaml, { out: join(work, 'e.png'), write: () => {} }).then(
      () => undefined,
      (x: Error & { code?: string }) => x,
    );
    expect(e?.code).toBe(ErrorCodes.SOURCE_OPEN);
    expect(e?.message).toMatch(said);
    expect(e?.message).not.toMatch(/file not found/);
  });
});
