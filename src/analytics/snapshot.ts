import { loadSharp } from '../core/sharp.js';
import { escapeXml } from '../core/text.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import { yuvToPacked } from '../preprocess/letterbox.js';
import { yuvTables } from '../preprocess/yuv.js';
import type { Point } from '../core/polygon.js';

/**
 * A frame's picture, copied out so the frame can be released at once: the whole frame at the
 * source's size (frames argus letterboxes itself), or the scaled picture inside ffmpeg's
 * letterbox. The bytes keep the frame's channel order; libvips swaps BGR off the main thread
 * (`pictureImage`).
 */
export interface Picture {
  /** Packed 8-bit pixels, `width × height × 3`, in `order` (RGB when absent). */
  rgb: Buffer;
  order?: 'rgb' | 'bgr';
  width: number;
  height: number;
  /** Source frame size, for mapping source-pixel boxes onto the picture. */
  srcWidth: number;
  srcHeight: number;
}

/** Copies the picture out of a frame (memory copies, or a yuv420p frame's conversion; synchronous). */
export function grabPicture(frame: Frame, channelOrder: 'bgr' | 'rgb'): Picture {
  const lb = frame.letterbox;
  if (frame.layout === 'yuv420p') {
    // Converted as ffmpeg would have (the same values a BGR frame would hold), in the C kernel.
    const pixels = yuvToPacked(frame.data, lb.srcWidth, lb.srcHeight, yuvTables(frame.colour), channelOrder);
    return { rgb: pixels, order: channelOrder, width: lb.srcWidth, height: lb.srcHeight, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
  }
  if (frame.layout === 'source') {
    const n = lb.srcWidth * lb.srcHeight * 3;
    const pixels = Buffer.allocUnsafe(n);
    frame.data.copy(pixels, 0, 0, n);
    return { rgb: pixels, order: channelOrder, width: lb.srcWidth, height: lb.srcHeight, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
  }
  const w = lb.scaledWidth, h = lb.scaledHeight;
  const pixels = Buffer.allocUnsafe(w * h * 3);
  const stride = lb.dstWidth * 3;
  for (let y = 0; y < h; y++) {
    const src = (lb.padY + y) * stride + lb.padX * 3;
    frame.data.copy(pixels, y * w * 3, src, src + w * 3);
  }
  return { rgb: pixels, order: channelOrder, width: w, height: h, srcWidth: lb.srcWidth, srcHeight: lb.srcHeight };
}

/** A sharp image of the picture in RGB (BGR pixels are swapped by libvips, in its thread pool). */
export function pictureImage(sharp: Awaited<ReturnType<typeof loadSharp>>, pic: Picture) {
  const img = sharp(pic.rgb, { raw: { width: pic.width, height: pic.height, channels: 3 } });
  return pic.order === 'bgr' ? img.recomb([[0, 0, 1], [0, 1, 0], [1, 0, 0]]) : img;
}

export interface Overlay {
  detections: Detections;
  labels: readonly string[];
  /** Row to highlight (the one that raised the alert); −1 for none. */
  highlight: number;
  zones: { id: string; polygon: readonly Point[] }[];
  lines: { id: string; from: Point; to: Point }[];
}

export interface SnapshotOptions {
  maxWidth: number;
  maxBytes: number;
  quality: number;
}

/** SVG drawing of zones, lines and boxes in snapshot pixels. */
export function overlaySvg(o: Overlay, width: number, height: number, srcWidth: number, srcHeight: number): string {
  const sx = width / srcWidth, sy = height / srcHeight;
  const parts: string[] = [];
  for (const z of o.zones) {
    const pts = z.polygon.map((p) => `${(p[0] * sx).toFixed(1)},${(p[1] * sy).toFixed(1)}`).join(' ');
    parts.push(`<polygon points="${pts}" fill="rgba(255,64,64,0.18)" stroke="#ff4040" stroke-width="2"/>`);
  }
  for (const l of o.lines) {
    parts.push(`<line x1="${l.from[0] * sx}" y1="${l.from[1] * sy}" x2="${l.to[0] * sx}" y2="${l.to[1] * sy}" stroke="#ffd000" stroke-width="3"/>`);
  }
  const d = o.detections;
  for (let i = 0; i < d.length; i++) {
    const x1 = d.xyxy[i * 4] * sx, y1 = d.xyxy[i * 4 + 1] * sy, x2 = d.xyxy[i * 4 + 2] * sx, y2 = d.xyxy[i * 4 + 3] * sy;
    const hot = i === o.highlight;
    const color = hot ? '#ff2020' : '#20e060';
    const tid = d.trackerId && d.trackerId[i] >= 0 ? ` #${d.trackerId[i]}` : '';
    const text = escapeXml(`${o.labels[d.classId[i]] ?? d.classId[i]}${tid} ${d.confidence[i].toFixed(2)}`);
    parts.push(`<rect x="${x1.toFixed(1)}" y="${y1.toFixed(1)}" width="${(x2 - x1).toFixed(1)}" height="${(y2 - y1).toFixed(1)}" fill="none" stroke="${color}" stroke-width="${hot ? 4 : 2}"/>`);
    parts.push(`<text x="${(x1 + 3).toFixed(1)}" y="${Math.max(12, y1 - 4).toFixed(1)}" font-family="sans-serif" font-size="12" fill="${color}" stroke="black" stroke-width="0.5">${text}</text>`);
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${parts.join('')}</svg>`;
}

/**
 * A JPEG of the picture with the overlay drawn, at most `maxWidth` wide and never upscaled
 * (the decoded picture holds no more detail; upscaling would only cost encode time), under
 * `maxBytes`: the quality is lowered first, then the size.
 */
export async function renderSnapshot(pic: Picture, overlay: Overlay, o: SnapshotOptions): Promise<{ jpeg: Buffer; width: number; height: number }> {
  const sharp = await loadSharp();
  let width = Math.min(o.maxWidth, pic.width);
  let quality = o.quality;
  for (;;) {
    const height = Math.max(1, Math.round((width * pic.height) / pic.width));
    let img = pictureImage(sharp, pic);
    if (width !== pic.width) img = img.resize(width, height, { kernel: 'cubic' });
    const jpeg = await img
      .composite([{ input: Buffer.from(overlaySvg(overlay, width, height, pic.srcWidth, pic.srcHeight)), top: 0, left: 0 }])
      .jpeg({ quality, mozjpeg: false })
      .toBuffer();
    if (jpeg.length <= o.maxBytes || (quality <= 30 && width <= 160)) return { jpeg, width, height };
    if (quality > 30) quality = Math.max(30, quality - 15);
    else width = Math.max(160, Math.floor(width * 0.75));
  }
}
