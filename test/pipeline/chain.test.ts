import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { delay, filter, lastValueFrom, map, pipe, Subject, timer, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema, ZoneSchema, type PipelineConfig } from '../../src/config/schema.js';
import { emptyStamps, stageMs, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { Pace } from '../../src/flow/pace.js';
import type { Detector } from '../../src/inference/detector.js';
import { createPipeline, sourceChain, stageCapacity, StageShares } from '../../src/pipeline/pipeline.js';
import { FFMPEG_EXIT_WAIT_MS, type SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { newSourceStats } from '../../src/sources/stats.js';
import { FAKE_SIZE, fakeDetector, type FakeSession } from '../helpers/fake-session.js';
import { SlowToDie } from '../sources/fake-ffmpeg.js';

const S = FAKE_SIZE;
let detector: Detector;
let session: FakeSession;
beforeAll(async () => {
  ({ detector, session } = await fakeDetector());
});
afterAll(() => detector?.release());

const config = (yaml = ''): PipelineConfig =>
  parseConfigText(`name: t\nmodel: { path: fake.onnx }\nsources:\n  - id: cam\n    uri: /nonexistent.mp4\n${yaml}`, PipelineSchema, 'test.yaml', {});

/** A frame of the model's size whose every byte is `value` (so the fake model's box says which frame it saw). */
function frame(seq: number, value: number, released: number[]): Frame {
  return {
    source: 'cam',
    seq,
    pts: seq / 10,
    data: Buffer.alloc(S * S * 3, value),
    letterbox: letterbox(S, S, S, S, 'top-left'),
    stamps: emptyStamps(performance.timeOrigin + performance.now()),
    producedBy: 'captured',
    release: () => void released.push(seq),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

function chain(frames$: Subject<Frame>, pace?: Pace) {
  const stats = newSourceStats('cam');
  const cfg = config();
  const out: FrameResult[] = [];
  let error: unknown;
  let done = false;
  sourceChain(frames$, { detector, config: cfg, source: cfg.sources[0], stats, pace, log: () => {} }).subscribe({
    next: (r) => out.push(r),
    error: (e) => (error = e),
    complete: () => (done = true),
  });
  return { stats, out, get error() {
    return error;
  }, get done() {
    return done;
  } };
}

describe('the chain over a fake session (wiring, dropping, accounting)', () => {
  it("each result carries its own frame's detections, mapped to source pixels, and every stamp in order", async () => {
    session.hold = false;
    const frames$ = new Subject<Frame>();
    const c = chain(frames$);
    const released: number[] = [];
    for (let i = 0; i < 5; i++) {
      frames$.next(frame(i, 10 + i * 7, released));
      await tick();
    }
    frames$.complete();
    await tick();
    expect(c.done).toBe(true);
    expect(c.out.map((r) => r.frame.seq)).toEqual([0, 1, 2, 3, 4]);
    // The fake model puts its box at the input's first value: each frame's own pixels.
    expect(c.out.map((r) => r.detections.xyxy[0])).toEqual([10, 17, 24, 31, 38]);
    for (const r of c.out) {
      const s = r.frame.stamps;
      expect(s.captured <= s.staged && s.staged <= s.preprocessed && s.preprocessed <= s.inferStart && s.inferStart <= s.inferEnd && s.inferEnd <= s.postprocessed && s.postprocessed <= s.emitted).toBe(true);
      expect(r.dropped).toBe(0);
    }
    expect(c.stats).toMatchObject({ framesIn: 5, framesOut: 5, dropped: 0, inferenceErrors: 0 });
    expect(c.stats.e2e.count).toBe(5);
  });

  it('a busy stage keeps only the newest waiting frame: the rest are dropped, counted and released, and framesIn = framesOut + dropped', async () => {
    session.hold = true;
    try {
      const frames$ = new Subject<Frame>();
      const pace = new Pace();
      const c = chain(frames$, pace);
      const released: number[] = [];
      frames$.next(frame(0, 1, released));
      await tick();
      expect(session.held).toHaveLength(1);
      expect(pace.busy).toBe(true);
      for (let i = 1; i <= 9; i++) frames$.next(frame(i, 1 + i, released));
      expect(released).toEqual([1, 2, 3, 4, 5, 6, 7, 8]); // dropped while frame 0 ran; 9 waits
      await new Promise((r) => setTimeout(r, 30)); // frame 9 waits 30 ms for frame 0
      session.finish();
      await tick();
      expect(session.held).toHaveLength(1); // frame 9 started
      session.finish();
      await tick();
      expect(pace.busy).toBe(false);
      frames$.complete();
      await tick();
      expect(c.out.map((r) => r.frame.seq)).toEqual([0, 9]);
      expect(c.out.map((r) => r.dropped)).toEqual([8, 8]);
      // Frame 9's wait for frame 0 is the wait stage, not pre-processing (it was, before `staged`).
      const s9 = c.out[1].frame.stamps;
      expect(stageMs(s9, 'wait')).toBeGreaterThanOrEqual(25);
      expect(stageMs(s9, 'preprocess')).toBe(s9.preprocessed - s9.staged);
      expect(s9.staged).toBeGreaterThanOrEqual(c.out[0].frame.stamps.inferEnd);
      expect(c.stats).toMatchObject({ framesIn: 10, framesOut: 2, dropped: 8 });
      expect(c.stats.framesIn).toBe(c.stats.framesOut + c.stats.dropped);
    } finally {
      session.hold = false;
    }
  });

  it('a failed inference drops and counts that frame and the source goes on; 30 failures in a row fail the source alone', async () => {
    session.hold = false;
    const frames$ = new Subject<Frame>();
    const c = chain(frames$);
    const released: number[] = [];
    session.failNext(2);
    for (let i = 0; i < 4; i++) {
      frames$.next(frame(i, 5, released));
      await tick();
      await tick();
    }
    expect(c.out.map((r) => r.frame.seq)).toEqual([2, 3]);
    expect(c.stats).toMatchObject({ framesIn: 4, framesOut: 2, dropped: 2, inferenceErrors: 2 });
    expect(released).toEqual([0, 1]);
    session.failNext(30);
    for (let i = 4; i < 34; i++) {
      frames$.next(frame(i, 5, released));
      await tick();
      await tick();
    }
    // The source failed: the error is kept in its stats and the stream ends without erroring.
    expect(c.error).toBeUndefined();
    expect(c.done).toBe(true);
    expect(c.stats.error?.message).toBe('fake inference failure');
    // Every one of the 30 was an inference error, the last (which failed the source) included:
    // it was counted dropped but not as an inference error, so /metrics called it `stale`.
    expect(c.stats).toMatchObject({ framesIn: 34, framesOut: 2, dropped: 32, inferenceErrors: 2 + 30 });
    expect(released.length).toBe(32);
  });

  it('a stage of capacity 2 (a fast file, two sessions) runs two frames at once and delivers them in order; a frame done early keeps its place', async () => {
    session.hold = true;
    try {
      const frames$ = new Subject<Frame>();
      const pace = new Pace(2);
      const c = chain(frames$, pace);
      const released: number[] = [];
      frames$.next(frame(0, 1, released));
      await tick();
      expect(pace.busy).toBe(false); // room for a second frame
      frames$.next(frame(1, 2, released));
      await tick();
      expect(session.held).toHaveLength(2); // both in inference at once
      expect(pace.busy).toBe(true);
      frames$.next(frame(2, 3, released));
      frames$.next(frame(3, 4, released));
      expect(released).toEqual([2]); // only the newest waits
      session.finishAt(1); // frame 1 first
      await tick();
      expect(c.out).toEqual([]); // held behind frame 0
      expect(pace.busy).toBe(true); // and still in the stage: frame 3 does not start
      expect(session.held).toHaveLength(1);
      session.finish(); // frame 0
      await tick();
      expect(c.out.map((r) => r.frame.seq)).toEqual([0, 1]);
      expect(c.out.map((r) => r.detections.xyxy[0])).toEqual([1, 2]);
      expect(session.held).toHaveLength(1); // frame 3 started
      session.finish();
      await tick();
      frames$.complete();
      await tick();
      expect(c.done).toBe(true);
      expect(c.out.map((r) => r.frame.seq)).toEqual([0, 1, 3]);
      expect(c.out.map((r) => r.detections.xyxy[0])).toEqual([1, 2, 4]);
      expect(c.stats).toMatchObject({ framesIn: 4, framesOut: 3, dropped: 1 });
      expect(pace.busy).toBe(false);
    } finally {
      session.hold = false;
    }
  });

  it('stageCapacity: a fast file alone holds one frame per session and one more; beside a camera or a native-rate file, one; cameras and native-rate files one', () => {
    expect(stageCapacity('file', 'fast', 2, true)).toBe(3);
    expect(stageCapacity('file', 'fast', 1, true)).toBe(2);
    expect(stageCapacity('file', 'fast', 0, true)).toBe(2); // a session on the main thread counts as one
    expect(stageCapacity('file', 'fast', 2, false)).toBe(1);
    expect(stageCapacity('file', 'native', 2, true)).toBe(1);
    expect(stageCapacity('rtsp', 'fast', 2, true)).toBe(1);
  });

  it('StageShares: fast files get a fast file’s capacity only while no other source runs; a camera joining or leaving resizes them', () => {
    const shares = new StageShares(2);
    const a = shares.join('file', 'fast');
    expect(a.pace.capacity).toBe(3); // alone
    const cam = shares.join('rtsp', 'native');
    expect([a.pace.capacity, cam.pace.capacity]).toEqual([1, 1]);
    const b = shares.join('file', 'fast');
    const native = shares.join('file', 'native');
    expect([a.pace.capacity, b.pace.capacity, native.pace.capacity]).toEqual([1, 1, 1]);
    cam.leave();
    expect(a.pace.capacity).toBe(1); // the native-rate file still runs
    native.leave();
    native.leave(); // once is enough
    expect([a.pace.capacity, b.pace.capacity]).toEqual([3, 3]);
    const again = shares.join('rtsp', 'native');
    expect([a.pace.capacity, b.pace.capacity, again.pace.capacity]).toEqual([1, 1, 1]);
    again.leave();
    a.leave();
    expect(b.pace.capacity).toBe(3);
    b.leave();
    expect(shares.size).toBe(0);
  });

  it('a pace resized while frames run: grown, the waiting frame starts at once; shrunk, the frames inside finish and none is dropped for it', async () => {
    session.hold = true;
    try {
      const frames$ = new Subject<Frame>();
      const pace = new Pace(1);
      const c = chain(frames$, pace);
      const released: number[] = [];
      frames$.next(frame(0, 1, released));
      frames$.next(frame(1, 2, released)); // waits behind frame 0
      await tick();
      expect(session.held).toHaveLength(1);
      pace.resize(2);
      await tick();
      expect(session.held).toHaveLength(2); // frame 1 started beside frame 0
      expect(pace.busy).toBe(true);
      pace.resize(1);
      frames$.next(frame(2, 3, released)); // waits: two inside, room for one
      await tick();
      expect(session.held).toHaveLength(2);
      session.finish(); // frame 0 out; still one inside (frame 1): frame 2 waits
      await tick();
      expect(session.held).toHaveLength(1);
      expect(pace.busy).toBe(true);
      session.finish(); // frame 1 out: frame 2 starts
      await tick();
      expect(session.held).toHaveLength(1);
      session.finish();
      await tick();
      frames$.complete();
      await tick();
      expect(c.done).toBe(true);
      expect(c.out.map((r) => r.frame.seq)).toEqual([0, 1, 2]);
      expect(c.out.map((r) => r.detections.xyxy[0])).toEqual([1, 2, 3]);
      expect(released).toEqual([]);
      expect(c.stats).toMatchObject({ framesIn: 3, framesOut: 3, dropped: 0 });
      expect(pace.busy).toBe(false);
    } finally {
      session.hold = false;
    }
  });

  it('the frame beyond the sessions (capacity 3 on 2 sessions) is pre-processed while both run, and its run starts as soon as one ends', async () => {
    session.hold = true;
    session.limit = 2;
    try {
      const frames$ = new Subject<Frame>();
      const pace = new Pace(3);
      const c = chain(frames$, pace);
      const released: number[] = [];
      const seen: Frame[] = [];
      for (let i = 0; i < 3; i++) {
        const f = frame(i, i + 1, released);
        seen.push(f);
        frames$.next(f);
        await tick();
      }
      expect(session.held).toHaveLength(2); // frames 0 and 1 run
      expect(session.waiting).toHaveLength(1); // frame 2 waits for a session…
      expect(seen[2].stamps.preprocessed).toBeGreaterThan(0); // …already pre-processed
      expect(seen[2].stamps.inferStart).toBe(0);
      expect(pace.busy).toBe(true);
      session.finish(); // frame 0 ends: frame 2 starts in the same turn
      expect(session.held).toHaveLength(2);
      expect(seen[2].stamps.inferStart).toBeGreaterThanOrEqual(seen[2].stamps.preprocessed);
      session.finish();
      session.finish();
      await tick();
      frames$.complete();
      await tick();
      expect(c.out.map((r) => r.frame.seq)).toEqual([0, 1, 2]);
      expect(c.out.map((r) => r.detections.xyxy[0])).toEqual([1, 2, 3]);
      expect(c.stats).toMatchObject({ framesIn: 3, framesOut: 3, dropped: 0 });
      expect(pace.busy).toBe(false);
    } finally {
      session.hold = false;
      session.limit = Infinity;
    }
  });

  it('the pace is busy exactly while a frame is in detection, also when its inference fails', async () => {
    session.hold = true;
    try {
      const frames$ = new Subject<Frame>();
      const pace = new Pace();
      chain(frames$, pace);
      frames$.next(frame(0, 1, []));
      await tick();
      expect(pace.busy).toBe(true);
      session.fail();
      await tick();
      expect(pace.busy).toBe(false);
      frames$.next(frame(1, 1, []));
      expect(pace.busy).toBe(true);
      session.finish();
      await tick();
      expect(pace.busy).toBe(false);
    } finally {
      session.hold = false;
    }
  });
});

describe('extensions (real ffmpeg, fake session)', () => {
  let clip: string;
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-chain-'));
    clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '30', '-pix_fmt', 'yuv420p', clip]);
  });

  it('an ordinary filter and delay after the rules neither stall a file read as fast as possible nor lose a frame', async () => {
    session.hold = false;
    const seen: number[] = [];
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], uri: clip, rate: 'fast' }] }, {
      detector,
      extend: () =>
        pipe(
          map((r) => (seen.push(r.frame.seq), r)),
          filter((r) => r.frame.seq % 2 === 0),
          delay(1),
        ),
    });
    const results = await lastValueFrom(p.results$.pipe(toArray()));
    // Every frame reached the extension once; the odd ones were filtered out there (never
    // released: the garbage collector takes them) and the source read on regardless.
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(results.map((r) => r.frame.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i * 2));
    expect(p.stats[0]).toMatchObject({ framesIn: 30, framesOut: 15, dropped: 0 });
  });

  it("ffmpegPath: a relative one is the YAML folder's (it was the working directory's); one that is not there stops the start naming the field", async () => {
    session.hold = false;
    const base = mkdtempSync(join(tmpdir(), 'argus-chain-ff-'));
    mkdirSync(join(base, 'tools'));
    symlinkSync(defaultFfmpegPath(), join(base, 'tools', 'ff'));
    const logged: string[] = [];
    const p = await createPipeline({ ...config(), ffmpegPath: './tools/ff', sources: [{ ...config().sources[0], uri: clip, rate: 'fast' }] }, { detector, baseDir: base, log: (m) => void logged.push(m) });
    expect(p.ffmpegPath).toBe(join(base, 'tools', 'ff'));
    expect(logged.some((m) => m.includes(`at ${join(base, 'tools', 'ff')} (config ffmpegPath)`))).toBe(true);
    expect((await lastValueFrom(p.results$.pipe(toArray()))).length).toBe(30);
    await expect(
      createPipeline({ ...config(), ffmpegPath: './tools/missing', sources: [{ ...config().sources[0], uri: clip, rate: 'fast' }] }, { detector, baseDir: base, configFile: 'p.yaml' }),
    ).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: `p.yaml: ffmpegPath: ${join(base, 'tools', 'missing')}: no such file (ENOENT); name an ffmpeg executable` });
  });

  it('an extension may raise its own alerts: they carry through like a rule’s', async () => {
    session.hold = false;
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], uri: clip, rate: 'fast' }] }, {
      detector,
      extend: ({ config: src, labels }) =>
        map((r) => (r.frame.seq === 3 ? { ...r, alerts: [...r.alerts, { rule: 'custom', severity: 'warning' as const, event: 'custom.seen', message: `${src.id}: ${labels[r.detections.classId[0]]}`, row: 0 }] } : r)),
    });
    const results = await lastValueFrom(p.results$.pipe(toArray()));
    const withAlerts = results.filter((r) => r.alerts.length > 0);
    expect(withAlerts.map((r) => r.frame.seq)).toEqual([3]);
    expect(withAlerts[0].alerts[0]).toMatchObject({ rule: 'custom', message: 'cam: person' });
  });
});

