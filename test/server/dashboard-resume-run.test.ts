// The dashboard resumes its alerts after a reconnect (subscribe's `after`). It resumed after the
// id of its last alert whatever the run the hello said: after argus restarted, an alert id that
// came again (a program that embeds argus and gives its run again) had the hub resume after the new
// run's alert of that id, and the new run's alerts raised before it were never listed, nor said
// missed. A page that had had no alert yet resumed nothing: alerts raised while it was away were lost.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type RunningServer } from '../../src/server/http.js';
import type { Metrics } from '../../src/server/metrics.js';
import { RateMeter, registerRoutes, type RouteContext } from '../../src/server/routes.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { WebSocketHub } from '../../src/sinks/websocket.js';
import { WebSocketServer } from 'ws';
import { launchChromium } from '../helpers/browser.js';

let browser: Browser;
beforeAll(async () => void (browser = await launchChromium()), 60_000);
afterAll(async () => void (await browser?.close()));

/** `instance`: the hub's own tag; the same one stands for the same hub (a network outage, seen from the page), none for a fresh one (a restart). */
async function serve(run: string, port: number, sources = ['lobby'], instance?: string): Promise<{ hub: WebSocketHub; s: RunningServer; close: () => Promise<void> }> {
  const hub = new WebSocketHub({ maxBufferedBytes: 1 << 22, maxAlertBacklog: 1000, maxClientMessageBytes: 4096, sources: () => sources, run, instance });
  const s = await startHttpServer({ host: '127.0.0.1', port, upgrades: { '/ws': (req, sock, head) => hub.handleUpgrade(req, sock, head) } });
  const rates = new RateMeter(() => []);
  const pipeline = { stats: [], detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as RouteContext['pipeline'];
  registerRoutes(s, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }), snapshot: (id, key) => hub.snapshot(id, key) });
  return { hub, s, close: async () => void (rates.close(), await hub.close(), await s.close()) };
}

function raise(hub: WebSocketHub, run: string, id: string): void {
  const m = { type: 'alert', version: 1, source: 'lobby', run, alert: { id, rule: 'r', severity: 'critical', event: 'zone.enter', message: `alert ${id}` } };
  hub.publish('alert', 'lobby', JSON.stringify(m), m as unknown as AlertMessage);
}

const listed = (page: Page) => page.$$eval('#alerts .alert:not(.alert-missed)', (els) => els.map((e) => e.getAttribute('data-id')).reverse());
const connected = (page: Page) => page.waitForFunction(() => document.querySelector('#status')?.textContent === 'connected', undefined, { timeout: 20_000 });
const disconnected = (page: Page) => page.waitForFunction(() => document.querySelector('#status')?.textContent === 'disconnected', undefined, { timeout: 20_000 });

