import { describe, expect, it, vi } from 'vitest';
import { ErrorCodes } from '../../src/core/errors.js';
import type { Transition } from '../../src/sources/health.js';
import { from, lastValueFrom, map } from 'rxjs';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { now } from '../../src/core/clock.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps, type ProducedBy } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { RunHistogram } from '../../src/core/stats.js';
import { stamp } from '../../src/pipeline/stamp.js';
import { StatusReporter } from '../../src/sinks/status.js';
import { FrameRates, newSourceStats, recordTransition, sourceSummary } from '../../src/sources/stats.js';

describe('recordTransition', () => {
  it('keeps the state and the latest change (reconnects are counted by the supervisor: onReconnect)', () => {
    const st = newSourceStats('cam');
    const t = (state: Transition['state'], previous: Transition['state'], code?: string): Transition => ({ source: 'cam', state, previous, reason: 'r', at: 0, attempt: 1, ...(code ? { code } : {}) });
    recordTransition(st, t('streaming', 'starting'));
    recordTransition(st, t('reconnecting', 'streaming', ErrorCodes.SOURCE_EXIT));
    recordTransition(st, t('reconnecting', 'reconnecting', ErrorCodes.SOURCE_RESIZED));
    recordTransition(st, t('reconnecting', 'reconnecting', ErrorCodes.SOURCE_EXIT));
    expect(st.reconnects).toBe(0);
    expect(st.state).toBe('reconnecting');
    expect(st.lastTransition?.code).toBe(ErrorCodes.SOURCE_EXIT);
  });
});

describe('FrameRates', () => {
  const at = (id: string, framesIn: number, framesOut: number) => Object.assign(newSourceStats(id), { framesIn, framesOut });

  it('frames a second in and out since the previous sample; a source\'s first sample reports 0', () => {
    const m = new FrameRates();
    expect(m.sample([at('a', 100, 90)], 0).get('a')).toEqual({ fpsIn: 0, fpsOut: 0 });
    expect(m.sample([at('a', 130, 110)], 1000).get('a')).toEqual({ fpsIn: 30, fpsOut: 20 });
    expect(m.sample([at('a', 145, 125)], 1500).get('a')).toEqual({ fpsIn: 30, fpsOut: 30 });
  });

  it('a source no longer listed is forgotten: added again under its id (its counters from 0), it starts from a new baseline, not a negative rate', () => {
    const m = new FrameRates();
    m.sample([at('a', 500, 500), at('b', 1, 1)], 0);
    m.sample([at('a', 530, 530), at('b', 2, 2)], 1000);
    m.sample([at('b', 3, 3)], 2000); // a removed (or moved to another worker)
    expect(m.sample([at('a', 10, 10), at('b', 4, 4)], 3000).get('a')).toEqual({ fpsIn: 0, fpsOut: 0 });
    expect(m.sample([at('a', 40, 35), at('b', 5, 5)], 4000).get('a')).toEqual({ fpsIn: 30, fpsOut: 25 });
  });
});

describe('what the latency figures are counted from (producedBy)', () => {
  /** A result produced `age` ms before now, its `produced` stamp of kind `by`. */
  const result = (by: ProducedBy): FrameResult => {
    const t = now();
    const frame = { source: 'cam', seq: 0, pts: 0, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 416, 416), stamps: emptyStamps(t, t - 40), producedBy: by, release: () => {} };
    return { frame, detections: new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)), dropped: 0, alerts: [] };
  };
  const fromOf = (st: ReturnType<typeof newSourceStats>) => /\(from ([^)]*)\)/.exec(new StatusReporter([st], { isTTY: false, write: () => true }).lines()[0])![1];

  it("the status line names the kinds its percentiles are over, not the latest frame's alone; the summary those of the run", async () => {
    const st = newSourceStats('cam');
    // A camera whose clock was believed for 1900 frames, then its frames stamped with their arrival (148).
    const kinds: ProducedBy[] = [...Array(1900).fill('camera'), ...Array(148).fill('arrival')];
    await lastValueFrom(from(kinds).pipe(map(result), stamp(st)));
    expect(st.producedBy).toBe('arrival'); // the latest frame's
    // Before: "(from arrival)" beside percentiles of which 93 % were counted from the camera's clock.
    expect(fromOf(st)).toBe('camera 93%, arrival 7%');
    // 2048 more arrival frames push every camera frame out of the status line's window (2048), not out of the run.
    await lastValueFrom(from(Array<ProducedBy>(2048).fill('arrival')).pipe(map(result), stamp(st)));
    expect(fromOf(st)).toBe('arrival');
    expect(sourceSummary(st).producedBy).toBe('arrival 54%, camera 46%');
    // One kind: named alone, as before.
    const one = newSourceStats('file');
    await lastValueFrom(from(Array<ProducedBy>(10).fill('due')).pipe(map(result), stamp(one)));
    expect(fromOf(one)).toBe('due');
    expect(sourceSummary(one).producedBy).toBe('due');
    // A share under 1 %.
    const rare = newSourceStats('rare');
    await lastValueFrom(from([...Array<ProducedBy>(999).fill('camera'), 'arrival' as ProducedBy]).pipe(map(result), stamp(rare)));
    expect(fromOf(rare)).toBe('camera >99%, arrival <1%');
  });
});

