import { describe, expect, it } from 'vitest';
import { BufferPool, FrameReader } from '../../src/sources/frame-reader.js';

describe('FrameReader', () => {
  const collect = (size: number, chunks: number[][]) => {
    const pool = new BufferPool(size);
    const frames: number[][] = [];
    const r = new FrameReader(size, pool, (f) => {
      frames.push(Array.from(f));
      pool.release(f);
    });
    for (const c of chunks) r.push(Buffer.from(c));
    return { frames, r, pool };
  };

  it.each([
    ['no bytes, no frames', [], []],
    ['one exact frame', [[1, 2, 3, 4]], [[1, 2, 3, 4]]],
    ['a frame split over chunks', [[1], [2, 3], [4]], [[1, 2, 3, 4]]],
    ['two frames in one chunk', [[1, 2, 3, 4, 5, 6, 7, 8]], [[1, 2, 3, 4], [5, 6, 7, 8]]],
    ['a chunk that ends a frame and starts the next', [[1, 2, 3], [4, 5], [6, 7, 8]], [[1, 2, 3, 4], [5, 6, 7, 8]]],
  ])('%s', (_n, chunks, want) => {
    expect(collect(4, chunks).frames).toEqual(want);
  });

  it('holds a partial frame until it is complete, and can discard it', () => {
    const { frames, r } = collect(4, [[1, 2, 3, 4, 5, 6]]);
    expect(frames).toHaveLength(1);
    expect(r.pending).toBe(2);
    expect(r.discardPartial()).toBe(2);
    r.push(Buffer.from([9, 9, 9, 9]));
    expect(frames[1]).toEqual([9, 9, 9, 9]); // no stale bytes from the discarded frame
  });

  it('reuses released buffers: a steady stream allocates nothing new', () => {
    const { pool } = collect(4, Array.from({ length: 100 }, () => [1, 2, 3, 4]));
    expect(pool.allocated).toBe(1);
  });

  it('allocates when frames are held, and keeps at most maxFree for reuse', () => {
    const pool = new BufferPool(2, 2);
    const held: Buffer[] = [];
    const r = new FrameReader(2, pool, (f) => held.push(f));
    r.push(Buffer.from([1, 2, 3, 4, 5, 6]));
    expect(pool.allocated).toBe(3);
    held.forEach((b) => pool.release(b));
    r.push(Buffer.from([7, 8, 9, 10, 11, 12]));
    expect(pool.allocated).toBe(4); // two reused, one new
  });
});

describe('FrameReader with a hold', () => {
  it('begins no new frame while held: returns the bytes consumed, and the rest cuts on when pushed again', () => {
    const frames: number[][] = [];
    let held = false;
    const r = new FrameReader(2, new BufferPool(2), (f) => {
      frames.push(Array.from(f));
      held = true; // the consumer is busy with each frame it gets
    });
    const chunk = Buffer.from([1, 2, 3, 4, 5, 6, 7]);
    expect(r.push(chunk, () => held)).toBe(2);
    expect(frames).toEqual([[1, 2]]);
    held = false;
    expect(r.push(chunk.subarray(2), () => held)).toBe(2);
    held = false;
    expect(r.push(chunk.subarray(4), () => held)).toBe(2);
    held = false;
    // One byte left: a frame is begun and stays partial.
    expect(r.push(chunk.subarray(6), () => held)).toBe(1);
    expect(frames).toEqual([[1, 2], [3, 4], [5, 6]]);
    expect(r.pending).toBe(1);
  });
});
