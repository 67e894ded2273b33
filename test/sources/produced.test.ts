// The `produced` stamp (core/frame.ts): when a frame was produced at the source, before
// decoding. ffmpeg is a fake child (injected spawn) where the pairing logic is tested, and the
// real ffmpeg where its reports are.
import { spawn as nodeSpawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { firstValueFrom, take, toArray } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { now } from '../../src/core/clock.js';
import { Pace } from '../../src/flow/pace.js';
import { e2eMs, pipelineMs, stageMs, type Frame } from '../../src/core/frame.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import type { FfmpegInputSpec } from '../../src/sources/ffmpeg-args.js';
import { ffmpegSource, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { MIRROR } from '../helpers/assets.js';
import { FakeFfmpeg } from './fake-ffmpeg.js';

const output = { width: 64, height: 48, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const FRAME = 64 * 48 * 3;
/** A file that exists (ffmpegSource checks); the fake ffmpeg never reads it. */
const FILE = join(MIRROR, 'streams', 'one-by-one-person-detection.mp4');

afterEach(() => vi.useRealTimers());

/** ffmpegSource over a fake ffmpeg; frames are collected (not released, so the stamps stay readable). */
function fake(input: FfmpegInputSpec) {
  let child!: FakeFfmpeg;
  const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, FRAME)).asChild();
  const frames: Frame[] = [];
  const sub = ffmpegSource({ id: 'cam', input, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn }).subscribe({ next: (f) => frames.push(f), error: (e) => { throw e; } });
  return { child, frames, sub };
}

/**
 * ffmpegSource over a fake ffmpeg with a stage that sets the pace: the stage works on each frame
 * it gets (marked on the pace) for `workMs(frame)` ms of virtual time.
 */
function paced(rate: 'native' | 'fast', workMs: (f: Frame) => number) {
  let child!: FakeFfmpeg;
  const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, FRAME)).asChild();
  const pace = new Pace();
  const frames: Frame[] = [];
  const end = { completed: false };
  const sub = ffmpegSource({ id: 'cam', input: { url: FILE, kind: 'file', rate, loop: false }, output, ffmpegPath: 'ffmpeg', pace, memo: { readsOnce: false }, spawn }).subscribe({
    next: (f) => {
      frames.push(f);
      pace.enter();
      setTimeout(() => pace.leave(), workMs(f));
    },
    error: (e) => {
      throw e;
    },
    complete: () => (end.completed = true),
  });
  return { child, frames, sub, end };
}

/**
 * A native-rate file at 10 fps (virtual time) whose first frame comes 120 ms after the input
 * opened, as when ffmpeg starts up: `count` frames are then decoded at once, and the stage works
 * on each for `workMs(frame index)`.
 */
function lateStart(workMs: (k: number) => number, count: number) {
  vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
  const run = paced('native', (f) => workMs(f.data[0]));
  run.child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
  vi.advanceTimersByTime(120);
  for (let i = 0; i < count; i++) run.child.frame(i);
  return run;
}


/**
 * argus's clock (core/clock.ts), which the source stamps with. Reported times are whole
 * microseconds (as ffmpeg prints them) and epoch milliseconds carry about 0.24 µs of double
 * precision, so arrival times are compared to 5 µs (frames are 33 ms apart).
 */
const epochNow = now;

