// A down tile's "retry N in X s" (a reconnecting source's reason) was written once and never
// counted down: a minute later it still said "retry 3 in 4.0 s", and after the retry had started
// too; a stalled one's "no frame for 2.0 s" stayed 2.0 s for as long as the camera was silent.
// What the page shows now is true: the seconds left, then that the retry is under way; the silence
// as long as it has been.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { now } from '../../src/core/clock.js';
import { startHttpServer } from '../../src/server/http.js';
import type { Metrics } from '../../src/server/metrics.js';
import { RateMeter, registerRoutes, type RouteContext } from '../../src/server/routes.js';
import type { StatusMessage } from '../../src/sinks/message.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';
import { launchChromium } from '../helpers/browser.js';

let browser: Browser;
beforeAll(async () => void (browser = await launchChromium()), 60_000);
afterAll(async () => void (await browser?.close()));

const reasonOf = (page: Page, id: string) => page.$eval(`.tile[data-source="${id}"] .tile-down-reason`, (e) => e.textContent ?? '');
const waitReason = (page: Page, id: string, re: RegExp, ms = 20_000) =>
  page.waitForFunction(([sel, src]) => new RegExp(src).test(document.querySelector(sel)?.textContent ?? ''), [`.tile[data-source="${id}"] .tile-down-reason`, re.source] as const, { timeout: ms });

describe('dashboard: a reconnecting source\'s retry', () => {
  it('counts down from when the transition was raised (a poll: by its age on the server), then says the retry is under way; a status message\'s too; a stall counts up', async () => {
    const e2e = { sorted: () => [] };
    // Entered 1.5 s before the page opens: 2.5 s are left of the 4.0 s.
    const polled = { id: 'dock', state: 'reconnecting', framesOut: 0, reconnects: 2, dropped: 0, width: 0, height: 0, fps: 0, e2e, pipeline: e2e, e2eBy: { counts: [0, 0, 0, 0] }, lastTransition: { reason: 'ffmpeg exited with code 1; retry 3 in 4.0 s', at: now() - 1500 } };
    // Stalled 5 s ago, after 2 s without a frame: 7 s without one now, and counting.
    const stalled = { ...polled, id: 'lobby', state: 'stalled', lastTransition: { reason: 'no frame for 2.0 s', at: now() - 5000 } };
    const hub = new WebSocketHub({ maxBufferedBytes: 1 << 20, maxAlertBacklog: 100, maxClientMessageBytes: 4096, sources: () => ['dock', 'gate'] });
    const s = await startHttpServer({ host: '127.0.0.1', port: 0, upgrades: { '/ws': (req, sock, head) => hub.handleUpgrade(req, sock, head) } });
    const rates = new RateMeter(() => []);
    const pipeline = { stats: [polled, stalled], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as RouteContext['pipeline'];
    registerRoutes(s, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }) });
    const page = await browser.newPage();
    try {
      const opened = now();
      await page.goto(`${s.url}/`);
      await waitReason(page, 'dock', /retry 3/);
      const first = await reasonOf(page, 'dock');
      // Never the 4.0 s as written: what is left of it, or under way if the page took that long.
      const left = Math.ceil((4000 - 1500 - (now() - opened)) / 1000);
      expect(first, 'the seconds left, from the transition\'s age').toMatch(/ — ffmpeg exited with code 1; retry 3 (in [1-3] s|under way)$/);
      if (/ in (\d) s$/.test(first)) expect(Number(/ in (\d) s$/.exec(first)![1])).toBeLessThanOrEqual(Math.max(left + 1, 1));
      await waitReason(page, 'dock', /retry 3 under way$/, 15_000);
      // The stalled camera's silence counts up from when it was said: never the 2.0 s as written.
      const silent = Number(/^ — no frame for (\d+) s$/.exec(await reasonOf(page, 'lobby'))?.[1]);
      expect(silent).toBeGreaterThanOrEqual(7);
      await waitReason(page, 'lobby', new RegExp(`^ — no frame for (${silent + 1}|${silent + 2}|${silent + 3}) s$`), 10_000);

      // A status message raised now: from its arrival.
      await page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 20_000 });
      const m = { type: 'status', version: 1, source: 'gate', state: 'reconnecting', previous: 'streaming', reason: 'connection refused; retry 2 in 5.0 s', at: Date.now(), attempt: 2, published: 0 } as unknown as StatusMessage;
      const sent = now();
      hub.publish('status', 'gate', JSON.stringify(m), m);
      await waitReason(page, 'gate', /retry 2/);
      expect(await reasonOf(page, 'gate')).toMatch(/ — connection refused; retry 2 in [3-5] s$/);
      // It counts down: a smaller number while the 5 s run, never the 5.0 as written.
      await waitReason(page, 'gate', /retry 2 in [1-3] s$/, 15_000);
      expect(now() - sent).toBeLessThan(5000 + 1000);
      await waitReason(page, 'gate', /retry 2 under way$/, 15_000);
      expect(now() - sent).toBeGreaterThanOrEqual(4000);
      // The next failure says the next retry, counted from its own arrival.
      const next = { ...m, reason: 'connection refused; retry 3 in 8.0 s', attempt: 3, at: Date.now() } as StatusMessage;
      hub.publish('status', 'gate', JSON.stringify(next), next);
      await waitReason(page, 'gate', /retry 3 in [6-8] s$/);
    } finally {
      await page.close();
      rates.close();
      await hub.close();
      await s.close();
    }
  }, 90_000);
});
