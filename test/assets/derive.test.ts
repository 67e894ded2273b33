import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { deriveModel, resolveStream, transcodeClip } from '../../src/assets/catalog.js';
import { isArgusError } from '../../src/core/errors.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import '../helpers/assets.js';

const run = promisify(execFile);
const ffmpeg = defaultFfmpegPath();
let dir: string;
let src: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'argus-derive-'));
  src = join(dir, 'src.mp4');
  // A tiny source clip: 10 frames of ffmpeg's test pattern, 160x120 at 10 fps.
  await run(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-frames:v', '10', '-c:v', 'mpeg4', '-y', src]);
});

/** An executable that logs its arguments, one run a line, then execs the real ffmpeg; `runs()` are the ones that read an input. */
function wrapper(name: string): { path: string; runs: () => string[] } {
  const path = join(dir, `ffmpeg-${name}`);
  const log = `${path}.log`;
  writeFileSync(path, `#!/bin/sh\necho "$*" >> '${log}'\nexec '${ffmpeg}' "$@"\n`, { mode: 0o755 });
  return { path, runs: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(' -i ')) : []) };
}

/** Frame size, frame count (by decoding every frame to 8-bit grey) and title of a clip, as ffmpeg reads them. */
async function inspect(file: string): Promise<{ size: string; frames: number; title?: string }> {
  const { stdout, stderr } = await run(ffmpeg, ['-hide_banner', '-i', file, '-map', '0:v', '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { encoding: 'buffer', maxBuffer: 1 << 26 });
  const log = stderr.toString();
  const size = /Stream #0:0.*Video: .*?, (\d+)x(\d+)/.exec(log);
  if (!size) throw new Error(`no video stream in ${file}: ${log}`);
  return { size: `${size[1]}x${size[2]}`, frames: stdout.length / (Number(size[1]) * Number(size[2])), title: /^\s*title\s*: (.*)$/m.exec(log)?.[1] };
}

describe('transcodeClip (derived clips, through fluent-ffmpeg)', () => {
  it('makes the clip with the catalogue ffmpegArgs as output options, each passed as given', async () => {
    const out = join(dir, 'small.mp4');
    await transcodeClip(src, out, ['-vf', 'scale=64:48', '-frames:v', '6', '-c:v', 'mpeg4', '-metadata', 'title=two words', '-an'], ffmpeg);
    // 'title=two words' reaching ffmpeg whole (not split at its space) shows the options went through unchanged.
    expect(await inspect(out)).toEqual({ size: '64x48', frames: 6, title: 'two words' });
    expect(readdirSync(dir).sort()).toEqual(['small.mp4', 'src.mp4']);
  });

  it('bad ffmpegArgs: VAP_ERR_SOURCE_EXIT naming the file, with ffmpeg stderr; nothing left behind', async () => {
    const out = join(dir, 'broken.mp4');
    const e = await transcodeClip(src, out, ['-vf', 'nosuchfilter=1'], ffmpeg).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_SOURCE_EXIT')).toBe(true);
    expect((e as Error).message).toMatch(/^deriving broken\.mp4: ffmpeg exited with code \d+: .*nosuchfilter/s);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('broken'))).toEqual([]);
  });

  it('runs the ffmpeg it is given (ffmpegPath), with the options in order', async () => {
    const w = wrapper('given');
    const out = join(dir, 'via-wrapper.mp4');
    await transcodeClip(src, out, ['-frames:v', '3', '-c:v', 'mpeg4'], w.path);
    expect(w.runs()).toEqual([`-hide_banner -nostdin -loglevel error -i ${src} -y -frames:v 3 -c:v mpeg4 ${out}.part-${process.pid}.mp4`]);
    expect((await inspect(out)).frames).toBe(3);
  });

  it('no ffmpeg at ffmpegPath: VAP_ERR_SOURCE_OPEN naming the file and the path', async () => {
    const missing = join(dir, 'no-ffmpeg-here');
    const e = await transcodeClip(src, join(dir, 'nowhere.mp4'), ['-c:v', 'mpeg4'], missing).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_SOURCE_OPEN')).toBe(true);
    expect((e as Error).message).toBe(`deriving nowhere.mp4: cannot run ffmpeg at ${missing} (\`ffmpeg -version\` failed)`);
  });

  it('two derivations started together with different ffmpeg paths each run with their own', async () => {
    // fluent-ffmpeg holds one ffmpeg path for the whole process; run together, both would use the last one set.
    const [a, b] = [wrapper('a'), wrapper('b')];
    await Promise.all([
      transcodeClip(src, join(dir, 'by-a.mp4'), ['-frames:v', '2', '-c:v', 'mpeg4'], a.path),
      transcodeClip(src, join(dir, 'by-b.mp4'), ['-frames:v', '2', '-c:v', 'mpeg4'], b.path),
    ]);
    expect(a.runs().map((r) => r.split(' ').at(-1))).toEqual([`${join(dir, 'by-a.mp4')}.part-${process.pid}.mp4`]);
    expect(b.runs().map((r) => r.split(' ').at(-1))).toEqual([`${join(dir, 'by-b.mp4')}.part-${process.pid}.mp4`]);
    expect((await inspect(join(dir, 'by-b.mp4'))).frames).toBe(2);
  });

  it('a cache where the folder of derived clips cannot be made: VAP_ERR_ASSET_FILE naming it and what to do (it was a bare EEXIST)', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'argus-derive-cache-'));
    writeFileSync(join(cache, 'derived'), 'a file where the folder goes');
    const e = await resolveStream('person-1080p30.mp4', ffmpeg, { cache, progress: false }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_ASSET_FILE')).toBe(true);
    expect((e as Error).message).toMatch(new RegExp(`^asset "person-1080p30\\.mp4": cannot create the folder of derived clips ${join(cache, 'derived').replace(/[.]/g, '\\.')} \\((EEXIST|ENOTDIR)\\): .*ARGUS_CACHE`));
  }, 60_000);
});

describe('deriveModel (the dyn, fp16 and int8 variants of a manifest)', () => {
  it('an installation without scripts/derive-models.sh (the Docker image): a coded error naming the variant, the missing script and model.path (it was an uncoded ENOENT)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'argus-noscripts-'));
    const e = await deriveModel('yolox-nano', 'dyn', { root, cache: join(root, 'cache') }).catch((x: unknown) => x);
    expect(isArgusError(e, 'VAP_ERR_MODEL_LOAD')).toBe(true);
    expect((e as Error).message).toContain('yolox_nano.dyn.onnx (the dyn variant of yolox-nano)');
    expect((e as Error).message).toContain(`lacks (${join(root, 'scripts', 'derive-models.sh')})`);
    expect((e as Error).message).toContain('model.path');
    expect(existsSync(join(root, 'cache'))).toBe(false);
  });
});
