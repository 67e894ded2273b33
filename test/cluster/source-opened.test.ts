/**
 * What tells an argus worker that a camera answered (worker.ts sourceOpened, through the pipeline's
 * onSourceOpened): ffmpeg's report of the opened input (`Input #0`) naming a video stream with its
 * size, which comes before the first frame, however late that is (a 10 s GOP). Before, nothing did:
 * a camera whose first frame came later than cluster.unreachableAfterMs was reported unreachable.
 * Not an input opened with no such stream (a login page through a forced -f mjpeg; an RTSP camera
 * that sends no media), except a stream (H.264, H.265, MPEG-2, MPEG-4 Part 2) whose size comes with its key frame (a camera
 * with no parameter sets in its SDP: ffmpeg's probe ends on its P-frames, seconds before the first
 * frame). A fake ffmpeg on virtual time, and real ffmpeg runs.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Subscription } from 'rxjs';
import { ffmpegSource, type FfmpegSourceOptions } from '../../src/sources/ffmpeg-source.js';
import { FakeFfmpeg } from '../sources/fake-ffmpeg.js';

const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
const FRAME = 32 * 32 * 3;

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

describe('ffmpegSource onInputOpened', () => {
  it('is told once a run reports its opened input, before any frame; not while ffmpeg has reported nothing', () => {
    const { ffmpeg, events, sub } = watched({ url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false });
    vi.advanceTimersByTime(1);
    expect(ffmpeg()).toBeDefined();
    ffmpeg().stderr.write("[tcp @ 0x1] Connection to tcp://cam:554 failed: Connection timed out\n");
    vi.advanceTimersByTime(5000);
    expect(events).toEqual([]);
    ffmpeg().stderr.write("Input #0, rtsp, from 'rtsp://cam/stream':\n  Duration: N/A\n    Stream #0:0: Video: h264 (High), yuv420p(progressive), 64x48, 10 fps, 10 tbr\n");
    expect(events).toEqual(['opened']);
    // Its first frame 10 s on (the key frame): the input was opened long before.
    vi.advanceTimersByTime(10_000);
    ffmpeg().info();
    ffmpeg().frame();
    expect(events).toEqual(['opened', 'frame']);
    sub.unsubscribe();
  });
});

describe('ffmpegSource onInputOpened, a camera whose picture size comes only with its key frame', () => {
  // ffmpeg 5.1's own lines (at argus's -loglevel verbose) for an RTSP camera whose SDP has no sprop-parameter-sets, joined mid-GOP
  // (a 10 s GOP): argus's probe (-probesize 262144: RTP has no durations, so -analyzeduration never
  // ends it) ends on the P-frames read, the stream's size unknown. Measured on this machine with a
  // 150 kbit/s camera of that SDP and -probesize 32768 (256 KiB scaled to its rate): that report
  // 2.5 s after the connect, its first frame 11.1 s after it.
  const unsized =
    '[rtsp @ 0x1] Stream #0: not enough frames to estimate rate; consider increasing probesize\n' +
    '[rtsp @ 0x1] Could not find codec parameters for stream 0 (Video: h264, 1 reference frame, none): unspecified size\n' +
    "Consider increasing the value for the 'analyzeduration' (1000000) and 'probesize' (262144) options\n" +
    "Input #0, rtsp, from 'rtsp://cam/stream':\n  Metadata:\n    title           : cam\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: h264, 1 reference frame, none, 90k tbr, 90k tbn\n" +
    'Stream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n' +
    'Error while decoding stream #0:0: Invalid data found when processing input\n';

  it('is told when ffmpeg has read its video packets (an H.264 stream, its size to come with the key frame), seconds before that frame; it was not, and a worker with unreachableAfterMs under the wait reported a camera about to stream', () => {
    const { ffmpeg, events, sub } = watched({ url: 'rtsp://cam/stream', kind: 'rtsp', rate: 'native', loop: false, cameraClock: false });
    vi.advanceTimersByTime(2500);
    ffmpeg().stderr.write(unsized);
    expect(events).toEqual(['opened']);
    // Waiting for its key frame, 8.6 s on: told once, the run going on.
    vi.advanceTimersByTime(8600);
    ffmpeg().stderr.write('Error while decoding stream #0:0: Invalid data found when processing input\n');
    expect(events).toEqual(['opened']);
    sub.unsubscribe();
  });

  it('so for an MPEG-TS stream joined in a long GOP: MPEG-2 and MPEG-4 Part 2 video, whose sequence headers come with the key frame, as H.264 (ffmpeg 5.1\'s lines, measured: the report 1.4 s after the connect, the first frame 9.4..10.8 s)', () => {
    for (const stream of [
      'Video: mpeg2video, 1 reference frame ([2][0][0][0] / 0x0002), none(tv, progressive), 25 fps, 25 tbr, 90k tbn',
      'Video: mpeg4, 1 reference frame ([16][0][0][0] / 0x0010), yuv420p(left), 25 fps, 25 tbr, 90k tbn',
      'Video: h264, 1 reference frame ([27][0][0][0] / 0x001B), none, 25 fps, 25 tbr, 90k tbn',
    ]) {
      const { ffmpeg, events, sub } = watched({ url: 'tcp://cam:9000', kind: 'stream', rate: 'native', loop: false, cameraClock: false });
      vi.advanceTimersByTime(1400);
      ffmpeg().stderr.write(`[mpegts @ 0x1] Could not find codec parameters for stream 0 (${stream.replace(/, 25 fps.*/, '')}): unspecified size\nInput #0, mpegts, from 'tcp://cam:9000':\n  Duration: N/A, start: 1.400000, bitrate: N/A\n  Program 1\n  Stream #0:0[0x100]: ${stream}\nStream mapping:\n  Stream #0:0 -> #0:0\n`);
      expect([stream, events]).toEqual([stream, ['opened']]);
      sub.unsubscribe();
    }
  });
});

