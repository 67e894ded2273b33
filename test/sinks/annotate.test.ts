import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMPTY, from, merge, mergeMap } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import type { FrameImage, Overlay } from '../../src/annotate/draw.js';
import { VideoWriter, type VideoWriterOptions } from '../../src/annotate/video-writer.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema, SourceSchema } from '../../src/config/schema.js';
import { AnnotateSinkSchema } from '../../src/config/schema/sinks.js';
import { Detections } from '../../src/core/detections.js';
import { isArgusError } from '../../src/core/errors.js';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { Metrics } from '../../src/server/metrics.js';
import { AnnotateSink, annotatePaths, type AnnotateSinkOptions } from '../../src/sinks/annotate.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'argus-annotate-'));

/** An encoder that takes frames only when let through: `hold()` makes every write wait until `release()`. */
class FakeEncoder {
  written: Uint8Array[] = [];
  private waiting: (() => void)[] = [];
  private held = false;
  closed = false;
  killed = false;
  failWith: Error | undefined;
  closeNever = false;
  constructor(readonly options: VideoWriterOptions) {}
  hold() {
    this.held = true;
  }
  release() {
    this.held = false;
    for (const w of this.waiting.splice(0)) w();
  }
  async write(frame: Uint8Array): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.written.push(frame);
    if (this.held) await new Promise<void>((r) => this.waiting.push(r));
  }
  close(): Promise<void> {
    this.closed = true;
    return this.closeNever ? new Promise(() => {}) : Promise.resolve();
  }
  kill() {
    this.killed = true;
  }
}

/** A frame at 10 fps whose picture reads are counted (a frame the sink drops must not be copied). */
function frameAt(seq: number, reads: { n: number }, source = 'cam', width = 8, height = 4, fps = 10): FrameResult {
  const data = Buffer.alloc(width * height * 3, seq & 255);
  const frame: Frame = {
    source,
    seq,
    pts: seq / fps,
    get data() {
      reads.n++;
      return data;
    },
    layout: 'source',
    letterbox: letterbox(width, height, 4, 4),
    stamps: emptyStamps(1),
    producedBy: 'captured',
    release: () => {},
  };
  return { frame, detections: Detections.empty(), dropped: 0, alerts: [] };
}

