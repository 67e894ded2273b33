import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, lastValueFrom, take, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { FfmpegInputSpec } from '../../src/sources/ffmpeg-args.js';
import { ffmpegSource, type SpawnFn, type SourceMemo } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';
import { withCameraSource } from '../../src/sources/rtsp-tap.js';
import { exposedSecrets } from '../../src/sources/secrets-relay.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { closedPort, listening, recordingSpawn } from '../helpers/net.js';
import { digestCamera, RtspCamera } from '../helpers/rtsp-camera.js';

const user = 'admin';
const password = 'S3cretPw';
const output = { width: 96, height: 64, pixelFormat: 'bgr24' as const, align: 'center' as const, padValue: 114 };

/** The camera's URL with the credentials, run by ffmpegSource to its end or error: that error (or undefined). */
async function run(url: string, input: Partial<FfmpegInputSpec>, memo: SourceMemo, spawn?: SpawnFn): Promise<Error | undefined> {
  return lastValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'rtsp', rate: 'native', loop: false, ...input }, output, ffmpegPath: (await resolveFfmpeg()).path, memo, spawn })).then(
    () => undefined,
    (e: Error) => e,
  );
}

/** The first 3 frames of an RTSP camera at `url`, read as `input` says. */
async function threeFrames(url: string, input: Partial<FfmpegInputSpec>): Promise<unknown[]> {
  return firstValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'rtsp', rate: 'native', loop: false, ...input }, output, ffmpegPath: (await resolveFfmpeg()).path }).pipe(take(3), toArray()));
}

