/** The overlay canvas over a tile's picture: zones, lines and the boxes of the detections that match the frame shown. */
import { sizeCanvas } from './canvas.js';
import { now } from './clock.js';
import { isNum, sumCounts } from './numbers.js';
import { FRAME_STALE_MS } from './store.js';

const LABEL_COLORS = { person: '#3ddbd9', bottle: '#ffd166', car: '#f78c6b', scissors: '#ef476f' };

function hashHue(s) {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h % 360;
}

/** A fixed colour for common labels, else a hue derived from the label's text. */
function labelColor(label) {
  return LABEL_COLORS[label] || `hsl(${hashHue(label)}, 80%, 62%)`;
}

/** The detections that belong to the picture on screen: same seq, else the newest older one. */
function pickDetections(s) {
  const dets = s.dets;
  if (!dets.length) return null;
  const framesLive = s.frames > 0 && now() - s.lastFrameAt < FRAME_STALE_MS && s.frameSeq >= 0;
  if (!framesLive) return dets[dets.length - 1];
  let best = null;
  for (let i = dets.length - 1; i >= 0; i--) {
    const d = dets[i];
    if (d.seq === s.frameSeq) return d;
    if (d.seq < s.frameSeq) {
      best = d;
      break;
    }
  }
  return best || dets[0];
}

/** A label on a dark plate with a colour bar, kept inside the canvas; above (x, y) unless `below`. */
function textTag(ctx, text, x, y, color, cssW, below) {
  ctx.font = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
  const w = ctx.measureText(text).width + 8;
  const h = 16;
  let tx = Math.min(Math.max(0, x), Math.max(0, cssW - w));
  let ty = below ? y : y - h;
  if (ty < 0) ty = y;
  ctx.fillStyle = 'rgba(10, 14, 20, 0.78)';
  ctx.fillRect(tx, ty, w, h);
  ctx.fillStyle = color;
  ctx.fillRect(tx, ty, 3, h);
  ctx.fillStyle = '#f2f5f9';
  ctx.textBaseline = 'middle';
  ctx.fillText(text, tx + 5, ty + h / 2 + 0.5);
}

/** Redraws source `s`'s overlay; sets its data-boxes, data-labels, data-seq and data-draws (overlays drawn so far). */
export function drawOverlay(s) {
  const e = s.el;
  const cssW = e.media.clientWidth;
  const cssH = e.media.clientHeight;
  const ctx = sizeCanvas(e.overlay, cssW, cssH);
  ctx.clearRect(0, 0, cssW, cssH);
  const det = pickDetections(s);
  // Boxes are in source pixels; the picture is the source's aspect, stretched to the tile.
  const sw = (det && det.frame && det.frame.width) || s.srcW || s.jpegW;
  const sh = (det && det.frame && det.frame.height) || s.srcH || s.jpegH;
  const labels = [];
  if (sw > 0 && sh > 0 && cssW > 0 && cssH > 0) {
    const kx = cssW / sw;
    const ky = cssH / sh;
    const zonesA = (s.analytics && s.analytics.zones) || {};
    const linesA = (s.analytics && s.analytics.lines) || {};

    for (const z of s.zones) {
      if (!Array.isArray(z.polygon) || z.polygon.length < 3) continue;
      const occ = zonesA[z.id] && isNum(zonesA[z.id].occupancy) ? zonesA[z.id].occupancy : 0;
      const hot = occ > 0;
      ctx.beginPath();
      z.polygon.forEach(([x, y], i) => (i ? ctx.lineTo(x * kx, y * ky) : ctx.moveTo(x * kx, y * ky)));
      ctx.closePath();
      ctx.fillStyle = hot ? 'rgba(239, 71, 111, 0.26)' : 'rgba(255, 209, 102, 0.16)';
      ctx.fill();
      ctx.lineWidth = 2;
      ctx.setLineDash([6, 4]);
      ctx.strokeStyle = hot ? 'rgba(239, 71, 111, 0.95)' : 'rgba(255, 209, 102, 0.9)';
      ctx.stroke();
      ctx.setLineDash([]);
      let minX = Infinity;
      let minY = Infinity;
      for (const [x, y] of z.polygon) {
        minX = Math.min(minX, x * kx);
        minY = Math.min(minY, y * ky);
      }
      const za = zonesA[z.id];
      const tag = za ? `${z.id}: ${occ} inside · ${za.entered ?? 0} entered` : z.id;
      textTag(ctx, tag, minX, minY, hot ? '#ef476f' : '#ffd166', cssW, true);
    }

    for (const l of s.lines) {
      if (!Array.isArray(l.from) || !Array.isArray(l.to)) continue;
      const x1 = l.from[0] * kx;
      const y1 = l.from[1] * ky;
      const x2 = l.to[0] * kx;
      const y2 = l.to[1] * ky;
      ctx.lineWidth = 3;
      ctx.strokeStyle = 'rgba(6, 214, 160, 0.95)';
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x2, y2);
      ctx.stroke();
      // "in" side marker: the left-hand side of from→to as seen on screen.
      const len = Math.hypot(x2 - x1, y2 - y1) || 1;
      const mx = (x1 + x2) / 2;
      const my = (y1 + y2) / 2;
      const nx = (y2 - y1) / len; // left normal in screen coordinates (y down)
      const ny = -(x2 - x1) / len;
      ctx.beginPath();
      ctx.moveTo(mx, my);
      ctx.lineTo(mx + nx * 14, my + ny * 14);
      ctx.stroke();
      for (const [px, py] of [[x1, y1], [x2, y2]]) {
        ctx.beginPath();
        ctx.arc(px, py, 4, 0, Math.PI * 2);
        ctx.fillStyle = 'rgba(6, 214, 160, 1)';
        ctx.fill();
      }
      const la = linesA[l.id];
      const tag = la ? `${l.id}: in ${sumCounts(la.in)} · out ${sumCounts(la.out)}` : l.id;
      textTag(ctx, tag, mx + 6, my + 4, '#06d6a0', cssW, true);
    }

    if (det && Array.isArray(det.detections)) {
      ctx.lineWidth = 2;
      for (const d of det.detections) {
        if (!Array.isArray(d.box) || d.box.length !== 4) continue;
        const [bx1, by1, bx2, by2] = d.box;
        const x = bx1 * kx;
        const y = by1 * ky;
        const w = (bx2 - bx1) * kx;
        const h = (by2 - by1) * ky;
        const color = labelColor(String(d.label));
        ctx.strokeStyle = color;
        ctx.strokeRect(x, y, w, h);
        const text = `${d.label}${isNum(d.trackId) ? ` #${d.trackId}` : ''} ${isNum(d.score) ? d.score.toFixed(2) : ''}`.trim();
        textTag(ctx, text, x, y, color, cssW, false);
        labels.push(String(d.label));
      }
    }
  }
  e.overlay.dataset.boxes = String(labels.length);
  e.overlay.dataset.labels = labels.join(',');
  if (det && isNum(det.seq)) e.overlay.dataset.seq = String(det.seq);
  e.overlay.dataset.draws = String(Number(e.overlay.dataset.draws || 0) + 1);
}
