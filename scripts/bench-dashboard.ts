/**
 * Dashboard and metrics cost (prints figures, asserts nothing).
 *
 *   npx tsx scripts/bench-dashboard.ts [--seconds 40] [--json out.json]
 *
 * 1. Pipeline CPU time (this process: user + system, from process.cpuUsage) over the same
 *    stretch of the person video at native rate, with no browser, then with 5 headless
 *    Chromium pages showing the dashboard (live frames, boxes, alerts). Browsers are separate
 *    processes and are not counted: the figure is what serving them costs the pipeline.
 * 2. /metrics scrape time with 16 sources running.
 * 3. The page's own cost with many sources (`--only render` runs this phase alone): one headless
 *    Chromium page (1400 × 900) on a server that publishes `--sources` (64) sources' detections
 *    messages at `--fps` (25), `--boxes` (20) boxes each, no pipeline. Measured over `--seconds`
 *    after 3 s of warm-up: the page's animation frames per second, boxes drawn per second
 *    (calls of the canvas' strokeRect, which only the overlay makes), and clicks answered: a click every 500 ms, from the event to
 *    the next animation frame after its handler (in the page, p50/p99), and the click's round
 *    trip from this process (Playwright's `mouse.click`, which waits for the page to handle it).
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { loadPipeline } from '../src/config/load.js';
import type { PipelineConfig } from '../src/config/schema.js';
import { percentiles } from '../src/core/stats.js';
import { pipelineBaseDir } from '../src/pipeline/pipeline.js';
import { runPipeline, type RunningPipeline } from '../src/pipeline/run.js';
import { startHttpServer } from '../src/server/http.js';
import type { Metrics } from '../src/server/metrics.js';
import { RateMeter, registerRoutes, type RouteContext } from '../src/server/routes.js';
import type { Message } from '../src/sinks/message.js';
import { WebSocketHub } from '../src/sinks/websocket.js';
import { numberFlag } from './lib/flags.js';

const args = process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(`--${n}`) ? args[args.indexOf(`--${n}`) + 1] : d);
const SECONDS = numberFlag(args, 'seconds', 40, { min: 1 });
const JSON_OUT = opt('json', '');
const ONLY = opt('only', '');
const RENDER = { sources: numberFlag(args, 'sources', 64, { min: 1 }), fps: numberFlag(args, 'fps', 25, { min: 1 }), boxes: numberFlag(args, 'boxes', 20) };
const here = resolve(fileURLToPath(new URL('.', import.meta.url)));
const file = resolve(here, '../pipelines/safety-zone.yaml');
const r2 = (v: number) => Math.round(v * 100) / 100;

async function withPipeline<T>(config: PipelineConfig, seconds: number, during: (r: RunningPipeline) => Promise<T>): Promise<{ cpuMs: number; frames: number; result: T }> {
  const ac = new AbortController();
  let running: RunningPipeline | undefined;
  let frames = 0;
  const done = runPipeline(config, { baseDir: pipelineBaseDir(file), status: false, signal: ac.signal, onReady: (r) => (running = r), onResult: () => frames++ });
  while (!running) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 3000)); // warm-up
  const c0 = process.cpuUsage();
  const f0 = frames;
  const result = await during(running);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const c = process.cpuUsage(c0);
  const f = frames - f0;
  ac.abort();
  await done;
  return { cpuMs: (c.user + c.system) / 1000, frames: f, result };
}

const launch = () => chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'] });

/** A detections message of `boxes` tracked boxes spread over a 1280 × 720 picture, as the pipeline publishes it. */
function detections(source: string, seq: number, boxes: number): string {
  const dets = Array.from({ length: boxes }, (_, i) => {
    const x = ((i * 97 + seq * 3) % 1180) + 10;
    const y = ((i * 53 + seq * 2) % 620) + 10;
    return { box: [x, y, x + 80, y + 90], label: i % 3 ? 'person' : 'car', classId: i % 3 ? 0 : 2, score: 0.5 + (i % 50) / 100, trackId: i + 1 };
  });
  const t = performance.timeOrigin + performance.now();
  return JSON.stringify({ v: 1, type: 'detections', source, seq, pts: seq / 25, frame: { width: 1280, height: 720 }, detections: dets, stamps: { produced: t - 40, captured: t - 30, emitted: t }, dropped: 0 });
}

