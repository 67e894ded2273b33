import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Frame } from '../../src/core/frame.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import type { Transition } from '../../src/sources/health.js';
import { sourceKind } from '../../src/sources/ffmpeg-args.js';
import { supervisedSource } from '../../src/sources/supervised-source.js';
import { PERSON_VIDEO } from '../helpers/assets.js';

const ffmpeg = resolveFfmpegSync().path;
const senders: ChildProcess[] = [];
afterEach(() => {
  for (const s of senders.splice(0)) s.kill('SIGKILL');
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(f: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await sleep(50);
  return f();
}

/** A free UDP port on loopback (bound and released). */
async function freeUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A free TCP port on loopback (bound and released). */
async function freeTcpPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** An encoder sending the person clip as MPEG-TS over UDP, at its own rate, looped, with B-frames (as a broadcast encoder would). */
function sendUdp(port: number): ChildProcess {
  const c = spawn(ffmpeg, ['-v', 'error', '-re', '-stream_loop', '-1', '-i', PERSON_VIDEO, '-an', '-c:v', 'libx264', '-preset', 'ultrafast', '-bf', '2', '-g', '10', '-f', 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`], { stdio: 'ignore' });
  senders.push(c);
  return c;
}

/** A live source on `url`, watched as the tests' cameras are (stall after 10 periods, at least 1.5 s). */
function watch(id: string, url: string) {
  const frames: Frame[] = [];
  const transitions: Transition[] = [];
  const rates: (number | undefined)[] = [];
  const sub = supervisedSource({
    id,
    input: { url, kind: sourceKind(url), rate: 'native', loop: false },
    output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'top-left', padValue: 114 },
    ffmpegPath: ffmpeg,
    reconnect: { initialDelayMs: 100, maxDelayMs: 500, jitter: 0, maxAttempts: 0, healthyResetMs: 30_000 },
    watchdog: { startTimeoutMs: 20_000, stallFactor: 10, stallMinMs: 1500, stallMaxMs: 60_000 },
    onStreamInfo: (info) => rates.push(info.fps),
    onTransition: (t) => transitions.push(t),
  }).subscribe((f) => {
    frames.push(f);
    f.release();
  });
  return { frames, transitions, rates, sub };
}

describe('a network stream other than RTSP and HTTP (an encoder sending MPEG-TS over UDP)', () => {
  it('is a live source, joined mid-stream: frames stamped with their arrival; the encoder stops, the source stalls and reconnects, and frames go on counting', async () => {
    const port = await freeUdpPort();
    const url = `udp://127.0.0.1:${port}`;
    const first = sendUdp(port); // already sending when the source starts: it joins between key frames
    await sleep(1000);
    expect(sourceKind(url)).toBe('stream');
    const { frames, transitions, sub } = watch('enc', url);
    try {
      expect(await until(() => frames.length >= 5, 60_000)).toBe(true);
      expect(frames.every((f) => f.producedBy === 'arrival')).toBe(true);
      first.kill('SIGKILL');
      expect(await until(() => transitions.some((t) => t.state === 'stalled'), 30_000)).toBe(true);
      const before = frames.length;
      sendUdp(port);
      expect(await until(() => frames.length >= before + 5, 60_000)).toBe(true);
      const seqs = frames.map((f) => f.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i)); // one count across the restart
      for (let i = 1; i < frames.length; i++) expect(frames[i].pts).toBeGreaterThan(frames[i - 1].pts);
      expect(transitions.filter((t) => t.state === 'streaming').length).toBeGreaterThanOrEqual(2);
    } finally {
      sub.unsubscribe();
    }
  }, 180_000);
});

describe('a stream whose metadata forges ffmpeg\'s report (an FLV over TCP, as an RTMP camera sends its onMetaData)', () => {
  it('a metadata key that prints a stream line declaring 0.001 fps is not taken: the rate is the stream\'s own, and a sender that stops is a stall after 10 of its periods', async () => {
    const port = await freeTcpPort();
    const url = `tcp://127.0.0.1:${port}`;
    // ffmpeg prints a metadata key's line breaks as they are: this key puts a stream line of its
    // own before the real one in the input's report.
    const forged = 'x\n  Stream #0:0: Video: h264 (High), yuv420p(progressive), 640x360, 0.001 fps, 0.001 tbr, 1k tbn\ny';
    const sender = spawn(ffmpeg, ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=10', '-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '10', '-metadata', `${forged}=1`, '-f', 'flv', `${url}?listen=1`], { stdio: 'ignore' });
    senders.push(sender);
    const { frames, transitions, rates, sub } = watch('flv', url);
    try {
      expect(await until(() => frames.length >= 5, 60_000)).toBe(true);
      // ffmpeg's guess from the arrival times of the first frames: 10, or near it on a busy machine.
      expect(rates[0]).toBeGreaterThan(5);
      expect(rates[0]).toBeLessThan(30);
      sender.kill('SIGSTOP'); // the connection stays open; nothing more comes
      expect(await until(() => transitions.some((t) => t.state === 'stalled'), 30_000)).toBe(true);
      // 10 periods, at least stallMinMs: 1.5 s at 10 fps, 2 s at 5.
      expect(Number(/^no frame for (\d+\.\d) s$/.exec(transitions.find((t) => t.state === 'stalled')!.reason)?.[1])).toBeLessThanOrEqual(2);
    } finally {
      sub.unsubscribe();
    }
  }, 120_000);
});