// A start while the relay waits to be tried again (it was given up a moment ago), and a camera with cameraClock: false.
for (const [name, input, memo] of [
  ['a camera run without its clock (the relay given up), at a start while the relay waits to be tried again', {}, (): SourceMemo => ({ unrelayed: { until: Number.MAX_SAFE_INTEGER }, relayFailures: 1 })],
  ['a camera with cameraClock: false (no clock relay)', { cameraClock: false }, (): SourceMemo => ({})],
] as const) {
  describe(`${name}: its credentials stay off ffmpeg's command line`, () => {
    it('ffmpeg is given no password, the camera gets the real one, and the error names the camera', async () => {
      const seen: boolean[] = [];
      const camera = digestCamera(user, password, (s, cseq, ok) => {
        seen.push(ok);
        s.end(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
      });
      const port = await listening(camera);
      const { spawn, commands } = recordingSpawn();
      const m = memo();
      const failures = m.relayFailures;
      const err = await run(`rtsp://${user}:${password}@127.0.0.1:${port}/live`, input, m, spawn);
      camera.close();
      expect(commands.length).toBeGreaterThan(0);
      for (const c of commands) expect(c).not.toContain(password);
      expect(commands[0]).toMatch(/rtsp:\/\/argus:relay@127\.0\.0\.1:\d+\//);
      expect(seen).toContain(true);
      // ffmpeg's error names the camera, not the relay or its placeholder (and no password).
      expect(err?.message).toBeDefined();
      expect(err!.message).not.toMatch(/argus:relay|S3cretPw/);
      // No relay was given up by this run.
      expect(m.relayFailures).toBe(failures);
    }, 30_000);
  });
}

describe('an RTSP camera that redirects ffmpeg: the relay follows it, the credentials stay off the command line', () => {
  const modes = [
    ['through the camera-clock relay', {}],
    ['with cameraClock: false', { cameraClock: false }],
    ['over UDP', { rtspTransport: 'udp' as const }],
  ] as const;
  for (const [mode, input] of modes) {
    it(`${mode}: to another path of the camera (its origin): the camera gets the real credentials there, ffmpeg none, frames come`, async () => {
      let base = '';
      const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user, password }, moved: (uri) => (uri.endsWith('/old') ? base : undefined) });
      base = url;
      const { spawn, commands } = recordingSpawn();
      try {
        const frames = await firstValueFrom(
          ffmpegSource({ id: 'cam', input: { url: url.replace('rtsp://', `rtsp://${user}:${password}@`).replace(/\/live$/, '/old'), kind: 'rtsp', rate: 'native', loop: false, ...input }, output, ffmpegPath: (await resolveFfmpeg()).path, spawn }).pipe(take(3), toArray()),
        );
        expect(frames).toHaveLength(3);
      } finally {
        await camera.close();
      }
      expect(camera.redirects).toBeGreaterThan(0);
      expect(commands.length).toBeGreaterThan(0);
      for (const c of commands) expect(c).not.toContain(password);
      // After the redirect, ffmpeg's requests name the new path, and are answered with the real credentials.
      expect(camera.heads.some((h) => /^SETUP \S*\/live\//.test(h))).toBe(true);
      expect(camera.auths.ok).toBeGreaterThan(0);
      expect(camera.auths.bad).toBe(0);
    }, 60_000);
  }

  /** A camera at its own port that answers each authenticated DESCRIBE with a redirect to `where(uri)`; the answers it saw. */
  async function redirector(where: (uri: string, port: number) => string): Promise<{ port: number; seen: boolean[]; close: () => void }> {
    const seen: boolean[] = [];
    let port = 0;
    const server = digestCamera(user, password, (s, cseq, ok, _auth, uri) => {
      seen.push(ok);
      s.write(ok ? `RTSP/1.0 302 Moved\r\nCSeq: ${cseq}\r\nLocation: ${where(uri, port)}\r\n\r\n` : `RTSP/1.0 401 Unauthorized\r\nCSeq: ${cseq}\r\n\r\n`);
    });
    port = await listening(server);
    return { port, seen, close: () => server.close() };
  }

  it('to another address (another origin): followed without the credentials (ffmpeg\'s placeholder answer is not sent either), and the failure says why', async () => {
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user, password } });
    const front = await redirector(() => url);
    const { spawn, commands } = recordingSpawn();
    const err = await run(`rtsp://${user}:${password}@127.0.0.1:${front.port}/live`, {}, {}, spawn);
    front.close();
    await camera.close();
    expect(front.seen).toContain(true);
    expect(camera.heads.length).toBeGreaterThan(0);
    for (const h of camera.heads) expect(h).not.toMatch(/authorization/i);
    expect(camera.auths.ok).toBe(0);
    for (const c of commands) expect(c).not.toContain(password);
    expect(err?.message).toMatch(/not sent.*sendCredentialsTo/);
  }, 60_000);

  it('to another address named in sendCredentialsTo: followed with the credentials, frames come', async () => {
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user, password } });
    const front = await redirector(() => url);
    const { spawn, commands } = recordingSpawn();
    try {
      const frames = await firstValueFrom(
        ffmpegSource({ id: 'cam', input: { url: `rtsp://${user}:${password}@127.0.0.1:${front.port}/live`, kind: 'rtsp', rate: 'native', loop: false, sendCredentialsTo: [new URL(url).host] }, output, ffmpegPath: (await resolveFfmpeg()).path, spawn }).pipe(take(3), toArray()),
      );
      expect(frames).toHaveLength(3);
    } finally {
      front.close();
      await camera.close();
    }
    for (const c of commands) expect(c).not.toContain(password);
    expect(camera.auths.ok).toBeGreaterThan(0);
    expect(camera.auths.bad).toBe(0);
  }, 60_000);

  for (const [name, where, why] of [
    ['a loop (the camera redirects to itself)', (uri: string, port: number) => `rtsp://127.0.0.1:${port}${new URL(uri).pathname}`, /redirected in a loop/],
    ['more than 5 redirects in a row', (uri: string, port: number) => `rtsp://127.0.0.1:${port}/live${Number(/(\d+)$/.exec(uri)?.[1] ?? 0) + 1}`, /redirected more than 5 times in a row/],
    ['to another scheme', () => 'http://127.0.0.1:1/live', /not an rtsp:\/\/ or rtsps:\/\/ address/],
  ] as const) {
    it(`${name}: refused, a coded error naming the source and why`, async () => {
      const front = await redirector(where);
      const err = await run(`rtsp://${user}:${password}@127.0.0.1:${front.port}/live`, {}, {});
      front.close();
      expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN' });
      expect(err!.message).toMatch(/^source "cam": the camera at 127\.0\.0\.1:\d+ /);
      expect(err!.message).toMatch(why);
      expect(err!.message).not.toContain(password);
      expect(front.seen.length).toBeLessThanOrEqual(6);
    }, 60_000);
  }
});

