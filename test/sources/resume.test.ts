// Real ffmpeg: files resume where they were after ffmpeg dies or stalls (frame-exact, seq/pts
// continuous), looped files keep looping, and credentials never reach transitions or logs.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, take, toArray } from 'rxjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Frame } from '../../src/core/frame.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { createPipeline } from '../../src/pipeline/pipeline.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import type { ReconnectPolicy, Transition } from '../../src/sources/health.js';
import { supervisedSource, type SupervisedSourceOptions } from '../../src/sources/supervised-source.js';
import { closedPort } from '../helpers/net.js';

const FF = defaultFfmpegPath();
const dir = mkdtempSync(join(tmpdir(), 'argus-resume-'));
const output = { width: 64, height: 64, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const policy: ReconnectPolicy = { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 5, healthyResetMs: 30_000 };
const hash = (f: Frame) => createHash('sha1').update(f.data).digest('hex');

let mp4: string, ts: string, clip: string;
/** Frame hashes of a whole file, decoded as fast as possible. */
const reference = async (url: string) => {
  const frames = await lastValueFrom(ffmpegSource({ id: 'ref', input: { url, kind: 'file', rate: 'fast', loop: false }, output, ffmpegPath: FF }).pipe(toArray()));
  return frames.map(hash);
};
const refs = new Map<string, string[]>();

beforeAll(async () => {
  // testsrc draws a frame counter: every frame differs. Key frame every 10 frames; the TS has B-frames.
  const make = (args: string[], out: string) => execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', ...args, '-c:v', 'libx264', '-g', '10', '-pix_fmt', 'yuv420p', out]);
  mp4 = join(dir, 'count.mp4');
  make(['-t', '4'], mp4);
  ts = join(dir, 'count.ts');
  make(['-t', '4', '-f', 'mpegts'], ts);
  clip = join(dir, 'clip.mp4');
  make(['-frames:v', '10'], clip);
  for (const f of [mp4, ts, clip]) refs.set(f, await reference(f));
}, 60_000);

function source(url: string, loop: boolean, over: Partial<SupervisedSourceOptions> = {}) {
  const transitions: Transition[] = [];
  const children: ChildProcess[] = [];
  const src = supervisedSource({
    id: 'cam',
    input: { url, kind: 'file', rate: 'native', loop },
    output,
    ffmpegPath: FF,
    reconnect: policy,
    // Generous for healthy runs (a loaded machine must not trip it); the stall test sets its own.
    watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 },
    onTransition: (t) => transitions.push(t),
    onSpawn: (c) => children.push(c),
    ...over,
  });
  return { src, transitions, children };
}

const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]);

/** Every frame of the source until it ends; `act` is called once, at the `at`-th frame. */
function collect(s: ReturnType<typeof source>, at: number, act: () => void): Promise<Frame[]> {
  let n = 0;
  const frames: Frame[] = [];
  return new Promise<Frame[]>((resolve, reject) =>
    s.src.subscribe({
      next: (f) => {
        frames.push(f);
        if (++n === at) act();
      },
      error: reject,
      complete: () => resolve(frames),
    }),
  );
}