/** Lets queued promise callbacks (the sink's draw → write chain) run. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

function sinkWith(over: Partial<AnnotateSinkOptions> = {}) {
  const encoders: FakeEncoder[] = [];
  const logs: string[] = [];
  const options: AnnotateSinkOptions = {
    ...AnnotateSinkSchema.parse({ path: join(tmp(), 'out.mp4') }),
    baseDir: '/',
    sources: ['cam'],
    ffmpegPath: 'ffmpeg',
    channelOrder: 'bgr',
    labels: ['person'],
    fpsOf: () => 10,
    log: (m) => logs.push(m),
    encoder: (o) => {
      const e = new FakeEncoder(o);
      encoders.push(e);
      return e;
    },
    // The frame's own bytes stand in for the drawing (the real one is tested below).
    draw: async (image: FrameImage) => Buffer.from(image.data),
    ...over,
  };
  return { options, encoders, logs };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AnnotateSink: bounded, never in the way', () => {
  it('while the encoder is stuck, offer returns at once: queue frames are taken, the rest dropped without being copied; the counts add up', async () => {
    const { options, encoders, logs } = sinkWith({ queue: 2 });
    const sink = await AnnotateSink.open(options);
    const reads = { n: 0 };
    // The first frame starts the encoder; hold it before anything reaches it.
    sink.offer(frameAt(0, reads));
    const enc = encoders[0];
    enc.hold();
    for (let i = 1; i < 10; i++) expect(sink.offer(frameAt(i, reads))).toBeUndefined();
    await settle();
    // Frame 0 is in the encoder (its write not finished), frame 1 waits: 2 in hand; 2–9 dropped.
    expect(enc.written.length).toBe(1);
    expect(sink.stats[0]).toMatchObject({ offered: 10, taken: 2, dropped: 8, skipped: 0, written: 0 });
    expect(reads.n).toBe(2); // only the taken frames' pictures were read
    // Still stuck: more frames are dropped, none copied.
    for (let i = 10; i < 15; i++) sink.offer(frameAt(i, reads));
    expect(sink.stats[0]).toMatchObject({ offered: 15, taken: 2, dropped: 13 });
    expect(reads.n).toBe(2);

    enc.release();
    await settle();
    expect(sink.stats[0]).toMatchObject({ written: 2 });
    // Caught up: frames are taken again.
    for (let i = 15; i < 18; i++) {
      sink.offer(frameAt(i, reads));
      await settle();
    }
    await sink.close();
    const st = sink.stats[0];
    expect(st).toMatchObject({ offered: 18, taken: 5, dropped: 13, skipped: 0, written: 5, lost: 0 });
    expect(st.taken + st.dropped + st.skipped).toBe(st.offered);
    expect(reads.n).toBe(5);
    // Frames 2–14 were dropped: frame 1 is repeated in their 13 places, so the video keeps its timing:
    // 18 frames at 10 fps, as the source.
    expect(st.repeated).toBe(13);
    expect(enc.written.length).toBe(18);
    expect(enc.written.slice(2, 15).every((b) => b[0] === 1)).toBe(true);
    expect(Array.from(enc.written.slice(15), (b) => b[0])).toEqual([15, 16, 17]);
    expect(enc.closed).toBe(true);
    expect(enc.options).toMatchObject({ width: 8, height: 4, fps: 10, order: 'bgr', layout: 'fragmented', gop: 20 });
    expect(logs.some((l) => /written 5 .*dropped 13/.test(l))).toBe(true);
  });

  it('its drops are in /metrics as argus_frames_dropped_total{reason="annotate_behind"} per source', async () => {
    const { options, encoders } = sinkWith({ queue: 1 });
    const sink = await AnnotateSink.open(options);
    sink.offer(frameAt(0, { n: 0 }));
    encoders[0].hold();
    for (let i = 1; i < 5; i++) sink.offer(frameAt(i, { n: 0 }));
    const text = await new Metrics({ stats: () => [], provider: 'cpu', annotate: sink }).scrape();
    expect(text).toContain('argus_frames_dropped_total{source="cam",reason="annotate_behind"} 4');
    encoders[0].release();
    await sink.close();
  });

  it('holds at most queue frames per source, whatever the other sources do', async () => {
    const { options, encoders } = sinkWith({ queue: 3, sources: ['a', 'b'] });
    const sink = await AnnotateSink.open(options);
    const reads = { n: 0 };
    sink.offer(frameAt(0, reads, 'a'));
    sink.offer(frameAt(0, reads, 'b'));
    encoders.forEach((e) => e.hold());
    for (let i = 1; i < 8; i++) {
      sink.offer(frameAt(i, reads, 'a'));
      sink.offer(frameAt(i, reads, 'b'));
    }
    const [a, b] = sink.stats;
    expect([a.source, a.taken, a.dropped, b.source, b.taken, b.dropped]).toEqual(['a', 3, 5, 'b', 3, 5]);
    expect(encoders.map((e) => e.options.path)).toEqual([...sink.paths.values()]);
    encoders.forEach((e) => e.release());
    await sink.close();
    // Frames 3–7 were dropped at the end: the last one written stands in for them at the close,
    // so each video has its source's 8 frames.
    for (const [i, st] of sink.stats.entries()) {
      expect(st).toMatchObject({ written: 3, repeated: 5 });
      expect(encoders[i].written.map((b) => b[0])).toEqual([0, 1, 2, 2, 2, 2, 2, 2]);
    }
  });

  it('skips frames above the output fps without copying them', async () => {
    const { options, encoders } = sinkWith({ fps: 5 });
    const sink = await AnnotateSink.open(options);
    const reads = { n: 0 };
    for (let i = 0; i < 10; i++) {
      sink.offer(frameAt(i, reads));
      await settle();
    }
    await sink.close();
    expect(sink.stats[0]).toMatchObject({ offered: 10, taken: 5, skipped: 5, dropped: 0, written: 5, repeated: 0, fps: 5 });
    expect(reads.n).toBe(5);
    expect(encoders[0].written.map((b) => b[0])).toEqual([0, 2, 4, 6, 8]);
  });

  it('an encoder that fails: logged once, the frame counted lost, later frames dropped, ffmpeg killed', async () => {
    const { options, encoders, logs } = sinkWith();
    const sink = await AnnotateSink.open(options);
    const reads = { n: 0 };
    sink.offer(frameAt(0, reads));
    await settle();
    encoders[0].failWith = new Error('ffmpeg exited with code 1: No space left on device');
    sink.offer(frameAt(1, reads));
    await settle();
    for (let i = 2; i < 6; i++) sink.offer(frameAt(i, reads));
    await sink.close();
    const st = sink.stats[0];
    expect(st).toMatchObject({ offered: 6, taken: 2, written: 1, lost: 1, dropped: 4 });
    expect(st.error).toMatch(/No space left/);
    expect(encoders[0].killed).toBe(true);
    expect(logs.filter((l) => /writing .* failed/.test(l))).toHaveLength(1);
    // The summary names the count for what it is: frames handed to ffmpeg, not frames in the file.
    const summary = logs.find((l) => /^annotate: cam → /.test(l))!;
    expect(summary).toMatch(/: 1 frames handed to the encoder, not all of them in the file,/);
    expect(summary).not.toMatch(/written 1/);
    // The frames after the failure were dropped because nothing was written any more, not for being behind.
    expect(summary).toMatch(/dropped 4 \(the drawing or the encoder was behind, or no video was being written\)/);
    // So /metrics too: they and the frame lost are not in the video because it failed (they were
    // all annotate_behind, and the lost frame nowhere).
    expect(st.unwritten).toBe(4);
    const text = await new Metrics({ stats: () => [], provider: 'cpu', annotate: sink }).scrape();
    expect(text).toContain('argus_frames_dropped_total{source="cam",reason="annotate_behind"} 0');
    expect(text).toContain('argus_frames_dropped_total{source="cam",reason="annotate_failed"} 5');
  });

  it('close waits for the frames in hand, then cuts ffmpeg off after closeTimeoutMs (virtual time)', async () => {
    vi.useFakeTimers();
    const { options, encoders } = sinkWith({ closeTimeoutMs: 5000 });
    const sink = await AnnotateSink.open(options);
    sink.offer(frameAt(0, { n: 0 }));
    encoders[0].closeNever = true;
    let done = false;
    const closing = sink.close().then(() => (done = true));
    await vi.advanceTimersByTimeAsync(4999);
    expect(done).toBe(false);
    expect(encoders[0].written.length).toBe(1); // the frame in hand was written before the close
    expect(encoders[0].killed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(encoders[0].killed).toBe(true);
    await vi.advanceTimersByTimeAsync(1000);
    await closing;
    expect(done).toBe(true);
    expect(sink.stats[0].error).toMatch(/5000 ms.*killed/);
    // After the close, offers are dropped and counted.
    sink.offer(frameAt(1, { n: 0 }));
    expect(sink.stats[0]).toMatchObject({ offered: 2, dropped: 1 });
  });
});

describe('AnnotateSink: drawing at the output size', () => {
  it('scales the picture to maxWidth (even sizes) and draws the boxes at the scaled place', async () => {
    const { options, encoders } = sinkWith({ draw: undefined, maxWidth: 101, channelOrder: 'rgb' });
    const sink = await AnnotateSink.open(options);
    const w = 200, h = 100;
    const r = frameAt(0, { n: 0 }, 'cam', w, h);
    (r.frame.data as Buffer).fill(128);
    // A person box in source pixels: 40..160 × 20..90, i.e. 20..80 × 10..45 at half size.
    r.detections = new Detections(new Float32Array([40, 20, 160, 90]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([3]));
    sink.offer(r);
    await vi.waitFor(() => expect(encoders[0]?.written.length).toBe(1));
    await sink.close();
    const e = encoders[0];
    expect([e.options.width, e.options.height]).toEqual([100, 50]);
    const px = e.written[0];
    expect(px.length).toBe(100 * 50 * 3);
    const at = (x: number, y: number) => Array.from(px.subarray((y * 100 + x) * 3, (y * 100 + x) * 3 + 3));
    // The outline's left and bottom edges, in output pixels, are red (a 1 px stroke on the edge:
    // half of it on each side, blended with the grey); inside and outside stay grey.
    const red = (x: number, y: number) => at(x, y)[0] - at(x, y)[2];
    expect(red(20, 30)).toBeGreaterThan(60);
    expect(red(50, 45)).toBeGreaterThan(60);
    for (const [x, y] of [[50, 30], [90, 30], [10, 40]]) expect(at(x, y), `${x},${y}`).toEqual([128, 128, 128]);
  });
});

describe('AnnotateSink: a mid-stream change of resolution (model.resize: fast)', () => {
  /** A frame as ffmpeg letterboxes it for a 320×320 model: the picture of src size at the top left, grey. */
  const fastFrame = (seq: number, srcWidth: number, srcHeight: number): FrameResult => {
    const r = frameAt(seq, { n: 0 }, 'cam', 320, 320);
    const lb = letterbox(srcWidth, srcHeight, 320, 320);
    (r.frame.data as Buffer).fill(128);
    return { ...r, frame: { ...r.frame, data: r.frame.data, layout: 'letterboxed', letterbox: lb } };
  };

  it('a portrait segment after a landscape start is letterboxed into the video, not squashed, and its boxes land on it', async () => {
    const { options, encoders } = sinkWith({ draw: undefined, channelOrder: 'rgb' });
    const sink = await AnnotateSink.open(options);
    // 768×432 → the model's 320×180 picture: the video's size.
    sink.offer(fastFrame(0, 768, 432));
    await vi.waitFor(() => expect(encoders[0]?.written.length).toBe(1));
    // Then 216×384 (portrait): 180×320 in the model's input. In the 320×180 video it keeps its
    // aspect: 101×180 (source pixels × 0.46875), centred at x 109.
    const r = fastFrame(1, 216, 384);
    // A box in source pixels 64..192 × 128..320: 139..199 × 60..150 in the video.
    r.detections = new Detections(new Float32Array([64, 128, 192, 320]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([3]));
    sink.offer(r);
    await vi.waitFor(() => expect(encoders[0].written.length).toBe(2));
    await sink.close();
    const e = encoders[0];
    expect([e.options.width, e.options.height]).toEqual([320, 180]);
    const px = e.written[1];
    const at = (x: number, y: number) => Array.from(px.subarray((y * 320 + x) * 3, (y * 320 + x) * 3 + 3));
    // Black bars left and right of the picture; the picture grey, not stretched over the width.
    for (const [x, y] of [[20, 90], [105, 90], [214, 90], [300, 30]]) expect(at(x, y), `bar at ${x},${y}`).toEqual([0, 0, 0]);
    for (const [x, y] of [[112, 90], [120, 20], [205, 170]]) expect(at(x, y), `picture at ${x},${y}`).toEqual([128, 128, 128]);
    // The box's left and bottom edges are red at their place in the letterboxed picture; inside stays grey.
    const red = (x: number, y: number) => at(x, y)[0] - at(x, y)[2];
    expect(red(139, 100)).toBeGreaterThan(60);
    expect(red(169, 150)).toBeGreaterThan(60);
    expect(at(169, 100)).toEqual([128, 128, 128]);
    // The first (landscape) frame filled the whole video.
    expect(e.written[0].every((v) => v === 128)).toBe(true);
  });
});

