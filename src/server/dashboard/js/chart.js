/** A tile's latency chart: end-to-end p50 per second over the last two minutes. */
import { sizeCanvas } from './canvas.js';
import { fmtMs } from './format.js';
import { isNum, median } from './numbers.js';

const CHART_SECONDS = 120;

/** One p50 per second of the chart's window (null where no value came); completed seconds are folded into their p50 and old ones dropped. */
function chartPoints(s) {
  const nowSec = Math.floor(Date.now() / 1000);
  // Completed seconds become one p50 point each.
  for (const [sec, values] of s.seconds) {
    if (sec < nowSec) {
      s.secondP50.set(sec, median(values));
      s.seconds.delete(sec);
    }
  }
  for (const sec of s.secondP50.keys()) if (sec < nowSec - CHART_SECONDS - 1) s.secondP50.delete(sec);
  const pts = [];
  for (let sec = nowSec - CHART_SECONDS; sec < nowSec; sec++) {
    const v = s.secondP50.get(sec);
    pts.push(isNum(v) ? v : null);
  }
  return pts;
}

/** The smallest of 1, 1.5, 2, … 10 × a power of ten that is at least `v` (the chart's top). */
function niceCeil(v) {
  if (!(v > 0)) return 10;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/** Redraws source `s`'s chart and its label, if its tile is on screen (else when it comes into view: tile.js); sets data-points. */
export function drawChart(s) {
  const pts = chartPoints(s); // also retires old seconds, so it runs even when the chart is not shown
  if (!s.visible) {
    s.chartDirty = true;
    return;
  }
  s.chartDirty = false;
  const c = s.el.chart;
  const cssW = c.clientWidth;
  const cssH = c.clientHeight;
  if (!cssW || !cssH) return;
  const ctx = sizeCanvas(c, cssW, cssH);
  ctx.clearRect(0, 0, cssW, cssH);
  const values = pts.filter((v) => v !== null);
  const top = niceCeil(Math.max(10, ...values) * 1.2);
  const padL = 2;
  const padR = 2;
  const padT = 4;
  const padB = 2;
  const w = cssW - padL - padR;
  const h = cssH - padT - padB;
  const xOf = (i) => padL + (i / (CHART_SECONDS - 1)) * w;
  const yOf = (v) => padT + h - (Math.min(v, top) / top) * h;

  ctx.strokeStyle = 'rgba(255,255,255,0.08)';
  ctx.lineWidth = 1;
  for (const f of [0.5, 1]) {
    const y = Math.round(yOf(top * f)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(padL, y);
    ctx.lineTo(padL + w, y);
    ctx.stroke();
  }
  ctx.fillStyle = 'rgba(200, 210, 225, 0.75)';
  ctx.font = '10px system-ui, sans-serif';
  ctx.textBaseline = 'top';
  ctx.textAlign = 'left';
  ctx.fillText(fmtMs(top), padL + 4, padT);

  ctx.strokeStyle = '#5aa9e6';
  ctx.lineWidth = 1.5;
  ctx.lineJoin = 'round';
  ctx.beginPath();
  let pen = false;
  let last = -1;
  pts.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    const x = xOf(i);
    const y = yOf(v);
    if (pen) ctx.lineTo(x, y);
    else ctx.moveTo(x, y);
    pen = true;
    last = i;
  });
  ctx.stroke();
  // Lone points (a second between two gaps) would not show as a line: mark them.
  ctx.fillStyle = '#5aa9e6';
  pts.forEach((v, i) => {
    if (v !== null && (i === 0 || pts[i - 1] === null) && (i === pts.length - 1 || pts[i + 1] === null)) {
      ctx.fillRect(xOf(i) - 1, yOf(v) - 1, 2, 2);
    }
  });
  if (last >= 0) {
    ctx.beginPath();
    ctx.arc(xOf(last), yOf(pts[last]), 2.5, 0, Math.PI * 2);
    ctx.fill();
  }
  c.dataset.points = String(values.length);
  const latest = last >= 0 ? pts[last] : NaN;
  const label = isNum(latest) ? `e2e p50 ${fmtMs(latest)} · 2 min max ${fmtMs(Math.max(...values))}` : 'e2e p50 / s — last 2 min';
  if (s.el.chartLabel.textContent !== label) s.el.chartLabel.textContent = label;
  c.setAttribute('aria-label', `End-to-end latency, p50 per second over the last 2 minutes: ${label}`);
}
