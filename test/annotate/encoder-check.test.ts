// argus check's look at the ffmpeg the annotated video is written with: bounded, whatever that program does.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingH264Encoder } from '../../src/annotate/video-writer.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-encoders-'));
const program = (name: string, body: string) => {
  const file = join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
};

describe('missingH264Encoder', () => {
  it('a program that ignores SIGTERM and answers late with nothing: "no answer" within the bound, not "has no libx264" once it exits', async () => {
    const slow = program('deaf-ffmpeg', 'trap "" TERM\nsleep 6');
    const t0 = performance.now();
    const why = await missingH264Encoder(slow, 300);
    expect(performance.now() - t0).toBeLessThan(4000);
    expect(why).toBe(`${slow} did not list its encoders (no answer within 0.3 s)`);
  });

  it("a program whose child holds its output (a wrapper's): at the bound its pipes are closed, not left open until that child ends", async () => {
    const wrapper = program('wrapper-ffmpeg', 'sleep 8');
    const pipes = () => process.getActiveResourcesInfo().filter((r) => r === 'PipeWrap').length;
    const before = pipes();
    expect(await missingH264Encoder(wrapper, 300)).toMatch(/no answer within 0\.3 s/);
    await new Promise((r) => setTimeout(r, 200));
    // (sleep, the wrapper's child, still holds them: they kept argus check's loop alive for 8 s.)
    expect(pipes()).toBeLessThanOrEqual(before);
  });

  it('an answer that lists libx264: nothing to say; one without it: said', async () => {
    expect(await missingH264Encoder(program('good', 'echo " V....D libx264              libx264 H.264"'), 5000)).toBeUndefined();
    expect(await missingH264Encoder(program('bare', 'echo " V....D mpeg4                MPEG-4 part 2"'), 5000)).toMatch(/has no libx264 encoder/);
    expect(await missingH264Encoder(join(dir, 'absent'), 5000)).toMatch(/did not list its encoders \(ENOENT\)/);
  });
});
