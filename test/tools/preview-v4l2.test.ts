// argus preview opens a V4L2 camera as a run does (buildFfmpegArgs, through the one rule of
// sourceInput): `-f v4l2` and the device's path, `v4l2://` taken off. It handed ffmpeg
// `file:/dev/video0` without `-f v4l2`, and `v4l2:///dev/video0` as it was (Protocol not found).
// No camera here: /dev/null is a character device ffmpeg opens (and its v4l2 demuxer then refuses),
// and every ffmpeg's command line is recorded.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildFfmpegArgs, DEFAULT_DECODE } from '../../src/sources/ffmpeg-args.js';
import { runDetect } from '../../src/tools/detect.js';
import { runPreview } from '../../src/tools/preview.js';
import { writeHostileModel } from '../helpers/hostile-model.js';
import { modelDir } from '../helpers/onnx-graphs.js';

const commands = vi.hoisted(() => [] as string[][]);
vi.mock('node:child_process', async (original) => {
  const real = await original<typeof import('node:child_process')>();
  return { ...real, spawn: (cmd: string, args: readonly string[], o: object) => (commands.push([...args]), real.spawn(cmd, args, o)) };
});

/** The options before `-i` from `-f` on, and what `-i` names. */
const inputOf = (args: readonly string[]) => {
  const i = args.indexOf('-i');
  return { format: args.slice(args.indexOf('-f'), args.indexOf('-f') + 2), input: args[i + 1], before: args.slice(0, i) };
};

describe('argus preview of a V4L2 camera', () => {
  const dir = modelDir();
  afterAll(() => dir.cleanup());

  it.each(['v4l2:///dev/null'])('%s: ffmpeg is given -f v4l2 and the device, as a run is, with the source inputArgs after them, no seek', async (uri) => {
    const model = dir.path('preview-v4l2.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-v4l2-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: "${uri}"`, '    inputArgs: [-input_format, mjpeg, -video_size, 640x480]', 'model:', `  path: ${model}`, ''].join('\n'));
    commands.length = 0;
    const err = await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} }).then(
      () => undefined,
      (e: Error) => e,
    );
    // /dev/null is no camera: ffmpeg's v4l2 demuxer refused it (before: "Protocol not found").
    expect(err).toBeDefined();
    expect(err!.message).not.toMatch(/Protocol not found/);
    const runs = commands.filter((c) => c.includes('-i'));
    expect(runs.length).toBeGreaterThan(0);
    const run = inputOf(buildFfmpegArgs({ kind: 'v4l2', url: uri, rate: 'native', loop: false, inputArgs: ['-input_format', 'mjpeg', '-video_size', '640x480'], decode: DEFAULT_DECODE }, { width: 64, height: 64, pixelFormat: 'rgb24', padValue: 114, align: 'center' }));
    expect(run.format).toEqual(['-f', 'v4l2']);
    expect(run.input).toBe('/dev/null');
    for (const c of runs) {
      const p = inputOf(c);
      expect(p.format).toEqual(run.format);
      expect(p.input).toBe(run.input);
      expect(c.join(' ')).toContain('-input_format mjpeg -video_size 640x480 -i /dev/null');
      expect(p.before).not.toContain('-ss');
    }
  }, 60_000);

  it('a /dev/videoN not there: VAP_ERR_SOURCE_OPEN saying no such device, before any ffmpeg', async () => {
    const model = dir.path('preview-v4l2-gone.onnx');
    writeHostileModel(model);
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-v4l2-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', '    uri: /dev/video987654', 'model:', `  path: ${model}`, ''].join('\n'));
    commands.length = 0;
    const err = (await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} }).then(
      () => undefined,
      (e: Error) => e,
    )) as (Error & { code?: string }) | undefined;
    expect(err?.code).toBe('VAP_ERR_SOURCE_OPEN');
    expect(err?.message).toContain('/dev/video987654 no such device');
    expect(commands.filter((c) => c.includes('-i'))).toEqual([]);
  }, 60_000);

  it('argus detect refuses a V4L2 camera by name (it reads a file to its end, keeping every frame)', async () => {
    const model = dir.path('detect-v4l2.onnx');
    writeHostileModel(model);
    commands.length = 0;
    let json = '';
    // (A device there was read as a file to its end: a camera's never comes, every frame's detections kept.)
    await runDetect(['/dev/video987654', 'v4l2:///dev/null'], { model, json: true, write: (s) => (json += s) }).catch(() => undefined);
    const out = JSON.parse(json) as { files: { error?: { code: string; message: string } }[] };
    for (const f of out.files) {
      expect(f.error?.code).toBe('VAP_ERR_SOURCE_OPEN');
      expect(f.error?.message).toContain('is a V4L2 camera, not a file');
    }
    expect(commands.filter((c) => c.includes('-i'))).toEqual([]);
  }, 60_000);
});

describe('sourceInput', () => {
  it('a /dev/videoN path and a v4l2:// URL: -f v4l2 and the path; a file by name; a URL as it is', async () => {
    const { sourceInput } = await import('../../src/sources/ffmpeg-args.js');
    expect(sourceInput('/dev/video0')).toEqual({ format: ['-f', 'v4l2'], url: '/dev/video0' });
    expect(sourceInput('V4L2:///dev/video2')).toEqual({ format: ['-f', 'v4l2'], url: '/dev/video2' });
    // udev's stable name of a camera (a link to its /dev/videoN): was a file, read through ffmpeg's file protocol.
    expect(sourceInput('/dev/v4l/by-id/usb-046d_HD_Webcam_C615-video-index0')).toEqual({ format: ['-f', 'v4l2'], url: '/dev/v4l/by-id/usb-046d_HD_Webcam_C615-video-index0' });
    expect(sourceInput('/dev/v4l/by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0').format).toEqual(['-f', 'v4l2']);
    expect(sourceInput('/dev/v4l/x.mp4').format).toEqual([]);
    expect(sourceInput('cam-1:2.mp4')).toEqual({ format: [], url: 'file:cam-1:2.mp4' });
    expect(sourceInput('rtsp://h/x')).toEqual({ format: [], url: 'rtsp://h/x' });
  });
});
