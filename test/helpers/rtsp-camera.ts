import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { createServer as createTlsServer } from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/sources/ffmpeg-path.js';

const NTP_UNIX_S = 2_208_988_800;
const CLOCK_RATE = 90_000;

export interface CameraOptions {
  /** Frames a second sent (and the RTP spacing). Default 10. */
  fps?: number;
  /** Milliseconds added to the camera's clock in its sender reports (a camera ahead: not believed). Default 0. */
  clockOffsetMs?: number;
  /** How long before its sending the camera says it captured a frame, ms. Default 20. */
  latencyMs?: number;
  /** A glitch: frame `k` of connection `connection` (0 the first) is sent with the timestamp of the frame before it. */
  repeatTimestamp?: (connection: number, k: number) => boolean;
  /** A stall mid-frame: frame `k` of connection `connection` is sent without its last NAL unit (its picture), and nothing more after it but sender reports; the connection stays open. */
  stallAt?: (connection: number, k: number) => boolean;
  /** A jump: RTP ticks (90 kHz) added to frame `k`'s timestamp of connection `connection`, and to the sender reports' sent after it with `reports` (a camera whose clock was set). Default none. */
  jump?: { at: (connection: number, k: number) => number; reports?: boolean };
  /** Requests other than OPTIONS must carry Digest credentials for this user (realm `cam`, nonce `n0nce`); the answers seen are counted in `auths`. */
  auth?: { user: string; password: string };
  /** The address it listens on, and sends and receives RTP over UDP on (127.0.0.2: a camera at another address than the relay's). Default 127.0.0.1. */
  host?: string;
  /** RTSPS: TLS with this key and certificate (PEM). */
  tls?: { key: Buffer; cert: Buffer };
  /** RTP over UDP only: a SETUP for TCP is answered 461 Unsupported Transport. */
  udpOnly?: boolean;
  /** A secret in the URL's query (`?token=…`): every request's URI must hold `token=<value>` (else 403 Forbidden, counted in `tokens`); the camera echoes its URIs back (Content-Base, the SDP's control, RTP-Info). */
  token?: string;
  /** A redirect: a DESCRIBE (after its authentication) whose URI this gives a Location for is answered `302 Moved` there (counted in `redirects`). */
  moved?: (uri: string) => string | undefined;
}

/**
 * A camera for tests that GStreamer's server cannot be: H.264 over RTSP, interleaved on the TCP
 * connection (what argus's relay reads), each frame's RTP packets sent when due, sender reports
 * from the start and every second mapping RTP time to the camera's clock, and glitches on demand.
 * One Annex B file of access units, each begun with a delimiter (`units`), is sent in a loop.
 */
export class RtspCamera {
  /** Connections accepted so far. */
  connections = 0;
  /** With `auth`: how many requests came with a right answer, and with a wrong one. */
  readonly auths = { ok: 0, bad: 0 };
  /** With `token`: how many requests held the right token in their URI, and how many did not. */
  readonly tokens = { ok: 0, bad: 0 };
  /** The transports the client set up (`tcp`, or `udp` when it asked for client ports). */
  readonly transports: string[] = [];
  /** Datagrams the client sent to the camera's server ports (RTP over UDP): ffmpeg's NAT punch packets and RTCP receiver reports. */
  udpFromClient = 0;
  /** Each request's head, as the camera got it. */
  readonly heads: string[] = [];
  /** With `moved`: the redirects it answered. */
  redirects = 0;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly units: Buffer[][];
  private readonly sps: Buffer;
  private readonly pps: Buffer;

  private constructor(
    units: Buffer[][],
    private readonly o: CameraOptions,
  ) {
    this.units = units;
    const nals = units.flat();
    this.sps = nals.find((n) => (n[0] & 0x1f) === 7)!;
    this.pps = nals.find((n) => (n[0] & 0x1f) === 8)!;
    this.server = o.tls ? createTlsServer(o.tls, (s) => this.serve(s)) : createServer((s) => this.serve(s));
  }