/** Phase 3: the page with many sources, on a server of its own (no pipeline, no model). */
async function renderPhase(seconds: number) {
  const ids = Array.from({ length: RENDER.sources }, (_, i) => `cam${String(i).padStart(2, '0')}`);
  const hub = new WebSocketHub({ maxBufferedBytes: 8 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ids });
  const server = await startHttpServer({ host: '127.0.0.1', port: 0, upgrades: { '/ws': (req, sock, head) => hub.handleUpgrade(req, sock, head) } });
  const rates = new RateMeter(() => []);
  const pipeline = { stats: [], detector: { manifest: { name: 'bench', version: '1' }, provider: 'cpu' } } as unknown as RouteContext['pipeline'];
  registerRoutes(server, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }) });
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // Boxes drawn, counted at the canvas (the overlay is the only caller of strokeRect): the same count before and after a change of the page.
  // (Page code as text: tsx would wrap named functions in a helper the page does not have.)
  await page.addInitScript(`
    window.benchBoxes = 0;
    const own = CanvasRenderingContext2D.prototype.strokeRect;
    CanvasRenderingContext2D.prototype.strokeRect = function (...a) {
      window.benchBoxes++;
      return own.apply(this, a);
    };
  `);
  await page.goto(`${server.url}/`);
  await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected');
  await page.waitForFunction((n) => document.querySelectorAll('.tile').length === n, ids.length);
  let seq = 0;
  let sent = 0;
  const publish = setInterval(() => {
    seq++;
    for (const id of ids) {
      hub.publish('detections', id, detections(id, seq, RENDER.boxes), undefined as unknown as Message);
      sent++;
    }
  }, 1000 / RENDER.fps);
  await new Promise((r) => setTimeout(r, 3000)); // warm-up
  const boxes = () => page.evaluate('window.benchBoxes') as Promise<number>;
  const b0 = await boxes();
  const sent0 = sent;
  const t0 = performance.now();
  // In the page: animation frames, and each click's event → the next frame after its handler.
  await page.evaluate(`(() => {
    window.benchFrames = 0;
    window.benchClicks = [];
    window.benchOn = true;
    const count = () => {
      if (!window.benchOn) return;
      window.benchFrames++;
      requestAnimationFrame(count);
    };
    requestAnimationFrame(count);
    document.addEventListener('click', (e) => {
      const at = e.timeStamp;
      requestAnimationFrame(() => setTimeout(() => window.benchClicks.push(performance.now() - at), 0));
    }, true);
  })()`);
  const roundTrips: number[] = [];
  const pageStart = (await page.evaluate('performance.now()')) as number;
  while (performance.now() - t0 < seconds * 1000) {
    const t = performance.now();
    await page.mouse.click(700, 20); // the top bar: no handler of the page's own
    roundTrips.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 500));
  }
  const inPage = (await page.evaluate(`(() => {
    window.benchOn = false;
    return { frames: window.benchFrames, ms: performance.now() - ${pageStart}, clicks: window.benchClicks };
  })()`)) as { frames: number; ms: number; clicks: number[] };
  const elapsed = (performance.now() - t0) / 1000;
  const b1 = await boxes();
  const messages = sent - sent0;
  clearInterval(publish);
  const dropped = hub.clientStats().reduce((n, c) => n + c.dropped, 0);
  await browser.close();
  rates.close();
  await hub.close();
  await server.close();
  const [c50, c99] = percentiles(inPage.clicks, [50, 99]);
  const [r50, r99] = percentiles(roundTrips, [50, 99]);
  return {
    ...RENDER,
    seconds: r2(elapsed),
    messagesPerSecond: r2(messages / elapsed),
    droppedByServer: dropped,
    pageFps: r2(inPage.frames / (inPage.ms / 1000)),
    boxesDrawnPerSecond: r2((b1 - b0) / elapsed),
    clicks: inPage.clicks.length,
    clickToFrameMs: { p50: r2(c50), p99: r2(c99) },
    clickRoundTripMs: { p50: r2(r50), p99: r2(r99) },
  };
}

