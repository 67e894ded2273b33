// A camera's contact (ffmpegSource onInputOpened) for VP9 and AV1 streams whose size ffmpeg's
// report does not give: a VP9 camera over RTSP (an SDP has no size) and a raw AV1 (OBU)
// stream, joined between key frames. ffmpeg's probe ends on the frames between (the size comes
// only with the key frame's header), its report names the stream without a size, and the first
// frame comes with the next key frame, seconds on. Before, contact was told only then (H.264,
// H.265, MPEG-1/2, MPEG-4 Part 2 counted; these did not): a worker whose unreachableAfterMs is
// under that wait reported a camera about to stream as unreachable. Real ffmpeg throughout: the
// streams encoded by ffmpeg (libvpx-vp9, libaom), sent by a tiny RTSP camera and a TCP server.
// (Not VP8: ffmpeg 5.1's RTP reader drops every packet until a key frame, and reports the stream,
// sized, with it; measured 7.1 and 8.0 s after the join, 10 s GOP.)
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Subscription } from 'rxjs';
import { afterAll, describe, expect, it } from 'vitest';
import { ffmpegSource, type FfmpegSourceOptions } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';

const ffmpeg = resolveFfmpegSync().path;
const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const dir = mkdtempSync(join(tmpdir(), 'argus-contact-vp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * ffmpegSource (real ffmpeg) on `input`: resolves with what came first, `opened` (onInputOpened)
 * or `frame`, and when (ms after the start), or `none` after `waitMs`.
 */
function firstEvent(input: FfmpegSourceOptions['input'], waitMs: number): Promise<{ first: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    let sub: Subscription | undefined;
    const done = (first: string): void => {
      clearTimeout(timer);
      resolve({ first, ms: performance.now() - t0 });
      setImmediate(() => sub?.unsubscribe());
    };
    const timer = setTimeout(() => done('none'), waitMs);
    sub = ffmpegSource({ id: 'cam', input, output, ffmpegPath: ffmpeg, onInputOpened: () => done('opened'), memo: { readsOnce: false } }).subscribe({
      next: (f) => (f.release(), done('frame')),
      error: (e: Error) => done(`error: ${e.message}`),
    });
  });
}

/**
 * A tiny RTSP camera (RTP over TCP, interleaved) whose SDP names `codec` (VP9: no size)
 * and which, from each PLAY, forwards the RTP packets ffmpeg's own packetizer sends to its UDP
 * port (`feed`): a reader joins the stream wherever its sender is.
 */