describe('annotatePaths', () => {
  it('one file per source: {source}, a folder, -<id> before the extension for several sources, the path as is for one', () => {
    const dir = tmp();
    mkdirSync(join(dir, 'videos'));
    expect([...annotatePaths('out/{source}.mp4', ['a b', 'c'], dir).values()]).toEqual([join(dir, 'out/a_b.mp4'), join(dir, 'out/c.mp4')]);
    expect([...annotatePaths('videos', ['a'], dir).values()]).toEqual([join(dir, 'videos/a.mp4')]);
    expect([...annotatePaths('new-folder/', ['a'], dir).values()]).toEqual([join(dir, 'new-folder/a.mp4')]);
    expect([...annotatePaths('/x/run.mp4', ['a', 'b'], dir).values()]).toEqual(['/x/run-a.mp4', '/x/run-b.mp4']);
    expect([...annotatePaths('run.mp4', ['a'], dir).values()]).toEqual([join(dir, 'run.mp4')]);
  });

  it('an output that cannot be written fails the start, naming sinks.annotate.path', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'file'), '');
    const { options } = sinkWith({ path: join(dir, 'file', 'out.mp4') });
    const err = await AnnotateSink.open(options).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
    expect(err.message).toMatch(/sinks\.annotate\.path: cannot write .*file\/out\.mp4/);
  });
});

