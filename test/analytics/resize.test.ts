/**
 * A source that changes its resolution mid-run (a camera switching profiles, an MJPEG stream of
 * pictures of two sizes): the tracker and the zones and lines follow the picture, and keep what
 * they know of each object. Virtual time: frames with injected pts, through the real operators.
 */
import { from, lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/analytics/analyze.js';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { letterbox } from '../../src/core/geometry.js';
import type { DetectedFrame } from '../../src/postprocess/postprocess.js';
import { ByteTracker } from '../../src/tracking/byte-tracker.js';
import { createKalmanState, kalmanBoxXyxy, kalmanInitiate, kalmanScale } from '../../src/tracking/kalman.js';
import { track } from '../../src/tracking/track.js';
import { feed } from '../tracking/helpers.js';

const RULES = [
  { id: 'in', type: 'zone-enter', zone: 'z' },
  { id: 'out', type: 'zone-exit', zone: 'z' },
  { id: 'dwell', type: 'zone-dwell', zone: 'z' },
];

/**
 * 10 fps: one person standing in the zone (feet at 1050, 900 in 1080p pixels) until 10 s; the
 * camera gives 1280x720 from 3 s to 6 s, then 1080p again, as `sizeAt(k)` says.
 */
async function standInZone(source: Record<string, unknown>, sizeAt: (k: number) => 1 | 2) {
  const zone = source.zones as { dwellLimitSec?: number }[];
  const rules = RULES.filter((r) => r.type !== 'zone-dwell' || zone[0].dwellLimitSec !== undefined);
  const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', rules, ...source }), ['person'], 'sources[0]');
  const lbs = { 1: letterbox(1920, 1080, 416, 416), 2: letterbox(1280, 720, 416, 416) };
  const frames: DetectedFrame[] = [];
  for (let k = 0; k < 130; k++) {
    const size = sizeAt(k);
    const s = size === 1 ? 1 : 2 / 3;
    const d = k < 100 ? new Detections(Float32Array.from([1000 * s, 600 * s, 1100 * s, 900 * s]), Float32Array.from([0.9]), Int32Array.from([0])) : new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
    frames.push({ frame: { pts: k / 10, letterbox: lbs[size] }, detections: d } as unknown as DetectedFrame);
  }
  const out = await lastValueFrom(from(frames).pipe(track({ enabled: true }, () => 10), analyze(a), toArray()));
  const alerts = out.flatMap((r) => r.alerts.map((x) => `${x.event}#${x.trackId}@${r.frame.pts.toFixed(1)}`));
  return { alerts, report: a.report(), ids: new Set(out.flatMap((r) => [...(r.detections.trackerId ?? [])]).filter((i) => i > 0)) };
}

const profileSwitch = (k: number) => (k >= 30 && k < 60 ? 2 : 1);

describe('a source that changes its resolution', () => {
  it('a person standing in a zone (fractions) keeps one id and one stay: one entry, the dwell alert, one exit when it leaves', async () => {
    const r = await standInZone({ zones: [{ id: 'z', polygon: [[0.45, 0.45], [0.95, 0.45], [0.95, 0.95], [0.45, 0.95]], dwellLimitSec: 5 }] }, profileSwitch);
    expect([...r.ids]).toEqual([1]);
    expect(r.alerts).toEqual(['zone.enter#1@0.2', 'zone.dwell#1@5.0', 'zone.exit#1@12.0']);
    expect(r.report.zones.z).toMatchObject({ entered: 1, exited: 1, occupancy: 0 });
  });

  it('a picture size that alternates on every frame: still one entry', async () => {
    const r = await standInZone({ zones: [{ id: 'z', polygon: [[0.45, 0.45], [0.95, 0.45], [0.95, 0.95], [0.45, 0.95]] }] }, (k) => (k % 2 ? 2 : 1));
    expect([...r.ids]).toEqual([1]);
    expect(r.alerts).toEqual(['zone.enter#1@0.2', 'zone.exit#1@12.0']);
  });

  it('a zone in pixels (given for the first picture) is scaled to a smaller one, not refused: the source goes on', async () => {
    const r = await standInZone({ zones: [{ id: 'z', units: 'pixel', polygon: [[900, 500], [1800, 500], [1800, 1000], [900, 1000]], dwellLimitSec: 5 }] }, profileSwitch);
    expect(r.alerts).toEqual(['zone.enter#1@0.2', 'zone.dwell#1@5.0', 'zone.exit#1@12.0']);
  });

  it("zones and lines are placed on the new size; a line keeps each track's side", () => {
    const a = new SourceAnalyzer(
      SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ id: 'z', units: 'pixel', polygon: [[900, 500], [1800, 500], [1800, 1000]] }], lines: [{ id: 'l', from: [1, 0.5], to: [0, 0.5], anchor: 'center' }], rules: [{ id: 'cross', type: 'line-cross', line: 'l' }] }),
      ['person'],
      'sources[0]',
    );
    a.init(1920, 1080);
    const row = (cy: number) => new Detections(Float32Array.from([500, cy - 50, 600, cy + 50]), Float32Array.from([0.9]), Int32Array.from([0]), Int32Array.from([7]));
    a.process(row(400), 0); // above the line (y 540)
    a.init(1280, 720);
    expect(a.geometry().zones[0].polygon).toEqual([[600, 500 * (2 / 3)], [1200, 500 * (2 / 3)], [1200, 1000 * (2 / 3)]]);
    expect(a.geometry().lines[0]).toMatchObject({ from: [1280, 360], to: [0, 360] });
    expect(a.process(row(300), 100).alerts).toEqual([]); // still above (y 360 now)
    expect(a.process(row(420), 200).alerts.map((x) => x.direction)).toEqual(['in']); // crossed: its side was kept
  });
});

