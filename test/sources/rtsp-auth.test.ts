import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AuthRewriter, placeholderQuery, rewriteAuthorization, secretParams, swapSecrets, urlCredentials } from '../../src/sources/rtsp-auth.js';
import { relayUrl, RtspTap } from '../../src/sources/rtsp-tap.js';
import { buildFfmpegArgs } from '../../src/sources/ffmpeg-args.js';
import { digestCamera } from '../helpers/rtsp-camera.js';

const md5 = (s: string) => createHash('md5').update(s).digest('hex');

describe("a camera's credentials never reach ffmpeg's command line (the relay adds them)", () => {
  it('the relay URL ffmpeg is given holds a placeholder, not the password; a user alone is kept', () => {
    const relayed = relayUrl('rtsp://admin:S3cret@10.0.0.9:8554/live?ch=1', 4000);
    expect(relayed).toBe('rtsp://argus:relay@127.0.0.1:4000/live?ch=1');
    const args = buildFfmpegArgs({ url: 'rtsp://admin:S3cret@10.0.0.9:8554/live', kind: 'rtsp', rate: 'native', loop: false, relay: relayed }, { width: 416, height: 416, pixelFormat: 'bgr24', align: 'center', padValue: 114 });
    expect(args.join(' ')).not.toMatch(/S3cret|admin/);
    expect(relayUrl('rtsps://admin:p@ss@10.0.0.9:7441/x', 4000)).toBe('rtsp://argus:relay@127.0.0.1:4000/x');
    expect(relayUrl('rtsp://viewer@cam/x', 4000)).toBe('rtsp://viewer@127.0.0.1:4000/x');
    expect(relayUrl('rtsp://cam/x', 4000)).toBe('rtsp://127.0.0.1:4000/x');
  });

  it('reads the credentials as ffmpeg does: percent-decoded, the last @ ends them, the first : splits them', () => {
    expect(urlCredentials('rtsp://ad%40min:p@ss:w%2Fd@cam/x')).toEqual({ user: 'ad@min', password: 'p@ss:w/d' });
    expect(urlCredentials('rtsp://admin@cam/x')).toBeUndefined();
    expect(urlCredentials('rtsp://cam/x')).toBeUndefined();
  });

  it("rewrites Digest (RFC 2617's example) and Basic answers; other heads pass as they are", () => {
    const head =
      'DESCRIBE rtsp://127.0.0.1:4000/dir/index.html RTSP/1.0\r\nCSeq: 3\r\nAuthorization: Digest username="argus", realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", uri="/dir/index.html", response="00000000000000000000000000000000", algorithm="MD5", cnonce="0a4f113b", nc=00000001, qop="auth"\r\n\r\n';
    const out = rewriteAuthorization(head.replace('DESCRIBE', 'GET'), { user: 'Mufasa', password: 'Circle Of Life' });
    expect(out).toContain('username="Mufasa"');
    expect(out).toContain('response="6629fae49393a05397450978507c4ef1"');
    expect(out).not.toContain('argus');
    expect(rewriteAuthorization('OPTIONS * RTSP/1.0\r\nAuthorization: Basic YXJndXM6cmVsYXk=\r\n\r\n', { user: 'admin', password: 'pw' })).toBe(`OPTIONS * RTSP/1.0\r\nAuthorization: Basic ${Buffer.from('admin:pw').toString('base64')}\r\n\r\n`);
    const plain = 'OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n';
    expect(rewriteAuthorization(plain, { user: 'a', password: 'b' })).toBe(plain);
  });

  it('the rewriter holds a head split over reads, and passes bodies and interleaved packets unchanged', () => {
    const packet = Buffer.from([0x24, 1, 0, 4, 0x0d, 0x0a, 0x0d, 0x0a]);
    const req = Buffer.from('SET_PARAMETER rtsp://x RTSP/1.0\r\nAuthorization: Basic YXJndXM6cmVsYXk=\r\nContent-Length: 4\r\n\r\nab\r\n');
    const all = Buffer.concat([packet, req, packet]);
    const want = Buffer.concat([packet, Buffer.from(req.toString('latin1').replace('YXJndXM6cmVsYXk=', Buffer.from('u:p').toString('base64')), 'latin1'), packet]);
    for (let cut = 1; cut < all.length; cut += 3) {
      const rw = new AuthRewriter({ user: 'u', password: 'p' });
      const got = Buffer.concat([...rw.push(all.subarray(0, cut)), ...rw.push(all.subarray(cut))]);
      expect(got.equals(want)).toBe(true);
    }
  });

  it("real ffmpeg through the relay answers a Digest camera's challenge with the real credentials it never had", async () => {
    const user = 'admin';
    const password = 'S3cr:et@1';
    const realm = 'cam';
    const nonce = 'abcdef0123456789';
    const seen: { ok: boolean; auth: string }[] = [];
    const camera = digestCamera(
      user,
      password,
      (s, cseq, ok, auth, uri) => {
        seen.push({ ok: ok && auth.includes(`uri="${uri}"`), auth });
        s.end(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
      },
      { realm, nonce },
    );
    await new Promise<void>((r) => camera.listen(0, '127.0.0.1', r));
    const port = (camera.address() as { port: number }).port;
    const tap = new RtspTap(`rtsp://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/live`);
    const url = await tap.listen();
    expect(url).not.toContain('S3cr');
    const ff = spawn('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-rtsp_transport', 'tcp', '-i', url, '-f', 'null', '-'], { stdio: 'ignore' });
    await new Promise((r) => ff.on('exit', r));
    tap.close();
    camera.close();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0].ok).toBe(true);
    expect(seen[0].auth).not.toContain('argus');
  }, 20_000);
});

