/** A tile's per-stage bar and legend: the average time of each stage over the source's recent frames. */
import { el } from './dom.js';
import { fmtMs } from './format.js';
import { isNum } from './numbers.js';
import { STAGE_SPANS } from './stages.js';
import { app } from './store.js';

const STAGE_COLORS = {
  preprocess: '#5aa9e6',
  queue: '#8d99ae',
  infer: '#f4a259',
  postprocess: '#9b5de5',
  emit: '#43aa8b',
};

/** Rebuilds the segments when the stage list changed, then sets widths, values and the data-<stage> attributes. */
export function updateStages(s) {
  const e = s.el;
  const names = app.stages.filter((n) => STAGE_SPANS[n]);
  if (!e.stageSegs || e.stageSegs.names.join() !== names.join()) {
    e.stageBar.replaceChildren();
    e.stageLegend.replaceChildren();
    const segs = [];
    const vals = [];
    for (const n of names) {
      const seg = el('span', { class: `seg seg-${n}` });
      seg.style.background = STAGE_COLORS[n] || '#888';
      e.stageBar.append(seg);
      segs.push(seg);
      const val = el('span', { class: 'stage-ms', text: '—' });
      const sw = el('i', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = STAGE_COLORS[n] || '#888';
      e.stageLegend.append(el('li', { class: `stage stage-${n}`, 'data-stage': n }, sw, el('span', { class: 'stage-name', text: n }), val));
      vals.push(val);
    }
    e.stageSegs = { names, segs, vals };
  }
  const idx = names.map((n) => app.stages.indexOf(n));
  const avgs = idx.map((j) => {
    let sum = 0;
    let n = 0;
    for (const d of s.stageRecent) {
      if (isNum(d[j])) {
        sum += d[j];
        n++;
      }
    }
    return n ? sum / n : NaN;
  });
  const total = avgs.reduce((a, v) => a + (isNum(v) ? v : 0), 0);
  avgs.forEach((v, i) => {
    const seg = e.stageSegs.segs[i];
    const pct = total > 0 && isNum(v) ? (v / total) * 100 : 0;
    seg.style.width = `${pct}%`;
    seg.title = `${names[i]} ${fmtMs(v)}`;
    e.stageSegs.vals[i].textContent = fmtMs(v);
    e.stages.dataset[names[i]] = isNum(v) ? v.toFixed(2) : '';
  });
  e.stages.dataset.total = total > 0 ? total.toFixed(2) : '';
  e.stages.setAttribute('aria-label', `Average per-stage time of the last ${s.stageRecent.length} frames: ${names.map((n, i) => `${n} ${fmtMs(avgs[i])}`).join(', ')}`);
}
