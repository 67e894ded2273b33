// src/core/hard-exit.c is built by scripts/build.mjs against the node_api.h it finds. A Node whose
// headers folder has node_api.h but not libuv's uv.h (libuv a package of its own, its headers not
// installed) could not build it at all: every exit held by a stuck inference run was a SIGKILL
// (status 137) again. Built here against a folder of the Node-API headers alone.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

describe('hard-exit.c', () => {
  it("builds with Node-API's headers alone (no uv.h), keeps the status, and still puts the terminal's mode back", () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-hard-exit-build-'));
    // The headers as scripts/build.mjs finds them; only Node-API's copied.
    const headers = [join(dirname(process.execPath), '..', 'include', 'node'), '/usr/include/node', '/usr/local/include/node'].find((d) => existsSync(join(d, 'node_api.h')));
    expect(headers).toBeDefined();
    const only = join(dir, 'include');
    mkdirSync(only);
    for (const h of ['node_api.h', 'node_api_types.h', 'js_native_api.h', 'js_native_api_types.h']) if (existsSync(join(headers!, h))) copyFileSync(join(headers!, h), join(only, h));
    const out = join(dir, 'hard-exit.node');
    const cc = spawnSync(process.env.CC || 'cc', ['-O2', '-fPIC', '-shared', '-Wall', '-o', out, '-I', only, join(ROOT, 'src', 'core', 'hard-exit.c')], { encoding: 'utf8' });
    expect(cc.stderr).not.toMatch(/error/);
    expect(cc.status).toBe(0);
    // Loaded by Node, it ends the process with the status given, out of raw mode (uv_tty_reset_mode
    // found in the node binary when it loads), in a terminal of its own (util-linux `script`).
    const file = join(dir, 'exit.cjs');
    writeFileSync(file, `process.stdin.setRawMode(true);\nrequire(${JSON.stringify(out)}).exit(3);\n`);
    const r = spawnSync('script', ['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(file)}; echo "status $?"; stty -a | grep -o -- '-\\?icanon' | head -1`, '/dev/null'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout).toContain('status 3');
    expect(r.stdout).toMatch(/^icanon\r?$/m);
  });
});