/**
 * Two 10 fps clips at the model's size: 40 frames of dark grey (a file's) and `lightFrames` of
 * light grey (a camera's). Grey levels tell the sources apart: the fake model reports each run's
 * first input value.
 */
function greyClips(prefix: string, lightFrames: number): { dark: string; light: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const clip = (name: string, colour: string, frames: number) => {
    const path = join(dir, name);
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `color=c=${colour}:size=${S}x${S}:rate=10`, '-frames:v', String(frames), '-pix_fmt', 'yuv420p', path]);
    return path;
  };
  return { dark: clip('dark.mp4', '0x141414', 40), light: clip('light.mp4', '0xb4b4b4', lightFrames) };
}

describe('a fast file beside a camera-like source (real ffmpeg, fake session)', () => {
  let dark: string;
  let light: string;
  beforeAll(() => {
    ({ dark, light } = greyClips('argus-share-', 40));
  });

  /** Runs held by the session, per source, once both sources have had time to fill the stage. */
  async function heldPerSource(sources: { id: string; uri: string; rate: 'fast' | 'native' }[]): Promise<{ bulk: number; cam: number }> {
    session.hold = true;
    const stop = new Subject<void>();
    const p = await createPipeline({ ...config(), sources: sources.map((s) => ({ ...config().sources[0], ...s })) }, { detector, stop });
    const done = lastValueFrom(p.results$.pipe(toArray()));
    const count = () => ({ bulk: session.held.filter((h) => h.req.data[0] < 100).length, cam: session.held.filter((h) => h.req.data[0] >= 100).length });
    try {
      const end = Date.now() + 30_000; // only ends a hang
      while (Date.now() < end && (count().bulk === 0 || (sources.length > 1 && count().cam === 0))) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 400)); // time for the file to put more in, if it may
      return count();
    } finally {
      session.hold = false;
      stop.next();
      while (session.held.length > 0) session.finish();
      await done;
    }
  }

  it('the file holds one frame in the stage, as the camera does: sessions are first come, first served, and it took 2–3 times a camera’s share', async () => {
    expect(await heldPerSource([{ id: 'bulk', uri: dark, rate: 'fast' }])).toEqual({ bulk: 2, cam: 0 }); // alone: one per session and one more
    expect(await heldPerSource([{ id: 'bulk', uri: dark, rate: 'fast' }, { id: 'cam', uri: light, rate: 'native' }])).toEqual({ bulk: 1, cam: 1 });
  }, 60_000);
});

