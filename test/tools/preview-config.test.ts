// argus preview on YAML that is no pipeline of sources: a coded error naming the file, before any model or frame.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { runPreview } from '../../src/tools/preview.js';
import { PERSON_VIDEO } from '../helpers/assets.js';

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

describe('argus preview: unknown classes', () => {
  it('are all named in one VAP_ERR_CONFIG, each with its field, before any frame (only the first was)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-classes-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(
      file,
      [
        'name: p',
        'sources:',
        `  - id: cam`,
        `    uri: ${PERSON_VIDEO}`,
        '    zones:',
        '      - {id: z, polygon: [[0, 0], [1, 0], [1, 1]], classes: [persn, car, bicycel]}',
        '    lines:',
        '      - {id: l, from: [0, 0.5], to: [1, 0.5], classes: [trukc]}',
        '',
      ].join('\n'),
    );
    const e = await runPreview(file, { out: join(dir, 'p.png'), write: () => undefined }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toMatchObject({ code: ErrorCodes.CONFIG });
    const lines = (e as Error).message.split('\n');
    expect(lines[0]).toBe(`${file}: 3 unknown classes`);
    expect(lines.slice(1).map((l) => l.replace(/ \(the model's labels.*$/, ''))).toEqual([
      '  sources[0].zones[0].classes[0]: unknown class "persn"',
      '  sources[0].zones[0].classes[2]: unknown class "bicycel"',
      '  sources[0].lines[0].classes[0]: unknown class "trukc"',
    ]);
  });
});