describe('AnnotateSink.open: never over an input, only into a container H.264 goes in', () => {
  it('an output that is a file a source reads (by path or through a symlink) fails the start and leaves it untouched', async () => {
    const dir = tmp();
    const input = join(dir, 'cam.mp4');
    writeFileSync(input, 'the camera recording');
    symlinkSync(input, join(dir, 'link.mp4'));
    for (const path of [input, join(dir, 'link.mp4'), join(dir, '{source}.mp4')]) {
      const { options } = sinkWith({ path, inputs: [input] });
      const err = await AnnotateSink.open(options).catch((e) => e);
      expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
      expect(err.message).toMatch(/sinks\.annotate\.path: .* is a file a source reads \(.*cam\.mp4\); refusing to write over it/);
      expect(readFileSync(input, 'utf8')).toBe('the camera recording');
    }
    // Another name beside it is fine.
    const ok = await AnnotateSink.open(sinkWith({ path: join(dir, 'out.mp4'), inputs: [input] }).options);
    await ok.close();
  });

  it('an output that is a named pipe (or a device) named like a video fails the start at once (its creation waited for a reader, the event loop blocked, deaf to Ctrl-C)', async () => {
    const dir = tmp();
    const fifo = join(dir, 'out.mp4');
    execFileSync('mkfifo', [fifo]);
    const err = await AnnotateSink.open(sinkWith({ path: fifo }).options).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
    expect(err.message).toBe(`sinks.annotate.path: ${fifo} is not a regular file (a named pipe, a socket or a device): the video is written to a file (ffmpeg seeks back in it to finish the MP4)`);
  });

  it('an output another sink writes (--jsonl out.mp4 --annotate out.mp4) fails the start, naming both', async () => {
    const dir = tmp();
    const jsonl = join(dir, 'out.mp4');
    const { options } = sinkWith({ path: jsonl, writtenBy: new Map([[jsonl, 'sinks.jsonl.path (--jsonl)']]) });
    const err = await AnnotateSink.open(options).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
    expect(err.message).toBe(`sinks.annotate.path: ${jsonl} is written by sinks.jsonl.path (--jsonl) too; name another file`);
  });

  it('in a run, --annotate o.mp4 --jsonl o.mp4: refused before any output is opened, no o.mp4 left behind (the JSONL sink made it, empty, before the refusal)', async () => {
    const dir = tmp();
    const clip = join(dir, 'clip.mp4');
    execFileSync(resolveFfmpegSync().path, ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '2', '-pix_fmt', 'yuv420p', clip]);
    const out = join(dir, 'o.mp4');
    const config = parseConfigText(`sources:\n  - id: cam\n    uri: ${clip}\n`, PipelineSchema, 'p.yaml', {});
    const { detector } = await fakeDetector();
    try {
      const err = await runPipeline(config, { detector, baseDir: dir, status: false, log: () => {}, jsonl: out, annotate: out }).catch((e: unknown) => e);
      expect(isArgusError(err, 'VAP_ERR_SINK_FILE')).toBe(true);
      expect((err as Error).message).toBe(`sinks.annotate.path: ${out} is written by sinks.jsonl.path (--jsonl) too; name another file`);
      expect(existsSync(out)).toBe(false);
    } finally {
      await detector.release();
    }
  }, 60_000);

  it.each(['a.gif', 'a.png', 'noextension', 'a.webm'])('%s: refused at start, naming the containers that work', async (name) => {
    const { options } = sinkWith({ path: join(tmp(), name) });
    const err = await AnnotateSink.open(options).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
    expect(err.message).toMatch(/name a \.mp4, \.m4v, \.mov, \.mkv file/);
    // `--annotate out` meant a folder not made yet: the folder form is said too.
    expect(err.message.endsWith('or end the path in / for a folder (one ID.mp4 a source)')).toBe(name === 'noextension');
  });
});

