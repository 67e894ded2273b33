import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { statStart } from '../../src/core/children.js';
import { killAll } from '../helpers/procs.js';
import { bundledFfmpegPath, configuredFfmpegPath, describeFfmpeg, ffmpegVersion, isNewerFfmpeg, notFfmpeg, parseFfmpegVersion, resolveFfmpeg, resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-ffpath-'));
/** A fake ffmpeg: a script that prints a `-version` banner. */
function fake(name: string, banner: string, rc = 0): string {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\ncat <<'EOF'\n${banner}\nEOF\nexit ${rc}\n`);
  chmodSync(p, 0o755);
  return p;
}
const BUNDLED_BANNER = [
  'ffmpeg version N-47683-g0e8eb07980-static https://johnvansickle.com/ffmpeg/  Copyright (c) 2000-2018 the FFmpeg developers',
  'built with gcc 6.3.0 (Debian 6.3.0-18+deb9u1) 20170516',
  'libavutil      56. 24.101 / 56. 24.101',
  'libavcodec     58. 42.100 / 58. 42.100',
  'libavformat    58. 24.100 / 58. 24.100',
].join('\n');
const DEBIAN_BANNER = [
  'ffmpeg version 5.1.6-0+deb12u1 Copyright (c) 2000-2024 the FFmpeg developers',
  'built with gcc 12 (Debian 12.2.0-14)',
  'libavutil      57. 28.100 / 57. 28.100',
  'libavcodec     59. 37.100 / 59. 37.100',
  'libavformat    59. 27.100 / 59. 27.100',
].join('\n');
const OLD_BANNER = [
  'ffmpeg version 3.2.18-0+deb9u1 Copyright (c) 2000-2022 the FFmpeg developers',
  'libavcodec     57. 64.101 / 57. 64.101',
  'libavformat    57. 56.101 / 57. 56.101',
].join('\n');

const bundled = fake('bundled', BUNDLED_BANNER);
const env = {} as NodeJS.ProcessEnv;

describe('parseFfmpegVersion / isNewerFfmpeg', () => {
  it('reads the version, the year and the library versions', () => {
    expect(parseFfmpegVersion(BUNDLED_BANNER)).toEqual({ version: 'N-47683-g0e8eb07980-static', year: 2018, libavformat: [58, 24, 100], libavcodec: [58, 42, 100] });
    expect(parseFfmpegVersion(DEBIAN_BANNER)?.version).toBe('5.1.6-0+deb12u1');
    expect(parseFfmpegVersion('not ffmpeg')).toBeUndefined();
  });
  it('compares by libavformat/libavcodec (a git snapshot has no release number), else by year', () => {
    const b = parseFfmpegVersion(BUNDLED_BANNER)!;
    expect(isNewerFfmpeg(parseFfmpegVersion(DEBIAN_BANNER)!, b)).toBe(true);
    expect(isNewerFfmpeg(b, parseFfmpegVersion(DEBIAN_BANNER)!)).toBe(false);
    // A 2022 security update of ffmpeg 3.2 is newer by year but older by library: not newer.
    expect(isNewerFfmpeg(parseFfmpegVersion(OLD_BANNER)!, b)).toBe(false);
    expect(isNewerFfmpeg({ version: 'x', year: 2024 }, { version: 'y', year: 2018 })).toBe(true);
    expect(isNewerFfmpeg({ version: 'x' }, b)).toBe(false);
  });
});

describe('resolveFfmpeg: $ARGUS_FFMPEG > a newer /usr/bin/ffmpeg > the bundled one', () => {
  it.each([
    ['$ARGUS_FFMPEG wins over everything', { env: { ARGUS_FFMPEG: fake('argus', OLD_BANNER) }, systemPath: fake('sys1', DEBIAN_BANNER) }, 'argus', '3.2.18-0+deb9u1', /^\$ARGUS_FFMPEG$/],
    ['a newer system ffmpeg', { systemPath: fake('sys2', DEBIAN_BANNER) }, 'sys2', '5.1.6-0+deb12u1', /^newer than the bundled N-47683-g0e8eb07980-static$/],
    ['an older system ffmpeg', { systemPath: fake('sys3', OLD_BANNER) }, 'bundled', 'N-47683-g0e8eb07980-static', /is not newer/],
    ['no system ffmpeg', { systemPath: join(dir, 'nothing-here') }, 'bundled', 'N-47683-g0e8eb07980-static', /no .*nothing-here/],
    ['a system ffmpeg that does not run', { systemPath: fake('sys4', 'Segmentation fault', 139) }, 'bundled', 'N-47683-g0e8eb07980-static', /does not run/],
  ])('%s', async (_n, c, file, version, reason) => {
    const opts = { env, bundledPath: bundled, ...c };
    const got = await resolveFfmpeg(opts);
    expect(got.path).toBe(join(dir, file));
    expect(got.version).toBe(version);
    expect(got.reason).toMatch(reason);
    expect(resolveFfmpegSync(opts)).toEqual(got); // the synchronous path chooses the same
  });

  it('the real bundled binary reports its version (asynchronous, cached)', async () => {
    const a = ffmpegVersion(bundledFfmpegPath());
    expect(ffmpegVersion(bundledFfmpegPath())).toBe(a);
    expect((await a)?.libavformat?.[0]).toBeGreaterThanOrEqual(58);
  });
});

describe('an ffmpeg the config or ARGUS_FFMPEG names that is not there or cannot be run', () => {
  // Before, it was "version unknown", and every source failed at its start (exit status 1,
  // "ffmpeg executable not found at …"), naming neither the setting nor the cause.
  it('is VAP_ERR_CONFIG naming the field and the path, before any source starts', async () => {
    const notExecutable = join(dir, 'plain-file');
    writeFileSync(notExecutable, 'not a program');
    await expect(describeFfmpeg(join(dir, 'no-ffmpeg-here'), 'config ffmpegPath', 'p.yaml: ffmpegPath')).rejects.toMatchObject({
      code: 'VAP_ERR_CONFIG',
      message: `p.yaml: ffmpegPath: ${join(dir, 'no-ffmpeg-here')}: no such file (ENOENT); name an ffmpeg executable`,
    });
    await expect(describeFfmpeg(notExecutable, 'config ffmpegPath', 'p.yaml: ffmpegPath')).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/^p\.yaml: ffmpegPath: .*plain-file: not an executable file \(EACCES\)/) });
    await expect(describeFfmpeg(dir, 'config ffmpegPath', 'p.yaml: ffmpegPath')).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/not an executable file/) });
    await expect(describeFfmpeg('argus-no-such-ffmpeg', 'config ffmpegPath', 'ffmpegPath')).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: 'ffmpegPath: argus-no-such-ffmpeg: no such program on PATH (ENOENT); name an ffmpeg executable' });
    await expect(resolveFfmpeg({ env: { ARGUS_FFMPEG: join(dir, 'no-ffmpeg-here-either') } })).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/^ARGUS_FFMPEG: .*no-ffmpeg-here-either: no such file \(ENOENT\)/) });
  });

  it('a program that runs but is not ffmpeg is left to the sources (notFfmpeg names it there); one that is, is described', async () => {
    expect(await describeFfmpeg(fake('cfg-old', OLD_BANNER), 'config ffmpegPath', 'ffmpegPath')).toEqual({ path: join(dir, 'cfg-old'), version: '3.2.18-0+deb9u1', reason: 'config ffmpegPath' });
    expect(await describeFfmpeg(fake('cfg-crash', 'Segmentation fault', 139), 'config ffmpegPath', 'ffmpegPath')).toMatchObject({ version: 'unknown' });
  });

  it("a relative ffmpegPath is the YAML folder's, as every path of the YAML; a bare name is looked up on PATH", () => {
    expect(configuredFfmpegPath('./tools/ffmpeg', '/etc/argus')).toBe('/etc/argus/tools/ffmpeg');
    expect(configuredFfmpegPath('tools/ffmpeg', '/etc/argus')).toBe('/etc/argus/tools/ffmpeg');
    expect(configuredFfmpegPath('/usr/local/bin/ffmpeg', '/etc/argus')).toBe('/usr/local/bin/ffmpeg');
    expect(configuredFfmpegPath('ffmpeg', '/etc/argus')).toBe('ffmpeg');
  });
});

describe('notFfmpeg (asked when the program ends without reporting its input)', () => {
  it('a real ffmpeg whose -version failed once (a busy machine) is asked again, not taken for another program; one that is not ffmpeg is named with ARGUS_FFMPEG', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-notffmpeg-'));
    const flaky = join(dir, 'ffmpeg');
    // Fails its first -version, then answers as ffmpeg does.
    writeFileSync(flaky, `#!/bin/sh\nif [ ! -e "${dir}/once" ]; then touch "${dir}/once"; exit 1; fi\necho 'ffmpeg version 6.1 Copyright (c) 2000-2023 the FFmpeg developers'\n`);
    chmodSync(flaky, 0o755);
    expect(await ffmpegVersion(flaky)).toBeUndefined();
    expect(await notFfmpeg(flaky, 'exited with code 1', {})).toBeUndefined();
    expect(await notFfmpeg('/bin/true', 'exited with code 0', { ARGUS_FFMPEG: '/bin/true' })).toBe(
      "the program named by ARGUS_FFMPEG (/bin/true) did not behave as ffmpeg: it exited with code 0 without ffmpeg's report of its input, and `/bin/true -version` gives no ffmpeg version; set ARGUS_FFMPEG to an ffmpeg executable, or unset it",
    );
    expect(await notFfmpeg('/bin/true', 'exited with code 0', {})).toMatch(/^the program run as ffmpeg \(\/bin\/true\) did not behave as ffmpeg/);
  });

  it('a -version that gives no answer (ended by a signal: its timeout on a busy machine, the OOM killer) is not taken for "not ffmpeg": the camera\'s failure stays retried', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-notffmpeg-'));
    const killed = join(dir, 'ffmpeg');
    // Every -version of it is killed, as a timeout kills one that a busy machine holds past 10 s.
    writeFileSync(killed, '#!/bin/sh\nkill -KILL $$\n');
    chmodSync(killed, 0o755);
    expect(await ffmpegVersion(killed)).toBeUndefined();
    // (Was: "the program run as ffmpeg (…) did not behave as ffmpeg", VAP_ERR_SOURCE_OPEN, never retried.)
    expect(await notFfmpeg(killed, 'exited with code 1', {})).toBeUndefined();
  });

  it('a -version answered with more than its 1 MiB of output is an answer, not ffmpeg\'s (node ends it: a code of its own and a signal)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-notffmpeg-'));
    const flood = join(dir, 'ffmpeg');
    writeFileSync(flood, '#!/bin/sh\nhead -c 2000000 /dev/zero | tr "\\\\0" x\nexit 1\n');
    chmodSync(flood, 0o755);
    // (Was undefined: taken for no answer, the camera's failure retried for ever, the program never named.)
    expect(await notFfmpeg(flood, 'exited with code 1', {})).toMatch(/^the program run as ffmpeg \(.*\) did not behave as ffmpeg/);
  });
});

