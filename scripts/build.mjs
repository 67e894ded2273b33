// Compiles src/ to dist/src (plain JavaScript, so `argus` runs without a TypeScript loader:
// ~50 MB less memory and a faster start) and copies what tsc does not (JS modules, JSON, the
// dashboard's files). Run by `npm ci` (prepare) and `npm run build`. A failed build is a
// warning, not an error: bin/argus.js then runs the TypeScript sources through tsx.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
 * The C modules → dist/native/*.node with the system's C compiler and Node's own N-API headers
 * (no download, no node-gyp project for two files). Without a compiler or the headers this is a
 * note, not an error:
 * - src/preprocess/letterbox.c: without it the letterbox runs as TypeScript loops (the same
 *   results, about ten times slower at 1080p);
 * - src/sources/frame-channel.c (Linux): without it ffmpeg's frames come through Node's own
 *   sockets and pipes (more of Node's CPU a frame; src/sources/frame-channel.ts);
 * - src/core/hard-exit.c (POSIX): without it an exit that a worker thread stuck inside ONNX Runtime
 *   would hold for ever is a SIGKILL (status 137, not the run's own; src/core/native.ts hardExit).
 */
function buildNative() {
  const [cc, ...ccArgs] = (process.env.CC || 'cc').trim().split(/\s+/); // CC="ccache gcc" works too
  const headers = [join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node'].find((d) => existsSync(join(d, 'node_api.h')));
  const modules = [
    // -ffp-contract=off: no fused multiply-add, so each float is rounded as JavaScript rounds it.
    { name: 'letterbox', src: join('src', 'preprocess', 'letterbox.c'), flags: ['-O3', '-ffp-contract=off'], without: 'the letterbox runs as TypeScript' },
    ...(process.platform !== 'win32' ? [{ name: 'hard-exit', src: join('src', 'core', 'hard-exit.c'), flags: ['-O2'], without: 'an exit held by a stuck inference run is a SIGKILL (status 137)' }] : []),
    ...(process.platform === 'linux' ? [{ name: 'frame-channel', src: join('src', 'sources', 'frame-channel.c'), flags: ['-O2', '-pthread'], without: "ffmpeg's frames come through Node's sockets" }] : []),
  ];
  for (const m of modules) {
    const out = join(dist, 'native', `${m.name}.node`);
    if (!headers) {
      rmSync(out, { force: true }); // never an older build left behind
      process.stderr.write(`build: no node_api.h found; ${m.without}\n`);
      continue;
    }
    mkdirSync(dirname(out), { recursive: true });
    // Built beside it, then renamed over it: a build killed while the compiler writes (npm ci
    // stopped) leaves the library built before, or none, never one cut short, which is no
    // "cannot be loaded" for native.ts to fall back from but SIGBUS in dlopen at every start;
    // nor does a process that starts during a build load a half-written one.
    const part = `${out}.${process.pid}.part`;
    const c = spawnSync(cc, [...ccArgs, ...m.flags, '-fPIC', '-shared', '-Wall', '-o', part, '-I', headers, join(root, m.src)], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (c.error || c.status !== 0) {
      rmSync(part, { force: true });
      rmSync(out, { force: true });
      process.stderr.write(`build: ${cc} could not build ${m.src} (${c.error?.message ?? `exit ${c.status}`}); ${m.without}\n`);
      continue;
    }
    renameSync(part, out);
    process.stderr.write(`build: dist/native/${m.name}.node is built\n`);
  }
}
