// Alert snapshots (annotate/snapshot.ts): the overlay drawn as preview and the annotated video
// draw it (annotate/draw.ts), scaled from the source's pixels to the snapshot's.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { overlaySvg } from '../../src/annotate/draw.js';
import { renderSnapshot, scaled } from '../../src/annotate/snapshot.js';
import { Detections } from '../../src/core/detections.js';

describe('alert snapshots', () => {
  it('draws boxes, labels with track ids, zones and lines in snapshot pixels, as preview and the annotated video do; the alert\'s row highlighted', () => {
    const d = new Detections(new Float32Array([100, 50, 200, 150, 300, 50, 400, 150]), new Float32Array([0.9, 0.8]), new Int32Array([0, 0]), new Int32Array([7, 8]));
    const scene = { zones: [{ id: 'z', polygon: [[0, 0], [800, 0], [800, 400]] as [number, number][], classes: ['person'] }], lines: [{ id: 'l', from: [0, 200] as [number, number], to: [800, 200] as [number, number] }] };
    const svg = overlaySvg(400, 200, scaled({ detections: d, labels: ['person'], highlight: 0, scene }, 0.5, 0.5));
    expect(svg).toContain('<rect x="50" y="25" width="50" height="50" fill="none" stroke="rgb(255,32,32)" stroke-width="2"/>'); // the alert's, twice as thick
    expect(svg).toContain('<rect x="150" y="25" width="50" height="50" fill="none" stroke="rgb(255,56,56)" stroke-width="1"/>');
    expect(svg).toContain('>#7 person 0.90<');
    expect(svg).toContain('>z [person]<'); // the zone's class filter, as preview writes it
    expect(svg).toContain('points="0,0 400,0 400,200"');
    expect(svg).toContain('<line x1="0" y1="100" x2="400" y2="100"');
  });

  it('a class name with a control character or a lone surrogate still gives a snapshot (drawn as U+FFFD), not an alert without a picture', async () => {
    const d = new Detections(new Float32Array([4, 4, 40, 24]), new Float32Array([0.9]), new Int32Array([0]));
    const overlay = { detections: d, labels: ['fork\vlift\uD800 <&>'], highlight: 0 };
    const svg = overlaySvg(64, 32, overlay);
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
    const overlay = { detections: Detections.empty(), labels: [], highlight: -1 };
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
