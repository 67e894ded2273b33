/**
 * Zones and lines through a new track's earlier sightings (the tracker's, before it confirmed the
 * track): when what they show happened, passages among them, and one first seen inside. The real
 * tracker, virtual time.
 */
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer, type AlertDraft } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';

const LABELS = ['person', 'bicycle', 'car'];
const W = 640, H = 480;

// Zone z: x 320–384, y 300–400, a 10 px band; a door line from x 300 to 420 at y 240 ("in" is downwards).
const ZONE = { id: 'z', polygon: [[320, 300], [384, 300], [384, 400], [320, 400]], units: 'pixel', minHoldFrames: 3, marginPx: 10 };
const LINE = { id: 'door', from: [420, 240], to: [300, 240], units: 'pixel', marginPx: 10, anchor: 'bottom-center' };
const RULES = [
  { id: 'in', type: 'zone-enter', zone: 'z' },
  { id: 'out', type: 'zone-exit', zone: 'z' },
  { id: 'cross', type: 'line-cross', line: 'door', direction: 'any' },
];

type Seen = { event: string; t: number; atPts?: number; dwellMs?: number; message: string; direction?: unknown };

/**
 * A person 40 × 100 whose feet are at `feet[k]` at k × 100 ms (10 fps), scored `score(k)`, through
 * the real tracker and an analyzer with zone z, line door and `rules`. Returns its alerts and the analyzer.
 */
function walk(feet: readonly [number, number][], score: (k: number) => number, zone: Record<string, unknown> = {}, rules: unknown[] = RULES) {
  const tracker = new ByteTracker({ frameRateHint: 10 });
  const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ ...ZONE, ...zone }], lines: [LINE], rules }), LABELS, 'sources[0]');
  a.init(W, H);
  const alerts: Seen[] = [];
  const drafts: AlertDraft[] = [];
  feet.forEach(([fx, fy], k) => {
    const t = k * 100;
    const d = fx < 0 ? new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0)) : new Detections(Float32Array.of(fx - 20, fy - 100, fx + 20, fy), Float32Array.of(score(k)), Int32Array.of(0));
    for (const al of a.process(tracker.update(d, t), t).alerts) {
      drafts.push(al);
      alerts.push({ event: al.event as string, t, atPts: al.atPts as number | undefined, dwellMs: al.dwellMs as number | undefined, message: al.message as string, direction: al.direction });
    }
  });
  return { alerts, drafts, report: a.report() };
}

/** `n` feet positions in a straight line from p (included) on by `step` each. */
const run = (p: [number, number], step: [number, number], n: number): [number, number][] => Array.from({ length: n }, (_, k) => [p[0] + step[0] * k, p[1] + step[1] * k]);

describe('a line crossing among the earlier sightings says when it happened', () => {
  it('scored low until past the door line: counted on the confirming frame, with the time it crossed', () => {
    // Feet down x 350 from y 180, 15 px a frame: on the line (240) at 0.4 s; scored 0.35 until y 285
    // (0.7 s), 0.9 after: the track starts there and is confirmed at 0.9 s.
    const feet = run([350, 180], [0, 15], 14);
    const { alerts, report } = walk(feet, (k) => (feet[k][1] < 285 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.direction])).toEqual([['line.cross', 900, 'in']]);
    expect(alerts[0].atPts).toBeCloseTo(0.4, 1);
    expect(alerts[0].message).toBe('person #1 crossed line door (in) at 0.4 s (seen before its track was confirmed; raised on the frame that confirmed it)');
    expect(report.lines.door).toMatchObject({ in: 1, out: 0 });
  });

  it('through the door line and back before the track started: each crossing with its own time', () => {
    // Feet down x 330 from y 215 to 260, 15 px a frame (beyond the line's margin at 0 s and 0.3 s:
    // crossed at 0.167 s on the way between), back up to 200 (beyond it at 0.6 s: crossed at
    // 0.433 s), where they stay; scored 0.35 until 0.8 s, 0.9 after: confirmed above the line at 1.0 s.
    const feet: [number, number][] = [...run([330, 215], [0, 15], 4), ...run([330, 245], [0, -15], 4), ...run([330, 200], [0, 0], 5)];
    const { alerts, report } = walk(feet, (k) => (k < 8 ? 0.35 : 0.9), {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.direction])).toEqual([['line.cross', 1000, 'in'], ['line.cross', 1000, 'out']]);
    expect(alerts.map((x) => x.atPts)).toEqual([0.167, 0.433]);
    expect(report.lines.door).toMatchObject({ in: 1, out: 1 });
  });

  it('a crossing seen on its own frame has no atPts', () => {
    // Scored 0.9 all along from y 180, 15 px a frame: confirmed at 0.2 s above the line, across it at 0.5 s.
    const { alerts } = walk(run([350, 180], [0, 15], 10), () => 0.9, {}, [RULES[2]]);
    expect(alerts.map((x) => [x.event, x.t, x.atPts, x.message])).toEqual([['line.cross', 500, undefined, 'person #1 crossed line door (in)']]);
  });
});
