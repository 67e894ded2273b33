// hardExit (_exit, src/core/hard-exit.c) skips Node's own exit, and with it what that exit does
// to the terminal: argus ran in a terminal (a pseudo-terminal here, made by util-linux `script`).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'argus-hard-exit-'));

/** Runs `source` (TypeScript importing from the checkout) in a terminal of its own, then `after` (shell) in that terminal: what the terminal showed, and the status. */
function inTerminal(name: string, source: string, after = '') {
  const file = join(dir, name);
  writeFileSync(file, source);
  const r = spawnSync('script', ['-qec', `${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(file)}; echo "status $?"; ${after}`, '/dev/null'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return r.stdout;
}

describe('hardExit leaves the terminal as an orderly exit does', () => {
  it('out of raw mode (uv_tty_reset_mode, as Node\'s exit calls it): after _exit the shell\'s terminal stayed raw, without echo or line editing', () => {
    const out = inTerminal('raw.mts', `import { hardExit } from '${ROOT}/src/core/native.ts';
process.stdin.setRawMode(true);
hardExit(3);
`, "stty -a | grep -o -- '-\\?icanon' | head -1");
    expect(out).toContain('status 3');
    expect(out).toMatch(/^icanon\r?$/m); // before: -icanon
  });

  it("with the status block's last lines below the last text written (a line written just before had erased them, their redraw never came)", () => {
    const out = inTerminal('block.mts', `import { stderrStatus } from '${ROOT}/src/core/terminal.ts';
import { hardExit } from '${ROOT}/src/core/native.ts';
stderrStatus().show(['lobby  in 10.0 fps  BLOCK']);
process.stderr.write('argus: the exit message\\n');
hardExit(3);
`);
    expect(out).toContain('status 3');
    expect(out.lastIndexOf('BLOCK')).toBeGreaterThan(out.indexOf('the exit message'));
  });
});
