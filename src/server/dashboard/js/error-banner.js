/** The #error banner in the top bar: shows a message for 15 s (a newer one replaces it and restarts the time). */
import { $ } from './dom.js';

let errorTimer = 0;

export function showError(text) {
  const e = $('#error');
  e.hidden = false;
  e.textContent = text;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => {
    e.hidden = true;
  }, 15000);
}
