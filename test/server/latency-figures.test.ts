// End-to-end latency counts from `produced` (the source) and the pipeline part from `captured`,
// in every place that reports them: /metrics, the status line, the dashboard.
import { describe, expect, it } from 'vitest';
import { emptyStamps, PRODUCED_BY, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { Detections } from '../../src/core/detections.js';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { stamp } from '../../src/pipeline/stamp.js';
import { Metrics } from '../../src/server/metrics.js';
import { StatusReporter } from '../../src/sinks/status.js';
import { newSourceStats } from '../../src/sources/stats.js';
import { of, lastValueFrom } from 'rxjs';
import { CAMERA_BEHIND_MAX_MS } from '../../src/sources/rtsp-tap.js';
import { MAX_ARRIVAL_AGE_MS } from '../../src/sources/ffmpeg-source.js';

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/** A result whose frame was produced 60 ms before ffmpeg delivered it and emitted 20 ms after. */
function result(captured: number): FrameResult {
  const stamps = emptyStamps(captured, captured - 60);
  Object.assign(stamps, { preprocessed: captured + 2, inferStart: captured + 3, inferEnd: captured + 15, postprocessed: captured + 16 });
  const frame: Frame = { source: 'cam', seq: 0, pts: 0, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 416, 416), stamps, producedBy: 'arrival', release: () => {} };
  return { frame, detections: new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)), dropped: 0, alerts: [] };
}