describe('marginPx and a resolution change', () => {
  const row = (cx: number, feet: number, h: number) => new Detections(Float32Array.from([cx - h / 4, feet - h, cx + h / 4, feet]), Float32Array.from([0.9]), Int32Array.from([0]), Int32Array.from([7]));

  it("a line's margin is scaled with the picture: a person crossing by 25 px either side of it on the 360p sub-stream (75 px of the 1080p view) counts", () => {
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'l', from: [1, 0.5], to: [0, 0.5], marginPx: 30 }], rules: [{ id: 'cross', type: 'line-cross', line: 'l' }] }), ['person'], 'sources[0]');
    a.init(1920, 1080);
    a.process(row(500, 800, 300), 0); // centre at y 650, 110 px below the line (540)
    a.init(640, 360); // line at y 180, its margin 10 px
    // Centre 25 px above the line (from below, where it was: a crossing), then 25 px below, then
    // above again. Before, the margin stayed 30 px of the 360p picture: none of these sightings
    // was beyond it, and nothing was counted.
    const results = [155, 205, 155].map((cy, k) => a.process(row(170, cy + 50, 100), 100 * (k + 1)));
    expect(results.at(-1)!.summary.lines!.l).toEqual({ in: { person: 1 }, out: { person: 2 } });
    // The second `out` is counted, not alerted: the person never got a body's size from the line (a line-cross rule's latch).
    expect(results.flatMap((r) => r.alerts.map((x) => x.direction))).toEqual(['out', 'in']);
  });

  it("a line without marginPx: its band is the picture's size over 48 (10 px at 480 lines, 45 px at 2160), so the same view counts the same at any resolution", () => {
    /** Crossings of a line across the middle (fractions, no marginPx) by one person standing on it, then one walking across, in a `scale`× picture of 640x480. */
    const counts = (scale: number) => {
      const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'l', from: [1, 0.5], to: [0, 0.5] }] }), ['person'], 'sources[0]');
      a.init(640 * scale, 480 * scale);
      const tracker = new ByteTracker({ frameRateHint: 10 });
      // A person 160 px tall (of 480) standing with the box's centre on the line, each edge jittering ±8 px
      // (the centre by up to ±8 px: 2 % of the picture's height either way, 5 % of the box), then,
      // from 8 s, another walking down across it at 100 px/s.
      const scene = { objects: [{ key: 'stand', box: [100, 160, 160, 320], until: 8 }, { key: 'walk', box: [400, -780, 460, -620], velocity: [0, 100], from: 8, until: 11.5 }] } as const;
      for (const f of feed(10, 14, { ...scene, jitter: 8, seed: 5 })) {
        const xyxy = f.detections.xyxy.map((v) => v * scale);
        a.process(tracker.update(new Detections(xyxy, f.detections.confidence, f.detections.classId), f.timestampMs), f.timestampMs);
      }
      const r = a.report().lines.l;
      return [r.in, r.out];
    };
    expect(counts(1)).toEqual([1, 0]);
    // Below 480 lines the band stays 10 px (LINE_MARGIN_MIN_PX): a standing person whose centre
    // jitters ±9 px on a 640x360 picture counts nothing (with 1/48 alone, 7.5 px, it counted).
    const small = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'l', from: [1, 0.5], to: [0, 0.5] }] }), ['person'], 'sources[0]');
    small.init(640, 360);
    for (let k = 0; k < 40; k++) small.process(row(300, 180 + (k % 2 ? 9 : -9) + 50, 100), 100 * k);
    expect(small.report().lines.l).toMatchObject({ in: 0, out: 0 });
    // 4K (3840x2160 is 6× 640x360; here 4.5× 640x480, 2880x2160): the band is 45 px. Before, it stayed
    // 10 px: the standing person's jitter (±36 px here) crossed it again and again.
    expect(counts(4.5)).toEqual([1, 0]);
  });

  it("a zone's margin is scaled with the picture: on the 1080p main stream a person standing on its edge, feet ±20 px across it (±7 px of the 360p view the margin was set on), never enters", () => {
    const a = new SourceAnalyzer(
      SourceSchema.parse({ id: 'cam', uri: '/x.mp4', zones: [{ id: 'z', units: 'pixel', marginPx: 10, minHoldFrames: 1, polygon: [[100, 200], [600, 200], [600, 350], [100, 350]] }], rules: [{ id: 'in', type: 'zone-enter', zone: 'z' }] }),
      ['person'],
      'sources[0]',
    );
    a.init(640, 360);
    a.init(1920, 1080); // zone's top edge at y 600, its band 30 px
    // Before, the band stayed 10 px: every frame with the feet 20 px inside entered again after one 20 px outside (minHoldFrames 1).
    const alerts = Array.from({ length: 20 }, (_, k) => a.process(row(900, k % 2 ? 620 : 580, 300), 100 * k).alerts.map((x) => x.event)).flat();
    expect(alerts).toEqual([]);
    // One who walks 40 px in (beyond the band) enters.
    expect(a.process(row(900, 640, 300), 2000).alerts.map((x) => x.event)).toEqual(['zone.enter']);
  });

  it('pixel points with frameSize: the margin is in the pixels of that picture too, scaled with the points', () => {
    const a = new SourceAnalyzer(
      SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'l', units: 'pixel', frameSize: [1920, 1080], from: [0, 540], to: [1920, 540], marginPx: 30 }] }),
      ['person'],
      'sources[0]',
    );
    a.init(640, 360);
    expect(a.geometry().lines[0]).toMatchObject({ from: [0, 180], to: [640, 180] });
    // 15 px either side of y 180 on the sub-stream (45 px of the screenshot): beyond the 10 px band.
    for (const [k, cy] of [165, 195, 165].entries()) a.process(row(300, cy + 50, 100), 100 * k);
    expect(a.report().lines.l).toMatchObject({ in: 1, out: 1 });
  });
  it("a line's margin is scaled across it when the shape changes: sy for a level line, sx for an upright one (not their geometric mean)", () => {
    // Points read from a 1920x1080 screenshot of a 640x1080 picture (sx 1/3, sy 1), margins 30 px.
    const a = new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: '/x.mp4',
        lines: [
          { id: 'level', units: 'pixel', frameSize: [1920, 1080], from: [0, 540], to: [1920, 540], marginPx: 30 },
          { id: 'upright', units: 'pixel', frameSize: [1920, 1080], from: [960, 0], to: [960, 1080], marginPx: 30 },
        ],
      }),
      ['person'],
      'sources[0]',
    );
    a.init(640, 1080);
    // The level line at y 540, its band 30 px of this picture (y is not scaled): a person whose
    // centre jitters 20 px either side of it stays on it. Before, the band was 17 px (30 · √⅓),
    // and each swing was counted a crossing.
    // The upright line at x 320, its band 10 px (30 · ⅓): a person 12 px either side of it (36 px
    // of the screenshot, beyond its 30 px band) crosses. Before, 17 px: nothing was counted.
    for (const [k, [cx, cy]] of ([[308, 520], [332, 560], [308, 520], [332, 560]] as const).entries()) a.process(row(cx, cy + 50, 100), 100 * k);
    expect(a.report().lines.level).toMatchObject({ in: 0, out: 0 });
    expect(a.report().lines.upright).toMatchObject({ in: 2, out: 1 });
  });
  it("a line without marginPx has the same band given in pixels of a screenshot of another shape (frameSize) as in fractions: 1/48 of the picture's smaller side", () => {
    // A 640x1080 picture: the band is 13.3 px either way. Points read from a 1920x1080 screenshot of it
    // (sx 1/3, sy 1) got 1/48 of the screenshot's 1080, scaled as the distance across each line scales:
    // 22.5 px for the level line, 7.5 px for the upright one.
    const counts = (units: 'pixel' | 'fraction') => {
      const px = units === 'pixel';
      const a = new SourceAnalyzer(
        SourceSchema.parse({
          id: 'cam',
          uri: '/x.mp4',
          lines: [
            { id: 'level', units, ...(px ? { frameSize: [1920, 1080], from: [0, 540], to: [1920, 540] } : { from: [0, 0.5], to: [1, 0.5] }) },
            { id: 'upright', units, ...(px ? { frameSize: [1920, 1080], from: [960, 0], to: [960, 1080] } : { from: [0.5, 0], to: [0.5, 1] }) },
          ],
        }),
        ['person'],
        'sources[0]',
      );
      a.init(640, 1080);
      // A person whose centre swings 11 px either side of the upright line (x 320) and 17 px either side of the level one (y 540).
      for (const [k, [cx, cy]] of ([[309, 523], [331, 557], [309, 523], [331, 557]] as const).entries()) a.process(row(cx, cy + 50, 100), 100 * k);
      const { level, upright } = a.report().lines;
      return { level: [level.in, level.out], upright: [upright.in, upright.out] };
    };
    expect(counts('fraction')).toEqual({ level: [1, 2], upright: [0, 0] });
    expect(counts('pixel')).toEqual(counts('fraction'));
  });
});

