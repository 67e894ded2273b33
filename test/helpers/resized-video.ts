import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An MPEG-TS clip whose resolution changes mid-stream, as a camera's profile switch records it:
 * 10 frames of 320x240, then 10 of 160x160 (10 fps, testsrc's frame counter: every frame
 * differs), one stream with its timestamps running on, each part starting with a key frame (no
 * B-frames: each part's timestamps follow the last one's). Written into `dir`: `joined`, and its
 * second part alone (`second`).
 */
export function resizedClip(ffmpeg: string, dir: string): { joined: string; second: string } {
  const part = (size: string, offset: number, out: string) =>
    execFileSync(ffmpeg, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc=size=${size}:rate=10`, '-frames:v', '10', '-c:v', 'libx264', '-bf', '0', '-g', '10', '-pix_fmt', 'yuv420p', '-output_ts_offset', String(offset), '-f', 'mpegts', out]);
  const first = join(dir, 'resized-a.ts');
  const second = join(dir, 'resized-b.ts');
  part('320x240', 0, first);
  part('160x160', 1, second);
  const joined = join(dir, 'resized.ts');
  writeFileSync(joined, Buffer.concat([readFileSync(first), readFileSync(second)]));
  return { joined, second };
}
