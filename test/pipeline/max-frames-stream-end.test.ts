/**
 * `--max-frames N` (RunOptions.maxFrames) counts frames: the result a source's stream's end adds
 * for its settled alerts (analyze: `streamEnd`, no frame) is published, not counted as one of the
 * N. Before, a run of two files whose shorter one ended with such an alert stopped at N − 1 frames.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { filter } from 'rxjs';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { LineCounter, type LineEvent } from '../../src/analytics/line.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { deliveryExitText } from '../../src/pipeline/exit-text.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { fakeDetector } from '../helpers/fake-session.js';

describe('--max-frames and the end of a stream', () => {
  let fake: Detector;
  let dir: string;
  beforeAll(async () => {
    ({ detector: fake } = await fakeDetector());
    dir = mkdtempSync(join(tmpdir(), 'argus-max-frames-end-'));
    const clip = (name: string, frames: number, rate = 10) => execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=64x64:rate=${rate}`, '-frames:v', String(frames), '-pix_fmt', 'yuv420p', join(dir, name)]);
    clip('short.mp4', 10);
    clip('long.mp4', 200);
    clip('slow.mp4', 100, 4);
  }, 60_000);
  afterAll(() => fake?.release());

  it("counts frames only: the shorter file's end's alert is published and the run still gets its N frames", async () => {
    // The settling's alert, whatever the fake model sees (of the short file only).
    const finish = SourceAnalyzer.prototype.finish;
    const spy = vi.spyOn(SourceAnalyzer.prototype, 'finish').mockImplementation(function (this: SourceAnalyzer, carried?: boolean) {
      const end = finish.call(this, carried);
      return end && this.source.id === 'short' ? { ...end, alerts: [{ rule: 'in', severity: 'critical', event: 'line.cross', message: 'settled', trackId: 7, line: 'door', direction: 'in', row: -1 }] } : end;
    });
    try {
      const source = (id: string, rate: string) => `{ id: ${id}, uri: ${join(dir, `${id}.mp4`)}, rate: ${rate}, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }`;
      const out = join(dir, 'out.jsonl');
      // The other file at its own rate, 4 frames a second: its 50th frame, the run's 60th, comes
      // 12.5 s on, long after the short one's end (read as fast as possible, both files' frames
      // could reach 60 before that end, on a busy machine: the end's result then cut off).
      const config = parseConfigText(`name: maxend\nsources: [${source('short', 'fast')}, ${source('slow', 'native')}]\nsinks: { jsonl: { path: ${out} } }\n`, PipelineSchema, 'maxend.yaml', {});
      const summary = await runPipeline(config, { detector: fake, status: false, maxFrames: 60 });
      const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; source: string });
      // The short file's 10 frames and its end's alert went through before the 60th frame.
      expect(lines.filter((m) => m.type === 'alert').map((m) => m.source)).toEqual(['short']);
      expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
      // Before: 59 (the end's result took one of the 60).
      expect(summary.frames).toBe(60);
      expect(lines.filter((m) => m.type === 'detections')).toHaveLength(60);
    } finally {
      spy.mockRestore();
    }
  }, 2 * 60_000);

  it('a chain --max-frames cuts off while its line has a crossing pending: the alert its settling raises still reaches the sinks (handed over), not counted lost', async () => {
    // The long file's line has a crossing pending when the run's 30th frame cuts its chain
    // (unsubscribed: no result can carry the alert), whatever the fake model sees.
    const flush = LineCounter.prototype.flush;
    const spy = vi.spyOn(LineCounter.prototype, 'flush').mockImplementation(function (this: LineCounter, events: LineEvent[] = []) {
      flush.call(this, events);
      events.push({ line: 'door', direction: 'in', trackId: 7, classId: 0, row: -1 });
      return events;
    });
    const warned: string[] = [];
    try {
      const config = parseConfigText(
        `name: maxcut\nsources: [{ id: long, uri: ${join(dir, 'long.mp4')}, rate: fast, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }]\nsinks: { jsonl: { path: ${join(dir, 'cut.jsonl')} } }\n`,
        PipelineSchema,
        'maxcut.yaml',
        {},
      );
      const summary = await runPipeline(config, { detector: fake, status: false, maxFrames: 30, log: (m) => void warned.push(m) });
      expect(summary.frames).toBe(30);
      const lines = readFileSync(join(dir, 'cut.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; seq: number; alert?: { id: string; rule: string; trackId: number; snapshotOmitted?: { reason: string } } });
      const sent = lines.filter((m) => m.type === 'alert');
      const lastSeq = Math.max(...lines.filter((m) => m.type === 'detections').map((m) => m.seq));
      // An alert as the chain would have published it: the last frame analysed's seq (its id's),
      // no frame to show it. Before: none (counted lost: exit status 3, though the sinks were open).
      expect(sent).toHaveLength(1);
      expect(sent[0].alert).toMatchObject({ rule: 'in', trackId: 7, snapshotOmitted: { reason: 'no-frame' } });
      expect(sent[0].seq).toBe(lastSeq);
      expect(sent[0].alert!.id).toMatch(new RegExp(`^long:in:[0-9a-z]+-${lastSeq}:7$`));
      expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
      expect(summary.analytics.long.alerts).toEqual({ in: 1 });
      expect(summary.lostAlerts).toBe(0);
      expect(deliveryExitText(summary)).toEqual({ lines: [], status: undefined });
      expect(warned.some((m) => /not published/.test(m))).toBe(false);
    } finally {
      spy.mockRestore();
    }
  }, 2 * 60_000);

  it("an attached source's chain (argus worker) cut off with a crossing pending: its alert reaches the sinks too, nothing counted lost once its analyzer left pipeline.analyzers", async () => {
    const flush = LineCounter.prototype.flush;
    const spy = vi.spyOn(LineCounter.prototype, 'flush').mockImplementation(function (this: LineCounter, events: LineEvent[] = []) {
      flush.call(this, events);
      events.push({ line: 'door', direction: 'in', trackId: 7, classId: 0, row: -1 });
      return events;
    });
    try {
      // A worker's pipeline: no sources of its own (its cameras are attached).
      const config = { ...parseConfigText(`name: attcut\nsources: [{ id: off, uri: ${join(dir, 'short.mp4')} }]\nsinks: { jsonl: { path: ${join(dir, 'att.jsonl')} } }\n`, PipelineSchema, 'attcut.yaml', {}), sources: [] };
      const camera = parseConfigText(
        `name: cam\nsources: [{ id: cam, uri: ${join(dir, 'long.mp4')}, rate: fast, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }]\n`,
        PipelineSchema,
        'cam.yaml',
        {},
      ).sources[0];
      let listed: ReadonlyMap<string, unknown> | undefined;
      const summary = await runPipeline(config, {
        detector: fake,
        status: false,
        maxFrames: 30,
        attached: (pipeline, stop) => ((listed = pipeline.analyzers), pipeline.attach(camera, stop)),
        log: () => {},
      });
      expect(summary.frames).toBe(30);
      // The camera's chain ended (cut off by the 30th frame): its analyzer is no longer listed…
      expect(listed?.size).toBe(0);
      // …and what its chain could not carry was handed over. Before: counted lost (exit status 3).
      const sent = readFileSync(join(dir, 'att.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; source: string });
      expect(sent.filter((m) => m.type === 'alert').map((m) => m.source)).toEqual(['cam']);
      expect(summary.alerts).toMatchObject({ raised: 1, published: 1 });
      expect(summary.lostAlerts).toBe(0);
      expect(deliveryExitText(summary).status).toBeUndefined();
    } finally {
      spy.mockRestore();
    }
  }, 2 * 60_000);
  it("an attached chain's fence (attach's: an argus worker's filter before the sinks) is asked before its cut-off end's result is handed over: one it drops is not published, nor counted lost", async () => {
    const flush = LineCounter.prototype.flush;
    const spy = vi.spyOn(LineCounter.prototype, 'flush').mockImplementation(function (this: LineCounter, events: LineEvent[] = []) {
      flush.call(this, events);
      events.push({ line: 'door', direction: 'in', trackId: 7, classId: 0, row: -1 });
      return events;
    });
    try {
      const config = { ...parseConfigText(`name: attfence\nsources: [{ id: off, uri: ${join(dir, 'short.mp4')} }]\nsinks: { jsonl: { path: ${join(dir, 'fence.jsonl')} } }\n`, PipelineSchema, 'attfence.yaml', {}), sources: [] };
      const camera = parseConfigText(
        `name: cam\nsources: [{ id: cam, uri: ${join(dir, 'long.mp4')}, rate: fast, lines: [{ id: door, units: fraction, from: [1, 0.5], to: [0, 0.5] }], rules: [{ id: in, type: line-cross, line: door }] }]\n`,
        PipelineSchema,
        'cam.yaml',
        {},
      ).sources[0];
      // The camera moved away (fenced) and, as a worker's filter does for a chain that never held its
      // claim, the fence drops what it is asked: the hand-over of the chain's end's result included.
      const asked: { seq: number; streamEnd: boolean; emitted: number }[] = [];
      const fence = (r: FrameResult) => (asked.push({ seq: r.frame.seq, streamEnd: r.streamEnd === true, emitted: r.frame.stamps.emitted }), !r.streamEnd);
      const summary = await runPipeline(config, { detector: fake, status: false, maxFrames: 30, attached: (pipeline, stop) => pipeline.attach(camera, stop, undefined, fence).pipe(filter(fence)), log: () => {} });
      expect(summary.frames).toBe(30);
      // Asked of the hand-over too, stamped as the chain's own results are. Before: not asked, the alert published past it.
      const end = asked.filter((a) => a.streamEnd);
      expect(end).toHaveLength(1);
      expect(end[0].emitted).toBeGreaterThan(0);
      const sent = readFileSync(join(dir, 'fence.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string });
      expect(sent.filter((m) => m.type === 'alert')).toEqual([]);
      expect(summary.alerts).toMatchObject({ raised: 0, published: 0 });
      // Dropped as the fence drops the chain's own results: not an alert the run lost.
      expect(summary.lostAlerts).toBe(0);
    } finally {
      spy.mockRestore();
    }
  }, 2 * 60_000);
});
