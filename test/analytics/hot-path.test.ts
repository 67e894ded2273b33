/**
 * Zones, lines and line-cross rules on frames where nothing happens: no Map entry made per track
 * (an array each, which the collector then has to take: a Map's entries are not optimised away as
 * its keys and values are). Counted by wrapping Map's entry iteration while the frames run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { LineCounter } from '../../src/analytics/line.js';
import { PolygonZone, ZoneMonitor } from '../../src/analytics/zone.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';

// Ten people standing, 60 px apart, feet at 200, 300 and 400 px (before, on and past a line at 250).
const n = 10;
const xyxy = new Float32Array(n * 4);
for (let k = 0; k < n; k++) xyxy.set([20 + k * 60, 40 + (k % 3) * 100, 60 + k * 60, 200 + (k % 3) * 100], k * 4);
const frame = () => new Detections(xyxy, new Float32Array(n).fill(0.9), new Int32Array(n), Int32Array.from({ length: n }, (_, k) => k + 1));

const entries = Map.prototype.entries;
const iterator = Map.prototype[Symbol.iterator];
let calls = 0;
/** Runs `f` counting the Map entry iterations it starts (those called from function `from` only, if given). */
function counted(f: () => void, from?: string): number {
  calls = 0;
  Map.prototype.entries = function (this: Map<unknown, unknown>) {
    if (from === undefined || new Error().stack?.includes(`.${from} (`)) calls++;
    return entries.call(this);
  } as typeof entries;
  Map.prototype[Symbol.iterator] = Map.prototype.entries;
  try {
    f();
  } finally {
    Map.prototype.entries = entries;
    Map.prototype[Symbol.iterator] = iterator;
  }
  return calls;
}
afterEach(() => {
  Map.prototype.entries = entries;
  Map.prototype[Symbol.iterator] = iterator;
});

describe('frames where nothing happens', () => {
  it('a line and a zone walk their tracks by key: no entry made per frame', () => {
    const l = new LineCounter('door', [640, 250], [0, 250], { marginPx: 10, anchor: 'bottom-center', forgetAfterMs: 2000 }, undefined, { width: 640, height: 480 });
    const z = new ZoneMonitor(new PolygonZone('z', [[0, 240], [640, 240], [640, 480], [0, 480]], undefined), { minHoldFrames: 3, exitDelayMs: 2000 });
    const d = frame();
    for (let k = 0; k < 10; k++) {
      l.update(d, k * 100, []);
      z.update(d, k * 100, k * 100, []);
    }
    expect(counted(() => {
      for (let k = 10; k < 20; k++) {
        expect(l.update(d, k * 100, [])).toEqual([]);
        expect(z.update(d, k * 100, k * 100, [])).toEqual([]);
      }
    })).toBe(0);
  });

  it('…nor a line-cross rule (its latches on tracks that crossed; the summary the frame returns aside)', () => {
    const cfg = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'door', units: 'pixel', from: [640, 250], to: [0, 250], anchor: 'bottom-center' }], rules: [{ id: 'in', type: 'line-cross', line: 'door', direction: 'any' }] });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    a.init(640, 480);
    // Three of them walk across first (the rule latches them), then all stand.
    const walking = Float32Array.from(xyxy);
    for (let k = 0; k < 6; k++) {
      for (const r of [0, 3, 6]) {
        walking[r * 4 + 1] = 40 + 20 * k;
        walking[r * 4 + 3] = 200 + 20 * k;
      }
      a.process(new Detections(walking, new Float32Array(n).fill(0.9), new Int32Array(n), Int32Array.from({ length: n }, (_, k) => k + 1)), k * 100);
    }
    const d = new Detections(walking, new Float32Array(n).fill(0.9), new Int32Array(n), Int32Array.from({ length: n }, (_, k) => k + 1));
    for (let k = 6; k < 10; k++) a.process(d, k * 100);
    expect(counted(() => {
      for (let k = 10; k < 20; k++) expect(a.process(d, k * 100).alerts).toEqual([]);
    }, 'crossLatch')).toBe(0);
  });

  it('the summary a frame returns is built only when its figures change: the same object while nothing happens, equal to one built afresh', () => {
    const cfg = SourceSchema.parse({
      id: 'cam',
      uri: '/x.mp4',
      zones: [{ id: 'z', units: 'pixel', polygon: [[0, 240], [640, 240], [640, 480], [0, 480]], minHoldFrames: 1 }],
      lines: [{ id: 'door', units: 'pixel', from: [640, 250], to: [0, 250], anchor: 'bottom-center' }],
      rules: [{ id: 'belt', type: 'conveyor-rate', line: 'door', minPerMinute: 1, forSec: 60, windowSec: 120 }],
    });
    const a = new SourceAnalyzer(cfg, ['person'], 'sources[0]');
    a.init(640, 480);
    /** What the summary was before it was kept from frame to frame (built afresh from the report). */
    const fresh = () => {
      const r = a.report();
      return { zones: { z: { occupancy: r.zones.z.occupancy, entered: r.zones.z.entered } }, lines: { door: r.lines.door.byClass } };
    };
    // One person walks down across the line into the zone, then all stand.
    const walking = Float32Array.from(xyxy);
    const summaries = [];
    for (let k = 0; k < 6; k++) {
      walking[1] = 40 + 20 * k;
      walking[3] = 200 + 20 * k;
      const s = a.process(new Detections(Float32Array.from(walking), new Float32Array(n).fill(0.9), new Int32Array(n), Int32Array.from({ length: n }, (_, k) => k + 1)), k * 100).summary;
      expect(s).toMatchObject(fresh());
      summaries.push(s);
    }
    expect(summaries.at(-1)!.lines!.door).toEqual({ in: { person: 1 }, out: {} });
    const d = new Detections(walking, new Float32Array(n).fill(0.9), new Int32Array(n), Int32Array.from({ length: n }, (_, k) => k + 1));
    // The rate (one item over the 60 s so far, to a tenth per minute) stays 1.0 from 60 s to 63 s.
    for (let k = 6; k < 600; k++) a.process(d, k * 100);
    const still = a.process(d, 60_000).summary;
    expect(Object.isFrozen(still) && Object.isFrozen(still.lines!.door.in)).toBe(true);
    for (let k = 601; k < 620; k++) expect(a.process(d, k * 100).summary).toBe(still);
    expect(still).toMatchObject(fresh());
    expect(still.rates).toEqual({ belt: 1 });
  });
});
