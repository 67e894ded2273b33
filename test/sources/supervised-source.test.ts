import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, take, tap, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { sourceKind } from '../../src/sources/ffmpeg-args.js';
import { backoffDelay, type ReconnectPolicy, type Transition } from '../../src/sources/health.js';
import { supervisedSource, type SupervisedSourceOptions } from '../../src/sources/supervised-source.js';
import { PERSON_VIDEO } from '../helpers/assets.js';

const FF = defaultFfmpegPath();
const dir = mkdtempSync(join(tmpdir(), 'argus-sup-'));
const policy: ReconnectPolicy = { initialDelayMs: 100, maxDelayMs: 400, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 };

describe('backoffDelay', () => {
  const p: ReconnectPolicy = { initialDelayMs: 500, maxDelayMs: 10_000, jitter: 0.2, maxAttempts: 0, healthyResetMs: 30_000 };
  it.each([
    [1, 0.5, 500],
    [2, 0.5, 1000],
    [3, 0.5, 2000],
    [5, 0.5, 8000],
    [6, 0.5, 10_000], // capped
    [20, 0.5, 10_000],
    [1, 0, 400], // −20 % jitter
    [1, 0.999999, 600], // +20 % jitter
  ])('attempt %i, rand %f → %i ms', (attempt, r, want) => expect(backoffDelay(attempt, p, () => r)).toBe(want));
});

// Fixtures made with ffmpeg: a TS stream whose resolution changes half-way, a short TS clip,
// a truncated MP4 (index at the end, cut off), a TS with garbage in the middle.
let changing: string, changingFile: string, shortTs: string, truncatedMp4: string, corruptTs: string;
let server: Server;
let base: string;
let mode: Record<string, (res: ServerResponse) => void>;

