import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { refuseSocket } from '../../src/core/http.js';

afterEach(() => vi.useRealTimers());

describe('refuseSocket', () => {
  it('answers, ends, and lets the socket go once it is closed: no timer holds it (an upgrade flood refused with 401 or 429 kept ~2 s of closed sockets, ~6 MB at 2 000 a second)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const s = new PassThrough();
    let answer = '';
    s.on('data', (d) => (answer += d));
    refuseSocket(s, 429, 'Too Many Requests', { 'Retry-After': '2' });
    await new Promise((r) => s.once('close', r));
    expect(answer).toBe('HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 2\r\n\r\n');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a peer that never reads is cut off after 2 s', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const s = new PassThrough({ highWaterMark: 1 }); // nothing reads it: never finishes
    refuseSocket(s, 401, 'Unauthorized');
    expect(s.destroyed).toBe(false);
    vi.advanceTimersByTime(2000);
    expect(s.destroyed).toBe(true);
  });
});