describe('ffmpegSource onInputOpened, an input opened with no video ffmpeg could describe', () => {
  it('is not told for an HTML login page read through a forced -f mjpeg (ffmpeg 5.1\'s own lines); it was, at its `Input #0`', () => {
    const { ffmpeg, events, sub } = watched({ url: 'http://cam/video.mjpg', kind: 'http', rate: 'native', loop: false, cameraClock: false, inputArgs: ['-f', 'mjpeg'] });
    vi.advanceTimersByTime(1);
    ffmpeg().stderr.write(
      '[mjpeg @ 0x2] No JPEG data found in image\n' +
        "[mjpeg @ 0x1] Could not find codec parameters for stream 0 (Video: mjpeg, 1 reference frame, none(bt470bg/unknown/unknown, center)): unspecified size\n" +
        "Input #0, mjpeg, from 'http://cam/video.mjpg':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: mjpeg, 1 reference frame, none(bt470bg/unknown/unknown, center), 25 tbr, 1200k tbn\n" +
        'Stream mapping:\n  Stream #0:0 -> #0:0 (mjpeg (native) -> rawvideo (native))\n' +
        '[mjpeg @ 0x3] No JPEG data found in image\nError while decoding stream #0:0: Invalid data found when processing input\n',
    );
    vi.advanceTimersByTime(1000);
    expect(events.filter((e) => e !== 'error')).toEqual([]);
    sub.unsubscribe();
  });
});

