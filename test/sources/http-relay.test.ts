// An HTTP(S) camera's credentials kept off ffmpeg's command line (sources/http-relay.ts): real
// ffmpeg reads an MPEG-TS feed from a local server that demands Digest or Basic auth, through
// argus's relay, given only the placeholder.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as httpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as httpsServer } from 'node:https';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { ffmpegSource, loopbackUnproxied } from '../../src/sources/ffmpeg-source.js';
import { HttpRelay, HttpReplies, httpProxyOf, httpRelayUrl, httpSecrets, noProxyMatches } from '../../src/sources/http-relay.js';
import { AuthRewriter } from '../../src/sources/rtsp-auth.js';
import { MIRROR } from '../helpers/assets.js';
import { closedPort, listening, recordingSpawn } from '../helpers/net.js';

const md5 = (s: string) => createHash('md5').update(s, 'latin1').digest('hex');
const dir = mkdtempSync(join(tmpdir(), 'argus-http-relay-'));
const user = 'admin';
const output = { width: 96, height: 64, pixelFormat: 'bgr24' as const, align: 'center' as const, padValue: 114 };
const password = 'S3cret:Pw';
let feed: Buffer;

beforeAll(() => {
  // One second of the shared clip as MPEG-TS: what an HTTP camera sends.
  const ts = join(dir, 'feed.ts');
  execFileSync(defaultFfmpegPath(), ['-hide_banner', '-loglevel', 'error', '-i', join(MIRROR, 'streams', 'one-by-one-person-detection.mp4'), '-t', '1', '-c', 'copy', '-f', 'mpegts', ts]);
  feed = readFileSync(ts);
});

