import { execFileSync, spawn as nodeSpawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, lastValueFrom, map, take, tap, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import type { Frame } from '../../src/core/frame.js';
import { bundledFfmpegPath, defaultFfmpegPath, ffmpegAutoscales, ffmpegVersion } from '../../src/sources/ffmpeg-path.js';
import { Pace } from '../../src/flow/pace.js';
import { ffmpegSource, type FfmpegSourceOptions, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { FRAME_CHANNELS } from '../../src/sources/frame-channel.js';
import { FRAME_SOCKETS } from '../../src/sources/frame-socket.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { alive } from '../helpers/cli.js';

const output = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const opts = (over: Partial<FfmpegSourceOptions['input']> = {}, extra: Partial<FfmpegSourceOptions> = {}): FfmpegSourceOptions => ({
  id: 'cam',
  input: { url: PERSON_VIDEO, kind: 'file', rate: 'fast', loop: false, ...over },
  output,
  ffmpegPath: defaultFfmpegPath(),
  ...extra,
});

/** A scripted ffmpeg: prints `log` on stderr (`$OUT` is the output's name, its last argument), then runs `then` (shell). */
function scriptedFfmpeg(log: string, then: string): string {
  const fake = join(mkdtempSync(join(tmpdir(), 'argus-fake-')), 'ffmpeg');
  writeFileSync(fake, `#!/bin/sh\nfor OUT; do :; done\nprintf "${log}" >&2\n${then}\n`, { mode: 0o755 });
  return fake;
}

describe('ffmpegSource with an ffmpeg that never says the size', () => {
  it.each(['source', 'letterbox'] as const)('bytes on stdout, then exit (%s layout): a coded probe error, never an exception', async (frame) => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-nosize-'));
    const fake = join(dir, 'ffmpeg');
    // Writes some pixels and exits 0 with an input report that has no size (an RTSP probe
    // that missed the SPS prints "Video: h264, none").
    writeFileSync(fake, "#!/bin/sh\nprintf 'Input #0, rtsp, from x:\\n  Stream #0:0: Video: h264, none, 90k tbr\\n' >&2\nhead -c 70000 /dev/zero\nexit 0\n", { mode: 0o755 });
    const err = await lastValueFrom(ffmpegSource({ ...opts({ url: 'rtsp://cam/x', kind: 'rtsp' }), ffmpegPath: fake, output: { ...output, frame } })).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
  });
});

describe('ffmpegSource with an ffmpeg whose output line has no size argus can read', () => {
  it.each(['source', 'letterbox'] as const)('a file read as fast as possible (no watchdog) fails at once with a coded probe error naming the line, ffmpeg stopped (%s layout)', async (frame) => {
    const input = "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x':\\n  Stream #0:0: Video: h264 (High), yuv420p(tv, bt709, progressive), 640x360, 10 fps, 10 tbr\\n";
    const scaler = '[Parsed_scale_0 @ 0x1] w:640 h:360 fmt:yuv420p sar:0/1 -> w:416 h:234 fmt:bgr24 sar:0/1 flags:0x2\\n';
    const out = "Output #0, rawvideo, to '$OUT':\\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, q=2-31, 10 fps\\n";
    // Then frames, and ffmpeg blocked on the pipe: before, the source waited for ever.
    const fake = scriptedFfmpeg(input + scaler + out, 'head -c 70000 /dev/zero\nexec sleep 30');
    let pid = 0;
    const started = Date.now();
    const err = await lastValueFrom(ffmpegSource({ ...opts(), ffmpegPath: fake, output: { ...output, frame }, onSpawn: (c) => (pid = c.pid!) })).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect(err.message).toContain("ffmpeg's line for the frames it writes has no size argus can read: Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, q=2-31, 10 fps");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(pid).toBeGreaterThan(0);
    await expect.poll(() => alive(pid), { timeout: 5000 }).toBe(false);
  });
});

describe('ffmpegSource: a camera above 4K UHD, letterboxed', () => {
  it('is letterboxed from its own size (the 4K bound is only for frames at the source\'s size)', async () => {
    const input = "Input #0, rtsp, from 'x':\\n  Stream #0:0: Video: hevc (Main), yuv420p(tv, progressive), 7680x4320, 25 fps, 25 tbr\\n";
    const scaler = '[Parsed_scale_0 @ 0x1] w:7680 h:4320 fmt:yuv420p sar:0/1 -> w:416 h:234 fmt:bgr24 sar:0/1 flags:0x2\\n';
    const out = "Output #0, rawvideo, to '$OUT':\\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 416x416, q=2-31, 25 fps\\n";
    const fake = scriptedFfmpeg(input + scaler + out, `head -c ${416 * 416 * 3 * 2} /dev/zero\nexit 0`);
    const frames = await lastValueFrom(ffmpegSource({ ...opts(), ffmpegPath: fake, output: { ...output, frame: 'letterbox' } }).pipe(toArray()));
    expect(frames.map((f) => [f.letterbox.srcWidth, f.letterbox.srcHeight, f.letterbox.scaledWidth, f.data.length])).toEqual([
      [7680, 4320, 416, 416 * 416 * 3],
      [7680, 4320, 416, 416 * 416 * 3],
    ]);
  });
});

describe('ffmpegSource: an ffmpeg that fails after writing frames', () => {
  it.each(['frame socket', 'stdout pipe'])('every frame it wrote comes before the failure (%s), a busy consumer or not', async (via) => {
    const input = "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x':\\n  Stream #0:0: Video: h264 (High), yuv420p(tv, bt709, progressive), 640x360, 10 fps, 10 tbr\\n";
    const scaler = '[Parsed_scale_0 @ 0x1] w:640 h:360 fmt:yuv420p sar:0/1 -> w:32 h:18 fmt:bgr24 sar:0/1 flags:0x2\\n';
    const out = "Output #0, rawvideo, to '$OUT':\\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 32x32, q=2-31, 10 fps\\n";
    const size = 32 * 32 * 3;
    // 1000 frames (3 MB, many times what the socket holds), then a failure.
    const fake = scriptedFfmpeg(input + scaler + out, `head -c ${size * 1000} /dev/zero\nexit 1`);
    const spawn: SpawnFn | undefined = via === 'stdout pipe' ? nodeSpawn : undefined;
    let frames = 0;
    const err = await lastValueFrom(
      ffmpegSource({ ...opts(), ffmpegPath: fake, spawn, output: { ...output, width: 32, height: 32, frame: 'letterbox' } }).pipe(
        tap(() => {
          frames++;
          const until = performance.now() + 0.3; // a consumer that takes its time with each
          while (performance.now() < until);
        }),
      ),
    ).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_EXIT');
    expect(err.message).toContain('ffmpeg exited with code 1 after 1000 frames');
    expect(frames).toBe(1000);
  });
});

describe('ffmpegSource with an ffmpeg that writes other pixels than asked', () => {
  it('4:2:0 frames asked, rgb24 written: a coded probe error naming the format, ffmpeg stopped before any frame', async () => {
    const input = "Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'x':\\n  Stream #0:0: Video: h264 (High), yuv420p(tv, bt709, progressive), 640x360, 10 fps, 10 tbr\\n";
    const out = "Output #0, rawvideo, to '$OUT':\\n  Stream #0:0: Video: rawvideo (RGB[24] / 0x18424752), rgb24, 640x360, q=2-31, 10 fps\\n";
    const fake = scriptedFfmpeg(input + out, 'exec sleep 30');
    let frames = 0;
    const err = await lastValueFrom(ffmpegSource({ ...opts(), ffmpegPath: fake, output: { ...output, frame: 'source-yuv' } }).pipe(tap(() => frames++))).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_PROBE');
    expect(err.message).toContain('ffmpeg writes rgb24, not the yuv420p asked for');
    expect(frames).toBe(0);
  });
});

describe('ffmpegSource (real ffmpeg)', () => {
  it('frames at the source size: the picture as decoded, at its own size, in the model channel order; larger than 4K UHD reduced to fit it', async () => {
    const src = { ...output, rounding: 'floor' as const, frame: 'source' as const };
    const frames = await lastValueFrom(ffmpegSource({ ...opts({}), output: src }).pipe(take(3), toArray()));
    for (const f of frames) {
      expect(f.layout).toBe('source');
      expect([f.letterbox.srcWidth, f.letterbox.srcHeight, f.data.length]).toEqual([768, 432, 768 * 432 * 3]);
      // YOLOX's int(432 * 416 / 768) in floating point: 233.99999999999997 → 233.
      expect([f.letterbox.scaledWidth, f.letterbox.scaledHeight]).toEqual([416, 233]);
      f.release();
    }
    const dir = mkdtempSync(join(tmpdir(), 'argus-big-'));
    const big = join(dir, 'big.png');
    execFileSync(defaultFfmpegPath(), ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=4096x2304:rate=1', '-frames:v', '1', big]);
    const [f] = await lastValueFrom(ffmpegSource({ ...opts({ url: big }), output: src }).pipe(toArray()));
    expect([f.letterbox.srcWidth, f.letterbox.srcHeight, f.data.length]).toEqual([3840, 2160, 3840 * 2160 * 3]);
  }, 60_000);

  it('delivers letterboxed frames of the model size with sequence numbers, pts and capture stamps', async () => {
    const frames = await lastValueFrom(
      // No pace: frames are read as ffmpeg delivers them.
      ffmpegSource(opts({})).pipe(
        take(5),
        toArray(),
      ),
    );
    expect(frames.map((f) => f.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(frames.map((f) => f.pts)).toEqual([0, 0.1, 0.2, 0.3, 0.4]); // 10 fps source
    const f = frames[4];
    expect(f.data.length).toBe(416 * 416 * 3);
    expect(f.letterbox).toMatchObject({ srcWidth: 768, srcHeight: 432, scaledWidth: 416, scaledHeight: 234, padX: 0, padY: 0 });
    // Rows below the scaled picture are padding: exactly 114 in every channel.
    const padRow = f.data.subarray(300 * 416 * 3, 301 * 416 * 3);
    expect(padRow.every((v) => v === 114)).toBe(true);
    // Rows inside the picture are not all padding.
    const picRow = f.data.subarray(100 * 416 * 3, 101 * 416 * 3);
    expect(picRow.some((v) => v !== 114)).toBe(true);
    for (let i = 1; i < frames.length; i++) expect(frames[i].stamps.captured).toBeGreaterThanOrEqual(frames[i - 1].stamps.captured);
    expect(frames[0].stamps.captured).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a file with `fps` above its own rate: every frame once, at the file\'s rate (no repeats); its restarts start so', async () => {
    const first = (o: FfmpegSourceOptions) => lastValueFrom(ffmpegSource(o).pipe(take(12), toArray()));
    const reference = await first(opts({})); // 10 fps, no fps filter
    const memo = {};
    const spawned: number[] = [];
    const infoFps: (number | undefined)[] = [];
    for (let run = 0; run < 2; run++) {
      let n = 0;
      const frames = await first(opts({ fps: 25 }, { memo, onSpawn: () => n++, onStreamInfo: (info) => infoFps.push(info.fps) }));
      spawned.push(n);
      // The same pictures as the file's own frames, one each (the fps filter repeated them: 25 over 10 fps)
      frames.forEach((f, i) => expect(Buffer.compare(f.data, reference[i].data), `frame ${i}`).toBe(0));
      expect(frames.map((f) => f.pts)).toEqual(reference.map((f) => f.pts));
    }
    expect(spawned).toEqual([2, 1]); // found out once; the restart starts at the file's rate
    expect(infoFps).toEqual([10, 10]);
    // Below the file's rate, the fps filter still resamples it (one ffmpeg).
    let n = 0;
    const five = await lastValueFrom(ffmpegSource(opts({ fps: 5 }, { onSpawn: () => n++ })).pipe(take(4), toArray()));
    expect(n).toBe(1);
    expect(five.map((f) => f.pts)).toEqual([0, 0.2, 0.4, 0.6]);
  });

  it('a variable-rate file (30 fps, then 10): frames at the rate ffmpeg delivers them (30, repeats over the gaps), not the 22.2 average; pts keep to the file\'s time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-vfr-'));
    const file = join(dir, 'vfr.mp4');
    // 2 s of a 30 fps test picture, keeping every frame of the first second and every third of
    // the second: 40 frames, timestamps as they were (a phone's recording that slows in the dark).
    execFileSync(defaultFfmpegPath(), ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=30:duration=2', '-vf', 'select=lt(t\\,1)+not(mod(n\\,3))', '-vsync', 'vfr', '-c:v', 'mpeg4', '-q:v', '5', '-pix_fmt', 'yuv420p', file]);
    let spawned = 0;
    // Frames at the source's size, and letterboxed by ffmpeg (model.resize: fast), whose size
    // comes from the input line: the rate, from the output line, in both.
    for (const frame of ['source-yuv', 'letterbox'] as const) {
      const infoFps: (number | undefined)[] = [];
      const frames = await lastValueFrom(ffmpegSource({ ...opts({ url: file }), output: { ...output, frame }, onStreamInfo: (i) => infoFps.push(i.fps), onSpawn: () => spawned++ }).pipe(tap((f) => f.release()), toArray()));
      expect(infoFps, frame).toEqual([30]);
      expect(frames.length).toBeGreaterThanOrEqual(58); // 2 s at 30 fps, the slow second's frames repeated
      expect(frames.length).toBeLessThanOrEqual(61);
      frames.forEach((f, i) => expect(f.pts).toBeCloseTo(i / 30, 9));
      expect(frames.at(-1)!.pts).toBeLessThan(2); // at the 22.2 average: 2.6 s for a 2 s file
    }
    // `fps: 25`, between the average and the 30 delivered: the fps filter keeps (at most 25 a second, one ffmpeg).
    const at25 = await lastValueFrom(ffmpegSource({ ...opts({ url: file, fps: 25 }), output: { ...output, frame: 'source-yuv' }, onSpawn: () => spawned++ }).pipe(tap((f) => f.release()), toArray()));
    expect(spawned).toBe(3);
    expect(at25.length).toBeGreaterThanOrEqual(47); // 1.93–2 s at 25 fps
    expect(at25.length).toBeLessThanOrEqual(51);
    at25.forEach((f, i) => expect(f.pts).toBeCloseTo(i / 25, 9));
  });

  it('a rotated video (a phone\'s portrait clip: 768x432 stored, turned 90°) letterboxed by ffmpeg: the letterbox of the 432x768 picture ffmpeg scales', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-rot-'));
    const file = join(dir, 'rot.mp4');
    execFileSync(defaultFfmpegPath(), ['-v', 'error', '-i', PERSON_VIDEO, '-t', '1', '-c', 'copy', '-metadata:s:v', 'rotate=90', file]);
    const frames = await lastValueFrom(ffmpegSource(opts({ url: file })).pipe(take(2), toArray()));
    expect(frames[0].letterbox).toMatchObject({ srcWidth: 432, srcHeight: 768, scaledWidth: 234, scaledHeight: 416 });
    // The picture is where that letterbox says: the columns right of it are padding.
    const row = frames[0].data.subarray(200 * 416 * 3, 201 * 416 * 3);
    expect(row.subarray(240 * 3).every((v) => v === 114)).toBe(true);
    expect(row.subarray(0, 230 * 3).some((v) => v !== 114)).toBe(true);
  });

  it('unsubscribing kills ffmpeg', async () => {
    let child: ChildProcess | undefined;
    let exited = false;
    await firstValueFrom(ffmpegSource(opts({ rate: 'native', loop: true }, { onSpawn: (c) => (child = c), onExit: () => (exited = true) })));
    expect(child?.pid).toBeGreaterThan(0);
    const deadline = Date.now() + 5000;
    while (!exited && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(exited).toBe(true);
    expect(alive(child!.pid!)).toBe(false);
  });

  /** A fast file read under `pace` by a consumer "busy" with each frame it gets (it never releases one). */
  const pacedBy = (pace: Pace) => {
    const got: Frame[] = [];
    const sub = ffmpegSource(opts({}, { pace })).subscribe((f) => {
      got.push(f);
      pace.enter();
    });
    const until = async (n: number) => {
      const deadline = Date.now() + 20_000;
      while (got.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    };
    return { got, sub, until };
  };

  it.each([1, 2])('fast mode with a pace of capacity %i: that many frames come while none leaves, one more each time one leaves, and frames never released stop nothing', async (capacity) => {
    const pace = new Pace(capacity);
    const { got, sub, until } = pacedBy(pace);
    try {
      for (let n = capacity; n < capacity + 2; n++) {
        await until(n);
        await new Promise((r) => setTimeout(r, 300));
        expect(got).toHaveLength(n); // held back while the stage is full
        pace.leave();
      }
      await until(capacity + 2);
      expect(got).toHaveLength(capacity + 2);
      expect(got.map((f) => f.seq)).toEqual(Array.from({ length: capacity + 2 }, (_, k) => k));
    } finally {
      sub.unsubscribe();
    }
  });

  it.each(['frame socket', 'stdout pipe'])('fast mode with a pace, through the %s: ffmpeg ends while the stage is busy; every frame still comes, in order, then the end', async (via) => {
    // Small frames: ffmpeg writes the whole clip and exits while argus holds the second frame
    // back; the rest waits in the socket (node reads a pipe to its end by itself), and none of
    // it may be lost.
    const spawn: SpawnFn | undefined = via === 'stdout pipe' ? nodeSpawn : undefined;
    const dir = mkdtempSync(join(tmpdir(), 'argus-src-'));
    const clip = join(dir, 'count.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=160x120:rate=10', '-frames:v', '12', '-pix_fmt', 'yuv420p', clip]);
    const small = { ...output, width: 32, height: 32 };
    const reference = await lastValueFrom(ffmpegSource(opts({ url: clip }, { output: small })).pipe(toArray()));
    expect(reference).toHaveLength(12);
    const pace = new Pace();
    let exited = false;
    const got: Frame[] = [];
    const done = new Promise<void>((resolve, reject) =>
      ffmpegSource(opts({ url: clip }, { output: small, pace, spawn, onExit: () => (exited = true) })).subscribe({
        next: (f) => {
          got.push(f);
          pace.enter();
          // busy until ffmpeg has exited, then for a moment more per frame
          const leave = () => (exited ? setTimeout(() => pace.leave(), 5) : setTimeout(leave, 10));
          leave();
        },
        error: reject,
        complete: resolve,
      }),
    );
    await done;
    expect(got.map((f) => f.seq)).toEqual(reference.map((_f, i) => i));
    expect(got.map((f) => Buffer.from(f.data).toString('base64'))).toEqual(reference.map((f) => Buffer.from(f.data).toString('base64')));
  }, 30_000);

  it("the bundled 2018 ffmpeg (no -autoscale, FFmpeg 4.4's) runs a source at its own size and letterboxed: the option is left out for it, known by its version or its path", async () => {
    const bundled = bundledFfmpegPath();
    expect(ffmpegAutoscales(bundled)).toBe(false); // its version not asked yet: known by its path
    expect((await ffmpegVersion(bundled))?.libavformat?.[0]).toBe(58);
    expect(ffmpegAutoscales(bundled)).toBe(false); // by its version
    expect(ffmpegAutoscales(defaultFfmpegPath())).toBe(defaultFfmpegPath() !== bundled);
    for (const out of [{ ...output, frame: 'source' as const }, output]) {
      const frames = await lastValueFrom(ffmpegSource(opts({}, { output: out, ffmpegPath: bundled })).pipe(take(3), toArray()));
      expect(frames).toHaveLength(3);
      expect(frames[0].data.length).toBe('frame' in out ? 768 * 432 * 3 : 416 * 416 * 3);
      for (const f of frames) f.release();
    }
  }, 30_000);

  it.runIf(FRAME_CHANNELS)("frames read by the frame channel's thread (a file at its own rate: no frame socket) are those of ffmpeg's stdout pipe, byte for byte, letterboxed and at the source's size", async () => {
    for (const out of [output, { ...output, frame: 'source-yuv' as const }]) {
      const run = (extra: Partial<FfmpegSourceOptions>) =>
        lastValueFrom(ffmpegSource(opts({ rate: 'native' }, { output: out, ...extra })).pipe(take(12), map((f) => createHash('sha1').update(f.data).digest('hex')), toArray()));
      let stdout: unknown = 'not spawned';
      const channel = await run({ onSpawn: (c) => (stdout = c.stdout) });
      expect(stdout).toBeNull(); // frames came through the channel: no stdout pipe (and a file at its own rate gets no frame socket)
      const pipe = await run({ spawn: (cmd, args, o) => nodeSpawn(cmd, args, o) }); // an injected spawn gets the pipe
      expect(new Set(channel).size).toBeGreaterThan(1);
      expect(channel).toEqual(pipe);
    }
  }, 60_000);

  it.runIf(FRAME_SOCKETS)('frames read straight from the frame socket are those of ffmpeg\'s stdout pipe, byte for byte, letterboxed and at the source\'s size', async () => {
    const viaPipe: SpawnFn = (cmd, args, o) => {
      expect(o.stdio[1]).toBe('pipe'); // an injected spawn gets the pipe
      return nodeSpawn(cmd, args, o);
    };
    for (const out of [output, { ...output, frame: 'source-yuv' as const }]) {
      const run = (extra: Partial<FfmpegSourceOptions>) =>
        lastValueFrom(ffmpegSource(opts({}, { output: out, ...extra })).pipe(take(40), map((f) => createHash('sha1').update(f.data).digest('hex')), toArray()));
      let stdout: unknown = 'not spawned';
      const socket = await run({ onSpawn: (c) => (stdout = c.stdout), frameChannel: false });
      expect(stdout).toBeNull(); // frames came through the socket
      const pipe = await run({ spawn: viaPipe });
      expect(socket).toHaveLength(40);
      expect(new Set(socket).size).toBeGreaterThan(1);
      expect(socket).toEqual(pipe);
    }
  }, 30_000);

  it.runIf(FRAME_SOCKETS)('an event loop stalled past the frame socket\'s deadline: the frames come through the pipe instead, no failure', async () => {
    let stdout: unknown;
    // (The file judged already, as a run's memo keeps it: ffmpeg and its socket start at the
    // subscription, not after the look at the file, and the stall below comes after them.)
    const frames = ffmpegSource(opts({}, { onSpawn: (c) => (stdout = c.stdout), frameChannel: false, memo: { readsOnce: false } })).pipe(take(3), toArray());
    const got = lastValueFrom(frames);
    const until = Date.now() + 5500; // past the socket's 5 s, before its connection is seen
    while (Date.now() < until);
    expect(await got).toHaveLength(3);
    expect(stdout).not.toBeNull();
  }, 30_000);

  it('a spawn that fails on the next tick (out of descriptors: node leaves the child without pipes) is a coded, retryable error, never an exception', async () => {
    const spawn: SpawnFn = () => {
      const c = Object.assign(new EventEmitter(), { stdout: null, stderr: null, stdin: null, pid: undefined, kill: () => false }) as unknown as ChildProcess;
      process.nextTick(() => c.emit('error', Object.assign(new Error('spawn ffmpeg EMFILE'), { code: 'EMFILE', errno: -24, syscall: 'spawn ffmpeg' })));
      return c;
    };
    const err = await lastValueFrom(ffmpegSource(opts({}, { spawn }))).catch((e) => e);
    expect(isArgusError(err) && err.code).toBe('VAP_ERR_SOURCE_SPAWN');
    expect(err.message).toContain('could not start ffmpeg');
  });

  it('unsubscribed before its frame socket is open: ffmpeg is never started', async () => {
    let spawned = 0;
    ffmpegSource(opts({}, { onSpawn: () => spawned++, frameChannel: false }))
      .subscribe()
      .unsubscribe();
    await new Promise((r) => setTimeout(r, 300));
    expect(spawned).toBe(0);
  });

  it('completes at the end of a file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-src-'));
    const clip = join(dir, 'short.mp4');
    const { execFileSync } = await import('node:child_process');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=10', '-frames:v', '7', '-pix_fmt', 'yuv420p', clip]);
    const frames = await lastValueFrom(ffmpegSource(opts({ url: clip })).pipe(tap((f) => f.release()), toArray()));
    expect(frames).toHaveLength(7);
    expect(frames[0].letterbox).toMatchObject({ srcWidth: 320, srcHeight: 240, scaledHeight: 312 });
  });

  it.each([
    ['a missing file', () => opts({ url: '/nonexistent/video.mp4' }), 'VAP_ERR_SOURCE_OPEN', /file not found: \/nonexistent\/video.mp4/],
    [
      'a file that is not a video',
      () => {
        const p = join(mkdtempSync(join(tmpdir(), 'argus-src-')), 'notes.mp4');
        writeFileSync(p, 'this is not a video\n'.repeat(100));
        return opts({ url: p });
      },
      'VAP_ERR_SOURCE_EXIT',
      /source "cam": ffmpeg exited with code 1 for .*notes.mp4\n.*Invalid data found/s,
    ],
    ['a missing ffmpeg', () => opts({}, { ffmpegPath: '/nonexistent/ffmpeg' }), 'VAP_ERR_SOURCE_OPEN', /ffmpeg executable not found at \/nonexistent\/ffmpeg/],
    // Both were ffmpeg's words alone: "moov atom not found … Invalid data found", "Is a directory".
    [
      'an empty file',
      () => {
        const p = join(mkdtempSync(join(tmpdir(), 'argus-src-')), 'empty.mp4');
        writeFileSync(p, '');
        return opts({ url: p });
      },
      'VAP_ERR_SOURCE_PROBE',
      /^source "cam": \/.*\/empty\.mp4 is empty \(0 bytes\)$/,
    ],
    [
      'a folder',
      () => {
        const p = join(mkdtempSync(join(tmpdir(), 'argus-src-')), 'clip.mp4');
        mkdirSync(p);
        return opts({ url: p });
      },
      'VAP_ERR_SOURCE_OPEN',
      /^source "cam": \/.*\/clip\.mp4 is a folder, not a file$/,
    ],
  ])('%s gives a clear coded error', async (_n, make, code, message) => {
    const err = await lastValueFrom(ffmpegSource(make())).catch((e: unknown) => e);
    expect(isArgusError(err)).toBe(true);
    expect((err as { code: string }).code).toBe(code);
    expect((err as Error).message).toMatch(message);
  });
});

