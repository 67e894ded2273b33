/**
 * Inference and the event loop, in real time (the figures test/inference/workers.test.ts no
 * longer asserts, because wall-clock budgets fail on a busy machine). Prints figures; asserts nothing.
 *
 *   npx tsx scripts/bench-inference-loop.ts [--runs 5]
 *
 * - Ticks of a 1 ms timer during batch-8 runs of yolox-nano-dyn: a main-thread session blocks
 *   the loop for the whole run (a tick or two around it), a worker session leaves it free
 *   (about one tick per millisecond of the run).
 * - Two frames submitted together to one worker and to two: how late the second starts after
 *   the first: about a run's length with one worker, about 0 with two.
 */
import { loadModelManifest, resolveModelFile } from '../src/assets/catalog.js';
import { Detector } from '../src/inference/detector.js';
import { numberFlag } from './lib/flags.js';

const args = process.argv.slice(2);
const runs = numberFlag(args, 'runs', 5, { min: 1 });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (x: number) => x.toFixed(1);

async function load(name: string, workers: number, threads: number, maxBatch: number): Promise<Detector> {
  const { manifest } = await loadModelManifest(name);
  return Detector.load(manifest, await resolveModelFile(manifest), { providers: ['cpu'], intraOpThreads: threads, warmupRuns: 1, workers, batch: maxBatch > 1 ? { maxBatch, maxWaitMs: 60_000 } : undefined });
}

/** Timer ticks and milliseconds per batch-8 run. */
async function ticks(det: Detector): Promise<{ ticks: number; ms: number }> {
  const inputs = Array.from({ length: 8 }, () => det.createInput());
  for (const i of inputs) i.data.fill(114);
  const t: number[] = [];
  const ms: number[] = [];
  for (let r = 0; r < runs; r++) {
    let n = 0;
    const timer = setInterval(() => n++, 1);
    const t0 = performance.now();
    await Promise.all(inputs.map((i) => det.run(i)));
    ms.push(performance.now() - t0);
    clearInterval(timer);
    t.push(n);
  }
  return { ticks: median(t), ms: median(ms) };
}

/** Two runs submitted together: the second's start lag and the first's length. */
async function pair(det: Detector): Promise<{ lag: number; run: number }> {
  const inputs = [det.createInput(), det.createInput()];
  for (const i of inputs) i.data.fill(114);
  const lags: number[] = [];
  const lens: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = [0, 0];
    const end = [0, 0];
    await Promise.all(inputs.map((inp, i) => det.run(inp, () => (start[i] = performance.now())).then(() => (end[i] = performance.now()))));
    lags.push(start[1] - start[0]);
    lens.push(end[0] - start[0]);
  }
  return { lag: median(lags), run: median(lens) };
}

console.log(`median of ${runs} runs each`);
for (const workers of [0, 1]) {
  const det = await load('yolox-nano-dyn', workers, 2, 8);
  const r = await ticks(det);
  console.log(`batch of 8, ${workers === 0 ? 'main-thread session' : 'worker session    '}: run ${fmt(r.ms)} ms, 1 ms timer ticks during it ${r.ticks}`);
  await det.release();
}
for (const workers of [1, 2]) {
  const det = await load('yolox-nano', workers, 1, 1);
  const r = await pair(det);
  console.log(`two frames, ${workers} worker${workers > 1 ? 's' : ' '}: run ${fmt(r.run)} ms, second starts ${fmt(r.lag)} ms after the first (${r.lag < 0.5 * r.run ? 'together' : 'one after the other'})`);
  await det.release();
}
