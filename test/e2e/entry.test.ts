// bin/argus.js runs the compiled CLI (dist/) only while it is newer than every file in src/.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../..');

/** A package laid out like argus's, whose two CLIs say which one ran. */
function layout() {
  const dir = mkdtempSync(join(tmpdir(), 'argus-entry-'));
  mkdirSync(join(dir, 'bin'));
  mkdirSync(join(dir, 'src', 'core'), { recursive: true });
  mkdirSync(join(dir, 'dist', 'src', 'core'), { recursive: true });
  copyFileSync(join(ROOT, 'bin', 'argus.js'), join(dir, 'bin', 'argus.js'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(join(dir, 'src', 'cli.ts'), "const ran: string = 'sources';\nconsole.log(ran);\n");
  writeFileSync(join(dir, 'src', 'core', 'x.ts'), 'export {};\n');
  writeFileSync(join(dir, 'dist', 'src', 'cli.js'), "console.log('compiled');\n");
  // The start's signal listeners, which the entry loads before the CLI (src/core/starting.ts).
  writeFileSync(join(dir, 'src', 'core', 'starting.ts'), 'export {};\n');
  writeFileSync(join(dir, 'dist', 'src', 'core', 'starting.js'), 'export {};\n');
  const past = new Date(Date.now() - 60_000);
  for (const f of ['src/cli.ts', 'src/core/x.ts', 'src/core/starting.ts']) utimesSync(join(dir, f), past, past);
  writeFileSync(join(dir, 'dist', '.built'), 'now\n');
  const run = (env: Record<string, string> = {}) => spawnSync(process.execPath, [join(dir, 'bin', 'argus.js')], { encoding: 'utf8', env: { ...process.env, ARGUS_TSX: '', ...env } }).stdout.trim();
  return { dir, run };
}

describe('bin/argus.js', () => {
  it('runs dist/ when it was built after every source file, the sources through tsx when one is newer or ARGUS_TSX=1, or when dist/ was never built', () => {
    const { dir, run } = layout();
    expect(run()).toBe('compiled');
    expect(run({ ARGUS_TSX: '1' })).toBe('sources');
    const future = new Date(Date.now() + 60_000);
    utimesSync(join(dir, 'src', 'core', 'x.ts'), future, future); // an edit after the build, in a subfolder
    expect(run()).toBe('sources');
    const never = layout();
    spawnSync('rm', [join(never.dir, 'dist', '.built')]);
    expect(never.run()).toBe('sources');
  });
});