describe('ffmpegSource onInputOpened, a raw H.264 stream through a forced -f h264 (ffmpeg 5.1\'s own lines)', () => {
  // The demuxer reports `Video: h264, …, none` for any bytes; what the decoder said of them decides.
  const report = (url: string) => `Input #0, h264, from '${url}':\n  Duration: N/A, bitrate: N/A\n  Stream #0:0: Video: h264, 1 reference frame, none, 1200k tbn\nStream mapping:\n  Stream #0:0 -> #0:0 (h264 (native) -> rawvideo (native))\n`;
  it('joined between key frames (its slices name a parameter set not seen yet): told, before the first frame', () => {
    const { ffmpeg, events, sub } = watched({ url: 'tcp://cam:9000', kind: 'stream', rate: 'native', loop: false, cameraClock: false, inputArgs: ['-f', 'h264'] });
    vi.advanceTimersByTime(1);
    ffmpeg().stderr.write('[h264 @ 0x1] non-existing PPS 0 referenced\n    Last message repeated 6 times\n[h264 @ 0x1] decode_slice_header error\n[h264 @ 0x1] no frame!\n');
    expect(events).toEqual([]);
    ffmpeg().stderr.write(report('tcp://cam:9000'));
    expect(events).toEqual(['opened']);
    sub.unsubscribe();
  });
  it('an HTML page (no start code in it): not told; told once a frame is decoded (the output\'s line), whatever came before', () => {
    const { ffmpeg, events, sub } = watched({ url: 'http://cam/video.cgi', kind: 'http', rate: 'native', loop: false, cameraClock: false, inputArgs: ['-f', 'h264'] });
    vi.advanceTimersByTime(1);
    ffmpeg().stderr.write('[h264 @ 0x1] missing picture in access unit with size 196\n[extract_extradata @ 0x2] No start code is found.\nhttp://cam/video.cgi: could not find codec parameters\n' + report('http://cam/video.cgi') + '[h264 @ 0x3] No start code is found.\n[h264 @ 0x3] Error splitting the input into NAL units.\n');
    vi.advanceTimersByTime(1000);
    expect(events).toEqual([]);
    ffmpeg().stderr.write("Output #0, rawvideo, to 'pipe:1':\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, 10 fps, 10 tbn\n");
    expect(events).toEqual(['opened']);
    sub.unsubscribe();
  });
});

