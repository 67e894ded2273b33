/** Which point of a box decides whether an object is in a zone or across a line. */
export type Anchor = 'bottom-center' | 'center' | 'top-center' | 'bottom-left' | 'bottom-right' | 'center-left' | 'center-right';

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