/** A camera's handler: the feed to a request with valid credentials (`scheme`), a 401 challenge otherwise; what it saw. */
function camera(scheme: 'digest' | 'basic') {
  const seen: { auth: 'none' | 'ok' | 'bad'; host: string | undefined }[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const auth = req.headers.authorization;
    let ok = false;
    if (auth && scheme === 'basic') ok = auth === `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
    else if (auth && scheme === 'digest') {
      const p = Object.fromEntries([...auth.matchAll(/(\w+)="?([^",]*)"?/g)].map((m) => [m[1], m[2]]));
      const ha1 = md5(`${user}:cam:${password}`);
      const ha2 = md5(`${req.method}:${p.uri}`);
      // (As RFC 2617 asks of a server: the answer's uri is the request's own.)
      ok = p.username === user && p.uri === req.url && p.response === md5(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:${p.qop}:${ha2}`);
    }
    seen.push({ auth: auth ? (ok ? 'ok' : 'bad') : 'none', host: req.headers.host });
    if (!ok) {
      res.writeHead(401, { 'WWW-Authenticate': scheme === 'digest' ? 'Digest realm="cam", nonce="n0nce", qop="auth"' : 'Basic realm="cam"', 'Content-Length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'video/mp2t' });
    res.end(feed);
  };
  return { seen, handler };
}

describe("an HTTP(S) camera's user and password stay off ffmpeg's command line", () => {
  const servers: { close(): void }[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  /** A camera that sends the feed to a request `ok` takes, and answers others with `refusal`; its port. Each request is given to `seen` first. */
  async function feedCamera(ok: (req: IncomingMessage) => boolean, refusal: number, seen: (req: IncomingMessage) => void): Promise<number> {
    const server = httpServer((req, res) => {
      seen(req);
      if (!ok(req)) {
        res.writeHead(refusal, { 'Content-Length': '0' });
        res.end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'video/mp2t' });
      res.end(feed);
    });
    servers.push(server);
    return listening(server);
  }

  /** The first 3 frames of `url` (with `inputArgs`), and every ffmpeg's command line. */
  async function threeFrames(url: string, inputArgs?: string[]): Promise<{ frames: unknown[]; commands: string[] }> {
    const { spawn, commands } = recordingSpawn();
    const frames = await firstValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'http', rate: 'native', loop: false, inputArgs }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(3), toArray()));
    return { frames, commands };
  }

  for (const [name, scheme, tls] of [
    ['http://, Digest', 'digest', false],
    ['https://, Basic', 'basic', true],
  ] as const) {
    it(`${name}: ffmpeg is given the placeholder, the camera gets the real ones (and its own Host), frames come`, async () => {
      const cam = camera(scheme);
      let server;
      if (tls) {
        const [key, cert] = [join(dir, 'cam.key'), join(dir, 'cam.pem')];
        execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=cam', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
        server = httpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, cam.handler);
      } else server = httpServer(cam.handler);
      servers.push(server);
      const port = await listening(server);
      const { spawn, commands } = recordingSpawn();
      const url = `${tls ? 'https' : 'http'}://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/video/feed.ts?ch=1`;
      const frames = await firstValueFrom(
        ffmpegSource({ id: 'cam', input: { url, kind: 'http', rate: 'native', loop: false }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(5), toArray()),
      );
      expect(frames).toHaveLength(5);
      expect(commands.length).toBeGreaterThan(0);
      for (const c of commands) {
        expect(c).not.toContain('S3cret');
        expect(c).toMatch(/ -i http:\/\/argus:relay@127\.0\.0\.1:\d+\/video\/feed\.ts\?ch=1 /);
      }
      expect(cam.seen.map((s) => s.auth)).toContain('ok');
      expect(cam.seen.map((s) => s.auth)).not.toContain('bad');
      expect(new Set(cam.seen.map((s) => s.host))).toEqual(new Set([`127.0.0.1:${port}`]));
    }, 30_000);
  }

  it("an https:// camera with inputArgs -tls_verify 1 (ffmpeg's own check, which it made without the relay): an impostor's certificate is refused, and it gets no credentials", async () => {
    const cam = camera('basic');
    const [key, cert] = [join(dir, 'impostor.key'), join(dir, 'impostor.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=impostor', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const server = httpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, cam.handler);
    servers.push(server);
    const port = await listening(server);
    const { spawn, commands } = recordingSpawn();
    const source = (inputArgs: string[]) =>
      firstValueFrom(
        ffmpegSource({ id: 'cam', input: { url: `https://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/feed.ts`, kind: 'http', rate: 'native', loop: false, inputArgs }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(2), toArray()),
      ).catch((e: Error) => e);
    const err = await source(['-tls_verify', '1']);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/self[- ]signed/);
    expect((err as Error).message).not.toMatch(/S3cret|argus:relay/);
    expect(cam.seen).toEqual([]);
    // Its own authority given as -ca_file: taken.
    expect(await source(['-tls_verify', '1', '-ca_file', cert])).toHaveLength(2);
    expect(cam.seen.map((s) => s.auth)).toContain('ok');
    // ffmpeg, speaking plain HTTP to the relay, is not given the TLS options (it failed on them: "Option tls_verify not found").
    for (const c of commands) expect(c).not.toMatch(/-tls_verify|-ca_file/);
  }, 30_000);

  it("a camera whose password is in its query (cheap cameras' CGI: loginpas=): ffmpeg is given the placeholder, the camera gets the real value, frames come", async () => {
    const seen: string[] = [];
    const query = '/livestream.cgi?loginuse=admin&loginpas=S3cretPw&res=0';
    const port = await feedCamera((req) => req.url === query, 401, (req) => seen.push(req.url ?? ''));
    const { frames, commands } = await threeFrames(`http://127.0.0.1:${port}${query}`);
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toContain('S3cretPw');
    expect(commands[0]).toContain('/livestream.cgi?loginuse=admin&loginpas=argus-relay&res=0');
    expect(seen[0]).toBe('/livestream.cgi?loginuse=admin&loginpas=S3cretPw&res=0');
  }, 30_000);

  it('a secret parameter given twice (?token=a&token=b): each value reaches the camera as given, in order (one placeholder for both sent token=b&token=b)', async () => {
    const seen: string[] = [];
    const query = '/live.cgi?token=F1rstT0k&res=0&token=S3condT0k';
    const port = await feedCamera((req) => req.url === query, 401, (req) => seen.push(req.url ?? ''));
    const { frames, commands } = await threeFrames(`http://127.0.0.1:${port}${query}`);
    expect(seen[0]).toBe(query);
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toMatch(/F1rstT0k|S3condT0k/);
    expect(commands[0]).toContain('/live.cgi?token=argus-relay&res=0&token=argus-relay-2');
  }, 30_000);

  it("Digest and a secret in the query together: the answer's uri is the request's as the camera gets it, with the real value (a camera checks they are one), hashed so", async () => {
    const cam = camera('digest');
    const server = httpServer(cam.handler);
    servers.push(server);
    const port = await listening(server);
    const { frames, commands } = await threeFrames(`http://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/video/feed.ts?ch=1&pwd=Q7secret`);
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toMatch(/Q7secret|S3cret/);
    expect(cam.seen.map((s) => s.auth)).toContain('ok');
    expect(cam.seen.map((s) => s.auth)).not.toContain('bad');
  }, 30_000);

  it("a camera that sets its session cookie for its own name (Domain=): ffmpeg, which holds the relay's 127.0.0.1, keeps it and sends it back on the next request (beside the source's -cookies), frames come", async () => {
    const seen: { url: string; cookie?: string }[] = [];
    const port = await feedCamera(
      (req) => req.url === '/feed.ts' && /(^|; )session=S3ss10n(;|$)/.test(req.headers.cookie ?? '') && /(^|; )lang=en(;|$)/.test(req.headers.cookie ?? ''),
      403,
      (req) => seen.push({ url: req.url ?? '', cookie: req.headers.cookie }),
    );
    // The login answers with the session for the camera's name, and sends ffmpeg on to the feed.
    const login = httpServer((req, res) => {
      if (req.headers.authorization !== `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`) {
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="cam"', 'Content-Length': '0' });
        res.end();
        return;
      }
      res.writeHead(302, { 'Set-Cookie': 'session=S3ss10n; Domain=localhost; Path=/; HttpOnly', Location: `http://localhost:${port}/feed.ts`, 'Content-Length': '0' });
      res.end();
    });
    servers.push(login);
    const loginPort = await listening(login);
    const { spawn, commands } = recordingSpawn();
    const frames = await firstValueFrom(
      ffmpegSource({ id: 'cam', input: { url: `http://${user}:${encodeURIComponent(password)}@localhost:${loginPort}/login.cgi`, kind: 'http', rate: 'native', loop: false, inputArgs: ['-cookies', 'lang=en; path=/'], sendCredentialsTo: ['localhost'] }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(3), toArray()),
    );
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toMatch(/S3cret|S3ss10n/);
    expect(seen[0]).toEqual({ url: '/feed.ts', cookie: 'lang=en; session=S3ss10n' });
  }, 30_000);

  it('a camera reached with -headers and -cookies input arguments (a bearer token, a session): the relay sends them, ffmpeg is not given them, and the headers replace ffmpeg\'s own of the same name', async () => {
    const seen: { auth?: string; cookie?: string; agents: string[] }[] = [];
    const port = await feedCamera(
      (req) => req.headers.authorization === 'Bearer T0kenXYZ' && req.headers.cookie === 'session=Sess10n; lang=en',
      403,
      (req) => seen.push({ auth: req.headers.authorization, cookie: req.headers.cookie, agents: req.rawHeaders.flatMap((h, i) => (i % 2 === 0 && h.toLowerCase() === 'user-agent' ? [req.rawHeaders[i + 1]] : [])) }),
    );
    const inputArgs = ['-headers', 'Authorization: Bearer T0kenXYZ\r\nUser-Agent: cam-client\r\n', '-cookies', 'session=Sess10n; path=/; domain=127.0.0.1\nlang=en; path=/'];
    const { frames, commands } = await threeFrames(`http://127.0.0.1:${port}/feed.ts`, inputArgs);
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toMatch(/T0kenXYZ|Sess10n|-headers|-cookies/);
    expect(seen[0]).toEqual({ auth: 'Bearer T0kenXYZ', cookie: 'session=Sess10n; lang=en', agents: ['cam-client'] });
  }, 30_000);

  it('with http_proxy in the environment (no_proxy without 127.0.0.1): ffmpeg still reaches the relay directly, and frames come', async () => {
    const cam = camera('basic');
    const server = httpServer(cam.handler);
    servers.push(server);
    const port = await listening(server);
    const saved = { http_proxy: process.env.http_proxy, no_proxy: process.env.no_proxy };
    // A proxy that is not there: ffmpeg sent its request for the relay's 127.0.0.1 to it, and failed.
    process.env.http_proxy = `http://127.0.0.1:${await closedPort()}`;
    // (The camera, named in no_proxy, is reached directly by the relay: the relay goes through http_proxy as ffmpeg would, for other hosts.)
    process.env.no_proxy = 'example.com,localhost';
    try {
      const frames = await firstValueFrom(
        ffmpegSource({ id: 'cam', input: { url: `http://${user}:${encodeURIComponent(password)}@localhost:${port}/feed.ts`, kind: 'http', rate: 'native', loop: false }, output, ffmpegPath: defaultFfmpegPath() }).pipe(take(2), toArray()),
      );
      expect(frames).toHaveLength(2);
    } finally {
      for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    expect(loopbackUnproxied({ no_proxy: 'a.b' }).no_proxy).toBe('a.b,127.0.0.1');
    // (ffmpeg reads no_proxy only: a '*' in NO_PROXY alone is given it there.)
    expect(loopbackUnproxied({ NO_PROXY: '*' }).no_proxy).toBe('*');
    expect(loopbackUnproxied({ no_proxy: '*' })).toEqual({ no_proxy: '*' });
    expect(loopbackUnproxied({}).no_proxy).toBe('127.0.0.1');
  }, 30_000);

  it("a camera that refuses the credentials: the error names the camera, not the relay, and holds neither password nor placeholder", async () => {
    const server = httpServer((_req, res) => {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="cam"', 'Content-Length': '0' });
      res.end();
    });
    servers.push(server);
    const port = await listening(server);
    const err = await firstValueFrom(
      ffmpegSource({ id: 'cam', input: { url: `http://${user}:S3cretPw@127.0.0.1:${port}/feed.ts`, kind: 'http', rate: 'native', loop: false }, output, ffmpegPath: defaultFfmpegPath() }),
    ).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain(`127.0.0.1:${port}`);
    // ffmpeg's own lines about its connection name the camera too.
    expect(message).toContain(`Starting connection attempt to 127.0.0.1 port ${port} (through argus's relay)`);
    expect(message).not.toMatch(/S3cretPw|argus:relay/);
  }, 30_000);

  it("another user's connection to the relay is closed before anything reaches the camera", async () => {
    const reached: string[] = [];
    const server = httpServer((req, res) => {
      reached.push(req.url ?? '');
      res.end();
    });
    servers.push(server);
    const port = await listening(server);
    const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${port}/x`, { peerCheck: async () => 'foreign' });
    const at = new URL(await relay.listen());
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect(Number(at.port), '127.0.0.1', () => s.write(`GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ${Buffer.from('argus:relay').toString('base64')}\r\n\r\n`));
      s.on('close', () => resolve(true));
      s.on('error', () => {});
    });
    relay.close();
    expect(closed).toBe(true);
    expect(reached).toEqual([]);
  });
});

describe('an HTTP(S) camera that redirects ffmpeg: the relay follows it, the credentials stay off the command line', () => {
  const servers: { close(): void }[] = [];
  afterAll(() => servers.forEach((s) => s.close()));
  const basic = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

  /** A server answering with `handle`; each request (URL and Authorization) noted in `seen`; its port. */
  async function server(handle: (req: IncomingMessage, res: ServerResponse, port: number) => void) {
    const seen: { url: string; auth?: string; bearer?: boolean }[] = [];
    let port = 0;
    const srv = httpServer((req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization });
      handle(req, res, port);
    });
    servers.push(srv);
    port = await listening(srv);
    return { port, seen };
  }
  const moved = (res: ServerResponse, location: string) => {
    res.writeHead(302, { Location: location, 'Content-Length': '0' });
    res.end();
  };
  /** The feed to a request with the camera's Basic credentials, else a 401 challenge. */
  const feedWithAuth = (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.authorization !== basic) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="cam"', 'Content-Length': '0' });
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'video/mp2t' });
    res.end(feed);
  };
  const source = (url: string, spawn: ReturnType<typeof recordingSpawn>['spawn'], more: { sendCredentialsTo?: string[]; inputArgs?: string[] } = {}) =>
    firstValueFrom(ffmpegSource({ id: 'cam', input: { url, kind: 'http', rate: 'native', loop: false, ...more }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(3), toArray())).catch((e: Error) => e);

  it('to an absolute URL on the camera (its origin): followed through the relay, the camera gets the real credentials there, frames come', async () => {
    const cam = await server((req, res, port) => (req.url === '/old.ts' ? moved(res, `http://127.0.0.1:${port}/video/feed.ts`) : feedWithAuth(req, res)));
    const { spawn, commands } = recordingSpawn();
    const frames = await source(`http://${user}:${encodeURIComponent(password)}@127.0.0.1:${cam.port}/old.ts`, spawn);
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toContain('S3cret');
    expect(cam.seen.filter((s) => s.url === '/video/feed.ts').map((s) => s.auth)).toContain(basic);
  }, 30_000);

  it("an HLS playlist redirected to another origin (a CDN, its token in the query): the relay takes ffmpeg there and to its segments (an absolute path: the new origin's), with the token, never the camera's credentials or -headers", async () => {
    const cdn = await server((req, res) => {
      if (req.url === '/live/index.m3u8?token=CdnT0ken') {
        res.writeHead(200, { 'Content-Type': 'application/vnd.apple.mpegurl' });
        res.end('#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:1.0,\n/seg/0.ts\n#EXT-X-ENDLIST\n');
      } else if (req.url === '/seg/0.ts') {
        res.writeHead(200, { 'Content-Type': 'video/mp2t', 'Content-Length': String(feed.length) });
        res.end(feed);
      } else {
        res.writeHead(404, { 'Content-Length': '0' });
        res.end();
      }
    });
    const cam = await server((req, res) => (req.headers.authorization === basic ? moved(res, `http://127.0.0.1:${cdn.port}/live/index.m3u8?token=CdnT0ken`) : feedWithAuth(req, res)));
    const { spawn, commands } = recordingSpawn();
    const frames = await source(`http://${user}:${encodeURIComponent(password)}@127.0.0.1:${cam.port}/cam.m3u8`, spawn, { inputArgs: ['-headers', 'X-Api-Key: K3yXYZ\r\n'] });
    expect(frames).toHaveLength(3);
    for (const c of commands) expect(c).not.toMatch(/S3cret|CdnT0ken|K3yXYZ/);
    expect(cdn.seen.map((s) => s.url)).toEqual(expect.arrayContaining(['/live/index.m3u8?token=CdnT0ken', '/seg/0.ts']));
    expect(cdn.seen.every((s) => s.auth === undefined)).toBe(true);
  }, 30_000);

  it('to another origin that wants the credentials: not sent (the failure says why); sent where sendCredentialsTo names it, and frames come', async () => {
    const other = await server(feedWithAuth);
    const cam = await server((_req, res) => moved(res, `http://127.0.0.1:${other.port}/feed.ts`));
    const { spawn, commands } = recordingSpawn();
    const url = `http://${user}:${encodeURIComponent(password)}@127.0.0.1:${cam.port}/feed.ts`;
    const err = await source(url, spawn);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/where its credentials are not sent.*sendCredentialsTo/);
    expect(other.seen.length).toBeGreaterThan(0);
    expect(other.seen.every((s) => s.auth === undefined)).toBe(true);
    expect(await source(url, spawn, { sendCredentialsTo: [`127.0.0.1:${other.port}`] })).toHaveLength(3);
    expect(other.seen.map((s) => s.auth)).toContain(basic);
    for (const c of commands) expect(c).not.toContain('S3cret');
  }, 30_000);

  it('an https:// camera checked with -tls_verify 1: the address it redirects to is checked alike (an untrusted certificate refused before any request), and plain http:// is refused', async () => {
    const certOf = (name: string) => {
      const [key, cert] = [join(dir, `${name}.key`), join(dir, `${name}.pem`)];
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      return { key: readFileSync(key), cert: readFileSync(cert), path: cert };
    };
    const [good, bad] = [certOf('redirecting'), certOf('untrusted')];
    const reached: string[] = [];
    const impostor = httpsServer({ key: bad.key, cert: bad.cert }, (req, res) => {
      reached.push(req.url ?? '');
      feedWithAuth(req, res);
    });
    servers.push(impostor);
    const impostorPort = await listening(impostor);
    let to = '';
    const cam = httpsServer({ key: good.key, cert: good.cert }, (_req, res) => moved(res, to));
    servers.push(cam);
    const port = await listening(cam);
    const { spawn } = recordingSpawn();
    const url = `https://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/feed.ts`;
    to = `https://127.0.0.1:${impostorPort}/feed.ts`;
    const err = await source(url, spawn, { inputArgs: ['-tls_verify', '1', '-ca_file', good.path], sendCredentialsTo: ['127.0.0.1'] });
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/self[- ]signed/);
    expect(reached).toEqual([]);
    to = `http://127.0.0.1:${impostorPort}/feed.ts`;
    const plain = await source(url, spawn, { inputArgs: ['-tls_verify', '1', '-ca_file', good.path] });
    expect(plain).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN' });
    expect((plain as Error).message).toContain(`redirected from https:// to plain http://127.0.0.1:${impostorPort}/feed.ts, where no certificate is checked`);
    expect(reached).toEqual([]);
  }, 30_000);

  for (const [name, where, why] of [
    ['a loop', (url: string, port: number) => `http://127.0.0.1:${port}${url === '/a.ts' ? '/b.ts' : '/a.ts'}`, /redirected in a loop/],
    ['more than 5 redirects in a row', (url: string) => `/n${Number(/(\d+)/.exec(url)?.[1] ?? 0) + 1}.ts`, /redirected more than 5 times in a row/],
    ['to another scheme', () => 'rtsp://127.0.0.1:1/live', /not an http:\/\/ or https:\/\/ address/],
  ] as const) {
    it(`${name}: refused, a coded error naming the source and why`, async () => {
      const cam = await server((req, res, port) => moved(res, where(req.url ?? '', port)));
      const { spawn } = recordingSpawn();
      const err = await source(`http://${user}:${encodeURIComponent(password)}@127.0.0.1:${cam.port}/a.ts`, spawn);
      expect(err).toMatchObject({ code: 'VAP_ERR_SOURCE_OPEN' });
      expect((err as Error).message).toMatch(/^source "cam": the camera at 127\.0\.0\.1:\d+ /);
      expect((err as Error).message).toMatch(why);
      expect((err as Error).message).not.toContain('S3cret');
      expect(cam.seen.length).toBeLessThanOrEqual(6);
    }, 30_000);
  }
});