describe("an RTSP camera over UDP keeps its credentials off ffmpeg's command line: the relay carries its connection, the media go beside it", () => {
  it('ffmpeg is given no password, sets up UDP through the relay, the camera gets the real credentials, and frames come', async () => {
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user, password } });
    const { spawn, commands } = recordingSpawn();
    try {
      const input = { url: url.replace('rtsp://', `rtsp://${user}:${password}@`), kind: 'rtsp' as const, rate: 'native' as const, loop: false, rtspTransport: 'udp' as const };
      const frames = await firstValueFrom(ffmpegSource({ id: 'cam', input, output, ffmpegPath: (await resolveFfmpeg()).path, spawn }).pipe(take(5), toArray()));
      expect(frames).toHaveLength(5);
    } finally {
      await camera.close();
    }
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) expect(c).not.toContain(password);
    expect(commands[0]).toMatch(/-rtsp_transport udp .*rtsp:\/\/argus:relay@127\.0\.0\.1:\d+\/live/);
    expect(camera.transports).toContain('udp');
    expect(camera.auths.ok).toBeGreaterThan(0);
    expect(camera.auths.bad).toBe(0);
  }, 60_000);

  it("ffmpeg's packets for the camera (NAT punch packets, RTCP receiver reports) go to the camera's address, not the relay's", async () => {
    // A camera at another address than the relay's 127.0.0.1: ffmpeg sends its UDP to the address
    // it spoke RTSP to, unless the camera's Transport reply names its `source`.
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user: 'admin', password: 'S3cretPw' }, host: '127.0.0.2' });
    try {
      const frames = await threeFrames(url.replace('rtsp://', 'rtsp://admin:S3cretPw@'), { rtspTransport: 'udp' });
      expect(frames).toHaveLength(3);
    } finally {
      await camera.close();
    }
    expect(camera.transports).toContain('udp');
    // ffmpeg sends its punch packets before PLAY, when it has set up UDP.
    expect(camera.udpFromClient).toBeGreaterThan(0);
  }, 60_000);
});

describe('an rtsps:// camera with rtspTransport udp: its media stay in its TLS connection, as ffmpeg keeps them', () => {
  it('ffmpeg, given the relay\'s plain rtsp:// URL, is told TCP: the camera is set up interleaved, not with RTP in clear over UDP', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-rtsps-udp-'));
    const [key, cert] = [join(dir, 'cam.key'), join(dir, 'cam.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=cam', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user: 'admin', password: 'S3cretPw' }, tls: { key: readFileSync(key), cert: readFileSync(cert) } });
    try {
      const frames = await threeFrames(url.replace('rtsps://', 'rtsps://admin:S3cretPw@'), { rtspTransport: 'udp', tls: { verify: false } });
      expect(frames).toHaveLength(3);
    } finally {
      await camera.close();
      rmSync(dir, { recursive: true, force: true });
    }
    expect(camera.transports).toEqual(['tcp']);
    expect(camera.udpFromClient).toBe(0);
  }, 60_000);
});

describe('withCameraSource: the camera named as the source of a unicast UDP transport', () => {
  const reply = (transport: string) => `RTSP/1.0 200 OK\r\nCSeq: 3\r\nTransport: ${transport}\r\nSession: 1\r\n\r\n`;
  it('added to unicast UDP without a source (IPv6 as it is: ffmpeg brackets it)', () => {
    expect(withCameraSource(reply('RTP/AVP;unicast;client_port=5000-5001;server_port=6970-6971'), '10.0.0.7')).toBe(reply('RTP/AVP;unicast;client_port=5000-5001;server_port=6970-6971;source=10.0.0.7'));
    expect(withCameraSource(reply('RTP/AVP/UDP;unicast;server_port=6970-6971,RTP/AVP/TCP;interleaved=0-1'), 'fd00::7')).toBe(reply('RTP/AVP/UDP;unicast;server_port=6970-6971;source=fd00::7,RTP/AVP/TCP;interleaved=0-1'));
  });
  it("left as it is: a source of the camera's own, TCP, multicast, a request", () => {
    for (const t of ['RTP/AVP;unicast;source=10.0.0.9;server_port=6970-6971', 'RTP/AVP/TCP;unicast;interleaved=0-1', 'RTP/AVP;multicast;destination=239.1.1.1;port=5000-5001']) expect(withCameraSource(reply(t), '10.0.0.7')).toBe(reply(t));
    const request = 'SETUP rtsp://cam/live RTSP/1.0\r\nTransport: RTP/AVP;unicast;client_port=5000-5001\r\n\r\n';
    expect(withCameraSource(request, '10.0.0.7')).toBe(request);
  });
});

