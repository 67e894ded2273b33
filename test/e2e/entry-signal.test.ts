// bin/argus.js: a stop signal before the start's own listeners (src/core/starting.ts) are loaded,
// while the entry looks at the files of src/ (is dist/ up to date?) and tsx's loader comes up.
// It ended argus by the signal, without a word; now it is said as any signal of the start is.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ARGUS, ROOT } from '../helpers/cli.js';

/**
 * Preloaded into argus (`--require`): sends the process SIGINT from inside the entry's first
 * look at dist/ (its stat of dist/.built), before any module of argus is loaded.
 */
const SIGINT_AT_FIRST_STAT = `
const fs = require('node:fs');
const stat = fs.statSync;
let sent = false;
fs.statSync = function (p, ...rest) {
  if (!sent && String(p).endsWith('dist/.built')) {
    sent = true;
    process.kill(process.pid, 'SIGINT');
  }
  return stat.call(this, p, ...rest);
};
require('node:module').syncBuiltinESMExports();
`;

describe('bin/argus.js: a stop signal before the start listens for it', () => {
  it('while it looks at the files of src/: says so and exits 130 (it ended by the signal, without a word)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-entry-signal-'));
    const preload = join(dir, 'sigint.cjs');
    writeFileSync(preload, SIGINT_AT_FIRST_STAT);
    const p = spawn(process.execPath, ['--require', preload, ARGUS, 'run', join(dir, 'none.yaml')], { cwd: ROOT, env: { ...process.env, ARGUS_TSX: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let stdout = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    p.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    const bound = setTimeout(() => p.kill('SIGKILL'), 120_000); // a hang bound only
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => p.on('close', (c, s) => r({ code: c, signal: s })));
    clearTimeout(bound);
    expect({ code, signal }).toEqual({ code: 130, signal: null });
    expect(stderr).toBe('argus: VAP_ERR_INTERRUPTED: SIGINT while loading argus: stopped on the signal, before anything ran\n');
    expect(stdout).toBe('');
  }, 180_000);
});
