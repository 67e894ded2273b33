// A video damaged in its middle (bytes overwritten, its index whole): ffmpeg decodes on, with
// errors on its log. argus counts them per source (decodeErrors: stats, summary, /metrics) and
// warns, coded, naming the source and the file, at most once a minute.
import { copyFileSync, mkdtempSync, openSync, closeSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray, type Subscription } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import { Metrics } from '../../src/server/metrics.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource, type FfmpegSourceOptions, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { DAMAGE_WARN_INTERVAL_MS, DamageWarnings, newSourceStats, sourceSummary } from '../../src/sources/stats.js';
import { reportsDamage, StderrProbe } from '../../src/sources/stderr-probe.js';
import { damagedWarning } from '../../src/tools/detect.js';
import { videoFrames } from '../../src/tools/frames.js';
import { runCommand } from '../helpers/cli.js';
import { FakeFfmpeg } from './fake-ffmpeg.js';

const ffmpeg = defaultFfmpegPath();
let intact: string;
let damaged: string;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'argus-damaged-'));
  intact = join(dir, 'intact.mp4');
  damaged = join(dir, 'damaged.mp4');
  await runCommand(ffmpeg, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=10:d=6', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-g', '10', intact]);
  // Eight blocks of 1 KB, 4 KB apart, from the middle of the file (its frames' data), overwritten
  // with a fixed pattern: the same damage every run.
  copyFileSync(intact, damaged);
  const fd = openSync(damaged, 'r+');
  const mid = Math.floor(statSync(damaged).size / 2);
  for (let k = 0; k < 8; k++) writeSync(fd, Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 37 + k) & 255)), 0, 1024, mid + k * 4096);
  closeSync(fd);
}, 60_000);

const run = async (url: string) => {
  const lines: string[] = [];
  const frames = await lastValueFrom(
    ffmpegSource({
      id: 'cam',
      input: { url, kind: 'file', rate: 'fast', loop: false },
      output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
      ffmpegPath: ffmpeg,
      onDamage: (line) => lines.push(line),
    }).pipe(toArray()),
  );
  for (const f of frames) f.release();
  return { frames: frames.length, lines };
};

describe('a video damaged in its middle', () => {
  it('ffmpegSource tells of the damage, with ffmpeg’s lines (those between two frames once); the intact copy has none', async () => {
    const bad = await run(damaged);
    expect(bad.lines.length).toBeGreaterThanOrEqual(2);
    expect(bad.lines.length).toBeLessThan(bad.frames);
    for (const l of bad.lines) expect(reportsDamage(l)).toBe(true);
    const good = await run(intact);
    expect(good.lines).toEqual([]);
    expect(good.frames).toBe(60);
  }, 60_000);

  it('videoFrames (argus detect) tells of it too, each report with the frame it came after; detect’s warning counts it', async () => {
    const seen = async (url: string) => {
      const lines: { line: string; after: number }[] = [];
      for await (const _ of videoFrames({ ffmpegPath: ffmpeg, url, onDamage: (line, after) => lines.push({ line, after }) })) void _;
      return lines;
    };
    const told = await seen(damaged);
    expect(told.length).toBeGreaterThan(0);
    // Placed by the frames the log reported before them (positive: the damage is mid-file), in
    // the log's order: detect counts those after the same frame once, as a run's source does,
    // and the count no longer varies with the order the frames and the log are read in.
    expect(told.every((t, i) => t.after > 0 && (i === 0 || t.after >= told[i - 1].after))).toBe(true);
    expect(new Set(told.map((t) => t.after)).size).toBeGreaterThanOrEqual(2);
    expect(await seen(intact)).toEqual([]);
    expect(damagedWarning(3, '[h264 @ 0x1] error while decoding MB 1 2')).toBe('ffmpeg reported damaged input 3 times: frames around it may be damaged or lost; first: [h264 @ 0x1] error while decoding MB 1 2');
    expect(damagedWarning(1, `[h264 @ 0x1] ${'x'.repeat(1000)}`).length).toBeLessThan(400);
  }, 60_000);
});

