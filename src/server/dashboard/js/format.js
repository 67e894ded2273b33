/** Text for durations, numbers and clock times; '—' for a value that is missing. */
import { isNum } from './numbers.js';

export function fmtMs(v) {
  if (!isNum(v)) return '—';
  if (v >= 1000) return `${(v / 1000).toFixed(2)} s`;
  if (v >= 100) return `${v.toFixed(0)} ms`;
  return `${v.toFixed(1)} ms`;
}

export function fmtNum(v, digits = 1) {
  return isNum(v) ? v.toFixed(digits) : '—';
}

/** hh:mm:ss in local time of an epoch-milliseconds value. */
export function fmtTime(ms) {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '—';
  const p = (n) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
