// A camera's reconnect (the supervisor's retry: fake ffmpeg, virtual time) and a source's lines:
// the chain's analyze operator sees one stream across ffmpeg's runs, so its lines settle
// (SourceAnalyzer.finish) at the chain's end only, not at every reconnect, where a person still
// walking would be counted by a hand-over that the frames after it would have undone.
import { Subject } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { ffmpegOutputFor } from '../../src/pipeline/detect.js';
import { sourceChain } from '../../src/pipeline/pipeline.js';
import type { SpawnFn } from '../../src/sources/ffmpeg-source.js';
import { newSourceStats } from '../../src/sources/stats.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { FakeFfmpeg } from '../sources/fake-ffmpeg.js';

let detector: Detector;
beforeAll(async () => {
  ({ detector } = await fakeDetector());
});
afterAll(() => detector?.release());

let mono = 0;
const advance = (ms: number) => {
  mono += ms;
  vi.advanceTimersByTime(ms);
};
beforeEach(() => {
  vi.useFakeTimers();
  mono = 1_000_000;
});
afterEach(() => vi.useRealTimers());

describe("a camera's reconnect and its lines", () => {
  it('settles them once, at the chain\'s end: not when ffmpeg exits and the supervisor starts it again', async () => {
    const config = parseConfigText(
      `name: t\nmodel: { path: fake.onnx }\nsources:\n  - id: cam\n    uri: rtsp://127.0.0.1:21800/x\n    lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }]\n    rules: [{ id: in, type: line-cross, line: door }]\n`,
      PipelineSchema,
      'test.yaml',
      {},
    );
    const source = config.sources[0];
    const analyzer = new SourceAnalyzer(source, detector.labels, 'sources[0]');
    let settled = 0;
    const finish = analyzer.finish.bind(analyzer);
    analyzer.finish = () => (settled++, finish());
    const states: string[] = [];
    const children: FakeFfmpeg[] = [];
    // BGR frames at the camera's size, whether or not the C kernel is built (it takes 4:2:0 frames then).
    const output = { ...ffmpegOutputFor(detector, config.model.resize), frame: 'source' as const };
    const spawn: SpawnFn = (_cmd, args) => {
      // The camera's own 64 × 48 picture (FakeFfmpeg.info).
      const c = new FakeFfmpeg(args, 64 * 48 * 3);
      children.push(c);
      return c.asChild();
    };
    const frames$ = supervisedSource({
      id: 'cam',
      input: { url: source.uri, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
      output,
      ffmpegPath: 'ffmpeg',
      reconnect: { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      watchdog: { startTimeoutMs: 15_000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 60_000 },
      onTransition: (t) => states.push(t.state),
      spawn,
      clock: () => mono,
    });
    const stop = new Subject<void>();
    let results = 0;
    let done = false;
    sourceChain(frames$, { detector, config, source, stats: newSourceStats('cam'), analyzer, log: () => {}, stop }).subscribe({ next: () => results++, complete: () => (done = true) });
    const stream = async (n: number) => {
      const c = children.at(-1)!;
      advance(50);
      c.info();
      for (let i = 0; i < n; i++) {
        advance(100);
        // (As ffmpeg does, each frame is reported on its log before it is written.)
        c.stderr.write(c.timeLine(i, Date.now()));
        c.frame(10 + i);
        await vi.advanceTimersByTimeAsync(0);
      }
    };
    await stream(5);
    expect(results).toBe(5);
    // The camera drops the connection (ffmpeg fails), then closes the stream (ffmpeg ends: a live
    // stream's end of stream); the supervisor starts ffmpeg again each time.
    for (let k = 1; k <= 2; k++) {
      children.at(-1)!.exit(k === 1 ? 1 : 0);
      advance(100 * k);
      await vi.advanceTimersByTimeAsync(0);
      expect(settled, `after ffmpeg's exit ${k}`).toBe(0);
      expect(children).toHaveLength(k + 1);
      await stream(5);
    }
    expect(results).toBe(15);
    expect(states.filter((x) => x === 'reconnecting')).toHaveLength(2);
    expect(settled).toBe(0);
    expect(done).toBe(false);
    stop.next();
    children.at(-1)!.exit(null, 'SIGTERM');
    await vi.advanceTimersByTimeAsync(5000);
    expect(done).toBe(true);
    expect(settled).toBe(1);
  });
});