describe("a secret in an RTSP camera's query (?token=) stays off ffmpeg's command line: the relay puts it back", () => {
  const token = 'T0kenS3cret';
  for (const [name, input] of [
    ['through the camera-clock relay (TCP)', {}],
    ['with cameraClock: false (the relay that only passes bytes on)', { cameraClock: false }],
    ['over UDP (the relay carries the RTSP connection)', { rtspTransport: 'udp' as const }],
  ] as const) {
    it(`${name}: ffmpeg is given the placeholder, every request reaches the camera with the real token (and the user's Digest answer for the URI it names), frames come`, async () => {
      const { camera, url } = await RtspCamera.start(PERSON_VIDEO, '320x180', { auth: { user, password }, token });
      const { spawn, commands } = recordingSpawn();
      try {
        const frames = await firstValueFrom(
          ffmpegSource({ id: 'cam', input: { url: `${url.replace('rtsp://', `rtsp://${user}:${password}@`)}?channel=1&token=${token}`, kind: 'rtsp', rate: 'native', loop: false, ...input }, output, ffmpegPath: (await resolveFfmpeg()).path, spawn }).pipe(take(3), toArray()),
        );
        expect(frames).toHaveLength(3);
      } finally {
        await camera.close();
      }
      expect(commands.length).toBeGreaterThan(0);
      for (const c of commands) {
        expect(c).not.toContain(token);
        expect(c).not.toContain(password);
      }
      expect(commands[0]).toMatch(/rtsp:\/\/argus:relay@127\.0\.0\.1:\d+\/live\?channel=1&token=argus-relay/);
      expect(camera.tokens.ok).toBeGreaterThanOrEqual(4); // OPTIONS, DESCRIBE, SETUP, PLAY
      expect(camera.tokens.bad).toBe(0);
      expect(camera.auths.ok).toBeGreaterThan(0);
      expect(camera.auths.bad).toBe(0);
    }, 60_000);
  }
});

describe("secrets that argus's relays cannot carry: a warning names what ffmpeg's command line holds, once per source", () => {
  const notices = async (url: string, input: Partial<FfmpegInputSpec>, memo: SourceMemo = {}): Promise<string[]> => {
    const told: string[] = [];
    await lastValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'stream', rate: 'native', loop: false, ...input }, output, ffmpegPath: (await resolveFfmpeg()).path, memo, onSecretsExposed: (t) => told.push(t) })).catch(() => undefined);
    return told;
  };
  it("an SRT passphrase in the URL, RTMP credentials, RTSP tunnelled in HTTP: named (never their values); a relayed RTSP camera's token and password: not", async () => {
    const port = await closedPort();
    const srt = await notices(`srt://127.0.0.1:${port}?passphrase=SrtPass12345&connect_timeout=200`, {});
    expect(srt).toHaveLength(1);
    expect(srt[0]).toContain("the URL's passphrase=");
    expect(srt[0]).not.toContain('SrtPass12345');
    const rtmp = await notices(`rtmp://admin:${password}@127.0.0.1:${port}/live/cam`, {});
    expect(rtmp[0]).toContain("the URL's user and password");
    expect(rtmp[0]).not.toContain(password);
    const tunnel = await notices(`rtsp://admin:${password}@127.0.0.1:${port}/live?token=x1`, { kind: 'rtsp', rtspTransport: 'http' });
    expect(tunnel[0]).toMatch(/the URL's user and password, the URL's token=/);
    expect(await notices(`rtsp://admin:${password}@127.0.0.1:${port}/live?token=x1`, { kind: 'rtsp' })).toEqual([]);
    expect(await notices(`rtsp://admin:${password}@127.0.0.1:${port}/live?token=x1`, { kind: 'rtsp', cameraClock: false })).toEqual([]);
    // Once per source: a memo that was told is not told again.
    expect(await notices(`srt://127.0.0.1:${port}?passphrase=SrtPass12345&connect_timeout=200`, {}, { exposedNoticed: true })).toEqual([]);
  }, 60_000);

  it("an SRTP camera's master key (-srtp_in_params) is named too", () => {
    expect(exposedSecrets(['-srtp_in_suite', 'AES_CM_128_HMAC_SHA1_80', '-srtp_in_params', 'WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz', '-i', 'srtp://127.0.0.1:5000'])).toEqual(['-srtp_in_params']);
  });
});
