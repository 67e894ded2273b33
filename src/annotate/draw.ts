import { Detections } from '../core/detections.js';
import { letterbox } from '../core/geometry.js';
import type { Point } from '../core/polygon.js';
import { loadSharp } from '../core/sharp.js';
import { escapeXml } from '../core/text.js';
import type { LineShape, Scene, ZoneShape } from './scene.js';

/** A packed 8-bit, 3-channel picture (HWC), in either channel order. */
export interface FrameImage {
  data: Uint8Array;
  width: number;
  height: number;
  order: 'rgb' | 'bgr';
}

/**
 * The size of a drawing, and where the picture goes in it: resized to `picture`'s size at its
 * place, the rest black (a picture of another aspect than the output, letterboxed). Default: the
 * picture fills the whole size.
 */
export interface DrawSize {
  width: number;
  height: number;
  picture?: { left: number; top: number; width: number; height: number };
}

/** What to draw over a frame. */
export interface Overlay {
  /** Boxes in the frame's pixels (xyxy); with track ids, each label starts with `#id`. */
  detections?: Detections;
  /** Class id → name for the box labels (else the id is shown). */
  labels?: readonly string[];
  /** Zones and lines (with their class filters and any counts). */
  scene?: Scene;
  /** Extra lines for the counts panel (top left), after the zones' and lines' figures. */
  panel?: readonly string[];
  /** The detection row that raised an alert (a snapshot's): drawn in the alert colour, twice as thick. */
  highlight?: number;
}

type Rgb = readonly [number, number, number];

/** Box colours by class id (cycled): distinct, readable on video. */
const PALETTE: readonly Rgb[] = [
  [255, 56, 56], [255, 157, 151], [255, 112, 31], [255, 178, 29], [207, 210, 49], [72, 249, 10], [146, 204, 23], [61, 219, 134], [26, 147, 52], [0, 212, 187],
  [44, 153, 168], [0, 194, 255], [52, 69, 147], [100, 115, 255], [0, 24, 236], [132, 56, 255], [82, 0, 133], [203, 56, 255], [255, 149, 200], [255, 55, 199],
];
/** Zone colours by zone index (cycled). */
const ZONE_COLOURS: readonly Rgb[] = [[0, 200, 255], [255, 0, 200], [120, 255, 0], [255, 160, 0], [160, 100, 255]];
const LINE_COLOUR: Rgb = [255, 235, 0];
const IN_COLOUR: Rgb = [0, 255, 90];
const OUT_COLOUR: Rgb = [255, 80, 80];
const ALERT_COLOUR: Rgb = [255, 32, 32];

/** Sizes that scale with the picture: thin lines and small text on a thumbnail, thicker on 1080p. */
function metrics(width: number, height: number) {
  const u = Math.max(0.5, Math.min(width, height) / 400);
  const stroke = Math.max(1, Math.round(2 * u));
  const font = Math.max(10, Math.round(12 * u));
  return { stroke, font, pad: Math.max(2, Math.round(font / 4)), arrow: Math.max(24, 3 * font) };
}

const f1 = (v: number) => (Math.round(v * 10) / 10).toString();

/** A filter as it is shown beside a zone's or line's name: ` [car, truck]`, nothing for every class. */
export function classFilterText(classes: readonly string[] | undefined): string {
  return classes && classes.length ? ` [${classes.join(', ')}]` : '';
}

/** The label drawn on a zone: name, class filter, and its figures when known. */
export function zoneLabel(z: ZoneShape): string {
  const figures = [z.occupancy !== undefined ? `${z.occupancy} inside` : '', z.entered !== undefined ? `${z.entered} entered` : ''].filter(Boolean);
  return `${z.id}${classFilterText(z.classes)}${figures.length ? `: ${figures.join(', ')}` : ''}`;
}

/** The label drawn on a line: name, class filter, and its crossings when known. */
export function lineLabel(l: LineShape): string {
  const figures = l.in !== undefined || l.out !== undefined ? `: in ${l.in ?? 0}, out ${l.out ?? 0}` : '';
  return `${l.id}${classFilterText(l.classes)}${figures}`;
}

/**
 * Unit vector to the `in` side of a line from → to: the left-hand side as seen on screen (y
 * down), where a track that crossed `in` ends up (analytics/line.ts: positive signed distance).
 */
export function inSideNormal(from: Point, to: Point): [number, number] {
  const dx = to[0] - from[0];
  const dy = to[1] - from[1];
  const len = Math.hypot(dx, dy) || 1;
  return [dy / len, -dx / len];
}

/**
 * The overlay as an SVG document of the frame's size. Colours are written in the frame's
 * channel order (red and blue swapped for BGR), so compositing it onto BGR bytes as if they
 * were RGB gives the right colours.
 */
