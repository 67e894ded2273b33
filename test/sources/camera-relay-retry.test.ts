import { firstValueFrom, lastValueFrom, take, takeWhile, tap, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { ffmpegSource, RELAY_RETRY_MAX_MS, RELAY_RETRY_MS, relayGivenUp, relayRetryWait, relayStart, type FfmpegSourceOptions, type SourceMemo } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';
import { MIRROR } from '../helpers/assets.js';
import { RtspCamera } from '../helpers/rtsp-camera.js';

const PERSON = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
let camera: RtspCamera | undefined;
afterEach(async () => {
  await camera?.close();
  camera = undefined;
});

async function options(url: string, memo: SourceMemo, notices: string[]): Promise<FfmpegSourceOptions> {
  return {
    id: 'cam',
    input: { url, kind: 'rtsp', rate: 'native', loop: false },
    output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114, frame: 'source-yuv' },
    ffmpegPath: (await resolveFfmpeg()).path,
    memo,
    onClockNotice: (t) => notices.push(t),
  };
}

describe("a camera's clock through argus's relay, after the relay was given up", () => {
  it('a glitch (timestamps that stop advancing) gives the relay up for the connection; a later start tries it again once its wait is over, and the camera\'s clock is back', async () => {
    // The first connection's frames 25–34 repeat the timestamp before them; later connections are clean.
    const started = await RtspCamera.start(PERSON, '640x360', { repeatTimestamp: (c, k) => c === 0 && k >= 25 && k < 35 });
    camera = started.camera;
    const memo: SourceMemo = {};
    const notices: string[] = [];
    const o = await options(started.url, memo, notices);
    // The first start: the camera's clock, until the glitch; then the source restarts without the relay.
    const first: Frame[] = [];
    const err = await lastValueFrom(ffmpegSource(o).pipe(tap((f) => first.push(f)))).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/restarted without argus's relay/);
    expect(first.some((f) => f.producedBy === 'camera')).toBe(true);
    expect(memo.unrelayed).toBeDefined();
    expect(notices.filter((n) => /not used: .*tried again at the source's first restart after 60 s/.test(n))).toHaveLength(1);
    // A start at once (the supervisor's restart): without the relay, stamped with the arrival at ffmpeg.
    const second = await firstValueFrom(ffmpegSource(o).pipe(take(30), toArray()));
    // (The first frame of an unrelayed connection: ffmpeg reports its arrival as 0, so it keeps `captured`.)
    expect(second.slice(1).every((f) => f.producedBy === 'arrival')).toBe(true);
    expect(camera.connections).toBe(2);
    // A start once the wait is over: through the relay again, with the camera's clock.
    memo.unrelayed!.until = 0;
    const third = await firstValueFrom(ffmpegSource(o).pipe(take(30), toArray()));
    expect(third.filter((f) => f.producedBy === 'camera').length).toBeGreaterThan(10);
    expect(memo.unrelayed).toBeUndefined();
    expect(memo.relayFailures).toBe(1);
  }, 120_000);

  it('the wait doubles with each give-up, from RELAY_RETRY_MS up to RELAY_RETRY_MAX_MS', () => {
    expect([1, 2, 3].map(relayRetryWait)).toEqual([RELAY_RETRY_MS, 2 * RELAY_RETRY_MS, 4 * RELAY_RETRY_MS]);
    expect(relayRetryWait(7)).toBe(RELAY_RETRY_MAX_MS);
    expect(relayRetryWait(1000)).toBe(RELAY_RETRY_MAX_MS);
  });

  it('starts go without the relay while the wait lasts, through it after; a relay that ran an hour before its next give-up waits a minute again, not twice the last wait', () => {
    const memo: SourceMemo = {};
    const hour = RELAY_RETRY_MAX_MS;
    expect(relayStart(memo, 0)).toBe(true);
    // Three give-ups in quick succession: 1, 2, 4 minutes.
    let t = 10_000;
    for (const want of [1, 2, 4]) {
      expect(relayGivenUp(memo, t)).toBe(want * RELAY_RETRY_MS);
      expect(relayStart(memo, t + want * RELAY_RETRY_MS - 1)).toBe(false);
      t += want * RELAY_RETRY_MS;
      expect(relayStart(memo, t)).toBe(true);
      t += 5_000;
    }
    // The fourth after a short run: 8 minutes.
    expect(relayGivenUp(memo, t)).toBe(8 * RELAY_RETRY_MS);
    t += 8 * RELAY_RETRY_MS;
    expect(relayStart(memo, t)).toBe(true);
    // Then the relay runs for an hour: its next give-up is a first one.
    expect(relayGivenUp(memo, t + hour)).toBe(RELAY_RETRY_MS);
    expect(memo.relayFailures).toBe(1);
  });

  it('a relay that ran an hour across reconnects of the camera (restarts through it) waits a minute at its next give-up, not twice the last wait', () => {
    const memo: SourceMemo = {};
    expect(relayStart(memo, 0)).toBe(true);
    expect(relayGivenUp(memo, 10_000)).toBe(RELAY_RETRY_MS);
    let t = 10_000 + RELAY_RETRY_MS;
    expect(relayStart(memo, t)).toBe(true);
    // The network drops the camera every 20 minutes: each reconnect is a start, through the relay.
    for (let k = 0; k < 4; k++) expect(relayStart(memo, (t += 20 * 60_000))).toBe(true);
    // 80 minutes of the relay since its retry, 5 since the latest reconnect: a first give-up again.
    expect(relayGivenUp(memo, t + 5 * 60_000)).toBe(RELAY_RETRY_MS);
  });

  it("a camera time not believed is told once per start, also when the start runs ffmpeg twice (a small picture: packed frames)", async () => {
    // The camera's clock 2 s ahead of its sending: not believed, frames stamped with their arrival.
    const started = await RtspCamera.start(PERSON, '320x180', { clockOffsetMs: 2000 });
    camera = started.camera;
    const memo: SourceMemo = {};
    const notices: string[] = [];
    const frames = await firstValueFrom(ffmpegSource(await options(started.url, memo, notices)).pipe(take(40), toArray()));
    expect(memo.packed).toBe(true);
    expect(camera.connections).toBe(2);
    expect(frames.slice(-20).every((f) => f.producedBy === 'arrival')).toBe(true);
    expect(notices.filter((n) => /not believable/.test(n))).toHaveLength(1);
  }, 120_000);

  it("a camera clock 3 s slow (believed: up to 10 s): its frames' latency counts the 3 s, and the log says so once per start", async () => {
    const started = await RtspCamera.start(PERSON, '640x360', { clockOffsetMs: -3000 });
    camera = started.camera;
    const notices: string[] = [];
    let n = 0;
    // Frames for over CAMERA_BEHIND_SUSTAINED_MS (5 s) after the camera's first sender report: the evidence the notice needs.
    const frames = await firstValueFrom(ffmpegSource(await options(started.url, {}, notices)).pipe(takeWhile(() => notices.length === 0 && n++ < 600, true), toArray()));
    const stamped = frames.filter((f) => f.producedBy === 'camera');
    expect(stamped.length).toBeGreaterThan(10);
    expect(stamped.every((f) => f.stamps.captured - f.stamps.produced > 2900)).toBe(true);
    // Before, nothing said why every frame of this camera was 3 s late.
    expect(notices.filter((n) => /the camera's clock put every frame that arrived for 5 s at least 3\d{3} ms before its arrival at argus/.test(n))).toHaveLength(1);
  }, 120_000);
});
