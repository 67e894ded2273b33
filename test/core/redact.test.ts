import { describe, expect, it } from 'vitest';
import { redact, redactDeep } from '../../src/core/redact.js';

describe('redact', () => {
  it.each([
    ['user and password', 'rtsp://admin:hunter2@cam/x', 'rtsp://***@cam/x'],
    ['a password with @ in it (ffmpeg splits at the last @)', 'rtsp://admin:p@ss@cam/x', 'rtsp://***@cam/x'],
    ["a password with a quote", "rtsp://u:it's@cam:554/a", 'rtsp://***@cam:554/a'],
    ['secret query parameters', 'http://cam/a?token=abc&x=1&password=p', 'http://cam/a?token=***&x=1&password=***'],
    ["SRT's passphrase and stream id", 'srt://enc:9000?passphrase=longsecret1&streamid=#!::r=cam,u=op&latency=200', 'srt://enc:9000?passphrase=***&streamid=***&latency=200'],
    ['inside JSON, stopping at the closing quote', '{"uri":"rtsp://a:b@c/d","x":"e@f"}', '{"uri":"rtsp://***@c/d","x":"e@f"}'],
    ['an @ in the path is not user-info', 'http://host/a@b', 'http://host/a@b'],
    ['text without URLs is left alone', 'mail me@host', 'mail me@host'],
  ])('%s', (_n, text, want) => {
    expect(redact(text)).toBe(want);
  });

  it('redactDeep copies only what changed', () => {
    const clean = { a: 'x', b: [1, 'y'] };
    expect(redactDeep(clean)).toBe(clean);
    expect(redactDeep({ s: { reason: 'rtsp://u:p@h/' }, n: 3 })).toEqual({ s: { reason: 'rtsp://***@h/' }, n: 3 });
  });
});