describe('produced stamp, live sources (fake ffmpeg): the demuxer arrival time ffmpeg reports, paired in order', () => {
  // Not relayed (cameraClock: false): ffmpeg stamps the arrival, as for HTTP and other live sources.
  const rtsp: FfmpegInputSpec = { url: 'rtsp://cam/s', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false };

  it("a time line that a file's metadata or a server forged on the log (not followed by the run's own key) is not counted: the times stay paired", () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    expect(child.frameKey).toMatch(/^argus_[0-9a-f]{16}$/);
    const t = epochNow() - 80;
    child.stderr.write(child.timeLine(0, t - 5000, 'argus')); // the key of any run, not this one's
    child.stderr.write(`[Parsed_metadata_7 @ 0x1] frame:0    pts:${Math.round((t - 4000) * 1000)} pts_time:1.76e+09\n`); // a time line alone…
    child.stderr.write(child.timeLine(0, t)); // …is replaced by the real one, confirmed by its key
    child.stderr.write(child.timeLine(1, t + 40));
    child.frame();
    child.frame();
    expect(frames.map((f) => f.stamps.produced - t)).toEqual([expect.closeTo(0, 2), expect.closeTo(40, 2)]);
    sub.unsubscribe();
  });

  it('a time reported before its frame stamps that frame; e2e then counts from it', () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    const t = epochNow() - 80;
    child.stderr.write(child.timeLine(0, t));
    child.stderr.write(child.timeLine(1, t + 40));
    child.frame();
    child.frame();
    expect(frames.map((f) => f.producedBy)).toEqual(['arrival', 'arrival']);
    expect(frames[0].stamps.produced).toBeCloseTo(t, 2);
    expect(frames[1].stamps.produced).toBeCloseTo(t + 40, 2);
    const s = { ...frames[0].stamps, emitted: frames[0].stamps.captured + 10 };
    expect(e2eMs(s)).toBeCloseTo(s.captured - t + 10, 2);
    expect(pipelineMs(s)).toBeCloseTo(10, 6);
    expect(stageMs(s, 'source')).toBeCloseTo(s.captured - t, 2);
    sub.unsubscribe();
  });

  it('a frame delivered before its time is reported gets it when the report comes (the log and the frames are separate pipes)', () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    const t = epochNow() - 50;
    child.frame();
    expect(frames[0].producedBy).toBe('captured');
    expect(frames[0].stamps.produced).toBe(frames[0].stamps.captured);
    child.stderr.write(child.timeLine(0, t));
    expect(frames[0].producedBy).toBe('arrival');
    expect(frames[0].stamps.produced).toBeCloseTo(t, 2);
    // and the next pair is matched to each other, not shifted by one
    child.stderr.write(child.timeLine(1, t + 33));
    child.frame();
    expect(frames[1].producedBy).toBe('arrival');
    expect(frames[1].stamps.produced).toBeCloseTo(t + 33, 2);
    sub.unsubscribe();
  });

  it('more frames ahead of their reports than are kept: the ones let go stay `captured`, every later frame still gets its own time', () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    const t = epochNow() - 1000;
    for (let i = 0; i < 10; i++) child.frame(); // frames 0–9 before any report: 8 are kept waiting
    for (let i = 0; i < 10; i++) child.stderr.write(child.timeLine(i, t + i * 33));
    child.stderr.write(child.timeLine(10, t + 330));
    child.frame();
    expect(frames.map((f) => f.producedBy)).toEqual(['captured', 'captured', ...Array(9).fill('arrival')]);
    frames.slice(2).forEach((f, k) => expect(f.stamps.produced).toBeCloseTo(t + (k + 2) * 33, 2));
    // and reports ahead of their frames beyond the bound: the same the other way round
    for (let i = 11; i < 22; i++) child.stderr.write(child.timeLine(i, t + i * 33));
    for (let i = 11; i < 22; i++) child.frame();
    expect(frames.slice(11, 14).map((f) => f.producedBy)).toEqual(['captured', 'captured', 'captured']);
    frames.slice(14).forEach((f, k) => expect(f.stamps.produced).toBeCloseTo(t + (k + 14) * 33, 2));
    sub.unsubscribe();
  });

  it('a reported time later than the frame’s delivery is not its arrival: the frame keeps `captured`', () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    child.stderr.write(child.timeLine(0, epochNow() + 5000));
    child.frame();
    expect(frames[0].producedBy).toBe('captured');
    expect(frames[0].stamps.produced).toBe(frames[0].stamps.captured);
    sub.unsubscribe();
  });

  it("the system clock stepped since argus started (an NTP step, a VM resumed): ffmpeg's wall-clock times are read on argus's clock, neither refused nor seconds early", () => {
    for (const step of [5000, -5000]) {
      // ffmpeg stamps with the system's clock (gettimeofday), argus with its own monotonic one.
      const wall = Date.now.bind(Date);
      const spy = vi.spyOn(Date, 'now').mockImplementation(() => wall() + step);
      try {
        const { child, frames, sub } = fake(rtsp);
        child.info();
        const t = epochNow() - 80; // the arrivals on argus's clock
        child.stderr.write(child.timeLine(0, t + step));
        child.stderr.write(child.timeLine(1, t + 40 + step));
        child.frame();
        child.frame();
        expect(frames.map((f) => f.producedBy)).toEqual(['arrival', 'arrival']);
        expect(frames[0].stamps.produced).toBeCloseTo(t, -1);
        expect(frames[1].stamps.produced).toBeCloseTo(t + 40, -1);
        sub.unsubscribe();
      } finally {
        spy.mockRestore();
      }
    }
  });

  it('an ffmpeg that reports no frame times (an old build): every frame is stamped `captured`', () => {
    const { child, frames, sub } = fake(rtsp);
    child.info();
    for (let i = 0; i < 30; i++) child.frame();
    expect(new Set(frames.map((f) => f.producedBy))).toEqual(new Set(['captured']));
    expect(frames.every((f) => f.stamps.produced === f.stamps.captured)).toBe(true);
    sub.unsubscribe();
  });
});