describe('a fast file’s stage follows the sources running beside it (real ffmpeg, fake session)', () => {
  let dark: string;
  let light: string;
  beforeAll(() => {
    ({ dark, light } = greyClips('argus-follow-', 4));
  });

  // Runs held by the session, per source (the file's frames are dark, the camera's light).
  const bulkRuns = () => session.held.filter((h) => h.req.data[0] < 100).length;
  const camRuns = () => session.held.filter((h) => h.req.data[0] >= 100).length;
  /** Waits (polling; the bound only ends a hang) until `cond` holds: no assertion here depends on how fast the machine is. */
  async function until(cond: () => boolean, what: string): Promise<void> {
    const end = Date.now() + 20_000;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`never: ${what} (file holds ${bulkRuns()}, camera ${camRuns()})`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  /** Settles the camera's held runs (not the file's): the file's frames stay in the stage. */
  const finishCamera = () => {
    for (let i = session.held.length - 1; i >= 0; i--) if (session.held[i].req.data[0] >= 100) session.finishAt(i);
  };
  const finishFile = () => {
    for (let i = session.held.length - 1; i >= 0; i--) if (session.held[i].req.data[0] < 100) session.finishAt(i);
  };

  it('when the camera beside it ends, the file gets a fast file’s capacity (one per session and one more): it kept one frame until its own end', async () => {
    session.hold = true;
    const stop = new Subject<void>();
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], id: 'bulk', uri: dark, rate: 'fast' }, { ...config().sources[0], id: 'cam', uri: light, rate: 'native' }] }, { detector, stop });
    const done = lastValueFrom(p.results$.pipe(toArray()));
    try {
      await until(() => bulkRuns() === 1 && camRuns() === 1, 'both sources in the stage');
      // The camera plays its 4 frames and ends; the file's frame is never settled meanwhile.
      // (Counted from now, the camera in the stage: on a busy machine it could end before the
      // first poll below, which then saw nothing, and `most` stayed 0.)
      let most = bulkRuns();
      await until(() => {
        if (p.stats[1].state !== 'ended') most = Math.max(most, bulkRuns());
        finishCamera();
        return p.stats[1].state === 'ended' && camRuns() === 0;
      }, 'the camera ended');
      expect(most).toBe(1); // one frame while the camera ran
      // A last camera frame may still come into the stage after the camera's end (it waited for
      // a slot while the state said ended: CI under load): it is settled too, as it comes.
      await until(() => {
        finishCamera();
        return bulkRuns() === 2;
      }, 'the file holds two frames');
      expect(p.stats[0]).toMatchObject({ dropped: 0 });
    } finally {
      session.hold = false;
      stop.next();
      while (session.held.length > 0) session.finish();
      await done;
    }
    expect(p.stats[0].framesIn).toBe(p.stats[0].framesOut + p.stats[0].dropped);
  }, 60_000);

  it('a camera attached beside a file that runs alone takes the file back to one frame; detached, the file gets two again', async () => {
    session.hold = true;
    const stop = new Subject<void>();
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], id: 'bulk', uri: dark, rate: 'fast' }] }, { detector, stop });
    const done = lastValueFrom(p.results$.pipe(toArray()));
    const detach = new Subject<void>();
    let camDone: Promise<unknown> | undefined;
    try {
      await until(() => bulkRuns() === 2, 'the file alone holds two frames');
      camDone = lastValueFrom(p.attach({ ...config().sources[0], id: 'cam', uri: light, rate: 'native', loop: true }, detach).pipe(toArray()));
      await until(() => camRuns() === 1, 'the camera in the stage');
      // The file's two frames finish (none is lost); from then on it holds one.
      finishFile();
      await until(() => bulkRuns() === 1, 'the file’s next frame in the stage');
      for (let n = 0; n < 3; n++) {
        const out = p.stats[1].framesOut;
        await until(() => {
          finishCamera();
          return p.stats[1].framesOut > out;
        }, 'a camera frame out');
        expect(bulkRuns()).toBe(1);
      }
      detach.next();
      await until(() => {
        finishCamera();
        return p.stats.length === 1;
      }, 'the camera detached');
      await until(() => bulkRuns() === 2, 'the file holds two frames again');
      expect(p.stats[0]).toMatchObject({ dropped: 0 });
    } finally {
      session.hold = false;
      detach.next();
      stop.next();
      while (session.held.length > 0) session.finish();
      await done;
      await camDone;
    }
    expect(p.stats[0].framesIn).toBe(p.stats[0].framesOut + p.stats[0].dropped);
  }, 60_000);
});

