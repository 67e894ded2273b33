import { pictureImage, type Picture } from '../analytics/snapshot.js';
import { Detections } from '../core/detections.js';
import type { Point } from '../core/polygon.js';
import { loadSharp } from '../core/sharp.js';
import { overlaySvg, type Overlay } from './draw.js';

export interface SnapshotOptions {
  maxWidth: number;
  maxBytes: number;
  quality: number;
}

/**
 * An alert's snapshot: a JPEG of the picture with the overlay drawn as `preview` and the
 * annotated video draw it (draw.ts: the same boxes, labels, zones and lines, the alert's row
 * highlighted), at most `maxWidth` wide and never upscaled (the decoded picture holds no more
 * detail; upscaling would only cost encode time), under `maxBytes`: the quality is lowered
 * first, then the size. The overlay is in the source's pixels (`pic.srcWidth × srcHeight`).
 */
export async function renderSnapshot(pic: Picture, overlay: Overlay, o: SnapshotOptions): Promise<{ jpeg: Buffer; width: number; height: number }> {
  const sharp = await loadSharp();
  let width = Math.min(o.maxWidth, pic.width);
  let quality = o.quality;
  for (;;) {
    const height = Math.max(1, Math.round((width * pic.height) / pic.width));
    let img = pictureImage(sharp, pic);
    if (width !== pic.width) img = img.resize(width, height, { kernel: 'cubic' });
    // (pictureImage gives RGB whatever the frame's order.)
    const svg = overlaySvg(width, height, scaled(overlay, width / pic.srcWidth, height / pic.srcHeight), 'rgb');
    const jpeg = await img
      .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
      .jpeg({ quality, mozjpeg: false })
      .toBuffer();
    if (jpeg.length <= o.maxBytes || (quality <= 30 && width <= 160)) return { jpeg, width, height };
    if (quality > 30) quality = Math.max(30, quality - 15);
    else width = Math.max(160, Math.floor(width * 0.75));
  }
}

/** The overlay moved from the source's pixels to a picture `sx` × `sy` its size. */
export function scaled(o: Overlay, sx: number, sy: number): Overlay {
  if (sx === 1 && sy === 1) return o;
  const p = ([x, y]: Point): Point => [x * sx, y * sy];
  const d = o.detections;
  return {
    ...o,
    detections: d && new Detections(d.xyxy.map((v, i) => v * (i % 2 === 0 ? sx : sy)), d.confidence, d.classId, d.trackerId),
    scene: o.scene && {
      zones: o.scene.zones.map((z) => ({ ...z, polygon: z.polygon.map(p) })),
      lines: o.scene.lines.map((l) => ({ ...l, from: p(l.from), to: p(l.to) })),
    },
  };
}