describe('produced stamp, files', () => {
  it('native rate: frame k is due at the moment ffmpeg reported the opened input plus k / fps (virtual clock)', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const { child, frames, sub } = fake({ url: FILE, kind: 'file', rate: 'native', loop: false });
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    const opened = epochNow();
    vi.advanceTimersByTime(1000); // decoding lags: the frames arrive a second late
    for (let i = 0; i < 3; i++) child.frame();
    expect(frames.map((f) => f.producedBy)).toEqual(['due', 'due', 'due']);
    frames.forEach((f, k) => expect(f.stamps.produced).toBeCloseTo(opened + k * 100, 6));
    frames.forEach((f) => expect(f.stamps.captured).toBeCloseTo(opened + 1000, 6));
    sub.unsubscribe();
  });

  it('native rate: argus paces the file (no -re): a frame decoded early is read ahead and released when it is due', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const { child, frames, sub } = fake({ url: FILE, kind: 'file', rate: 'native', loop: false });
    expect(child.args).not.toContain('-re');
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    const opened = epochNow();
    for (let i = 0; i < 5; i++) child.frame(i); // ffmpeg decodes ahead, as fast as the pipe lets it
    expect(frames).toHaveLength(1); // frame 0 is due at once
    vi.advanceTimersByTime(98);
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(2);
    expect(frames).toHaveLength(2);
    vi.advanceTimersByTime(300);
    expect(frames).toHaveLength(5);
    frames.forEach((f, k) => {
      expect(f.data[0]).toBe(k); // in order, each whole
      expect(f.stamps.produced).toBeCloseTo(opened + k * 100, 6);
      // cut when due, at most a timer's granularity (1 ms) early; never later here
      expect(f.stamps.captured - (opened + k * 100)).toBeGreaterThanOrEqual(-1);
      expect(f.stamps.captured - (opened + k * 100)).toBeLessThanOrEqual(0.001);
    });
    sub.unsubscribe();
  });

  it('native rate: the next frame is read while the stage is idle, or half a frame before it is due when the stage is still busy', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    // The stage: frame 1 takes 30 ms, frame 2 180 ms (longer than the file's 100 ms a frame).
    const work = [10, 30, 180, 10, 10];
    const { child, frames, sub } = paced('native', (f) => work[f.data[0]]);
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    // ffmpeg decodes ahead, as fast as the pipe lets it. `queued`: its writes not yet taken from
    // the pipe (the one taken last is cut into a frame when allowed).
    for (let i = 0; i < 5; i++) child.frame(i);
    expect(frames).toHaveLength(1); // frame 0 is due at once; the stage works on it for 10 ms
    expect(child.stdout.queued).toBe(3); // frame 1 not read meanwhile
    vi.advanceTimersByTime(9);
    expect(child.stdout.queued).toBe(3);
    vi.advanceTimersByTime(1); // idle: frame 1 read ahead (frame 2 taken, held)
    expect(child.stdout.queued).toBe(2);
    vi.advanceTimersByTime(90); // frame 1 due: released; the stage works on it for 30 ms
    expect(frames).toHaveLength(2);
    vi.advanceTimersByTime(29);
    expect(child.stdout.queued).toBe(2); // frame 2 not cut while the stage works
    vi.advanceTimersByTime(1); // idle: frame 2 read ahead, the pipe gives frame 3
    expect(child.stdout.queued).toBe(1);
    expect(frames).toHaveLength(2);
    vi.advanceTimersByTime(70); // frame 2 due (t = 200): the stage is busy with it until 380
    expect(frames).toHaveLength(3);
    vi.advanceTimersByTime(49); // t = 249: frame 3 not cut yet
    expect(child.stdout.queued).toBe(1);
    vi.advanceTimersByTime(1); // t = 250, half a frame before frame 3 is due: read although busy
    expect(child.stdout.queued).toBe(0);
    vi.advanceTimersByTime(50); // t = 300: released on time, the stage still busy (dropStale's call)
    expect(frames).toHaveLength(4);
    vi.advanceTimersByTime(100);
    expect(frames.map((f) => f.data[0])).toEqual([0, 1, 2, 3, 4]);
    const opened = frames[0].stamps.produced;
    frames.forEach((f, k) => expect(f.stamps.captured - (opened + k * 100)).toBeLessThanOrEqual(0.001));
    sub.unsubscribe();
  });

  it('native rate: a frame that comes late is not read while the stage works, until the next one is due', () => {
    // Frame 1, due at 100, is late before it can be read; the stage works on frame 0 until t = 270.
    const work = [150, 30, 30, 30, 30];
    const { child, frames, sub } = lateStart((k) => work[k], 5);
    expect(frames).toHaveLength(1);
    expect(child.stdout.queued).toBe(3); // frame 1 not read although overdue: it would only wait
    vi.advanceTimersByTime(79); // t = 199
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(1); // t = 200: frame 2 is due, so frame 1 is read (and would be dropped were frame 2 read too)
    expect(frames).toHaveLength(2);
    expect(frames[1].stamps.captured - frames[0].stamps.produced).toBeCloseTo(200, 6);
    // Frame 2 is late in turn (asked for at 200): not read at once to replace frame 1, but when
    // the stage is idle (t = 270, frame 0's work done) — never two back to back.
    expect(child.stdout.queued).toBe(2);
    vi.advanceTimersByTime(69); // t = 269
    expect(frames).toHaveLength(2);
    vi.advanceTimersByTime(1); // t = 270: idle
    expect(frames).toHaveLength(3);
    // Frame 3 (asked for at 270, its read time 250 gone): read when the stage is idle again (300).
    vi.advanceTimersByTime(29);
    expect(child.stdout.queued).toBe(1);
    expect(frames).toHaveLength(3);
    vi.advanceTimersByTime(1);
    expect(frames).toHaveLength(4);
    // Frame 4, asked for at 300 before its read time (350): on time again, released when due.
    vi.advanceTimersByTime(99);
    expect(frames).toHaveLength(4);
    vi.advanceTimersByTime(1);
    expect(frames.map((f) => f.data[0])).toEqual([0, 1, 2, 3, 4]);
    const opened = frames[0].stamps.produced;
    frames.forEach((f, k) => expect(f.stamps.produced).toBeCloseTo(opened + k * 100, 6));
    expect(frames[4].stamps.captured - opened).toBeCloseTo(400, 6);
    sub.unsubscribe();
  });

  it('native rate: a stage slower than the file from the start: after two late frames read at their deadline, frames are read at their time again', () => {
    const { frames, sub } = lateStart(() => 250, 7); // 250 ms a frame, the file 100
    vi.advanceTimersByTime(500);
    const opened = frames[0].stamps.produced;
    // Frames 1 and 2 came late and were held to their deadline (the next frame's due time) with
    // the stage busy both times: that is a slow stage, not a start-up, so frame 3 is read at once
    // (due at 300) and frames 4 to 6 half a frame before they are due and released when due,
    // as for any stage slower than the file: no frame held a period longer than that.
    expect(frames.map((f) => Math.round(f.stamps.captured - opened))).toEqual([120, 200, 300, 300, 400, 500, 600]);
    sub.unsubscribe();
  });

  it('native rate: a late frame read when the stage went idle leaves no later timer behind: the next frame is read half a frame before it is due', () => {
    const work = [10, 200, 10, 10, 10];
    const { child, frames, sub } = lateStart((k) => work[k], 5);
    expect(child.stdout.queued).toBe(3); // frame 1 late: held for frame 2's due time (200), or until the stage is idle
    vi.advanceTimersByTime(10); // t = 130: idle, frame 1 read; the stage works on it until 330
    expect(frames).toHaveLength(2);
    expect(child.stdout.queued).toBe(2);
    vi.advanceTimersByTime(19); // t = 149
    expect(child.stdout.queued).toBe(2);
    vi.advanceTimersByTime(1); // t = 150: half a frame before frame 2 is due (not at 200, frame 1's deadline)
    expect(child.stdout.queued).toBe(1);
    vi.advanceTimersByTime(50);
    expect(frames).toHaveLength(3);
    expect(frames[2].stamps.captured - frames[0].stamps.produced).toBeCloseTo(200, 6);
    sub.unsubscribe();
  });

  it('native rate: ffmpeg exits with frames still held: each is delivered when due, then the source completes', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    let child!: FakeFfmpeg;
    const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, FRAME)).asChild();
    const frames: Frame[] = [];
    let completed = false;
    const sub = ffmpegSource({ id: 'cam', input: { url: FILE, kind: 'file', rate: 'native', loop: false }, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn }).subscribe({
      next: (f) => frames.push(f),
      error: (e) => {
        throw e;
      },
      complete: () => (completed = true),
    });
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    for (let i = 0; i < 4; i++) child.frame(i);
    // node resumes a child's stdout by itself when it exits: the held bytes arrive at once
    child.stdout.resume();
    child.exit(0);
    expect(frames).toHaveLength(1);
    expect(completed).toBe(false);
    vi.advanceTimersByTime(300);
    expect(frames.map((f) => f.data[0])).toEqual([0, 1, 2, 3]);
    expect(completed).toBe(true);
    sub.unsubscribe();
  });

  it('native rate resumed with a seek margin: the margin is decoded, not played out; the first frame is due when the input opened', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const { child, frames, sub } = fake({ url: FILE, kind: 'file', rate: 'native', loop: false, seek: 10, seekMargin: 3 });
    child.info('mpegts', 10);
    const opened = epochNow();
    vi.advanceTimersByTime(50);
    // (Reported, as ffmpeg does before writing it: the frame at the seek point, 3.05 s after the point it seeks to.)
    child.stderr.write(child.timeLine(0, 3050));
    child.frame();
    expect(frames[0].stamps.produced).toBeCloseTo(opened, 6);
    expect(frames[0].stamps.captured).toBeCloseTo(opened + 50, 6);
    sub.unsubscribe();
  });

  it('resumed with a seek margin that landed late (its first frame reported after the frame wanted): no frame of it is delivered, and it is run again from further back', () => {
    const spawned: FakeFfmpeg[] = [];
    const spawn: SpawnFn = (_cmd, args) => (spawned.push(new FakeFfmpeg(args, FRAME)), spawned.at(-1)!.asChild());
    const frames: Frame[] = [];
    const sub = ffmpegSource({ id: 'cam', input: { url: FILE, kind: 'file', rate: 'fast', loop: false, seek: 10, seekMargin: 3 }, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn }).subscribe({ next: (f) => frames.push(f) });
    const [first] = spawned;
    expect(first.args.join(' ')).toContain('-ss 7.000000');
    first.info('mpegts', 10);
    first.frame(1); // its bytes before its report, as the two pipes may be read
    first.stderr.write(first.timeLine(0, 7000)); // 7 s after the point it sought to: the key frame after 10 s
    expect(frames).toHaveLength(0);
    expect(first.signals).toEqual(['SIGKILL']);
    // A margin ten times larger is the whole file before 10 s: from its start, trimmed to 10 s.
    expect(spawned).toHaveLength(2);
    expect(spawned[1].args.join(' ')).toMatch(/-ss 0\.000000 .*trim=start=10\.000000/);
    spawned[1].info('mpegts', 10);
    spawned[1].stderr.write(spawned[1].timeLine(0, 10050));
    spawned[1].frame(2);
    expect(frames.map((f) => f.data[0])).toEqual([2]);
    sub.unsubscribe();
  });

  it('resumed with a seek margin whose first report comes after its first frame went on (REPORT_WAIT_MS ran out): the run goes on, not made again (its frames would come twice, with the same seq)', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const spawned: FakeFfmpeg[] = [];
      const spawn: SpawnFn = (_cmd, args) => (spawned.push(new FakeFfmpeg(args, FRAME)), spawned.at(-1)!.asChild());
      const frames: Frame[] = [];
      const sub = ffmpegSource({ id: 'cam', input: { url: FILE, kind: 'file', rate: 'fast', loop: false, seek: 10, seekMargin: 3 }, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn }).subscribe({ next: (f) => frames.push(f) });
      const [first] = spawned;
      first.info('mpegts', 10);
      first.frame(1);
      expect(frames).toHaveLength(0);
      vi.advanceTimersByTime(2000); // its report waited for in vain: the frame goes on
      expect(frames.map((f) => [f.seq, f.data[0]])).toEqual([[0, 1]]);
      first.stderr.write(first.timeLine(0, 7000)); // …and comes now, late (as a seek that landed late would report)
      first.frame(2);
      first.stderr.write(first.timeLine(1, 7100));
      expect(spawned).toHaveLength(1);
      expect(first.signals).toEqual([]);
      expect(frames.map((f) => [f.seq, f.data[0]])).toEqual([[0, 1], [1, 2]]);
      sub.unsubscribe();
    } finally {
      vi.useRealTimers();
    }
  });

  it('read as fast as possible: one frame is read while the stage is busy and released, stamped `captured`, when it is idle', () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const { child, frames, sub, end } = paced('fast', () => 30); // the stage works on each frame for 30 ms
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    const start = epochNow();
    for (let i = 0; i < 4; i++) child.frame(i);
    expect(frames).toHaveLength(1);
    // frame 1 was read meanwhile (frame 2 taken, held); only frame 3 waits in the pipe
    expect(child.stdout.queued).toBe(1);
    vi.advanceTimersByTime(29);
    expect(frames).toHaveLength(1);
    vi.advanceTimersByTime(1); // idle: frame 1 goes at once, frame 2 is read
    expect(frames).toHaveLength(2);
    expect(child.stdout.queued).toBe(0);
    child.exit(0); // the end of the file, frames 2 and 3 still to go
    expect(end.completed).toBe(false);
    vi.advanceTimersByTime(60);
    expect(frames.map((f) => f.data[0])).toEqual([0, 1, 2, 3]);
    frames.forEach((f, k) => {
      expect(f.stamps.captured - start).toBeCloseTo(k * 30, 6); // released when the stage took it
      expect(f.stamps.produced).toBe(f.stamps.captured);
    });
    vi.advanceTimersByTime(30);
    expect(end.completed).toBe(true);
    sub.unsubscribe();
  });

  it('read as fast as possible: no camera time exists, produced = captured', () => {
    const { child, frames, sub } = fake({ url: FILE, kind: 'file', rate: 'fast', loop: false });
    child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
    child.frame();
    expect(frames[0].producedBy).toBe('captured');
    expect(frames[0].stamps.produced).toBe(frames[0].stamps.captured);
    sub.unsubscribe();
  });
});

