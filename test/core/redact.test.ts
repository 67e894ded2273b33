import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { readCamera } from '../../src/cluster/view.js';
import { cutUserInfo, forgetSecrets, MAX_SECRETS, redact, redactBroker, redactDeep, rememberSecret, rememberUrlSecrets } from '../../src/core/redact.js';

describe('redact', () => {
  it.each([
    ['user and password', 'rtsp://admin:hunter2@cam/x', 'rtsp://***@cam/x'],
    ['a password with @ in it (ffmpeg splits at the last @)', 'rtsp://admin:p@ss@cam/x', 'rtsp://***@cam/x'],
    ["a password with a quote", "rtsp://u:it's@cam:554/a", 'rtsp://***@cam:554/a'],
    // A quote then ':' was taken for the end of a JSON string, and the whole URL printed.
    ['a password holding `":`', 'ffmpeg exited for rtsp://admin:pa":ss@cam/x; retry', 'ffmpeg exited for rtsp://***@cam/x; retry'],
    ['a password holding `":` and `@`', 'rtsp://admin:pa":@x@cam/x', 'rtsp://***@cam/x'],
    // JSON's `\"` is a quote inside the string: never its end, whatever follows it.
    ['a JSON-escaped `\\":`', '{"msg":"failed for rtsp://admin:pa\\":ss@cam/x","n":1}', '{"msg":"failed for rtsp://***@cam/x","n":1}'],
    ['a JSON-escaped quote before "}" and ","', '{"msg":"rtsp://admin:a\\"},\\"b@cam/x"}', '{"msg":"rtsp://***@cam/x"}'],
    ['escaped twice (a record inside a log line)', '{"msg":"got {\\"u\\":\\"rtsp://admin:pa\\\\\\":ss@cam/x\\"}"}', '{"msg":"got {\\"u\\":\\"rtsp://***@cam/x\\"}"}'],
    ['a backslash in the password', 'rtsp://admin:a\\b\\@cam/x', 'rtsp://***@cam/x'],
    ['a secret parameter holding a quote', 'http://cam/a.cgi?user=admin&pwd=pa"ss&x=1', 'http://cam/a.cgi?user=admin&pwd=***&x=1'],
    ['a secret parameter holding `":`, JSON-escaped', '{"u":"http://cam/a.cgi?pwd=pa\\":ss&x=1"}', '{"u":"http://cam/a.cgi?pwd=***&x=1"}'],
    ['a secret parameter closing a JSON string', '{"u":"http://cam/a?token=abc","n":"x@y"}', '{"u":"http://cam/a?token=***","n":"x@y"}'],
    ['secret query parameters', 'http://cam/a?token=abc&x=1&password=p', 'http://cam/a?token=***&x=1&password=***'],
    ["SRT's passphrase and stream id", 'srt://enc:9000?passphrase=longsecret1&streamid=#!::r=cam,u=op&latency=200', 'srt://enc:9000?passphrase=***&streamid=***&latency=200'],
    ['inside JSON, stopping at the closing quote', '{"uri":"rtsp://a:b@c/d","x":"e@f"}', '{"uri":"rtsp://***@c/d","x":"e@f"}'],
    ['inside JSON, a URL without a path or a password is not run into the next field', '{"uri":"rtsp://cam-1:554","owner":"ops@corp.example"}', '{"uri":"rtsp://cam-1:554","owner":"ops@corp.example"}'],
    ['names that merely contain a secret word are not secrets', 'http://h/a?keyframe=1&SignedHeaders=host&author=me&token=t', 'http://h/a?keyframe=1&SignedHeaders=host&author=me&token=***'],
    ['an @ in the path is not user-info', 'http://host/a@b', 'http://host/a@b'],
    ['text without URLs is left alone', 'mail me@host', 'mail me@host'],
    ['a double quote in the password', 'exited for rtsp://admin:pa"ss@127.0.0.1:19798/x; retry', 'exited for rtsp://***@127.0.0.1:19798/x; retry'],
    ['a scheme after dots', 'see a.b.rtsp://u:p@h/x', 'see a.b.rtsp://***@h/x'],
    // ffmpeg's authority ends at '/', '?' or '#': these were printed whole (log, /api/sources, status).
    ["a '#' in the password", 'ffmpeg exited with code 1 for rtsp://user:sec#ret1@127.0.0.1:1/x; retry 9', 'ffmpeg exited with code 1 for rtsp://***@127.0.0.1:1/x; retry 9'],
    ["a '/' in the password", 'rtsp://admin:pa/ss2@127.0.0.1:1/x', 'rtsp://***@127.0.0.1:1/x'],
    ["a '?' in the password", 'rtsp://admin:pa?ss3@127.0.0.1:1/x?token=t', 'rtsp://***@127.0.0.1:1/x?token=***'],
    ['inside JSON, a cut password still stops at the closing quote', '{"uri":"rtsp://a:b#c@d/e","x":"f@g"}', '{"uri":"rtsp://***@d/e","x":"f@g"}'],
    ['a port, then an @ in the query, is no password', 'http://host:8080/p?e=a@b', 'http://host:8080/p?e=a@b'],
    ["a password of digits with '/' in it (not a port)", 'rtsp://admin:1234/5678@127.0.0.1:18903/stream1', 'rtsp://***@127.0.0.1:18903/stream1'],
    ["a password of digits with '#' in it", 'rtsp://admin:2024#77@cam/x', 'rtsp://***@cam/x'],
    ["a '/' in the user name", 'rtsp://dom/user:hunter2@cam/x', 'rtsp://***@cam/x'],
    ["SRT's passphrase with '#' in it (ffmpeg reads it to the next '&')", 'srt://h:9000?passphrase=abcdef#ghijkl1234&latency=1', 'srt://h:9000?passphrase=***&latency=1'],
    ['an IPv6 host, then an @ in the path', 'rtsp://[::1]:554/a@b', 'rtsp://[::1]:554/a@b'],
    ['secret parameters after #, and percent-encoded names', 'http://cam/a?to%6Ben=s1&x=1#token=s2', 'http://cam/a?to%6Ben=***&x=1#token=***'],
    ["cheap cameras' CGI passwords, GitLab's token, sessions", 'http://cam/snapshot.cgi?loginuse=admin&loginpas=s1&private_token=s2&sessionid=s3', 'http://cam/snapshot.cgi?loginuse=admin&loginpas=***&private_token=***&sessionid=***'],
    // A URL with one slash is read as a file path: its error names it, password included.
    ['a mistyped URL with one slash, inside a path', 'file not found: /tmp/x/rtsp:/admin:Hunter2Secret@10.0.0.5/stream1', 'file not found: /tmp/x/rtsp:/***@10.0.0.5/stream1'],
    [
      'parameters whose names hold a secret word',
      'http://h/a?X-Amz-Signature=s1&X-Amz-Security-Token=s2&X-Amz-Credential=s3&client_secret=s4&api-key=s5&access-token=s6&jwt=s7&X-Goog-Signature=s8&width=640',
      'http://h/a?X-Amz-Signature=***&X-Amz-Security-Token=***&X-Amz-Credential=***&client_secret=***&api-key=***&access-token=***&jwt=***&X-Goog-Signature=***&width=640',
    ],
  ])('%s', (_n, text, want) => {
    expect(redact(text)).toBe(want);
  });

  it.each([
    // ffmpeg reads host `admin`, port 1234 (and its errors print `admin:1234`): refused, as no redaction could find the rest.
    ['rtsp://admin:1234/5678@cam/live', true],
    ['rtsp://admin:Zm9v/YmFy=@cam/live', true],
    ['rtsp://admin:pa#ss&w0rd@cam/x', true],
    ['rtsp://ops@example.com:pa/ss@cam/x', true],
    ['rtsp://dom/user:pw@cam/x', true],
    // A path or query with an '@' after a port looks the same: refused (write the '@' as %40).
    ['rtsp://cam:554/live@main', true],
    ['rtsp://cam:554/live%40main', false],
    ['rtsp://admin:p@ss@cam:554/live', false],
    ['rtsp://admin:secret@cam/live', false],
    ['http://cam/files/alice@example.com/x.mp4', false],
    ['rtsp://[::1]:554/live', false],
  ])('cutUserInfo(%s) → %s', (url, cut) => {
    expect(cutUserInfo(url)).toBe(cut);
  });

  it('redactDeep copies only what changed', () => {
    const clean = { a: 'x', b: [1, 'y'] };
    expect(redactDeep(clean)).toBe(clean);
    expect(redactDeep({ s: { reason: 'rtsp://u:p@h/' }, n: 3 })).toEqual({ s: { reason: 'rtsp://***@h/' }, n: 3 });
  });
});