describe('an HTTP(S) camera reachable only through an HTTP proxy: the relay goes through it as ffmpeg would', () => {
  const servers: { close(): void }[] = [];
  afterAll(() => servers.forEach((s) => s.close()));
  const proxyAuth = `Basic ${Buffer.from('proxyuser:Pr0xyPw').toString('base64')}`;

  /** A proxy that wants proxyAuth and knows `camera.invalid` as 127.0.0.1 (nothing else does): absolute-form requests forwarded, CONNECT tunnelled; what it saw. */
  async function proxyServer() {
    const seen: { kind: string; target: string; auth?: string }[] = [];
    const srv = httpServer((req, res) => {
      seen.push({ kind: req.method ?? '', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
      const u = new URL(req.url ?? '');
      if (req.headers['proxy-authorization'] !== proxyAuth || u.hostname !== 'camera.invalid') {
        res.writeHead(407, { 'Proxy-Authenticate': 'Basic realm="proxy"', 'Content-Length': '0' });
        res.end();
        return;
      }
      const headers = { ...req.headers };
      delete headers['proxy-authorization'];
      const fwd = httpRequest({ host: '127.0.0.1', port: Number(u.port), path: `${u.pathname}${u.search}`, method: req.method, headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      fwd.on('error', () => res.destroy());
      req.pipe(fwd);
    });
    srv.on('connect', (req: IncomingMessage, sock: import('node:net').Socket, head: Buffer) => {
      seen.push({ kind: 'CONNECT', target: req.url ?? '', auth: req.headers['proxy-authorization'] });
      sock.on('error', () => {});
      const [host, port] = (req.url ?? '').split(':');
      if (req.headers['proxy-authorization'] !== proxyAuth || host !== 'camera.invalid') return void sock.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      const up = connect(Number(port), '127.0.0.1', () => {
        sock.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) up.write(head);
        up.pipe(sock).pipe(up);
      });
      up.on('error', () => sock.destroy());
    });
    servers.push(srv);
    return { port: await listening(srv), seen };
  }

  for (const [name, tls, how] of [
    ['http://, the proxy in http_proxy: absolute-form requests', false, 'env'],
    ['https://, the proxy given as -http_proxy: a CONNECT tunnel', true, 'arg'],
  ] as const) {
    it(`${name}, the proxy's password sent by the relay (never on ffmpeg's command line), the camera's credentials inside, frames come`, async () => {
      const cam = camera('basic');
      let server;
      if (tls) {
        const [key, cert] = [join(dir, 'proxied.key'), join(dir, 'proxied.pem')];
        execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=camera.invalid', '-addext', 'subjectAltName=DNS:camera.invalid'], { stdio: 'ignore' });
        server = httpsServer({ key: readFileSync(key), cert: readFileSync(cert) }, cam.handler);
      } else server = httpServer(cam.handler);
      servers.push(server);
      const port = await listening(server);
      const proxy = await proxyServer();
      const proxyUrl = `http://proxyuser:Pr0xyPw@127.0.0.1:${proxy.port}`;
      const saved = { http_proxy: process.env.http_proxy, no_proxy: process.env.no_proxy };
      if (how === 'env') process.env.http_proxy = proxyUrl;
      else delete process.env.http_proxy;
      process.env.no_proxy = 'example.com';
      const { spawn, commands } = recordingSpawn();
      try {
        const url = `${tls ? 'https' : 'http'}://${user}:${encodeURIComponent(password)}@camera.invalid:${port}/feed.ts`;
        const frames = await firstValueFrom(
          ffmpegSource({ id: 'cam', input: { url, kind: 'http', rate: 'native', loop: false, inputArgs: how === 'arg' ? ['-http_proxy', proxyUrl] : [] }, output, ffmpegPath: defaultFfmpegPath(), spawn }).pipe(take(3), toArray()),
        );
        expect(frames).toHaveLength(3);
      } finally {
        for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      for (const c of commands) expect(c).not.toMatch(/Pr0xyPw|S3cret|-http_proxy/);
      expect(proxy.seen.length).toBeGreaterThan(0);
      for (const s of proxy.seen) {
        expect(s.auth).toBe(proxyAuth);
        expect(s.target).toBe(tls ? `camera.invalid:${port}` : `http://camera.invalid:${port}/feed.ts`);
      }
      expect(cam.seen.map((s) => s.auth)).toContain('ok');
      expect(cam.seen.map((s) => s.host)).toContain(`camera.invalid:${port}`);
    }, 30_000);
  }

  for (const [name, answer, why] of [
    ['closes without answering CONNECT', undefined, /through the proxy 127\.0\.0\.1:\d+\): the proxy closed the connection before it answered CONNECT/],
    ['answers CONNECT with 403', 'HTTP/1.1 403 Forbidden\r\n\r\n', /the proxy refused the tunnel: HTTP\/1\.1 403 Forbidden/],
  ] as const) {
    it(`a proxy that ${name}: the relay ends ffmpeg's connection, and says why`, async () => {
      const proxy = createNetServer((s) => {
        s.on('error', () => {});
        s.once('data', () => (answer ? s.end(answer) : s.destroy()));
      });
      servers.push(proxy);
      const relay = new HttpRelay(`https://${user}:pw@camera.invalid:8443/x`, { peerCheck: async () => 'own', proxy: { url: `http://127.0.0.1:${await listening(proxy)}` } });
      const at = new URL(await relay.listen());
      await new Promise<void>((resolve) => {
        const s = connect(Number(at.port), '127.0.0.1', () => s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n'));
        s.on('close', () => resolve());
        s.on('error', () => {});
      });
      expect(relay.upstreamError).toMatch(why);
      relay.close();
    });
  }

  it("no_proxy as ffmpeg reads it: '*', a host, a domain it ends in (a leading '.' or '*.' dropped), never a part of a name", () => {
    expect(noProxyMatches('*', 'cam', 80)).toBe(true);
    expect(noProxyMatches('a.com, cam.local', 'cam.local', 80)).toBe(true);
    expect(noProxyMatches('.local', 'cam.local', 80)).toBe(true);
    expect(noProxyMatches('*.local', 'cam.local', 80)).toBe(true);
    expect(noProxyMatches('local', 'cam.local', 80)).toBe(true);
    expect(noProxyMatches('am.local', 'cam.local', 80)).toBe(false);
    expect(noProxyMatches(undefined, 'cam.local', 80)).toBe(false);
    expect(httpProxyOf(['-http_proxy', 'http://p:1'], { http_proxy: 'http://q:2', HTTP_PROXY: 'http://r:3' }).url).toBe('http://p:1');
    expect(httpProxyOf([], { HTTP_PROXY: 'http://r:3' }).url).toBeUndefined();
  });

  it("no_proxy as an operator writes it (curl's forms too): any case, an IPv6 address bracketed or not, host:port (that port only); NO_PROXY when no_proxy is not set, as ffmpeg is given it", () => {
    expect(noProxyMatches('CAM.Local', 'cam.local', 80)).toBe(true);
    expect(noProxyMatches('.corp', 'CAM.CORP', 80)).toBe(true);
    expect(noProxyMatches('[fd00::5]', 'fd00::5', 80)).toBe(true);
    expect(noProxyMatches('fd00::5', 'fd00::5', 80)).toBe(true);
    expect(noProxyMatches('[fd00::5]:8080', 'fd00::5', 8080)).toBe(true);
    expect(noProxyMatches('[fd00::5]:8080', 'fd00::5', 80)).toBe(false);
    expect(noProxyMatches('cam.local:8080', 'cam.local', 8080)).toBe(true);
    expect(noProxyMatches('cam.local:8080', 'cam.local', 80)).toBe(false);
    expect(noProxyMatches('::5', 'fd00::5', 80)).toBe(false);
    expect(httpProxyOf([], { http_proxy: 'http://q:2', NO_PROXY: 'cam.corp' }).noProxy).toBe('cam.corp');
    expect(httpProxyOf([], { http_proxy: 'http://q:2', NO_PROXY: 'cam.corp', no_proxy: 'other' }).noProxy).toBe('other');
    // ffmpeg reads no_proxy only: one set in NO_PROXY alone is given it in lower case, 127.0.0.1 or '*' with it.
    expect(loopbackUnproxied({ http_proxy: 'http://q:2', NO_PROXY: '*' }).no_proxy).toBe('*');
    expect(loopbackUnproxied({ http_proxy: 'http://q:2', NO_PROXY: 'cam.corp' }).no_proxy).toBe('cam.corp,127.0.0.1');
  });
});

describe("the relay's connect timer", () => {
  it('is cleared when the connection closes: a refused camera keeps its own reason, not "could not connect in 10 s" 10 s later', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${await closedPort()}/x`, { peerCheck: async () => 'own' });
      const at = new URL(await relay.listen());
      await new Promise<void>((resolve) => {
        const s = connect(Number(at.port), '127.0.0.1', () => s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n'));
        s.on('close', () => resolve());
        s.on('error', () => {});
      });
      expect(relay.upstreamError).toMatch(/ECONNREFUSED/);
      vi.advanceTimersByTime(11_000);
      expect(relay.upstreamError).toMatch(/ECONNREFUSED/);
      relay.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('is cleared once the camera is reached: a stream that lasts past 10 s is not cut (an MJPEG feed, a long segment)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const camSockets: import('node:net').Socket[] = [];
    const cam = createNetServer((s) => {
      camSockets.push(s);
      s.on('error', () => {});
      s.once('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\n\r\nfirst'));
    });
    try {
      const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${await listening(cam)}/x`, { peerCheck: async () => 'own' });
      const at = new URL(await relay.listen());
      let got = '';
      let closed = false;
      const s = connect(Number(at.port), '127.0.0.1', () => s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n'));
      s.on('data', (d: Buffer) => (got += d.toString('latin1')));
      s.on('close', () => (closed = true));
      s.on('error', () => {});
      await vi.waitFor(() => expect(got).toContain('first'), { timeout: 5000, interval: 5 });
      vi.advanceTimersByTime(11_000);
      camSockets[0].write('second');
      await vi.waitFor(() => expect(got.includes('second') || closed).toBe(true), { timeout: 5000, interval: 5 });
      expect(closed).toBe(false);
      expect(got).toContain('second');
      expect(relay.upstreamError).toBeUndefined();
      s.destroy();
      relay.close();
    } finally {
      cam.close();
      for (const c of camSockets) c.destroy();
      vi.useRealTimers();
    }
  });
});

describe("what a camera's redirects and cookies make the relay keep: each host's own, bounded", () => {
  /** A server answering each request with `reply(path)` (a whole head); the Cookie of each request it got. */
  async function raw(reply: (path: string) => string) {
    const cookies: (string | undefined)[] = [];
    const paths: string[] = [];
    const srv = createNetServer((s) => {
      s.on('error', () => {});
      let text = '';
      s.on('data', (d: Buffer) => {
        text += d.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = text.slice(0, end);
        text = text.slice(end + 4);
        cookies.push(/\r\ncookie: ([^\r\n]*)/i.exec(head)?.[1]);
        const path = /^GET (\S+)/.exec(head)?.[1] ?? '';
        paths.push(path);
        s.write(reply(path));
      });
    });
    return { srv, port: await listening(srv), cookies, paths };
  }
  /** One request on a connection of its own (as ffmpeg, its jar's Cookie); the reply head. */
  const ask = (port: number, path: string, cookie?: string) =>
    new Promise<string>((resolve, reject) => {
      let got = '';
      const s = connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: h\r\n${cookie ? `Cookie: ${cookie}\r\n` : ''}\r\n`));
      s.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.includes('\r\n\r\n')) {
          s.destroy();
          resolve(got);
        }
      });
      s.on('error', reject);
    });

  it('MAX_HTTP_RELAY_CONNECTIONS is for the relay, all its routes together: a redirect to another origin opens a port, not more connections', async () => {
    const held: string[] = [];
    const cam = await raw(() => '');
    cam.srv.removeAllListeners('connection');
    cam.srv.on('connection', (s: import('node:net').Socket) => {
      s.on('error', () => {});
      s.once('data', (d: Buffer) => {
        const path = /^GET (\S+)/.exec(d.toString('latin1'))?.[1] ?? '';
        if (path === '/a') s.end(`HTTP/1.1 302 Found\r\nLocation: http://localhost:${cam.port}/b\r\nContent-Length: 0\r\n\r\n`);
        else held.push(path);
      });
    });
    const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${cam.port}/a`, { peerCheck: async () => 'own', maxConnections: 2 });
    const sockets: import('node:net').Socket[] = [];
    try {
      const main = Number(new URL(await relay.listen()).port);
      const other = Number(/\r\nLocation: http:\/\/127\.0\.0\.1:(\d+)\/b/.exec(await ask(main, '/a'))?.[1]);
      expect(other).toBeGreaterThan(0);
      const open = (port: number, path: string) => {
        const s = connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: h\r\n\r\n`));
        s.on('error', () => {});
        sockets.push(s);
        return s;
      };
      open(main, '/1');
      open(main, '/2');
      await vi.waitFor(() => expect(held).toHaveLength(2), { timeout: 5000, interval: 5 });
      const third = open(other, '/b');
      let closed = false;
      third.on('close', () => (closed = true));
      await vi.waitFor(() => expect(closed || held.length > 2).toBe(true), { timeout: 5000, interval: 5 });
      expect(held).toHaveLength(2);
      expect(closed).toBe(true);
    } finally {
      for (const s of sockets) s.destroy();
      relay.close();
      cam.srv.close();
    }
  });

  it("a cookie of the same name set by the camera and the host it redirected to (a JSESSIONID each): neither's value reaches the other, though ffmpeg holds one", async () => {
    const cdn = await raw(() => 'HTTP/1.1 200 OK\r\nSet-Cookie: session=CDN; Path=/\r\nContent-Length: 0\r\n\r\n');
    const cam = await raw((path) =>
      path === '/a' ? `HTTP/1.1 302 Found\r\nSet-Cookie: session=CAM1; Path=/\r\nLocation: http://localhost:${cdn.port}/s\r\nContent-Length: 0\r\n\r\n` : 'HTTP/1.1 200 OK\r\nSet-Cookie: session=CAM2; Path=/\r\nContent-Length: 0\r\n\r\n',
    );
    const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${cam.port}/a`, { peerCheck: async () => 'own', sendCredentialsTo: ['localhost'] });
    try {
      const main = Number(new URL(await relay.listen()).port);
      const moved = await ask(main, '/a');
      const cdnPort = Number(/\r\nLocation: http:\/\/(?:[^@/]*@)?127\.0\.0\.1:(\d+)\/s/.exec(moved)?.[1]);
      expect(cdnPort).toBeGreaterThan(0);
      // ffmpeg's jar, one value a name whatever the host (all are 127.0.0.1 to it): session=CAM1, then CDN, then CAM2.
      await ask(cdnPort, '/s', 'session=CAM1');
      await ask(main, '/b', 'session=CDN');
      await ask(cdnPort, '/s', 'session=CAM2');
      expect(cdn.cookies).toEqual([undefined, 'session=CDN']);
      expect(cam.cookies).toEqual([undefined, 'session=CAM1']);
    } finally {
      relay.close();
      cam.srv.close();
      cdn.srv.close();
    }
  });

  it("a redirect's secret query values are that URL's: the camera gets them there, and its own URL keeps the source's (a same-host redirect replaced them by name); another host never gets the source's", async () => {
    const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n';
    const cdn = await raw(() => ok);
    const cam = await raw((path) =>
      path === '/a?token=Us3rT0ken&sig=Us3rSig'
        ? 'HTTP/1.1 302 Found\r\nLocation: /b?token=S3ss1on\r\nContent-Length: 0\r\n\r\n'
        : path === '/c?token=Us3rT0ken&sig=Us3rSig'
          ? `HTTP/1.1 302 Found\r\nLocation: http://localhost:${cdn.port}/x?sig=CdnSig&token=CdnT0k\r\nContent-Length: 0\r\n\r\n`
          : ok,
    );
    const relay = new HttpRelay(`http://127.0.0.1:${cam.port}/a?token=Us3rT0ken&sig=Us3rSig`, { peerCheck: async () => 'own' });
    try {
      const given = new URL(await relay.listen());
      expect(given.search).toBe('?token=argus-relay&sig=argus-relay');
      const main = Number(given.port);
      // Same host: ffmpeg is sent back to the relay's own port, with placeholders.
      const moved = /\r\nLocation: http:\/\/127\.0\.0\.1:(\d+)(\S*)/.exec(await ask(main, '/a?token=argus-relay&sig=argus-relay'));
      expect(moved?.slice(1)).toEqual([String(main), '/b?token=argus-relay']);
      await ask(main, '/b?token=argus-relay'); // ffmpeg follows it
      await ask(main, '/a?token=argus-relay&sig=argus-relay'); // and opens the source's URL again (a reconnect, a playlist's reload)
      await ask(main, '/b?token=argus-relay'); // and the redirect's again
      // Another host: its own values there, never the source's.
      const away = /\r\nLocation: http:\/\/127\.0\.0\.1:(\d+)(\S*)/.exec(await ask(main, '/c?token=argus-relay&sig=argus-relay'));
      expect(away?.[2]).toBe('/x?sig=argus-relay&token=argus-relay');
      await ask(Number(away?.[1]), '/x?sig=argus-relay&token=argus-relay');
      await ask(Number(away?.[1]), '/y?sig=argus-relay&token=argus-relay'); // a URL there the relay never gave: no value of anyone's
      await ask(main, '/a?token=argus-relay&sig=argus-relay');
      expect(cam.paths).toEqual(['/a?token=Us3rT0ken&sig=Us3rSig', '/b?token=S3ss1on', '/a?token=Us3rT0ken&sig=Us3rSig', '/b?token=S3ss1on', '/c?token=Us3rT0ken&sig=Us3rSig', '/a?token=Us3rT0ken&sig=Us3rSig']);
      expect(cdn.paths).toEqual(['/x?sig=CdnSig&token=CdnT0k', '/y?sig=argus-relay&token=argus-relay']);
    } finally {
      relay.close();
      cam.srv.close();
      cdn.srv.close();
    }
  });

  it("a redirect to the source's own URL with other secret values (a signed or session URL on the same path, or A → B → A) gives them to the request that follows it only: the source's URL, asked again, carries the source's own values", async () => {
    const ok = 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n';
    const cam = await raw((path) => (path === '/a?token=Us3rT0ken' ? 'HTTP/1.1 302 Found\r\nLocation: /a?token=S3ss1on\r\nContent-Length: 0\r\n\r\n' : ok));
    const relay = new HttpRelay(`http://127.0.0.1:${cam.port}/a?token=Us3rT0ken`, { peerCheck: async () => 'own' });
    try {
      const main = Number(new URL(await relay.listen()).port);
      const moved = /\r\nLocation: http:\/\/127\.0\.0\.1:(\d+)(\S*)/.exec(await ask(main, '/a?token=argus-relay'));
      expect(moved?.slice(1)).toEqual([String(main), '/a?token=argus-relay']);
      expect(await ask(main, '/a?token=argus-relay')).toMatch(/^HTTP\/1\.1 200/); // ffmpeg follows it
      await ask(main, '/a?token=argus-relay'); // and opens the source's URL again (a reconnect)
      expect(cam.paths).toEqual(['/a?token=Us3rT0ken', '/a?token=S3ss1on', '/a?token=Us3rT0ken']);
    } finally {
      relay.close();
      cam.srv.close();
    }
  });

  it('a camera that sets many cookies, or a huge one: ffmpeg and the relay keep at most 50 of a host, none over 4096 bytes', async () => {
    let n = 0;
    const cam = await raw(() => {
      const lines = Array.from({ length: 100 }, () => `Set-Cookie: c${n++}=v; Path=/\r\n`).join('');
      return `HTTP/1.1 200 OK\r\n${lines}Set-Cookie: big=${'x'.repeat(5000)}; Path=/\r\nContent-Length: 0\r\n\r\n`;
    });
    const relay = new HttpRelay(`http://${user}:pw@127.0.0.1:${cam.port}/a`, { peerCheck: async () => 'own' });
    try {
      const main = Number(new URL(await relay.listen()).port);
      let passed = 0;
      for (let i = 0; i < 3; i++) passed += ((await ask(main, '/a')).match(/\r\nSet-Cookie:/gi) ?? []).length;
      expect(passed).toBe(50);
      const all = Array.from({ length: 300 }, (_, i) => `c${i}=v`).join('; ');
      await ask(main, '/a', `${all}; big=${'x'.repeat(5000)}`);
      expect(cam.cookies.at(-1)?.split('; ')).toHaveLength(50);
    } finally {
      relay.close();
      cam.srv.close();
    }
  });
});

