import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { videoFrames } from '../../src/tools/frames.js';

const ffmpeg = resolveFfmpegSync().path;
let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  server?.close();
  server = undefined;
});

/** A server on loopback that accepts connections and never answers (a camera that hangs). */
async function silentServer(): Promise<number> {
  server = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

describe('videoFrames (argus detect, argus preview): a source that never sends', () => {
  it.each([
    ['http', (port: number) => `http://127.0.0.1:${port}/cam.ts`],
    ['rtsp', (port: number) => `rtsp://127.0.0.1:${port}/cam`],
  ])('%s: accepted and then silent: VAP_ERR_SOURCE_TIMEOUT after stallMs, ffmpeg stopped, instead of waiting forever', async (_kind, url) => {
    const port = await silentServer();
    const u = url(port);
    let err: unknown;
    try {
      for await (const _f of videoFrames({ ffmpegPath: ffmpeg, url: u, stallMs: 500 })) throw new Error('no frame was expected');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_TIMEOUT');
    expect((err as Error).message).toBe(`no frame came from ${u} within 0.5 s`);
    expect(sockets.length).toBeGreaterThan(0); // ffmpeg had connected
  }, 30_000);
});