describe('the end-of-run summary of a source', () => {
  /** A result produced `age` ms and captured `age - 5` ms before now (stamp() makes it emitted now). */
  const result = (age: number): FrameResult => {
    const t = now();
    const frame = { source: 'cam', seq: 0, pts: 0, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 416, 416), stamps: emptyStamps(t - age + 5, t - age), producedBy: 'arrival' as const, release: () => {} };
    return { frame, detections: new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)), dropped: 0, alerts: [] };
  };

  it('latency percentiles over every frame of the run: a slow first part counts, after the status line has forgotten it', async () => {
    const st = newSourceStats('cam');
    // The clock stands still: every frame is emitted exactly `age` ms after it was produced.
    const clock = vi.spyOn(performance, 'now').mockReturnValue(1e6);
    // 1000 frames at 500 ms (an overloaded first part), then 2500 at 10 ms: more than the status line's window of 2048.
    const ages = [...Array(1000).fill(500), ...Array(2500).fill(10)];
    await lastValueFrom(from(ages).pipe(map(result), stamp(st))).finally(() => clock.mockRestore());
    expect(st.framesOut).toBe(3500);
    expect(st.e2e.percentile(99)).toBe(10); // the window: only the latest 2048 frames
    const sum = sourceSummary(st);
    // Before, the summary read the window: p99 10 ms for a run whose slowest 28 % took half a second.
    expect(sum.e2eP99 as number).toBeGreaterThan(490);
    expect(sum.e2eP99 as number).toBeLessThan(515);
    expect(sum.pipelineP99 as number).toBeGreaterThan(490);
    expect(sum.e2eP50 as number).toBeGreaterThan(9.9);
    expect(sum.e2eP50 as number).toBeLessThan(10.1);
    expect(sum).toMatchObject({ source: 'cam', framesOut: 3500, producedBy: 'arrival' });
    expect(sourceSummary(newSourceStats('idle')).e2eP50).toBeNaN(); // no frame: null in the JSON line
  });

  it('RunHistogram: nearest-rank percentiles within 1 % of the samples, in bounded buckets', () => {
    const h = new RunHistogram();
    const v: number[] = [];
    for (let i = 1; i <= 100_000; i++) v.push(0.5 + ((i * 7919) % 100_000) / 100); // 0.5 … 1000.5 ms
    for (const x of v) h.add(x);
    v.sort((a, b) => a - b);
    for (const p of [1, 50, 90, 99, 99.9]) {
      const exact = v[Math.ceil((p / 100) * v.length) - 1];
      expect(Math.abs(h.percentile(p) / exact - 1)).toBeLessThan(0.01);
    }
    expect(h.count).toBe(100_000);
    expect(new RunHistogram().percentile(50)).toBeNaN();
  });

  it('RunHistogram: a sample that is not a number is left out (it made a bucket no sort could place)', () => {
    const h = new RunHistogram();
    for (let i = 0; i < 10; i++) h.add(10);
    h.add(NaN);
    for (let i = 0; i < 10; i++) h.add(100);
    expect(h.count).toBe(20);
    expect(Math.abs(h.percentile(50) / 10 - 1)).toBeLessThan(0.01);
    expect(Math.abs(h.percentile(99) / 100 - 1)).toBeLessThan(0.01);
  });
});