describe('HttpReplies: only reply heads are edited, bodies pass as they are', () => {
  const decoy = 'HTTP/1.1 302 Found\r\nLocation: http://evil/\r\n\r\n';
  const replies =
    `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${decoy.length.toString(16)};x=1\r\n${decoy}\r\n0\r\nTrailer: t\r\n\r\n` +
    `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: ${decoy.length}\r\n\r\n${decoy}` +
    'HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n' + decoy;
  const expected = replies.replace('Location: /next', 'Location: /relayed').replace('HTTP/1.1 200 OK\r\n\r\n', 'HTTP/1.1 200 OK\r\nX: 1\r\n\r\n');
  const edit = (head: string) => (head.includes('Location: /next') ? head.replace('/next', '/relayed') : head.startsWith('HTTP/1.1 200 OK\r\n\r\n') ? head.replace('\r\n\r\n', '\r\nX: 1\r\n\r\n') : head);
  for (const size of [1, 7, replies.length]) {
    it(`chunked, by length, interim and to the end, in pieces of ${size} byte(s), a head edited later (a promise)`, async () => {
      const heads: string[] = [];
      const r = new HttpReplies((head) => {
        heads.push(head.split('\r\n')[0]);
        return { head: head.includes('302') ? Promise.resolve(edit(head)) : edit(head) };
      });
      const out: Buffer[] = [];
      for (let i = 0; i < replies.length; i += size) {
        let e = r.push(Buffer.from(replies.slice(i, i + size), 'latin1'));
        out.push(...e.out);
        while (e.wait) {
          await e.wait;
          e = r.more();
          out.push(...e.out);
        }
      }
      out.push(...r.flush());
      expect(Buffer.concat(out).toString('latin1')).toBe(expected);
      expect(heads).toEqual(['HTTP/1.1 200 OK', 'HTTP/1.1 100 Continue', 'HTTP/1.1 200 OK', 'HTTP/1.1 302 Found', 'HTTP/1.1 200 OK']);
    });
  }
});