describe('pixel points read from another picture (frameSize)', () => {
  const analyzer = (frameSize?: [number, number]) =>
    new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: '/x.mp4',
        zones: [{ id: 'z', units: 'pixel', polygon: [[900, 600], [1800, 600], [1800, 1050], [900, 1050]], ...(frameSize && { frameSize }) }],
        lines: [{ id: 'l', units: 'pixel', from: [0, 540], to: [1920, 540], ...(frameSize && { frameSize }) }],
        rules: [{ id: 'in', type: 'zone-enter', zone: 'z' }],
      }),
      ['person'],
      'sources[0]',
    );

  it("points taken from a 1080p screenshot, on a 640x360 sub-stream: scaled by a third, and a person's feet in the zone enter it", () => {
    const a = analyzer([1920, 1080]);
    a.init(640, 360);
    expect(a.geometry().zones[0].polygon).toEqual([[300, 200], [600, 200], [600, 350], [300, 350]]);
    expect(a.geometry().lines[0]).toMatchObject({ from: [0, 180], to: [640, 180] });
    // Feet at (450, 300) of the sub-stream: inside the scaled zone, entered after minHoldFrames (3).
    const box = new Detections(Float32Array.from([420, 200, 480, 300]), Float32Array.from([0.9]), Int32Array.from([0]), Int32Array.from([4]));
    const alerts = [0, 100, 200, 300].flatMap((t) => a.process(box, t).alerts.map((x) => x.event));
    expect(alerts).toEqual(['zone.enter']);
    // The stream switching to 720p keeps the frameSize's scale: 1280/1920.
    a.init(1280, 720);
    expect(a.geometry().zones[0].polygon[0]).toEqual([600, 400]);
  });

  it("a zone drawn to the border of its frameSize's picture reaches the border of the picture argus gets, exactly: a person cut off by the bottom enters", () => {
    // 624x468 → 640x480: 468 × (480 / 468) is 479.99999999999994 in floating point, so the
    // zone's bottom edge lay just above the frame's (y = 480), where a clipped box's feet are.
    const src = { zones: [{ id: 'z', units: 'pixel', frameSize: [624, 468], polygon: [[312, 234], [624, 234], [624, 468], [312, 468]] }], rules: RULES.slice(0, 1) };
    const a = new SourceAnalyzer(SourceSchema.parse({ id: 'cam', uri: '/x.mp4', ...src }), ['person'], 'sources[0]');
    a.init(640, 480);
    expect(a.geometry().zones[0].polygon).toEqual([[320, 240], [640, 240], [640, 480], [320, 480]]);
    const box = new Detections(Float32Array.from([560, 300, 640, 480]), Float32Array.from([0.9]), Int32Array.from([0]), Int32Array.from([4]));
    expect([0, 100, 200].flatMap((t) => a.process(box, t).alerts.map((x) => x.event))).toEqual(['zone.enter']);
  });

  it('a frameSize of another shape than the picture: one warning per zone and line when it is placed (again at a new size), none for the same shape', () => {
    const warned: string[] = [];
    const a = new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: '/x.mp4',
        zones: [
          { id: 'z', units: 'pixel', frameSize: [1920, 1080], polygon: [[900, 600], [1800, 600], [1800, 1050]] },
          { id: 'f', polygon: [[0.1, 0.1], [0.5, 0.1], [0.5, 0.5]] },
        ],
        lines: [{ id: 'l', units: 'pixel', frameSize: [1920, 1080], from: [0, 540], to: [1920, 540] }],
      }),
      ['person'],
      'sources[0]',
      (m) => warned.push(m),
    );
    a.init(1281, 720); // 16:9 but for a pixel of rounding
    expect(warned).toEqual([]);
    a.init(640, 480);
    expect(warned).toEqual([
      "sources[0].zones[0].frameSize: 1920x1080 is not the shape of the source's 640x480 picture (1.78 against 1.33 wide for high): its points are stretched, ×0.333 across and ×0.444 down. Right only if they were read from a stretched picture of this view; else give the size of the picture they were read from",
      "sources[0].lines[0].frameSize: 1920x1080 is not the shape of the source's 640x480 picture (1.78 against 1.33 wide for high): its points are stretched, ×0.333 across and ×0.444 down. Right only if they were read from a stretched picture of this view; else give the size of the picture they were read from",
    ]);
    // Said once per field and shape: the camera switching back and forth, or to 320x240 (4:3 too), says nothing new.
    a.init(1280, 720);
    a.init(640, 480);
    a.init(320, 240);
    expect(warned).toHaveLength(2);
    const [x, y] = a.geometry().zones[0].polygon[0];
    expect([x, y].map((v) => +v.toFixed(3))).toEqual([150, 133.333]); // stretched all the same, as configured (on 320x240)
  });

  it('a zone whose marginPx leaves no point inside beyond the band (it is never entered) is warned of once per size, naming the field; a margin that leaves room, or none, is not', () => {
    const warned: string[] = [];
    const a = new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: '/x.mp4',
        zones: [
          // 100 px high on 640x480: a 60 px band leaves no point 60 px from both long edges.
          { id: 'strip', units: 'pixel', marginPx: 60, polygon: [[100, 100], [500, 100], [500, 200], [100, 200]] },
          { id: 'room', units: 'pixel', marginPx: 40, polygon: [[100, 100], [500, 100], [500, 200], [100, 200]] },
          { id: 'auto', polygon: [[0.1, 0.1], [0.2, 0.1], [0.2, 0.12]] },
        ],
      }),
      ['person'],
      'sources[0]',
      (m) => warned.push(m),
    );
    a.init(640, 480);
    expect(warned).toEqual([
      "sources[0].zones[0].marginPx: 60 px leaves no point of zone 'strip' more than that inside its edges in the 640x480 picture: nothing can ever enter it (an anchor within marginPx of an edge is on the edge); keep it below half the zone's narrowest width",
    ]);
    a.init(640, 480);
    expect(warned).toHaveLength(1);
    // On a picture twice the size the strip is 200 px high, and its band 120 px: still no room
    // (before, the band stayed 60 px of whatever picture came, and this was room enough).
    a.init(1280, 960);
    expect(warned.slice(1)).toEqual([
      "sources[0].zones[0].marginPx: 60 px (120 px in this picture) leaves no point of zone 'strip' more than that inside its edges in the 1280x960 picture: nothing can ever enter it (an anchor within marginPx of an edge is on the edge); keep it below half the zone's narrowest width",
    ]);
  });

  it('a line with no point of the picture beyond its margin on one side (along the border, or a margin wider than the picture) is warned of, naming the field', () => {
    const warned: string[] = [];
    const a = new SourceAnalyzer(
      SourceSchema.parse({
        id: 'cam',
        uri: '/x.mp4',
        lines: [
          { id: 'border', from: [0, 0], to: [1, 0] },
          { id: 'wide', from: [0, 0.5], to: [1, 0.5], marginPx: 300 },
          { id: 'door', from: [1, 0.5], to: [0, 0.5] },
        ],
      }),
      ['person'],
      'sources[0]',
      (m) => warned.push(m),
    );
    a.init(640, 480);
    expect(warned).toEqual([
      "sources[0].lines[0]: no point of the 640x480 picture is more than marginPx (10 px) on the left of line 'border' (from→to as seen on screen): nothing can ever cross it; draw it inside the picture, or lower marginPx",
      "sources[0].lines[1]: no point of the 640x480 picture is more than marginPx (300 px) on the left of line 'wide' (from→to as seen on screen): nothing can ever cross it; draw it inside the picture, or lower marginPx",
    ]);
    a.init(640, 480);
    expect(warned).toHaveLength(2);
  });

  it('without frameSize, the same points on the sub-stream are refused when its first picture arrives, with the hint', () => {
    const a = analyzer();
    expect(() => a.init(640, 360)).toThrow(/sources\[0\]\.zones\[0\]\.polygon\[0\]: point \[900, 600\] is outside the 640x360 frame \(give the size of the picture the points were read from as frameSize/);
  });
});

describe('the tracker and a resolution change', () => {
  it('kalmanScale gives the same box in the scaled picture', () => {
    const s = createKalmanState();
    kalmanInitiate(s, 960, 540, 0.5, 200);
    kalmanScale(s, 2 / 3, 2 / 3);
    const box = new Float64Array(4);
    kalmanBoxXyxy(s, box, 0);
    expect([...box].map((v) => Math.round(v * 1000) / 1000)).toEqual([606.667, 293.333, 673.333, 426.667]); // 100x200 at (960, 540), scaled by 2/3
  });

  it('rescaled tracks match the next detections in the new pixels, with their ids; without it they would not', () => {
    const box = (s: number) => new Detections(Float32Array.from([1000 * s, 600 * s, 1100 * s, 900 * s]), Float32Array.from([0.9]), Int32Array.from([0]));
    const run = (rescale: boolean) => {
      const t = new ByteTracker({ frameRateHint: 10 });
      for (let k = 0; k < 5; k++) t.update(box(1), k * 100);
      if (rescale) t.rescale(0.5, 0.5);
      return t.update(box(0.5), 500).trackerId![0];
    };
    expect(run(true)).toBe(1);
    expect(run(false)).toBe(-1);
  });
});
