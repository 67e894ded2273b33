import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadPipeline } from '../../src/config/load.js';
import { pipelineBaseDir } from '../../src/pipeline/pipeline.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { MIRROR } from '../helpers/assets.js';

const ROOT = resolve(__dirname, '../..');
const CLIP = join(MIRROR, 'streams/one-by-one-person-detection.mp4');
const W = 768, H = 432; // the clip's size
const FRAMES = 100; // 10 s at 10 fps: the first person walks in and reaches the table
const ffmpeg = resolveFfmpegSync().path;

/** The first `frames` frames of a video (all without), packed RGB, one after another. */
function decodeAll(file: string, frames?: number): Buffer {
  return execFileSync(ffmpeg, ['-v', 'error', '-i', file, ...(frames ? ['-frames:v', String(frames)] : []), '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { maxBuffer: 1 << 30 });
}

function probe(file: string) {
  const out = execFileSync('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=codec_name,width,height,nb_read_frames,r_frame_rate', '-of', 'json', file], { encoding: 'utf8' });
  return JSON.parse(out).streams[0] as { codec_name: string; width: number; height: number; nb_read_frames: string; r_frame_rate: string };
}

describe('annotated video of the person clip (real model)', () => {
  it('writes a playable MP4 at the source size with the boxes and the zone drawn; written + dropped = frames out', async () => {
    const file = resolve(ROOT, 'pipelines/safety-zone.yaml');
    // Every frame processed (rate fast), so which frames have a person does not depend on the machine's speed.
    const config = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'fast', ARGUS_SNAPSHOTS: 'none' });
    // The sink's longest queue: frames come as fast as they are detected, and a loaded machine's
    // encoder, starting, fell behind at once (4 of 100 written with the default 2, none of them
    // with a person yet). Drops stay counted and checked below.
    (config.sinks as { annotate?: unknown }).annotate = { queue: 64 };
    const dir = mkdtempSync(join(tmpdir(), 'argus-annotate-e2e-'));
    const people: { seq: number; pts: number; box: number[]; score: number }[] = [];
    let firstPts = NaN, lastPts = NaN;
    const summary = await runPipeline(config, {
      baseDir: pipelineBaseDir(file),
      // What `argus run --annotate DIR/{source}.mp4` passes.
      annotate: join(dir, '{source}.mp4'),
      maxFrames: FRAMES,
      status: false,
      onResult: (r) => {
        if (Number.isNaN(firstPts)) firstPts = r.frame.pts;
        lastPts = r.frame.pts;
        const d = r.detections;
        for (let i = 0; i < d.length; i++) if (d.classId[i] === 0) people.push({ seq: r.frame.seq, pts: r.frame.pts, box: Array.from(d.xyxy.subarray(i * 4, i * 4 + 4)), score: d.confidence[i] });
      },
    });
    expect(summary.frames).toBe(FRAMES);
    const st = summary.annotate![0];
    const out = join(dir, 'lobby.mp4');
    expect(st.path).toBe(out);
    expect(existsSync(out)).toBe(true);
    // Every frame out was offered; each was written or dropped (counted), none skipped or lost.
    expect(st).toMatchObject({ source: 'lobby', offered: FRAMES, skipped: 0, lost: 0, width: W, height: H, fps: 10 });
    expect(st.written + st.dropped).toBe(FRAMES);
    expect(st.written).toBeGreaterThan(0);

    // ffprobe reads it whole: H.264 at the source's size, one frame per written frame or repeat
    // (the repeats stand in for dropped frames, so the video lasts as long as the run).
    const p = probe(out);
    expect([p.codec_name, p.width, p.height, p.r_frame_rate]).toEqual(['h264', W, H, '10/1']);
    expect(Number(p.nb_read_frames)).toBe(st.written + st.repeated);
    // One frame per 1/10 s of the run, from its first frame's pts to its last's.
    expect(Number(p.nb_read_frames)).toBe(Math.round((lastPts - firstPts) * 10) + 1);

    // The most confident person in the last 30 frames whose frame was encoded (not dropped by
    // the bounded sink under load and filled by repeating the frame before): its frame in the
    // MP4 (the frame's place is its pts × 10 fps) against the same frame decoded from the clip.
    // Encoded, the picture inside the box is the clip's, up to compression noise.
    const candidates = people.filter((q) => q.seq < FRAMES).sort((a, b) => (b.seq >= FRAMES - 30 ? 1 : 0) - (a.seq >= FRAMES - 30 ? 1 : 0) || b.score - a.score);
    expect(candidates.length, 'a person detected').toBeGreaterThan(0);
    let best!: (typeof people)[number];
    let annotated!: Buffer;
    let plain!: Buffer;
    const diff = (x: number, y: number) => {
      const i = (Math.round(y) * W + Math.round(x)) * 3;
      return (Math.abs(annotated[i] - plain[i]) + Math.abs(annotated[i + 1] - plain[i + 1]) + Math.abs(annotated[i + 2] - plain[i + 2])) / 3;
    };
    const mean = (pts: [number, number][]) => pts.reduce((s, [x, y]) => s + diff(x, y), 0) / pts.length;
    const regions = (box: number[]) => {
      const [x1, y1, x2, y2] = box.map((v, i) => Math.min(Math.max(v, 0), (i % 2 ? H : W) - 1));
      // On the outline (its left, right and bottom edges: the label sits on the top one).
      const outline: [number, number][] = [];
      for (let y = y1 + 20; y < y2 - 2; y += 2) outline.push([x1, y], [x2, y]);
      for (let x = x1 + 2; x < x2 - 2; x += 2) outline.push([x, y2]);
      // Inside, clear of the edges and the label: only compression noise.
      const inside: [number, number][] = [];
      for (let y = y1 + (y2 - y1) / 4; y < y2 - (y2 - y1) / 4; y += 3) for (let x = x1 + (x2 - x1) / 4; x < x2 - (x2 - x1) / 4; x += 3) inside.push([x, y]);
      return { outline, inside };
    };
    // Under load the sink may drop most frames (counted above; a loaded run wrote 4 of 100): every
    // candidate is looked at, the last 30 frames' first, in both videos decoded once.
    const size = W * H * 3;
    const allAnnotated = decodeAll(out);
    const allPlain = decodeAll(CLIP, FRAMES);
    let encoded = false;
    for (const q of candidates) {
      const n = Math.round((q.pts - firstPts) * 10);
      annotated = allAnnotated.subarray(n * size, (n + 1) * size);
      plain = allPlain.subarray(q.seq * size, (q.seq + 1) * size);
      expect(annotated.length).toBe(W * H * 3);
      best = q;
      encoded = mean(regions(q.box).inside) < 8;
      if (st.dropped === 0 || encoded) break;
    }
    expect(st.dropped === 0 || encoded, `an encoded frame with a person among ${st.written} written`).toBe(true);
    const { outline, inside } = regions(best.box);
    expect(mean(outline), 'change on the box outline').toBeGreaterThan(30);
    expect(mean(outline)).toBeGreaterThan(4 * mean(inside));
    // The outline is the person class's red (so the model's BGR frames reached the encoder in the right order).
    const redness = outline.reduce((s, [x, y]) => {
      const i = (Math.round(y) * W + Math.round(x)) * 3;
      return s + annotated[i] - annotated[i + 2];
    }, 0) / outline.length;
    expect(redness).toBeGreaterThan(60);

    // The zone (the floor in front of the table, 0.45–0.72 × 0.80–0.97 of the frame) is tinted.
    const zone: [number, number][] = [];
    for (let y = 0.83 * H; y < 0.95 * H; y += 4) for (let x = 0.47 * W; x < 0.7 * W; x += 4) zone.push([x, y]);
    const far: [number, number][] = [];
    for (let y = 0.83 * H; y < 0.95 * H; y += 4) for (let x = 0.05 * W; x < 0.25 * W; x += 4) far.push([x, y]);
    expect(mean(zone), 'tint inside the zone').toBeGreaterThan(3 * mean(far));
  });
  it('a source with `fps` above the clip\'s: each frame once, written at the rate delivered (the clip\'s 10, not 25)', async () => {
    const file = resolve(ROOT, 'pipelines/safety-zone.yaml');
    const config = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'fast', ARGUS_SNAPSHOTS: 'none' });
    config.sources[0].fps = 25;
    const dir = mkdtempSync(join(tmpdir(), 'argus-annotate-fps-'));
    const pts: number[] = [];
    const summary = await runPipeline(config, {
      baseDir: pipelineBaseDir(file),
      annotate: join(dir, '{source}.mp4'),
      maxFrames: 20,
      status: false,
      onResult: (r) => pts.push(r.frame.pts),
    });
    expect(summary.frames).toBe(20);
    expect(pts).toEqual(pts.map((_p, i) => i / 10)); // the clip's frames, 0.1 s apart
    expect(summary.annotate![0]).toMatchObject({ fps: 10, skipped: 0 });
    expect(probe(join(dir, 'lobby.mp4')).r_frame_rate).toBe('10/1');
  });
});