  /** A camera sending `file` (any video ffmpeg reads: encoded here as the camera would, `size` WxH, no B-frames). */
  static async start(file: string, size: string, o: CameraOptions = {}): Promise<{ camera: RtspCamera; url: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'argus-camera-'));
    const out = join(dir, 'camera.h264');
    try {
      const fps = o.fps ?? 10;
      // Asynchronously: on a busy machine the encoding takes many seconds, and a test file whose
      // event loop stands still for 60 s has vitest's calls to its main process time out.
      await promisify(execFile)((await resolveFfmpeg()).path, ['-v', 'error', '-i', file, '-t', '10', '-an', '-vf', `fps=${fps},scale=${size}`, '-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'zerolatency', '-bf', '0', '-g', String(fps), '-x264-params', 'aud=1', '-f', 'h264', out]);
      const camera = new RtspCamera(accessUnits(readFileSync(out)), o);
      const host = o.host ?? '127.0.0.1';
      await new Promise<void>((r) => camera.server.listen(0, host, r));
      const port = (camera.server.address() as { port: number }).port;
      return { camera, url: `${o.tls ? 'rtsps' : 'rtsp'}://${host}:${port}/live` };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Closes every connection (the client sees the camera go away) and stops listening. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private serve(sock: Socket): void {
    const connection = this.connections++;
    this.sockets.add(sock);
    const fps = this.o.fps ?? 10;
    const step = CLOCK_RATE / fps;
    const ssrc = 0x11223344 + connection;
    const ts0 = 123_456_789;
    let seq = 1000;
    let k = 0;
    let t0 = 0;
    let lastTs = ts0;
    let timer: NodeJS.Timeout | undefined;
    let reports: NodeJS.Timeout | undefined;
    let text = '';
    // RTP over UDP (the client's SETUP gave its ports): each interleaved packet goes as a datagram
    // to its channel's port on the client's address, from the camera's server port for that channel.
    let udp: { sockets: ReturnType<typeof createSocket>[]; ports: [number, number]; serverPorts: [number, number] } | undefined;
    const write = (b: Buffer) => {
      if (udp && b[0] === 0x24) {
        const port = udp.ports[b[1] & 1];
        udp.sockets[b[1] & 1].send(b.subarray(4), port, sock.remoteAddress);
        return;
      }
      if (!sock.destroyed) sock.write(b);
    };
    const rtp = (ts: number, payload: Buffer, marker: boolean) => {
      const h = Buffer.alloc(16);
      h[0] = 0x24;
      h.writeUInt16BE(12 + payload.length, 2);
      h[4] = 0x80;
      h[5] = 96 | (marker ? 0x80 : 0);
      h.writeUInt16BE(seq++ & 0xffff, 6);
      h.writeUInt32BE(ts >>> 0, 8);
      h.writeUInt32BE(ssrc, 12);
      write(Buffer.concat([h, payload]));
    };
    const send = (unit: Buffer[], ts: number) => {
      unit.forEach((n, j) => {
        const last = j === unit.length - 1;
        if (n.length <= 1400) return rtp(ts, n, last);
        // FU-A fragments (RFC 6184).
        for (let off = 1; off < n.length; off += 1400) {
          const end = Math.min(n.length, off + 1400);
          const fu = Buffer.from([(n[0] & 0xe0) | 28, (off === 1 ? 0x80 : 0) | (end === n.length ? 0x40 : 0) | (n[0] & 0x1f)]);
          rtp(ts, Buffer.concat([fu, n.subarray(off, end)]), last && end === n.length);
        }
      });
    };
    const report = () => {
      const elapsed = (performance.now() - t0) / 1000;
      const jumped = this.o.jump?.reports ? this.o.jump.at(connection, k) : 0;
      write(senderReport(1, Date.now() - (this.o.latencyMs ?? 20) + (this.o.clockOffsetMs ?? 0), ts0 + Math.round(elapsed * CLOCK_RATE) + jumped, ssrc));
    };
    let stalled = false;
    const tick = () => {
      const due = ((performance.now() - t0) / 1000) * fps;
      for (let n = 0; !stalled && k <= due && n < 3; n++, k++) {
        if (this.o.stallAt?.(connection, k)) {
          stalled = true;
          const unit = this.units[k % this.units.length];
          send(unit.slice(0, -1), ts0 + Math.round(k * step));
          return;
        }
        const ts = this.o.repeatTimestamp?.(connection, k) ? lastTs : ts0 + Math.round(k * step) + (this.o.jump?.at(connection, k) ?? 0);
        lastTs = ts;
        send(this.units[k % this.units.length], ts);
      }
    };
    const stop = () => {
      clearInterval(timer);
      clearInterval(reports);
      this.sockets.delete(sock);
      for (const u of udp?.sockets ?? []) u.close();
      udp = undefined;
    };
    sock.on('close', stop);
    sock.on('error', stop);
    // Requests are answered in order (a SETUP's answer waits for its UDP ports).
    let answered = Promise.resolve();
    sock.on('data', (d: Buffer) => {
      answered = answered.then(() => answer(d));
    });
    const answer = async (d: Buffer): Promise<void> => {
      text += d.toString('latin1');
      for (let m = /\r\n\r\n/.exec(text); m; m = /\r\n\r\n/.exec(text)) {
        const req = text.slice(0, m.index);
        text = text.slice(m.index + 4);
        const [method, url] = req.split('\r\n')[0].split(' ');
        const cseq = /CSeq:\s*(\d+)/i.exec(req)?.[1] ?? '0';
        this.heads.push(req);
        let extra = 'Session: 12345678\r\n';
        let body = '';
        if (this.o.token !== undefined) {
          const query = /\?([^#]*)/.exec(url)?.[1] ?? '';
          const ok = query.split(/[&/]/).includes(`token=${this.o.token}`);
          this.tokens[ok ? 'ok' : 'bad']++;
          if (!ok) {
            write(Buffer.from(`RTSP/1.0 403 Forbidden\r\nCSeq: ${cseq}\r\n\r\n`, 'latin1'));
            continue;
          }
        }
        if (this.o.auth && method !== 'OPTIONS') {
          const auth = /\r\nAuthorization:\s*([^\r\n]*)/i.exec(req)?.[1];
          const p = Object.fromEntries([...(auth ?? '').matchAll(/(\w+)="?([^",]*)"?/g)].map((x) => [x[1], x[2]]));
          const { user, password } = this.o.auth;
          // (As RFC 2617 asks of a server: the answer's uri is the request's own.)
          const ok = auth !== undefined && p.username === user && p.uri === url && p.response === md5(`${md5(`${user}:cam:${password}`)}:n0nce:${md5(`${method}:${p.uri}`)}`);
          if (auth !== undefined) this.auths[ok ? 'ok' : 'bad']++;
          if (!ok) {
            write(Buffer.from(`RTSP/1.0 401 Unauthorized\r\nCSeq: ${cseq}\r\nWWW-Authenticate: Digest realm="cam", nonce="n0nce"\r\n\r\n`, 'latin1'));
            continue;
          }
        }
        const location = method === 'DESCRIBE' ? this.o.moved?.(url) : undefined;
        if (location !== undefined) {
          this.redirects++;
          write(Buffer.from(`RTSP/1.0 302 Moved\r\nCSeq: ${cseq}\r\nLocation: ${location}\r\n\r\n`, 'latin1'));
          continue;
        }
        if (method === 'OPTIONS') extra = 'Public: OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN\r\n';
        else if (method === 'DESCRIBE') {
          body = `v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=camera\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;sprop-parameter-sets=${this.sps.toString('base64')},${this.pps.toString('base64')}\r\na=control:${this.o.token !== undefined ? `${url}/` : ''}track1\r\n`;
          extra = `Content-Type: application/sdp\r\nContent-Base: ${url}/\r\n`;
        } else if (method === 'SETUP') {
          const ports = /client_port=(\d+)-(\d+)/i.exec(req);
          if (ports) {
            const sockets = await udpPair(this.o.host ?? '127.0.0.1');
            for (const u of sockets) u.on('message', () => this.udpFromClient++);
            const serverPorts = sockets.map((u) => u.address().port) as [number, number];
            udp = { sockets, ports: [Number(ports[1]), Number(ports[2])], serverPorts };
            extra = `Transport: RTP/AVP;unicast;client_port=${ports[1]}-${ports[2]};server_port=${serverPorts[0]}-${serverPorts[1]}\r\nSession: 12345678\r\n`;
          } else if (this.o.udpOnly) {
            this.transports.push('tcp');
            write(Buffer.from(`RTSP/1.0 461 Unsupported Transport\r\nCSeq: ${cseq}\r\n\r\n`, 'latin1'));
            continue;
          } else extra = 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\nSession: 12345678\r\n';
          this.transports.push(ports ? 'udp' : 'tcp');
        }
        else if (method === 'PLAY') extra = `Session: 12345678\r\nRange: npt=0.000-\r\nRTP-Info: url=${url.replace(/\/$/, '')}/track1;seq=${seq};rtptime=${ts0}\r\n`;
        write(Buffer.from(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\n${extra}${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`, 'latin1'));
        if (method === 'PLAY' && !timer) {
          t0 = performance.now();
          timer = setInterval(tick, 5);
          setTimeout(report, 50);
          reports = setInterval(report, 1000);
        }
        if (method === 'TEARDOWN') sock.end();
      }
    };
  }
}

/** Two UDP sockets on `host`, an even port and the one after it (RTP's and RTCP's: a client sends RTCP to the RTP port + 1). */
async function udpPair(host: string): Promise<ReturnType<typeof createSocket>[]> {
  for (;;) {
    const rtp = createSocket('udp4');
    await new Promise<void>((r) => rtp.bind(0, host, r));
    const port = rtp.address().port;
    const rtcp = createSocket('udp4');
    const ok = await new Promise<boolean>((r) => {
      rtcp.once('error', () => r(false));
      rtcp.bind(port + 1, host, () => r(true));
    });
    if (ok) return [rtp, rtcp];
    rtp.close();
    rtcp.close();
  }
}

/** An Annex B stream's access units (each begun by a delimiter, NAL type 9), as NAL units without start codes or delimiters. */
function accessUnits(b: Buffer): Buffer[][] {
  const nals: Buffer[] = [];
  let start = -1;
  for (let i = 0; i + 3 < b.length; ) {
    const sc = b[i] === 0 && b[i + 1] === 0 ? (b[i + 2] === 1 ? 3 : b[i + 2] === 0 && b[i + 3] === 1 ? 4 : 0) : 0;
    if (sc) {
      if (start >= 0) nals.push(b.subarray(start, i));
      start = i + sc;
      i += sc;
    } else i++;
  }
  if (start >= 0) nals.push(b.subarray(start));
  const units: Buffer[][] = [];
  for (const n of nals) {
    if ((n[0] & 0x1f) === 9) units.push([]);
    else units.at(-1)?.push(n);
  }
  return units.filter((u) => u.length > 0);
}

/** An interleaved RTCP sender report mapping RTP `ts` to epoch `ms`, followed by an SDES (a compound packet). */
export function senderReport(channel: number, ms: number, ts: number, ssrc = 0x1234): Buffer {
  const p = Buffer.alloc(28 + 8);
  p[0] = 0x80;
  p[1] = 200;
  p.writeUInt16BE(6, 2);
  p.writeUInt32BE(ssrc, 4);
  const s = Math.floor(ms / 1000);
  p.writeUInt32BE(s + NTP_UNIX_S, 8);
  p.writeUInt32BE(Math.round(((ms - s * 1000) / 1000) * 2 ** 32) >>> 0, 12);
  p.writeUInt32BE(ts >>> 0, 16);
  p[28] = 0x81;
  p[29] = 202;
  p.writeUInt16BE(1, 30);
  return Buffer.concat([Buffer.from([0x24, channel, p.length >> 8, p.length & 0xff]), p]);
}


const md5 = (s: string) => createHash('md5').update(s).digest('hex');

/**
 * A camera that wants RTSP Digest authentication (RFC 2617, MD5, no qop): OPTIONS is answered,
 * a request without `Authorization` is challenged with `realm` and `nonce`, and one with it is
 * handed to `onAuth` with whether its answer is right for `user` and `password` (and the
 * header, and the request's URI), which answers it. Not listening yet.
 */
export function digestCamera(
  user: string,
  password: string,
  onAuth: (s: Socket, cseq: string, ok: boolean, auth: string, uri: string) => void,
  { realm = 'cam', nonce = 'n0nce' } = {},
): Server {
  return createServer((s: Socket) => {
    let buf = '';
    s.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (let end = buf.indexOf('\r\n\r\n'); end >= 0; end = buf.indexOf('\r\n\r\n')) {
        const head = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const cseq = /CSeq:\s*(\d+)/i.exec(head)?.[1] ?? '0';
        const [method, uri] = head.split(' ');
        const auth = /\r\nAuthorization:\s*([^\r\n]*)/i.exec(head)?.[1];
        if (method === 'OPTIONS') s.write(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\nPublic: OPTIONS, DESCRIBE\r\n\r\n`);
        else if (!auth) s.write(`RTSP/1.0 401 Unauthorized\r\nCSeq: ${cseq}\r\nWWW-Authenticate: Digest realm="${realm}", nonce="${nonce}"\r\n\r\n`);
        else {
          const p = Object.fromEntries([...auth.matchAll(/(\w+)="?([^",]*)"?/g)].map((m) => [m[1], m[2]]));
          const expected = md5(`${md5(`${user}:${realm}:${password}`)}:${nonce}:${md5(`${method}:${p.uri}`)}`);
          onAuth(s, cseq, p.username === user && p.response === expected, auth, uri);
        }
      }
    });
    s.on('error', () => {});
  });
}