/** A looped native-rate file source on fake ffmpegs and a virtual clock: each restart (pass) a new child. */
async function loopedNative(id: string): Promise<{ children: FakeFfmpeg[]; frames: Frame[]; sub: { unsubscribe(): void } }> {
  vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
  const children: FakeFfmpeg[] = [];
  const spawn: SpawnFn = (_cmd, args) => {
    children.push(new FakeFfmpeg(args, FRAME));
    return children.at(-1)!.asChild();
  };
  const frames: Frame[] = [];
  const sub = supervisedSource({
    id,
    input: { url: FILE, kind: 'file', rate: 'native', loop: true },
    output,
    ffmpegPath: 'ffmpeg',
    memo: { readsOnce: false }, // the file's look done (a fake ffmpeg: no file to look at)
    spawn,
    reconnect: { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 5, healthyResetMs: 30_000 },
    watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 },
  }).subscribe({ next: (f) => frames.push(f), error: (e) => { throw e; } });
  // Its first ffmpeg once the file has been looked at (an asynchronous stat: supervisedSource).
  for (let i = 0; i < 10_000 && !children.length; i++) await new Promise((r) => setImmediate(r));
  return { children, frames, sub };
}

describe('a looped native-rate file: each pass plays on the timetable of the one before (virtual clock)', () => {
  it('the next pass\'s first frame is one frame period after the last: in pts and in when it is due, whether ffmpeg restarts late or early', async () => {
    const { children, frames, sub } = await loopedNative('demo');
    /** One pass of the file (10 fps), frames `from`…`to` - 1 decoded at once, ffmpeg then done. */
    const pass = (from: number, to: number) => {
      const child = children.at(-1)!;
      child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
      for (let i = from; i < to; i++) child.frame(i);
      return child;
    };
    pass(0, 3);
    const opened = epochNow(); // frame k is due at opened + 100 k on a camera-like timetable
    vi.advanceTimersByTime(200);
    children[0].exit(0);
    expect(frames).toHaveLength(3);
    expect(children).toHaveLength(2); // the next pass, at 0 in the file
    // ffmpeg's restart takes longer than a frame period: frame 3 (due at 300) comes at 350,
    // counted as due at 300 (its latency shows the restart), and frame 4 is due at 400 as ever.
    vi.advanceTimersByTime(150);
    pass(3, 5);
    expect(frames).toHaveLength(4);
    vi.advanceTimersByTime(49);
    expect(frames).toHaveLength(4);
    vi.advanceTimersByTime(1);
    expect(frames).toHaveLength(5);
    children[1].exit(0);
    // A quick restart: frame 5 waits until it is due (500), not released at the opening (420).
    vi.advanceTimersByTime(20);
    pass(5, 6);
    expect(frames).toHaveLength(5);
    vi.advanceTimersByTime(79);
    expect(frames).toHaveLength(5);
    vi.advanceTimersByTime(1);
    expect(frames).toHaveLength(6);
    frames.forEach((f, k) => {
      expect(f.data[0]).toBe(k);
      expect(f.seq).toBe(k);
      expect(f.pts).toBeCloseTo(k / 10, 9);
      expect(f.producedBy).toBe('due');
      expect(f.stamps.produced).toBeCloseTo(opened + k * 100, 6);
    });
    expect(frames[3].stamps.captured - frames[3].stamps.produced).toBeCloseTo(50, 6);
    sub.unsubscribe();
  });

  it('a pass that cannot keep to the timetable (a 1-frame file whose ffmpeg takes 300 ms to restart, at 10 fps) falls behind it by 0.5 s at most, in produced and in pts: it fell 200 ms further behind at every pass, for ever', async () => {
    const { children, frames, sub } = await loopedNative('still');
    const start = epochNow();
    for (let i = 0; i < 20; i++) {
      const child = children.at(-1)!;
      child.info('mov,mp4,m4a,3gp,3g2,mj2', 10);
      child.frame(i);
      vi.advanceTimersByTime(1);
      child.exit(0);
      vi.advanceTimersByTime(299); // ffmpeg's restart
    }
    expect(frames).toHaveLength(20);
    frames.forEach((f, k) => {
      const late = f.stamps.captured - f.stamps.produced;
      expect(late, `frame ${k}`).toBeGreaterThanOrEqual(0);
      expect(late, `frame ${k}`).toBeLessThanOrEqual(500 + 1e-6);
      // pts and produced stay locked together (what the shared timetable is for)…
      expect(f.stamps.produced - frames[0].stamps.produced, `frame ${k}`).toBeCloseTo(f.pts * 1000, 6);
      // …and pts within 0.5 s of the time since the first frame (README, message schema).
      expect(Math.abs(f.pts * 1000 - (f.stamps.captured - start)), `frame ${k}`).toBeLessThanOrEqual(500 + 1e-6);
      if (k > 0) expect(f.pts).toBeGreaterThan(frames[k - 1].pts);
    });
    sub.unsubscribe();
  });
});