describe('dashboard: resuming alerts across a restart of argus (hello run)', () => {
  it('after a restart whose alert ids come again, every alert of the new run is listed and the restart is said, not resumed after the old id', async () => {
    let a = await serve('runa', 0);
    const port = Number(new URL(a.s.url).port);
    const page = await browser.newPage();
    try {
      await page.goto(`${a.s.url}/`);
      await connected(page);
      raise(a.hub, 'runa', 'lobby:r:1');
      raise(a.hub, 'runa', 'lobby:r:2');
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert').length === 2, undefined, { timeout: 10_000 });
      await a.close();
      await disconnected(page);
      // argus restarts (another run), and raises alerts with the same ids before the page is back.
      const b = await serve('runb', port);
      a = b;
      raise(b.hub, 'runb', 'lobby:r:1');
      raise(b.hub, 'runb', 'lobby:r:2');
      raise(b.hub, 'runb', 'lobby:r:3');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length === 5, undefined, { timeout: 10_000 });
      expect(await listed(page)).toEqual(['lobby:r:1', 'lobby:r:2', 'lobby:r:1', 'lobby:r:2', 'lobby:r:3']);
      // The restart is said, where the alerts would have been.
      expect(await page.locator('#alerts .alert-missed[data-restarted="runb"]').count()).toBe(1);
      // A reconnect on the new run (the same hub, after a network outage) resumes after its last alert: none again, none missed.
      await b.close();
      await disconnected(page);
      a = await serve('runb', port, ['lobby'], b.hub.instance);
      raise(a.hub, 'runb', 'lobby:r:1');
      raise(a.hub, 'runb', 'lobby:r:2');
      raise(a.hub, 'runb', 'lobby:r:3');
      raise(a.hub, 'runb', 'lobby:r:4');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length === 6, undefined, { timeout: 10_000 });
      expect((await listed(page)).slice(5)).toEqual(['lobby:r:4']);
      expect(await page.locator('#alerts .alert-missed').count()).toBe(1);
    } finally {
      await page.close();
      await a.close();
    }
  }, 90_000);

  it('after a restart of a program that gives its run again (the same run, another process), every alert of the new process is listed and the restart is said, not resumed after the old id', async () => {
    let a = await serve('runsame', 0);
    const port = Number(new URL(a.s.url).port);
    const page = await browser.newPage();
    try {
      await page.goto(`${a.s.url}/`);
      await connected(page);
      raise(a.hub, 'runsame', 'lobby:r:1');
      raise(a.hub, 'runsame', 'lobby:r:2');
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert').length === 2, undefined, { timeout: 10_000 });
      await a.close();
      await disconnected(page);
      // The program starts again with the same run: its alert ids come again.
      const b = await serve('runsame', port);
      a = b;
      raise(b.hub, 'runsame', 'lobby:r:1');
      raise(b.hub, 'runsame', 'lobby:r:2');
      raise(b.hub, 'runsame', 'lobby:r:3');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length === 5, undefined, { timeout: 10_000 });
      expect(await listed(page)).toEqual(['lobby:r:1', 'lobby:r:2', 'lobby:r:1', 'lobby:r:2', 'lobby:r:3']);
      expect(await page.locator('#alerts .alert-missed[data-restarted="runsame"]').count()).toBe(1);
      // A reconnect to the same process resumes after its last alert: none again, none missed.
      const instance = b.hub.instance;
      await b.close();
      await disconnected(page);
      a = await serve('runsame', port, ['lobby'], instance);
      raise(a.hub, 'runsame', 'lobby:r:1');
      raise(a.hub, 'runsame', 'lobby:r:2');
      raise(a.hub, 'runsame', 'lobby:r:3');
      raise(a.hub, 'runsame', 'lobby:r:4');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length === 6, undefined, { timeout: 10_000 });
      expect((await listed(page)).slice(5)).toEqual(['lobby:r:4']);
      expect(await page.locator('#alerts .alert-missed').count()).toBe(1);
    } finally {
      await page.close();
      await a.close();
    }
  }, 90_000);

  it('a page that had no alert yet gets those raised while it was away, and not those held before it opened', async () => {
    let a = await serve('runc', 0, ['lobby'], 'hubc');
    const port = Number(new URL(a.s.url).port);
    const page = await browser.newPage();
    try {
      raise(a.hub, 'runc', 'lobby:r:old'); // held before the page opened
      await page.goto(`${a.s.url}/`);
      await connected(page);
      await a.close();
      await disconnected(page);
      // The same run's hub again, still holding what it held (a network outage, seen from the page).
      const b = await serve('runc', port, ['lobby'], 'hubc');
      a = b;
      raise(b.hub, 'runc', 'lobby:r:old');
      raise(b.hub, 'runc', 'lobby:r:away');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length >= 1, undefined, { timeout: 10_000 });
      expect(await listed(page)).toEqual(['lobby:r:away']);
      expect(await page.locator('#alerts .alert-missed').count()).toBe(0);
    } finally {
      await page.close();
      await a.close();
    }
  }, 90_000);

  it('a source the restarted argus no longer has loses its tile (it stayed, "no frames", forever); one it still has keeps it', async () => {
    let a = await serve('rund', 0, ['lobby', 'dock']);
    const port = Number(new URL(a.s.url).port);
    const page = await browser.newPage();
    try {
      await page.goto(`${a.s.url}/`);
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('.tile[data-source]').length === 2, undefined, { timeout: 10_000 });
      await a.close();
      await disconnected(page);
      a = await serve('rune', port, ['lobby']);
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('.tile[data-source]').length === 1, undefined, { timeout: 10_000 });
      expect(await page.$$eval('.tile[data-source]', (els) => els.map((e) => e.getAttribute('data-source')))).toEqual(['lobby']);
      expect(await page.locator('#no-sources').isHidden()).toBe(true);
      // None left: the page says it waits for sources.
      await a.close();
      await disconnected(page);
      a = await serve('runf', port, []);
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('.tile[data-source]').length === 0, undefined, { timeout: 10_000 });
      expect(await page.locator('#no-sources').isVisible()).toBe(true);
    } finally {
      await page.close();
      await a.close();
    }
  }, 90_000);

  it('a reconnect cut before its subscribe was answered resumes as that one would have: the restart it saw is still said', async () => {
    let a = await serve('rung', 0);
    const port = Number(new URL(a.s.url).port);
    const page = await browser.newPage();
    try {
      await page.goto(`${a.s.url}/`);
      await connected(page);
      raise(a.hub, 'rung', 'lobby:r:1');
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert').length === 1, undefined, { timeout: 10_000 });
      await a.close();
      await disconnected(page);
      // The restarted argus (run runh) says hello, and the connection breaks before it answers the subscribe.
      const wss = new WebSocketServer({ noServer: true });
      let subscribes = 0;
      const blip = await startHttpServer({
        host: '127.0.0.1',
        port,
        upgrades: {
          '/ws': (req, sock, head) =>
            wss.handleUpgrade(req, sock, head, (ws) => {
              ws.send(JSON.stringify({ type: 'hello', version: 1, run: 'runh', latestAlert: null, sources: ['lobby'], kinds: ['detections', 'alerts', 'status'], maxMessageBytes: 4096 }));
              ws.on('message', () => {
                subscribes++;
                ws.terminate();
              });
            }),
        },
      });
      const end = Date.now() + 30_000;
      while (subscribes === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(subscribes).toBeGreaterThan(0);
      wss.close();
      await blip.close();
      await disconnected(page);
      a = await serve('runh', port);
      raise(a.hub, 'runh', 'lobby:r:1');
      raise(a.hub, 'runh', 'lobby:r:2');
      await connected(page);
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert:not(.alert-missed)').length === 3, undefined, { timeout: 10_000 });
      expect(await listed(page)).toEqual(['lobby:r:1', 'lobby:r:1', 'lobby:r:2']);
      // The restart is said (the second connection resumed on the new run, as if the page had been on it: unsaid).
      await page.waitForFunction(() => document.querySelectorAll('#alerts .alert-missed').length === 1, undefined, { timeout: 10_000 }).catch(() => undefined);
      expect(await page.locator('#alerts .alert-missed[data-restarted="runh"]').count()).toBe(1);
    } finally {
      await page.close();
      await a.close();
    }
  }, 90_000);
});
