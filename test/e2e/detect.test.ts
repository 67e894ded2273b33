import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import type { DetectOutput } from '../../src/tools/detect.js';
import { MIRROR } from '../helpers/assets.js';
import { ARGUS, MODEL_RUN_TIMEOUT_MS, runClosingAfterFirstLine, runCommand } from '../helpers/cli.js';

// Each test runs the CLI with the real model: the bound only ends a hang; nothing here asserts on speed.
const TIMEOUT = MODEL_RUN_TIMEOUT_MS + 60_000;
const argus = (args: string[]) => runCommand(process.execPath, [ARGUS, ...args]);
const tmp = () => mkdtempSync(join(tmpdir(), 'argus-detect-'));

const TV_ROOM = `${MIRROR}/images/000000000139.jpg`; // a living room: a tv, chairs, people
const STREET = `${MIRROR}/images/000000001268.jpg`; // people in a street
const GIF = `${MIRROR}/streams/bolt-multi-size-detection.gif`; // 480x270, 15 fps, 37 frames

async function decoded(path: string) {
  return sharp(path).removeAlpha().raw().toBuffer({ resolveWithObject: true });
}

describe('argus detect --json (real model)', () => {
  it('prints exactly one JSON document: model, then per file its size and one frame of detections in source pixels', async () => {
    const r = await argus(['detect', '--json', TV_ROOM, STREET]);
    expect(r.stderr).not.toMatch(/argus: /);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as DetectOutput; // throws on anything but one document
    expect(doc.model).toBe('yolox-nano');
    expect(doc.files.map((f) => f.file)).toEqual([TV_ROOM, STREET]);
    for (const f of doc.files) {
      const meta = await sharp(f.file).metadata();
      expect([f.width, f.height]).toEqual([meta.width, meta.height]);
      expect(f.frames).toHaveLength(1);
      expect(f.frames[0]).toMatchObject({ index: 0, pts: 0 });
      for (const d of f.frames[0].detections) {
        expect(Object.keys(d).sort()).toEqual(['box', 'classId', 'label', 'score']);
        expect(d.score).toBeGreaterThanOrEqual(0.3);
        const [x1, y1, x2, y2] = d.box;
        expect(x1).toBeGreaterThanOrEqual(0);
        expect(y1).toBeGreaterThanOrEqual(0);
        expect(x2).toBeLessThanOrEqual(f.width);
        expect(y2).toBeLessThanOrEqual(f.height);
        expect(x2).toBeGreaterThan(x1);
        expect(y2).toBeGreaterThan(y1);
      }
    }
    const labels = (i: number) => doc.files[i].frames[0].detections.map((d) => d.label);
    expect(labels(0)).toContain('tv');
    expect(labels(1).filter((l) => l === 'person').length).toBeGreaterThanOrEqual(3);
    // Scores and boxes are printed as computed, not rounded.
    const values = doc.files.flatMap((f) => f.frames[0].detections.flatMap((d) => [d.score, ...d.box]));
    expect(values.filter((v) => !Number.isInteger(v * 1000)).length).toBeGreaterThan(values.length / 2);
  }, TIMEOUT);

  it('--score raises the threshold: only the detections at or above it remain', async () => {
    const [all, high] = await Promise.all([argus(['detect', '--json', STREET]), argus(['detect', '--json', '--score', '0.6', STREET])]);
    expect(high.code).toBe(0);
    const dets = (out: string) => (JSON.parse(out) as DetectOutput).files[0].frames[0].detections;
    const kept = dets(all.stdout).filter((d) => d.score >= 0.6);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(dets(all.stdout).length);
    expect(dets(high.stdout).map((d) => [d.label, d.score])).toEqual(kept.map((d) => [d.label, d.score]));
  }, TIMEOUT);

  it('a GIF gives one entry per frame, with its index and its own time; --fps above its rate gives each frame once', async () => {
    const [r, huge, two] = await Promise.all([argus(['detect', '--json', GIF]), argus(['detect', '--json', '--fps', '1e9', GIF]), argus(['detect', '--json', '--fps', '2', GIF])]);
    expect(r.code).toBe(0);
    const f = (JSON.parse(r.stdout) as DetectOutput).files[0];
    expect([f.width, f.height]).toEqual([480, 270]);
    expect(f.frames).toHaveLength(37);
    f.frames.forEach((fr, i) => expect(fr.index).toBe(i));
    // The GIF's own delays (7, 6, 7 centiseconds…), not index / 15 fps.
    expect(f.frames.slice(0, 6).map((fr) => Math.round(fr.pts * 100))).toEqual([0, 7, 13, 20, 27, 33]);
    expect(Math.round(f.frames[36].pts * 100)).toBe(240);
    // ffmpeg's fps filter would repeat frames without end at 1e9 fps; sampling never repeats one.
    expect(huge.code).toBe(0);
    expect((JSON.parse(huge.stdout) as DetectOutput).files[0].frames.map((fr) => fr.pts)).toEqual(f.frames.map((fr) => fr.pts));
    // 2 fps: the first frame at or after each half second.
    expect(two.code).toBe(0);
    expect((JSON.parse(two.stdout) as DetectOutput).files[0].frames.map((fr) => Math.round(fr.pts * 100))).toEqual([0, 53, 100, 153, 200]);
  }, TIMEOUT);
});

