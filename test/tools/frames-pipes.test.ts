// videoFrames (argus detect, preview) reads its ffmpeg's pipes. A spawn that throws (ENOMEM,
// E2BIG; an argument with a NUL stands for them) came out uncoded; one out of file descriptors
// (EMFILE: node leaves the child without pipes, and says why in an 'error' event on the next
// tick) threw a TypeError at the pipes, then the unheard 'error' event ended the process; a read
// error of ffmpeg's log (its stderr pipe) had no listener either, and ended the process.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

/** Which of the child's pipes the wrapped spawnOwned makes fail (a read error, EIO) once started. */
const fail = vi.hoisted(() => ({ pipe: undefined as 'stdout' | 'stderr' | undefined }));
vi.mock('../../src/core/children.js', async (original) => {
  const real = await original<typeof import('../../src/core/children.js')>();
  const spawnOwned = ((...a: Parameters<typeof real.spawnOwned>) => {
    const child = real.spawnOwned(...a);
    const pipe = fail.pipe && child[fail.pipe];
    if (pipe) setImmediate(() => pipe.destroy(Object.assign(new Error('read EIO'), { code: 'EIO', syscall: 'read' })));
    return child;
  }) as typeof real.spawnOwned;
  return { ...real, spawnOwned };
});

const { videoFrames } = await import('../../src/tools/frames.js');
const ffmpeg = resolveFfmpegSync().path;
const dir = mkdtempSync(join(tmpdir(), 'argus-frames-pipes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const clip = join(dir, 'clip.ts');
execFileSync(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-frames:v', '10', '-pix_fmt', 'yuv420p', '-f', 'mpegts', clip]);

/** Every frame of `url`, or the error that ended them. */
async function read(ffmpegPath: string, url: string): Promise<{ frames: number; error?: unknown }> {
  let frames = 0;
  try {
    for await (const _ of videoFrames({ ffmpegPath, url, readsOnce: false })) frames++;
    return { frames };
  } catch (error) {
    return { frames, error };
  }
}

describe('videoFrames whose ffmpeg cannot be started, or whose pipes fail', () => {
  it('a spawn that throws: VAP_ERR_SOURCE_OPEN naming ffmpeg, no listener left on the stop signals', async () => {
    const before = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));
    const { error } = await read('ffmpeg\0', join(dir, 'none.mp4'));
    expect(error).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN', message: expect.stringMatching(/could not start ffmpeg .*null bytes/) });
    expect(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s))).toEqual(before);
  });

  it('out of file descriptors (EMFILE): VAP_ERR_SOURCE_SPAWN naming EMFILE (as a run\'s source says it), not a crash, no listener left on the stop signals', () => {
    const script = `
      import { closeSync, openSync } from 'node:fs';
      import { videoFrames } from ${JSON.stringify(join(process.cwd(), 'src/tools/frames.ts'))};
      const frames = videoFrames({ ffmpegPath: ${JSON.stringify(ffmpeg)}, url: ${JSON.stringify(join(dir, 'any.mp4'))}, readsOnce: false });
      const fds = [];
      try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch {}
      const first = frames.next().then(() => console.log('next: ok'), (e) => console.log('next:', e.code, e.message));
      // (The descriptors given back once node has said why: on the next tick.)
      await new Promise((r) => setTimeout(r, 50));
      for (const fd of fds) closeSync(fd);
      await first;
      await new Promise((r) => setTimeout(r, 50));
      // Nothing held for a child that never started: the stop signals left to their default action.
      console.log('listeners ' + ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s)).join(' '));
      console.log('alive');`;
    const r = spawnSync('sh', ['-c', 'ulimit -n 256; exec "$0" "$@"', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).not.toMatch(/Unhandled|TypeError|EMFILE/);
    expect(r.stdout).toMatch(/^next: VAP_ERR_SOURCE_SPAWN could not start ffmpeg .*EMFILE/m);
    expect(r.stdout).toMatch(/^listeners 0 0 0 0$/m);
    expect(r.stdout).toMatch(/^alive$/m);
    expect(r.status).toBe(0);
  }, 60_000);

  it('a read error of ffmpeg\'s log (stderr): the frames still end, no crash', async () => {
    fail.pipe = 'stderr';
    try {
      const { frames, error } = await read(ffmpeg, clip);
      // Whatever ffmpeg makes of its log's loss: frames, or a coded error.
      expect(error === undefined ? frames : (error as { code?: string }).code).toEqual(error === undefined ? expect.any(Number) : expect.stringMatching(/^VAP_ERR_/));
    } finally {
      fail.pipe = undefined;
    }
  }, 60_000);

  it('a read error of the frames\' pipe (stdout): VAP_ERR_SOURCE_SPAWN naming the input and the error', async () => {
    fail.pipe = 'stdout';
    try {
      const { error } = await read(ffmpeg, clip);
      expect(error).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', message: `${clip}: ffmpeg's stdout failed: read EIO` });
    } finally {
      fail.pipe = undefined;
    }
  }, 60_000);
});
