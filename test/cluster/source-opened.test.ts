/**
 * What tells an argus worker that a camera answered (worker.ts sourceOpened, through the pipeline's
 * onSourceOpened): ffmpeg's report of the opened input (`Input #0`), which comes before the first
 * frame, however late that is (a 10 s GOP). Before, nothing did: a camera whose first frame came
 * later than cluster.unreachableAfterMs was reported unreachable. A fake ffmpeg on virtual time.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { FakeFfmpeg } from '../sources/fake-ffmpeg.js';

const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const FRAME = 32 * 32 * 3;

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('ffmpegSource onInputOpened', () => {
  it('is told once a run reports its opened input, before any frame; not while ffmpeg has reported nothing', () => {
    let c: FakeFfmpeg | undefined;
    const events: string[] = [];
    const sub = ffmpegSource({
      id: 'cam',
      input: { url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
      output,
      ffmpegPath: 'ffmpeg',
      clock: () => performance.now(),
      onInputOpened: () => events.push('opened'),
      spawn: (_cmd, args) => {
        c = new FakeFfmpeg(args, FRAME);
        return c.asChild();
      },
    }).subscribe((f) => (events.push('frame'), f.release()));
    vi.advanceTimersByTime(1);
    expect(c).toBeDefined();
    c!.stderr.write("[tcp @ 0x1] Connection to tcp://cam:554 failed: Connection timed out\n");
    vi.advanceTimersByTime(5000);
    expect(events).toEqual([]);
    c!.stderr.write("Input #0, rtsp, from 'rtsp://cam/stream':\n  Duration: N/A\n    Stream #0:0: Video: h264 (High), yuv420p(progressive), 64x48, 10 fps, 10 tbr\n");
    expect(events).toEqual(['opened']);
    // Its first frame 10 s on (the key frame): the input was opened long before.
    vi.advanceTimersByTime(10_000);
    c!.info();
    c!.frame();
    expect(events).toEqual(['opened', 'frame']);
    sub.unsubscribe();
  });
});

describe('createPipeline onSourceOpened (what runWorker passes to Worker.sourceOpened)', () => {
  it('is told with the source id when its ffmpeg opens the input; not for a camera that refuses the connection', async () => {
    vi.useRealTimers();
    const { createPipeline } = await import('../../src/pipeline/pipeline.js');
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { fakeDetector } = await import('../helpers/fake-session.js');
    const { closedPort } = await import('../helpers/net.js');
    const { PERSON_VIDEO } = await import('../helpers/assets.js');
    const { lastValueFrom, tap, toArray, take } = await import('rxjs');
    const port = await closedPort();
    const config = PipelineSchema.parse({
      sources: [
        { id: 'file', uri: PERSON_VIDEO, rate: 'fast' },
        { id: 'dark', uri: `rtsp://127.0.0.1:${port}/cam`, reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 2 } },
      ],
      model: { warmupRuns: 1 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const { detector } = await fakeDetector();
    const opened: string[] = [];
    let framesWhenOpened = -1;
    let frames = 0;
    const p = await createPipeline(config, { detector, onSourceOpened: (id) => (opened.push(id), id === 'file' && framesWhenOpened < 0 && (framesWhenOpened = frames)) });
    await lastValueFrom(p.results$.pipe(tap(() => frames++), take(5), toArray()));
    await p.close?.();
    expect(opened).toContain('file');
    expect(framesWhenOpened).toBe(0); // before its first frame
    expect(opened).not.toContain('dark');
  }, 60_000);
});
