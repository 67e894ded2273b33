import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { formatFile, runDetect, type DetectOutput } from '../../src/tools/detect.js';
import { videoFrames } from '../../src/tools/frames.js';
import { runPreview } from '../../src/tools/preview.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { resizedClip } from '../helpers/resized-video.js';
import { HOSTILE_NAMES, TERMINAL_CONTROLS, writeHostileModel } from '../helpers/hostile-model.js';
import { modelDir } from '../helpers/onnx-graphs.js';

const dir = modelDir();
afterAll(() => dir.cleanup());

describe('argus detect and argus preview print labels from the model file for a terminal', () => {
  it('formatFile: control characters in a label are shown escaped, in the per-frame table and in the summary by label', () => {
    const det = (label: string) => ({ classId: 0, label, score: 0.9, box: [1, 2, 3, 4] as [number, number, number, number] });
    const image = formatFile({ file: 'a.jpg', width: 4, height: 4, frames: [{ index: 0, pts: 0, detections: [det(HOSTILE_NAMES[0]), det('café 人')] }] }, false);
    expect(image).not.toMatch(TERMINAL_CONTROLS);
    expect(image).toContain('\\x1b]0;TITLE\\x07\\x1b[2J\\x1b[31mRED 0.90');
    expect(image).toContain('café 人');
    const frames = Array.from({ length: 40 }, (_, index) => ({ index, pts: index / 10, detections: [det(HOSTILE_NAMES[1])] }));
    const video = formatFile({ file: 'v.mp4', width: 4, height: 4, frames }, true);
    expect(video).not.toMatch(TERMINAL_CONTROLS);
    expect(video).toContain('v\\x0btab\\x9b2J');
  });

  it('runDetect with a model whose class names hold escape sequences prints them as text (--json stays JSON-escaped)', async () => {
    const model = dir.path('hostile.onnx');
    writeHostileModel(model);
    const img = dir.path('p.jpg');
    await sharp({ create: { width: 640, height: 360, channels: 3, background: { r: 90, g: 90, b: 90 } } }).jpeg().toFile(img);
    let text = '';
    const r = await runDetect([img], { model, score: 0.1, write: (s) => (text += s) });
    expect(r.files[0].frames[0].detections.map((d) => d.label).sort()).toEqual([...HOSTILE_NAMES].sort());
    expect(text).not.toMatch(TERMINAL_CONTROLS);
    expect(text).toContain('\\x1b]0;TITLE\\x07');
    expect(text).toContain('café 人');
    let json = '';
    await runDetect([img], { model, score: 0.1, json: true, write: (s) => (json += s) });
    expect(json).toContain('\\u001b]0;TITLE\\u0007');
  });

  it('runPreview prints the labels of a hostile model as text', async () => {
    const model = dir.path('hostile-preview.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-text-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${PERSON_VIDEO}`, 'model:', `  path: ${model}`, 'postprocess:', '  scoreThreshold: 0.1', ''].join('\n'));
    let text = '';
    await runPreview(yaml, { out: join(work, 'p.png'), write: (s) => (text += s) });
    expect(text).toContain('\\x1b]0;TITLE\\x07');
    expect(text).not.toMatch(TERMINAL_CONTROLS);
  }, 60_000);

  it('a video whose resolution changes mid-stream: detect letterboxes every frame at its own size (JSON: the frames of another size than the first say theirs; the copy places them in its size)', async () => {
    const model = dir.path('hostile-resized.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-detect-resized-'));
    const { joined } = resizedClip(resolveFfmpegSync().path, work);
    let json = '';
    const out = join(work, 'annotated.mp4');
    await runDetect([joined], { model, score: 0.1, json: true, out, write: (s) => (json += s) });
    const file = (JSON.parse(json) as DetectOutput).files[0];
    expect([file.width, file.height, file.error]).toEqual([320, 240, undefined]);
    const later = file.frames.filter((f) => f.pts >= 1);
    expect(later.length).toBeGreaterThan(0);
    for (const f of file.frames) expect([f.width, f.height]).toEqual(f.pts >= 1 ? [160, 160] : [undefined, undefined]);
    // Boxes in each frame's own pixels.
    for (const f of later) for (const d of f.detections) expect(Math.max(d.box[2], d.box[3])).toBeLessThanOrEqual(160);
    const copy: string[] = [];
    for await (const f of videoFrames({ ffmpegPath: resolveFfmpegSync().path, url: out })) copy.push(`${f.width}x${f.height}`);
    expect(new Set(copy)).toEqual(new Set(['320x240']));
  }, 60_000);

  it('…and preview draws the frame at --at at its own size', async () => {
    const model = dir.path('hostile-resized-preview.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-resized-'));
    const { joined } = resizedClip(resolveFfmpegSync().path, work);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${joined}`, 'model:', `  path: ${model}`, ''].join('\n'));
    let text = '';
    const r = await runPreview(yaml, { out: join(work, 'p.png'), at: 1.5, write: (s) => (text += s) });
    expect([r.at, r.width, r.height]).toEqual([1.5, 160, 160]);
    expect(text.split('\n')[0]).toContain('at 1.50 s, 160x160');
    expect((await sharp(join(work, 'p.png')).metadata()).width).toBe(160);
  }, 60_000);

  it('runPreview of a still image at any --at shows its one frame, and says so (it had "no frame there" past 0.04 s)', async () => {
    const model = dir.path('hostile-preview-still.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-still-'));
    const img = join(work, 'still.jpg');
    await sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 90, g: 90, b: 90 } } }).jpeg().toFile(img);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: pic', `    uri: ${img}`, 'model:', `  path: ${model}`, ''].join('\n'));
    for (const at of [0, 3, 1000]) {
      let text = '';
      const r = await runPreview(yaml, { out: join(work, `p${at}.png`), at, write: (s) => (text += s) });
      expect([r.at, r.width, r.height]).toEqual([0, 320, 240]);
      expect(text.split('\n')[0]).toBe(`${join(work, `p${at}.png`)}: source "pic" at 0.00 s, 320x240${at > 0 ? ` (a still image: its one frame, whatever --at ${at} says)` : ''}`);
      expect((await sharp(join(work, `p${at}.png`)).metadata()).width).toBe(320);
    }
  }, 60_000);

  it("runPreview reads an rtsps:// camera through argus's relay, which checks its certificate (ffmpeg alone checks none): the relay's word on the camera is in the error", async () => {
    const model = dir.path('hostile-preview-rtsps.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-rtsps-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', '    uri: "rtsps://u:pw@127.0.0.1:9/live"', 'model:', `  path: ${model}`, ''].join('\n'));
    await expect(runPreview(yaml, { out: join(work, 'p.png'), write: () => {} })).rejects.toMatchObject({ message: expect.stringMatching(/rtsps:\/\/\*\*\*@127\.0\.0\.1:9\/live[^]*\ncamera: 127\.0\.0\.1:9: (connect )?ECONNREFUSED/) });
  }, 60_000);
});

describe('argus detect given a URL', () => {
  it('says it reads local files, not URLs, and what to do instead (it was "file not found: https://…"), before any model loads', async () => {
    for (const url of ['https://example.com/photo.jpg', 'rtsp://10.0.0.9/stream1']) {
      await expect(runDetect([url], { write: () => undefined })).rejects.toMatchObject({
        code: 'VAP_ERR_SOURCE_OPEN',
        message: `detect: ${url}: detect reads local files, not URLs: download the file first, or name a camera as a source of a pipeline and look at it with argus preview`,
      });
    }
    await expect(runDetect(['no-such-photo.jpg'], { write: () => undefined })).rejects.toMatchObject({ message: 'detect: file not found: no-such-photo.jpg' });
  });
});

describe('argus preview of a named pipe (it can be read only once)', () => {
  it('--at beyond its end: "beyond the end", whose last frame, at once; --at within it: that frame (it was read again after a seek that found nothing, and the second ffmpeg waited for a writer long gone: VAP_ERR_SOURCE_TIMEOUT 15 s later)', async () => {
    const model = dir.path('hostile-fifo-preview.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-fifo-'));
    const clip = join(work, 'clip.ts');
    execFileSync(resolveFfmpegSync().path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-frames:v', '10', '-pix_fmt', 'yuv420p', '-f', 'mpegts', clip]);
    const fifo = join(work, 'cam.fifo');
    execFileSync('mkfifo', [fifo]);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${fifo}`, 'model:', `  path: ${model}`, ''].join('\n'));
    const preview = async (at: number) => {
      const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', clip, fifo], { stdio: 'ignore' });
      try {
        return await runPreview(yaml, { out: join(work, 'p.png'), at, write: () => {} });
      } finally {
        writer.kill();
      }
    };
    const t0 = Date.now();
    await expect(preview(5)).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringMatching(/beyond the end of source "cam" .*, whose last frame is at 0\.90 s/) });
    expect(Date.now() - t0).toBeLessThan(12_000);
    expect((await preview(0.5)).at).toBeCloseTo(0.5, 6);
  }, 60_000);
});


describe("argus preview passes the source's inputArgs to ffmpeg, as a run does", () => {
  it('a raw video file described by its inputArgs (-f rawvideo -video_size -pixel_format -framerate) is shown (ffmpeg was given none of them: "Invalid data")', async () => {
    const model = dir.path('hostile-raw-preview.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-raw-'));
    const raw = join(work, 'cam.raw');
    execFileSync(resolveFfmpegSync().path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x48:rate=10', '-frames:v', '5', '-f', 'rawvideo', '-pix_fmt', 'rgb24', raw]);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: ${raw}`, '    inputArgs: [-f, rawvideo, -video_size, 64x48, -pixel_format, rgb24, -framerate, 10]', 'model:', `  path: ${model}`, ''].join('\n'));
    const r = await runPreview(yaml, { out: join(work, 'p.png'), at: 0.2, write: () => {} });
    expect([r.at, r.width, r.height]).toEqual([0.2, 64, 48]);
  }, 60_000);
});