describe('createPipeline onSourceOpened (what runWorker passes to Worker.sourceOpened)', () => {
  it('is told with the source id when its ffmpeg opens the input; not for a camera that refuses the connection, nor for one that answers a login page', async () => {
    vi.useRealTimers();
    const { createPipeline } = await import('../../src/pipeline/pipeline.js');
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { fakeDetector } = await import('../helpers/fake-session.js');
    const { closedPort } = await import('../helpers/net.js');
    const { PERSON_VIDEO } = await import('../helpers/assets.js');
    const { lastValueFrom, tap, toArray, take } = await import('rxjs');
    const port = await closedPort();
    // A camera URL that answers a login page (200, HTML), read through a forced MJPEG demuxer.
    const { createServer } = await import('node:http');
    let pages = 0;
    const login = createServer((_q, res) => {
      pages++;
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><form>user <input name=u> password <input name=p type=password></form></body></html>\n'.repeat(20));
    });
    await new Promise<void>((ok) => login.listen(0, '127.0.0.1', ok));
    const loginPort = (login.address() as { port: number }).port;
    const config = PipelineSchema.parse({
      sources: [
        { id: 'file', uri: PERSON_VIDEO, rate: 'fast' },
        { id: 'dark', uri: `rtsp://127.0.0.1:${port}/cam`, reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 2 } },
        { id: 'login', uri: `http://127.0.0.1:${loginPort}/video.mjpg`, inputArgs: ['-f', 'mjpeg'], reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 2 } },
      ],
      model: { warmupRuns: 1 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const { detector } = await fakeDetector();
    const opened: string[] = [];
    let framesWhenOpened = -1;
    let frames = 0;
    let loginEnded = false;
    const p = await createPipeline(config, { detector, onTransition: (t) => void (t.source === 'login' && t.state !== 'starting' && t.state !== 'streaming' && (loginEnded = true)), onSourceOpened: (id) => (opened.push(id), id === 'file' && framesWhenOpened < 0 && (framesWhenOpened = frames)) });
    await lastValueFrom(p.results$.pipe(tap(() => frames++), take(5), toArray()));
    // The login page's attempt ended (an ffmpeg run that read the page).
    for (const t0 = Date.now(); !loginEnded && Date.now() - t0 < 30_000; ) await new Promise((r) => setTimeout(r, 50));
    await p.close?.();
    login.close();
    expect(pages).toBeGreaterThanOrEqual(1);
    expect(loginEnded).toBe(true);
    expect(opened).toContain('file');
    expect(framesWhenOpened).toBe(0); // before its first frame
    expect(opened).not.toContain('dark');
    expect(opened).not.toContain('login'); // an input opened, but no video in it
  }, 60_000);

  it('is not told for a camera behind an MTU black hole (RTSP set up, no media ever): its ffmpeg, stopped by the start timeout, prints `Input #0` with no size', async () => {
    vi.useRealTimers();
    const { createPipeline } = await import('../../src/pipeline/pipeline.js');
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { fakeDetector } = await import('../helpers/fake-session.js');
    // Answers OPTIONS, DESCRIBE (an H.264 stream, its parameter sets in the SDP), SETUP (TCP) and PLAY; sends no RTP.
    let plays = 0;
    const server = rtspCamera('; sprop-parameter-sets=Z/QACpGbKI9gIgAAAwACAAADACgeJEss,aOvjxEhE; profile-level-id=F4000A', () => void plays++);
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const config = PipelineSchema.parse({
      sources: [{ id: 'hole', uri: `rtsp://127.0.0.1:${(server.address() as { port: number }).port}/cam`, watchdog: { startTimeoutMs: 1500 }, reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 1 } }],
      model: { warmupRuns: 1 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const { detector } = await fakeDetector();
    const opened: string[] = [];
    let failed = false;
    const p = await createPipeline(config, { detector, onTransition: (t) => void (t.state === 'failed' && (failed = true)), onSourceOpened: (id) => opened.push(id) });
    const sub = p.results$.subscribe({ error: () => undefined });
    for (const t0 = Date.now(); !failed && Date.now() - t0 < 40_000; ) await new Promise((r) => setTimeout(r, 50));
    // The last run's ffmpeg has been stopped and its log read to the end.
    await new Promise((r) => setTimeout(r, 1000));
    sub.unsubscribe();
    await p.close?.();
    server.close();
    expect(failed).toBe(true);
    expect(plays).toBeGreaterThanOrEqual(1); // its RTSP setup succeeded
    expect(opened).toEqual([]);
  }, 60_000);

  it('is told seconds before the first frame for a real ffmpeg reading an RTSP camera with no parameter sets in its SDP, joined in a 10 s GOP (its stream\'s size unknown at the report)', async () => {
    vi.useRealTimers();
    const { createPipeline } = await import('../../src/pipeline/pipeline.js');
    const { PipelineSchema } = await import('../../src/config/schema.js');
    const { fakeDetector } = await import('../helpers/fake-session.js');
    const { resolveFfmpeg } = await import('../../src/sources/ffmpeg-path.js');
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { lastValueFrom, take } = await import('rxjs');
    // About 2 Mbit/s (argus's 256 KiB probe fills in about a second), a key frame every 10 s.
    const dir = mkdtempSync(join(tmpdir(), 'argus-nosps-'));
    let file: Buffer;
    try {
      await promisify(execFile)((await resolveFfmpeg()).path, ['-v', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=25', '-t', '13', '-vf', 'noise=alls=10:allf=t', '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '26', '-g', '250', '-keyint_min', '250', '-sc_threshold', '0', '-bf', '0', '-f', 'h264', join(dir, 'cam.h264')]);
      file = readFileSync(join(dir, 'cam.h264'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Its access units (NAL units up to each picture's slice); the camera sends from the 6th on (after the key frame), 25 a second.
    const nals: Buffer[] = [];
    for (let i = 0, start = -1; i <= file.length; i++) {
      const at = i + 2 < file.length && file[i] === 0 && file[i + 1] === 0 && file[i + 2] === 1;
      if (at || i === file.length) {
        if (start >= 0) nals.push(file.subarray(start, at && i > 0 && file[i - 1] === 0 ? i - 1 : i));
        if (at) (start = i + 3), (i += 2);
      }
    }
    const units: Buffer[][] = [];
    for (let cur: Buffer[] = [], k = 0; k < nals.length; k++) {
      cur.push(nals[k]);
      if ((nals[k][0] & 0x1f) === 1 || (nals[k][0] & 0x1f) === 5) (units.push(cur), (cur = []));
    }
    const timers = new Set<NodeJS.Timeout>();
    // No sprop-parameter-sets: the size comes only with the key frame's SPS.
    const server = rtspCamera('', (sock) => {
      let k = 5;
      let seq = 1;
      let ts = 1000;
      const t = setInterval(() => {
        if (k >= units.length || sock.destroyed) return void (clearInterval(t), timers.delete(t));
        const unit = units[k++];
        ts += 3600;
        unit.forEach((n, j) => {
          const packets: Buffer[] = [];
          if (n.length <= 1400) packets.push(n);
          else for (let o = 1; o < n.length; o += 1400) packets.push(Buffer.concat([Buffer.from([(n[0] & 0xe0) | 28, (o === 1 ? 0x80 : 0) | (o + 1400 >= n.length ? 0x40 : 0) | (n[0] & 0x1f)]), n.subarray(o, o + 1400)]));
          packets.forEach((p, q) => {
            const rtp = Buffer.alloc(16);
            rtp.writeUInt8(0x24, 0);
            rtp.writeUInt16BE(12 + p.length, 2);
            rtp[4] = 0x80;
            rtp[5] = 96 | (j === unit.length - 1 && q === packets.length - 1 ? 0x80 : 0);
            rtp.writeUInt16BE(seq++ & 0xffff, 6);
            rtp.writeUInt32BE(ts >>> 0, 8);
            rtp.writeUInt32BE(0x1234, 12);
            sock.write(Buffer.concat([rtp, p]));
          });
        });
      }, 40);
      timers.add(t);
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const config = PipelineSchema.parse({
      sources: [{ id: 'nosps', uri: `rtsp://127.0.0.1:${(server.address() as { port: number }).port}/cam`, watchdog: { startTimeoutMs: 30_000 }, reconnect: { initialDelayMs: 50, maxDelayMs: 100, maxAttempts: 1 } }],
      model: { warmupRuns: 1 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const { detector } = await fakeDetector();
    let openedAt = -1;
    const p = await createPipeline(config, { detector, onSourceOpened: () => void (openedAt < 0 && (openedAt = performance.now())) });
    const t0 = performance.now();
    try {
      await lastValueFrom(p.results$.pipe(take(1)));
    } finally {
      const frameAt = performance.now();
      await p.close?.();
      for (const t of timers) clearInterval(t);
      server.close();
      // The key frame is 9.8 s into the sending: contact came well before it (measured: 2.5 s, the frame at 11.1 s).
      expect(openedAt).toBeGreaterThan(0);
      expect(frameAt - t0).toBeGreaterThan(8000);
      expect(frameAt - openedAt).toBeGreaterThan(4000);
    }
  }, 60_000);
});

/**
 * A tiny RTSP camera (H.264, TCP interleaved): answers OPTIONS, DESCRIBE (its SDP's fmtp line
 * `packetization-mode=1` then `fmtp`), SETUP and PLAY, calling `onPlay` with the socket at each
 * PLAY (what it sends then is onPlay's). Not listening yet.
 */
function rtspCamera(fmtp: string, onPlay: (sock: Socket) => void): Server {
  const server = createServer((sock) => {
    let buf = '';
    sock.on('error', () => undefined);
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
          body = `v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=cam\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1${fmtp}\r\na=control:track1\r\n`;
          extra = `Content-Type: application/sdp\r\nContent-Base: rtsp://127.0.0.1:${(server.address() as { port: number }).port}/cam/\r\nContent-Length: ${body.length}\r\n`;
        } else if (method === 'SETUP') extra = 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 1234;timeout=60\r\n';
        else if (method === 'PLAY') {
          extra = 'Session: 1234\r\nRange: npt=0.000-\r\n';
          onPlay(sock);
        } else if (method === 'OPTIONS') extra = 'Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n';
        sock.write(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\n${extra}\r\n${body}`);
      }
    });
  });
  return server;
}

/**
 * ffmpegSource on `input` with a fake ffmpeg (FRAME-sized frames): what it tells, in order
 * (`opened`: onInputOpened; `frame`; `error`), and the ffmpeg it started (once started).
 */
function watched(input: FfmpegSourceOptions['input']): { ffmpeg: () => FakeFfmpeg; events: string[]; sub: Subscription } {
  let c: FakeFfmpeg | undefined;
  const events: string[] = [];
  const sub = ffmpegSource({
    id: 'cam',
    input,
    output,
    ffmpegPath: 'ffmpeg',
    clock: () => performance.now(),
    onInputOpened: () => events.push('opened'),
    spawn: (_cmd, args) => {
      c = new FakeFfmpeg(args, FRAME);
      return c.asChild();
    },
  }).subscribe({ next: (f) => (events.push('frame'), f.release()), error: () => events.push('error') });
  return { ffmpeg: () => c!, events, sub };
}
