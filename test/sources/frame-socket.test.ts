// The frame socket (sources/frame-socket.ts): ffmpeg's frames read straight into the frame
// buffers. Real Unix sockets; the bytes are written by the test in place of ffmpeg.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BufferPool, FrameReader } from '../../src/sources/frame-reader.js';
import { FRAME_SOCKETS, FrameSocket } from '../../src/sources/frame-socket.js';

const FRAME = 200_003; // several reads a frame, not a multiple of any buffer size

const closed = (s: Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));
const until = async (ok: () => boolean, ms = 5000) => {
  const deadline = Date.now() + ms;
  while (!ok() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
};

describe.runIf(FRAME_SOCKETS)('FrameSocket', () => {
  it('frames come whole and in order, each read into a pooled frame buffer; `hold` stops reading at a frame boundary until `resume`; the end is told once every byte is read', async () => {
    const fs = await FrameSocket.open();
    const sent = randomBytes(FRAME * 5 + 77); // 5 frames and a partial one
    const got: Buffer[] = [];
    const pool = new BufferPool(FRAME);
    const reader = new FrameReader(FRAME, pool, (f) => got.push(Buffer.from(f)));
    let holding = true;
    let ends = 0;
    fs.onEnd = () => ends++;
    fs.feed(reader, () => holding && got.length === 2);
    const childEnd = fs.childEnd!;
    childEnd.end(sent);
    fs.resume();
    await until(() => got.length === 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toHaveLength(2); // held after the second frame, though the rest was sent
    expect(fs.ended).toBe(false);
    holding = false;
    fs.resume();
    await until(() => fs.ended);
    expect(ends).toBe(1);
    expect(got).toHaveLength(5);
    expect(Buffer.concat(got).equals(sent.subarray(0, FRAME * 5))).toBe(true);
    expect(reader.pending).toBe(77); // the partial frame, never delivered
    expect(pool.allocated).toBeLessThanOrEqual(6);
    fs.destroy();
  });

  it('only its own connection is taken: a local process that connects before it, with a wrong token or none, gets nothing, and once the pair is made nothing else can connect', async () => {
    let name = '';
    const strangers: Socket[] = [];
    const fs = await FrameSocket.open({
      listening: async (n) => {
        name = n;
        const wrong = connect({ path: n });
        wrong.on('error', () => {});
        wrong.write(randomBytes(16));
        const silent = connect({ path: n });
        silent.on('error', () => {});
        strangers.push(wrong, silent);
        await Promise.all(strangers.map((s) => new Promise((r) => s.once('connect', r))));
        await closed(wrong); // refused for its token, before argus's own connection is made
      },
    });
    await Promise.all(strangers.map(closed)); // the silent one: dropped once the pair is made
    // What is written to ffmpeg's end reaches argus's reader, not a stranger.
    const got: Buffer[] = [];
    fs.feed(new FrameReader(4, new BufferPool(4), (f) => got.push(Buffer.from(f))));
    fs.childEnd!.write('abcd');
    fs.resume();
    await until(() => got.length === 1);
    expect(got.map(String)).toEqual(['abcd']);
    const late = connect({ path: name });
    const err = await new Promise<NodeJS.ErrnoException>((r) => late.once('error', r));
    expect(err.code).toBe('ECONNREFUSED');
    fs.destroy();
  });

  it('`spawned` closes argus\'s copy of ffmpeg\'s end: the reader sees the end when the other copy closes', async () => {
    const fs = await FrameSocket.open();
    const childEnd = fs.childEnd!;
    fs.feed(new FrameReader(8, new BufferPool(8), () => {}));
    fs.resume();
    fs.spawned();
    expect(fs.childEnd).toBeUndefined();
    await closed(childEnd);
    await until(() => fs.ended);
    expect(fs.ended).toBe(true);
    fs.destroy();
  });
});

describe('FrameReader.target / advance (reads straight into the frame)', () => {
  it('target is the unwritten rest of the frame; a completed frame goes out and `hold` is asked before the next', () => {
    const frames: string[] = [];
    const reader = new FrameReader(4, new BufferPool(4), (f) => frames.push(String(f)));
    let t = reader.target();
    expect(t.length).toBe(4);
    t.write('ab');
    expect(reader.advance(2, () => true)).toBe(true); // mid-frame: hold not asked
    t = reader.target();
    expect(t.length).toBe(2);
    t.write('cd');
    expect(reader.advance(2, () => true)).toBe(false);
    expect(frames).toEqual(['abcd']);
    reader.target().write('ef');
    reader.advance(2);
    expect(reader.pending).toBe(2);
    expect(reader.discardPartial()).toBe(2);
    expect(frames).toEqual(['abcd']);
  });
});
