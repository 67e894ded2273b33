import { lastValueFrom, from, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { Pool } from '../../src/core/pool.js';
import { letterboxTensor } from '../../src/preprocess/letterbox.js';
import { preprocess, type InputTensor } from '../../src/preprocess/preprocess.js';

/** A packed BGR picture whose every byte is `v`'s pattern (no two sizes alike). */
function picture(w: number, h: number, seed: number): Buffer {
  const b = Buffer.alloc(w * h * 3);
  for (let i = 0; i < b.length; i++) b[i] = (i * 31 + seed * 7) & 255;
  return b;
}

function frame(seq: number, w: number, h: number, align: 'top-left' | 'center' = 'top-left'): Frame {
  return { source: 's', seq, pts: seq, data: picture(w, h, seq), layout: 'source', letterbox: letterbox(w, h, 64, 64, align, 'floor'), stamps: emptyStamps(1), producedBy: 'captured', release: () => {} };
}

const OPTIONS = { width: 64, height: 64, normalize: { scale: 1 / 255, mean: [0, 0, 0] as [number, number, number], std: [1, 1, 1] as [number, number, number] }, channelOrder: 'bgr' as const, padValue: 114 };

/** The tensor a fresh letterbox of `f` gives. */
function expected(f: Frame): Float32Array {
  const t = new Float32Array(64 * 64 * 3).fill(Number.NaN);
  letterboxTensor(f.data, f.letterbox.srcWidth, f.letterbox.srcHeight, 'bgr', f.letterbox, t, { modelOrder: 'bgr', normalize: OPTIONS.normalize, padValue: 114 });
  return t;
}

describe('preprocess: the padding of its own tensors', () => {
  it('a tensor reused for a frame of another shape gets that frame’s padding; one of the same shape keeps its padding without writing it again', async () => {
    // One tensor, taken and given back by each frame in turn.
    const tensor: InputTensor = { data: new Float32Array(64 * 64 * 3) };
    const pool = new Pool<InputTensor>(() => tensor, 1);
    const seen: Float32Array[] = [];
    // …and the same sizes centred: the picture's area moves, the padding is on both sides
    const frames = [frame(0, 160, 90), frame(1, 90, 160), frame(2, 90, 160), frame(3, 160, 90), frame(4, 160, 90, 'center')];
    const op = preprocess(OPTIONS, pool);
    for (const [i, f] of frames.entries()) {
      const [out] = await lastValueFrom(from([f]).pipe(op, toArray()));
      expect(out.tensor).toBe(tensor);
      seen.push(out.tensor.data.slice());
      if (i === 1) tensor.data[63] = -7; // a padding value (top row, right edge of a portrait frame's letterbox), changed by hand
      pool.release(out.tensor);
    }
    // landscape → portrait: the right-hand padding is written where the picture was
    expect(seen[0]).toEqual(expected(frames[0]));
    expect(seen[1]).toEqual(expected(frames[1]));
    // portrait again: the picture is written, the padding is not (the value changed by hand stays)
    const third = expected(frames[2]);
    third[63] = -7;
    expect(seen[2]).toEqual(third);
    // landscape again: everything written anew; centred, again
    expect(seen[3]).toEqual(expected(frames[3]));
    expect(frames[4].letterbox.padY).toBeGreaterThan(0);
    expect(seen[4]).toEqual(expected(frames[4]));
  });
});
