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
