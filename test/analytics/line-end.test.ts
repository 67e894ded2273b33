/**
 * The end of a source's stream at a door line (LineCounter.flush, SourceAnalyzer.finish, the
 * analyze operator's completion): a crossing still pending or owed when a file ends is counted.
 */
import { from, lastValueFrom, Subject, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { analyze, type FrameResult } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { feed, type SceneObject } from '../tracking/helpers.js';
import { cross, walker } from './door-line.js';

// A walks down and is lost at 0.8 s (feet 240); B, its size, is found standing past the line (feet 350)
// from 2.3 s: taken for A, its crossing pending until B has stood there a second (HANDOVER_SETTLE_MS).
const handedOver = (until?: number): SceneObject[] => [walker({ until: 0.8 }), { key: 'b', box: [300, 190, 360, 350], from: 2.3, ...(until ? { until } : {}) }];
// …or found at feet 313 from 2.3 s, back in the band (305) from 2.6 s: settled at 3.3 s, its crossing owed
// until B leaves the band past the line.
const owed: SceneObject[] = [walker({ until: 0.8 }), { key: 'b', box: [300, 153, 360, 313], from: 2.3, until: 2.6 }, { key: 'b', box: [300, 145, 360, 305], from: 2.6 }];

describe('the end of the stream', () => {
  it('a hand-over pending, owed, or on a new id gone within forgetAfterMs of the end: counted once by flush', () => {
    // Ends at 3.0 s (B seen, pending), at 4.0 s with B gone at 2.8 s (not yet forgotten), or at 4.0 s with B owed.
    for (const [secs, until] of [[3.0, undefined], [4.0, 2.8], [4.0, 'owed']] as const) {
      const { events, l } = cross(until === 'owed' ? owed : handedOver(until), secs);
      expect(events, `${secs} s, until ${until}`).toEqual([]);
      const end = l.flush();
      expect(end.map((e) => [e.direction, e.trackId, e.previousTrackId, e.row]), `${secs} s, until ${until}`).toEqual([['in', 2, 1, -1]]);
      expect([l.stats.in, l.stats.out]).toEqual([1, 0]);
      // Once: a second end settles nothing more.
      expect(l.flush()).toEqual([]);
      expect(l.stats.in).toBe(1);
    }
  });

  it('a track that walked through and on, or one standing before the line: nothing more at the end', () => {
    const { events, l } = cross([walker(), { key: 'b', box: [400, 90, 460, 250] }], 3);
    expect(events.map((e) => e.direction)).toEqual(['in']);
    expect(l.flush()).toEqual([]);
    expect([l.stats.in, l.stats.out]).toEqual([1, 0]);
  });

  it('a file that ends right after: counted in the run\'s figures once the analyze operator completes', async () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'in' }] });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    const tracker = new ByteTracker({ frameRateHint: 10 });
    const lb = letterbox(640, 480, 640, 480, 'top-left');
    const frames: DetectedFrame[] = feed(10, 3.0, { objects: handedOver(), jitter: 1, seed: 3 }).map((f) => ({
      frame: { source: 'cam', seq: Math.round(f.timestampMs / 100), pts: f.timestampMs / 1000, data: Buffer.alloc(0), letterbox: lb, stamps: emptyStamps(1), producedBy: 'captured', release: () => {} },
      detections: tracker.update(f.detections, f.timestampMs),
    }));
    const out = await lastValueFrom(from(frames).pipe(analyze(a), toArray()));
    // The frames raised nothing; the end's settling raised the crossing's alert, carried by one
    // more result (alerts only, the last frame's seq and pts, no pixels), before the stream's end.
    // Before, it was only logged (no result carried it: never published).
    expect(out.slice(0, -1).flatMap((r) => r.alerts)).toEqual([]);
    expect(out).toHaveLength(frames.length + 1);
    const end = out[out.length - 1];
    expect(end).toMatchObject({ alertsOnly: true, streamEnd: true, dropped: 0 });
    expect(end.detections.length).toBe(0);
    expect(end.frame).toMatchObject({ source: 'cam', seq: frames[frames.length - 1].frame.seq, pts: frames[frames.length - 1].frame.pts });
    expect(end.frame.data.length).toBe(0);
    expect(end.alerts.map((x) => [x.rule, x.direction, x.trackId, x.row])).toEqual([['in', 'in', 2, -1]]);
    expect(end.analytics?.lines?.door).toEqual({ in: { person: 1 }, out: {} });
    // Counted in the rule's alerts, as it is published.
    expect(a.report().alerts).toEqual({ in: 1 });
    // Before: 0 (the crossing waited on frames that never came).
    expect(a.report().lines.door).toMatchObject({ in: 1, out: 0 });
    // The analyzer's state is settled: nothing more to finish.
    expect(a.finish()?.alerts).toEqual([]);
    // A source detached (its chain unsubscribed, not completed): the same.
    const b = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    const frames$ = new Subject<DetectedFrame>();
    const sub = frames$.pipe(analyze(b)).subscribe();
    for (const f of frames) frames$.next(f);
    expect(b.report().lines.door).toMatchObject({ in: 0, out: 0 });
    sub.unsubscribe();
    expect(b.report().lines.door).toMatchObject({ in: 1, out: 0 });
    // Nothing carried it: not counted as published (logged by finish instead).
    expect(b.report().alerts).toEqual({ in: 0 });
    // A stream that failed: the alert goes out before the error.
    const c = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    const failing$ = new Subject<DetectedFrame>();
    const seen: FrameResult[] = [];
    const failed = new Promise<string>((resolve) => failing$.pipe(analyze(c)).subscribe({ next: (r) => seen.push(r), error: (e: Error) => resolve(e.message) }));
    for (const f of frames) failing$.next(f);
    failing$.error(new Error('camera gone'));
    expect(await failed).toBe('camera gone');
    expect(seen).toHaveLength(frames.length + 1);
    expect(seen[frames.length]).toMatchObject({ streamEnd: true, alerts: [{ rule: 'in', trackId: 2 }] });
  });

  it('finish drafts the line-cross alert of what it settles, dated when the crossing was made', () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'any' }] });
    const warned: string[] = [];
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]', (m) => warned.push(m));
    expect(a.finish()).toBeUndefined();
    a.init(640, 480);
    const tracker = new ByteTracker({ frameRateHint: 10 });
    for (const f of feed(10, 3.0, { objects: handedOver(), jitter: 1, seed: 3 })) expect(a.process(tracker.update(f.detections, f.timestampMs), f.timestampMs).alerts).toEqual([]);
    const end = a.finish()!;
    expect(end.alerts.map((x) => [x.rule, x.direction, x.trackId, x.row])).toEqual([['in', 'in', 2, -1]]);
    expect(end.alerts[0].atPts).toBeGreaterThan(1.5);
    expect(end.alerts[0].atPts).toBeLessThan(1.7);
    expect(end.summary.lines?.door).toEqual({ in: { person: 1 }, out: {} });
    // Not published (no frame to carry it): said in the log, with what it would have said, not lost unsaid.
    // Before, nothing told of it; and its message said a frame carried it.
    expect(end.alerts[0].message).toMatch(/raised once #2 was gone: at the end of the stream\)$/);
    expect(warned).toEqual([`source cam: alert of rule in (info) not published: ${end.alerts[0].message}; no frame follows the end of the stream to carry it (nor is it counted in the rule's alerts; counted lost)`]);
    expect(a.report().alerts).toEqual({ in: 0 });
    // Counted lost (the run's lostAlerts: exit status 3), not only logged.
    expect(a.uncarried).toBe(1);
  });

  it("uncarry: an end's alert counted carried whose result was then cut off moves from the rule's alerts to uncarried, said in the log", () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'any' }] });
    const warned: string[] = [];
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]', (m) => warned.push(m));
    a.init(640, 480);
    const tracker = new ByteTracker({ frameRateHint: 10 });
    for (const f of feed(10, 3.0, { objects: handedOver(), jitter: 1, seed: 3 })) a.process(tracker.update(f.detections, f.timestampMs), f.timestampMs);
    const end = a.finish(true)!;
    expect(end.alerts).toHaveLength(1);
    expect(a.report().alerts).toEqual({ in: 1 });
    expect(a.uncarried).toBe(0);
    a.uncarry(end.alerts);
    expect(a.report().alerts).toEqual({ in: 0 });
    expect(a.uncarried).toBe(1);
    expect(warned).toEqual([`source cam: alert of rule in (info) not published: ${end.alerts[0].message}; the chain was cut off while the result of the end of the stream that carried it was still in the user's operators (nor is it counted in the rule's alerts; counted lost)`]);
    // The crossing itself stays counted (it happened).
    expect(a.report().lines.door).toMatchObject({ in: 1, out: 0 });
  });

  it('an analyzer that saw no frame finishes with nothing', () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300] }] });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    a.init(640, 480);
    expect(a.finish()).toBeUndefined();
    expect(a.report().lines.door).toMatchObject({ in: 0, out: 0 });
  });
});

describe('the end of a stream that failed', () => {
  it('reports the stream\'s own error, the analyzer settled', async () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 300], to: [0, 300] }] });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    let finished = 0;
    a.finish = () => {
      finished++;
      throw new Error('settling failed');
    };
    const lb = letterbox(640, 480, 640, 480, 'top-left');
    const frames$ = new Subject<DetectedFrame>();
    const ended = lastValueFrom(frames$.pipe(analyze(a))).catch((e: Error) => e.message);
    frames$.next({ frame: { source: 'cam', seq: 0, pts: 0, data: Buffer.alloc(0), letterbox: lb, stamps: emptyStamps(1), producedBy: 'captured', release: () => {} }, detections: new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0), new Int32Array(0)) });
    frames$.error(new Error('camera gone'));
    expect(await ended).toBe('camera gone');
    expect(finished).toBe(1);
  });
});