describe('reportsDamage (ffmpeg’s words for damaged input)', () => {
  it.each([
    '[h264 @ 0x55f4ad1c2500] concealing 275 DC, 275 AC, 275 MV errors in B frame',
    '[h264 @ 0x55f4ad1c2500] error while decoding MB 14 22, bytestream 251',
    '[NULL @ 0x557035232d80] Invalid NAL unit size (-1951345158 > 1980).',
    '[h264 @ 0x5570352ae700] Reference 2 >= 2',
    '[hevc @ 0x5570352ae700] Could not find ref with POC 12',
    '[mov,mp4,m4a,3gp,3g2,mj2 @ 0x5634] stream 0, offset 0x3170a: partial file',
    'Error while decoding stream #0:0: Invalid data found when processing input',
    '[vist#0:0/h264 @ 0x55e1] [dec:h264 @ 0x55e2] Decoding error: Invalid data found when processing input',
  ])('%s', (line) => expect(reportsDamage(line)).toBe(true));

  it.each([
    '    comment         : partial file from the phone', // a file's metadata
    '[h264 @ 0x55f4ad1c2500] Reinit context to 768x432, pix_fmt: yuv420p',
    '[tcp @ 0x55eec6367a00] Connection attempt to 127.0.0.1 port 22501 failed: Connection refused',
  ])('not: %s', (line) => expect(reportsDamage(line)).toBe(false));

  it("StderrProbe tells of them, but not of the lines about a relay's last access-unit delimiter (no picture after it)", () => {
    const probe = new StderrProbe();
    const told: string[] = [];
    probe.onDamage = (l) => told.push(l);
    probe.delimited = true;
    probe.push('[h264 @ 0x5] missing picture in access unit with size 6\n[h264 @ 0x5] no frame!\nError while decoding stream #0:0: Invalid data found when processing input\n');
    expect(told).toEqual([]);
    probe.push('[h264 @ 0x5] error while decoding MB 1 2, bytestream 9\n[h264 @ 0x5] Reinit context to 64x48\n');
    expect(told).toEqual(['[h264 @ 0x5] error while decoding MB 1 2, bytestream 9']);
  });
});

const CAMERA: FfmpegSourceOptions['input'] = { url: 'rtsp://cam/s', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false };

/** ffmpegSource of `input` on a fake ffmpeg (64x48 frames): the fake, the damage lines told, the subscription. */
function onFakeFfmpeg(input: FfmpegSourceOptions['input']): { child: FakeFfmpeg; told: string[]; sub: Subscription } {
  let child!: FakeFfmpeg;
  const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, 64 * 48 * 3)).asChild();
  const told: string[] = [];
  const sub = ffmpegSource({
    id: 'cam',
    input,
    output: { width: 64, height: 48, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
    ffmpegPath: 'ffmpeg',
    memo: { readsOnce: false }, // the file's look done (a fake ffmpeg: no file to look at)
    spawn,
    onDamage: (l) => told.push(l),
  }).subscribe({ error: (e) => { throw e; } });
  return { child, told, sub };
}

