// argus preview on YAML that is no pipeline of sources: a coded error naming the file, before any model or frame.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { runPreview } from '../../src/tools/preview.js';

describe('argus preview: a worker YAML', () => {
  it('is refused with VAP_ERR_CONFIG naming the file (it had no sources[0]: an uncoded "reading \'uri\'")', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-worker-'));
    const file = join(dir, 'worker.yaml');
    writeFileSync(file, ['name: w', 'sinks:', '  kafka:', '    brokers: ["127.0.0.1:9"]', 'cluster:', '  workerId: w1', ''].join('\n'));
    const e = await runPreview(file, { out: join(dir, 'p.png'), write: () => undefined }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toMatchObject({ code: ErrorCodes.CONFIG });
    expect((e as Error).message).toContain(`${file}: a worker YAML (cluster section), with no sources to preview`);
  });
});
