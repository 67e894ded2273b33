import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(__dirname, '../../scripts/test-summary.mjs');
const report = (passed: number, failed: number) => {
  const file = join(mkdtempSync(join(tmpdir(), 'argus-summary-')), 'vitest.json');
  writeFileSync(file, JSON.stringify({ numPassedTests: passed, numFailedTests: failed, numPendingTests: 0, numTodoTests: 0, testResults: [] }));
  return file;
};
const summary = (file: string, rc?: string) => spawnSync(process.execPath, [SCRIPT, file, ...(rc === undefined ? [] : [rc])], { encoding: 'utf8' });

describe("the test command's last line", () => {
  it('counts errors outside the tests (vitest exited non-zero with every test passed) as a failure: it said "0 failed" for a red run', () => {
    const r = summary(report(1076, 0), '1');
    expect(r.stdout).toBe('1076 passed, 1 failed\n');
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/vitest exited 1 with no failed test/);
  });

  it('a green run stays green, and failed tests are counted as they are', () => {
    expect(summary(report(10, 0), '0')).toMatchObject({ stdout: '10 passed, 0 failed\n', status: 0 });
    expect(summary(report(8, 2), '1')).toMatchObject({ stdout: '8 passed, 2 failed\n', status: 1 });
  });
});
