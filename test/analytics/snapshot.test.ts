import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { grabPicture, overlaySvg, pictureImage, renderSnapshot } from '../../src/analytics/snapshot.js';
import { Detections } from '../../src/core/detections.js';
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

  it('draws boxes, labels with track ids, zones and lines in snapshot pixels', () => {
    const d = new Detections(new Float32Array([100, 50, 200, 150]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([7]));
    const svg = overlaySvg({ detections: d, labels: ['person'], highlight: 0, zones: [{ id: 'z', polygon: [[0, 0], [800, 0], [800, 400]] }], lines: [{ id: 'l', from: [0, 200], to: [800, 200] }] }, 400, 200, 800, 400);
    expect(svg).toContain('<rect x="50.0" y="25.0" width="50.0" height="50.0"');
    expect(svg).toContain('person #7 0.90');
    expect(svg).toContain('points="0.0,0.0 400.0,0.0 400.0,200.0"');
    expect(svg).toContain('<line x1="0" y1="100" x2="400" y2="100"');
  });

  it('a class name with a control character or a lone surrogate still gives a snapshot (drawn as U+FFFD), not an alert without a picture', async () => {
    const d = new Detections(new Float32Array([4, 4, 40, 24]), new Float32Array([0.9]), new Int32Array([0]));
    const overlay = { detections: d, labels: ['fork\vlift\uD800 <&>'], highlight: 0, zones: [], lines: [] };
    const svg = overlaySvg(overlay, 64, 32, 64, 32);
    expect(svg).toContain('fork\uFFFDlift\uFFFD &lt;&amp;&gt; 0.90');
    const pic = { rgb: Buffer.alloc(64 * 32 * 3, 100), width: 64, height: 32, srcWidth: 64, srcHeight: 32 };
    // libvips refused the SVG before ("PCDATA invalid Char value 11").
    const shot = await renderSnapshot(pic, overlay, { maxWidth: 64, maxBytes: 1_000_000, quality: 80 });
    expect((await sharp(shot.jpeg).metadata()).format).toBe('jpeg');
  });

  it('renders a JPEG at most maxWidth wide (never upscaled) and under maxBytes, lowering quality then size', async () => {
    // Noise compresses badly: a stress test for the size cap.
    const w = 416, h = 234;
    const rgb = Buffer.alloc(w * h * 3);
    for (let i = 0; i < rgb.length; i++) rgb[i] = (i * 2654435761) >>> 24;
    const pic = { rgb, width: w, height: h, srcWidth: 1920, srcHeight: 1080 };
    const overlay = { detections: Detections.empty(), labels: [], highlight: -1, zones: [], lines: [] };
    const big = await renderSnapshot(pic, overlay, { maxWidth: 832, maxBytes: 10_000_000, quality: 90 });
    expect([big.width, big.height]).toEqual([416, 234]);
    const narrow = await renderSnapshot(pic, overlay, { maxWidth: 208, maxBytes: 10_000_000, quality: 90 });
    expect([narrow.width, narrow.height]).toEqual([208, 117]);
    const capped = await renderSnapshot(pic, overlay, { maxWidth: 832, maxBytes: 12_000, quality: 90 });
    expect(capped.jpeg.length).toBeLessThanOrEqual(12_000);
    const meta = await sharp(capped.jpeg).metadata();
    expect(meta.format).toBe('jpeg');
    expect(meta.width).toBe(capped.width);
    expect(capped.width).toBeLessThan(416); // quality alone was not enough
  });
});
