// scripts/build.mjs's C modules: a build cut short must leave no library that crashes the loader.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'argus-build-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the build script and the C sources (no node_modules: the tsc step is skipped). */
function checkout(): string {
  const root = mkdtempSync(join(dir, 'root-'));
  for (const f of ['scripts/build.mjs', 'src/preprocess/letterbox.c', 'src/sources/frame-channel.c', 'src/core/hard-exit.c']) {
    mkdirSync(join(root, f, '..'), { recursive: true });
    cpSync(join(repo, f), join(root, f));
  }
  return root;
}
const build = (root: string, env: NodeJS.ProcessEnv = {}) => spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' });
/** How a fresh process fares loading the library: 'loaded', 'refused' (an error native.ts falls back from), or the signal that killed it. */
const load = (file: string): string => {
  const r = spawnSync(process.execPath, ['-e', 'try { require(process.argv[1]) } catch { process.exit(2) }', file]);
  return r.signal ?? (r.status === 0 ? 'loaded' : r.status === 2 ? 'refused' : `exit ${r.status}`);
};

describe('scripts/build.mjs, the C modules', () => {
  it('a build killed while the compiler writes the library (npm ci stopped) leaves the one built before, never a file cut short (dlopen of one is SIGBUS, not an error to fall back from)', () => {
    const root = checkout();
    expect(build(root).status).toBe(0);
    const lib = join(root, 'dist', 'native', 'letterbox.node');
    expect(load(lib)).toBe('loaded');
    // A compiler that has written the first 4 KB of the library when the build is killed.
    const cc = join(root, 'cc-killed');
    writeFileSync(cc, `#!/bin/sh\nprev=\nfor a; do [ "$prev" = -o ] && out=$a; prev=$a; done\nhead -c 4096 '${lib}' > "$out.cut" && mv "$out.cut" "$out"\nkill -9 $PPID\n`, { mode: 0o755 });
    const killed = build(root, { CC: cc });
    expect(killed.signal).toBe('SIGKILL');
    expect(load(lib)).toBe('loaded');
  }, 60_000);
});