describe("credentials are the bytes ffmpeg would have sent (non-ASCII names, Latin-1 passwords)", () => {
  const md5b = (b: Buffer) => createHash('md5').update(b).digest('hex');
  const digestHead = (method: string) =>
    Buffer.from(`${method} rtsp://127.0.0.1:4000/x RTSP/1.0\r\nCSeq: 3\r\nAuthorization: Digest username="argus", realm="cam", nonce="n1", uri="rtsp://127.0.0.1:4000/x", response="00000000000000000000000000000000"\r\n\r\n`, 'latin1');

  it('a UTF-8 user name goes into the Digest username as its UTF-8 bytes, as in the hash', () => {
    for (const url of ['rtsp://Jos%C3%A9:pw@cam/x', 'rtsp://José:pw@cam/x']) {
      const rw = new AuthRewriter(urlCredentials(url)!);
      const out = Buffer.concat(rw.push(digestHead('DESCRIBE')));
      const user = Buffer.from('José', 'utf8');
      // What ffmpeg sends and hashes: the user's bytes as they are.
      expect(out.includes(Buffer.concat([Buffer.from('username="'), user, Buffer.from('"')]))).toBe(true);
      const ha1 = md5b(Buffer.concat([user, Buffer.from(':cam:pw')]));
      const want = createHash('md5').update(`${ha1}:n1:${createHash('md5').update('DESCRIBE:rtsp://127.0.0.1:4000/x').digest('hex')}`).digest('hex');
      expect(out.toString('latin1')).toContain(`response="${want}"`);
    }
  });

  it('a percent-encoded byte that is not UTF-8 (a Latin-1 password, %E9) is that byte, in Basic and Digest', () => {
    const cred = urlCredentials('rtsp://u:%E9t%E9@cam/x')!;
    const pw = Buffer.from([0xe9, 0x74, 0xe9]);
    const basic = Buffer.concat(new AuthRewriter(cred).push(Buffer.from('OPTIONS * RTSP/1.0\r\nAuthorization: Basic YXJndXM6cmVsYXk=\r\n\r\n'))).toString('latin1');
    expect(basic).toContain(`Basic ${Buffer.concat([Buffer.from('u:'), pw]).toString('base64')}`);
    const out = Buffer.concat(new AuthRewriter(cred).push(digestHead('DESCRIBE'))).toString('latin1');
    const ha1 = md5b(Buffer.concat([Buffer.from('u:cam:'), pw]));
    const want = createHash('md5').update(`${ha1}:n1:${createHash('md5').update('DESCRIBE:rtsp://127.0.0.1:4000/x').digest('hex')}`).digest('hex');
    expect(out).toContain(`response="${want}"`);
  });

  it("a % not followed by two hex digits is kept with them, as ffmpeg's ff_urldecode keeps it", () => {
    // ffmpeg: "%%41" is "%%4" then "1" (the % and the two characters after it are copied).
    expect(urlCredentials('rtsp://u:a%%41@cam/x')).toEqual({ user: 'u', password: 'a%%41' });
    expect(urlCredentials('rtsp://u:a%4@cam/x')).toEqual({ user: 'u', password: 'a%4' });
    expect(urlCredentials('rtsp://u:p%40ss@cam/x')).toEqual({ user: 'u', password: 'p@ss' });
  });
});

