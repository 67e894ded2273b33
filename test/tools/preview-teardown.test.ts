// argus preview (and detect, which share tools/frames) stop an RTSP camera's ffmpeg as a run does
// (stopFfmpeg: SIGTERM, on which it sends TEARDOWN, SIGKILL after the grace): at the end of the
// preview, and at Ctrl-C. They killed it outright (SIGKILL): the camera's session stayed open
// until it timed out, and a camera of 2 to 4 sessions refused the run started after a preview.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runPreview } from '../../src/tools/preview.js';
import { FFMPEG_STOP_GRACE_MS } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { SIGNAL_REPEAT_MS } from '../../src/core/signals.js';
import { writeHostileModel } from '../helpers/hostile-model.js';
import { modelDir } from '../helpers/onnx-graphs.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { RtspCamera } from '../helpers/rtsp-camera.js';
import { childrenOf, killAll, record, type Recorded, running, until } from '../helpers/procs.js';

const ffmpeg = resolveFfmpegSync().path;
const work = mkdtempSync(join(tmpdir(), 'argus-preview-teardown-'));
const models = modelDir();
let camera: RtspCamera | undefined;
const leftOver: Recorded[] = [];
afterEach(async () => {
  await camera?.close();
  camera = undefined;
});
afterAll(() => {
  killAll(leftOver);
  rmSync(work, { recursive: true, force: true });
  models.cleanup();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const teardowns = (c: RtspCamera) => c.heads.filter((h) => h.startsWith('TEARDOWN')).length;

/**
 * A process reading `url` with tools/frames (as preview does), `ffmpegPath` its ffmpeg; it prints
 * `frame` at its first frame. `group`: the leader of a process group of its own, as a terminal
 * starts a command (its Ctrl-C goes to the whole group).
 */
/** The process's ffmpegs: its children but the reaper (core/children startReaper, a shell that ends them should it be killed outright). */
const ffmpegsOf = (pid: number) => childrenOf(pid).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith(ffmpeg));

function reader(url: string, ffmpegPath: string, group = false) {
  const script = `
    import { videoFrames } from ${JSON.stringify(join(process.cwd(), 'src/tools/frames.ts'))};
    for await (const f of videoFrames({ ffmpegPath: ${JSON.stringify(ffmpegPath)}, url: ${JSON.stringify(url)}, inputArgs: ['-rtsp_transport', 'udp'], stallMs: 600_000 })) {
      process.stdout.write('frame\\n');
      await new Promise(() => {}); // held: the preview still works on it
    }`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], detached: group });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (c, s) => r([c, s])));
  return { child, exited, out: () => out };
}