describe('a source failed by its inference (real ffmpeg, fake session)', () => {
  it("ends 'failed' with the inference error as its reason, not 'stopped' (the state, /metrics, the dashboard and the status topic said stopped)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-failed-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '60', '-pix_fmt', 'yuv420p', clip]);
    session.hold = false;
    session.failNext(1000);
    const transitions: string[] = [];
    try {
      const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], uri: clip, rate: 'fast' }] }, { detector, onTransition: (t) => transitions.push(`${t.state}: ${t.reason}`) });
      await lastValueFrom(p.results$.pipe(toArray()));
      expect(transitions.at(-1)).toBe('failed: fake inference failure');
      expect(p.stats[0].state).toBe('failed');
      expect(p.stats[0].error?.message).toBe('fake inference failure');
    } finally {
      session.failNext(0);
    }
  });
});

describe('a source attached again under the same id (real ffmpeg, fake session)', () => {
  it('its seq and pts go on from the last attachment (they started at 0 again), and what each attachment counted stays in `detached`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-attach-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '12', '-pix_fmt', 'yuv420p', clip]);
    session.hold = false;
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector });
    const src = { ...config().sources[0], id: 'late', uri: clip, rate: 'fast' as const };
    const never = new Subject<void>();
    const first = await lastValueFrom(p.attach(src, never).pipe(toArray()));
    expect(p.stats).toEqual([]); // detached when its file ended
    const second = await lastValueFrom(p.attach(src, never).pipe(toArray()));
    expect(first.map((r) => r.frame.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(second.map((r) => r.frame.seq)).toEqual(Array.from({ length: 12 }, (_, i) => 12 + i));
    // pts go on too (the annotated video skipped every frame of a camera whose pts went back).
    expect(first.at(-1)!.frame.pts).toBeCloseTo(1.1, 6);
    expect(second.map((r) => r.frame.pts)[0]).toBeCloseTo(1.2, 6);
    expect(p.detached.get('late')).toMatchObject({ attachments: 2, framesIn: 24, framesOut: 24, dropped: 0, inferenceErrors: 0, reconnects: 0, nextSeq: 24 });
  });

  it("attached again while its last chain, stopped, still has a frame in inference (an argus worker's camera claimed again after stopBudget): its seq starts past that chain's, and the next attachment past both", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-attach-overlap-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '12', '-pix_fmt', 'yuv420p', clip]);
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector });
    const src = { ...config().sources[0], id: 'again', uri: clip, rate: 'fast' as const };
    session.hold = true;
    try {
      const stopOld = new Subject<void>();
      const old = lastValueFrom(p.attach(src, stopOld).pipe(toArray()));
      // Its first frames in inference, held there (a stalled model); the file read on meanwhile.
      // (ffmpeg's start within waitFor's default 1 s failed a run at load 20: 20 s.)
      await vi.waitFor(() => expect(session.held.length).toBeGreaterThan(0), { timeout: 20_000 });
      await vi.waitFor(() => expect(p.stats.find((s) => s.id === 'again')!.framesIn).toBeGreaterThan(1), { timeout: 20_000 });
      stopOld.next();
      const readByOld = p.stats.find((s) => s.id === 'again')!.framesIn;
      // Claimed again: attached while the stopped chain still runs (its frame in inference).
      const fresh = lastValueFrom(p.attach(src, new Subject<void>()).pipe(toArray()));
      session.hold = false;
      while (session.held.length > 0) session.finish();
      const [a, b] = await Promise.all([old, fresh]);
      const seqA = a.map((r) => r.frame.seq);
      const seqB = b.map((r) => r.frame.seq);
      expect(seqA.length).toBeGreaterThan(0);
      expect(seqB).toHaveLength(12);
      // Before, both started at 0: (run, seq) repeated, and alert ids with them.
      expect(Math.min(...seqB)).toBeGreaterThanOrEqual(readByOld);
      expect(Math.min(...seqB)).toBeGreaterThan(Math.max(...seqA));
      // The next attachment starts past both, whichever chain ended last.
      const third = await lastValueFrom(p.attach(src, new Subject<void>()).pipe(toArray()));
      expect(third[0].frame.seq).toBe(Math.max(...seqB) + 1);
    } finally {
      session.hold = false;
      while (session.held.length > 0) session.finish();
    }
  });

  it("what its zones and rules counted is in `detached` too, over every attachment (each attachment's analyzer starts from nothing)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-attach-counts-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '12', '-pix_fmt', 'yuv420p', clip]);
    session.hold = false;
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector });
    // The whole picture: the fake model's one box (the same object on every frame) enters once per attachment.
    const zone = ZoneSchema.parse({ id: 'z', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]], minHoldFrames: 1 });
    const src = { ...config().sources[0], id: 'late', uri: clip, rate: 'fast' as const, zones: [zone], rules: [{ id: 'in', type: 'zone-enter' as const, zone: 'z', severity: 'warning' as const, cooldownSec: 0 }] };
    const never = new Subject<void>();
    const first = await lastValueFrom(p.attach(src, never).pipe(toArray()));
    expect(first.flatMap((r) => r.alerts).map((a) => a.event)).toEqual(['zone.enter']);
    await lastValueFrom(p.attach(src, never).pipe(toArray()));
    // Before, nothing: what each attachment counted went with its analyzer (the summary's `analytics` holds attached sources only).
    expect(p.detached.get('late')?.analytics).toEqual({
      zones: { z: { entered: 2, exited: 0, occupancy: 0, reidentified: 0, alerts: { in: 2 } } },
      lines: {},
      alerts: { in: 2 },
      notes: [],
    });
    expect(p.analyzers.has('late')).toBe(false);
  });

  it('the totals of at most maxDetached ids are kept (a worker’s cameras come and go for months); an id forgotten and attached again still never repeats a seq', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-attach-many-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '3', '-pix_fmt', 'yuv420p', clip]);
    session.hold = false;
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector, maxDetached: 2 });
    const never = new Subject<void>();
    const run = async (id: string) => (await lastValueFrom(p.attach({ ...config().sources[0], id, uri: clip, rate: 'fast' as const }, never).pipe(toArray()))).map((r) => r.frame.seq);
    expect(await run('a')).toEqual([0, 1, 2]);
    expect(await run('a')).toEqual([3, 4, 5]);
    expect(await run('b')).toEqual([0, 1, 2]);
    expect(await run('c')).toEqual([0, 1, 2]);
    expect([...p.detached.keys()]).toEqual(['b', 'c']); // a's forgotten
    expect(await run('a')).toEqual([6, 7, 8]); // past what a was given before
    expect([...p.detached.keys()]).toEqual(['c', 'a']);
  });

  it("an attached camera (an argus worker's) gets the warnings a pipeline's own sources get: file settings on a live stream, a zone's frameSize of another shape", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-attach-warn-'));
    const clip = join(dir, 'clip.mp4');
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '3', '-pix_fmt', 'yuv420p', clip]);
    session.hold = false;
    const warned: string[] = [];
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector, log: (m, _f, level) => level === 'warn' && warned.push(m) });
    const zone = ZoneSchema.parse({ id: 'z', units: 'pixel', frameSize: [100, 1000], polygon: [[0, 0], [50, 0], [50, 500]] });
    await lastValueFrom(p.attach({ ...config().sources[0], id: 'file', uri: clip, rate: 'fast', zones: [zone] }, new Subject<void>()).pipe(toArray()));
    expect(warned.filter((m) => /frameSize/.test(m))).toEqual([expect.stringContaining(`camera file.zones[0].frameSize: 100x1000 is not the shape of the source's ${S}x${S} picture`)]);
    const live = p.attach({ ...config().sources[0], id: 'cam', uri: 'rtsp://127.0.0.1:9/x', rate: 'fast', loop: true }, timer(300).pipe(map(() => undefined))).subscribe({ error: () => {} });
    await new Promise((r) => setTimeout(r, 500));
    live.unsubscribe();
    expect(warned).toContain('camera cam: rate: fast and loop: true are for files; source "cam" is a live stream (rtsp), read as it comes');
  });
});

