/**
 * Takes in a `frame` message: decodes the JPEG and draws it on the tile's picture canvas, newest
 * decode wins. A tile off screen keeps only its newest message, undecoded, and decodes it when it
 * comes into view (tile.js calls `s.onVisible`): with 64 cameras at 5 frames/s each, the page
 * decoded 320 JPEGs a second for the few tiles a screen shows.
 */
import { now } from './clock.js';
import { isNum } from './numbers.js';
import { scheduleRender } from './render-queue.js';
import { ensureSource } from './sources.js';
import { applyAspect, setState, updateDown } from './tile-state.js';

function base64ToBytes(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export async function onFrame(m, arrivedAt = now()) {
  if (typeof m.source !== 'string' || typeof m.data !== 'string') return;
  const s = ensureSource(m.source);
  if (!s.visible) {
    // Held, but it came: the tile is not "no frames" (tile-state.js), and its picture, shown
    // later, is as old as it is.
    s.pendingFrame = m;
    s.pendingAt = arrivedAt;
    s.lastFrameAt = arrivedAt;
    s.onVisible ??= showPendingFrame;
    return;
  }
  s.pendingFrame = null;
  const tokenN = ++s.decodeToken;
  let bmp;
  try {
    const blob = new Blob([base64ToBytes(m.data)], { type: m.contentType || 'image/jpeg' });
    bmp = await createImageBitmap(blob);
  } catch {
    return; // an undecodable picture is skipped; the next one replaces it
  }
  if (tokenN < s.shownToken) {
    bmp.close();
    return;
  }
  s.shownToken = tokenN;
  const c = s.el.frame;
  if (c.width !== bmp.width || c.height !== bmp.height) {
    c.width = bmp.width;
    c.height = bmp.height;
  }
  c.getContext('2d').drawImage(bmp, 0, 0);
  s.jpegW = isNum(m.width) && m.width > 0 ? m.width : bmp.width;
  s.jpegH = isNum(m.height) && m.height > 0 ? m.height : bmp.height;
  // The server may say which source size the picture shows (before any detections message has).
  if (!s.srcW && isNum(m.sourceWidth) && m.sourceWidth > 0 && isNum(m.sourceHeight) && m.sourceHeight > 0) {
    s.srcW = m.sourceWidth;
    s.srcH = m.sourceHeight;
  }
  bmp.close();
  applyAspect(s);
  s.frames++;
  c.dataset.frames = String(s.frames);
  s.frameSeq = isNum(m.seq) ? m.seq : -1;
  c.dataset.seq = String(s.frameSeq);
  s.lastFrameAt = Math.max(s.lastFrameAt, arrivedAt);
  s.el.waiting.hidden = true;
  if (s.state === 'unknown') setState(s, 'streaming', '');
  else if (s.el.tile.classList.contains('down') && s.state === 'streaming') updateDown(s);
  s.overlayDirty = true;
  scheduleRender();
}

/** A tile come into view: its newest picture, held while it was off screen. */
function showPendingFrame(s) {
  const m = s.pendingFrame;
  s.pendingFrame = null;
  if (m) void onFrame(m, s.pendingAt);
}