export function overlaySvg(width: number, height: number, overlay: Overlay, order: 'rgb' | 'bgr' = 'rgb'): string {
  const m = metrics(width, height);
  const col = (c: Rgb) => (order === 'bgr' ? `rgb(${c[2]},${c[1]},${c[0]})` : `rgb(${c[0]},${c[1]},${c[2]})`);
  const textOn = (c: Rgb) => (c[0] * 0.299 + c[1] * 0.587 + c[2] * 0.114 > 150 ? 'rgb(0,0,0)' : 'rgb(255,255,255)');
  const textWidth = (s: string) => Math.ceil(s.length * m.font * 0.6);
  const out: string[] = [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans, sans-serif" font-size="${m.font}">`];
  // Labels drawn so far: a later one takes the first of its places that covers none of them
  // (two people side by side: the second's label covered the first's score; a line's name
  // covered a zone's), else its first place.
  const placed: { x: number; y: number; w: number; h: number }[] = [];
  const meets = (a: (typeof placed)[number], b: (typeof placed)[number]) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const covers = (a: (typeof placed)[number]) => placed.some((b) => meets(a, b));
  // A text label on a filled background, its top-left corner at the first of `at` where it
  // covers no other label, kept inside the frame; where each does, the first clear of the counts
  // panel (drawn last, over it), else just below the panel (a small box wholly under the panel
  // had every place under it, and its label went there, hidden).
  const tag = (text: string, at: readonly (readonly [number, number])[], bg: Rgb, opacity = 1) => {
    const w = textWidth(text) + 2 * m.pad;
    const h = m.font + 2 * m.pad;
    const fit = ([x, y]: readonly [number, number]) => ({ x: Math.max(0, Math.min(width - w, x)), y: Math.max(0, Math.min(height - h, y)), w, h });
    const spots = at.map(fit);
    const spot = spots.find((r) => !covers(r)) ?? (panel ? (spots.find((r) => !meets(r, panel)) ?? fit([at[0][0], panel.h])) : spots[0]);
    placed.push(spot);
    const lx = spot.x;
    const ly = spot.y;
    out.push(
      `<rect x="${f1(lx)}" y="${f1(ly)}" width="${w}" height="${h}" fill="${col(bg)}" fill-opacity="${opacity}"/>`,
      `<text x="${f1(lx + m.pad)}" y="${f1(ly + m.pad + m.font * 0.82)}" fill="${textOn(bg)}">${escapeXml(text)}</text>`,
    );
  };

  const scene = overlay.scene;
  // Counts panel (top left): every zone's and line's figures that are known, then the caller's
  // lines. Its place is taken first, so that no label goes under it (it is drawn last, on top:
  // a box in that corner had its label covered).
  const rows: string[] = [];
  for (const z of scene?.zones ?? []) if (z.occupancy !== undefined || z.entered !== undefined) rows.push(`zone ${zoneLabel(z)}`);
  for (const l of scene?.lines ?? []) if (l.in !== undefined || l.out !== undefined) rows.push(`line ${lineLabel(l)}`);
  rows.push(...(overlay.panel ?? []));
  const lh = Math.round(m.font * 1.3);
  const panel = rows.length ? { x: 0, y: 0, w: Math.max(...rows.map(textWidth)) + 2 * m.pad, h: rows.length * lh + 2 * m.pad } : undefined;
  if (panel) placed.push(panel);
  scene?.zones.forEach((z, i) => {
    const c = ZONE_COLOURS[i % ZONE_COLOURS.length];
    const pts = z.polygon.map((p) => `${f1(p[0])},${f1(p[1])}`).join(' ');
    out.push(`<polygon points="${pts}" fill="${col(c)}" fill-opacity="0.25" stroke="${col(c)}" stroke-width="${m.stroke}" stroke-linejoin="round"/>`);
    // The name at the top-most corner (left-most of equals), just above it.
    const top = z.polygon.reduce((a, p) => (p[1] < a[1] || (p[1] === a[1] && p[0] < a[0]) ? p : a), z.polygon[0]);
    const th = m.font + 2 * m.pad;
    tag(zoneLabel(z), [[top[0], top[1] - th], [top[0], top[1] + m.stroke]], c, 0.85);
  });
  for (const l of scene?.lines ?? []) {
    const [nx, ny] = inSideNormal(l.from, l.to);
    const mx = (l.from[0] + l.to[0]) / 2;
    const my = (l.from[1] + l.to[1]) / 2;
    const a = m.arrow;
    const head = Math.max(6, m.font * 0.6);
    out.push(
      `<line x1="${f1(l.from[0])}" y1="${f1(l.from[1])}" x2="${f1(l.to[0])}" y2="${f1(l.to[1])}" stroke="${col(LINE_COLOUR)}" stroke-width="${m.stroke + 1}" stroke-linecap="round"/>`,
      `<circle cx="${f1(l.from[0])}" cy="${f1(l.from[1])}" r="${m.stroke + 2}" fill="${col(LINE_COLOUR)}"/>`,
      `<circle cx="${f1(l.to[0])}" cy="${f1(l.to[1])}" r="${m.stroke + 2}" fill="${col(LINE_COLOUR)}"/>`,
    );
    // The `in` arrow: from the line's middle to the side a track crosses into.
    const tipX = mx + nx * a;
    const tipY = my + ny * a;
    const baseX = mx + nx * (a - head);
    const baseY = my + ny * (a - head);
    out.push(
      `<line x1="${f1(mx)}" y1="${f1(my)}" x2="${f1(baseX)}" y2="${f1(baseY)}" stroke="${col(IN_COLOUR)}" stroke-width="${m.stroke + 1}"/>`,
      `<polygon points="${f1(tipX)},${f1(tipY)} ${f1(baseX - ny * head * 0.6)},${f1(baseY + nx * head * 0.6)} ${f1(baseX + ny * head * 0.6)},${f1(baseY - nx * head * 0.6)}" fill="${col(IN_COLOUR)}"/>`,
      `<text x="${f1(tipX + nx * m.font * 0.9)}" y="${f1(tipY + ny * m.font * 0.9 + m.font * 0.35)}" text-anchor="middle" fill="${col(IN_COLOUR)}" font-weight="bold">in</text>`,
      `<text x="${f1(mx - nx * m.font * 1.2)}" y="${f1(my - ny * m.font * 1.2 + m.font * 0.35)}" text-anchor="middle" fill="${col(OUT_COLOUR)}" font-weight="bold">out</text>`,
    );
    // The name just past the `to` end, clear of the arrow and the in/out marks.
    const text = lineLabel(l);
    const along = [-ny, nx]; // unit vector from → to
    const ex = l.to[0] + along[0] * (m.stroke + 4 + m.pad);
    const ey = l.to[1] + along[1] * (m.stroke + 4 + m.pad);
    const tw = textWidth(text) + 2 * m.pad;
    const th = m.font + 2 * m.pad;
    // Left of the point when the line runs leftwards, above it when upwards, and so on; else
    // just below or above that place, or past the `from` end.
    const lx = along[0] < -0.3 ? ex - tw : along[0] > 0.3 ? ex : ex - tw / 2;
    const ly = along[1] < -0.3 ? ey - th : along[1] > 0.3 ? ey : ey - th / 2;
    const fx = l.from[0] - along[0] * (m.stroke + 4 + m.pad);
    const fy = l.from[1] - along[1] * (m.stroke + 4 + m.pad);
    tag(text, [[lx, ly], [lx, ly + th + 2], [lx, ly - th - 2], [along[0] > 0.3 ? fx - tw : along[0] < -0.3 ? fx : fx - tw / 2, along[1] > 0.3 ? fy - th : along[1] < -0.3 ? fy : fy - th / 2]], LINE_COLOUR, 0.85);
  }

  const d = overlay.detections;
  if (d) {
    for (let i = 0; i < d.length; i++) {
      const x1 = d.xyxy[i * 4], y1 = d.xyxy[i * 4 + 1], x2 = d.xyxy[i * 4 + 2], y2 = d.xyxy[i * 4 + 3];
      const hot = i === overlay.highlight;
      const c = hot ? ALERT_COLOUR : PALETTE[((d.classId[i] % PALETTE.length) + PALETTE.length) % PALETTE.length];
      out.push(`<rect x="${f1(x1)}" y="${f1(y1)}" width="${f1(x2 - x1)}" height="${f1(y2 - y1)}" fill="none" stroke="${col(c)}" stroke-width="${hot ? 2 * m.stroke : m.stroke}"/>`);
      const id = d.trackerId && d.trackerId[i] >= 0 ? `#${d.trackerId[i]} ` : '';
      const label = `${id}${overlay.labels?.[d.classId[i]] ?? d.classId[i]} ${d.confidence[i].toFixed(2)}`;
      const h = m.font + 2 * m.pad;
      const x = x1 - m.stroke / 2;
      const above: [number, number] = [x, y1 - h - m.stroke / 2];
      const insideTop: [number, number] = [x, y1 + m.stroke / 2];
      // Above the box (inside its top edge when there is no room above); where another label
      // is there, inside its top edge, below it, or inside its bottom edge.
      tag(label, [y1 - h >= 0 ? above : insideTop, insideTop, [x, y2 + m.stroke / 2], [x, y2 - h - m.stroke / 2]], c);
    }
  }

  if (panel) {
    out.push(`<rect x="0" y="0" width="${panel.w}" height="${panel.h}" fill="rgb(0,0,0)" fill-opacity="0.6"/>`);
    rows.forEach((r, i) => out.push(`<text x="${m.pad}" y="${f1(m.pad + i * lh + m.font * 0.95)}" fill="rgb(255,255,255)">${escapeXml(r)}</text>`));
  }
  out.push('</svg>');
  return out.join('');
}

/** The overlay with every coordinate multiplied by (sx, sy), then moved by (dx, dy): source pixels onto a smaller or larger picture, placed in the output. */
export function scaleOverlay(overlay: Overlay, sx: number, sy: number, dx = 0, dy = 0): Overlay {
  if (sx === 1 && sy === 1 && dx === 0 && dy === 0) return overlay;
  const d = overlay.detections;
  let detections = d;
  if (d && d.length > 0) {
    const xyxy = new Float32Array(d.xyxy.length);
    for (let i = 0; i < xyxy.length; i += 2) {
      xyxy[i] = d.xyxy[i] * sx + dx;
      xyxy[i + 1] = d.xyxy[i + 1] * sy + dy;
    }
    detections = new Detections(xyxy, d.confidence, d.classId, d.trackerId);
  }
  const p = (q: readonly [number, number]): [number, number] => [q[0] * sx + dx, q[1] * sy + dy];
  const scene: Scene | undefined = overlay.scene && {
    zones: overlay.scene.zones.map((z) => ({ ...z, polygon: z.polygon.map(p) })),
    lines: overlay.scene.lines.map((l) => ({ ...l, from: p(l.from), to: p(l.to) })),
  };
  return { ...overlay, detections, scene };
}

/**
 * Where a picture of `srcWidth` × `srcHeight` source pixels goes in the output (its size fixed by
 * the first picture: a video's): all of it when its aspect is the output's (up to the even-size rounding),
 * else letterboxed, centred, its aspect kept (a stream that turns from landscape to portrait is
 * not squashed); and the scale of source pixels onto it.
 */
export function placement(srcWidth: number, srcHeight: number, out: { width: number; height: number }) {
  const lb = letterbox(srcWidth, srcHeight, out.width, out.height, 'center');
  if (Math.abs(lb.scaledWidth - out.width) <= 2 && Math.abs(lb.scaledHeight - out.height) <= 2) {
    return { picture: { left: 0, top: 0, width: out.width, height: out.height }, sx: out.width / srcWidth, sy: out.height / srcHeight };
  }
  return { picture: { left: lb.padX, top: lb.padY, width: lb.scaledWidth, height: lb.scaledHeight }, sx: lb.scale, sy: lb.scale };
}

/**
 * Draws `overlay` onto a copy of `image` (sharp compositing an SVG): the result is a new
 * packed buffer of the same channel order; `image.data` is not changed. With `size`, the
 * picture is first resized (libvips) to it, or to its `picture` box with black around, and the
 * overlay is in `size`'s pixels; else the result has the image's size.
 */
export async function drawOverlay(image: FrameImage, overlay: Overlay, size?: DrawSize): Promise<Buffer> {
  const { width, height } = size ?? image;
  const box = size?.picture ?? { left: 0, top: 0, width, height };
  const sharp = await loadSharp();
  const svg = Buffer.from(overlaySvg(width, height, overlay, image.order));
  let img = sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });
  if (box.width !== image.width || box.height !== image.height) img = img.resize(box.width, box.height, { fit: 'fill' });
  if (box.width !== width || box.height !== height) {
    img = img.extend({ left: box.left, top: box.top, right: width - box.width - box.left, bottom: height - box.height - box.top, background: { r: 0, g: 0, b: 0 } });
  }
  return img
    .composite([{ input: svg, top: 0, left: 0 }])
    .removeAlpha()
    .raw()
    .toBuffer();
}

/** Encodes a packed picture as PNG or JPEG (BGR is turned to RGB on the way). */
export async function encodeImage(image: FrameImage, format: 'png' | 'jpeg', quality = 90): Promise<Buffer> {
  const sharp = await loadSharp();
  let img = sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } });
  if (image.order === 'bgr') img = img.recomb([[0, 0, 1], [0, 1, 0], [1, 0, 0]]);
  return format === 'png' ? img.png().toBuffer() : img.jpeg({ quality }).toBuffer();
}

/** The overlay drawn on a copy of `image`, encoded (the one-call form for still outputs). */
export async function annotateImage(image: FrameImage, overlay: Overlay, format: 'png' | 'jpeg'): Promise<Buffer> {
  return encodeImage({ ...image, data: await drawOverlay(image, overlay) }, format);
}
