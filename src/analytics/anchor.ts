/** Which point of a box decides whether an object is in a zone or across a line. */
export type Anchor = 'bottom-center' | 'center' | 'top-center' | 'bottom-left' | 'bottom-right' | 'center-left' | 'center-right';

/**
 * Whether a track's first box (`origin`, xyxy: Detections.trackOrigins) is a sure sighting of
 * the object that box `i` of `xyxy` shows now: about its size (between half and twice its area),
 * not a part of it seen from behind an occluder. Where the tracker first saw it tells where it
 * came from (a line's side, a zone's path) only then.
 */
export function sureOrigin(origin: ArrayLike<number>, xyxy: ArrayLike<number>, i: number): boolean {
  const areaNow = (xyxy[i * 4 + 2] - xyxy[i * 4]) * (xyxy[i * 4 + 3] - xyxy[i * 4 + 1]);
  const areaThen = (origin[2] - origin[0]) * (origin[3] - origin[1]);
  return areaThen > 0.5 * areaNow && areaThen < 2 * areaNow;
}

/** Writes the anchor of box `i` (xyxy) into `out` and returns it. */
export function anchorPoint(xyxy: ArrayLike<number>, i: number, anchor: Anchor, out: [number, number] = [0, 0]): [number, number] {
  const x1 = xyxy[i * 4], y1 = xyxy[i * 4 + 1], x2 = xyxy[i * 4 + 2], y2 = xyxy[i * 4 + 3];
  const cx = (x1 + x2) / 2, cy = (y1 + y2) / 2;
  switch (anchor) {
    case 'bottom-center': out[0] = cx; out[1] = y2; break;
    case 'center': out[0] = cx; out[1] = cy; break;
    case 'top-center': out[0] = cx; out[1] = y1; break;
    case 'bottom-left': out[0] = x1; out[1] = y2; break;
    case 'bottom-right': out[0] = x2; out[1] = y2; break;
    case 'center-left': out[0] = x1; out[1] = cy; break;
    case 'center-right': out[0] = x2; out[1] = cy; break;
  }
  return out;
}

/**
 * How far each corner of a box must go, as a share of its anchor's way, for the box to have
 * moved (movedWhole). A box whose feet a passer-by hid keeps its top where it was (0, give or
 * take the detector's jitter of the top edge: about 0.6 % of the box's height, against a
 * hidden part of a fifth of it or more); a walker's top goes as far as the feet across the
 * picture, but walking away from the camera or towards it only (Hc − Hp) / Hc as far (a camera
 * Hc high, a person Hp tall): 0.43 for a camera 3 m up, 0.32 at 2.5 m, 0.15 at 2 m (1.7 m tall).
 * It was a half: a person who walked away from a camera mounted 3 m up into a doorway at the
 * zone's far side was taken for a box whose legs were hidden, and raised nothing.
 */
export const MOVED_WHOLE_SHARE = 0.15;

/**
 * Whether box `i` of `xyxy` is `from` (xyxy) moved, not only reshaped: each of its two corners
 * went at least MOVED_WHOLE_SHARE as far as its anchor along the anchor's way. A box whose feet a
 * passer-by hid keeps its top where it was and its anchor jumps up by the part hidden; one cut
 * off by the picture's border keeps the edge there; a person who walks moves both. (Writes `pt`.)
 */
export function movedWhole(from: ArrayLike<number>, xyxy: ArrayLike<number>, i: number, anchor: Anchor, pt: [number, number]): boolean {
  const [ox, oy] = anchorPoint(from, 0, anchor, pt);
  const [ax, ay] = anchorPoint(xyxy, i, anchor, pt);
  const dx = ax - ox, dy = ay - oy;
  const dd = dx * dx + dy * dy;
  if (!(dd > 0)) return true;
  for (let c = 0; c < 4; c += 2) {
    const along = (xyxy[i * 4 + c] - from[c]) * dx + (xyxy[i * 4 + c + 1] - from[c + 1]) * dy;
    if (!(along >= MOVED_WHOLE_SHARE * dd)) return false;
  }
  return true;
}

/** A track's last sighting: its anchor, its frame time and its pace there (px/ms, NaN: not known), and its box (xyxy). */
export interface LastSighting {
  lx: number;
  ly: number;
  lastFrame: number;
  vx: number;
  vy: number;
  lastBox: ArrayLike<number>;
}

/**
 * Notes a sighting of `o` at `x`, `y` at `tMs` (frame time), its box row `i` of `xyxy`: where it
 * was last seen, and its pace (half the last step's, half the earlier pace), for wayDistance.
 */
export function noteSighting(o: LastSighting & { lastBox: Float32Array }, x: number, y: number, tMs: number, xyxy: ArrayLike<number>, i: number): void {
  const dt = tMs - o.lastFrame;
  if (dt > 0) {
    const vx = (x - o.lx) / dt, vy = (y - o.ly) / dt;
    o.vx = Number.isNaN(o.vx) ? vx : (o.vx + vx) / 2;
    o.vy = Number.isNaN(o.vy) ? vy : (o.vy + vy) / 2;
  }
  o.lx = x;
  o.ly = y;
  o.lastFrame = tMs;
  for (let k = 0; k < 4; k++) o.lastBox[k] = xyxy[i * 4 + k];
}

/**
 * How far (px) `px`, `py`, where a new id was first seen at `firstMs` (frame time), is from the
 * way track `o`, lost before, was going: from where it was last seen to where its pace would
 * have taken it by then, from standing still to half as fast again. Infinity beyond a box's size
 * (the larger side of its last box): another object. For an id switch (LineCounter.handOver, a
 * conveyor-defect item).
 */
export function wayDistance(o: LastSighting, firstMs: number, px: number, py: number): number {
  const g = firstMs - o.lastFrame;
  const vx = Number.isNaN(o.vx) ? 0 : o.vx * 1.5 * g, vy = Number.isNaN(o.vy) ? 0 : o.vy * 1.5 * g;
  const vv = vx * vx + vy * vy;
  const t = vv > 0 ? Math.max(0, Math.min(1, ((px - o.lx) * vx + (py - o.ly) * vy) / vv)) : 0;
  const dist = Math.hypot(px - o.lx - t * vx, py - o.ly - t * vy);
  const reach = Math.max(o.lastBox[2] - o.lastBox[0], o.lastBox[3] - o.lastBox[1]);
  return dist > reach ? Infinity : dist;
}
