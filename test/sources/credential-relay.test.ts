import { spawn as nodeSpawn } from 'node:child_process';
import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { ffmpegSource, type SpawnFn, type SourceMemo } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { digestCamera, RtspCamera } from '../helpers/rtsp-camera.js';

describe("a camera run without its clock (the relay given up) keeps its credentials off ffmpeg's command line", () => {
  it('a start while the relay waits to be tried again: ffmpeg is given no password, and the camera gets the real one', async () => {
    const user = 'admin';
    const password = 'S3cretPw';
    const seen: boolean[] = [];
    const camera = digestCamera(user, password, (s, cseq, ok) => {
      seen.push(ok);
      s.end(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const commands: string[] = [];
    const spawn: SpawnFn = (cmd, args, o) => {
      commands.push(args.join(' '));
      return nodeSpawn(cmd, args, o);
    };
    // The relay was given up a moment ago: this start runs without the camera's clock.
    const memo: SourceMemo = { unrelayed: { until: Number.MAX_SAFE_INTEGER }, relayFailures: 1 };
    const err = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: `rtsp://${user}:${password}@127.0.0.1:${port}/live`, kind: 'rtsp', rate: 'native', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114 },
        ffmpegPath: (await resolveFfmpeg()).path,
        memo,
        spawn,
      }),
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    camera.close();
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) expect(c).not.toContain(password);
    expect(seen).toContain(true);
    // ffmpeg's error names the camera, not the relay or its placeholder (and no password).
    expect(err?.message).toBeDefined();
    expect(err!.message).not.toMatch(/argus:relay|S3cretPw/);
  }, 30_000);
});

describe('a camera that redirects ffmpeg elsewhere (ffmpeg follows it itself, past any relay)', () => {
  it('after the relay is given up for the redirect, ffmpeg is given the URL as it is, and the address redirected to gets the real credentials', async () => {
    const user = 'admin';
    const password = 'S3cretPw';
    const valid: string[] = [];
    const second = digestCamera(user, password, (s, cseq, ok) => {
      valid.push(ok ? 'ok' : 'bad');
      s.end(`RTSP/1.0 ${ok ? '404 Not Found' : '401 Unauthorized'}\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    await new Promise<void>((r) => second.listen(0, '127.0.0.1', r));
    const port2 = (second.address() as { port: number }).port;
    const first = digestCamera(user, password, (s, cseq) => s.write(`RTSP/1.0 302 Moved\r\nCSeq: ${cseq}\r\nLocation: rtsp://127.0.0.1:${port2}/live\r\n\r\n`));
    await new Promise<void>((r) => first.listen(0, '127.0.0.1', r));
    const port1 = (first.address() as { port: number }).port;
    const memo: SourceMemo = {};
    await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: `rtsp://${user}:${password}@127.0.0.1:${port1}/live`, kind: 'rtsp', rate: 'native', loop: false },
        output: { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114 },
        ffmpegPath: (await resolveFfmpeg()).path,
        memo,
      }),
    ).catch(() => undefined);
    first.close();
    second.close();
    expect(memo.redirected).toBe(true);
    expect(valid).toContain('ok');
  }, 30_000);
});

describe("a camera with cameraClock: false (no clock relay) keeps its credentials off ffmpeg's command line too", () => {
  const user = 'admin';
  const password = 'S3cretPw';
  const output = { width: 416, height: 416, pixelFormat: 'bgr24' as const, align: 'center' as const, padValue: 114 };

  it('ffmpeg is given no password, and the camera gets the real one (it was given the URL as it is)', async () => {
    const seen: boolean[] = [];
    const camera = digestCamera(user, password, (s, cseq, ok) => {
      seen.push(ok);
      s.end(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const commands: string[] = [];
    const spawn: SpawnFn = (cmd, args, o) => {
      commands.push(args.join(' '));
      return nodeSpawn(cmd, args, o);
    };
    const memo: SourceMemo = {};
    const err = await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: `rtsp://${user}:${password}@127.0.0.1:${port}/live`, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
        output,
        ffmpegPath: (await resolveFfmpeg()).path,
        memo,
        spawn,
      }),
    ).then(
      () => undefined,
      (e: Error) => e,
    );
    camera.close();
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) expect(c).not.toContain(password);
    expect(commands[0]).toMatch(/rtsp:\/\/argus:relay@127\.0\.0\.1:\d+\//);
    expect(seen).toContain(true);
    expect(err!.message).not.toMatch(/argus:relay|S3cretPw/);
    // No relay was given up (there was no clock relay to give up).
    expect(memo.relayFailures ?? 0).toBe(0);
  }, 30_000);

  it('a camera that redirects: run again with the URL as it is (ffmpeg follows a redirect itself), and the address redirected to gets the real credentials', async () => {
    const valid: string[] = [];
    const second = digestCamera(user, password, (s, cseq, ok) => {
      valid.push(ok ? 'ok' : 'bad');
      s.end(`RTSP/1.0 ${ok ? '404 Not Found' : '401 Unauthorized'}\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    await new Promise<void>((r) => second.listen(0, '127.0.0.1', r));
    const port2 = (second.address() as { port: number }).port;
    const first = digestCamera(user, password, (s, cseq) => s.write(`RTSP/1.0 302 Moved\r\nCSeq: ${cseq}\r\nLocation: rtsp://127.0.0.1:${port2}/live\r\n\r\n`));
    await new Promise<void>((r) => first.listen(0, '127.0.0.1', r));
    const port1 = (first.address() as { port: number }).port;
    const memo: SourceMemo = {};
    await lastValueFrom(
      ffmpegSource({
        id: 'cam',
        input: { url: `rtsp://${user}:${password}@127.0.0.1:${port1}/live`, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false },
        output,
        ffmpegPath: (await resolveFfmpeg()).path,
        memo,
      }),
    ).catch(() => undefined);
    first.close();
    second.close();
    expect(memo.redirected).toBe(true);
    // ffmpeg's first try followed the redirect with the relay's placeholder (refused), the second with the real credentials.
    expect(valid).toEqual(['bad', 'ok']);
  }, 30_000);
});

describe('an RTSP camera over UDP keeps its credentials off ffmpeg\'s command line: the relay carries its connection, the media go beside it', () => {
  it('ffmpeg is given no password, sets up UDP through the relay, the camera gets the real credentials, and frames come', async () => {
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user: 'admin', password: 'S3cretPw' } });
    const commands: string[] = [];
    const spawn: SpawnFn = (cmd, args, o) => {
      commands.push(args.join(' '));
      return nodeSpawn(cmd, args, o);
    };
    try {
      const frames = await firstValueFrom(
        ffmpegSource({
          id: 'cam',
          input: { url: url.replace('rtsp://', 'rtsp://admin:S3cretPw@'), kind: 'rtsp', rate: 'native', loop: false, rtspTransport: 'udp' },
          output: { width: 96, height: 64, pixelFormat: 'bgr24', align: 'center', padValue: 114 },
          ffmpegPath: (await resolveFfmpeg()).path,
          spawn,
        }).pipe(take(5), toArray()),
      );
      expect(frames).toHaveLength(5);
    } finally {
      await camera.close();
    }
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) expect(c).not.toContain('S3cretPw');
    expect(commands[0]).toMatch(/-rtsp_transport udp .*rtsp:\/\/argus:relay@127\.0\.0\.1:\d+\/live/);
    expect(camera.transports).toContain('udp');
    expect(camera.auths.ok).toBeGreaterThan(0);
    expect(camera.auths.bad).toBe(0);
  }, 60_000);
});