describe('AnnotateSink with sources attached after the start (argus worker)', () => {
  it('a plain file path names one file per camera from the start (out-<id>.mp4): two cameras never share one file', async () => {
    const dir = tmp();
    // A worker's YAML has no sources: every camera is attached later.
    const { options, encoders } = sinkWith({ path: join(dir, 'out.mp4'), sources: [], attachable: true });
    const sink = await AnnotateSink.open(options);
    sink.offer(frameAt(0, { n: 0 }, 'cam1'));
    sink.offer(frameAt(0, { n: 0 }, 'cam2'));
    await sink.close();
    expect(encoders.map((e) => e.options.path)).toEqual([join(dir, 'out-cam1.mp4'), join(dir, 'out-cam2.mp4')]);
    expect(sink.stats.map((s) => s.path)).toEqual([join(dir, 'out-cam1.mp4'), join(dir, 'out-cam2.mp4')]);
    expect(existsSync(join(dir, 'out.mp4'))).toBe(false);
    // A run that can attach sources and starts with one: the same form for it, from the start.
    const one = await AnnotateSink.open(sinkWith({ path: join(dir, 'run.mp4'), sources: ['cam'], attachable: true }).options);
    expect([...one.paths.values()]).toEqual([join(dir, 'run-cam.mp4')]);
    await one.close();
  });

  it("an attached camera's output that is a file a source reads, another camera's, or not writable: that camera's video is refused (VAP_ERR_SINK_FILE, logged) before its encoder starts; the input is untouched, the others are written", async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'videos'));
    const recording = join(dir, 'videos', 'cam1.mp4');
    writeFileSync(recording, 'the camera recording');
    // Pipeline.inputs: the attached cameras' files join it as they start.
    const inputs: string[] = [];
    const errors: { msg: string; code: unknown }[] = [];
    const { options, encoders } = sinkWith({ path: join(dir, 'videos/'), sources: [], attachable: true, inputs, log: (msg, fields, level) => level === 'error' && errors.push({ msg, code: fields?.code }) });
    const sink = await AnnotateSink.open(options);
    inputs.push(recording);
    for (let i = 0; i < 3; i++) sink.offer(frameAt(i, { n: 0 }, 'cam1'));
    sink.offer(frameAt(0, { n: 0 }, 'cam2'));
    // Ids that differ only in characters a file name cannot hold: one file for both.
    sink.offer(frameAt(0, { n: 0 }, 'cam 3'));
    sink.offer(frameAt(0, { n: 0 }, 'cam_3'));
    await sink.close();
    expect(encoders.map((e) => e.options.path)).toEqual([join(dir, 'videos/cam2.mp4'), join(dir, 'videos/cam_3.mp4')]);
    expect(readFileSync(recording, 'utf8')).toBe('the camera recording');
    const [cam1, cam2, cam3, cam3b] = sink.stats;
    expect(cam1).toMatchObject({ source: 'cam1', offered: 3, taken: 0, dropped: 3, written: 0 });
    expect(cam1.error).toMatch(/^VAP_ERR_SINK_FILE: sinks\.annotate\.path: .*videos\/cam1\.mp4 is a file a source reads/);
    expect([cam2.error, cam3.error]).toEqual([undefined, undefined]);
    expect(cam3b.error).toMatch(/^VAP_ERR_SINK_FILE: .*cam_3\.mp4 is the video of cam 3 too/);
    expect(errors.map((e) => e.code)).toEqual(['VAP_ERR_SINK_FILE', 'VAP_ERR_SINK_FILE']);
    expect(errors[0].msg).toMatch(/^annotate: no video of cam1: /);

    // A folder that cannot be made: refused the same way.
    writeFileSync(join(dir, 'file'), '');
    const bad = sinkWith({ path: join(dir, 'file', '{source}.mp4'), sources: [], attachable: true });
    const sink2 = await AnnotateSink.open(bad.options);
    sink2.offer(frameAt(0, { n: 0 }, 'cam'));
    await sink2.close();
    expect(bad.encoders).toHaveLength(0);
    expect(sink2.stats[0].error).toMatch(/^VAP_ERR_SINK_FILE: sinks\.annotate\.path: cannot write .*file\/cam\.mp4/);
  });

  it('a camera that leaves (detach) has its video finished at once, not at the stop: 50 cameras that came and went leave no encoder open; one that comes back writes a file of its own (the first stay’s video is kept), its figures adding up', async () => {
    const { options, encoders, logs } = sinkWith({ path: join(tmp(), 'out.mp4'), sources: [], attachable: true });
    const sink = await AnnotateSink.open(options);
    for (let i = 0; i < 50; i++) {
      sink.offer(frameAt(0, { n: 0 }, `cam${i}`));
      sink.offer(frameAt(1, { n: 0 }, `cam${i}`));
      await sink.detach(`cam${i}`);
    }
    expect(encoders).toHaveLength(50);
    expect(encoders.filter((e) => !e.closed)).toHaveLength(0); // (before: 50 encoders, 50 ffmpeg, open until the stop)
    expect(encoders[0].written).toHaveLength(2);
    expect(logs.filter((m) => m.startsWith('annotate: cam7 → '))).toHaveLength(1);
    // cam0 back (to this worker): a new encoder, a file of its own (the first stay's video stays); the counts go on.
    expect(sink.stats.find((s) => s.source === 'cam0')!.path).toBe(encoders[0].options.path);
    sink.offer(frameAt(100, { n: 0 }, 'cam0'));
    await settle();
    expect(encoders).toHaveLength(51);
    expect(encoders[50].options.path).toBe(encoders[0].options.path.replace(/\.mp4$/, '.2.mp4'));
    expect(sink.stats.find((s) => s.source === 'cam0')!.path).toBe(encoders[50].options.path);
    expect(encoders[50].written).toHaveLength(1); // no repeats of the earlier attachment's frames
    expect(sink.stats.find((s) => s.source === 'cam0')).toMatchObject({ offered: 3, written: 3 });
    await sink.close();
    expect(encoders[50].closed).toBe(true);
  });

  it('frames of a camera offered while its video is being finished are dropped and counted, not written into the ending file', async () => {
    const { options, encoders } = sinkWith({ path: join(tmp(), 'out.mp4'), sources: [], attachable: true });
    const sink = await AnnotateSink.open(options);
    sink.offer(frameAt(0, { n: 0 }, 'cam'));
    encoders[0].hold();
    await settle();
    const leaving = sink.detach('cam');
    sink.offer(frameAt(1, { n: 0 }, 'cam'));
    encoders[0].release();
    await leaving;
    expect(encoders[0].written).toHaveLength(1);
    expect(sink.stats[0]).toMatchObject({ offered: 2, taken: 1, dropped: 1 });
    await sink.close();
  });

  it("in a run: a camera attached with a file in the annotate folder keeps its recording (Pipeline.inputs holds the attached cameras' files), the other camera gets its video", async () => {
    const dir = tmp();
    mkdirSync(join(dir, 'videos'));
    const recording = join(dir, 'videos', 'a.mp4');
    const ffmpeg = resolveFfmpegSync().path;
    execFileSync(ffmpeg, ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', recording]);
    execFileSync(ffmpeg, ['-loglevel', 'error', '-i', recording, '-c', 'copy', join(dir, 'b.mp4')]);
    const before = readFileSync(recording);
    // A worker's YAML: no sources, a cluster section (runPipeline does not join it).
    const config = parseConfigText(`name: w\ncluster: { brokers: ["127.0.0.1:1"] }\nsinks: { annotate: { path: videos/, queue: 8 } }\n`, PipelineSchema, 'w.yaml', {});
    const { detector } = await fakeDetector();
    try {
      const camera = (id: string, uri: string) => SourceSchema.parse({ id, uri, rate: 'fast' });
      const summary = await runPipeline(config, {
        detector,
        baseDir: dir,
        status: false,
        log: () => {},
        attached: (p, stop) => merge(p.attach(camera('a', recording), stop), p.attach(camera('b', join(dir, 'b.mp4')), stop)),
      });
      expect(readFileSync(recording).equals(before)).toBe(true);
      const by = Object.fromEntries(summary.annotate!.map((s) => [s.source, s]));
      expect(by.a.error).toMatch(/VAP_ERR_SINK_FILE: .*is a file a source reads/);
      expect(by.b.path).toBe(join(dir, 'videos/b.mp4'));
      expect(by.b.error).toBeUndefined();
      expect(by.b.written).toBeGreaterThan(0);
    } finally {
      await detector.release();
    }
  }, 60_000);
});

