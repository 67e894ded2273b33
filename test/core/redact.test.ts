import { describe, expect, it } from 'vitest';
import { cutUserInfo, redact, redactBroker, redactDeep } from '../../src/core/redact.js';

describe('redact', () => {
  it.each([
    ['user and password', 'rtsp://admin:hunter2@cam/x', 'rtsp://***@cam/x'],
    ['a password with @ in it (ffmpeg splits at the last @)', 'rtsp://admin:p@ss@cam/x', 'rtsp://***@cam/x'],
    ["a password with a quote", "rtsp://u:it's@cam:554/a", 'rtsp://***@cam:554/a'],
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
