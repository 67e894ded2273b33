// A child started while argus is out of file descriptors (EMFILE: many cameras, a leak): node
// reports it on the next tick, as the child's 'error' event, and leaves the child without its
// pipes. The annotated video's encoder (VideoWriter, started through spawnOwned) read its stderr
// pipe before it listened for that event: its constructor threw a TypeError ("reading
// 'setEncoding'"), and the 'error' event, with no listener, then ended argus (an uncaught error).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-emfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the annotated video\'s encoder started out of file descriptors', () => {
  it('is an error of the file (VAP_ERR_SINK_FILE, naming EMFILE) at its write and close, not a crash', () => {
    const script = `
      import { closeSync, openSync } from 'node:fs';
      import { VideoWriter } from ${JSON.stringify(join(process.cwd(), 'src/annotate/video-writer.ts'))};
      const fds = [];
      try { for (;;) fds.push(openSync('/dev/null', 'r')); } catch {}
      let w;
      try {
        w = new VideoWriter({ ffmpegPath: ${JSON.stringify(resolveFfmpegSync().path)}, path: ${JSON.stringify(join(dir, 'out.mp4'))}, width: 4, height: 2, fps: 5, order: 'rgb' });
      } finally {
        for (const fd of fds) closeSync(fd);
      }
      await w.write(new Uint8Array(4 * 2 * 3)).then(() => console.log('write: ok'), (e) => console.log('write:', e.code, e.message));
      await w.close().then(() => console.log('close: ok'), (e) => console.log('close:', e.code, e.message));
      console.log('alive');`;
    // (A limit of its own: the fds are filled up to it quickly.)
    const r = spawnSync('sh', ['-c', 'ulimit -n 256; exec "$0" "$@"', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).not.toMatch(/Unhandled|TypeError/);
    expect(r.stdout).toMatch(/^write: VAP_ERR_SINK_FILE .*EMFILE/m);
    expect(r.stdout).toMatch(/^close: VAP_ERR_SINK_FILE .*could not start ffmpeg .*EMFILE/m);
    expect(r.stdout).toMatch(/^alive$/m);
    expect(r.status).toBe(0);
  }, 60_000);
});

// A spawn that throws (node throws ENOMEM and E2BIG rather than emitting them; an argument with a
// NUL, which the config refuses, throws the same way and stands for them here): the encoder's
// constructor threw, out of the annotate sink's offer, and ended the whole run with it.
describe('the annotated video\'s encoder whose spawn throws', () => {
  it('is an error of the file at its write and close, not a throw of its constructor', async () => {
    const { VideoWriter } = await import('../../src/annotate/video-writer.js');
    const w = new VideoWriter({ ffmpegPath: 'ffmpeg\0', path: join(dir, 'thrown.mp4'), width: 4, height: 2, fps: 5, order: 'rgb' });
    await expect(w.write(new Uint8Array(4 * 2 * 3))).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*null bytes/) });
    await expect(w.close()).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*null bytes/) });
    w.kill(); // (nothing to kill: no throw)
  });
});

// `ffmpeg -version` (ffmpegVersion) whose spawn throws (ENOMEM, E2BIG; a NUL stands for them):
// the throw rejected its promise, cached for the path, where every caller awaits an answer or
// none (undefined): a source whose ffmpeg ended asked it (notFfmpeg), and was rejected for good.
describe('ffmpeg -version whose spawn throws', () => {
  it('gives no answer (undefined), as a start that fails later does', async () => {
    const { ffmpegVersion } = await import('../../src/sources/ffmpeg-path.js');
    await expect(ffmpegVersion('ffmpeg\0')).resolves.toBeUndefined();
  });
});
