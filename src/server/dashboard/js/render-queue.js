/** Batches overlay redraws: sources marked `overlayDirty` are redrawn once, on the next animation frame. */
import { drawOverlay } from './overlay.js';
import { app } from './store.js';

let renderQueued = false;

export function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    for (const s of app.sources.values()) {
      if (s.overlayDirty) {
        s.overlayDirty = false;
        drawOverlay(s);
      }
    }
  });
}