describe("the Digest answer is read and written as ffmpeg writes it (its quoted values are never escaped)", () => {
  const ha2 = createHash('md5').update('DESCRIBE:rtsp://127.0.0.1:4000/x').digest('hex');
  it('a realm with a backslash (ffmpeg read the camera\'s "Dom\\\\Cam" as Dom\\Cam, and writes it so) is hashed as it is', () => {
    const head = 'DESCRIBE rtsp://127.0.0.1:4000/x RTSP/1.0\r\nCSeq: 3\r\nAuthorization: Digest username="argus", realm="Dom\\Cam", nonce="n1", uri="rtsp://127.0.0.1:4000/x", response="00000000000000000000000000000000"\r\n\r\n';
    const out = rewriteAuthorization(head, { user: 'u', password: 'p' });
    expect(out).toContain(`response="${md5(`${md5('u:Dom\\Cam:p')}:n1:${ha2}`)}"`);
    expect(out).toContain('realm="Dom\\Cam"');
  });

  it('a DOMAIN\\user name is sent as ffmpeg sent it before the relay (its backslash not doubled)', () => {
    const head = 'DESCRIBE rtsp://127.0.0.1:4000/x RTSP/1.0\r\nCSeq: 3\r\nAuthorization: Digest username="argus", realm="cam", nonce="n1", uri="rtsp://127.0.0.1:4000/x", response="00000000000000000000000000000000"\r\n\r\n';
    const out = rewriteAuthorization(head, urlCredentials('rtsp://CORP%5Cviewer:p@cam/x')!);
    expect(out).toContain('username="CORP\\viewer"');
    expect(out).toContain(`response="${md5(`${md5('CORP\\viewer:cam:p')}:n1:${ha2}`)}"`);
  });
});

