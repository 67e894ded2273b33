// An rtsps:// camera's certificate, checked by argus's relay (sources/rtsp-tap.ts) before
// anything of ffmpeg's (its request, with the camera's credentials) reaches the camera. A real
// TLS server with openssl's certificates stands for the camera; the test speaks as ffmpeg.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CameraTls } from '../../src/core/rtsp-relay.js';
import { lastValueFrom } from 'rxjs';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { fakeDetector } from '../helpers/fake-session.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';
import { resolveFfmpegSync } from '../../src/sources/ffmpeg-path.js';
import { readCameraCa, RtspTap } from '../../src/sources/rtsp-tap.js';

const dir = mkdtempSync(join(tmpdir(), 'argus-rtsps-check-'));

/** A self-signed certificate for `san` (e.g. IP:127.0.0.1), as cameras have. */
function selfSigned(name: string, san: string): { key: string; cert: string; pem: Buffer; fingerprint: string } {
  const [key, cert] = [join(dir, `${name}.key`), join(dir, `${name}.pem`)];
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`, '-addext', `subjectAltName=${san}`], { stdio: 'ignore' });
  const pem = readFileSync(cert);
  return { key, cert, pem, fingerprint: new X509Certificate(pem).fingerprint256 };
}

describe('rtsps:// cameras: the relay checks the certificate before anything of ffmpeg\'s is sent', () => {
  let byIp: ReturnType<typeof selfSigned>;
  let byName: ReturnType<typeof selfSigned>;
  beforeAll(() => {
    byIp = selfSigned('cam-ip', 'IP:127.0.0.1');
    byName = selfSigned('camera.local', 'DNS:camera.local');
  });
  const servers: { close(): void }[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  /** A camera with `cert` (answering each request with `reply`, if given); what it received; ffmpeg's request sent through a relay checking as `tls` says; what ffmpeg got back. */
  async function attempt(cert: ReturnType<typeof selfSigned>, tls?: CameraTls, reply?: string) {
    const received: Buffer[] = [];
    const server = createServer({ key: readFileSync(cert.key), cert: cert.pem }, (s) => {
      s.on('data', (d: Buffer) => {
        received.push(d);
        if (reply) s.write(reply);
      });
      s.on('error', () => {});
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const tap = new RtspTap(`rtsps://admin:secret@127.0.0.1:${(server.address() as AddressInfo).port}/live`, { tls });
    const relay = new URL(await tap.listen());
    const ffmpeg = connect(Number(relay.port), '127.0.0.1');
    ffmpeg.on('error', () => {});
    const back: Buffer[] = [];
    ffmpeg.on('data', (d: Buffer) => back.push(d));
    ffmpeg.write(`OPTIONS ${relay.href} RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic YWRtaW46c2VjcmV0\r\n\r\n`);
    const closed = new Promise<boolean>((r) => ffmpeg.once('close', () => r(true)));
    const deadline = Date.now() + 5000;
    while ((reply ? !ffmpeg.destroyed && !back.length : !received.length) && Date.now() < deadline && !ffmpeg.destroyed) await Promise.race([closed, new Promise((r) => setTimeout(r, 10))]);
    if (reply) await Promise.race([closed, new Promise((r) => setTimeout(r, 300))]);
    const text = Buffer.concat(received).toString();
    const answer = Buffer.concat(back).toString();
    const log = tap.unrelay('');
    ffmpeg.destroy();
    tap.close();
    return { text, log, answer };
  }

  it('by default (Node\'s public CAs): a self-signed camera is refused, nothing reaches it, and the error says why with its fingerprint', async () => {
    const { text, log } = await attempt(byIp);
    expect(text).toBe('');
    expect(log).toContain('camera: 127.0.0.1:');
    expect(log).toContain(`certificate not trusted (self-signed certificate; its SHA-256 fingerprint ${byIp.fingerprint})`);
    expect(log).toMatch(/tls\.ca.*tls\.fingerprint.*verify: false/);
  });

  it('pinned by fingerprint: that certificate is taken (whoever signed it, whatever its name), another one refused', async () => {
    expect((await attempt(byIp, { verify: true, fingerprint: byIp.fingerprint })).text).toContain('OPTIONS');
    const other = await attempt(byName, { verify: true, fingerprint: byIp.fingerprint });
    expect(other.text).toBe('');
    expect(other.log).toContain(`its certificate (SHA-256 ${byName.fingerprint}) is not the one tls.fingerprint names`);
  });

  it('a CA file: a certificate it signs for the address is taken; one for another name is refused, naming the mismatch', async () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, Buffer.concat([byIp.pem, byName.pem]));
    expect((await attempt(byIp, { verify: true, ca })).text).toContain('OPTIONS');
    const wrongName = await attempt(byName, { verify: true, ca });
    expect(wrongName.text).toBe('');
    expect(wrongName.log).toMatch(/certificate not trusted \(.*IP: 127\.0\.0\.1 is not in the cert's list/);
  });

  it('a checked camera that redirects to plain rtsp://: refused (nothing would be checked there), nothing passed on, and the error says so', async () => {
    const moved = 'RTSP/1.0 302 Moved\r\nCSeq: 1\r\nLocation: rtsp://127.0.0.1:1/elsewhere\r\n\r\n';
    const r = await attempt(byIp, { verify: true, fingerprint: byIp.fingerprint }, moved);
    expect(r.text).toContain('OPTIONS'); // the camera itself was checked, and reached
    expect(r.answer).toBe('');
    expect(r.log).toContain('redirected from rtsps:// to plain rtsp://127.0.0.1:1/elsewhere, where no certificate is checked');
    // A plain reply goes through.
    expect((await attempt(byIp, { verify: true, fingerprint: byIp.fingerprint }, 'RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: DESCRIBE\r\n\r\n')).answer).toContain('200 OK');
  });

  it('a checked camera that redirects to another rtsps:// address: followed through the relay, that address\'s certificate checked as the camera\'s before anything of ffmpeg\'s reaches it', async () => {
    /** A TLS server with `cert`, answering each request with `reply`; what it received. */
    const tlsServer = async (cert: ReturnType<typeof selfSigned>, reply: (port: number) => string) => {
      const received: string[] = [];
      const server = createServer({ key: readFileSync(cert.key), cert: cert.pem }, (s) => {
        s.on('data', (d: Buffer) => {
          received.push(d.toString());
          s.write(reply(port));
        });
        s.on('error', () => {});
      });
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      return { port, received };
    };
    /** ffmpeg's side: OPTIONS to `url`, and what came back before the connection closed (or 2 s). */
    const ask = (url: URL) =>
      new Promise<string>((resolve) => {
        const s = connect(Number(url.port), '127.0.0.1', () => s.write(`OPTIONS ${url.href} RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic YXJndXM6cmVsYXk=\r\n\r\n`));
        let text = '';
        const done = () => {
          s.destroy();
          resolve(text);
        };
        s.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('\r\n\r\n')) done();
        });
        s.on('error', () => {});
        s.on('close', done);
        setTimeout(done, 2000);
      });
    for (const [cert, taken] of [
      [byName, false],
      [byIp, true],
    ] as const) {
      const target = await tlsServer(cert, () => 'RTSP/1.0 200 OK\r\nCSeq: 1\r\nPublic: DESCRIBE\r\n\r\n');
      const front = await tlsServer(byIp, () => `RTSP/1.0 302 Moved\r\nCSeq: 1\r\nLocation: rtsps://127.0.0.1:${target.port}/elsewhere?token=T0ken\r\n\r\n`);
      const tap = new RtspTap(`rtsps://admin:secret@127.0.0.1:${front.port}/live`, { tls: { verify: true, fingerprint: byIp.fingerprint } });
      const relay = new URL(await tap.listen());
      const answer = await ask(relay);
      // ffmpeg is sent back to the relay (the new path, the token as the placeholder).
      expect(answer).toContain(`Location: rtsp://127.0.0.1:${relay.port}/elsewhere?token=argus-relay\r\n`);
      const next = await ask(new URL(`rtsp://127.0.0.1:${relay.port}/elsewhere?token=argus-relay`));
      const log = tap.unrelay('');
      tap.close();
      if (!taken) {
        expect(next).toBe('');
        expect(target.received).toEqual([]);
        expect(log).toContain(`127.0.0.1:${target.port}: its certificate (SHA-256 ${byName.fingerprint}) is not the one tls.fingerprint names`);
      } else {
        expect(next).toContain('200 OK');
        // Another port, another origin: the token it was given goes back, the camera's credentials do not (nor ffmpeg's placeholder answer).
        expect(target.received.join('')).toContain('/elsewhere?token=T0ken RTSP/1.0');
        expect(target.received.join('')).not.toMatch(/authorization/i);
      }
    }
  });

  it('verify: false takes any certificate', async () => {
    expect((await attempt(byName, { verify: false })).text).toContain('OPTIONS');
  });

  it('a CA file that cannot be read: a coded config error naming tls.ca', async () => {
    const tap = new RtspTap('rtsps://127.0.0.1:7441/live', { tls: { verify: true, ca: join(dir, 'missing.pem') } });
    await expect(tap.listen()).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringContaining(`tls.ca: ${join(dir, 'missing.pem')}: cannot be read (ENOENT)`) });
  });

  it('a CA file that holds no certificate, a key, a DER file or a broken block: a config error naming the file and the block (taken as it was, it trusted nothing, and the error blamed the camera)', async () => {
    const file = (name: string, content: Buffer | string) => {
      const p = join(dir, name);
      writeFileSync(p, content);
      return p;
    };
    const key = readFileSync(byIp.key, 'utf8');
    const der = new X509Certificate(byIp.pem).raw;
    const cases: [string, string][] = [
      [file('empty.pem', ''), 'holds no PEM certificate'],
      [file('text.pem', 'not a certificate\n'), 'holds no PEM certificate'],
      [file('der.pem', der), 'holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER file is converted'],
      [file('key.pem', key), 'block 1 is a private key'],
      [file('keyca.pem', `${byIp.pem}\n${key}`), 'block 2 is a private key'],
      [file('cut.pem', `-----BEGIN CERTIFICATE-----\nMIIB\n${byIp.pem}`), 'holds a PEM block that does not end as it begins'],
      [file('junk.pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), 'block 1 is not a readable certificate'],
    ];
    for (const [path, why] of cases) await expect(readCameraCa(path), path).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringContaining(`tls.ca: ${path}: ${why}`) });
    await expect(readCameraCa(file('two.pem', Buffer.concat([byIp.pem, byName.pem])))).resolves.toBeInstanceOf(Buffer);
  });

  it('a pipeline whose rtsps:// camera names a CA file that is not one does not start: a config error naming the field (it was retried for ever)', async () => {
    const { detector } = await fakeDetector();
    try {
      writeFileSync(join(dir, 'notes.pem'), 'the camera CA is on the NAS\n');
      const config = PipelineSchema.parse({ sources: [{ id: 'cam', uri: 'rtsps://127.0.0.1:7441/live', tls: { ca: 'notes.pem' } }] });
      await expect(runPipeline(config, { detector, baseDir: dir, status: false })).rejects.toMatchObject({
        code: 'VAP_ERR_CONFIG',
        message: expect.stringContaining(`sources[0].tls.ca: ${join(dir, 'notes.pem')}: holds no PEM certificate`),
      });
    } finally {
      await detector.release();
    }
  });

  it('ffmpegSource refuses an rtsps:// input without the relay whose certificate is to be checked (a caller that builds its own input: bench)', async () => {
    const input = { url: 'rtsps://127.0.0.1:7441/live', kind: 'rtsp' as const, rate: 'native' as const, loop: false, rtspTransport: 'http' as const };
    const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
    const err = await lastValueFrom(ffmpegSource({ id: 'cam', input, output, ffmpegPath: '/nonexistent/ffmpeg' })).catch((e) => e);
    expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN', message: expect.stringContaining('an rtsps:// camera without argus\'s relay') });
  });

  it("cameraClock: false: the camera's certificate is still checked, by a relay that only passes the bytes on (ffmpeg's own RTSPS checks nothing)", async () => {
    const camera = selfSigned('cam-noclock', 'IP:127.0.0.1');
    const received: string[] = [];
    const server = createServer({ key: readFileSync(camera.key), cert: camera.pem }, (s) => {
      s.on('data', (d: Buffer) => {
        received.push(d.toString());
        s.end('RTSP/1.0 404 Not Found\r\nCSeq: 1\r\n\r\n');
      });
      s.on('error', () => {});
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `rtsps://admin:secret@127.0.0.1:${(server.address() as AddressInfo).port}/live`;
    const output = { width: 32, height: 32, pixelFormat: 'bgr24' as const, align: 'top-left' as const, padValue: 114 };
    const run = (tls: CameraTls) =>
      lastValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'rtsp', rate: 'native', loop: false, cameraClock: false, tls }, output, ffmpegPath: resolveFfmpegSync().path })).catch((e: Error) => e);
    // Not trusted: refused before anything of ffmpeg's reached the camera, and the error says why.
    const refused = await run({ verify: true });
    expect(received).toEqual([]);
    expect(String(refused)).toContain(`certificate not trusted (self-signed certificate; its SHA-256 fingerprint ${camera.fingerprint})`);
    // Pinned: ffmpeg's request reaches the camera, with the real credentials added by the relay.
    await run({ verify: true, fingerprint: camera.fingerprint });
    expect(received.join('')).toMatch(/^OPTIONS rtsps?:\/\/127\.0\.0\.1:\d+\/live RTSP\/1\.0/);
  }, 30_000);
});