describe('AnnotateSink in an argus worker run: a camera that leaves', () => {
  it("has its video finished when its chain ends (Pipeline onDetach), while the run goes on: its ffmpeg does not wait for the stop", async () => {
    const dir = tmp();
    const clip = join(dir, 'clip.mp4');
    execFileSync(resolveFfmpegSync().path, ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', clip]);
    const config = parseConfigText(`name: w\ncluster: { brokers: ["127.0.0.1:1"] }\nsinks: { annotate: { path: videos/, queue: 8 } }\n`, PipelineSchema, 'w.yaml', {});
    const { detector } = await fakeDetector();
    let finished!: () => void;
    const videoEnded = new Promise<void>((r) => (finished = r));
    const detached: string[] = [];
    let waitedOut = false;
    let wait: NodeJS.Timeout | undefined;
    const orWaited = new Promise<void>((r) => (wait = setTimeout(() => ((waitedOut = true), r()), 20_000)));
    try {
      const summary = await runPipeline(config, {
        detector,
        baseDir: dir,
        status: false,
        log: (m) => m.startsWith('annotate: b → ') && finished(),
        onDetach: (id) => detached.push(id),
        // The run goes on until b's video is finished, at most 20 s (before, only the stop finished it).
        attached: (p, stop) => merge(p.attach(SourceSchema.parse({ id: 'b', uri: clip, rate: 'fast' }), stop), from(Promise.race([videoEnded, orWaited])).pipe(mergeMap(() => EMPTY))),
      });
      expect(waitedOut).toBe(false);
      expect(detached).toEqual(['b']);
      // Finished before the stop: the file is a whole MP4 (ffmpeg closed it) with its 5 frames.
      const out = execFileSync(resolveFfmpegSync().path.replace(/ffmpeg$/, 'ffprobe'), ['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', join(dir, 'videos', 'b.mp4')], { encoding: 'utf8' });
      expect(Number(out.trim())).toBeGreaterThanOrEqual(5);
      expect(summary.annotate![0]).toMatchObject({ source: 'b', written: 5 });
    } finally {
      clearTimeout(wait);
      await detector.release();
    }
  }, 90_000);
});

describe('VideoWriter: a fragmented file killed before its first fragment', () => {
  it('has its index on disk (written at its first frame), not a file no player opens', async () => {
    const path = join(tmp(), 'v.mp4');
    const w = new VideoWriter({ ffmpegPath: resolveFfmpegSync().path, path, width: 64, height: 64, fps: 10, order: 'rgb', layout: 'fragmented', gop: 50 });
    // Three frames of a 50-frame fragment: then killed, as at the close bound on a busy machine.
    for (let i = 0; i < 3; i++) await w.write(Buffer.alloc(64 * 64 * 3, 40 * i));
    let bytes = Buffer.alloc(0);
    for (let k = 0; k < 100 && !bytes.includes('moov'); k++) {
      await new Promise((r) => setTimeout(r, 50));
      if (existsSync(path)) bytes = readFileSync(path);
    }
    w.kill();
    await w.close().catch(() => undefined);
    // Before: 0 bytes (the header sat in ffmpeg's 32 KB write buffer until the first fragment).
    expect(existsSync(path) && readFileSync(path).includes('moov')).toBe(true);
  }, 30_000);
});

describe('VideoWriter: a terminal\'s Ctrl-C', () => {
  it('does not reach the encoder: it runs in a process group of its own, so argus writes it its last frames and closes the file', async () => {
    const path = join(tmp(), 'v.mp4');
    const w = new VideoWriter({ ffmpegPath: resolveFfmpegSync().path, path, width: 64, height: 64, fps: 10, order: 'rgb', layout: 'fragmented', gop: 5 });
    const pid = (w as unknown as { child: { pid: number } }).child.pid;
    // Its process group (/proc/PID/stat's fifth field, after the parenthesised name): its own, not
    // this process's, whose group a terminal's Ctrl-C goes to. Before, it was this process's, and
    // SIGINT to the group ended the encoder (255) with frames still to write.
    const pgid = (p: number) => Number(readFileSync(`/proc/${p}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
    expect(pgid(pid)).toBe(pid);
    expect(pgid(pid)).not.toBe(pgid(process.pid));
    for (let i = 0; i < 12; i++) await w.write(Buffer.alloc(64 * 64 * 3, 20 * i));
    await w.close();
    expect(readFileSync(path).includes('moov')).toBe(true);
  }, 30_000);
});

describe('VideoWriter: an ffmpeg that exits', () => {
  it('a write after ffmpeg has gone (it cannot write this container) fails with VAP_ERR_SINK_FILE instead of waiting forever', async () => {
    const ffmpeg = resolveFfmpegSync().path;
    // The GIF muxer refuses H.264: ffmpeg exits at once with its input pipe unread.
    const w = new VideoWriter({ ffmpegPath: ffmpeg, path: join(tmp(), 'v.gif'), width: 320, height: 240, fps: 10, order: 'rgb' });
    const frame = Buffer.alloc(320 * 240 * 3, 7);
    let err: unknown;
    for (let i = 0; i < 200 && !err; i++) err = await w.write(frame).then(() => undefined, (e: unknown) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SINK_FILE');
    await expect(w.close()).rejects.toThrow(/ffmpeg exited with code/);
  }, 30_000);

  it('an ffmpeg killed by a signal (SIGXFSZ: over the file size limit) is reported by the signal\'s name, not as "code null"', async () => {
    const dir = tmp();
    // ffmpeg under `ulimit -f`: the kernel kills it with SIGXFSZ once the file passes the limit.
    const wrapper = join(dir, 'ffmpeg-limited.sh');
    writeFileSync(wrapper, `#!/bin/sh\nulimit -f 16\nexec '${resolveFfmpegSync().path}' "$@"\n`, { mode: 0o755 });
    const w = new VideoWriter({ ffmpegPath: wrapper, path: join(dir, 'v.mp4'), width: 64, height: 64, fps: 10, order: 'rgb', layout: 'fragmented', gop: 2 });
    // Noise does not compress: a few frames pass the limit.
    const noise = () => Buffer.from(Array.from({ length: 64 * 64 * 3 }, () => Math.floor(Math.random() * 256)));
    let err: unknown;
    for (let i = 0; i < 300 && !err; i++) err = await w.write(noise()).then(() => undefined, (e: unknown) => e);
    const closed = await w.close().then(() => undefined, (e: unknown) => e);
    for (const e of [err, closed].filter(Boolean)) {
      expect(isArgusError(e) && e.code).toBe('VAP_ERR_SINK_FILE');
      expect((e as Error).message).toMatch(/ffmpeg was killed by SIGXFSZ \(the file size limit/);
      expect((e as Error).message).not.toMatch(/code null|EPIPE/);
    }
    expect(closed).toBeDefined();
  }, 30_000);
});

describe('VideoWriter: fragmented MP4', () => {
  const ffmpeg = resolveFfmpegSync().path;
  const probeFrames = (file: string) =>
    Number(execFileSync('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', file], { encoding: 'utf8' }).trim());

  it('starts with its index, writes a fragment per keyframe interval, and a file cut mid-way (a killed process) still plays up to its last whole fragment', async () => {
    const dir = tmp();
    const file = join(dir, 'v.mp4');
    const w = new VideoWriter({ ffmpegPath: ffmpeg, path: file, width: 64, height: 32, fps: 10, order: 'rgb', layout: 'fragmented', gop: 10 });
    for (let i = 0; i < 40; i++) await w.write(Buffer.alloc(64 * 32 * 3, (i * 6) & 255));
    await w.close();
    expect(probeFrames(file)).toBe(40);
    // Top-level boxes: ftyp, moov (empty of samples), then moof + mdat pairs.
    const bytes = readFileSync(file);
    const boxes: { type: string; at: number; size: number }[] = [];
    for (let at = 0; at < bytes.length; ) {
      const size = bytes.readUInt32BE(at);
      boxes.push({ type: bytes.toString('latin1', at + 4, at + 8), at, size });
      at += size;
    }
    const types = boxes.map((b) => b.type);
    expect(types.slice(0, 2)).toEqual(['ftyp', 'moov']);
    const moofs = boxes.filter((b) => b.type === 'moof');
    expect(moofs.length).toBeGreaterThanOrEqual(4); // 40 frames, a keyframe every 10
    // Cut in the middle of the third fragment, as a kill during a write would leave it.
    const third = moofs[2];
    const cut = join(dir, 'cut.mp4');
    writeFileSync(cut, bytes.subarray(0, third.at + Math.floor(third.size / 2)));
    expect(probeFrames(cut)).toBe(20);
  });
});