describe('a -version that does not end (a wrapper that ignores SIGTERM, a grandchild holding its output)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-ffhang-'));
  /**
   * Each script writes its grandchild's pid here, with its /proc/PID/stat line (its start time),
   * to be killed after the test (it ignores SIGTERM too) where it is still that process: by then
   * it has mostly ended, and its pid may be another's (one of another test's, or anyone's).
   */
  const pids: string[] = [];
  /** A wrapper that ignores SIGTERM and waits on a child that holds its stdout (30 s: the test's bound, not for ever). */
  const hostile = (name: string) => {
    const p = join(dir, name);
    writeFileSync(p, `#!/bin/sh\ntrap '' TERM\nsleep 30 &\nread -r st < /proc/$!/stat; echo "$! $st" > "${p}.pid"\nwait\n`);
    chmodSync(p, 0o755);
    pids.push(`${p}.pid`);
    return p;
  };
  afterAll(() => {
    for (const f of pids) {
      let said: string;
      try {
        said = readFileSync(f, 'utf8');
      } catch {
        continue; // not started
      }
      killAll([{ pid: Number(said.split(' ')[0]), start: statStart(said.trim()) }]);
    }
  });

  it('is killed at its timeout (SIGKILL): argus run, check and detect go on, the version unknown', async () => {
    const path = hostile('ffmpeg-async');
    const t0 = Date.now();
    // (Was: SIGTERM at the timeout, ignored, and the start held until the wrapper's end.)
    const choice = await resolveFfmpeg({ env: { ARGUS_FFMPEG: path }, versionTimeoutMs: 300 });
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(choice).toEqual({ path, version: 'unknown', reason: '$ARGUS_FFMPEG' });
  }, 40_000);

  it('the synchronous one too (defaultFfmpegPath)', () => {
    const path = hostile('ffmpeg-sync');
    const t0 = Date.now();
    // (Was: the whole process blocked until the wrapper's end.)
    expect(resolveFfmpegSync({ env: { ARGUS_FFMPEG: path }, versionTimeoutMs: 300 }).version).toBe('unknown');
    expect(Date.now() - t0).toBeLessThan(10_000);
  }, 40_000);

  it('an answer printed by a wrapper that has exited is taken without waiting for a grandchild that keeps its output', async () => {
    const p = join(dir, 'ffmpeg-bg');
    writeFileSync(p, `#!/bin/sh\nsleep 30 &\nread -r st < /proc/$!/stat; echo "$! $st" > "${p}.pid"\necho 'ffmpeg version 6.1 Copyright (c) 2000-2023 the FFmpeg developers'\n`);
    chmodSync(p, 0o755);
    pids.push(`${p}.pid`);
    const t0 = Date.now();
    expect((await ffmpegVersion(p, 20_000))?.version).toBe('6.1');
    // (Was: the timeout's 20 s.)
    expect(Date.now() - t0).toBeLessThan(8_000);
  }, 40_000);

  it('the synchronous one too (resolveFfmpegSync, defaultFfmpegPath): the answer, not the timeout and no answer', () => {
    const p = join(dir, 'ffmpeg-bg-sync');
    writeFileSync(p, `#!/bin/sh\nsleep 30 &\nread -r st < /proc/$!/stat; echo "$! $st" > "${p}.pid"\necho 'ffmpeg version 6.1 Copyright (c) 2000-2023 the FFmpeg developers'\n`);
    chmodSync(p, 0o755);
    pids.push(`${p}.pid`);
    const t0 = Date.now();
    // (Was: the whole process blocked for the timeout's 20 s, then version 'unknown'.)
    expect(resolveFfmpegSync({ env: { ARGUS_FFMPEG: p }, versionTimeoutMs: 20_000 }).version).toBe('6.1');
    expect(Date.now() - t0).toBeLessThan(8_000);
  }, 40_000);
});
