/**
 * A message's `run` tells apart the runs whose `seq` count from 0: every runPipeline (a library
 * user that runs its pipeline again in the same process, after a failure or a configuration
 * change, as a service manager restarts argus) counts its sources' frames from 0 again, so each
 * needs its own run, and its alert ids with it. Fake model, real ffmpeg, the JSON lines sink
 * (appended to by both runs), README's crowd rule (an alert at frame 0).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import WebSocket from 'ws';
import { runPipeline, type RunningPipeline } from '../../src/pipeline/run.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { crowdRule } from '../../pipelines/custom-operator.js';
import { fakeDetector } from '../helpers/fake-session.js';

describe('two runs of a pipeline in one process (library use)', () => {
  let detector: Detector;
  let dir: string;
  beforeAll(async () => {
    ({ detector } = await fakeDetector());
    dir = mkdtempSync(join(tmpdir(), 'argus-run-tag-'));
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '5', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
  });
  afterAll(() => detector?.release());

  it("have runs of their own: (source, run, seq) and the alert ids never repeat (one tag a process gave the second run's frame 0 the first's run, seq and alert id)", async () => {
    const out = join(dir, 'out.jsonl');
    const config = parseConfigText(`name: again\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: fast }]\nsinks:\n  jsonl: { path: ${out} }\n`, PipelineSchema, 'again.yaml', {});
    for (let i = 0; i < 2; i++) await runPipeline(config, { detector, extend: crowdRule(1, 10), status: false });
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; source: string; run: string; seq: number; alert?: { id: string } });
    const detections = lines.filter((m) => m.type === 'detections');
    const alerts = lines.filter((m) => m.type === 'alert');
    // Both runs did their work: each frame 0 twice, one alert each.
    expect(detections.filter((m) => m.seq === 0)).toHaveLength(2);
    expect(alerts.map((m) => m.seq)).toEqual([0, 0]);
    expect(new Set(lines.map((m) => m.run)).size).toBe(2);
    expect(new Set(detections.map((m) => `${m.source}/${m.run}/${m.seq}`)).size).toBe(detections.length);
    expect(new Set(alerts.map((m) => m.alert!.id)).size).toBe(2);
    for (const a of alerts) expect(a.alert!.id).toBe(`cam:crowd:${a.run}-0:r0`);
  }, 60_000);

  it("refuses a run given (RunOptions.run) that this process ran already, or that is not a run tag: the second run's frame 0 and alert ids were the first's again, and the journal and consumers kept one", async () => {
    const out = join(dir, 'given.jsonl');
    const config = parseConfigText(`name: given\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: fast }]\nsinks:\n  jsonl: { path: ${out} }\n`, PipelineSchema, 'given.yaml', {});
    const run = `given${Date.now().toString(36)}`;
    await runPipeline(config, { detector, extend: crowdRule(1, 10), status: false, run });
    await expect(runPipeline(config, { detector, extend: crowdRule(1, 10), status: false, run })).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringContaining('RunOptions.run') });
    await expect(runPipeline(config, { detector, extend: crowdRule(1, 10), status: false, run: 'Cam:1' })).rejects.toMatchObject({ code: 'VAP_ERR_CONFIG', message: expect.stringContaining('RunOptions.run') });
    // One run's lines only: the refused ones started nothing.
    const alerts = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; run: string; alert?: { id: string } }).filter((m) => m.type === 'alert');
    expect(alerts.map((m) => m.alert!.id)).toEqual([`cam:crowd:${run}-0:r0`]);
  }, 60_000);

  it("the WebSocket hello says the run: a client that reconnects tells a restart (another run, seq from 0) from a reconnect to the same run (the hello had no run)", async () => {
    const config = parseConfigText(`name: hello\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: native, loop: true }]\nserver: { port: 0 }\n`, PipelineSchema, 'hello.yaml', {});
    /** One run: the hello of a client that connects once the run is up, then the run is stopped. */
    const helloOfRun = async () => {
      const ac = new AbortController();
      let done: Promise<unknown> | undefined;
      const running = await new Promise<RunningPipeline>((resolve, reject) => {
        done = runPipeline(config, { detector, status: false, signal: ac.signal, onReady: resolve });
        done.catch(reject);
      });
      const ws = new WebSocket(`${running.server!.url.replace('http', 'ws')}/ws`);
      const msgs: Record<string, unknown>[] = [];
      // The hello, then (subscribed to detections) a first detections message.
      await new Promise<void>((resolve, reject) => {
        ws.on('message', (d) => {
          const m = JSON.parse(d.toString()) as Record<string, unknown>;
          msgs.push(m);
          if (m.type === 'hello') ws.send(JSON.stringify({ type: 'subscribe', kinds: ['detections'] }));
          if (m.type === 'detections') resolve();
        });
        ws.once('error', reject);
      });
      ws.terminate();
      ac.abort();
      await done;
      return { hello: msgs[0], detections: msgs.find((m) => m.type === 'detections')!, run: running.publisher.run };
    };
    const first = await helloOfRun();
    const second = await helloOfRun();
    expect(first.hello).toMatchObject({ type: 'hello', version: 1, run: first.run, sources: ['cam'] });
    expect(second.hello).toMatchObject({ type: 'hello', run: second.run });
    expect(second.run).not.toBe(first.run);
    // The hello's run is the one the run's messages carry.
    expect(first.detections.run).toBe(first.run);
    expect(second.detections.run).toBe(second.run);
  }, 60_000);
});
