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
import { RtspTap } from '../../src/sources/rtsp-tap.js';

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

  /** A camera with `cert`; what it received; ffmpeg's request sent through a relay checking as `tls` says. */
  async function attempt(cert: ReturnType<typeof selfSigned>, tls?: CameraTls) {
    const received: Buffer[] = [];
    const server = createServer({ key: readFileSync(cert.key), cert: cert.pem }, (s) => {
      s.on('data', (d: Buffer) => received.push(d));
      s.on('error', () => {});
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const tap = new RtspTap(`rtsps://admin:secret@127.0.0.1:${(server.address() as AddressInfo).port}/live`, { tls });
    const relay = new URL(await tap.listen());
    const ffmpeg = connect(Number(relay.port), '127.0.0.1');
    ffmpeg.on('error', () => {});
    ffmpeg.write(`OPTIONS ${relay.href} RTSP/1.0\r\nCSeq: 1\r\nAuthorization: Basic YWRtaW46c2VjcmV0\r\n\r\n`);
    const closed = new Promise<boolean>((r) => ffmpeg.once('close', () => r(true)));
    const deadline = Date.now() + 5000;
    while (!received.length && Date.now() < deadline && !ffmpeg.destroyed) await Promise.race([closed, new Promise((r) => setTimeout(r, 10))]);
    const text = Buffer.concat(received).toString();
    const log = tap.unrelay('');
    ffmpeg.destroy();
    tap.close();
    return { text, log };
  }

  it('by default (the system\'s CAs): a self-signed camera is refused, nothing reaches it, and the error says why with its fingerprint', async () => {
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

  it('verify: false takes any certificate', async () => {
    expect((await attempt(byName, { verify: false })).text).toContain('OPTIONS');
  });

  it('a CA file that cannot be read: a coded config error naming tls.ca', async () => {
    const tap = new RtspTap('rtsps://127.0.0.1:7441/live', { tls: { verify: true, ca: join(dir, 'missing.pem') } });
    await expect(tap.listen()).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringContaining(`tls.ca: cannot read ${join(dir, 'missing.pem')} (ENOENT)`) });
  });
});
