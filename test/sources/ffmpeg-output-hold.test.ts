import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildFfmpegArgs, frameBytes, outputTag } from '../../src/sources/ffmpeg-args.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';

/**
 * ffmpeg's rawvideo output "encoder" runs with frame threads unless told otherwise, and then
 * hands a frame on only once the next ones have come in: a live camera's frames waited 1–2
 * frame periods inside ffmpeg after decoding. Here the input is a pipe the test writes: one
 * frame in must come out with no second frame behind it (no timing involved; the limit only
 * ends the wait when it never comes).
 */
describe('ffmpeg delivers each frame without waiting for the next one', () => {
  it('a live source\'s one frame comes out of ffmpeg while its input holds nothing more', async () => {
    const out = { width: 64, height: 64, pixelFormat: 'bgr24' as const, align: 'center' as const, padValue: 114 };
    const input = { url: 'pipe:0', kind: 'stream' as const, rate: 'native' as const, loop: false, inputArgs: ['-f', 'rawvideo', '-pix_fmt', 'gray', '-s', '64x48', '-r', '10'] };
    const args = buildFfmpegArgs(input, out, outputTag()).map((a) => (a.startsWith('pipe:argus-') ? 'pipe:1' : a));
    const child = spawn(defaultFfmpegPath(), args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let bytes = 0;
    const one = frameBytes(out, 64, 48);
    const came = new Promise<boolean>((resolve) => {
      child.stdout.on('data', (d: Buffer) => {
        bytes += d.length;
        if (bytes >= one) resolve(true);
      });
      setTimeout(() => resolve(false), 30_000);
    });
    child.stdin.write(Buffer.alloc(64 * 48, 128));
    const delivered = await came;
    child.stdin.end();
    child.kill('SIGKILL');
    expect(delivered).toBe(true);
  }, 60_000);
});