async function rtspCamera(codec: string): Promise<{ server: Server; feed: number; port: number; close: () => void; firstPacketAt: () => number | undefined }> {
  const players = new Set<Socket>();
  const udp = createSocket('udp4');
  let firstAt: number | undefined;
  udp.on('message', (p) => {
    firstAt ??= performance.now();
    const head = Buffer.alloc(4);
    head[0] = 0x24;
    head.writeUInt16BE(p.length, 2);
    for (const s of players) if (!s.destroyed) s.write(Buffer.concat([head, p]));
  });
  // (Ports the system picks: two runs of the suite at once, or another program, never share one.)
  await new Promise<void>((ok) => udp.bind(0, '127.0.0.1', ok));
  const server = createServer((sock) => {
    let buf = '';
    sock.on('error', () => undefined);
    sock.on('close', () => players.delete(sock));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      for (let i = buf.indexOf('\r\n\r\n'); i >= 0; i = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, i).split('\r\n');
        buf = buf.slice(i + 4);
        const method = head[0].split(' ')[0];
        const cseq = head.find((l) => /^cseq:/i.test(l))?.split(':')[1].trim() ?? '0';
        let extra = '';
        let body = '';
        if (method === 'DESCRIBE') {
          body = `v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=cam\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 ${codec}/90000\r\na=control:track1\r\n`;
          extra = `Content-Type: application/sdp\r\nContent-Base: rtsp://127.0.0.1:${(server.address() as { port: number }).port}/cam/\r\nContent-Length: ${body.length}\r\n`;
        } else if (method === 'SETUP') extra = 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 1234;timeout=60\r\n';
        else if (method === 'PLAY') {
          extra = 'Session: 1234\r\nRange: npt=0.000-\r\n';
          setImmediate(() => players.add(sock));
        } else if (method === 'OPTIONS') extra = 'Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n';
        sock.write(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\n${extra}\r\n${body}`);
      }
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    server,
    feed: udp.address().port,
    port: (server.address() as { port: number }).port,
    firstPacketAt: () => firstAt,
    close: () => {
      udp.close();
      for (const s of players) s.destroy();
      server.close();
    },
  };
}

describe('contact of a stream whose size comes with its key frame (real ffmpeg)', () => {
  for (const [codec, encoder] of [['VP9', 'libvpx-vp9']] as const) {
    it(`an RTSP camera sending ${codec} (no size in its SDP), joined 1 s after a key frame, one every 10 s: contact told seconds before the first frame`, async () => {
      const cam = await rtspCamera(codec);
      const feed = cam.feed;
      // About 1 Mbit/s at its own rate (-re), a key frame at 0 s and 10 s only.
      const sender: ChildProcess = spawn(ffmpeg, ['-v', 'error', '-re', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '25', '-c:v', encoder, '-deadline', 'realtime', '-b:v', '1M', '-g', '250', '-keyint_min', '250', '-strict', 'experimental', '-f', 'rtp', `rtp://127.0.0.1:${feed}`], { stdio: 'ignore' });
      try {
        // Joined 1 s after the sender's first packet (its key frame): a join before it would see the
        // key frame, and a report with the size.
        for (let i = 0; i < 200 && (cam.firstPacketAt() === undefined || performance.now() - cam.firstPacketAt()! < 1000); i++) await new Promise((r) => setTimeout(r, 50));
        expect(cam.firstPacketAt()).toBeDefined();
        const { first, ms } = await firstEvent({ url: `rtsp://127.0.0.1:${cam.port}/cam`, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false }, 7000);
        // The key frame is 9 s after the join: contact came well before it (measured: 0.3–2 s).
        expect(first).toBe('opened');
        expect(ms).toBeLessThan(7000);
      } finally {
        sender.kill('SIGKILL');
        cam.close();
      }
    }, 30_000);
  }

  it('a raw AV1 (OBU) stream read with -f obu over TCP, joined after its key frame: contact told, though no frame comes', async () => {
    const file = join(dir, 'cam.obu');
    execFileSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '4', '-c:v', 'libaom-av1', '-cpu-used', '8', '-usage', 'realtime', '-g', '250', '-keyint_min', '250', '-b:v', '500k', '-f', 'obu', file]);
    const obu = readFileSync(file);
    // Its temporal units (each opens with a temporal delimiter OBU, type 2); sent from the 11th on, 25 a second.
    const units: number[] = [];
    for (let i = 0; i < obu.length; ) {
      const h = obu[i];
      let j = i + 1 + ((h >> 2) & 1);
      let size = 0;
      for (let n = 0; ; n++, j++) {
        size |= (obu[j] & 0x7f) << (7 * n);
        if (!(obu[j] & 0x80)) break;
      }
      if (((h >> 3) & 15) === 2) units.push(i);
      i = j + 1 + size;
    }
    units.push(obu.length);
    expect(units.length).toBeGreaterThan(50);
    const timers = new Set<NodeJS.Timeout>();
    const server = createServer((sock) => {
      sock.on('error', () => undefined);
      let k = 10;
      const t = setInterval(() => {
        if (k + 1 >= units.length || sock.destroyed) return void (clearInterval(t), timers.delete(t));
        sock.write(obu.subarray(units[k], units[k + 1]));
        k++;
      }, 40);
      timers.add(t);
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const port = (server.address() as { port: number }).port;
    try {
      const { first } = await firstEvent({ url: `tcp://127.0.0.1:${port}`, kind: 'stream', rate: 'native', loop: false, cameraClock: false, inputArgs: ['-f', 'obu'] }, 8000);
      expect(first).toBe('opened');
    } finally {
      for (const t of timers) clearInterval(t);
      server.close();
    }
  }, 30_000);
});

describe('contact through a forced raw demuxer (real ffmpeg)', () => {
  // An HTTP camera's URL that answers its HTML login page (200), read through a user-forced raw
  // elementary-stream demuxer: ffmpeg 5.1 reports a stream of that codec with no size for any bytes
  // (`Video: h264, 1 reference frame, none`), which was counted as the camera's contact (a stream
  // whose size comes with its key frame) and a worker took the camera for reachable. ffmpeg's own
  // words for the bytes (no start code, no OBU) say it read no unit of the codec: no contact.
  for (const format of ['h264', 'hevc', 'obu', 'mpegvideo', 'm4v']) {
    it(`an HTML login page read with -f ${format}: no contact; the run fails saying its bytes are no ${format} stream (it said \`ffmpeg exited with code 1\`)`, async () => {
      const page = '<!DOCTYPE html><html><head><title>Login</title></head><body><form method="post" action="/login">user <input name="u"> password <input name="p" type="password"><button>Sign in</button></form></body></html>\n'.repeat(20);
      const server = createHttpServer((_q, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end(page));
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      try {
        const { first } = await firstEvent({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/video.cgi`, kind: 'http', rate: 'native', loop: false, cameraClock: false, inputArgs: ['-f', format] }, 15_000);
        expect(first).toMatch(new RegExp(`^error: source "cam": ffmpeg's ${format} demuxer \\(the source's -f ${format}\\) found no ${format} stream in http://127\\.0\\.0\\.1:\\d+/video\\.cgi: what it answers is something else \\(an HTML page: a camera's login or error page\\?\\)`));
      } finally {
        server.close();
      }
    });
  }
});