describe('a live source’s reports', () => {
  it('before its first frame (a stream joined between key frames) are not damage; after it, those between two frames count once', () => {
    const { child, told, sub } = onFakeFfmpeg(CAMERA);
    const t = Date.now();
    child.info('rtsp', 10);
    child.stderr.write('[h264 @ 0x5] non-existing PPS 0 referenced\n[h264 @ 0x5] decode_slice_header error\n');
    // (As ffmpeg does, each frame is reported on its log before it is written.)
    child.stderr.write(child.timeLine(0, t));
    child.frame();
    expect(told).toEqual([]);
    child.stderr.write('[h264 @ 0x5] error while decoding MB 1 2, bytestream 9\n[h264 @ 0x5] concealing 9 DC, 9 AC, 9 MV errors in P frame\n');
    child.stderr.write(child.timeLine(1, t + 100));
    child.frame();
    child.stderr.write('[h264 @ 0x5] concealing 3 DC, 3 AC, 3 MV errors in P frame\n');
    expect(told).toEqual(['[h264 @ 0x5] error while decoding MB 1 2, bytestream 9', '[h264 @ 0x5] concealing 3 DC, 3 AC, 3 MV errors in P frame']);
    sub.unsubscribe();
  });

  it('from an ffmpeg that reports no frame on its log (the bundled 2018 build): frames as they arrive part the reports, the first one included', () => {
    const { child, told, sub } = onFakeFfmpeg(CAMERA);
    child.info('rtsp', 10);
    child.stderr.write('[h264 @ 0x5] non-existing PPS 0 referenced\n[h264 @ 0x5] decode_slice_header error\n');
    child.frame();
    expect(told).toEqual([]);
    child.stderr.write('[h264 @ 0x5] error while decoding MB 1 2, bytestream 9\n[h264 @ 0x5] concealing 9 DC, 9 AC, 9 MV errors in P frame\n');
    child.frame();
    child.stderr.write('[h264 @ 0x5] concealing 3 DC, 3 AC, 3 MV errors in P frame\n');
    expect(told).toEqual(['[h264 @ 0x5] error while decoding MB 1 2, bytestream 9', '[h264 @ 0x5] concealing 3 DC, 3 AC, 3 MV errors in P frame']);
    sub.unsubscribe();
  });

  it("a live source's first frame is its first report on the log, not the first frame read: a report after it counts before the frame's bytes come", () => {
    const { child, told, sub } = onFakeFfmpeg(CAMERA);
    child.info('rtsp', 10);
    child.stderr.write('[h264 @ 0x5] decode_slice_header error\n' + child.timeLine(0, Date.now()) + '[h264 @ 0x5] error while decoding MB 1 2, bytestream 9\n');
    expect(told).toEqual(['[h264 @ 0x5] error while decoding MB 1 2, bytestream 9']);
    sub.unsubscribe();
  });
});

describe('reports between two frames count once, by the order of ffmpeg’s log', () => {
  // A file's frames come through one pipe and ffmpeg's log through another: which is read first
  // is the scheduler's choice. Counted by the arrival of frames, damage one frame apart (the
  // damaged file above: reports before and after its 28th frame) counted once on a busy machine,
  // twice on an idle one. ffmpeg reports each frame on its log before it writes it: in order
  // with the damage lines, whenever the frames' bytes come.
  it('a frame reported between two damage lines parts them, its bytes read after both; bytes read between two lines with no report between do not', () => {
    const { child, told, sub } = onFakeFfmpeg({ url: intact, kind: 'file', rate: 'fast', loop: false });
    const t = Date.now();
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    child.stderr.write(child.timeLine(0, t));
    child.frame();
    // Frame 1 is reported between the two damaged packets; its bytes are read after both.
    child.stderr.write('[h264 @ 0x5] Reference 4 >= 2\n[h264 @ 0x5] concealing 225 DC, 225 AC, 225 MV errors in B frame\n');
    child.stderr.write(child.timeLine(1, t + 100));
    child.stderr.write('[NULL @ 0x6] Invalid NAL unit size (457205130 > 12140).\n');
    expect(told).toEqual(['[h264 @ 0x5] Reference 4 >= 2', '[NULL @ 0x6] Invalid NAL unit size (457205130 > 12140).']);
    // Frame 1's bytes come between two lines that ffmpeg logged before frame 2's report: one.
    child.frame();
    child.stderr.write('[h264 @ 0x5] error while decoding MB 24 18, bytestream 486\n');
    expect(told).toHaveLength(2);
    child.stderr.write(child.timeLine(2, t + 200));
    child.stderr.write('[h264 @ 0x5] concealing 311 DC, 311 AC, 311 MV errors in B frame\n');
    expect(told).toHaveLength(3);
    expect(told[2]).toBe('[h264 @ 0x5] concealing 311 DC, 311 AC, 311 MV errors in B frame');
    sub.unsubscribe();
  });
});

