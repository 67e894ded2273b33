// A spawn that throws (node throws ENOMEM and E2BIG rather than emitting them as it does EMFILE and
// EAGAIN) is told in one place: spawnOwned gives a child that never started, its 'error' event on
// the next tick saying why, and each caller tells it by the listener it has for a start that fails
// later, as its own coded error. Each caller caught the throw apart (and one that forgot would end
// the run). Here node's spawn is made to throw ENOMEM for one path.
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { lastValueFrom } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';

const THROWS = '/nonexistent/argus-spawn-throws/ffmpeg';
vi.mock('node:child_process', async (original) => {
  const real = await original<typeof import('node:child_process')>();
  return {
    ...real,
    spawn: (...a: Parameters<typeof real.spawn>) => {
      if (a[0] === THROWS) throw Object.assign(new Error('spawn ENOMEM'), { code: 'ENOMEM', errno: -12, syscall: 'spawn' });
      return real.spawn(...a);
    },
  };
});

const { spawnOwned } = await import('../../src/core/children.js');
const { ffmpegSource } = await import('../../src/sources/ffmpeg-source.js');
const { videoFrames } = await import('../../src/tools/frames.js');
const { VideoWriter } = await import('../../src/annotate/video-writer.js');

const signals = (): number[] => ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'].map((s) => process.listenerCount(s));

describe('a spawn that throws (ENOMEM)', () => {
  it('spawnOwned does not throw: its child never started (no pid), its error event says why, no stop signal held for it', async () => {
    const before = signals();
    const child = spawnOwned(THROWS, ['-version'], { stdio: ['ignore', 'pipe', 'pipe'] });
    expect(child.pid).toBeUndefined();
    expect(child.stdout).toBeNull();
    const error = await new Promise<NodeJS.ErrnoException>((res) => child.once('error', res));
    expect(error).toMatchObject({ code: 'ENOMEM', message: 'spawn ENOMEM' });
    expect(signals()).toEqual(before);
  });

  it("a source's ffmpeg: VAP_ERR_SOURCE_SPAWN (retried, as EMFILE is) naming ENOMEM, not a throw", async () => {
    const err = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: 'rtsp://cam.invalid/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
        output: { width: 32, height: 32, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
        ffmpegPath: THROWS,
        memo: { readsOnce: false },
      }),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', message: expect.stringMatching(/could not start ffmpeg \(.*\): spawn ENOMEM/) });
  });

  it('argus detect and preview (videoFrames): VAP_ERR_SOURCE_SPAWN naming ENOMEM, no stop signal left held', async () => {
    const before = signals();
    let error: unknown;
    try {
      for await (const _ of videoFrames({ ffmpegPath: THROWS, url: join(tmpdir(), 'argus-none.mp4'), readsOnce: false }));
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'VAP_ERR_SOURCE_SPAWN', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
    expect(signals()).toEqual(before);
  });

  it("the annotated video's encoder: VAP_ERR_SINK_FILE naming ENOMEM at write and close, not a throw of its constructor", async () => {
    const w = new VideoWriter({ ffmpegPath: THROWS, path: join(tmpdir(), 'argus-never.mp4'), width: 4, height: 2, fps: 5, order: 'rgb' });
    await expect(w.write(new Uint8Array(4 * 2 * 3))).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
    await expect(w.close()).rejects.toMatchObject({ code: 'VAP_ERR_SINK_FILE', message: expect.stringMatching(/could not start ffmpeg .*ENOMEM/) });
  });
});
