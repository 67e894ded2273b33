import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PipelineSchema } from '../../src/config/schema.js';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { PERSON_VIDEO } from '../helpers/assets.js';
import { MODEL_RUN_TIMEOUT_MS } from '../helpers/cli.js';

let html: Server;
let htmlUrl: string;
beforeAll(async () => {
  html = createServer((_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>'));
  await new Promise<void>((r) => html.listen(0, '127.0.0.1', r));
  htmlUrl = `http://127.0.0.1:${(html.address() as AddressInfo).port}/cam`;
});
afterAll(() => new Promise((r) => html.close(r)));

const get = async (url: string) => {
  const r = await fetch(url);
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') };
};
/** Value of one sample line, e.g. `argus_frames_out_total{source="lobby"}`. */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/** Polls `f` until it returns a value; `ms` only bounds a hang (it is not what the test checks). */
async function until<T>(f: () => T | undefined | false | Promise<T | undefined | false>, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('/metrics, /healthz, /readyz during a real run', () => {
  it('exposes the documented series; counters grow; histogram counts equal frames processed; readiness follows the sources', async () => {
    // lobby at `rate: fast`: every frame is processed and no stall watchdog runs, so its state
    // stays `streaming` and its alert comes after the same frames on any machine.
    const config = PipelineSchema.parse({
      sources: [
        { id: 'lobby', uri: PERSON_VIDEO, rate: 'fast', loop: true, zones: [{ id: 'all', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]], classes: ['person'] }], rules: [{ id: 'anyone', type: 'zone-enter', zone: 'all' }] },
        { id: 'broken', uri: htmlUrl, reconnect: { maxAttempts: 1, initialDelayMs: 100 } },
      ],
      model: { warmupRuns: 1 },
      server: { port: 0 },
      alerts: { snapshot: { mode: 'none' } },
    });
    const ac = new AbortController();
    let firstReady: { status: number; body: { ready: boolean; waitingFor: string[] } } | undefined;
    let done: Promise<unknown> | undefined;
    const running = await new Promise<RunningPipeline>((resolve, reject) => {
      done = runPipeline(config, { status: false, signal: ac.signal, onReady: resolve });
      done.catch(reject);
    });
    const base = running.server!.url;
    // Straight away, before any frame: alive but not ready.
    const early = await get(`${base}/readyz`);
    firstReady = { status: early.status, body: JSON.parse(early.text) };
    expect((await get(`${base}/healthz`)).status).toBe(200);

    // Wait until the first person walked in (an alert) and the broken source has failed.
    await until(() => running.alerts.stats.raised >= 1 && running.pipeline.stats[1].state === 'failed', MODEL_RUN_TIMEOUT_MS, 'an alert and the broken source failed');

    const m1 = await get(`${base}/metrics`);
    const out1 = sample(m1.text, 'argus_frames_out_total{source="lobby"}')!;
    // Counters grow: the next scrapes are taken until frames_out has moved on.
    const m2 = await until(async () => {
      const m = await get(`${base}/metrics`);
      return sample(m.text, 'argus_frames_out_total{source="lobby"}')! > out1 && m;
    }, MODEL_RUN_TIMEOUT_MS, 'frames_out to grow');
    const ready = await get(`${base}/readyz`);
    const health = JSON.parse((await get(`${base}/healthz`)).text);
    ac.abort();
    await done;

    expect(firstReady.status).toBe(503);
    expect(firstReady.body.waitingFor).toContain('lobby');
    expect(ready.status).toBe(200); // lobby delivered frames; broken is failed (maxAttempts)
    expect(health.sources.map((s: { id: string; state: string }) => [s.id, s.state])).toEqual([
      ['lobby', 'streaming'],
      ['broken', 'failed'],
    ]);
    expect(health.sources[1].error.code).toBe('VAP_ERR_SOURCE_EXIT');

    expect(m1.type).toMatch(/^text\/plain; version=0\.0\.4/);
    for (const series of [
      'argus_frames_in_total',
      'argus_frames_out_total',
      'argus_frames_dropped_total',
      'argus_stage_latency_seconds_bucket',
      'argus_frame_latency_seconds_count',
      'argus_inference_seconds_count',
      'argus_source_state',
      'argus_source_reconnects_total',
      'argus_queue_depth',
      'argus_websocket_clients',
      'argus_alerts_total',
      'argus_process_resident_memory_bytes',
      'argus_nodejs_eventloop_lag_seconds',
    ]) {
      expect(m2.text, series).toMatch(new RegExp(`^${series}[{ ]`, 'm'));
    }
    const out2 = sample(m2.text, 'argus_frames_out_total{source="lobby"}')!;
    expect(out2).toBeGreaterThan(out1); // frames kept coming
    // The latency histograms saw exactly the frames processed.
    for (const m of [m1, m2]) {
      const out = sample(m.text, 'argus_frames_out_total{source="lobby"}');
      expect(sample(m.text, 'argus_frame_latency_seconds_count{source="lobby"}')).toBe(out);
      expect(sample(m.text, 'argus_stage_latency_seconds_count{source="lobby",stage="infer"}')).toBe(out);
    }
    expect(sample(m2.text, 'argus_inference_seconds_count{provider="cpu"}')).toBe(out2);
    expect(sample(m2.text, 'argus_source_state{source="broken",state="failed"}')).toBe(1);
    expect(sample(m2.text, 'argus_source_state{source="lobby",state="streaming"}')).toBe(1);
    expect(sample(m2.text, 'argus_source_reconnects_total{source="broken"}')).toBe(1);
    expect(sample(m2.text, 'argus_alerts_total{rule="anyone",severity="warning"}')).toBeGreaterThanOrEqual(1);
  }, 3 * MODEL_RUN_TIMEOUT_MS);
});
