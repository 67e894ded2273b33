/**
 * An alert's picture is answered only to its URL's key (/api/snapshot?id=&key=), and the key is a
 * secret of the picture: it was compared with `===`, which stops at the first byte that differs,
 * so the time of a refused guess told how much of it was right. It goes through tokenMatches now
 * (both sides hashed, then timingSafeEqual: neither content nor length shows in the time).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tokenMatches } from '../../src/core/http.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';
import type { Message } from '../../src/sinks/message.js';

vi.mock('../../src/core/http.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/core/http.js')>();
  return { ...real, tokenMatches: vi.fn(real.tokenMatches) };
});

const hubs: WebSocketHub[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) await h.close();
});

describe('WebSocketHub.snapshot: the picture\'s key', () => {
  it('is compared in constant time, and only the right key of the right length opens the picture', () => {
    const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['cam'] });
    hubs.push(hub);
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    const alert = { id: 'cam:r:run-1:1', rule: 'r', severity: 'critical', event: 'zone.enter', message: 'm', snapshot: { contentType: 'image/jpeg', data: jpeg.toString('base64'), width: 2, height: 2 } };
    const m = { type: 'alert', version: 1, source: 'cam', alert } as unknown as Message;
    hub.publish('alert', 'cam', JSON.stringify(m), m);
    const q = new URL(hub.snapshotUrl(alert.id)!, 'http://x').searchParams;
    const key = q.get('key')!;
    expect(key.length).toBeGreaterThan(8);
    vi.mocked(tokenMatches).mockClear();
    expect(hub.snapshot(alert.id, key)?.equals(jpeg)).toBe(true);
    const wrong = ['', key.slice(1), `${key}x`, key.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), key.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')), `${key}\u00e9`];
    for (const k of wrong) expect(hub.snapshot(alert.id, k), k).toBeUndefined();
    // Every comparison went through the constant-time one, with the key as sent.
    expect(vi.mocked(tokenMatches).mock.calls.map((c) => c[0])).toEqual([key, ...wrong]);
    // An alert id no picture holds is not compared at all (the id is no secret).
    expect(hub.snapshot('cam:r:run-1:2', key)).toBeUndefined();
    expect(vi.mocked(tokenMatches)).toHaveBeenCalledTimes(1 + wrong.length);
  });
});