describe("a camera's secret query values (?token=, pwd=): the placeholder for ffmpeg, the real value for the camera", () => {
  const secrets = secretParams('rtsp://cam/live?channel=1&token=a.b/c&Pwd=x');
  it('reads the secret parameters of redact\'s list, names as written; others, and empty values, are not secrets', () => {
    expect([...secrets]).toEqual([['token', ['a.b/c']], ['Pwd', ['x']]]);
    expect(secretParams('rtsp://cam/live?channel=1&token=').size).toBe(0);
    expect(placeholderQuery('rtsp://127.0.0.1:5/live?channel=1&token=a.b/c&Pwd=x')).toBe('rtsp://127.0.0.1:5/live?channel=1&token=argus-relay&Pwd=argus-relay');
    // An HTTP URL's fragment is no part of what ffmpeg sends: left as it is.
    expect(placeholderQuery('http://127.0.0.1:5/live?channel=1&token=a.b/c#f')).toBe('http://127.0.0.1:5/live?channel=1&token=argus-relay#f');
  });
  it("a value holding '#' (an RTSP URL's: ffmpeg sends it to its end) or a ';' that starts no parameter is a secret whole: none of it is left on ffmpeg's command line", () => {
    for (const [url, name, value] of [
      ['rtsp://cam/live?pwd=abc#123', 'pwd', 'abc#123'],
      ['rtsp://cam/live?token=ab;cd&channel=1', 'token', 'ab;cd'],
      ['http://cam/live?token=ab;cd', 'token', 'ab;cd'],
    ]) {
      expect(secretParams(url).get(name)).toEqual([value]);
      const given = url.startsWith('http') ? placeholderQuery(url) : relayUrl(url, 5);
      expect(given).not.toContain(value.slice(-2));
      expect(given).toContain(`${name}=argus-relay`);
      // …and the camera gets it whole back.
      expect(swapSecrets(`DESCRIBE ${given} RTSP/1.0`, secretParams(url), true)).toBe(`DESCRIBE ${given.slice(0, given.indexOf('?'))}${url.slice(url.indexOf('?'))} RTSP/1.0`);
    }
    // A ';' that starts a parameter ends the value.
    expect([...secretParams('rtsp://cam/live?token=ab;channel=1')]).toEqual([['token', ['ab']]]);
    expect(relayUrl('rtsp://cam/live?token=ab;channel=1', 5)).toBe('rtsp://127.0.0.1:5/live?token=argus-relay;channel=1');
  });
  it('swaps whole values only, in a query, ended as cameras end them (a control under a Content-Base ending in the query, an RTP-Info entry)', () => {
    const line = 'SETUP rtsp://127.0.0.1:5/live?channel=1&token=argus-relay/trackID=1 RTSP/1.0';
    expect(swapSecrets(line, secrets, true)).toBe('SETUP rtsp://127.0.0.1:5/live?channel=1&token=a.b/c/trackID=1 RTSP/1.0');
    const info = 'RTP-Info: url=rtsp://cam/live?token=a.b/c/trackID=1;seq=1,url=rtsp://cam/live?Pwd=x;seq=2\r\n';
    expect(swapSecrets(info, secrets, false)).toBe('RTP-Info: url=rtsp://cam/live?token=argus-relay/trackID=1;seq=1,url=rtsp://cam/live?Pwd=argus-relay;seq=2\r\n');
    // Not a whole value, not in a query, another name's value: left.
    for (const t of ['rtsp://cam/live?token=a.b/cd', 'rtsp://cam/token=a.b/c', 'rtsp://cam/live?other=a.b/c', 'rtsp://cam/live?pwd=x']) expect(swapSecrets(t, secrets, false)).toBe(t);
    // A value with what a regular expression would read ($, ., +) is matched as it is, and put back as it is.
    const odd = secretParams('rtsp://cam/?token=a$1+.b');
    expect(swapSecrets('GET /?token=argus-relay HTTP/1.1', odd, true)).toBe('GET /?token=a$1+.b HTTP/1.1');
    expect(swapSecrets('GET /?token=a$1+xb HTTP/1.1', odd, false)).toBe('GET /?token=a$1+xb HTTP/1.1');
  });
  it('a name given twice (?token=a&token=b): each value has a placeholder of its own, and each goes back as given, in order; a reply names each by its own', () => {
    const url = 'rtsp://cam/live?token=a1&channel=1&token=b2&Token=c3';
    const twice = secretParams(url);
    expect([...twice]).toEqual([['token', ['a1', 'b2']], ['Token', ['c3']]]);
    const given = placeholderQuery(url);
    expect(given).toBe('rtsp://cam/live?token=argus-relay&channel=1&token=argus-relay-2&Token=argus-relay');
    expect(swapSecrets(`DESCRIBE ${given}/trackID=1 RTSP/1.0`, twice, true)).toBe(`DESCRIBE ${url}/trackID=1 RTSP/1.0`);
    expect(swapSecrets(`Content-Base: ${url}/\r\n`, twice, false)).toBe(`Content-Base: ${given}/\r\n`);
    // A real value that reads as another's placeholder is not swapped again.
    const odd = secretParams('rtsp://cam/?token=argus-relay-2&token=x');
    expect(swapSecrets('GET /?token=argus-relay&token=argus-relay-2 HTTP/1.1', odd, true)).toBe('GET /?token=argus-relay-2&token=x HTTP/1.1');
  });
  it("AuthRewriter: a request's line and Digest uri get the real value, and the Digest answer is computed for that uri", () => {
    const head = 'DESCRIBE rtsp://127.0.0.1:5/live?token=argus-relay RTSP/1.0\r\nCSeq: 2\r\nAuthorization: Digest username="argus", realm="cam", nonce="n", uri="rtsp://127.0.0.1:5/live?token=argus-relay", response="0"\r\n\r\n';
    const out = Buffer.concat(new AuthRewriter({ user: 'u', password: 'p' }, undefined, { secrets }).push(Buffer.from(head))).toString('latin1');
    const uri = 'rtsp://127.0.0.1:5/live?token=a.b/c';
    expect(out.split('\r\n')[0]).toBe(`DESCRIBE ${uri} RTSP/1.0`);
    expect(out).toContain(`uri="${uri}"`);
    expect(out).toContain(`response="${md5(`${md5('u:cam:p')}:n:${md5(`DESCRIBE:${uri}`)}`)}"`);
  });
  it('AuthRewriter with a body edit: a body is held whole, however it comes, edited, its Content-Length made its own; interleaved packets pass as they are', () => {
    const body = 'v=0\r\na=control:rtsp://cam/live?token=a.b/c/trackID=1\r\n';
    const reply = Buffer.from(`RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Length: ${body.length}\r\nContent-Base: rtsp://cam/live?token=a.b/c/\r\n\r\n${body}`, 'latin1');
    const packet = Buffer.from([0x24, 0, 0, 3, 1, 2, 3]);
    const all = Buffer.concat([packet, reply, packet]);
    const expectedBody = body.replace('a.b/c', 'argus-relay');
    const expected = `RTSP/1.0 200 OK\r\nCSeq: 2\r\nContent-Length: ${expectedBody.length}\r\nContent-Base: rtsp://cam/live?token=argus-relay/\r\n\r\n${expectedBody}`;
    for (let cut = 1; cut < all.length; cut += 7) {
      const rw = new AuthRewriter(undefined, (h) => swapSecrets(h, secrets, false), { body: (_h, b) => swapSecrets(b, secrets, false) });
      const out = Buffer.concat([...rw.push(all.subarray(0, cut)), ...rw.push(all.subarray(cut))]);
      expect(out.equals(Buffer.concat([packet, Buffer.from(expected, 'latin1'), packet]))).toBe(true);
    }
  });
});
