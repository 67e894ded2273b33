// Compiles src/ to dist/src (plain JavaScript, so `argus` runs without a TypeScript loader:
// ~50 MB less memory and a faster start) and copies what tsc does not (JS modules, JSON, the
// dashboard's files). Run by `npm ci` (prepare) and `npm run build`. A failed build is a
// warning, not an error: bin/argus.js then runs the TypeScript sources through tsx.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.built');
rmSync(stamp, { force: true });
buildNative();
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  process.stderr.write('build: typescript is not installed (npm ci --omit=dev?); bin/argus.js runs the TypeScript sources through tsx\n');
  process.exit(0);
}
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  process.stderr.write('build: tsc failed; bin/argus.js runs the TypeScript sources through tsx\n');
  process.exit(0);
}
for (const f of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!f.isFile() || f.name.endsWith('.ts') || f.name.endsWith('.c')) continue; // the C kernel is compiled (buildNative)
  const rel = join(f.parentPath ?? f.path, f.name).slice(root.length + 1);
  mkdirSync(dirname(join(dist, rel)), { recursive: true });
  cpSync(join(root, rel), join(dist, rel));
}
writeFileSync(stamp, `${new Date().toISOString()}\n`);
process.stderr.write('build: dist/src is up to date\n');

/**
 * src/preprocess/letterbox.c → dist/native/letterbox.node with the system's C compiler and Node's own
 * N-API headers (no download, no node-gyp project for one file). Without a compiler or the
 * headers this is a note, not an error: the letterbox then runs as TypeScript loops (the same
 * results, about ten times slower at 1080p).
 */
function buildNative() {
  const [cc, ...ccArgs] = (process.env.CC || 'cc').trim().split(/\s+/); // CC="ccache gcc" works too
  const headers = [join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node'].find((d) => existsSync(join(d, 'node_api.h')));
  const out = join(dist, 'native', 'letterbox.node');
  if (!headers) {
    rmSync(out, { force: true }); // never an older build left behind
    process.stderr.write('build: no node_api.h found; the letterbox runs as TypeScript\n');
    return;
  }
  mkdirSync(dirname(out), { recursive: true });
  // -ffp-contract=off: no fused multiply-add, so each float is rounded as JavaScript rounds it.
  const c = spawnSync(cc, [...ccArgs, '-O3', '-ffp-contract=off', '-fPIC', '-shared', '-Wall', '-o', out, '-I', headers, join(root, 'src', 'preprocess', 'letterbox.c')], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (c.error || c.status !== 0) {
    rmSync(out, { force: true });
    process.stderr.write(`build: ${cc} could not build src/preprocess/letterbox.c (${c.error?.message ?? `exit ${c.status}`}); the letterbox runs as TypeScript\n`);
    return;
  }
  process.stderr.write('build: dist/native/letterbox.node is built\n');
}
