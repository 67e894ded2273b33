import { execFile, execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { now } from '../../src/core/clock.js';
import { percentiles } from '../../src/core/stats.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { LIVE_PTS_SLACK_S } from '../../src/sources/ffmpeg-source.js';
import type { Transition } from '../../src/sources/health.js';
import { MIRROR } from '../helpers/assets.js';
import { rtspServer } from '../helpers/rtsp.js';
import { testPort } from '../helpers/ports.js';

const { rtsp, publish } = rtspServer(testPort(18554));

const PERSON = `${MIRROR}/streams/one-by-one-person-detection.mp4`;
let cam1: string;
let cam2: string;

beforeAll(async () => {
  await rtsp('start');
  [cam1, cam2] = await Promise.all([publish('cam1', PERSON), publish('cam2', PERSON)]);
}, 300_000);
afterAll(async () => {
  await rtsp('stop');
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(f: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) await sleep(50);
  return f();
}

/** Starts a pipeline on RTSP sources; returns handles to watch frames and transitions. */
async function start(sources: { id: string; uri: string }[]) {
  const config = PipelineSchema.parse({
    sources: sources.map((s) => ({ ...s, watchdog: { startTimeoutMs: 8000, stallMinMs: 2000 } })), // default reconnect policy
    model: { warmupRuns: 1 },
    alerts: { snapshot: { mode: 'none' } },
  });
  const frames: { source: string; at: number; e2e: number }[] = [];
  const transitions: Transition[] = [];
  const ac = new AbortController();
  let running: RunningPipeline | undefined;
  let ended = false;
  const done = runPipeline(config, {
    status: false,
    signal: ac.signal,
    onReady: (r) => (running = r),
    onTransition: (t) => transitions.push(t),
    onResult: (r) => frames.push({ source: r.frame.source, at: now(), e2e: r.frame.stamps.emitted - r.frame.stamps.captured }),
  }).finally(() => (ended = true));
  await until(() => running !== undefined, 60_000);
  return { frames, transitions, stop: () => (ac.abort(), done), ended: () => ended, running: () => running! };
}

describe('real RTSP sources (scripts/rtsp-server.sh)', () => {
  it('the server is killed and restarted 5 times: each time the source reconnects and frames resume; the process keeps running', async () => {
    const p = await start([{ id: 'cam1', uri: cam1 }]);
    expect(await until(() => p.frames.length > 5, 120_000)).toBe(true);
    const recoveries: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = p.transitions.length;
      await rtsp('kill');
      expect(await until(() => p.transitions.slice(before).some((t) => t.state === 'reconnecting'), 120_000), `cycle ${i}: reconnecting`).toBe(true);
      await rtsp('start', '--republish');
      const back = now();
      const seen = p.frames.length;
      expect(await until(() => p.frames.length > seen + 3, 120_000), `cycle ${i}: frames resume`).toBe(true);
      recoveries.push(p.frames[seen].at - back);
      expect(p.ended()).toBe(false);
    }
    const states = p.transitions.map((t) => t.state);
    expect(states.filter((s) => s === 'reconnecting').length).toBeGreaterThanOrEqual(5);
    // The first start and one per restart (more if a loaded machine made the watchdog fire too).
    expect(states.filter((s) => s === 'streaming').length).toBeGreaterThanOrEqual(6);
    const reasons = p.transitions.filter((t) => t.state === 'reconnecting').map((t) => t.code);
    expect(reasons.every((c) => c === 'VAP_ERR_SOURCE_EOF' || c === 'VAP_ERR_SOURCE_EXIT' || c === 'VAP_ERR_SOURCE_TIMEOUT' || c === 'VAP_ERR_SOURCE_STALLED')).toBe(true);
    await p.stop();
    // A figure, not an assertion (the backoff schedule is tested in virtual time in supervisor.test.ts).
    console.log(`RTSP recovery after the server came back, 5 cycles (ms): ${recoveries.map((r) => Math.round(r)).join(', ')}`);
    // Every frame read was processed or counted as dropped.
    const st = p.running().pipeline.stats[0];
    expect(st.framesIn).toBe(st.framesOut + st.dropped);
  }, 600_000);

  it('a frozen publisher (SIGSTOP: socket open, no frames) trips the watchdog; frames resume after SIGCONT', async () => {
    const p = await start([{ id: 'cam1', uri: cam1 }]);
    expect(await until(() => p.frames.length > 5, 120_000)).toBe(true);
    const before = p.transitions.length;
    await rtsp('pause-publisher', 'cam1');
    try {
      expect(await until(() => p.transitions.slice(before).some((t) => t.state === 'stalled'), 120_000)).toBe(true);
      const stalled = p.transitions.slice(before).find((t) => t.state === 'stalled')!;
      expect(stalled.reason).toMatch(/^no frame for 2\.0 s$/);
      expect(await until(() => p.transitions.slice(before).some((t) => t.state === 'reconnecting' && t.code === 'VAP_ERR_SOURCE_STALLED'), 60_000)).toBe(true);
    } finally {
      await rtsp('resume-publisher', 'cam1');
    }
    const seen = p.frames.length;
    expect(await until(() => p.frames.length > seen + 5, 120_000)).toBe(true);
    // Streaming again after the stall (frames resumed above).
    const after = p.transitions.slice(before);
    const stalledAt = after.findIndex((t) => t.state === 'stalled');
    expect(after.slice(stalledAt + 1).some((t) => t.state === 'streaming')).toBe(true);
    await p.stop();
  }, 300_000);

  it('fps on a live camera: about that many frames a second (not a flood of duplicates), each stamped with a plausible arrival', async () => {
    const config = PipelineSchema.parse({ sources: [{ id: 'cam1', uri: cam1, fps: 2, watchdog: { startTimeoutMs: 8000, stallMinMs: 2000 } }], model: { warmupRuns: 1 }, alerts: { snapshot: { mode: 'none' } } });
    const got: { seq: number; produced: number; captured: number; by: string }[] = [];
    const ac = new AbortController();
    let first = 0;
    const done = runPipeline(config, {
      status: false,
      signal: ac.signal,
      onResult: (r) => {
        first ||= now();
        got.push({ seq: r.frame.seq, produced: r.frame.stamps.produced, captured: r.frame.stamps.captured, by: r.frame.producedBy });
      },
    });
    expect(await until(() => first > 0, 120_000)).toBe(true);
    await sleep(6000);
    ac.abort();
    await done;
    const span = (got[got.length - 1].captured - got[0].captured) / 1000;
    // ffmpeg read 6 s of a 10 fps camera: 12 frames at 2 fps (seq counts dropped frames too)
    const read = got[got.length - 1].seq - got[0].seq + 1;
    expect(read / span).toBeGreaterThan(1);
    expect(read / span).toBeLessThan(3.5);
    for (const f of got) {
      expect(f.produced).toBeLessThanOrEqual(f.captured);
      expect(f.produced).toBeGreaterThan(f.captured - 60_000);
    }
    expect(got.some((f) => f.by === 'arrival')).toBe(true);
  }, 180_000);

  it('fps above the camera\'s own rate (25 on a 10 fps stream): pts and the annotated video keep to real time', async () => {
    const config = PipelineSchema.parse({ sources: [{ id: 'cam1', uri: cam1, fps: 25, watchdog: { startTimeoutMs: 8000, stallMinMs: 2000 } }], model: { warmupRuns: 1 }, alerts: { snapshot: { mode: 'none' } } });
    const dir = mkdtempSync(join(tmpdir(), 'argus-rtsp-fps-'));
    const got: { seq: number; pts: number; captured: number }[] = [];
    const ac = new AbortController();
    const done = runPipeline(config, {
      status: false,
      signal: ac.signal,
      annotate: join(dir, '{source}.mp4'),
      onResult: (r) => got.push({ seq: r.frame.seq, pts: r.frame.pts, captured: r.frame.stamps.captured }),
    });
    expect(await until(() => got.length > 0, 120_000)).toBe(true);
    // At least 5 s of streaming and more than 20 results: a busy machine's inference (two
    // CPU-bound processes beside the suite) gave 15 in 5 s, the rest dropped as stale, and
    // the checks below need the frames, not the rate.
    await sleep(5000);
    await until(() => got.length > 20, 60_000);
    ac.abort();
    const summary = await done;
    expect(got.length, `${got.length} frames`).toBeGreaterThan(20);
    // Counted at 25 fps, 5 s of a 10 fps camera would span 2 s of pts: they stay within
    // LIVE_PTS_SLACK_S of the time since the first frame (the same clock as `captured`).
    const first = got.find((f) => f.seq === 0)!;
    expect(first).toBeDefined();
    for (const f of got) expect(Math.abs(f.pts - first.pts - (f.captured - first.captured) / 1000), `frame ${f.seq}: pts ${f.pts}`).toBeLessThanOrEqual(LIVE_PTS_SLACK_S + 0.01);
    const wall = (got[got.length - 1].captured - first.captured) / 1000;
    expect(wall, `${got.length} frames`).toBeGreaterThan(4);
    // The annotated copy at the configured 25 fps, each camera frame repeated over its slots: as
    // long as the camera streamed, not 40 % of it.
    expect(summary.annotate![0]).toMatchObject({ fps: 25 });
    // The encoder runs at nice 10 and gets closeTimeoutMs (10 s) after the stop: on a machine too
    // busy for it to finish by then (the suite beside two busy loops: load ~10, the encoder given a
    // few % of a core), it is killed there, as README's *Annotated video* says, and the file may
    // hold no complete fragment yet. That bound is what is checked then; the length, otherwise.
    if (summary.annotate![0].error?.includes('of the stop; ffmpeg was killed')) return;
    const file = join(dir, 'cam1.mp4');
    let duration = NaN;
    try {
      duration = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file], { encoding: 'utf8' }).trim());
    } catch (e) {
      throw new Error(`ffprobe ${file} (${statSync(file, { throwIfNoEntry: false })?.size} bytes) failed after ${wall} s streamed; ${JSON.stringify(summary.annotate![0])}: ${(e as Error).message}`);
    }
    // (Said on failure: this test failed once locally, with which bound not kept.)
    const said = `annotated ${duration} s of ${wall} s streamed; ${JSON.stringify(summary.annotate![0])}`;
    expect(duration, said).toBeGreaterThan(0.7 * wall);
    expect(duration, said).toBeLessThan(wall + 1.2);
  }, 180_000);

  it('two cameras, one dies: the other keeps delivering (frame rate and latency printed side by side)', async () => {
    const p = await start([
      { id: 'cam1', uri: cam1 },
      { id: 'cam2', uri: cam2 },
    ]);
    expect(await until(() => p.frames.filter((f) => f.source === 'cam1').length > 20, 120_000)).toBe(true);
    const window = async () => {
      const t0 = now();
      const from = p.frames.length;
      await sleep(8000);
      const fs = p.frames.slice(from).filter((f) => f.source === 'cam1');
      return { fps: fs.length / ((now() - t0) / 1000), p50: percentiles(fs.map((f) => f.e2e), [50])[0] };
    };
    const healthy = await window();
    await rtsp('unpublish', 'cam2'); // cam2 goes dark and keeps reconnecting
    expect(await until(() => p.running().pipeline.stats[1].reconnects > 0, 120_000)).toBe(true);
    const cam2Restarts = p.running().pipeline.stats[1].reconnects;
    const oneDown = await window();
    // Isolation, shown by events rather than speed (a busy machine sets the speed; the rates
    // are printed): while cam2 reconnects again and again, cam1 delivers 20 more frames.
    const cam1Seen = p.frames.filter((f) => f.source === 'cam1').length;
    expect(await until(() => p.frames.filter((f) => f.source === 'cam1').length >= cam1Seen + 20 && p.running().pipeline.stats[1].reconnects > cam2Restarts, 120_000)).toBe(true);
    expect(p.running().pipeline.stats[1].state).not.toBe('streaming');
    await p.stop();
    console.log(`cam1 with cam2 healthy: ${healthy.fps.toFixed(1)} fps, e2e p50 ${healthy.p50.toFixed(1)} ms; cam2 down: ${oneDown.fps.toFixed(1)} fps, p50 ${oneDown.p50.toFixed(1)} ms`);
    expect(healthy.fps).toBeGreaterThan(0);
    // Restore for other tests.
    cam2 = await publish('cam2', PERSON);
  }, 600_000);
});