describe('a native-rate file resumes where it was (real ffmpeg)', () => {
  it.each([
    ['MP4 (exact seek)', () => mp4],
    ['MPEG-TS (seek with a margin, trimmed)', () => ts],
  ])('%s: ffmpeg killed after 12 frames → restarted at frame 12: every frame once, in order; seq/pts continuous; ends', async (_n, file) => {
    const s = source(file(), false);
    const frames = await collect(s, 12, () => s.children[0].kill('SIGKILL'));
    expect(s.children).toHaveLength(2);
    expect(s.transitions.map((t) => t.state)).toEqual(['starting', 'streaming', 'reconnecting', 'streaming', 'ended']);
    expect(s.transitions[2].code).toBe('VAP_ERR_SOURCE_EXIT');
    // The frames are the file's frames, each exactly once (the first run may have delivered
    // more than 12 before the kill took effect; the restart goes on after the last one).
    expect(frames.map(hash)).toEqual(refs.get(file()));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_f, i) => i));
    expect(increasing(frames.map((f) => f.pts))).toBe(true);
    expect(s.children[1].spawnargs.join(' ')).toMatch(/-ss \d+\.\d{6} .*-i /);
  }, 60_000);

  it('a file with `fps` above its own rate, killed after 12 frames: resumed at the next frame at the file\'s rate; pts the position played', async () => {
    const s = source(mp4, false, { input: { url: mp4, kind: 'file', rate: 'fast', loop: false, fps: 25 } });
    const frames = await collect(s, 12, () => s.children.at(-1)!.kill('SIGKILL'));
    // The first ffmpeg found the file's rate (10 fps) below 25 and was run again without the fps
    // filter; the restart after the kill starts so at once: three in all.
    expect(s.children).toHaveLength(3);
    expect(frames.map(hash)).toEqual(refs.get(mp4)); // each frame once, none repeated
    // pts is the position in the file, at the file's rate, across the restart.
    frames.forEach((f, i) => expect(f.pts, `frame ${i}`).toBeCloseTo(i / 10, 6));
  }, 60_000);

  it('a stalled native file (ffmpeg frozen): the watchdog restarts it at the next frame, and the stall shows in pts', async () => {
    const s = source(mp4, false, { watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 1000, stallMaxMs: 60_000 } });
    // SIGKILL (the watchdog's) ends a stopped process too.
    const frames = await collect(s, 8, () => process.kill(s.children[0].pid!, 'SIGSTOP'));
    expect(s.transitions.map((t) => t.state)).toEqual(['starting', 'streaming', 'stalled', 'reconnecting', 'streaming', 'ended']);
    expect(frames.map(hash)).toEqual(refs.get(mp4));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_f, i) => i));
    const pts = frames.map((f) => f.pts);
    expect(increasing(pts)).toBe(true);
    // A live-like file: the second or more without frames is in pts (frame spacing is 0.1 s).
    const gaps = pts.slice(1).map((p, i) => p - pts[i]);
    expect(Math.max(...gaps)).toBeGreaterThan(1);
  }, 60_000);
});

describe('a resumed MPEG-TS file whose key frames are further apart than the seek margin (real ffmpeg)', () => {
  it("the seek, which lands on the key frame after the time asked, is made again from further back: the run starts at the frame wanted (it lost the frames up to that key frame, or all the rest where it was the file's end)", async () => {
    // 20 s at 25 fps, a key frame every 10 s (x264's default 250 frames), B-frames.
    const long = join(dir, 'gop10.ts');
    execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=25', '-frames:v', '500', '-c:v', 'libx264', '-bf', '2', '-pix_fmt', 'yuv420p', '-f', 'mpegts', long]);
    const ref = await reference(long);
    expect(ref).toHaveLength(500);
    // As the supervisor resumes it at frame k: half a frame early, with its 3 s margin.
    const resumed = (k: number) =>
      lastValueFrom(ffmpegSource({ id: 'cam', input: { url: long, kind: 'file', rate: 'fast', loop: false, seek: k / 25 - 0.02, seekMargin: 3 }, output, ffmpegPath: FF }).pipe(toArray()));
    for (const k of [150, 375]) expect((await resumed(k)).map(hash)).toEqual(ref.slice(k));
  }, 60_000);
});