describe('credential headers in text (an ffmpeg debug log, an error quoting a request head)', () => {
  it.each([
    ['Basic', 'Authorization: Basic YWRtaW46aHVudGVyMg==', 'Authorization: Basic ***'],
    ['Bearer, in a request head', '[http @ 0x55] request: GET /x HTTP/1.1\r\nHost: cam\r\nauthorization: Bearer eyJh.eyJz.c2ln\r\nAccept: */*\r\n', '[http @ 0x55] request: GET /x HTTP/1.1\r\nHost: cam\r\nauthorization: Bearer ***\r\nAccept: */*\r\n'],
    ['Digest: its parameters, the scheme kept', 'Authorization: Digest username="admin", realm="cam", nonce="n1", uri="/x", response="d41d8cd98f00"\nHost: cam', 'Authorization: Digest ***"\nHost: cam'],
    ['Proxy-Authorization', 'CONNECT cam:443 HTTP/1.1\r\nProxy-Authorization: Basic cHJveHk6cHc=\r\n\r\n', 'CONNECT cam:443 HTTP/1.1\r\nProxy-Authorization: Basic ***\r\n\r\n'],
    ['no scheme', 'Authorization: abc123', 'Authorization: ***'],
    ['Cookie and Set-Cookie, whole', 'Cookie: lang=en; sid=s3ss\nSet-Cookie: sid=n3w; Path=/; HttpOnly', 'Cookie: ***\nSet-Cookie: ***'],
    ['X- credential headers', 'X-API-Key: k3y\nX-Auth-Token: t0k\nX-Forwarded-For: 10.0.0.1', 'X-API-Key: ***\nX-Auth-Token: ***\nX-Forwarded-For: 10.0.0.1'],
    // In a JSON log line: to the end of the escaped line, or the string's closing quote.
    [
      'a request head in a JSON string',
      JSON.stringify({ msg: 'head: GET / HTTP/1.1\r\nAuthorization: Digest username="admin",response="abc"\r\nCookie: sid=xyz\r\n', n: 1 }),
      JSON.stringify({ msg: 'head: GET / HTTP/1.1\r\nAuthorization: Digest ***\r\nCookie: ***\r\n', n: 1 }),
    ],
    ['the end of a JSON string', JSON.stringify({ msg: 'Authorization: Bearer abc', n: 1 }), JSON.stringify({ msg: 'Authorization: Bearer ***', n: 1 })],
    ['a JSON object of headers', JSON.stringify({ headers: { authorization: 'Basic Zm9vOmJhcg==', host: 'x' } }), JSON.stringify({ headers: { authorization: 'Basic ***', host: 'x' } })],
    ['escaped once more', JSON.stringify({ msg: JSON.stringify({ headers: { Authorization: 'Basic Zm9vOmJhcg==', host: 'x' } }) }), JSON.stringify({ msg: JSON.stringify({ headers: { Authorization: 'Basic ***', host: 'x' } }) })],
    ['a quote around the header, in plain text', 'sent "Authorization: Basic Zm9v" and got 401', 'sent "Authorization: Basic ***" and got 401'],
    // Not credential headers.
    ['other headers and colons', 'Host: cam\nunexpected token: }\nx-request-id: a\nmy-authorization: b', 'Host: cam\nunexpected token: }\nx-request-id: a\nmy-authorization: b'],
  ])('%s', (_n, text, want) => {
    expect(redact(text)).toBe(want);
  });

  it('stays linear on a hostile 64 KB line (and on one four times that)', () => {
    /** Hostile lines of about `k` KB. */
    const lines = (k: number) => [
      'Authorization: '.repeat(68 * k),
      'Authorization: "'.repeat(64 * k),
      `Authorization: ${'",'.repeat(512 * k)}`,
      `Authorization: B${' '.repeat(1000 * k)}`,
      `Cookie:${' '.repeat(1024 * k)}`,
      `x-auth-${'a'.repeat(60)} :`.repeat(12 * k),
      'a:'.repeat(512 * k),
      '\\r\\nauthorization:\\"'.repeat(50 * k),
      `${'a'.repeat(1024 * k)}:`,
      ('"authorization"' + ' '.repeat(100)).repeat(9 * k),
    ];
    // Milliseconds of this process's CPU each (not of the clock: a machine at load 20 gave a
    // 64 KB line over 500 ms of wall time in a CI run); bounds with room. Quadratic (each header's
    // value read to the line's end), the first took 300 ms at 64 KB and 5 s at 256 KB.
    const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
    for (const [k, bound] of [[64, 500], [256, 2000]]) {
      for (const line of lines(k)) {
        const t0 = process.cpuUsage();
        redact(line);
        expect(cpuMs(process.cpuUsage(t0)), `${k} KB: ${line.slice(0, 40)}`).toBeLessThan(bound);
      }
    }
  });
});