/** Waits (polling; the bound only ends a hang) until `cond` holds. */
async function untilHolds(cond: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 20_000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('a camera attached again under the same id (a worker camera edited, or stopped and started: fake ffmpeg)', () => {
  it("its new chain starts its ffmpeg once the last chain's has exited, as a restart does (it started beside the killed one: a one-session camera, a V4L2 device refused it)", async () => {
    const children: SlowToDie[] = [];
    const spawn: SpawnFn = (_cmd, args) => {
      const c = new SlowToDie(args, S * S * 3);
      children.push(c);
      return c.asChild();
    };
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector, spawn });
    const cam = { ...config().sources[0], id: 'cam', uri: 'udp://127.0.0.1:21000', rate: 'native' as const };
    const stopFirst = new Subject<void>();
    const first = lastValueFrom(p.attach(cam, stopFirst).pipe(toArray()));
    await untilHolds(() => children.length === 1, 'the first chain’s ffmpeg');
    stopFirst.next();
    await first;
    expect(children[0].signals).toEqual(['SIGKILL']);
    // The camera edited: a new chain under the same id, while the first ffmpeg has not exited yet.
    const stopSecond = new Subject<void>();
    const second = lastValueFrom(p.attach({ ...cam, fps: 5 }, stopSecond).pipe(toArray()));
    await new Promise((r) => setTimeout(r, 300));
    expect(children).toHaveLength(1);
    children[0].exitLater();
    await untilHolds(() => children.length === 2, 'the second chain’s ffmpeg, after the first one’s exit');
    // Another id does not wait for it.
    const stopOther = new Subject<void>();
    const other = lastValueFrom(p.attach({ ...cam, id: 'other' }, stopOther).pipe(toArray()));
    await untilHolds(() => children.length === 3, 'another camera’s ffmpeg');
    stopSecond.next();
    stopOther.next();
    children[1].exitLater();
    children[2].exitLater();
    await Promise.all([second, other]);
  });

  it("a network camera's stuck ffmpeg left behind is kept past the 2 s wait across edits: the chain after the next waits for one of the two stuck ones, no third beside them", async () => {
    const children: SlowToDie[] = [];
    const spawn: SpawnFn = (_cmd, args) => {
      const c = new SlowToDie(args, S * S * 3);
      children.push(c);
      return c.asChild();
    };
    const p = await createPipeline({ ...config(), sources: [{ ...config().sources[0], enabled: false }] }, { detector, spawn });
    const cam = { ...config().sources[0], id: 'cam', uri: 'udp://127.0.0.1:21001', rate: 'native' as const };
    const stopFirst = new Subject<void>();
    const first = lastValueFrom(p.attach(cam, stopFirst).pipe(toArray()));
    await untilHolds(() => children.length === 1, 'the first chain’s ffmpeg');
    stopFirst.next();
    await first;
    // Its ffmpeg never exits (stuck in the kernel). Past the wait for it (FFMPEG_EXIT_WAIT_MS) it
    // is left behind, and the pipeline forgot it: the camera's next chain knew nothing of it.
    await new Promise((r) => setTimeout(r, FFMPEG_EXIT_WAIT_MS + 500));
    const stopSecond = new Subject<void>();
    const second = lastValueFrom(p.attach({ ...cam, fps: 5 }, stopSecond).pipe(toArray()));
    await untilHolds(() => children.length === 2, 'the second chain’s ffmpeg, beside the one left behind (safe for a network camera)');
    stopSecond.next();
    await second;
    // The second is stuck too: the third chain waits until one of them has gone.
    const stopThird = new Subject<void>();
    const third = lastValueFrom(p.attach({ ...cam, fps: 4 }, stopThird).pipe(toArray()));
    await new Promise((r) => setTimeout(r, FFMPEG_EXIT_WAIT_MS + 1000));
    expect(children).toHaveLength(2);
    children[0].exitLater();
    await untilHolds(() => children.length === 3, 'the third chain’s ffmpeg, once the first stuck one has gone');
    stopThird.next();
    children[1].exitLater();
    children[2].exitLater();
    await third;
  });
});
