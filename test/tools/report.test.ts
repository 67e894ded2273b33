import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { Report } from '../../src/tools/report.js';

/** A stdout stand-in whose writes fail with `code` from the `failAt`-th on (as a pipe whose reader left, or a full disk). */
function failing(code: string, failAt = 1): { out: Writable; got: string[] } {
  const got: string[] = [];
  let n = 0;
  const out = new Writable({
    write(chunk: Buffer, _e, cb) {
      if (++n >= failAt) return cb(Object.assign(new Error(`write ${code}`), { code }));
      got.push(chunk.toString());
      cb();
    },
  });
  return { out, got };
}

describe('Report (what argus detect and preview print on stdout)', () => {
  it('a reader gone away (EPIPE): printing stops, nothing is thrown, the command ends as it would have', async () => {
    const { out, got } = failing('EPIPE', 2);
    const r = new Report(out);
    r.write('first\n');
    r.write('second\n');
    await new Promise((w) => setImmediate(w));
    r.write('third\n');
    await expect(r.finish('detect')).resolves.toBeUndefined();
    expect(got).toEqual(['first\n']);
  });

  it('any other failure (ENOSPC): finish throws VAP_ERR_SINK_FILE naming the command and the code; no unhandled error event', async () => {
    const { out } = failing('ENOSPC');
    const r = new Report(out);
    r.write('x\n');
    const e = await r.finish('preview').catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_SINK_FILE')).toBe(true);
    expect((e as Error).message).toBe('preview: could not print to stdout (ENOSPC)');
    // A failure after finish (the last buffered bytes) is swallowed, not thrown from the stream.
    expect(() => out.emit('error', Object.assign(new Error('late'), { code: 'EIO' }))).not.toThrow();
  });

  it('a stream that works: everything printed, finish resolves', async () => {
    const got: string[] = [];
    const out = new Writable({ write: (c: Buffer, _e, cb) => (got.push(c.toString()), cb()) });
    const r = new Report(out);
    r.write('a');
    r.write('b');
    await r.finish('detect');
    expect(got.join('')).toBe('ab');
  });
});