describe('redactBroker', () => {
  it.each([
    ['host:port as it is', '127.0.0.1:9092', '127.0.0.1:9092'],
    ['user and password before the host', 'admin:hunter2@kafka-1:9092', '***@kafka-1:9092'],
    ['a user alone', 'admin@kafka-1:9092', '***@kafka-1:9092'],
    ['a password with @ in it', 'admin:p@ss@kafka-1:9092', '***@kafka-1:9092'],
    ['as a URL', 'kafka://admin:hunter2@kafka-1:9092', 'kafka://***@kafka-1:9092'],
    ['a URL without credentials', 'kafka://kafka-1:9092', 'kafka://kafka-1:9092'],
  ])('%s', (_n, address, want) => {
    expect(redactBroker(address)).toBe(want);
  });
});

describe('secrets argus was given', () => {
  afterEach(() => forgetSecrets());

  // Passwords no pattern can bound in formatted text: each is remembered as the config gives it
  // (percent-encoded or raw) and must be found in every form it is printed in.
  const passwords = ['pa":ss', 's3cr"}t', 'x",y"]z', 'a\\b"c', 'p@ss:w%2Frd', 'tr%40iky%2Fpw', 'qu%22%3Aote', "it's:\"q\"", 'pässwörd"'];
  const forms = (p: string): string[] => {
    const decoded = decodeURIComponent(p);
    const json = (t: string) => JSON.stringify(t).slice(1, -1);
    return [p, decoded, encodeURIComponent(decoded), json(p), json(decoded), json(json(decoded))];
  };
  /** Every way the password is printed: in the URL, in a query, alone, JSON-escaped once and twice. */
  const texts = (p: string): string[] =>
    forms(p).flatMap((f) => [
      `ffmpeg failed for rtsp://admin:${f}@cam.example/stream1: 401 Unauthorized`,
      `GET /a.cgi?user=admin&pwd=${f}&x=1`,
      `camera said: password "${f}" refused`,
      `{"msg":"${f}","n":1}`,
    ]);
  const leaks = (p: string, out: string): string[] => forms(p).filter((f) => out.includes(f));

  it.each(passwords)('a source password %j is redacted in every form once its URL is read', (p) => {
    rememberUrlSecrets(`rtsp://admin:${p}@cam.example/stream1`);
    for (const t of texts(p)) expect(leaks(p, redact(t)), t).toEqual([]);
  });

  it.each(passwords)('a secret query value %j too', (p) => {
    rememberUrlSecrets(`http://cam.example/a.cgi?user=admin&pwd=${p}`);
    for (const t of texts(p)) expect(leaks(p, redact(t)), t).toEqual([]);
    expect(JSON.stringify(redactDeep({ reason: `http://cam.example/a.cgi?pwd=${p}` }))).not.toContain(JSON.stringify(p).slice(1, -1));
  });

  it('the config remembers them as it reads them, from ${env:…} too', () => {
    const env = { CAM_PASS: 's3cr"}t', KAFKA_PASS: 'k"]pass', TOKEN: 'tok":en1' };
    parseConfigText(
      [
        'sources:',
        '  - {id: cam, uri: "rtsp://admin:${env:CAM_PASS}@cam.example/s"}',
        'sinks:',
        '  kafka: {brokers: ["127.0.0.1:9092"], sasl: {mechanism: plain, username: u, password: "${env:KAFKA_PASS}"}}',
        'server: {token: "${env:TOKEN}"}',
      ].join('\n'),
      PipelineSchema,
      'test.yaml',
      env,
    );
    const line = JSON.stringify({ msg: `rtsp://admin:${env.CAM_PASS}@cam.example/s refused; sasl ${env.KAFKA_PASS}; token ${env.TOKEN}` });
    const out = redact(line);
    for (const v of Object.values(env)) expect(out).not.toContain(JSON.stringify(v).slice(1, -1));
  });

  describe("a source's inputArgs secrets, remembered as the config reads them", () => {
    const load = (inputArgs: string[], env: Record<string, string> = {}) => {
      const yaml = ['sources:', `  - {id: cam, uri: "https://cam.example/live.m3u8", inputArgs: ${JSON.stringify(inputArgs)}}`].join('\n');
      try {
        parseConfigText(yaml, PipelineSchema, 'test.yaml', env);
        return undefined;
      } catch (e) {
        return e as Error;
      }
    };
    /** The secret printed alone, in a log line (JSON, so escaped once), and in an error's text. */
    const printed = (secret: string) => [
      JSON.stringify({ level: 'warn', msg: `camera answered 401 to ${secret}`, n: 1 }),
      `VAP_ERR_SOURCE_OPEN: source cam: ffmpeg exited: [https @ 0x5581] token ${secret} refused (HTTP 401)`,
    ];
    const leaks = (secret: string) => printed(secret).map(redact).filter((t) => t.includes(secret) || t.includes(JSON.stringify(secret).slice(1, -1)));

    it.each([
      ['-headers Authorization (Bearer)', ['-headers', 'Authorization: Bearer eyJhbGciOi.payload.sig'], 'eyJhbGciOi.payload.sig'],
      ['-headers Authorization (Basic)', ['-headers', 'Accept: */*\r\nAuthorization: Basic YWRtaW46aHVudGVyMg==\r\n'], 'YWRtaW46aHVudGVyMg=='],
      ['-headers X-API-Key', ['-headers', 'X-API-Key: k3y-"}value'], 'k3y-"}value'],
      ['-headers Proxy-Authorization', ['-headers', 'Proxy-Authorization: Basic cHJveHk6cHc='], 'cHJveHk6cHc='],
      ['-headers Cookie', ['-headers', 'Cookie: lang=en; session=s3ss10n-id'], 's3ss10n-id'],
      ['-cookies', ['-cookies', 'sid=c00kie-value; path=/; domain=cam.example\nother=second-one'], 'c00kie-value'],
      ['-cookies (second line)', ['-cookies', 'sid=c00kie-value; path=/\nother=second-one'], 'second-one'],
      ['-http_proxy password', ['-http_proxy', 'http://proxyuser:pr0xy"pw@proxy.example:3128'], 'pr0xy"pw'],
    ])('%s', (_, inputArgs, secret) => {
      expect(leaks(secret)).toHaveLength(2);
      expect(load(inputArgs)).toBeUndefined();
      expect(leaks(secret)).toEqual([]);
    });

    it.each([
      ['-passphrase', ['-passphrase', 'srt-passphrase-1'], 'srt-passphrase-1'],
      ['-srtp_in_params', ['-srtp_in_params', 'zRF9iIn1Vq5vHdQhDWvE2mx4oWqZgn5mQ6sKp1d0'], 'zRF9iIn1Vq5vHdQhDWvE2mx4oWqZgn5mQ6sKp1d0'],
      ['-rtmp_conn', ['-rtmp_conn', 'B:1 S:rtmp-t0ken NS:auth:second-t0ken'], 'second-t0ken'],
    ])('%s: refused by the schema, its value remembered all the same (the error does not repeat it)', (_, inputArgs, secret) => {
      const error = load(inputArgs);
      expect(error).toBeDefined();
      expect(error!.message).not.toContain(secret);
      expect(leaks(secret)).toEqual([]);
    });

    it('from ${env:…} too, and each header of a -headers value', () => {
      const env = { HEADERS: 'User-Agent: argus\r\nX-Auth-Token: t0k"}en\r\nAuthorization: Bearer be4rer-t0ken' };
      expect(load(['-headers', '${env:HEADERS}'], env)).toBeUndefined();
      expect(leaks('t0k"}en')).toEqual([]);
      expect(leaks('be4rer-t0ken')).toEqual([]);
      // Not a credential header's value: left as it is.
      expect(redact('user agent argus')).toBe('user agent argus');
    });
  });

  it.each([
    // A camera whose password is the very text a pattern reads; another URL in the same text (a redirect: argus was not given its secret).
    ['password', 'cam-b redirected ffmpeg to http://cdn.example/s.m3u8?password=Xk2', 'cam-b redirected ffmpeg to http://cdn.example/s.m3u8?***=***'],
    ['token', 'cam-b redirected ffmpeg to http://cdn.example/s.m3u8?token=eyJhbGciOi.J9.sig&x=1', 'cam-b redirected ffmpeg to http://cdn.example/s.m3u8?***=***&x=1'],
    ['rtsp', 'ffmpeg: rtsp://admin:Zq9@cam-b/x: 401', 'ffmpeg: ***://***@cam-b/x: 401'],
    ['admin', 'ffmpeg: rtsp://admin:Zq9@cam-b/x?pwd=ab1#c: 401', 'ffmpeg: rtsp://***@cam-b/x?pwd=*** 401'],
    ['pass', 'SRT srt://h:9000?passphrase=abc#def&x=1', 'SRT srt://h:9000?***phrase=***&x=1'],
  ])('a password %j that is text a pattern reads does not hide another secret from it', (password, text, want) => {
    rememberUrlSecrets(`rtsp://admin:${password}@cam-a/live`);
    expect(redact(text)).toBe(want);
    // (The password itself is starred wherever it appears, as any remembered secret.)
    expect(redact(`x ${password} y`)).toBe('x *** y');
  });

  it('a password no pattern bounds is starred with the user-info around it, as before', () => {
    rememberUrlSecrets('rtsp://admin:s"}t@cam/x');
    expect(redact('ffmpeg: rtsp://admin:s"}t@cam/x: 401; again s"}t')).toBe('ffmpeg: rtsp://***@cam/x: 401; again ***');
    expect(redact('{"u":"rtsp://admin:s\\"}t@cam/x","n":1}')).toBe('{"u":"rtsp://***@cam/x","n":1}');
  });

  it('short secrets are left to the patterns; the oldest are forgotten past the limit', () => {
    rememberSecret('abc');
    expect(redact('abc')).toBe('abc');
    expect(redact('rtsp://u:abc@h/x')).toBe('rtsp://***@h/x');
    rememberSecret('first-secret');
    for (let i = 0; i < MAX_SECRETS; i++) rememberSecret(`secret-${i}`);
    expect(redact(`first-secret secret-${MAX_SECRETS - 1} secret-0`)).toBe('first-secret *** ***');
  });

  it('one remembered again is the most recent again: a running camera\'s password outlives rotated ones', () => {
    rememberSecret('kept-secret');
    rememberSecret('old-secret');
    for (let i = 0; i < MAX_SECRETS - 2; i++) rememberSecret(`secret-${i}`);
    rememberSecret('kept-secret');
    rememberSecret('one-more');
    expect(redact('kept-secret old-secret one-more')).toBe('*** old-secret ***');
  });

  it("a cluster worker holding 10 000 cameras (cluster.maxCameras' default) keeps every camera's password: the first camera's was forgotten and printed whole", () => {
    const pw = (i: number) => `Pw"}${i}t`;
    for (let i = 0; i < 10_000; i++) {
      const r = readCamera(`cam${i}`, JSON.stringify({ id: `cam${i}`, uri: `rtsp://admin:${encodeURIComponent(pw(i))}@10.0.${i >> 8}.${i & 255}/live?token=Tok${i}abcd` }), {});
      expect(r.error).toBeUndefined();
    }
    for (const i of [0, 1, 5000, 9999]) {
      const line = redact(`source cam${i}: FAILED: rtsp://admin:${pw(i)}@10.0.0.1/live?token=Tok${i}abcd: 401 Unauthorized`);
      expect(line).toBe(`source cam${i}: FAILED: rtsp://***@10.0.0.1/live?token=*** 401 Unauthorized`);
    }
  });

  it('remembering one more does not make redaction slow: each secret a camera record brings, with a log line after it, among 10 000 (each took 80-650 ms)', () => {
    for (let i = 0; i < 10_000; i++) rememberSecret(`p%22w"}${i}-${(i * 7919).toString(36)}`);
    const line = 'source cam-0042: running → reconnecting (ffmpeg exited: rtsp://***@10.0.0.42:554/Streaming/Channels/101: Connection refused)';
    const t0 = performance.now();
    for (let i = 0; i < 25; i++) {
      rememberSecret(`new%22"}${i}-secret`);
      expect(redact(line)).toBe(line);
    }
    const big = `${line} `.repeat(100);
    expect(redact(big)).toBe(big);
    // A bound with room for a busy machine (this took 10 s and more); it is milliseconds.
    expect(performance.now() - t0).toBeLessThan(3000);
  });
});

