// argus detect FRAMES/*.jpg --out FOLDER/: each input and each copy is looked at once. Since the
// looks became asynchronous (sources/file-look), each copy was compared with every input by two
// stats of its own, one pair after another: 2 x N x N stats, 5.7 s before the model loaded for
// 200 pictures (0.5 s when they were synchronous), over two minutes for a glob of 1 000.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

const counted = vi.hoisted(() => ({ stats: 0 }));
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>();
  const stat = (...a: unknown[]) => {
    counted.stats++;
    return (real.stat as (...x: unknown[]) => Promise<unknown>)(...a);
  };
  return { ...real, default: { ...real, stat }, stat };
});

const { runDetect } = await import('../../src/tools/detect.js');
const { ErrorCodes } = await import('../../src/core/errors.js');

const work = mkdtempSync(join(tmpdir(), 'argus-detect-many-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** `n` pictures (never read: the model named does not exist, so detect ends once the copies are planned). */
function pictures(dir: string, n: number): string[] {
  mkdirSync(dir, { recursive: true });
  return Array.from({ length: n }, (_, i) => {
    const f = join(dir, `f${i}.png`);
    writeFileSync(f, 'x');
    return f;
  });
}

describe('argus detect of many files with --out FOLDER', () => {
  it('looks at each input and each copy a bounded number of times (it was 2 x N x N stats)', async () => {
    const files = pictures(join(work, 'in'), 60);
    counted.stats = 0;
    const e = await runDetect(files, { out: join(work, 'out'), model: join(work, 'none.onnx'), write: () => {} }).then(
      () => undefined,
      (x: Error & { code?: string }) => x,
    );
    // Planned, then the model is looked for: its error, not the copies'.
    expect(e?.code).not.toBe(ErrorCodes.SINK_FILE);
    expect(counted.stats).toBeLessThan(4 * files.length + 20);
  }, 60_000);

  it('still refuses a copy that would be written over an input, by its path or through a link', async () => {
    const files = pictures(join(work, 'in2'), 3);
    // The copy of f1 is out2/f1.png: a link there to the input f2 would write f2's copy over f2.
    mkdirSync(join(work, 'out2'));
    symlinkSync(files[2], join(work, 'out2', 'f1.png'));
    await expect(runDetect(files, { out: join(work, 'out2'), model: join(work, 'none.onnx'), write: () => {} })).rejects.toMatchObject({
      code: ErrorCodes.SINK_FILE,
      message: `detect --out ${join(work, 'out2')}: the annotated copy of ${files[1]} would be written over ${files[2]}, an input; choose another name or folder`,
    });
    // By its path: the folder is the inputs' own.
    await expect(runDetect(files, { out: join(work, 'in2'), model: join(work, 'none.onnx'), write: () => {} })).rejects.toMatchObject({
      code: ErrorCodes.SINK_FILE,
      message: `detect --out ${join(work, 'in2')}: the annotated copy of ${files[0]} would be written over ${files[0]}, an input; choose another name or folder`,
    });
  }, 60_000);
});