describe('the camera\'s clock (RTCP sender reports, through argus\'s relay)', () => {
  const camera = () => cam1.replace(/\/cam1$/, '/argus-camera');

  /**
   * Frames of a 6 s run on `uri`: their stamps and what `produced` is. The tests below run two
   * such pipelines at once on the same camera, so that what they compare meets the same load
   * (one after the other, a load that changed between them moved the figures by tens of ms).
   */
  async function stamps(source: Record<string, unknown>) {
    const config = PipelineSchema.parse({ sources: [{ id: 'cam', ...source, watchdog: { startTimeoutMs: 8000, stallMinMs: 2000 } }], model: { warmupRuns: 1 }, alerts: { snapshot: { mode: 'none' } } });
    const got: { produced: number; captured: number; by: string }[] = [];
    const ac = new AbortController();
    let first = 0;
    const done = runPipeline(config, {
      status: false,
      signal: ac.signal,
      onResult: (r) => {
        first ||= now();
        got.push({ produced: r.frame.stamps.produced, captured: r.frame.stamps.captured, by: r.frame.producedBy });
      },
    });
    expect(await until(() => first > 0, 120_000)).toBe(true);
    await sleep(6000);
    // And until enough frames came to judge (a machine at load 20 gave 10 camera-stamped frames in
    // those 6 s: inference drops frames there), bounded: the camera's clock comes with its first
    // sender report, a few seconds in.
    const enough = () => got.length >= 30 && (source.cameraClock === false || got.filter((f) => f.by === 'camera').length >= 20);
    await until(enough, 120_000);
    ac.abort();
    await done;
    return got;
  }

  it('a camera whose sender reports map RTP time to its capture: frames stamped with the camera\'s time, before their arrival; cameraClock: false stamps the arrival', async () => {
    const [byCamera, byArrival] = await Promise.all([stamps({ uri: camera() }), stamps({ uri: camera(), cameraClock: false })]);
    // The server's first sender report comes within a few seconds; from then on the camera's time.
    const cam = byCamera.filter((f) => f.by === 'camera');
    expect(cam.length).toBeGreaterThan(10);
    expect(byCamera.every((f) => f.by === 'camera' || f.by === 'arrival')).toBe(true);
    for (const f of byCamera) {
      expect(f.produced).toBeLessThanOrEqual(f.captured);
      expect(f.produced).toBeGreaterThan(f.captured - 5000);
    }
    expect(byArrival.length).toBeGreaterThan(10);
    expect(byArrival.every((f) => f.by === 'arrival')).toBe(true);
    // The camera captured each frame well before it reached argus (the server's encoding and
    // sending, about 120 ms), while a frame reaches argus a few ms after its last packet (its
    // access unit ended for ffmpeg by the relay): a camera time is not an arrival.
    const source = (fs: { produced: number; captured: number }[]) => percentiles(fs.map((f) => f.captured - f.produced), [50])[0];
    expect(source(cam)).toBeGreaterThan(40);
  }, 300_000);

  it("an RTSPS camera (TLS in front of the server): relayed over TLS, its certificate pinned, its frames stamped with the camera's clock; ffmpeg's own RTSPS with cameraClock: false and tls.verify: false", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-rtsps-'));
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    // A self-signed certificate, as cameras have (the relay takes it pinned; test/sources/rtsps-check.test.ts refuses it otherwise).
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=camera.local'], { stdio: 'ignore' });
    const plain = new URL(camera());
    let handshakes = 0;
    const server = createTlsServer({ key: readFileSync(key), cert: readFileSync(cert) }, (s) => {
      handshakes++;
      const c = netConnect(Number(plain.port), plain.hostname);
      s.pipe(c).pipe(s);
      s.on('error', () => c.destroy());
      c.on('error', () => s.destroy());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const uri = `rtsps://127.0.0.1:${(server.address() as AddressInfo).port}/argus-camera`;
      const [relayed, direct] = await Promise.all([stamps({ uri, tls: { fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 } }), stamps({ uri, cameraClock: false, tls: { verify: false } })]);
      expect(handshakes).toBeGreaterThan(1);
      expect(relayed.filter((f) => f.by === 'camera').length).toBeGreaterThan(10);
      expect(direct.length).toBeGreaterThan(10);
      expect(direct.every((f) => f.by === 'arrival')).toBe(true);
    } finally {
      server.close();
    }
  }, 300_000);

  it('low-latency decoding (the default): each access unit ended for ffmpeg as soon as it is in (a frame period less from the camera to argus), and the first frame sooner', async () => {
    const [ended, held] = await Promise.all([stamps({ uri: camera() }), stamps({ uri: camera(), decode: { lowLatency: false } })]);
    const source = (fs: { produced: number; captured: number; by: string }[]) => percentiles(fs.filter((f) => f.by === 'camera').map((f) => f.captured - f.produced), [50])[0];
    // ffmpeg's parser used to find a frame's end only when the next one came: 100 ms at the server's 10 fps.
    expect(source(held) - source(ended)).toBeGreaterThan(60);
    expect(source(held) - source(ended)).toBeLessThan(160);
    // ffmpeg's probe reads 2 frame intervals for the rate instead of 20: the first frame (the
    // first key frame) waits about 1.4 s less in it at 10 fps.
    const first = (fs: { produced: number; captured: number }[]) => fs[0].captured - fs[0].produced;
    expect(first(held) - first(ended)).toBeGreaterThan(700);
  }, 300_000);

  it('an H.265 camera too: its frames reach argus a few ms after their last packet, a frame period sooner than without', async () => {
    // The person video as H.265 without B-frames (as cameras send it), published at its 10 fps.
    const { resolveFfmpeg } = await import('../../src/sources/ffmpeg-path.js');
    const hevc = join(mkdtempSync(join(tmpdir(), 'argus-hevc-')), 'person.mp4');
    // (Not execFileSync: the encoding took tens of seconds on a busy machine, and a test file whose
    // event loop stands still for 60 s has vitest's calls to its main process time out, which
    // fails the run.)
    await promisify(execFile)((await resolveFfmpeg()).path, ['-v', 'error', '-i', PERSON, '-t', '20', '-c:v', 'libx265', '-preset', 'ultrafast', '-x265-params', 'bframes=0:keyint=10:log-level=error', '-an', hevc]);
    const uri = await publish('hevc', hevc);
    const [ended, held] = await Promise.all([stamps({ uri }), stamps({ uri, decode: { lowLatency: false } })]);
    // A publisher's sender reports map RTP time to the server's sending. On an idle machine that
    // is after the frame's arrival at the relay, so frames are stamped with their arrival; on a
    // busy one the packets wait between the server and the relay, the sending time is the earlier,
    // and frames are stamped with it (`camera`): 47 of 125 in a run of the suite, two files at a
    // time, beside two CPU-bound processes. Either way `produced` is when the frame left the
    // server or reached argus, within that wait of each other, and both runs are measured alike.
    const all = [...ended, ...held];
    const by = all.reduce<Record<string, number>>((n, f) => ({ ...n, [f.by]: (n[f.by] ?? 0) + 1 }), {});
    expect((by.arrival ?? 0) + (by.camera ?? 0), JSON.stringify(by)).toBeGreaterThanOrEqual(0.9 * all.length);
    const source = (fs: { produced: number; captured: number }[]) => percentiles(fs.map((f) => f.captured - f.produced), [50])[0];
    // A frame period (100 ms) sooner: what the delimiters are for. Only the difference is
    // asserted: the two runs read the camera at the same time, so the machine's load delays both
    // alike, while the absolute figure (a few ms on an idle machine) grows with it: a bound of
    // 40 ms failed beside other test runs at load 3–4, one of 100 ms (110.5 ms) beside a
    // helper's test runs.
    expect(source(held) - source(ended)).toBeGreaterThan(60);
    expect(source(held) - source(ended)).toBeLessThan(160);
  }, 300_000);

  it('a camera that cannot be reached: the failure names the camera and why, not the relay', async () => {
    const { ffmpegSource } = await import('../../src/sources/ffmpeg-source.js');
    const { firstValueFrom } = await import('rxjs');
    const { resolveFfmpeg } = await import('../../src/sources/ffmpeg-path.js');
    const err = await firstValueFrom(
      ffmpegSource({
        id: 'gone',
        input: { url: 'rtsp://user:secret@127.0.0.1:9/live', kind: 'rtsp', rate: 'native', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114 },
        ffmpegPath: (await resolveFfmpeg()).path,
      }),
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/camera: 127\.0\.0\.1:9: ECONNREFUSED/);
    expect(err?.message).not.toContain('secret');
  }, 60_000);
});