if (ONLY === 'render') {
  console.log(`dashboard bench, render phase: ${RENDER.sources} sources × ${RENDER.fps} fps × ${RENDER.boxes} boxes, ${SECONDS} s`);
  const render = await renderPhase(SECONDS);
  console.log(
    `page with ${render.sources} sources: ${render.pageFps} frames/s; boxes drawn ${render.boxesDrawnPerSecond}/s; ` +
      `click → next frame p50 ${render.clickToFrameMs.p50} ms, p99 ${render.clickToFrameMs.p99} ms (${render.clicks} clicks); click round trip p50 ${render.clickRoundTripMs.p50} ms, p99 ${render.clickRoundTripMs.p99} ms; ` +
      `${render.messagesPerSecond} messages/s sent, ${render.droppedByServer} dropped by the server`,
  );
  if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ render }, null, 2) + '\n');
  process.exit(0);
}

const base = await loadPipeline(file, { ...process.env, ARGUS_DEMO_RATE: 'native' });
base.server = { host: '127.0.0.1', port: 0 };
base.sources[0].loop = true;

console.log(`dashboard bench: ${SECONDS} s per phase`);
const none = await withPipeline(base, SECONDS, async () => undefined);
const browser = await launch();
const five = await withPipeline(base, SECONDS, async (r) => {
  const pages = await Promise.all(Array.from({ length: 5 }, () => browser.newPage()));
  await Promise.all(pages.map((p) => p.goto(r.server!.url + '/')));
  await Promise.all(pages.map((p) => p.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected')));
  return pages.length;
});
await browser.close();
const perFrame = (x: { cpuMs: number; frames: number }) => x.cpuMs / x.frames;
const overheadPct = r2((100 * (perFrame(five) - perFrame(none))) / perFrame(none));
console.log(`pipeline CPU: no browser ${r2(none.cpuMs)} ms for ${none.frames} frames (${r2(perFrame(none))} ms/frame); 5 dashboards ${r2(five.cpuMs)} ms for ${five.frames} frames (${r2(perFrame(five))} ms/frame): +${overheadPct}% (target ≤ 5%)`);

// 16 sources: the person video 16 times at native rate (inference cannot keep up with all:
// drops are expected and counted); scrape /metrics 100 times.
const sixteen: PipelineConfig = { ...base, sources: Array.from({ length: 16 }, (_, i) => ({ ...base.sources[0], id: `cam${i}` })) };
const scrape = await withPipeline(sixteen, 1, async (r) => {
  // The HTTP client runs in the pipeline's own process here, so its figure includes waiting for
  // an event loop busy with 16 sources; the generation time is the scrape's own cost.
  const http: number[] = [];
  const gen: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 100; i++) {
    let t = performance.now();
    const res = await fetch(r.server!.url + '/metrics');
    bytes = (await res.text()).length;
    http.push(performance.now() - t);
    t = performance.now();
    await r.metrics!.scrape();
    gen.push(performance.now() - t);
  }
  const [p50, p99] = percentiles(gen, [50, 99]);
  const [h50, h99] = percentiles(http, [50, 99]);
  return { p50: r2(p50), p99: r2(p99), httpP50: r2(h50), httpP99: r2(h99), bytes };
});
console.log(
  `/metrics with 16 sources: generation p50 ${scrape.result.p50} ms, p99 ${scrape.result.p99} ms (target ≤ 20 ms); ` +
    `HTTP round trip from inside the saturated process p50 ${scrape.result.httpP50} ms, p99 ${scrape.result.httpP99} ms; ${scrape.result.bytes} bytes`,
);
const render = await renderPhase(SECONDS);
console.log(
  `page with ${render.sources} sources × ${render.fps} fps × ${render.boxes} boxes: ${render.pageFps} frames/s; boxes drawn ${render.boxesDrawnPerSecond}/s; ` +
    `click → next frame p50 ${render.clickToFrameMs.p50} ms, p99 ${render.clickToFrameMs.p99} ms; click round trip p50 ${render.clickRoundTripMs.p50} ms, p99 ${render.clickRoundTripMs.p99} ms`,
);
if (JSON_OUT) writeFileSync(JSON_OUT, JSON.stringify({ none, five, overheadPct, scrape: scrape.result, render }, null, 2) + '\n');
process.exit(0);