describe("ffmpegSource: a relayed camera's stream that ends after a delimiter", () => {
  // What ffmpeg prints when the stream ends after the relay's last delimiter (no picture after
  // it), after the real cause.
  const tail = "[rtsp @ 0x1] CSeq 7 expected, 0 received.\\n[NULL @ 0x2] missing picture in access unit with size 6\\n[h264 @ 0x3] no frame!\\nError while decoding stream #0:0: Invalid data found when processing input\\n";
  const input = "Input #0, rtsp, from 'x':\\n  Stream #0:0: Video: h264 (High), yuv420p(progressive), 640x360, 10 fps, 10 tbr\\n";
  const fake = () => scriptedFfmpeg(input + tail, 'exit 1');
  const failure = async (over: Partial<FfmpegSourceOptions['input']>) =>
    (await lastValueFrom(ffmpegSource({ ...opts({ url: 'rtsp://127.0.0.1:1/cam', kind: 'rtsp', rate: 'native', ...over }), ffmpegPath: fake() })).catch((e: Error) => e)) as Error;

  it('relayed with delimiters (low latency, the default): the error names the cause, not the lines about the last delimiter; without delimiters or without the relay, those lines are kept', async () => {
    const relayed = await failure({});
    expect(isArgusError(relayed, 'VAP_ERR_SOURCE_EXIT')).toBe(true);
    expect(relayed.message).toContain('CSeq 7 expected, 0 received.');
    expect(relayed.message).not.toContain('no frame!');
    for (const over of [{ decode: { lowLatency: false, threads: 1 } }, { cameraClock: false }]) {
      const e = await failure(over);
      expect(e.message).toContain('CSeq 7 expected, 0 received.');
      expect(e.message).toContain('no frame!');
    }
  });
});