beforeAll(async () => {
  const ts = (size: string, secs: number, out: string) =>
    execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `testsrc=size=${size}:rate=10`, '-t', String(secs), '-c:v', 'libx264', '-g', '10', '-pix_fmt', 'yuv420p', '-f', 'mpegts', out]);
  ts('320x240', 2, join(dir, 'a.ts'));
  ts('640x360', 2, join(dir, 'b.ts'));
  changing = join(dir, 'ab.ts');
  writeFileSync(changing, Buffer.concat([readFileSync(join(dir, 'a.ts')), readFileSync(join(dir, 'b.ts'))]));
  // The same change in a file whose timestamps run on (the second half starts 2 s later), so a
  // restarted ffmpeg can seek into it.
  execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=10', '-t', '2', '-c:v', 'libx264', '-g', '10', '-pix_fmt', 'yuv420p', '-output_ts_offset', '2', '-f', 'mpegts', join(dir, 'b2.ts')]);
  changingFile = join(dir, 'ab2.ts');
  writeFileSync(changingFile, Buffer.concat([readFileSync(join(dir, 'a.ts')), readFileSync(join(dir, 'b2.ts'))]));
  shortTs = join(dir, 'a.ts');
  const mp4 = join(dir, 'full.mp4');
  execFileSync(FF, ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=10', '-t', '3', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', mp4]);
  truncatedMp4 = join(dir, 'truncated.mp4');
  const bytes = readFileSync(mp4);
  writeFileSync(truncatedMp4, bytes.subarray(0, Math.floor(bytes.length / 2)));
  ts('320x240', 4, join(dir, 'long.ts'));
  ts('320x240', 10, join(dir, 'ten.ts'));
  const long = readFileSync(join(dir, 'long.ts'));
  corruptTs = join(dir, 'corrupt.ts');
  const garbage = Buffer.alloc(4000);
  for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 7919) & 255;
  writeFileSync(corruptTs, Buffer.concat([long.subarray(0, 20 * 188), garbage, long.subarray(40 * 188)]));

  mode = {
    '/html': (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><h1>Camera login</h1></body></html>\n'),
    '/silent': () => {}, // accepts, never answers
    '/changing.ts': (res) => res.writeHead(200, { 'content-type': 'video/mp2t' }).end(readFileSync(changing)),
    '/short.ts': (res) => res.writeHead(200, { 'content-type': 'video/mp2t' }).end(readFileSync(shortTs)),
    // Sends 10 s of video at once (ffmpeg's probing wants ~5 s), then keeps the connection
    // open without sending anything.
    '/stalls.ts': (res) => {
      res.writeHead(200, { 'content-type': 'video/mp2t' });
      res.write(readFileSync(join(dir, 'ten.ts')));
    },
  };
  server = createServer((req, res) => {
    const handler = mode[req.url ?? ''];
    if (handler) handler(res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);
afterAll(() => {
  server.closeAllConnections();
  return new Promise((r) => server.close(r));
});

function source(url: string, over: Partial<SupervisedSourceOptions> = {}) {
  const transitions: Transition[] = [];
  let spawned = 0;
  let exited = 0;
  const kind = sourceKind(url);
  const src = supervisedSource({
    id: 'cam',
    input: { url, kind, rate: 'native', loop: false },
    output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
    ffmpegPath: FF,
    reconnect: policy,
    // Generous for healthy streams (a loaded machine must not trip them); the watchdog tests set their own.
    watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 },
    onTransition: (t) => transitions.push(t),
    onSpawn: () => spawned++,
    onExit: () => exited++,
    ...over,
  });
  return { src, transitions, counts: () => ({ spawned, exited }) };
}

const states = (ts: Transition[]) => ts.map((t) => t.state);
const release = tap<Frame>((f) => f.release());

describe('supervisedSource (real ffmpeg, real sockets)', () => {
  it('a camera that refuses the connection: each transition says why (the relay\'s `camera: … ECONNREFUSED`), not only that ffmpeg exited', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    await new Promise((r) => server.close(r)); // nothing listens there now
    const s = source(`rtsp://admin:pw@127.0.0.1:${port}/live`, { reconnect: { ...policy, maxAttempts: 1 } });
    await lastValueFrom(s.src).catch(() => undefined);
    expect(states(s.transitions)).toEqual(['starting', 'reconnecting', 'failed']);
    for (const t of s.transitions.slice(1)) expect(t.reason).toContain(`ffmpeg exited with code 1 for rtsp://***@127.0.0.1:${port}/live: camera: 127.0.0.1:${port}: ECONNREFUSED`);
  });

  it('a source that never sends a frame: restarted on the start timeout, then failed after maxAttempts, ffmpeg killed each time', async () => {
    const s = source(`${base}/silent`, { reconnect: { ...policy, maxAttempts: 2 }, watchdog: { startTimeoutMs: 1500, stallFactor: 10, stallMinMs: 15_000, stallMaxMs: 60_000 } });
    const err = (await lastValueFrom(s.src).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('VAP_ERR_SOURCE_TIMEOUT');
    expect(states(s.transitions)).toEqual(['starting', 'reconnecting', 'reconnecting', 'failed']);
    expect(s.transitions[1].reason).toMatch(/^source "cam": no frame within 1\.5 s of starting; retry 1 in 0\.1 s$/);
    expect(s.transitions[3].reason).toMatch(/gave up after 2 attempts/);
    // Every ffmpeg it started has exited (waited for: exit events come after the error).
    for (let i = 0; i < 600 && s.counts().exited < 3; i++) await new Promise((r) => setTimeout(r, 100));
    expect(s.counts()).toEqual({ spawned: 3, exited: 3 });
  }, 120_000);

  it('a URL that answers with HTML: ffmpeg’s reason in the transition, retried, then failed', async () => {
    const s = source(`${base}/html`, { reconnect: { ...policy, maxAttempts: 1 } });
    const err = (await lastValueFrom(s.src).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('VAP_ERR_SOURCE_EXIT');
    expect(states(s.transitions)).toEqual(['starting', 'reconnecting', 'failed']);
    expect(s.transitions[1].code).toBe('VAP_ERR_SOURCE_EXIT');
    expect(s.transitions[1].detail).toMatch(/Invalid data found when processing input/);
  }, 30_000);

  it('a live stream that ends is reconnected and frames resume', async () => {
    const s = source(`${base}/short.ts`);
    // 20 frames per connection: 45 frames need three connections.
    const frames = await lastValueFrom(s.src.pipe(release, take(45), toArray()));
    expect(frames).toHaveLength(45);
    expect(states(s.transitions)).toEqual(['starting', 'streaming', 'reconnecting', 'streaming', 'reconnecting', 'streaming', 'stopped']);
    expect(s.transitions[2]).toMatchObject({ code: 'VAP_ERR_SOURCE_EOF', attempt: 1 });
    expect(s.transitions[3].reason).toBe('frames again after 1 attempt');
  }, 30_000);

  it('a stalled stream (socket open, no data) is caught by the watchdog and restarted', async () => {
    const s = source(`${base}/stalls.ts`, { watchdog: { startTimeoutMs: 30_000, stallFactor: 10, stallMinMs: 1000, stallMaxMs: 60_000 } });
    const frames = await lastValueFrom(s.src.pipe(release, take(120), toArray()));
    expect(frames).toHaveLength(120); // 100 per connection
    expect(states(s.transitions).slice(0, 5)).toEqual(['starting', 'streaming', 'stalled', 'reconnecting', 'streaming']);
    expect(s.transitions[2]).toMatchObject({ reason: 'no frame for 1.0 s' });
    expect(s.transitions[3].code).toBe('VAP_ERR_SOURCE_STALLED');
    for (let i = 0; i < 600 && s.counts().spawned !== s.counts().exited; i++) await new Promise((r) => setTimeout(r, 100));
    expect(s.counts().spawned).toBe(s.counts().exited); // the stalled ffmpeg was killed
  }, 120_000);

  it('a resolution change mid-stream: later frames carry the new letterbox, and a status says so', async () => {
    const s = source(`${base}/changing.ts`);
    const frames = await lastValueFrom(s.src.pipe(take(40), toArray()));
    const sizes = frames.map((f) => `${f.letterbox.srcWidth}x${f.letterbox.srcHeight}`);
    expect(sizes.slice(0, 18).every((x) => x === '320x240')).toBe(true);
    expect(sizes.slice(22).every((x) => x === '640x360')).toBe(true);
    expect(frames[39].letterbox.scaledHeight).toBe(234);
    const resized = s.transitions.find((t) => t.code === 'VAP_ERR_SOURCE_RESIZED');
    expect(resized?.reason).toBe('resolution changed from 320x240 to 640x360');
  }, 30_000);

  it('frames at the source size: after a resolution change the source restarts at the new picture\'s first frame, at its size (never stretched to the first), so every frame is cut whole', async () => {
    const s = source(changingFile, { output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114, rounding: 'floor', frame: 'source' } });
    const frames = await lastValueFrom(s.src.pipe(toArray()));
    expect(frames).toHaveLength(40);
    // Every frame has its letterbox's own size: none cut at the wrong size.
    const first = frames.slice(0, 20);
    const second = frames.slice(20);
    expect(first.every((f) => f.layout === 'source' && f.letterbox.srcWidth === 320 && f.letterbox.srcHeight === 240 && f.data.length === 320 * 240 * 3)).toBe(true);
    expect(second.every((f) => f.layout === 'source' && f.letterbox.srcWidth === 640 && f.letterbox.srcHeight === 360 && f.data.length === 640 * 360 * 3)).toBe(true);
    expect(first.at(-1)!.letterbox.scaledHeight).toBe(312);
    expect(second.at(-1)!.letterbox.scaledHeight).toBe(234);
    expect(frames.map((f) => f.seq)).toEqual([...Array(40).keys()]);
    expect(s.counts().spawned).toBe(2);
    expect(s.transitions.find((t) => t.code === 'VAP_ERR_SOURCE_RESIZED')?.reason).toBe('source "cam": resolution changed from 320x240 to 640x360; restarted at once at the new size');
  }, 60_000);

  it('a truncated file plays what it has and ends; a truncated MP4 without its index fails at once with ffmpeg’s reason', async () => {
    const cut = join(dir, 'cut.ts');
    const full = readFileSync(join(dir, 'long.ts'));
    writeFileSync(cut, full.subarray(0, Math.floor(full.length / 2) - 77)); // mid-packet
    const ok = source(cut, {});
    const frames = await lastValueFrom(ok.src.pipe(release, toArray()));
    expect(frames.length).toBeGreaterThan(10);
    expect(frames.length).toBeLessThan(40);
    expect(states(ok.transitions).at(-1)).toBe('ended');

    expect(statSync(truncatedMp4).size).toBeGreaterThan(0);
    const bad = source(truncatedMp4, {});
    const err = (await lastValueFrom(bad.src).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('VAP_ERR_SOURCE_EXIT');
    expect(states(bad.transitions)).toEqual(['starting', 'failed']); // a file will not fix itself
    expect(bad.transitions[1].detail).toMatch(/moov atom not found/);
  }, 30_000);

  it('corrupt bytes in the middle of a stream: ffmpeg skips them, frames keep coming, no crash', async () => {
    const s = source(corruptTs, {});
    const frames = await lastValueFrom(s.src.pipe(release, toArray()));
    expect(frames.length).toBeGreaterThan(20);
    expect(states(s.transitions).at(-1)).toBe('ended');
  }, 30_000);

  it('a real video file at native rate streams and ends', async () => {
    const s = source(PERSON_VIDEO, {});
    const frames = await lastValueFrom(s.src.pipe(release, take(5), toArray()));
    expect(frames).toHaveLength(5);
    expect(states(s.transitions)).toEqual(['starting', 'streaming', 'stopped']);
  }, 30_000);
});
