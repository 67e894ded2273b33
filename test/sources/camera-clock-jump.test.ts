// A camera whose RTP timestamps jump by an hour mid-stream (a clock set by hand, NTP stepping
// after boot, a firmware that restarts its RTP counter), through argus's relay with real ffmpeg:
// latency stamps stay honest (never hours off, never after the frame was read), frames keep
// coming, and the change is told once.
import { lastValueFrom, take, tap, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';
import { MIRROR } from '../helpers/assets.js';
import { RtspCamera } from '../helpers/rtsp-camera.js';

const PERSON = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
const HOUR = 3600 * 90_000; // RTP ticks
let camera: RtspCamera | undefined;

/** The camera's frames through argus's relay and real ffmpeg, its clock notices into `notices`. */
async function cameraFrames(url: string, notices: string[]) {
  return ffmpegSource({
    id: 'cam',
    input: { url, kind: 'rtsp', rate: 'native', loop: false },
    output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114, frame: 'source-yuv' },
    ffmpegPath: (await resolveFfmpeg()).path,
    onClockNotice: (t) => notices.push(t),
  });
}
afterEach(async () => {
  await camera?.close();
  camera = undefined;
});

describe("a camera's RTP timestamps jumping by an hour from its 25th frame", () => {
  it.each([
    ['forward', HOUR, false],
    ['back', -HOUR, false],
    ['back, its sender reports stepped with them', -HOUR, true],
  ] as const)('%s: the frames after it are stamped with their arrival, within a second of being read (back: its units ended for ffmpeg again, not a frame period late); 60 frames, no error; one notice', async (_name, by, reports) => {
    const started = await RtspCamera.start(PERSON, '640x360', { jump: { at: (_c, k) => (k >= 25 ? by : 0), reports } });
    camera = started.camera;
    const notices: string[] = [];
    const seen: Frame[] = [];
    const frames = await lastValueFrom(
      (await cameraFrames(started.url, notices)).pipe(
        tap((f) => seen.push(f)),
        take(60),
        toArray(),
      ),
    );
    expect(frames).toHaveLength(60);
    expect(frames.slice(0, 20).filter((f) => f.producedBy === 'camera').length).toBeGreaterThan(10);
    // (Frames still in ffmpeg when the first jumped one is read may be stamped either way.)
    expect(frames.slice(35).every((f) => f.producedBy === 'arrival')).toBe(true);
    for (const f of frames) {
      const age = f.stamps.captured - f.stamps.produced;
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThan(1000);
    }
    // Back: the relay ends the camera's access units for ffmpeg again on its new timeline (it
    // had stopped for good, as for B-frames: each frame after the jump waited a frame period,
    // 100 ms at 10 fps, in ffmpeg, until the camera reconnected).
    const after = frames.slice(35).map((f) => f.stamps.captured - f.stamps.produced).sort((a, b) => a - b);
    expect(after[after.length >> 1]).toBeLessThan(50);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^source "cam": frames whose camera time is not believable are stamped with their arrival \(producedBy: arrival\): the first was 3\d{6} ms (after|before) its arrival/);
  }, 120_000);
});

describe("a camera whose RTP timestamps step back by a second from its 25th frame (within what B-frames could be)", () => {
  it("the relay stops ending its access units for ffmpeg on this connection, and says so once: each frame is then a frame period later, which nothing said", async () => {
    const started = await RtspCamera.start(PERSON, '640x360', { jump: { at: (_c, k) => (k >= 25 ? -90_000 : 0) } });
    camera = started.camera;
    const notices: string[] = [];
    const frames = await lastValueFrom((await cameraFrames(started.url, notices)).pipe(take(40), toArray()));
    expect(frames).toHaveLength(40);
    const units = notices.filter((n) => /no longer ends them/.test(n));
    expect(units).toEqual([
      `source "cam": the camera sends access units out of timestamp order (B-frames, or its clock stepped back by less than 10 s): argus's relay no longer ends them for ffmpeg on this connection, and each frame waits a frame period in ffmpeg before it is decoded (its latency shows it) until the camera reconnects`,
    ]);
  }, 120_000);
});

describe('a flapping camera whose timestamps step back on every connection (stalled at its 40th frame, reconnected)', () => {
  it('the relay’s notice is told once for the source, not at each reconnect', async () => {
    const started = await RtspCamera.start(PERSON, '640x360', { jump: { at: (_c, k) => (k >= 25 ? -90_000 : 0) }, stallAt: (_c, k) => k === 40 });
    camera = started.camera;
    const notices: string[] = [];
    let streaming = 0;
    const sub = supervisedSource({
      id: 'cam',
      input: { url: started.url, kind: 'rtsp', rate: 'native', loop: false },
      output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114, frame: 'source-yuv' },
      ffmpegPath: (await resolveFfmpeg()).path,
      onClockNotice: (t) => notices.push(t),
      reconnect: { initialDelayMs: 0, maxDelayMs: 0, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
      // The stall (no frame for a second) ends each connection; starting is generous for a loaded machine.
      watchdog: { startTimeoutMs: 30_000, stallFactor: 1, stallMinMs: 1000, stallMaxMs: 1000 },
      onTransition: (t) => {
        if (t.state === 'streaming') streaming++;
      },
    }).subscribe((f) => f.release());
    try {
      // Three connections, each past its step back (its notice, before the fix, came on each).
      const end = Date.now() + 100_000;
      while (!(camera.connections >= 4 || (streaming >= 3 && camera.connections >= 3 && notices.length >= 3)) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    } finally {
      sub.unsubscribe();
    }
    expect(camera.connections).toBeGreaterThanOrEqual(3);
    expect(notices.filter((n) => /no longer ends them/.test(n) && !/more like it/.test(n))).toHaveLength(1);
    // The reconnects' notices counted since are said when the source stops (within the 10
    // minutes: the count line was lost with the stop).
    const counted = notices.filter((n) => /no longer ends them.* \(and \d+ more like it in \d+ s\)$/.test(n));
    expect(counted, notices.join('\n')).toHaveLength(1);
    expect(Number(/and (\d+) more/.exec(counted[0])![1])).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
