// A camera that stops mid-frame (the frame's first NAL units sent, its picture never; the TCP
// connection and its sender reports go on), through argus's relay with real ffmpeg: the stall
// watchdog restarts the source, which streams again from the camera's next connection.
import { lastValueFrom, takeWhile, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import type { Transition } from '../../src/sources/health.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';
import { MIRROR } from '../helpers/assets.js';
import { RtspCamera } from '../helpers/rtsp-camera.js';

const PERSON = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
let camera: RtspCamera | undefined;
afterEach(async () => {
  await camera?.close();
  camera = undefined;
});

describe('a camera that stalls mid-frame', () => {
  it('is restarted by the stall watchdog, and streams again on its next connection; stamps stay honest', async () => {
    const started = await RtspCamera.start(PERSON, '640x360', { stallAt: (c, k) => c === 0 && k === 20 });
    camera = started.camera;
    const transitions: Transition[] = [];
    let second = 0;
    const frames = await lastValueFrom(
      supervisedSource({
        id: 'cam',
        input: { url: started.url, kind: 'rtsp', rate: 'native', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114, frame: 'source-yuv' },
        ffmpegPath: (await resolveFfmpeg()).path,
        reconnect: { initialDelayMs: 100, maxDelayMs: 100, jitter: 0, maxAttempts: 3, healthyResetMs: 30_000 },
        watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 2000, stallMaxMs: 2000 },
        onTransition: (t) => transitions.push(t),
      }).pipe(
        takeWhile(() => !(transitions.some((t) => t.state === 'stalled') && ++second > 20)),
        toArray(),
      ),
    );
    const states = transitions.map((t) => t.state);
    expect(states.slice(0, 5)).toEqual(['starting', 'streaming', 'stalled', 'reconnecting', 'streaming']);
    expect(transitions[2].reason).toBe('no frame for 2.0 s');
    expect(camera.connections).toBe(2);
    // The frames before the stall (ffmpeg may hold the last one or two), then the next connection's.
    expect(frames.length).toBeGreaterThanOrEqual(17 + 20);
    expect(frames.map((f) => f.seq)).toEqual([...frames.keys()]);
    for (const f of frames) {
      const age = f.stamps.captured - f.stamps.produced;
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThan(1000);
    }
  }, 120_000);
});
