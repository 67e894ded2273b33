// Overload, in virtual time: a 30 fps camera whose inference takes 100 ms (3× its frame period),
// then a burst of 2 s runs. Every latency figure a user reads must count from the frame's source
// stamp through its wait in argus's stage, stay bounded over a long run, and every drop must be
// counted, by reason, wherever drops are shown.
import { Subject } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { now } from '../../src/core/clock.js';
import { e2eMs, emptyStamps, stageMs, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { Detector } from '../../src/inference/detector.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import { sourceChain } from '../../src/pipeline/pipeline.js';
import { startHttpServer } from '../../src/server/http.js';
import { Metrics } from '../../src/server/metrics.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import { StatusReporter } from '../../src/sinks/status.js';
import { newSourceStats, sourceSummary, SupersededFrames } from '../../src/sources/stats.js';
import { FAKE_SIZE, fakeDetector, type FakeSession } from '../helpers/fake-session.js';

const S = FAKE_SIZE;
let detector: Detector;
let session: FakeSession;
beforeAll(async () => {
  ({ detector, session } = await fakeDetector());
});
afterAll(() => detector?.release());
afterEach(() => {
  vi.useRealTimers();
  session.hold = false;
});

const PERIOD_MS = 1000 / 30;
/** How long before ffmpeg delivered it each frame arrived at argus (its `arrival` stamp). */
const SOURCE_MS = 20;

const config = () => parseConfigText(`name: t\nmodel: { path: fake.onnx }\nsources:\n  - id: cam\n    uri: /nonexistent.mp4\n`, PipelineSchema, 'test.yaml', {});

function frame(seq: number): Frame {
  const captured = now();
  return {
    source: 'cam',
    seq,
    pts: seq / 30,
    data: Buffer.alloc(S * S * 3, seq % 200),
    letterbox: letterbox(S, S, S, S, 'top-left'),
    stamps: emptyStamps(captured, captured - SOURCE_MS),
    producedBy: 'arrival',
    release: () => {},
  };
}

/** Lets the chain's promises and rxjs's synchronous work settle (real setImmediate: only timers and performance are faked). */
const settle = async () => {
  for (let i = 0; i < 4; i++) await new Promise((r) => setImmediate(r));
};

/**
 * Runs the chain in virtual time: a frame every PERIOD_MS for `ms`, each inference run held for
 * `runMs(k)` (k: the run's index) from its start.
 */
async function overload(ms: number, runMs: (k: number) => number, onTick?: (t: number) => void) {
  vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout', 'Date'] });
  session.hold = true;
  const stats = newSourceStats('cam');
  const frames$ = new Subject<Frame>();
  const out: FrameResult[] = [];
  const cfg = config();
  sourceChain(frames$, { detector, config: cfg, source: cfg.sources[0], stats, log: () => {} }).subscribe({ next: (r) => out.push(r) });
  let seq = 0;
  let nextFrameAt = 0;
  let runs = 0;
  let runEndsAt = Infinity;
  for (let t = 0; t <= ms; t++) {
    onTick?.(t);
    if (t >= nextFrameAt) {
      frames$.next(frame(seq++));
      nextFrameAt += PERIOD_MS;
      await settle();
    }
    if (t >= runEndsAt) {
      session.finish();
      runEndsAt = Infinity;
      await settle();
    }
    if (runEndsAt === Infinity && session.held.length > 0) runEndsAt = t + runMs(runs++);
    vi.advanceTimersByTime(1);
  }
  // The run in flight finishes, and the frame waiting after it.
  while (session.held.length > 0) {
    vi.advanceTimersByTime(runMs(runs++));
    session.finish();
    await settle();
  }
  frames$.complete();
  await settle();
  return { stats, out };
}

describe('overload: a camera 3× faster than its inference, then a burst of slow runs (virtual time)', () => {
  it("every emitted frame's latency counts from its source stamp through its wait; it stays bounded over a minute; the figures agree; framesIn = framesOut + dropped", async () => {
    // 60 s: 100 ms runs, but runs 300–304 take 2 s each (a burst: the GPU throttled, a page-in).
    const { stats, out } = await overload(60_000, (k) => (k >= 300 && k < 305 ? 2000 : 100));
    const e2e = out.map((r) => e2eMs(r.frame.stamps));
    for (const r of out) {
      const s = r.frame.stamps;
      // From the source's stamp: the source stage, the wait for the frame ahead, and the run.
      expect(e2eMs(s)).toBeCloseTo(SOURCE_MS + stageMs(s, 'wait') + (s.emitted - s.staged), 6);
      expect(stageMs(s, 'source')).toBeCloseTo(SOURCE_MS, 6);
      expect(stageMs(s, 'wait')).toBeGreaterThanOrEqual(0);
    }
    // A frame waits at most for the run ahead of it (the newest replaces the one waiting), and
    // while a run is slow the waiting frame is replaced every period: a wait is at most a run.
    expect(Math.max(...out.map((r) => stageMs(r.frame.stamps, 'wait')))).toBeLessThanOrEqual(2000 + 1);
    const late = out.slice(-100).map((r) => e2eMs(r.frame.stamps));
    expect(Math.max(...late)).toBeLessThanOrEqual(SOURCE_MS + 100 + 100 + 2);
    // The burst's frames: their 2 s runs and their source stage are in their latency.
    const burst = out.filter((r) => r.frame.stamps.emitted - r.frame.stamps.staged >= 2000);
    expect(burst).toHaveLength(5);
    for (const r of burst) expect(e2eMs(r.frame.stamps)).toBeGreaterThanOrEqual(2000 + SOURCE_MS);
    // Accounting: every frame read was emitted or dropped (and counted stale).
    expect(stats.framesIn).toBeGreaterThanOrEqual(1800);
    expect(stats.framesIn).toBe(stats.framesOut + stats.dropped);
    expect(stats.inferenceErrors).toBe(0);
    expect(stats.framesOut).toBe(out.length);
    // The status line's and the summary's percentiles are those of the emitted frames' latencies.
    const sorted = [...e2e].sort((a, b) => a - b);
    const p99 = sorted[Math.ceil(0.99 * sorted.length) - 1];
    expect(stats.e2e.percentile(99)).toBeCloseTo(p99, 6);
    expect(Math.abs((sourceSummary(stats).e2eP99 as number) - p99) / p99).toBeLessThan(0.02);
    const line = new StatusReporter([stats]).lines()[0];
    expect(line).toContain(`drops ${stats.dropped}  `);
    expect(Number(/e2e p50 [\d.]+ ms {2}p99 ([\d.]+) ms/.exec(line)![1])).toBeCloseTo(p99, 0);
    // /metrics: the histogram holds every emitted frame, the burst's in its seconds' buckets.
    const metrics = new Metrics({ stats: () => [stats], provider: 'cpu' });
    for (const r of out) metrics.onFrame(r);
    const text = await metrics.scrape();
    expect(text).toContain(`argus_frame_latency_seconds_count{source="cam"} ${out.length}`);
    expect(text).toContain(`argus_frames_dropped_total{source="cam",reason="stale"} ${stats.dropped}`);
    const le1 = Number(/argus_frame_latency_seconds_bucket\{le="1",source="cam"\} (\d+)/.exec(text)![1]);
    expect(out.length - le1).toBe(e2e.filter((v) => v > 1000).length);
  });

  it("the latency over every frame read: a slow spell's dropped frames count until a result of a newer frame, where the emitted frames' percentiles weigh it as the few frames that came out of it", async () => {
    // 60 s of 100 ms runs, but runs 300–304 take 2 s each: 10 s of a minute with results 2 s old.
    const { stats, out } = await overload(60_000, (k) => (k >= 300 && k < 305 ? 2000 : 100));
    const summary = sourceSummary(stats) as Record<string, number>;
    // The emitted frames' p99 does not see the spell: 5 frames of about 500.
    expect(summary.e2eP99).toBeLessThan(300);
    // Over the frames read it does: about 300 of 1800 frames went unseen for up to 2 s.
    expect(summary.e2eReadP99).toBeGreaterThan(1500);
    expect(summary.e2eReadP50).toBeGreaterThanOrEqual(summary.e2eP50 * 0.98);
    const metrics = new Metrics({ stats: () => [stats], provider: 'cpu' });
    for (const r of out) metrics.onFrame(r);
    const text = await metrics.scrape();
    // Every frame read is in it once: those emitted, and those dropped (until the next result).
    expect(text).toContain(`argus_frame_read_latency_seconds_count{source="cam"} ${stats.framesOut + stats.dropped}`);
    // The status line says it beside the emitted frames' p99, where frames were dropped.
    const line = new StatusReporter([stats]).lines()[0];
    const readP99 = Number(/; frames read p99 ([\d.]+) ms\)/.exec(line)![1]);
    expect(readP99).toBeGreaterThan(1500);
    expect(Number(/e2e p50 [\d.]+ ms {2}p99 ([\d.]+) ms/.exec(line)![1])).toBeLessThan(300);
    const over1s = Number(/argus_frame_read_latency_seconds_bucket\{le="1",source="cam"\} (\d+)/.exec(text)![1]);
    expect(stats.framesOut + stats.dropped - over1s).toBeGreaterThan(0.05 * stats.framesIn);
    // A dropped frame's latency runs from its own source stamp to the emission of a newer frame's
    // result (the result of the frame in the stage when it was dropped, older, does not show it).
    for (const r of out.filter((x) => x.superseded !== undefined)) for (const ms of r.superseded!) expect(ms).toBeGreaterThan(e2eMs(r.frame.stamps));
  });

  it('the system clock stepped back 5 s and forward 30 s mid-run (NTP, a VM resumed): no latency figure goes negative or jumps, every stage stays in order', async () => {
    const { stats, out } = await overload(20_000, () => 100, (t) => {
      if (t === 5000) vi.setSystemTime(Date.now() - 5000);
      if (t === 12_000) vi.setSystemTime(Date.now() + 30_000);
    });
    for (const r of out) {
      const s = r.frame.stamps;
      expect(e2eMs(s)).toBeGreaterThanOrEqual(SOURCE_MS + 100);
      expect(e2eMs(s)).toBeLessThanOrEqual(SOURCE_MS + 100 + 100 + 2);
      for (const st of ['source', 'wait', 'preprocess', 'queue', 'infer', 'postprocess', 'emit'] as const) expect(stageMs(s, st)).toBeGreaterThanOrEqual(0);
    }
    for (const r of out) for (const ms of r.superseded ?? []) expect(ms).toBeLessThanOrEqual(SOURCE_MS + 100 + 100 + 2);
    const summary = sourceSummary(stats) as Record<string, number>;
    expect(summary.e2eP99).toBeLessThan(250);
    expect(summary.e2eReadP99).toBeLessThan(250);
  });

  it('drops by reason: failed inferences are said apart from stale frames on the status line, in the summary and on /api/sources (they were one sum there)', async () => {
    let k = 0;
    const fails = new Set([10, 11, 12]);
    const { stats } = await overload(3000, () => {
      // Runs 10–12 fail (a worker died, a transient provider error); the others take 100 ms.
      if (fails.has(k)) session.failNext(1);
      k++;
      return 100;
    });
    expect(stats.inferenceErrors).toBe(3);
    expect(stats.framesIn).toBe(stats.framesOut + stats.dropped);
    const stale = stats.dropped - 3;
    expect(stale).toBeGreaterThan(30);
    const line = new StatusReporter([stats]).lines()[0];
    expect(line).toContain(`drops ${stats.dropped} (3 inference failed)  `);
    expect(sourceSummary(stats)).toMatchObject({ dropped: stats.dropped, stale, inferenceErrors: 3 });
    vi.useRealTimers();
    const pipeline = { stats: [Object.assign(stats, { state: 'streaming' })], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
    const rates = new RateMeter(() => []);
    const s = await startHttpServer({ host: '127.0.0.1', port: 0 });
    try {
      registerRoutes(s, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }) });
      const body = (await (await fetch(`http://127.0.0.1:${s.port}/api/sources`)).json()) as { sources: { stats: Record<string, unknown> }[] };
      const api = body.sources[0].stats;
      expect(api).toMatchObject({ dropped: stats.dropped, stale, inferenceErrors: 3 });
      // And the latency over the frames read, beside the emitted frames' (dropped frames: until a newer one's result).
      expect(api.readP99).toBeCloseTo(Math.round(stats.e2eRead.percentile(99) * 10) / 10, 6);
      expect(api.readP99 as number).toBeGreaterThanOrEqual(api.p50 as number);
      // The dashboard's tile, from those figures (its own module, plain JS).
      const { updateStats } = (await import('../../src/server/dashboard/js/tile-stats.js' as string)) as { updateStats: (s: unknown) => void };
      const el = () => ({ textContent: '', title: '', hidden: false, dataset: {}, classList: { remove: () => {} }, removeAttribute(this: { title: string }) {
        this.title = '';
      } });
      const tile = { fpsIn: el(), fpsOut: el(), drops: el(), p50: el(), p99: el(), pipe: el(), p50Box: el(), analytics: el(), tile: el() };
      updateStats({ el: tile, rate: [], e2e: [], pipe: [], dropped: NaN, lastDetAt: 0, apiStats: api, apiStatsAt: performance.now() });
      expect(tile.drops.textContent).toBe(`${stats.dropped} (3 failed)`);
      expect(tile.drops.title).toBe(`${stale} stale (inference busy, a newer frame kept), 3 inference failed`);
      // Its p99 says the frames read p99 beside the emitted frames' where the source dropped frames (it hid a slow spell).
      const { fmtMs } = (await import('../../src/server/dashboard/js/format.js' as string)) as { fmtMs: (v: number) => string };
      expect(tile.p99.textContent).toBe(`${fmtMs(api.p99 as number)} (${fmtMs(api.readP99 as number)} read)`);
      expect(tile.p99.title).toMatch(/^over every frame read, dropped ones until a newer frame's result: p99 [\d.]+ m?s$/);
      // None dropped: the emitted frames' alone.
      updateStats({ el: tile, rate: [], e2e: [], pipe: [], dropped: NaN, lastDetAt: 0, apiStats: { ...api, dropped: 0, stale: 0, inferenceErrors: 0 }, apiStatsAt: performance.now() });
      expect(tile.p99.textContent).toBe(fmtMs(api.p99 as number));
      expect(tile.p99.title).toBe('');
    } finally {
      rates.close();
      await s.close();
    }
  });

  it('the dropped frames held for it are bounded: beyond the capacity neighbours are merged two by two and the next frames joined, each counted at its frames\' mean stamp; only frames older than the result are drained', () => {
    const held = new SupersededFrames(4);
    for (let seq = 1; seq <= 4; seq++) held.add(seq, 1000 + seq * 100);
    expect(held.count).toBe(4);
    // A fifth: the four held are merged two by two (1+2 at 1150, 3+4 at 1350), then 5 is held.
    held.add(5, 1500);
    expect(held.count).toBe(5);
    // 6 joins 5 (an entry now takes two frames, until a result comes): 5 and 6 at 1550.
    held.add(6, 1600);
    expect(held.count).toBe(6);
    // A result of frame 0 (the one in the stage when they were dropped, older): none of them is seen past.
    expect(held.drain(0, 1900)).toBeUndefined();
    expect(held.count).toBe(6);
    // A result came (frame 0's): 8 has an entry of its own again.
    held.add(8, 1800);
    // A result of 7: every frame older than it, each from its own (merged: its entry's mean) stamp; 8 stays.
    expect(held.drain(7, 2000)).toEqual([850, 850, 650, 650, 450, 450]);
    expect(held.count).toBe(1);
    expect(held.drain(7, 2100)).toBeUndefined();
    expect(held.drain(9, 2200)).toEqual([400]);
    expect(held.count).toBe(0);
  });

  it('after a stuck spell, the frames dropped once results come again are each drained at the first result of a newer frame, not tied to the stall\'s merged frames', () => {
    const held = new SupersededFrames(4);
    // Frame 0 stuck in the stage; 1–9 dropped as newer ones arrived (merged beyond 4 entries); 10 waits.
    for (let seq = 1; seq <= 9; seq++) held.add(seq, seq * 100);
    expect(held.drain(0, 1000)).toBeUndefined();
    // 10 runs; 11 is dropped for 12 meanwhile.
    held.add(11, 1100);
    // 10's result: the nine before it, not 11.
    expect(held.drain(10, 1250)).toHaveLength(9);
    expect(held.count).toBe(1);
    // 12 runs; 13 is dropped for 14: 12's result shows 11 (from its own stamp), and 13 waits for 14's.
    held.add(13, 1300);
    expect(held.drain(12, 1450)).toEqual([350]);
    expect(held.drain(14, 1600)).toEqual([300]);
    expect(held.count).toBe(0);
  });

  it.each([
    ['10 minutes', 18_000],
    ['an hour', 108_000],
  ])('a stage stuck for %s while a 30 fps camera goes on: its dropped frames are each counted near their own latency when a result of a newer frame comes (the oldest were counted from the newest let go: 2 min 16 s for frames 10 min unseen), and not at the stuck frame\'s result', (_, frames) => {
    const held = new SupersededFrames();
    // Frame 0 is stuck in the stage; frames 1… are dropped one by one as each newer one arrives.
    for (let seq = 1; seq <= frames; seq++) held.add(seq, seq * PERIOD_MS);
    expect(held.count).toBe(frames);
    const stuckEnds = frames * PERIOD_MS + 100;
    // The stuck frame's result shows none of them.
    expect(held.drain(0, stuckEnds)).toBeUndefined();
    const out = held.drain(frames + 1, stuckEnds + 100)!;
    expect(out).toHaveLength(frames);
    expect(held.count).toBe(0);
    const truth = Array.from({ length: frames }, (_, i) => stuckEnds + 100 - (i + 1) * PERIOD_MS).sort((a, b) => a - b);
    const got = [...out].sort((a, b) => a - b);
    for (const p of [50, 90, 99, 100]) {
      const at = Math.ceil((p / 100) * frames) - 1;
      expect(Math.abs(got[at] - truth[at]) / truth[at], `p${p}`).toBeLessThan(0.001);
    }
  });
});
