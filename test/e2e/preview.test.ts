import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { MIRROR, PERSON_VIDEO } from '../helpers/assets.js';
import { ARGUS, MODEL_RUN_TIMEOUT_MS, runCommand } from '../helpers/cli.js';

// Each test runs the CLI with the real model: the bound only ends a hang; nothing here asserts on speed.
const TIMEOUT = MODEL_RUN_TIMEOUT_MS + 60_000;
const argus = (args: string[]) => runCommand(process.execPath, [ARGUS, ...args]);

/** The same frame ffmpeg decodes at `at` seconds, as raw RGB, to compare the drawing with. */
async function frameAt(at: number): Promise<Buffer> {
  const out = join(mkdtempSync(join(tmpdir(), 'argus-frame-')), 'f.png');
  const r = await runCommand(defaultFfmpegPath(), ['-v', 'error', '-ss', String(at), '-i', PERSON_VIDEO, '-frames:v', '1', out]);
  expect(r.code).toBe(0);
  return sharp(out).removeAlpha().raw().toBuffer();
}

describe('argus preview (real video, real model)', () => {
  it('draws one full-size frame with the zones, lines, filters and detections, and prints their pixel coordinates', async () => {
    // A fresh pipeline file: the zone and line belong to the source listed last, chosen with --source.
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(
      file,
      [
        'sources:',
        '  - id: first',
        `    uri: ${PERSON_VIDEO}`,
        '  - id: cam',
        `    uri: ${PERSON_VIDEO}`,
        '    zones:',
        '      - id: table',
        '        polygon: [[0.45, 0.80], [0.72, 0.80], [0.72, 0.97], [0.45, 0.97]]',
        '        classes: [person]',
        '    lines:',
        '      - id: door',
        '        from: [100, 300]',
        '        to: [700, 300]',
        '        units: pixel',
        '        classes: [person, dog]',
        '',
      ].join('\n'),
    );
    const out = join(dir, 'preview.png');
    const between = join(dir, 'between.png');
    const [r, b] = await Promise.all([
      argus(['preview', file, '--source', 'cam', '--at', '30', '--out', out]),
      // Between two frames of this 10 fps video: the frame shown is the one at 15.0 s, named so,
      // tracked over the 20 frames up to it (a seek to 13.05 s starts at the frame at 13.1 s).
      argus(['preview', file, '--source', 'cam', '--at', '15.05', '--out', between]),
    ]);
    expect(b.code).toBe(0);
    expect(b.stdout).toContain(`${between}: source "cam" at 15.00 s, 768x432`);
    expect(b.stdout).toMatch(/^\d+ detections? \(\d+ tracked, from 13\.10 s\)$/m);
    expect(r.stderr).not.toMatch(/argus: /);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${out}: source "cam" at 30.00 s, 768x432`);
    // Fractions placed on the frame (0.45 × 768 = 345.6, 0.80 × 432 = 345.6, …), pixels as given.
    expect(r.stdout).toContain('zone table [person]: polygon [346, 346] [553, 346] [553, 419] [346, 419] (pixels)');
    expect(r.stdout).toContain('line door [person, dog]: from [100, 300] to [700, 300] (pixels)');
    // A person stands in the room at 30 s, tracked over the frames before it.
    expect(r.stdout).toMatch(/^\s+#\d+ person\s+0\.\d\d\s+\[\d+, \d+, \d+, \d+\]$/m);

    const png = await sharp(out).metadata();
    expect([png.format, png.width, png.height]).toEqual(['png', 768, 432]);
    const [drawn, raw] = await Promise.all([sharp(out).removeAlpha().raw().toBuffer(), frameAt(30)]);
    const diff = (x: number, y: number) => {
      const o = (y * 768 + x) * 3;
      return Math.abs(drawn[o] - raw[o]) + Math.abs(drawn[o + 1] - raw[o + 1]) + Math.abs(drawn[o + 2] - raw[o + 2]);
    };
    // The zone is tinted inside; the line is drawn along y = 300; the in arrow (up from the
    // middle, the left of from→to) is green; the bottom-right corner is the video's own.
    expect(diff(450, 400)).toBeGreaterThan(20);
    expect(diff(150, 300)).toBeGreaterThan(60);
    const arrow = (y: number) => drawn[(y * 768 + 400) * 3 + 1] > 180 && drawn[(y * 768 + 400) * 3] < 120;
    expect([280, 285, 290].some(arrow)).toBe(true);
    expect([310, 315, 320].some(arrow)).toBe(false);
    let same = 0;
    for (let y = 0; y < 432; y++) for (let x = 0; x < 768; x++) if (diff(x, y) < 24) same++;
    expect(same / (768 * 432)).toBeGreaterThan(0.5);
  }, TIMEOUT);

  it('--at in files whose seek is not frame-exact: MPEG-TS (lands on a later key frame) and raw H.264 (no frame after a seek) show the frame at that time, with its tracking history', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-seek-'));
    // The bottle clip's key frames are 8.38 s apart: a seek into its MPEG-TS copy landed on 8.38 s for 5 s.
    const cases = [
      { file: join(dir, 'cam.ts'), from: `${MIRROR}/streams/bottle-detection.mp4`, extra: [] as string[], at: 5, lo: 4.95, hi: 5.01 },
      { file: join(dir, 'cam.h264'), from: PERSON_VIDEO, extra: ['-bsf:v', 'h264_mp4toannexb', '-f', 'h264'], at: 8, lo: 7.85, hi: 8.05 },
    ];
    for (const c of cases) {
      const r = await runCommand(defaultFfmpegPath(), ['-v', 'error', '-t', '12', '-i', c.from, '-an', '-c', 'copy', ...c.extra, c.file]);
      expect(r.code).toBe(0);
      const yaml = `${c.file}.yaml`;
      writeFileSync(yaml, `sources:\n  - id: cam\n    uri: ${c.file}\n`);
      const p = await argus(['preview', yaml, '--at', String(c.at), '--out', join(dir, 'x.png')]);
      expect(p.stderr).toBe('');
      expect(p.code).toBe(0);
      const shown = Number(/source "cam" at (\d+\.\d\d) s/.exec(p.stdout)?.[1]);
      expect(shown).toBeGreaterThanOrEqual(c.lo);
      expect(shown).toBeLessThanOrEqual(c.hi);
      // With the frames of the 2 s before it tracked.
      expect(Number(/tracked, from (\d+\.\d\d) s\)/.exec(p.stdout)?.[1])).toBeLessThan(c.at - 0.5);
    }
  }, TIMEOUT);

  it('--at in two MPEG-TS recordings joined with cat (each with its own timestamps): ffmpeg\'s length of the first part is not believed; the frame there is shown, and past the last frame is refused naming it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-joined-'));
    const parts = [join(dir, 'a.ts'), join(dir, 'b.ts')];
    for (const [i, part] of parts.entries()) {
      const r = await runCommand(defaultFfmpegPath(), ['-v', 'error', '-ss', String(3 * i), '-t', '3', '-i', PERSON_VIDEO, '-an', '-vf', 'scale=384:216', '-c:v', 'libx264', '-g', '10', '-f', 'mpegts', part]);
      expect(r.code).toBe(0);
    }
    const joined = join(dir, 'joined.ts');
    writeFileSync(joined, Buffer.concat(parts.map((p) => readFileSync(p))));
    const yaml = join(dir, 'p.yaml');
    writeFileSync(yaml, `sources:\n  - id: cam\n    uri: ${joined}\n`);
    const [inSecond, past] = await Promise.all([argus(['preview', yaml, '--at', '4.5', '--out', join(dir, 'x.png')]), argus(['preview', yaml, '--at', '8', '--out', join(dir, 'y.png')])]);
    expect(inSecond.stderr).toBe('');
    expect(inSecond.code).toBe(0);
    expect(inSecond.stdout).toContain('source "cam" at 4.50 s, 384x216');
    expect(Number(/tracked, from (\d+\.\d\d) s\)/.exec(inSecond.stdout)?.[1])).toBeLessThan(4);
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/VAP_ERR_CONFIG: preview --at 8: beyond the end of source "cam" .*, whose last frame is at 5\.9\d s/);
  }, TIMEOUT);

  it('without --source: the first enabled source (a switched-off one would not run)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-enabled-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(file, `sources:\n  - id: lobby\n    uri: ${PERSON_VIDEO}\n    enabled: false\n  - id: hall\n    uri: ${PERSON_VIDEO}\n`);
    const r = await argus(['preview', file, '--out', join(dir, 'x.png')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(': source "hall" at 0.00 s');
  }, TIMEOUT);

  it('errors are coded: a missing pipeline file, an unknown --source (the ids listed), --at past the end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-'));
    const file = join(dir, 'p.yaml');
    writeFileSync(file, `sources:\n  - id: lobby\n    uri: ${PERSON_VIDEO}\n  - id: hall\n    uri: ${PERSON_VIDEO}\n`);
    const out = join(dir, 'x.png');
    const [missing, unknown, late, infinite, empty, huge] = await Promise.all([
      argus(['preview', join(dir, 'none.yaml'), '--out', out]),
      argus(['preview', file, '--source', 'garage', '--out', out]),
      argus(['preview', file, '--at', '1000', '--out', out]),
      argus(['preview', file, '--at', 'Infinity', '--out', out]),
      argus(['preview', file, '--at', '', '--out', out]),
      // Past what ffmpeg takes for a seek (and printed with an exponent by toFixed).
      argus(['preview', file, '--at', '1e21', '--out', out]),
    ]);
    // Not a time at all: refused by the argument parser, before ffmpeg is asked.
    for (const r of [infinite, empty]) {
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/--at <seconds>.*expected seconds, 0 or more/);
    }
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('VAP_ERR_CONFIG_FILE');
    expect(missing.stderr).toContain('none.yaml');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('VAP_ERR_CONFIG');
    expect(unknown.stderr).toContain('garage');
    expect(unknown.stderr).toContain('lobby, hall');
    expect(late.code).toBe(2);
    expect(late.stderr).toContain('VAP_ERR_CONFIG');
    expect(late.stderr).toMatch(/--at 1000: beyond the end of source "lobby" .* lasts 139\.\d\d s/);
    expect(huge.code).toBe(2);
    expect(huge.stderr).toMatch(/VAP_ERR_CONFIG: preview --at 1e\+21: beyond the end of source "lobby" .* lasts 139\.\d\d s/);
  }, TIMEOUT);

  it('--out never replaces what the preview reads, and names what is wrong with it before anything is read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-preview-out-'));
    // A still image is a source too: its own name is a valid --out.
    const photo = join(dir, 'photo.jpg');
    copyFileSync(`${MIRROR}/images/000000000139.jpg`, photo);
    const before = readFileSync(photo);
    const file = join(dir, 'p.yaml');
    writeFileSync(file, 'sources:\n  - id: still\n    uri: photo.jpg\n');
    mkdirSync(join(dir, 'folder'));
    const [overPhoto, overLink, folder, gif, nested] = await Promise.all([
      argus(['preview', file, '--out', photo]),
      // Another name for it: a symlink.
      (symlinkSync(photo, join(dir, 'link.jpg')), argus(['preview', file, '--out', join(dir, 'link.jpg')])),
      argus(['preview', file, '--out', join(dir, 'folder')]),
      argus(['preview', file, '--out', join(dir, 'x.gif')]),
      argus(['preview', file, '--out', join(dir, 'new', 'sub', 'x.png')]),
    ]);
    for (const r of [overPhoto, overLink]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/VAP_ERR_SINK_FILE.*would be written over .*photo\.jpg, which the preview reads/);
    }
    expect(readFileSync(photo).equals(before)).toBe(true);
    expect(folder.code).toBe(2);
    expect(folder.stderr).toMatch(/VAP_ERR_SINK_FILE: preview --out .*folder: is a folder/);
    expect(gif.code).toBe(2);
    expect(gif.stderr).toMatch(/VAP_ERR_SINK_FILE: preview --out .*x\.gif: the preview is a picture: name a \.png, \.jpg or \.jpeg file/);
    expect(existsSync(join(dir, 'x.gif'))).toBe(false);
    // A missing parent folder is made.
    expect(nested.stderr).not.toMatch(/argus: /);
    expect(nested.code).toBe(0);
    expect((await sharp(join(dir, 'new', 'sub', 'x.png')).metadata()).format).toBe('png');
  }, TIMEOUT);
});
