/**
 * The result a stream's end adds for its settled alerts (analyze: `streamEnd`, no frame, empty
 * `frame.data`) reaches the user's operators only where the extension asks for it
 * (Extension.streamEnd); otherwise it passes around them, after their last result. Before, an
 * extension that read the pixels of every result (as an extension written before stream ends
 * carried alerts would) threw on it: the source failed at a clean file end (exit 1).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { concatMap, merge, NEVER, of, tap } from 'rxjs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { deliveryExitText } from '../../src/pipeline/exit-text.js';
import type { Extension } from '../../src/pipeline/pipeline.js';
import { runPipeline, type RunOptions } from '../../src/pipeline/run.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector, type FakeSession } from '../helpers/fake-session.js';

describe("the user's operators and a stream's end's result", () => {
  let fake: Detector;
  let session: FakeSession;
  let dir: string;
  const restore: (() => void)[] = [];
  beforeAll(async () => {
    ({ detector: fake, session } = await fakeDetector());
    dir = mkdtempSync(join(tmpdir(), 'argus-ext-end-'));
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '10', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
    // The file's end settles a crossing, whatever the fake model sees.
    const finish = SourceAnalyzer.prototype.finish;
    const spy = vi.spyOn(SourceAnalyzer.prototype, 'finish').mockImplementation(function (this: SourceAnalyzer, carried?: boolean) {
      const end = finish.call(this, carried);
      return end ? { ...end, alerts: [{ rule: 'in', severity: 'critical', event: 'line.cross', message: 'settled', trackId: 7, line: 'door', direction: 'in', row: -1 }] } : end;
    });
    restore.push(() => spy.mockRestore());
  }, 60_000);
  afterAll(() => {
    for (const r of restore) r();
    return fake?.release();
  });

  const run = async (name: string, extend: Extension, more: Partial<RunOptions> = {}) => {
    const out = join(dir, `${name}.jsonl`);
    const config = parseConfigText(
      `name: ${name}\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: fast, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }]\nsinks: { jsonl: { path: ${out} } }\n`,
      PipelineSchema,
      `${name}.yaml`,
      {},
    );
    const summary = await runPipeline(config, { detector: fake, status: false, extend, ...more });
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; alert?: { rule: string; message: string; snapshotOmitted?: { reason: string } } });
    return { summary, alerts: lines.filter((m) => m.type === 'alert') };
  };

  it('an extension that reads every result\'s pixels does not get it: the file ends cleanly, the end\'s alert is published', async () => {
    const seen: FrameResult[] = [];
    // Reads the pixels of each result, as a user's operator may (sharp throws on an empty buffer).
    const brightness: Extension = () =>
      tap((r) => {
        const { srcWidth: width, srcHeight: height } = r.frame.letterbox;
        void sharp(r.frame.data, { raw: { width, height, channels: 3 } });
        seen.push(r);
      });
    const { summary, alerts } = await run('pixels', brightness);
    // Before: failed [{ source: cam, error: Input Buffer is empty }] (exit 1), and the alert lost.
    expect(summary.failed).toEqual([]);
    expect(summary.frames).toBe(10);
    expect(seen.some((r) => r.streamEnd)).toBe(false);
    expect(alerts.map((m) => m.alert?.rule)).toEqual(['in']);
    expect(alerts[0].alert?.snapshotOmitted?.reason).toBe('no-frame');
    expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
    expect(summary.lostAlerts).toBe(0);
  }, 2 * 60_000);

  it('an extension that asks for it (streamEnd) gets it, last, and may change its alerts', async () => {
    const seen: boolean[] = [];
    const tag: Extension = Object.assign(
      () =>
        tap((r: FrameResult) => {
          seen.push(r.streamEnd === true);
          for (const a of r.alerts) a.message = `${a.message} (tagged)`;
        }),
      { streamEnd: true },
    );
    const { summary, alerts } = await run('optin', tag);
    expect(seen).toEqual([...Array<boolean>(10).fill(false), true]);
    expect(summary.failed).toEqual([]);
    expect(alerts).toHaveLength(1);
    expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
  }, 2 * 60_000);

  it.each([
    ['held around operators that never end', Object.assign((() => (o) => merge(o, NEVER)) as Extension, {})],
    // (Changing its alert as they hold it: it goes out as it came.)
    ['inside operators that asked for it and hold it', Object.assign((() => concatMap((r: FrameResult) => (r.streamEnd ? ((r.alerts[0].message += ' (changed)'), NEVER) : of(r)))) as Extension, { streamEnd: true })],
  ])("a run cut off by the stop's drain timeout while the end's result is %s: its alert is handed over to the sinks as it came, not counted lost", async (_, extend) => {
    const stopping = new AbortController();
    const warned: string[] = [];
    let frames = 0;
    const { summary, alerts } = await run(`cut${extend.streamEnd ? 'in' : 'around'}`, extend, {
      signal: stopping.signal,
      drainTimeoutMs: 300,
      // The file's last frame is out: stop (its end's result then waits in or around the operators).
      onResult: () => void (++frames === 10 && stopping.abort()),
      log: (m) => void warned.push(m),
    });
    expect(frames).toBe(10);
    expect(warned).toContain('stop: frames still in flight after 300 ms; cutting them off');
    // Before: none published, counted lost (exit status 3), though the sinks and outbox were open.
    expect(alerts.map((m) => [m.alert?.rule, m.alert?.message, m.alert?.snapshotOmitted?.reason])).toEqual([['in', 'settled', 'no-frame']]);
    expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
    expect(summary.lostAlerts).toBe(0);
    // Nothing to say at the exit, exit status 0.
    expect(deliveryExitText(summary)).toEqual({ lines: [], status: undefined });
    expect(warned.some((m) => /not published/.test(m))).toBe(false);
  }, 2 * 60_000);

  it('an extension that asks for it and throws on it: the source fails (its error logged), the alert still goes out as it came', async () => {
    const strict: Extension = Object.assign(
      () =>
        tap((r: FrameResult) => {
          if (r.frame.data.length === 0) throw new Error('no pixels');
        }),
      { streamEnd: true },
    );
    const { summary, alerts } = await run('strict', strict);
    expect(summary.failed.map((f) => [f.source, f.error.message])).toEqual([['cam', 'no pixels']]);
    // Before: lost with the error (raised 0), and not counted lost.
    expect(alerts.map((m) => m.alert?.rule)).toEqual(['in']);
    expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
    expect(summary.lostAlerts).toBe(0);
  }, 2 * 60_000);

  it("a run cut off by the stop's drain timeout while a frame is still in inference (no extension holds anything): the end's alert is handed over to the sinks, not counted lost", async () => {
    const stopping = new AbortController();
    const warned: string[] = [];
    const none: Extension = () => (o) => o;
    // From the third frame on, inference runs never end (a wedged model): once one is held, stop.
    let frames = 0;
    const watch = setInterval(() => {
      if (session.held.length > 0 && !stopping.signal.aborted) stopping.abort();
    }, 10);
    try {
      const { summary, alerts } = await run('cutinfer', none, {
        signal: stopping.signal,
        drainTimeoutMs: 300,
        onResult: () => void (++frames === 2 && (session.hold = true)),
        log: (m) => void warned.push(m),
      });
      // Cut off (the held run never ends): the chain was unsubscribed, not completed.
      expect(warned).toContain('stop: frames still in flight after 300 ms; cutting them off');
      expect(frames).toBeLessThan(10);
      // Before: none published, counted lost (exit status 3).
      expect(alerts.map((m) => [m.alert?.rule, m.alert?.snapshotOmitted?.reason])).toEqual([['in', 'no-frame']]);
      expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
      expect(summary.lostAlerts).toBe(0);
      expect(deliveryExitText(summary)).toEqual({ lines: [], status: undefined });
    } finally {
      clearInterval(watch);
      session.hold = false;
      for (const h of session.held.splice(0)) h.resolve();
    }
  }, 2 * 60_000);
});