/** A free loopback port. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('produced stamp with the real ffmpeg', () => {
  const video = join(MIRROR, 'streams', 'one-by-one-person-detection.mp4');
  const out = { ...output, width: 96, height: 64 };

  it('a live HTTP MPEG-TS feed: every frame is stamped with its arrival, before ffmpeg delivered it, spread as the feed sent them', async () => {
    const port = await freePort();
    // A camera-like feed: the clip at its own rate, served once over HTTP.
    const server: ChildProcess = nodeSpawn(defaultFfmpegPath(), ['-hide_banner', '-loglevel', 'error', '-re', '-i', video, '-c', 'copy', '-f', 'mpegts', '-listen', '1', `http://127.0.0.1:${port}/feed.ts`], { stdio: 'ignore' });
    try {
      const url = `http://127.0.0.1:${port}/feed.ts`;
      let frames: Frame[] = [];
      // the server may not listen yet: ffmpegSource fails fast then; try again (a hang bound only)
      for (let attempt = 0; attempt < 100 && frames.length === 0; attempt++) {
        frames = await firstValueFrom(
          ffmpegSource({ id: 'feed', input: { url, kind: 'http', rate: 'native', loop: false }, output: out, ffmpegPath: defaultFfmpegPath() }).pipe(take(12), toArray()),
        ).catch(() => new Promise<Frame[]>((r) => setTimeout(() => r([]), 100)));
      }
      expect(frames).toHaveLength(12);
      // the reports of the last frames may trail their delivery by a moment
      await new Promise((r) => setTimeout(r, 200));
      const arrived = frames.filter((f) => f.producedBy === 'arrival');
      expect(arrived.length).toBeGreaterThanOrEqual(10);
      for (const f of arrived) expect(f.stamps.produced).toBeLessThanOrEqual(f.stamps.captured);
      // The feed sends 10 frames a second (-re): their arrivals span most of the 1.2 s, however
      // late decoding delivered them. (Not in output order: a B-frame's data arrives after the
      // frame it is shown before.)
      const ps = arrived.map((f) => f.stamps.produced);
      expect(Math.max(...ps) - Math.min(...ps)).toBeGreaterThan(500);
      console.log(`HTTP feed: delivered − arrival p50 ${median(arrived.map((f) => f.stamps.captured - f.stamps.produced)).toFixed(1)} ms over ${arrived.length} frames`);
    } finally {
      server.kill('SIGKILL');
    }
  });

  it('a file at native rate: frames are stamped due, 1 / fps apart (those not clamped to an early delivery)', async () => {
    const frames = await firstValueFrom(
      ffmpegSource({ id: 'file', input: { url: video, kind: 'file', rate: 'native', loop: false }, output: out, ffmpegPath: defaultFfmpegPath() }).pipe(take(8), toArray()),
    );
    expect(frames.map((f) => f.producedBy)).toEqual(Array(8).fill('due'));
    const fps = 10; // the clip's rate
    // Frame 0 comes after the input opened (ffmpeg decodes it first): stamped with that moment.
    const opened = frames[0].stamps.produced;
    expect(opened).toBeLessThan(frames[0].stamps.captured);
    // Frame k is due k / fps later; one released a little early (libuv's timers count whole
    // milliseconds, from a clock of whole milliseconds: up to 2 ms) is stamped with its release.
    frames.forEach((f, k) => {
      expect(f.stamps.produced).toBeLessThanOrEqual(f.stamps.captured);
      expect(f.stamps.produced - opened).toBeLessThanOrEqual((k * 1000) / fps + 1e-6);
      expect(f.stamps.produced - opened).toBeGreaterThanOrEqual((k * 1000) / fps - 2 - 1e-6);
    });
  });
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1] ?? NaN;
}