describe('argus preview of an RTSP camera: its ffmpeg is stopped so that the camera gets TEARDOWN', () => {
  it('at the end of the preview (over UDP: no reset of the TCP connection to lose it)', async () => {
    const started = await RtspCamera.start(PERSON_VIDEO, '320x180');
    camera = started.camera;
    const model = models.path('teardown.onnx');
    writeHostileModel(model);
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: "${started.url}"`, '    rtspTransport: udp', 'model:', `  path: ${model}`, 'tracking:', '  enabled: false', ''].join('\n'));
    const r = await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} });
    expect(r.width).toBe(320);
    const ended = performance.now();
    expect(await until(() => teardowns(camera!) > 0, FFMPEG_STOP_GRACE_MS + 3000)).toBe(true);
    expect(performance.now() - ended).toBeLessThan(FFMPEG_STOP_GRACE_MS + 3000);
  }, 90_000);

  it('at Ctrl-C: the camera gets TEARDOWN before the process ends by the signal, its ffmpeg gone', async () => {
    const started = await RtspCamera.start(PERSON_VIDEO, '320x180');
    camera = started.camera;
    const r = reader(started.url, ffmpeg);
    expect(await until(() => r.out().includes('frame'), 30_000)).toBe(true);
    const ff = ffmpegsOf(r.child.pid!);
    leftOver.push(...ff.map(record));
    expect(ff).toHaveLength(1);
    expect(teardowns(camera)).toBe(0);
    r.child.kill('SIGINT');
    const [code, sig] = await r.exited;
    expect({ code, sig }).toEqual({ code: null, sig: 'SIGINT' });
    // (Sent before ffmpeg exited, and so before the process ended; read by the camera, here, soon after.)
    expect(await until(() => teardowns(camera!) > 0, 3000), JSON.stringify(camera.heads.map((h) => h.split(' ')[0]))).toBe(true);
    expect(teardowns(camera)).toBe(1);
    expect(await until(() => !running(ff[0]), 3000)).toBe(true);
  }, 90_000);

  it("at a terminal's Ctrl-C (SIGINT to the whole process group): ffmpeg, in a group of its own, gets only argus's SIGTERM, and the camera its TEARDOWN", async () => {
    // In argus's group, ffmpeg got the terminal's SIGINT too: argus's SIGTERM was its second
    // signal, on which ffmpeg interrupts its I/O, and the TEARDOWN was not sent (over UDP: no relay).
    const started = await RtspCamera.start(PERSON_VIDEO, '320x180');
    camera = started.camera;
    const r = reader(started.url, ffmpeg, true);
    expect(await until(() => r.out().includes('frame'), 30_000)).toBe(true);
    const ff = ffmpegsOf(r.child.pid!);
    leftOver.push(...ff.map(record));
    expect(ff).toHaveLength(1);
    process.kill(-r.child.pid!, 'SIGINT');
    const [code, sig] = await r.exited;
    expect({ code, sig }).toEqual({ code: null, sig: 'SIGINT' });
    expect(await until(() => teardowns(camera!) > 0, 3000), JSON.stringify(camera.heads.map((h) => h.split(' ')[0]))).toBe(true);
    expect(await until(() => !running(ff[0]), 3000)).toBe(true);
  }, 90_000);

  it('an ffmpeg that ignores SIGTERM: killed after the grace at one signal, at once at a second one; never left behind', async () => {
    // An "ffmpeg" that ignores SIGTERM and SIGINT (an RTSP read stuck in the kernel), which
    // answers -version as ffmpeg does.
    const fake = join(work, 'stuck-ffmpeg');
    writeFileSync(fake, `#!/bin/sh\nif [ "$2" = "-version" ]; then exec ${JSON.stringify(ffmpeg)} "$@"; fi\ntrap '' TERM INT\necho started >&2\nexec sleep 600\n`);
    chmodSync(fake, 0o755);
    for (const second of [false, true]) {
      const r = reader('rtsp://127.0.0.1:9/live', fake);
      let ff: number[] = [];
      expect(await until(() => (ff = childrenOf(r.child.pid!).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('sleep'))).length === 1, 30_000)).toBe(true);
      leftOver.push(...ff.map(record));
      const t0 = performance.now();
      r.child.kill('SIGINT');
      if (second) {
        await sleep(SIGNAL_REPEAT_MS + 100);
        r.child.kill('SIGINT');
      }
      const [code, sig] = await r.exited;
      const took = performance.now() - t0;
      expect({ code, sig }).toEqual({ code: null, sig: 'SIGINT' });
      expect(await until(() => !running(ff[0]), 3000), `second signal: ${second}, took ${took}: ${(() => { try { return readFileSync(`/proc/${ff[0]}/status`, 'utf8').split('\n').filter((l) => /^(State|PPid|SigIgn|SigBlk)/.test(l)).join('; '); } catch { return 'gone'; } })()}`).toBe(true);
      // One signal: the grace, then SIGKILL; a second: at once (well before the grace's end).
      if (second) expect(took).toBeLessThan(SIGNAL_REPEAT_MS + 100 + FFMPEG_STOP_GRACE_MS - 200);
      else expect(took).toBeGreaterThanOrEqual(FFMPEG_STOP_GRACE_MS - 50);
    }
  }, 90_000);
});