describe('a looped native file keeps looping (real ffmpeg)', () => {
  it('at the end of the file it starts over at 0 in the file; seq and pts keep growing', async () => {
    const s = source(clip, true);
    const frames = await lastValueFrom(s.src.pipe(take(35), toArray()));
    const ref = refs.get(clip)!;
    expect(frames.map(hash)).toEqual(frames.map((_f, i) => ref[i % 10]));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_f, i) => i));
    expect(increasing(frames.map((f) => f.pts))).toBe(true);
    expect(frames[34].pts).toBeGreaterThanOrEqual(3.4);
    expect(s.children.length).toBeGreaterThanOrEqual(4); // one ffmpeg per pass
    expect(s.transitions.map((t) => t.state)).toEqual(['starting', 'streaming', 'stopped']);
  }, 60_000);

  it('killed mid-pass: not failed (as before), resumed at the position', async () => {
    // The 4 s file: ffmpeg is still writing it when killed (it decodes ahead as far as the pipe
    // lets it; the 10-frame clip is decoded whole, and ffmpeg gone, before its second frame is due).
    const s = source(mp4, true);
    let n = 0;
    const frames: Frame[] = [];
    await new Promise<void>((resolve, reject) => {
      const sub = s.src.subscribe({
        next: (f) => {
          frames.push(f);
          n++;
          if (n === 4) s.children[0].kill('SIGKILL');
          if (n === 25) {
            sub.unsubscribe();
            resolve();
          }
        },
        error: reject,
      });
    });
    const ref = refs.get(mp4)!;
    expect(frames.map(hash)).toEqual(frames.map((_f, i) => ref[i % ref.length]));
    expect(frames.map((f) => f.seq)).toEqual(frames.map((_f, i) => i));
    expect(increasing(frames.map((f) => f.pts))).toBe(true);
    expect(s.transitions.map((t) => t.state)).toEqual(['starting', 'streaming', 'reconnecting', 'streaming', 'stopped']);
  }, 60_000);

  it('a fast looped file: pts is the position played (seq / fps), across loops', async () => {
    const s = source(clip, true, { input: { url: clip, kind: 'file', rate: 'fast', loop: true } });
    const frames = await lastValueFrom(s.src.pipe(take(25), toArray()));
    frames.forEach((f, i) => {
      expect(f.seq).toBe(i);
      expect(f.pts).toBeCloseTo(i / 10, 9);
    });
  }, 60_000);

  it('a file that cannot be opened still fails at once with its code', async () => {
    const bad = source(join(dir, 'missing.mp4'), true);
    const err = (await lastValueFrom(bad.src).catch((e: unknown) => e)) as { code: string };
    expect(err.code).toBe('VAP_ERR_SOURCE_OPEN');
    expect(bad.transitions.map((t) => t.state)).toEqual(['starting', 'failed']);
  });
});


describe('credentials never reach transitions or logs', () => {
  it('an RTSP URL with user:password to a port where nothing listens: every transition, error and pipeline log line is redacted', async () => {
    const port = await closedPort();
    const url = `rtsp://admin:s3cr3tpw@127.0.0.1:${port}/cam?token=t0ken`;
    const config = PipelineSchema.parse({
      sources: [{ id: 'gate', uri: url, reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 2 } }],
      model: { warmupRuns: 1 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const logs: string[] = [];
    const transitions: Transition[] = [];
    // The source never sends a frame, so the (fake) model is never asked to run.
    const { detector } = await fakeDetector();
    const p = await createPipeline(config, {
      detector,
      log: (msg, fields) => logs.push(`${msg} ${JSON.stringify(fields ?? {})}`),
      onTransition: (t) => transitions.push(t),
    });
    await lastValueFrom(p.results$.pipe(toArray()));
    expect(transitions.map((t) => t.state)).toEqual(['starting', 'reconnecting', 'reconnecting', 'failed']);
    const all = JSON.stringify(transitions) + JSON.stringify(logs) + (p.stats[0].error?.message ?? '');
    expect(all).not.toContain('s3cr3tpw');
    expect(all).not.toContain('t0ken');
    expect(p.stats[0].error?.message).toContain(`rtsp://***@127.0.0.1:${port}/cam?token=***`); // the URL is still named
    expect(logs.some((l) => /^ffmpeg \S+ at \S+ \(.+\)/.test(l))).toBe(true); // which ffmpeg, once, at start
    expect(logs.filter((l) => /^ffmpeg \S+ at /.test(l))).toHaveLength(1);
  }, 60_000);
});