describe('the relay URL and request heads', () => {
  it("httpRelayUrl: the relay's address, plain http, path and query kept, the placeholder for a user and password, a user alone kept", () => {
    expect(httpRelayUrl('http://admin:pw@cam.local/mjpg/video.cgi?res=1', 5000)).toBe('http://argus:relay@127.0.0.1:5000/mjpg/video.cgi?res=1');
    expect(httpRelayUrl('https://admin:p%40ss@[fe80::1]:8443/live.ts', 5000)).toBe('http://argus:relay@127.0.0.1:5000/live.ts');
    expect(httpRelayUrl('http://viewer@cam/x', 5000)).toBe('http://viewer@127.0.0.1:5000/x');
  });

  it("httpRelayUrl: a secret query parameter's value (redact's list: pwd, loginpas, token, …) becomes the placeholder, others stay", () => {
    expect(httpRelayUrl('http://cam/videostream.cgi?user=admin&pwd=123&res=1#x', 5000)).toBe('http://127.0.0.1:5000/videostream.cgi?user=admin&pwd=argus-relay&res=1#x');
    expect(httpRelayUrl('http://cam:81/live.cgi?loginuse=admin&loginpas=S3cret&Token=', 5000)).toBe('http://127.0.0.1:5000/live.cgi?loginuse=admin&loginpas=argus-relay&Token=');
    expect(httpSecrets('http://cam/a.mjpg?res=1')).toBe(false);
    expect(httpSecrets('http://cam/a.mjpg?pwd=1')).toBe(true);
    expect(httpSecrets('http://admin:pw@cam/a.mjpg')).toBe(true);
    expect(httpSecrets('http://admin@cam/a.mjpg')).toBe(false);
  });

  it('AuthRewriter with an edit: each request head is given it after its Authorization; bodies pass as they are', () => {
    const rw = new AuthRewriter({ user: 'admin', password: 'pw' }, (head) => head.replace('127.0.0.1:5000', 'cam.local:8080'));
    const head = `GET /a HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nAuthorization: Basic ${Buffer.from('argus:relay').toString('base64')}\r\n\r\n`;
    const body = 'POST /b HTTP/1.1\r\nHost: 127.0.0.1:5000\r\nContent-Length: 14\r\n\r\n127.0.0.1:5000';
    const out = Buffer.concat([...rw.push(Buffer.from(head.slice(0, 20))), ...rw.push(Buffer.from(head.slice(20) + body))]).toString('latin1');
    expect(out).toBe(
      `GET /a HTTP/1.1\r\nHost: cam.local:8080\r\nAuthorization: Basic ${Buffer.from('admin:pw').toString('base64')}\r\n\r\n` + 'POST /b HTTP/1.1\r\nHost: cam.local:8080\r\nContent-Length: 14\r\n\r\n127.0.0.1:5000',
    );
  });
});