/** Prometheus's histogram_quantile over one series' buckets in a scrape: linear within the bucket; in +Inf, the largest finite bound. */
function histogramQuantile(text: string, name: string, labels: string, q: number): number {
  const buckets = text
    .split('\n')
    .filter((l) => l.startsWith(`${name}_bucket{le=`) && l.includes(`",${labels}} `))
    .map((l) => ({ le: Number(/le="([^"]+)"/.exec(l)![1].replace('+Inf', 'Infinity')), n: Number(l.slice(l.lastIndexOf(' ') + 1)) }));
  const total = buckets[buckets.length - 1].n;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const b of buckets) {
    if (b.n >= rank) {
      if (b.le === Infinity) return buckets[buckets.length - 2].le;
      return lower + ((b.le - lower) * (rank - below)) / (b.n - below);
    }
    lower = b.le;
    below = b.n;
  }
  return NaN;
}

describe('latency figures', () => {
  it('stamp → stats, /metrics and the status line: e2e from produced, pipeline from captured, with the kind of stamp', async () => {
    const st = newSourceStats('cam');
    const r = result(Date.now() - 20);
    await lastValueFrom(of(r).pipe(stamp(st)));
    const emitted = r.frame.stamps.emitted;
    expect(st.e2e.percentile(50)).toBeCloseTo(emitted - r.frame.stamps.produced, 6);
    expect(st.pipeline.percentile(50)).toBeCloseTo(emitted - r.frame.stamps.captured, 6);
    expect(st.e2e.percentile(50) - st.pipeline.percentile(50)).toBeCloseTo(60, 6);
    expect(st.producedBy).toBe('arrival');

    const metrics = new Metrics({ stats: () => [st], provider: 'cpu' });
    metrics.onFrame(r);
    const text = await metrics.scrape();
    expect(sample(text, 'argus_frame_latency_seconds_sum{source="cam"}')).toBeCloseTo((emitted - r.frame.stamps.produced) / 1000, 6);
    expect(sample(text, 'argus_pipeline_latency_seconds_sum{source="cam"}')).toBeCloseTo((emitted - r.frame.stamps.captured) / 1000, 6);
    expect(sample(text, 'argus_stage_latency_seconds_sum{source="cam",stage="source"}')).toBeCloseTo(0.06, 6);

    // A source that leaves the pipeline (a worker's camera moved away) takes its series with it.
    const current = [st];
    const leaving = new Metrics({ stats: () => current, provider: 'cpu' });
    leaving.onFrame(r);
    expect(await leaving.scrape()).toContain('argus_frame_latency_seconds_count{source="cam"} 1');
    current.length = 0;
    const after = await leaving.scrape();
    expect(after).not.toContain('source="cam"');
    current.push(st);
    leaving.onFrame(r); // attached again: new series
    expect(await leaving.scrape()).toContain('argus_stage_latency_seconds_count{source="cam",stage="wait"} 1');

    const line = new StatusReporter([st]).lines()[0];
    expect(line).toMatch(/e2e p50 \d+\.\d ms +p99 \d+\.\d ms \(from arrival\) +pipeline p50 \d+\.\d ms/);
    const [e2e, pipe] = [/e2e p50 (\d+\.\d)/.exec(line)![1], /pipeline p50 (\d+\.\d)/.exec(line)![1]].map(Number);
    expect(e2e - pipe).toBeCloseTo(60, 0);
  });

  it("/metrics: the end-to-end histogram's help names every kind of produced stamp (it named due and arrival only, not an RTSP camera's clock)", async () => {
    const text = await new Metrics({ stats: () => [], provider: 'cpu' }).scrape();
    const help = text.split('\n').find((l) => l.startsWith('# HELP argus_frame_latency_seconds '))!;
    for (const by of PRODUCED_BY) expect(help, by).toContain(`${by} = `);
  });

  it("/metrics: a latency the stamps believe (a camera's time up to CAMERA_BEHIND_MAX_MS old, an arrival up to MAX_ARRIVAL_AGE_MS) is within the histogram's buckets, so its p99 is not capped", async () => {
    const st = newSourceStats('cam');
    for (const ageMs of [CAMERA_BEHIND_MAX_MS - 500, MAX_ARRIVAL_AGE_MS - 1000]) {
      const m = new Metrics({ stats: () => [st], provider: 'cpu' });
      const r = result(Date.now());
      r.frame.stamps.produced = r.frame.stamps.captured - ageMs;
      await lastValueFrom(of(r).pipe(stamp(st)));
      m.onFrame(r);
      const text = await m.scrape();
      const e2eS = (r.frame.stamps.emitted - r.frame.stamps.produced) / 1000;
      // Before: the largest bucket was 2.5 s, and a 9.5 s latency read as a p99 of 2.5 s.
      expect(histogramQuantile(text, 'argus_frame_latency_seconds', 'source="cam"', 0.99)).toBeGreaterThanOrEqual(e2eS);
      expect(histogramQuantile(text, 'argus_stage_latency_seconds', 'source="cam",stage="source"', 0.99)).toBeGreaterThanOrEqual(ageMs / 1000);
    }
  });

  it('/metrics: drops by reason and source, the JSON lines output\'s too (they were counted where nothing read them)', async () => {
    const st = newSourceStats('cam');
    st.dropped = 5;
    st.inferenceErrors = 2;
    const metrics = new Metrics({ stats: () => [st], provider: 'cpu', jsonl: { behind: new Map([['cam', 4]]) } });
    const text = await metrics.scrape();
    expect(sample(text, 'argus_frames_dropped_total{source="cam",reason="stale"}')).toBe(3);
    expect(sample(text, 'argus_frames_dropped_total{source="cam",reason="inference_error"}')).toBe(2);
    expect(sample(text, 'argus_frames_dropped_total{source="cam",reason="jsonl_behind"}')).toBe(4);
  });

  it('the dashboard: e2e from produced (captured for messages without it), pipeline from captured, and a source stage', async () => {
    // The browser's own modules (plain JS, no type declarations).
    const dash = '../../src/server/dashboard/js/';
    type Stamps = Record<string, number | undefined>;
    const { e2eOf, pipelineOf } = (await import(`${dash}numbers.js`)) as { e2eOf: (s: Stamps) => number; pipelineOf: (s: Stamps) => number };
    const { DEFAULT_STAGES, stageDurations } = (await import(`${dash}stages.js`)) as { DEFAULT_STAGES: string[]; stageDurations: (s: Stamps, names: string[]) => number[] };
    const s = { produced: 1000, captured: 1060, preprocessed: 1062, inferStart: 1063, inferEnd: 1075, postprocessed: 1076, emitted: 1078, published: 1080 };
    expect(e2eOf(s)).toBe(80);
    expect(pipelineOf(s)).toBe(20);
    expect(e2eOf({ ...s, produced: undefined })).toBe(20);
    expect(DEFAULT_STAGES[0]).toBe('source');
    expect(stageDurations(s, ['source', 'infer'])).toEqual([60, 12]);
    // A frame that waited 30 ms for its source's previous one: the wait is not pre-processing.
    expect(DEFAULT_STAGES.slice(0, 3)).toEqual(['source', 'wait', 'preprocess']);
    expect(stageDurations({ ...s, staged: 1090, preprocessed: 1092 }, ['wait', 'preprocess'])).toEqual([30, 2]);
    // A message without `staged` (an argus before it): no wait, pre-processing from captured.
    expect(stageDurations(s, ['wait', 'preprocess'])).toEqual([0, 2]);
  });
});
