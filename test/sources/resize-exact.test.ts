// A mid-stream resolution change with frames at the source's size (model.resize: exact, the
// default): ffmpeg's output keeps the size it started with and would scale every later picture
// to it, whatever its shape. Real ffmpeg, a clip of 320x240 then 160x160 (one MPEG-TS stream,
// timestamps running on, as a camera's profile switch records).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ErrorCodes, type ArgusError } from '../../src/core/errors.js';
import type { Frame } from '../../src/core/frame.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { FRAME_CHANNELS } from '../../src/sources/frame-channel.js';
import { ffmpegSource, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import type { Transition } from '../../src/sources/health.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { FakeFfmpeg } from './fake-ffmpeg.js';
import { resizedClip } from '../helpers/resized-video.js';

const FF = defaultFfmpegPath();
const dir = mkdtempSync(join(tmpdir(), 'argus-resize-exact-'));
const output = { width: 64, height: 64, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114, frame: 'source' as const };
const hash = (f: Frame) => createHash('sha1').update(f.data).digest('hex');
const size = (f: Frame) => `${f.letterbox.srcWidth}x${f.letterbox.srcHeight}`;
let joined: string, second: string, thrice: string;

beforeAll(() => {
  ({ joined, second } = resizedClip(FF, dir));
  // 11 s parts (110 frames), read in a second or two: changes 11 s of the file's time apart. (No
  // B-frames: a seek into such an MPEG-TS file, as the third part's restart makes, loses its first two.)
  const long = (s: string, offset: number, out: string) =>
    execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc=size=${s}:rate=10`, '-frames:v', '110', '-c:v', 'libx264', '-bf', '0', '-g', '10', '-pix_fmt', 'yuv420p', '-output_ts_offset', String(offset), '-f', 'mpegts', out]);
  const parts = [['320x240', 0], ['160x160', 11], ['320x240', 22]] as const;
  parts.forEach(([s, at], i) => long(s, at, join(dir, `long${i}.ts`)));
  thrice = join(dir, 'long.ts');
  writeFileSync(thrice, Buffer.concat(parts.map((_, i) => readFileSync(join(dir, `long${i}.ts`)))));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Supervisor settings under which only an immediate restart can go on: a restart after the backoff waits 60 s, and a second failure is the end. */
const ONE_TRY = {
  reconnect: { initialDelayMs: 60_000, maxDelayMs: 60_000, jitter: 0, maxAttempts: 1, healthyResetMs: 30_000 },
  watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 },
};

describe('frames at the source size across a resolution change', () => {
  it('the new picture comes at its own size, not stretched to the first one: the source restarts there at once', async () => {
    const transitions: Transition[] = [];
    const frames = await lastValueFrom(
      supervisedSource({
        id: 'cam',
        input: { url: joined, kind: 'file', rate: 'fast', loop: false },
        output,
        ffmpegPath: FF,
        ...ONE_TRY,
        onTransition: (t) => transitions.push(t),
      }).pipe(toArray()),
    );
    const own = await lastValueFrom(ffmpegSource({ id: 'ref', input: { url: second, kind: 'file', rate: 'fast', loop: false }, output, ffmpegPath: FF }).pipe(toArray()));
    expect(frames.map(size)).toEqual([...Array(10).fill('320x240'), ...Array(10).fill('160x160')]);
    expect(frames.slice(10).map((f) => f.data.length)).toEqual(Array(10).fill(160 * 160 * 3));
    // The very pictures of the second part, decoded alone.
    expect(frames.slice(10).map(hash)).toEqual(own.map(hash));
    expect(frames.map((f) => f.seq)).toEqual([...Array(20).keys()]);
    expect(frames[10].pts).toBeCloseTo(1.0, 6);
    const restart = transitions.find((t) => t.code === ErrorCodes.SOURCE_RESIZED);
    expect(restart).toMatchObject({ state: 'reconnecting', attempt: 0 });
    expect(restart!.reason).toContain('resolution changed from 320x240 to 160x160; restarted at once');
    expect(transitions.map((t) => t.state)).toEqual(['starting', 'streaming', 'reconnecting', 'streaming', 'ended']);
  }, 60_000);
});

describe("a file's resolution changes, read as fast as possible", () => {
  it("are apart by the file's time, not the clock's: two changes 11 s of video apart, read within a second or two, are both restarted at once (no backoff, no failure)", async () => {
    const transitions: Transition[] = [];
    const frames = await new Promise<Frame[]>((resolve, reject) => {
      const got: Frame[] = [];
      const sub = supervisedSource({
        id: 'cam',
        input: { url: thrice, kind: 'file', rate: 'fast', loop: false },
        output,
        ffmpegPath: FF,
        ...ONE_TRY,
        onTransition: (t) => {
          transitions.push(t);
          // A restart after the (60 s) backoff: not waited out.
          if (t.state === 'reconnecting' && t.reason.includes('; retry')) queueMicrotask(() => (sub.unsubscribe(), resolve(got)));
        },
      }).subscribe({ next: (f) => got.push(f), error: reject, complete: () => resolve(got) });
    });
    expect(transitions.filter((t) => t.code === ErrorCodes.SOURCE_RESIZED).map((t) => t.reason.replace(/^.*; /, ''))).toEqual(['restarted at once at the new size', 'restarted at once at the new size']);
    expect(frames.map(size)).toEqual([...Array(110).fill('320x240'), ...Array(110).fill('160x160'), ...Array(110).fill('320x240')]);
    expect(transitions.at(-1)?.state).toBe('ended');
  }, 60_000);

  it("looped: the file's time counts on across its passes (the next pass's first change is 22 s of video after the last one, though at 11 s in the file)", async () => {
    const transitions: Transition[] = [];
    await new Promise<void>((resolve, reject) => {
      const sub = supervisedSource({
        id: 'cam',
        input: { url: thrice, kind: 'file', rate: 'fast', loop: true },
        output,
        ffmpegPath: FF,
        ...ONE_TRY,
        onTransition: (t) => {
          transitions.push(t);
          if (t.code === ErrorCodes.SOURCE_RESIZED && transitions.filter((u) => u.code === ErrorCodes.SOURCE_RESIZED).length === 3) queueMicrotask(() => (sub.unsubscribe(), resolve()));
        },
      }).subscribe({ next: (f) => f.release(), error: reject, complete: () => resolve() });
    });
    expect(transitions.filter((t) => t.code === ErrorCodes.SOURCE_RESIZED).map((t) => t.reason.replace(/^.*; /, ''))).toEqual(Array(3).fill('restarted at once at the new size'));
  }, 60_000);
});

/** The scaler's configuration line for a `w × h` input (ffmpeg 5.1's form), frames at the source's size. */
const scaler = (w: number, h: number) => `[Parsed_scale_0 @ 0x55d0c0ffee10] w:${w} h:${h} fmt:yuv420p sar:1/1 -> w:${w} h:${h} fmt:bgr24 sar:1/1 flags:0x0\n`;

/** ffmpegSource on a fake ffmpeg that says it writes 64x48 frames at the source's size. */
function fake() {
  let child!: FakeFfmpeg;
  const spawn: SpawnFn = (_cmd, args) => (child = new FakeFfmpeg(args, 64 * 48 * 3)).asChild();
  const frames: Frame[] = [];
  const r = { child: undefined as unknown as FakeFfmpeg, frames, error: undefined as ArgusError | undefined, done: false };
  const sub = ffmpegSource({ id: 'cam', input: { url: second, kind: 'file', rate: 'fast', loop: false }, output, ffmpegPath: 'ffmpeg', memo: { readsOnce: false }, spawn }).subscribe({
    next: (f) => frames.push(f),
    error: (e: ArgusError) => (r.error = e),
    complete: () => (r.done = true),
  });
  r.child = child;
  child.stderr.write(scaler(64, 48));
  child.info('mpegts');
  return { ...r, get error() { return r.error; }, get done() { return r.done; }, sub };
}

describe('frames at the source size are cut once ffmpeg has logged them', () => {
  it('frames read before their report wait for it; the bytes of a new picture, read before its scaler line, never make a frame', () => {
    const r = fake();
    const t = Date.now();
    r.child.frame(1);
    r.child.frame(2);
    expect(r.frames).toHaveLength(0); // not reported yet
    r.child.stderr.write(r.child.timeLine(0, t));
    expect(r.frames.map((f) => f.data[0])).toEqual([1]);
    r.child.stderr.write(r.child.timeLine(1, t));
    expect(r.frames.map((f) => f.data[0])).toEqual([1, 2]);
    // ffmpeg met a 32x24 picture and wrote four of them (one 64x48 frame's bytes) at their own
    // size; its log (the new scaler, then their reports) comes after them.
    for (let i = 0; i < 4; i++) r.child.stdout.write(Buffer.alloc(32 * 24 * 3, 9));
    expect(r.frames).toHaveLength(2);
    r.child.stderr.write(scaler(32, 24) + r.child.timeLine(2, t));
    expect(r.frames).toHaveLength(2);
    expect(r.error?.code).toBe(ErrorCodes.SOURCE_RESIZED);
    expect(r.error?.message).toBe('source "cam": resolution changed from 64x48 to 32x24');
    expect(r.child.signals).toEqual(['SIGKILL']);
  });

  it('a report that never comes stalls nothing: the frame is cut after REPORT_WAIT_MS; frames left at the exit are cut at once', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const r = fake();
      r.child.frame(1);
      expect(r.frames).toHaveLength(0);
      vi.advanceTimersByTime(1999);
      expect(r.frames).toHaveLength(0);
      vi.advanceTimersByTime(1);
      expect(r.frames.map((f) => f.data[0])).toEqual([1]);
      // That frame was read whole and its report never came: the log does not report frames, and no other frame waits.
      r.child.frame(2);
      expect(r.frames.map((f) => f.data[0])).toEqual([1, 2]);
      r.sub.unsubscribe();
      const s = fake();
      s.child.frame(1);
      s.child.frame(2);
      s.child.stdout.resume(); // as node reads a pipe to its end when ffmpeg exits, before 'close'
      s.child.exit(0);
      expect(s.frames.map((f) => f.data[0])).toEqual([1, 2]);
      expect(s.done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

/**
 * The start of a live source's ffmpeg as a script (what ffmpeg 5.1 prints up to its output line,
 * a 64x48 stream), with `rep N`: the report of frame N on its log.
 */
const LIVE_FFMPEG_HEAD = [
  '#!/bin/sh',
  'for a; do [ "$prev" = -vf ] && VF="$a"; prev="$a"; OUT="$a"; done',
  `KEY=$(printf '%s' "$VF" | sed -n 's/.*metadata=mode=print:key=\\([A-Za-z0-9_]*\\).*/\\1/p')`,
  `rep() { printf '[Parsed_metadata_7 @ 0x1] frame:%s    pts:%s000000 pts_time:1\\n[Parsed_metadata_7 @ 0x1] %s=1\\n' "$1" "$(date +%s)" "$KEY" >&2; }`,
  `printf "Input #0, mpegts, from 'x':\\n  Duration: N/A\\n    Stream #0:0: Video: h264 (High), yuv420p(progressive), 64x48, 10 fps, 10 tbr\\nStream mapping:\\n" >&2`,
  `printf '${scaler(64, 48).replace('\n', '\\n')}' >&2`,
  `printf "Output #0, rawvideo, to '%s':\\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, 10 fps, 10 tbn\\n" "$OUT" >&2`,
];

describe.runIf(FRAME_CHANNELS)('frames at the source size through the frame channel, from a camera that goes silent', () => {
  it('a silence longer than REPORT_WAIT_MS (no frame, so no report) does not end the wait for reports: the bytes of a new picture read before its scaler line still make no frame', async () => {
    // A live source's ffmpeg (a script printing what ffmpeg 5.1 prints): a 64x48 frame, 4 s of
    // nothing (a stalled network, a camera reconfiguring), another frame, then a 32x24 picture
    // written four times (one 64x48 frame's bytes) before its log, as the two pipes may be read.
    const fake = join(dir, 'silent-ffmpeg');
    const frame = 64 * 48 * 3;
    writeFileSync(
      fake,
      [
        ...LIVE_FFMPEG_HEAD,
        `rep 0; head -c ${frame} /dev/zero`,
        'sleep 4',
        `rep 1; head -c ${frame} /dev/zero`,
        `head -c ${frame} /dev/zero`,
        'sleep 0.5',
        `printf '${scaler(32, 24).replace('\n', '\\n')}' >&2; rep 2`,
        'exec sleep 30',
      ].join('\n'),
      { mode: 0o755 },
    );
    const frames: Frame[] = [];
    const err = await new Promise<ArgusError>((resolve) => {
      ffmpegSource({ id: 'cam', input: { url: 'srt://127.0.0.1:21510', kind: 'stream', rate: 'native', loop: false }, output, ffmpegPath: fake }).subscribe({
        next: (f) => frames.push(f),
        error: resolve,
        complete: () => resolve(new Error('completed') as ArgusError),
      });
    });
    expect(err.code).toBe(ErrorCodes.SOURCE_RESIZED);
    expect(frames.map(size)).toEqual(['64x48', '64x48']);
  }, 30_000);

  /**
   * A live source's ffmpeg (a script, as above) that writes a 64x48 frame with its report, then
   * blocks on a FIFO until the test opens it (a silence as long as the test's virtual clock
   * says), then runs `after` (shell lines).
   */
  const stalling = (name: string, after: string[]) => {
    const gate = join(dir, `${name}-gate`);
    execFileSync('mkfifo', [gate]);
    const path = join(dir, name);
    writeFileSync(
      path,
      [
        ...LIVE_FFMPEG_HEAD,
        `rep 0; head -c ${64 * 48 * 3} /dev/zero`,
        `read go < ${gate}`,
        ...after,
      ].join('\n'),
      { mode: 0o755 },
    );
    return { path, gate };
  };
  /** Runs `ffmpeg` as a camera: after its first frame, REPORT_WAIT_MS of silence in virtual time, then the FIFO opened. */
  const afterSilence = async (ffmpeg: { path: string; gate: string }) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const frames: Frame[] = [];
      let first!: () => void;
      const firstFrame = new Promise<void>((resolve) => (first = resolve));
      const end = new Promise<ArgusError | undefined>((resolve) => {
        ffmpegSource({ id: 'cam', input: { url: 'srt://127.0.0.1:21510', kind: 'stream', rate: 'native', loop: false }, output, ffmpegPath: ffmpeg.path }).subscribe({
          next: (f) => (frames.push(f), first()),
          error: resolve,
          complete: () => resolve(undefined),
        });
      });
      await firstFrame;
      vi.advanceTimersByTime(2000); // 2 s of silence: frame 1's report waited for in vain
      await writeFile(ffmpeg.gate, 'go\n');
      return { err: await end, frames };
    } finally {
      vi.useRealTimers();
    }
  };

  it('the frame read right after such a silence waits for its report too: a camera that stalls, then comes back with a new picture (its bytes read before its scaler line), delivers no frame of it cut at the old size', async () => {
    // After the silence: a 32x24 picture four times (one 64x48 frame's bytes), and only half a
    // second later its log: the new scaler, its report.
    const ffmpeg = stalling('stall-resize', [`for i in 1 2 3 4; do head -c ${32 * 24 * 3} /dev/zero; done`, 'sleep 0.5', `printf '${scaler(32, 24).replace('\n', '\\n')}' >&2; rep 1`, 'exec sleep 30']);
    const { err, frames } = await afterSilence(ffmpeg);
    expect(err?.code).toBe(ErrorCodes.SOURCE_RESIZED);
    expect(frames.map(size)).toEqual(['64x48']);
  }, 30_000);

  it('an ffmpeg that reports no frame on its log (the bundled 2018 build): the first frame waits REPORT_WAIT_MS once, not twice, and the frames after it not at all', async () => {
    // A camera's ffmpeg as the 2018 build prints: its streams, no frame reports; two frames.
    const path = join(dir, 'unreporting-ffmpeg');
    writeFileSync(
      path,
      [
        '#!/bin/sh',
        'for a; do OUT="$a"; done',
        `printf "Input #0, mpegts, from 'x':\\n  Duration: N/A\\n    Stream #0:0: Video: h264 (High), yuv420p(progressive), 64x48, 10 fps, 10 tbr\\nStream mapping:\\n" >&2`,
        `printf '${scaler(64, 48).replace('\n', '\\n')}' >&2`,
        `printf "Output #0, rawvideo, to '%s':\\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, 10 fps, 10 tbn\\n" "$OUT" >&2`,
        `head -c ${64 * 48 * 3 * 2} /dev/zero`,
        'exec sleep 30',
      ].join('\n'),
      { mode: 0o755 },
    );
    // (setInterval is not faked: real time, to wait for the script.)
    const until = (what: () => boolean, ms: number) =>
      new Promise<boolean>((resolve) => {
        const t0 = performance.now();
        const poll = setInterval(() => {
          if (what() || performance.now() - t0 > ms) {
            clearInterval(poll);
            resolve(what());
          }
        }, 10);
      });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const frames: Frame[] = [];
    const sub = ffmpegSource({ id: 'cam', input: { url: 'srt://127.0.0.1:21510', kind: 'stream', rate: 'native', loop: false }, output, ffmpegPath: path }).subscribe({ next: (f) => frames.push(f) });
    try {
      expect(await until(() => vi.getTimerCount() > 0, 10_000)).toBe(true); // the wait for frame 0's report
      expect(frames).toHaveLength(0);
      vi.advanceTimersByTime(2000); // …ran out: no report came
      // Both frames now, with no second wait of REPORT_WAIT_MS (before: frame 0 was read, then held for it again).
      expect(await until(() => frames.length === 2, 5000)).toBe(true);
      expect(frames.map((f) => [f.seq, size(f)])).toEqual([[0, '64x48'], [1, '64x48']]);
    } finally {
      sub.unsubscribe();
      vi.useRealTimers();
    }
  }, 30_000);

  it('…and a frame of the same size held so is delivered once its report comes: none lost', async () => {
    const ffmpeg = stalling('stall-same', [`head -c ${64 * 48 * 3} /dev/zero`, 'sleep 0.5', 'rep 1', 'exit 0']);
    const { err, frames } = await afterSilence(ffmpeg);
    expect(err).toBeUndefined();
    expect(frames.map((f) => [f.seq, size(f)])).toEqual([[0, '64x48'], [1, '64x48']]);
  }, 30_000);
});