describe('DamageWarnings (virtual clock)', () => {
  it('the first report warns at once, coded, naming the source and its input (credentials removed); then at most one warning a minute, with the count; every report counted', () => {
    let t = 0;
    const logged: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
    const st = newSourceStats('gate');
    const w = new DamageWarnings(st, 'rtsp://admin:hunter2@cam/stream', (msg, fields, level) => logged.push({ msg, fields, level }), () => t);
    w.report('[h264 @ 0x5] error while decoding MB 1 2, bytestream 9');
    expect(logged).toHaveLength(1);
    expect(logged[0].level).toBe('warn');
    expect(logged[0].fields).toEqual({ source: 'gate', code: ErrorCodes.SOURCE_DAMAGED, decodeErrors: 1 });
    expect(logged[0].msg).toContain('source "gate": ffmpeg reported damaged input in rtsp://');
    expect(logged[0].msg).toContain('cam/stream');
    expect(logged[0].msg).not.toContain('hunter2');
    expect(logged[0].msg).toContain('error while decoding MB 1 2');
    for (let i = 0; i < 500; i++) {
      t += 100; // ten a second for 50 s
      w.report(`[h264 @ 0x5] concealing ${i} DC, ${i} AC, ${i} MV errors in P frame ${'x'.repeat(5000)}`);
    }
    expect(logged).toHaveLength(1);
    t = DAMAGE_WARN_INTERVAL_MS;
    w.report('[h264 @ 0x5] Reference 2 >= 2');
    expect(logged).toHaveLength(2);
    expect(logged[1].msg).toContain(' 501 more times (502 in all)');
    expect(logged[1].fields).toMatchObject({ decodeErrors: 502 });
    t += 1000;
    w.report(`[h264 @ 0x5] ${'y'.repeat(5000)}`);
    expect(logged).toHaveLength(2);
    t += DAMAGE_WARN_INTERVAL_MS;
    w.report(`[h264 @ 0x5] ${'y'.repeat(5000)}`);
    expect(logged[2].msg.length).toBeLessThan(1000); // ffmpeg's line quoted in part
    expect(st.decodeErrors).toBe(504);
    expect(sourceSummary(st)).toMatchObject({ source: 'gate', decodeErrors: 504 });
  });

  it("a long line's URL is redacted before it is cut: a password split at the cut is not quoted in part (warning and detect's)", () => {
    const logged: string[] = [];
    for (let pad = 250; pad < 320; pad++) {
      const line = `[hls @ 0x5] ${'x'.repeat(pad)} http://admin:hunter2secret@cam/seg.ts partial file`;
      const w = new DamageWarnings(newSourceStats('gate'), 'file.mp4', (msg) => logged.push(msg), () => 0);
      w.report(line);
      logged.push(damagedWarning(1, line));
    }
    for (const msg of logged) for (const part of ['hunter', 'hun', 'secret']) expect(msg).not.toContain(part);
    expect(logged.some((m) => m.includes('http://***@cam'))).toBe(true);
  });

  it('/metrics exports each source’s count: argus_source_decode_errors_total', async () => {
    const a = newSourceStats('gate');
    const b = newSourceStats('yard');
    a.decodeErrors = 7;
    const text = await new Metrics({ stats: () => [a, b], provider: 'cpu' }).scrape();
    expect(text).toMatch(/^argus_source_decode_errors_total\{source="gate"\} 7$/m);
    expect(text).toMatch(/^argus_source_decode_errors_total\{source="yard"\} 0$/m);
  });
});
