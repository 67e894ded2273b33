// argus preview reads a camera as a run does: its credentials through argus's relay, never on
// ffmpeg's command line (readable by every local user), and an rtsps:// camera checked.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runPreview } from '../../src/tools/preview.js';
import { buildFfmpegArgs } from '../../src/sources/ffmpeg-args.js';
import { writeHostileModel } from '../helpers/hostile-model.js';
import { modelDir } from '../helpers/onnx-graphs.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { digestCamera, RtspCamera } from '../helpers/rtsp-camera.js';

// Every ffmpeg's command line, as `ps` would show it.
const commands = vi.hoisted(() => [] as string[]);
vi.mock('node:child_process', async (original) => {
  const real = await original<typeof import('node:child_process')>();
  return { ...real, spawn: (cmd: string, args: readonly string[], o: object) => (commands.push(args.join(' ')), real.spawn(cmd, args, o)) };
});

describe('argus preview of a camera with credentials', () => {
  const dir = modelDir();
  afterAll(() => dir.cleanup());

  it("RTSP: ffmpeg is given the relay's placeholder, the camera gets the real credentials, through the relay's address; the error names the camera", async () => {
    const model = dir.path('preview-relay.onnx');
    writeHostileModel(model);
    const uris: string[] = [];
    const valid: boolean[] = [];
    const camera = digestCamera('admin', 'S3cretPw', (s, cseq, ok, _auth, uri) => {
      valid.push(ok);
      uris.push(uri);
      s.end(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-relay-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: "rtsp://admin:S3cretPw@127.0.0.1:${port}/live"`, 'model:', `  path: ${model}`, ''].join('\n'));
    commands.length = 0;
    const err = await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} }).then(
      () => undefined,
      (e: Error) => e,
    );
    camera.close();
    const ffmpegRuns = commands.filter((c) => c.includes(' -i '));
    expect(ffmpegRuns.length).toBeGreaterThan(0);
    for (const c of ffmpegRuns) {
      expect(c).not.toContain('S3cretPw');
      expect(c).toContain('-rtsp_transport tcp');
    }
    expect(valid).toContain(true);
    // ffmpeg spoke to the relay (its requests name the relay's port), never to the camera itself.
    expect(uris.length).toBeGreaterThan(0);
    for (const u of uris) expect(u).not.toContain(`:${port}/`);
    expect(err?.message).toContain(`127.0.0.1:${port}`);
    expect(err?.message).not.toMatch(/S3cretPw|argus:relay/);
  }, 60_000);

  it('RTSP over UDP (rtspTransport: udp): ffmpeg reads it through the relay over UDP, as the source says, not over TCP', async () => {
    const model = dir.path('preview-relay-udp.onnx');
    writeHostileModel(model);
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user: 'admin', password: 'S3cretPw' }, udpOnly: true });
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-relay-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: "${url.replace('rtsp://', 'rtsp://admin:S3cretPw@')}"`, '    rtspTransport: udp', 'model:', `  path: ${model}`, ''].join('\n'));
    commands.length = 0;
    try {
      await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} });
    } finally {
      await camera.close();
    }
    for (const c of commands.filter((c) => c.includes(' -i '))) expect(c).not.toContain('S3cretPw');
    expect(camera.transports).toEqual(['udp']);
    expect(camera.auths.ok).toBeGreaterThan(0);
  }, 60_000);
});

describe('argus preview of an RTSP camera without credentials (no relay)', () => {
  const dir = modelDir();
  afterAll(() => dir.cleanup());

  it("ffmpeg is given the source's transport as a run is, tcp by default (it was given none: ffmpeg's own default set the camera up over UDP)", async () => {
    const model = dir.path('preview-plain-rtsp.onnx');
    writeHostileModel(model);
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180');
    const work = mkdtempSync(join(tmpdir(), 'argus-preview-plain-'));
    const yaml = join(work, 'p.yaml');
    writeFileSync(yaml, ['sources:', '  - id: cam', `    uri: "${url}"`, 'model:', `  path: ${model}`, ''].join('\n'));
    commands.length = 0;
    try {
      await runPreview(yaml, { out: join(work, 'p.png'), write: () => {} });
    } finally {
      await camera.close();
    }
    const runs = commands.filter((c) => c.includes(' -i '));
    expect(runs.length).toBeGreaterThan(0);
    for (const c of runs) expect(c).toContain(`-rtsp_transport tcp`);
    // The short probe of a run's too (it was ffmpeg's default: the first frame 1.4 s later).
    const run = buildFfmpegArgs({ url, kind: 'rtsp', rate: 'native', loop: false }, { width: 64, height: 64, pixelFormat: 'bgr24', align: 'center', padValue: 114 });
    // (Up to the decoder's bounds, which the preview gives before them: ffmpeg-args decodeBoundArgs.)
    const probe = run.slice(run.indexOf('-rtsp_transport'), run.indexOf('-max_pixels'));
    expect(probe).toContain('-fpsprobesize');
    for (const c of runs) expect(c).toContain(probe.join(' '));
    expect(camera.transports).toEqual(['tcp']);
  }, 60_000);
});
