// argus preview (a one-shot command) whose ffmpeg is stuck in the kernel after the frame it wanted
// (a hung network mount, a wedged device: SIGKILL ends such a process only when it leaves the
// kernel): the command printed its result and then never ended, the stuck child holding its event
// loop. Now it exits CHILDREN_END_WAIT_MS after its result, with its own status, naming the ffmpeg
// left (its pid) and what it reads. The real CLI (dist), with an "ffmpeg" that runs ffmpeg and then
// lingers (sleep), and a preload that makes argus's kills of it go nowhere (as the kernel's process
// ignores them): its exit is never seen. The test ends it itself.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { killAll, record, type Recorded } from '../helpers/procs.js';

const work = mkdtempSync(join(tmpdir(), 'argus-stuck-exit-'));
const leftOver: Recorded[] = [];
afterAll(() => {
  killAll(leftOver);
  rmSync(work, { recursive: true, force: true });
});

describe('argus preview with its ffmpeg stuck after the frame', () => {
  it('exits after its result with its own status (0), saying which ffmpeg (pid) was left and what it reads; it stayed open for as long as the ffmpeg did', async () => {
    const ffmpeg = resolveFfmpegSync().path;
    const fake = join(work, 'ffmpeg');
    writeFileSync(fake, `#!/bin/sh\ncase " $* " in *" -version "*) exec ${JSON.stringify(ffmpeg)} "$@";; esac\n${JSON.stringify(ffmpeg)} "$@"\nexec sleep 600\n`, { mode: 0o755 });
    const preload = join(work, 'stuck.mjs');
    writeFileSync(
      preload,
      `import { ChildProcess } from 'node:child_process';\nconst kill = ChildProcess.prototype.kill;\nChildProcess.prototype.kill = function (s) { return this.spawnargs?.some((a) => a.includes(${JSON.stringify(PERSON_VIDEO)})) ? true : kill.call(this, s); };\n`,
    );
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, [`ffmpegPath: ${fake}`, 'sources:', '  - id: cam', `    uri: ${PERSON_VIDEO}`, ''].join('\n'));
    const out = join(work, 'p.png');
    const child = spawn(process.execPath, ['--import', preload, join(process.cwd(), 'bin/argus.js'), 'preview', yaml, '--out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
    // (Ended by the test should it hang, as it did: its reaper then ends the lingering one.)
    leftOver.push(record(child.pid!));
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      // The lingering "ffmpeg", recorded as soon as it is named, for the test to end.
      for (const m of d.matchAll(/ffmpeg (\d+) \(reading/g)) leftOver.push(record(Number(m[1])));
    });
    const [code, sig] = await new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
    expect({ code, sig, stdout }).toMatchObject({ code: 0, sig: null, stdout: expect.stringContaining('source "cam" at 0.00 s') });
    expect(existsSync(out)).toBe(true);
    expect(stderr).toMatch(/^argus: warning: ffmpeg (\d+) \(reading [^\n]*one-by-one-person-detection\.mp4\) has not exited 2 s after the command's end \(stuck in the kernel: a hung device or network mount\?\); exiting without it \(exit status 0\)$/m);
    expect(leftOver.length).toBeGreaterThan(0);
  }, 120_000);
});