describe('argus detect: table and annotated copies (real model)', () => {
  it('prints a table per image and writes an annotated PNG of the same size that differs on the boxes only', async () => {
    const out = join(tmp(), 'room.png');
    const r = await argus(['detect', TV_ROOM, '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${TV_ROOM}  640x426`);
    expect(r.stdout).toMatch(/^\s+tv\s+0\.\d\d\s+\[[\d.]+, [\d.]+, [\d.]+, [\d.]+\]$/m);
    expect(r.stdout).toContain(`annotated: ${out}`);
    const [src, ann] = await Promise.all([decoded(TV_ROOM), decoded(out)]);
    expect([ann.info.width, ann.info.height, ann.info.format]).toEqual([640, 426, 'raw']);
    // The detections, to find a box edge.
    const doc = JSON.parse((await argus(['detect', '--json', TV_ROOM])).stdout) as DetectOutput;
    const tv = doc.files[0].frames[0].detections.find((d) => d.label === 'tv')!;
    const x = Math.round(tv.box[0]);
    let changedOnEdge = 0;
    for (let y = Math.ceil(tv.box[1]) + 20; y < Math.floor(tv.box[3]); y++) {
      const o = (y * 640 + x) * 3;
      if (Math.abs(ann.data[o] - src.data[o]) + Math.abs(ann.data[o + 1] - src.data[o + 1]) + Math.abs(ann.data[o + 2] - src.data[o + 2]) > 30) changedOnEdge++;
    }
    expect(changedOnEdge).toBeGreaterThan((tv.box[3] - tv.box[1] - 20) * 0.8);
    // Most of the picture is the input's (PNG is lossless; only outlines and labels are drawn).
    let same = 0;
    for (let i = 0; i < src.data.length; i += 3) if (src.data[i] === ann.data[i] && src.data[i + 1] === ann.data[i + 1] && src.data[i + 2] === ann.data[i + 2]) same++;
    expect(same / (src.data.length / 3)).toBeGreaterThan(0.6);
  }, TIMEOUT);

  it('with several files, --out is a folder of annotated copies; a GIF becomes an MP4 of its size and frame count', async () => {
    const dir = join(tmp(), 'out');
    const r = await argus(['detect', STREET, GIF, '--out', dir]);
    expect(r.code).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['000000001268.jpg', 'bolt-multi-size-detection.mp4']);
    expect((await sharp(join(dir, '000000001268.jpg')).metadata()).format).toBe('jpeg');
    const video = join(dir, 'bolt-multi-size-detection.mp4');
    // ffmpeg decodes it whole: its size, and the number of frames it decoded (the last progress report).
    const { stderr, code } = await runCommand(defaultFfmpegPath(), ['-hide_banner', '-i', video, '-f', 'null', '-']);
    expect(code).toBe(0);
    expect(stderr).toMatch(/Video: h264.*480x270/);
    const frames = [...stderr.matchAll(/frame=\s*(\d+)/g)].map((m) => Number(m[1]));
    expect(frames.at(-1)).toBe(37);
  }, TIMEOUT);

  it('--fps below one frame for the whole file: the copy lasts as long as the file (one frame of a 2.5 s GIF at --fps 0.01 made a 100 s video)', async () => {
    const video = join(tmp(), 'one.mp4');
    const r = await argus(['detect', GIF, '--fps', '0.01', '--out', video]);
    expect(r.code).toBe(0);
    const { stderr } = await runCommand(defaultFfmpegPath(), ['-hide_banner', '-i', video, '-f', 'null', '-']);
    const [, mm, ss] = /Duration: 00:(\d\d):(\d\d\.\d\d)/.exec(stderr)!;
    expect(Number(mm) * 60 + Number(ss)).toBeGreaterThan(2);
    expect(Number(mm) * 60 + Number(ss)).toBeLessThan(3);
    expect([...stderr.matchAll(/frame=\s*(\d+)/g)].map((m) => Number(m[1])).at(-1)).toBe(1);
  }, TIMEOUT);

  it("a variable-rate video (a phone's 30 fps recording at 10 fps for 2 s in the dark): each frame at its own time, the previous one repeated over the gaps, so the copy lasts as long as the file", async () => {
    const dir = tmp();
    const clip = join(dir, 'vfr.mp4');
    // 4 s: 30 frames a second, but only every third one from 1 s to 3 s (80 frames in all).
    execFileSync(defaultFfmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=30:duration=4', '-vf', "select='not(gte(t\\,1)*lt(t\\,3)*mod(n\\,3))'", '-fps_mode', 'vfr', '-c:v', 'libx264', clip]);
    const video = join(dir, 'copy.mp4');
    const r = await argus(['detect', clip, '--out', video]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('80 frames');
    const { stderr } = await runCommand(defaultFfmpegPath(), ['-hide_banner', '-i', video, '-f', 'null', '-']);
    expect(stderr).toMatch(/Video: h264.*, 30 fps/);
    // 120 frames at 30 fps: 4 s (80 frames, 2.67 s, before: the slow part played three times too fast).
    expect([...stderr.matchAll(/frame=\s*(\d+)/g)].map((m) => Number(m[1])).at(-1)).toBe(120);
  }, TIMEOUT);

  it('a missing file is a coded error naming it, and nothing is written', async () => {
    const out = join(tmp(), 'x.png');
    const r = await argus(['detect', `${MIRROR}/images/nope.jpg`, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('VAP_ERR_SOURCE_OPEN');
    expect(r.stderr).toContain('nope.jpg');
    expect(existsSync(out)).toBe(false);
    // A folder: said so, with what to give instead (it was ffmpeg's "Is a directory").
    const folder = await argus(['detect', `${MIRROR}/images`]);
    expect(folder.code).toBe(2);
    expect(folder.stdout).toContain(`VAP_ERR_SOURCE_OPEN: detect: ${MIRROR}/images is a folder: give the files in it (${MIRROR}/images/*.jpg, …)`);
    // --json: its one document all the same, an error entry per file (it printed nothing on stdout).
    const j = await argus(['detect', '--json', `${MIRROR}/images/nope.jpg`, `${MIRROR}/images/nope2.jpg`]);
    expect(j.code).toBe(2);
    const doc = JSON.parse(j.stdout) as DetectOutput;
    expect(doc).toMatchObject({ model: 'yolox-nano', failed: 2 });
    expect(doc.files.map((f) => [f.file, f.error?.code])).toEqual([
      [`${MIRROR}/images/nope.jpg`, 'VAP_ERR_SOURCE_OPEN'],
      [`${MIRROR}/images/nope2.jpg`, 'VAP_ERR_SOURCE_OPEN'],
    ]);
    // A URL's credentials are printed as ***, in the document as in the table.
    for (const json of [true, false]) {
      const u = await argus(['detect', ...(json ? ['--json'] : []), 'rtsp://admin:s3cret@127.0.0.1:9/x', `${MIRROR}/images/nope.jpg`]);
      expect(u.stdout + u.stderr).not.toContain('s3cret');
      expect(u.stdout + u.stderr).toContain('rtsp://***@127.0.0.1:9/x');
    }
  }, TIMEOUT);

  it('a misspelt --model name is named as such, with the known manifests (not "cannot read" a file of that name)', async () => {
    const r = await argus(['detect', '--model', 'yolox-nanox', STREET]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('argus: VAP_ERR_CONFIG: --model: "yolox-nanox" is not a known manifest (known: yolox-nano, yolox-nano-dyn, yolox-nano-fp16, yolox-nano-int8) nor a file');
  }, TIMEOUT);

  it('a video cut short (an MP4 copied in part, its index whole): what was read is given, with a warning saying where its frames end of the length it claims; status 0', async () => {
    const cut = join(tmp(), 'cut.mp4');
    writeFileSync(cut, readFileSync(`${MIRROR}/streams/one-by-one-person-detection.mp4`).subarray(0, 200_000));
    const r = await argus(['detect', '--json', cut]);
    expect(r.code).toBe(0);
    const f = (JSON.parse(r.stdout) as DetectOutput).files[0];
    expect(f.frames.length).toBeGreaterThan(10);
    expect(f.warning).toMatch(/^its frames end at \d+\.\d\d s of the 139\.\d\d s it claims: cut short or damaged/);
    const table = await argus(['detect', cut]);
    expect(table.stdout).toMatch(/\n {2}warning: its frames end at /);
    // A whole file has none, nor one whose sound goes on after its pictures (the container's length is the longer).
    const whole = JSON.parse((await argus(['detect', '--json', '--fps', '1', `${MIRROR}/streams/bottle-detection.mp4`])).stdout) as DetectOutput;
    expect(whole.files[0].warning).toBeUndefined();
    const av = join(tmp(), 'av.mkv');
    const made = await runCommand(defaultFfmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10:duration=3', '-f', 'lavfi', '-i', 'sine=duration=8', '-c:v', 'mpeg4', '-c:a', 'pcm_s16le', av]);
    expect(made.code).toBe(0);
    const long = JSON.parse((await argus(['detect', '--json', av])).stdout) as DetectOutput;
    expect(long.files[0].frames).toHaveLength(30);
    expect(long.files[0].warning).toBeUndefined();
    // Nor one whose name or metadata says "partial file" (printed on ffmpeg's log, not its report).
    const named = join(tmp(), 'partial file.mkv');
    expect((await runCommand(defaultFfmpegPath(), ['-v', 'error', '-i', av, '-c', 'copy', '-metadata', 'comment=partial file from the phone', named])).code).toBe(0);
    expect((JSON.parse((await argus(['detect', '--json', named])).stdout) as DetectOutput).files[0].warning).toBeUndefined();
  }, TIMEOUT);

  it('a video damaged in its middle (bytes overwritten, read to its end): a warning quoting ffmpeg, and the count, in the table and the JSON; status 0', async () => {
    // The first 30 s of the person clip (its own H.264, not encoded again), damaged in the middle.
    const dir = tmp();
    const piece = join(dir, 'piece.mp4');
    expect((await runCommand(defaultFfmpegPath(), ['-v', 'error', '-i', `${MIRROR}/streams/one-by-one-person-detection.mp4`, '-t', '30', '-c', 'copy', '-an', piece])).code).toBe(0);
    const bad = join(dir, 'damaged.mp4');
    const bytes = readFileSync(piece);
    const mid = bytes.length >> 1;
    for (let k = 0; k < 8; k++) for (let i = 0; i < 1024; i++) bytes[mid + k * 4096 + i] = (i * 37 + k) & 255;
    writeFileSync(bad, bytes);
    const r = await argus(['detect', '--json', '--fps', '2', bad]);
    expect(r.code).toBe(0);
    const f = (JSON.parse(r.stdout) as DetectOutput).files[0];
    expect(f.frames.length).toBeGreaterThan(55); // read to its end (30 s at 2 fps)
    expect(f.decodeErrors).toBeGreaterThan(0);
    expect(f.warning).toMatch(/^ffmpeg reported damaged input (once|\d+ times): frames around it may be damaged or lost; first: \[[^\]]+ @ 0x[0-9a-f]+\] /);
    expect((await argus(['detect', '--fps', '2', bad])).stdout).toMatch(/\n {2}warning: ffmpeg reported damaged input /);
    const whole = JSON.parse((await argus(['detect', '--json', '--fps', '2', piece])).stdout) as DetectOutput;
    expect(whole.files[0].warning).toBeUndefined();
    expect(whole.files[0].decodeErrors).toBeUndefined();
  }, TIMEOUT);

  it("a video ffmpeg cannot open: its error is ffmpeg's reason, not the notice about argus's own -vsync", async () => {
    const text = join(tmp(), 'text.mp4');
    writeFileSync(text, 'not a video at all');
    const r = await argus(['detect', text]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/text\.mp4 {2}VAP_ERR_SOURCE_EXIT: ffmpeg exited with code 1 decoding .*text\.mp4:\n.*moov atom not found|Invalid data/);
    expect(r.stdout).not.toContain('-vsync');
  }, TIMEOUT);

  it('a named pipe called like a picture fails alone with a coded error (libvips waited on it until Ctrl-C)', async () => {
    const fifo = join(tmp(), 'pipe.jpg');
    execFileSync('mkfifo', [fifo]);
    const r = await argus(['detect', fifo]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain(`VAP_ERR_SOURCE_OPEN: image: ${fifo} is not a regular file (a named pipe or a device): give the picture as a file`);
  }, TIMEOUT);

  it('one unreadable file fails alone: the others are still read and printed, and the run ends with a coded error naming it', async () => {
    const dir = tmp();
    const broken = join(dir, 'broken.jpg');
    writeFileSync(broken, readFileSync(STREET).subarray(0, 2000)); // a truncated JPEG
    const r = await argus(['detect', '--json', TV_ROOM, broken, STREET]);
    expect(r.code).toBe(2);
    const doc = JSON.parse(r.stdout) as DetectOutput;
    expect(doc.files.map((f) => f.file)).toEqual([TV_ROOM, broken, STREET]);
    expect(doc.failed).toBe(1);
    expect(doc.files[0].frames[0].detections.length).toBeGreaterThan(0);
    expect(doc.files[2].frames[0].detections.length).toBeGreaterThan(0);
    expect(doc.files[1].error?.code).toMatch(/^VAP_ERR_/);
    expect(doc.files[0].error).toBeUndefined();
    expect(r.stderr).toMatch(/VAP_ERR_\w+: detect: 1 of 3 files could not be read: .*broken\.jpg/);
  }, TIMEOUT);
});

describe('argus detect: its output cannot be written', () => {
  it('stdout whose reader goes away (| head -1): quiet, status 0; a full stdout (/dev/full): VAP_ERR_SINK_FILE, status 2; no stack trace either way', async () => {
    const headed = await runClosingAfterFirstLine(['detect', TV_ROOM, STREET, GIF]);
    expect(headed.first).toMatch(/000000000139\.jpg {2}640x426 {2}\d+ detections/);
    expect(headed.stderr).toBe('');
    expect(headed.code).toBe(0);
    const full = await runCommand('/bin/sh', ['-c', `"${process.execPath}" "${ARGUS}" detect --json "${TV_ROOM}" > /dev/full`]);
    expect(full.stderr).toBe('argus: VAP_ERR_SINK_FILE: detect: could not print to stdout (ENOSPC)\n');
    expect(full.code).toBe(2);
  }, TIMEOUT);

  it('an annotated copy that cannot be written: the detections are still printed, the file is named as not written (VAP_ERR_SINK_FILE), status 2', async () => {
    const dir = tmp();
    const out = join(dir, 'copy.png');
    symlinkSync('/dev/full', out); // every write fails (ENOSPC), even as root
    const r = await argus(['detect', TV_ROOM, '--out', out]);
    expect(r.stdout).toMatch(/000000000139\.jpg {2}640x426 {2}\d+ detections\n {2}tv /);
    expect(r.stdout).toContain(`VAP_ERR_SINK_FILE: detect --out: cannot write the annotated copy ${out} (ENOSPC)`);
    expect(r.stderr).toContain(`argus: VAP_ERR_SINK_FILE: detect: 1 of 1 file had no annotated copy written: ${TV_ROOM}`);
    expect(r.code).toBe(2);
  }, TIMEOUT);
});

describe('argus detect and argus preview: a copy cut short by a full disk is not left behind', () => {
  // A file size limit of 64 KiB (ulimit -f, in 1024-byte blocks) stands for a disk that fills up
  // mid-write: the writes past it fail (EFBIG; ffmpeg is killed by SIGXFSZ). The copy used to be
  // left there cut at 64 KiB, looking like one, in place of an earlier good copy.
  const limited = (args: string[]) => runCommand('/bin/sh', ['-c', `ulimit -f 64; exec "${process.execPath}" "${ARGUS}" "$@"`, 'argus', ...args]);

  it('detect --out: the picture and the video are removed, a copy of that name from before is kept, and the error names the file', async () => {
    const d = tmp();
    writeFileSync(join(d, 'tv.png'), 'an earlier copy');
    const [image, video] = await Promise.all([
      limited(['detect', TV_ROOM, '--out', join(d, 'tv.png')]),
      limited(['detect', `${MIRROR}/streams/bottle-detection.mp4`, '--fps', '2', '--out', join(d, 'bottle.mp4')]),
    ]);
    expect(image.stdout).toContain(`VAP_ERR_SINK_FILE: detect --out: cannot write the annotated copy ${join(d, 'tv.png')} (EFBIG)`);
    expect(video.stdout).toMatch(new RegExp(`VAP_ERR_SINK_FILE: writing ${join(d, 'bottle.mp4')}: ffmpeg was killed by SIGXFSZ`));
    for (const r of [image, video]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/VAP_ERR_SINK_FILE: detect: 1 of 1 file had no annotated copy written/);
    }
    expect(readdirSync(d)).toEqual(['tv.png']);
    expect(readFileSync(join(d, 'tv.png'), 'utf8')).toBe('an earlier copy');
  }, TIMEOUT);

  it('preview --out: no picture is left', async () => {
    const d = tmp();
    writeFileSync(join(d, 'p.yaml'), `sources:\n  - id: room\n    uri: ${TV_ROOM}\n`);
    const r = await limited(['preview', join(d, 'p.yaml'), '--out', join(d, 'p.png')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`argus: VAP_ERR_SINK_FILE: preview --out ${join(d, 'p.png')}: cannot write it (EFBIG)`);
    expect(readdirSync(d)).toEqual(['p.yaml']);
  }, TIMEOUT);
});

describe('argus detect --out never destroys an input (checked before anything is read)', () => {
  it.each([
    ['the input itself', (d: string) => ({ files: [join(d, 'a.jpg')], out: join(d, 'a.jpg') }), /would be written over .*a\.jpg, an input/],
    ['the folder the inputs are in', (d: string) => ({ files: [join(d, 'a.jpg'), join(d, 'b.jpg')], out: d }), /would be written over .*a\.jpg, an input/],
    ['two inputs of one name', (d: string) => ({ files: [join(d, 'a.jpg'), join(d, 'sub', 'a.jpg')], out: join(d, 'many') }), /a\.jpg and .*sub\/a\.jpg would both be written to/],
    ['a video into a container H.264 cannot go in', (d: string) => ({ files: [join(d, 'c.gif')], out: join(d, 'c-annotated.gif') }), /is a video \(or GIF\); its annotated copy is H\.264: name a \.mp4/],
    ['a still image into a format argus does not write', (d: string) => ({ files: [join(d, 'a.jpg')], out: join(d, 'a.webp') }), /still image; name a \.png, \.jpg or \.jpeg/],
  ])('%s: VAP_ERR_SINK_FILE, and every input is as it was', async (_name, make, message) => {
    const d = tmp();
    mkdirSync(join(d, 'sub'));
    for (const f of ['a.jpg', 'b.jpg', 'sub/a.jpg']) copyFileSync(STREET, join(d, f));
    copyFileSync(GIF, join(d, 'c.gif'));
    const before = new Map(['a.jpg', 'b.jpg', 'sub/a.jpg', 'c.gif'].map((f) => [f, readFileSync(join(d, f)).toString('base64')]));
    const { files, out } = make(d);
    const r = await argus(['detect', ...files, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('VAP_ERR_SINK_FILE');
    expect(r.stderr).toMatch(message);
    for (const [f, b64] of before) expect(readFileSync(join(d, f)).toString('base64')).toBe(b64);
  }, TIMEOUT);

  it('an existing folder given for one input gets the copy inside it; a missing parent folder is made', async () => {
    const d = tmp();
    const r = await argus(['detect', STREET, '--out', d]);
    expect(r.code).toBe(0);
    expect(existsSync(join(d, '000000001268.jpg'))).toBe(true);
    const deep = join(d, 'x', 'y', 'street.png');
    expect((await argus(['detect', STREET, '--out', deep])).code).toBe(0);
    expect((await sharp(deep).metadata()).format).toBe('png');
  }, TIMEOUT);
});

describe('argus detect: a file name with control characters (a download named by someone else)', () => {
  it('its closing error line shows them escaped, as the table does, never as the escape sequences themselves', async () => {
    const dir = tmp();
    const gone = join(dir, 'gone\x1b]0;TITLE\x07\x1b[2J.jpg');
    const alone = await argus(['detect', gone]); // refused before the model is loaded
    const several = await argus(['detect', STREET, gone]); // the summary after the others were read
    for (const r of [alone, several]) {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('gone\\x1b]0;TITLE\\x07\\x1b[2J.jpg');
      expect(r.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f]/); // line breaks only
    }
  }, TIMEOUT);
});
