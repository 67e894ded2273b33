import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { grabPicture, pictureImage } from '../../src/analytics/snapshot.js';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';

/** A 4x4 letterboxed frame of a 4x2 source (top-left aligned): rows 0–1 picture, rows 2–3 padding. */
function tinyFrame(): Frame {
  const data = Buffer.alloc(4 * 4 * 3, 114);
  for (let y = 0; y < 2; y++) for (let x = 0; x < 4; x++) data.set([10 * x, 50 + y, 200], (y * 4 + x) * 3); // B, G, R
  return { source: 's', seq: 0, pts: 0, data, letterbox: letterbox(8, 4, 4, 4), stamps: emptyStamps(1), producedBy: 'captured', release: () => {} };
}

describe('snapshots', () => {
  it('grabPicture copies only the picture of a letterboxed frame; the snapshot comes out RGB from BGR pixels', async () => {
    const p = grabPicture(tinyFrame(), 'bgr');
    expect([p.width, p.height, p.srcWidth, p.srcHeight, p.order]).toEqual([4, 2, 8, 4, 'bgr']);
    expect(Array.from(p.rgb.subarray(0, 6))).toEqual([0, 50, 200, 10, 50, 200]); // copied as is
    expect(p.rgb.length).toBe(4 * 2 * 3);
    const png = await pictureImage(sharp, p).png().toBuffer();
    const { data } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(Array.from(data.subarray(0, 6))).toEqual([200, 50, 0, 200, 50, 10]); // R, G, B
  });

  it('grabPicture takes the whole frame at the source size when argus letterboxes (snapshots at camera resolution)', () => {
    const data = Buffer.alloc(8 * 4 * 3);
    for (let i = 0; i < data.length; i++) data[i] = i & 255;
    const frame: Frame = { source: 's', seq: 0, pts: 0, data, layout: 'source', letterbox: letterbox(8, 4, 4, 4), stamps: emptyStamps(1), producedBy: 'captured', release: () => {} };
    const p = grabPicture(frame, 'rgb');
    expect([p.width, p.height, p.srcWidth, p.srcHeight]).toEqual([8, 4, 8, 4]);
    expect(p.rgb.equals(data)).toBe(true);
    expect(p.rgb).not.toBe(data); // a copy: the frame can be released
  });
});
