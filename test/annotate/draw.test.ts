import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { annotateImage, drawOverlay, encodeImage, inSideNormal, lineLabel, overlaySvg, zoneLabel, type FrameImage } from '../../src/annotate/draw.js';
import { placeScene, sceneOf } from '../../src/annotate/scene.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { isArgusError } from '../../src/core/errors.js';

const LABELS = ['person', 'bicycle', 'car'];
const black = (width: number, height: number, order: 'rgb' | 'bgr' = 'rgb'): FrameImage => ({ data: new Uint8Array(width * height * 3), width, height, order });
const at = (px: Uint8Array, width: number, x: number, y: number) => [px[(y * width + x) * 3], px[(y * width + x) * 3 + 1], px[(y * width + x) * 3 + 2]];
const lit = (p: number[]) => p[0] + p[1] + p[2] > 60;
const box = (x1: number, y1: number, x2: number, y2: number, classId = 0, trackId?: number) =>
  new Detections(new Float32Array([x1, y1, x2, y2]), new Float32Array([0.87]), new Int32Array([classId]), trackId !== undefined ? new Int32Array([trackId]) : undefined);

describe('drawOverlay: boxes', () => {
  it('draws a box on its outline, leaves its inside and the far frame untouched, and labels it above', async () => {
    const img = black(200, 200);
    const out = await drawOverlay(img, { detections: box(50, 60, 150, 160), labels: LABELS });
    expect(out.length).toBe(200 * 200 * 3);
    for (const [x, y] of [[100, 60], [50, 110], [150, 110], [100, 160]]) expect(lit(at(out, 200, x, y)), `outline at ${x},${y}`).toBe(true);
    for (const [x, y] of [[100, 110], [70, 80], [130, 140]]) expect(at(out, 200, x, y), `inside at ${x},${y}`).toEqual([0, 0, 0]);
    for (const [x, y] of [[190, 190], [10, 190], [190, 20]]) expect(at(out, 200, x, y), `far at ${x},${y}`).toEqual([0, 0, 0]);
    // The label's filled background sits just above the top edge.
    expect(lit(at(out, 200, 56, 52))).toBe(true);
    // The input frame is not changed.
    expect(img.data.every((v) => v === 0)).toBe(true);
  });

  it('a box at the top edge gets its label inside instead of off the frame', async () => {
    const out = await drawOverlay(black(200, 200), { detections: box(20, 0, 180, 150), labels: LABELS });
    expect(lit(at(out, 200, 28, 8))).toBe(true); // label background inside the box's top
    expect(at(out, 200, 100, 100)).toEqual([0, 0, 0]);
  });

  it('honours the channel order: the same colour lands in swapped bytes for BGR', async () => {
    // Class 0 is drawn in a red (255, 56, 56); on 400×400 the outline is 2 px wide, rows 39–40 fully covered.
    const rgb = at(await drawOverlay(black(400, 400, 'rgb'), { detections: box(40, 40, 360, 360) }), 400, 200, 40);
    const bgr = at(await drawOverlay(black(400, 400, 'bgr'), { detections: box(40, 40, 360, 360) }), 400, 200, 40);
    expect(rgb[0]).toBeGreaterThan(200);
    expect(rgb[2]).toBeLessThan(100);
    expect(bgr).toEqual([rgb[2], rgb[1], rgb[0]]);
  });

  it('labels carry the track id, the class name and the score', () => {
    const svg = overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 2, 7), labels: LABELS });
    expect(svg).toContain('#7 car 0.87');
    expect(overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 2, -1), labels: LABELS })).toContain('>car 0.87<');
  });
});

describe('drawOverlay: labels that would cover each other', () => {
  /** The label rectangles of an overlay's SVG (those with a text right after them). */
  const labelRects = (svg: string) =>
    [...svg.matchAll(/<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="[^"]+" fill-opacity="[\d.]+"\/><text/g)].map((m) => m.slice(1, 5).map(Number));
  const overlap = ([ax, ay, aw, ah]: number[], [bx, by, bw, bh]: number[]) => ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah;

  it('two people side by side: the second label takes another place than above its box (it covered the first one\'s score); apart, both stay above', () => {
    const two = (dx: number) => {
      const d = new Detections(new Float32Array([40, 80, 100, 180, 40 + dx, 84, 100 + dx, 190]), new Float32Array([0.77, 0.72]), new Int32Array([0, 0]));
      return labelRects(overlaySvg(300, 240, { detections: d, labels: LABELS }));
    };
    const near = two(30);
    expect(near).toHaveLength(2);
    expect(overlap(near[0], near[1])).toBe(false);
    expect(near[0][1]).toBeLessThan(80); // the first above its box
    const apart = two(150);
    expect(apart.every((r, i) => r[1] < [80, 84][i])).toBe(true); // both above their boxes
  });

  it("a line's name past its end takes another place where a zone's name is (the conveyor example's line covered its zone's)", () => {
    const scene = {
      zones: [{ id: 'belt', polygon: [[200, 125], [290, 125], [290, 220], [200, 220]] as [number, number][] }],
      lines: [{ id: 'count', from: [100, 120] as [number, number], to: [190, 120] as [number, number] }],
    };
    const rects = labelRects(overlaySvg(300, 240, { scene }));
    expect(rects).toHaveLength(2);
    expect(overlap(rects[0], rects[1])).toBe(false);
  });

  it("a box at the top left keeps its label out from under the counts panel (argus preview's `lobby at 0.00 s: …` covered the label of a box in that corner)", () => {
    const svg = overlaySvg(300, 240, { detections: box(0, 1, 112, 167), labels: LABELS, panel: ['lobby at 0.00 s: 1 detection, 0 tracked'] });
    const panel = svg.match(/<rect x="0" y="0" width="([\d.]+)" height="([\d.]+)" fill="rgb\(0,0,0\)" fill-opacity="0.6"\/>/);
    expect(panel).not.toBeNull();
    const label = labelRects(svg).filter((r) => !(r[0] === 0 && r[1] === 0 && r[2] === Number(panel![1])));
    expect(label).toHaveLength(1);
    expect(overlap(label[0], [0, 0, Number(panel![1]), Number(panel![2])])).toBe(false);
    expect(svg).toContain('>person 0.87<');
  });

  it('a small box wholly under the counts panel: its label goes just below the panel (every place by the box was under it, and the label went there)', () => {
    const svg = overlaySvg(300, 240, { detections: box(0, 1, 20, 20), labels: LABELS, panel: ['zone a: 1 inside', 'zone b: 0 inside', 'lobby at 0.00 s'] });
    const panel = svg.match(/<rect x="0" y="0" width="([\d.]+)" height="([\d.]+)" fill="rgb\(0,0,0\)" fill-opacity="0.6"\/>/);
    expect(panel).not.toBeNull();
    const label = labelRects(svg).filter((r) => !(r[0] === 0 && r[1] === 0 && r[2] === Number(panel![1])));
    expect(label).toHaveLength(1);
    expect(overlap(label[0], [0, 0, Number(panel![1]), Number(panel![2])])).toBe(false);
    expect(label[0][1]).toBe(Number(panel![2]));
  });
});

describe('drawOverlay: a picture placed in a larger drawing', () => {
  it('size.picture: the picture resized into its box (aspect as given), black around it, the overlay in the drawing\'s pixels', async () => {
    const grey: FrameImage = { data: new Uint8Array(20 * 40 * 3).fill(128), width: 20, height: 40, order: 'bgr' };
    const out = await drawOverlay(grey, { detections: box(40, 10, 70, 60) }, { width: 100, height: 80, picture: { left: 30, top: 0, width: 40, height: 80 } });
    expect(out.length).toBe(100 * 80 * 3);
    for (const [x, y] of [[5, 40], [29, 70], [70, 5], [95, 75]]) expect(at(out, 100, x, y), `bar at ${x},${y}`).toEqual([0, 0, 0]);
    for (const [x, y] of [[30, 5], [35, 70], [69, 75], [55, 35]]) expect(at(out, 100, x, y), `picture at ${x},${y}`).toEqual([128, 128, 128]);
    expect(lit(at(out, 100, 40, 60)) && at(out, 100, 40, 60)[0] !== 128).toBe(true); // the box's outline, over the picture
  });
});

describe('drawOverlay: text from model files and manifests', () => {
  it('a label with control characters, a lone surrogate or markup is drawn (as U+FFFD for what XML cannot hold), not a failed drawing', async () => {
    const labels = ['fork\vlift', 'a\u0000b\uD800c', '<b>&"x"</b>', 'ok 🎥'];
    const svg = overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 0, 3), labels });
    expect(svg).toContain('#3 fork\uFFFDlift 0.87');
    expect(overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 1), labels })).toContain('>a\uFFFDb\uFFFDc 0.87<');
    expect(overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 2), labels })).toContain('&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt; 0.87');
    expect(overlaySvg(200, 200, { detections: box(50, 60, 150, 160, 3), labels })).toContain('ok 🎥 0.87');
    for (const classId of [0, 1, 2, 3]) {
      const out = await drawOverlay(black(200, 200), { detections: box(50, 60, 150, 160, classId), labels, scene: { zones: [], lines: [{ id: 'gate\u0001', from: [0, 20], to: [200, 20] }] } });
      expect(lit(at(out, 200, 56, 52)), labels[classId]).toBe(true);
    }
  });
});

describe('drawOverlay: lines', () => {
  /** The side of from→to where green (the `in` arrow and its word) was drawn: +1 on the in side, per pixel counts. */
  async function greenSides(from: [number, number], to: [number, number]) {
    const w = 240, h = 240;
    const out = await drawOverlay(black(w, h), { scene: { zones: [], lines: [{ id: 'gate', from, to }] } });
    const [nx, ny] = inSideNormal(from, to);
    let inSide = 0, outSide = 0;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        const [r, g, b] = at(out, w, x, y);
        if (!(g > 150 && r < 80 && b < 150)) continue; // the arrow's green (0, 255, 90), not the yellow line
        const side = (x - from[0]) * nx + (y - from[1]) * ny;
        if (side > 3) inSide++;
        else if (side < -3) outSide++;
      }
    }
    return { inSide, outSide };
  }

  /** Where a track crossing the line ends up after an `in` crossing, by the analyzer itself. */
  function inSideByAnalyzer(from: [number, number], to: [number, number]): [number, number] {
    const [nx, ny] = inSideNormal(from, to);
    const source = SourceSchema.parse({ id: 'cam', uri: '/x.mp4', lines: [{ id: 'gate', from, to, units: 'pixel', marginPx: 2 }] });
    const analyzer = new SourceAnalyzer(source, LABELS, 'sources[0]');
    analyzer.init(240, 240);
    const mx = (from[0] + to[0]) / 2, my = (from[1] + to[1]) / 2;
    let last;
    // A 10×10 box whose centre (the line's default anchor) moves from 30 px on one side to 30 px on the other.
    for (let k = 0; k <= 12; k++) {
      const s = -30 + k * 5;
      const cx = mx + nx * s, cy = my + ny * s;
      last = analyzer.process(new Detections(new Float32Array([cx - 5, cy - 5, cx + 5, cy + 5]), new Float32Array([0.9]), new Int32Array([0]), new Int32Array([1])), k * 100);
    }
    const counts = last!.summary.lines!.gate;
    return [counts.in.person ?? 0, counts.out.person ?? 0];
  }

  for (const [name, from, to] of [
    ['horizontal, left to right', [40, 120], [200, 120]],
    ['vertical, downwards', [120, 30], [120, 210]],
    ['diagonal', [40, 200], [200, 40]],
  ] as const) {
    it(`${name}: the green "in" arrow is on the side a track moving that way is counted "in"`, async () => {
      // Moving along the normal counts as `in` for the analyzer…
      expect(inSideByAnalyzer([...from], [...to])).toEqual([1, 0]);
      // …and that is where the arrow is drawn.
      const { inSide, outSide } = await greenSides([...from], [...to]);
      expect(inSide).toBeGreaterThan(30);
      expect(outSide).toBe(0);
    });
  }

  it('the line label names the line, its class filter and its crossings', () => {
    expect(lineLabel({ id: 'gate', from: [0, 0], to: [1, 1], classes: ['car', 'bus'] })).toBe('gate [car, bus]');
    expect(lineLabel({ id: 'gate', from: [0, 0], to: [1, 1], in: 3, out: 1 })).toBe('gate: in 3, out 1');
    expect(overlaySvg(200, 200, { scene: { zones: [], lines: [{ id: 'gate', from: [10, 10], to: [150, 10], classes: ['car'] }] } })).toContain('gate [car]');
  });
});

describe('drawOverlay: zones and the counts panel', () => {
  it('fills a zone half-transparently inside its outline, and names it with its filter', async () => {
    const polygon = [[40, 60], [160, 60], [160, 180], [40, 180]] as const;
    const zone = { id: 'door', polygon, classes: ['person'] };
    const out = await drawOverlay(black(200, 200), { scene: { zones: [zone], lines: [] } });
    const inside = at(out, 200, 100, 120);
    const edge = at(out, 200, 100, 180);
    // Inside: tinted, well short of the outline's full colour; outside: untouched.
    expect(Math.max(...inside)).toBeGreaterThan(20);
    expect(Math.max(...inside)).toBeLessThan(Math.max(...edge) * 0.5);
    expect(at(out, 200, 190, 190)).toEqual([0, 0, 0]);
    expect(overlaySvg(200, 200, { scene: { zones: [zone], lines: [] } })).toContain('door [person]');
    expect(zoneLabel({ ...zone, occupancy: 2, entered: 5 })).toBe('door [person]: 2 inside, 5 entered');
  });

  it('lists zone and line figures, and extra lines, in a panel at the top left', async () => {
    const scene = { zones: [{ id: 'door', polygon: [[100, 150], [190, 150], [190, 190]] as const, occupancy: 1, entered: 4 }], lines: [{ id: 'gate', from: [100, 100] as const, to: [190, 100] as const, in: 2, out: 0 }] };
    const svg = overlaySvg(300, 200, { scene, panel: ['t 12.0 s'] });
    expect(svg).toContain('zone door: 1 inside, 4 entered');
    expect(svg).toContain('line gate: in 2, out 0');
    expect(svg).toContain('t 12.0 s');
    const out = await drawOverlay(black(300, 200), { scene, panel: ['t 12.0 s'] });
    let text = 0;
    for (let y = 0; y < 40; y++) for (let x = 0; x < 150; x++) if (lit(at(out, 300, x, y))) text++;
    expect(text).toBeGreaterThan(50); // the panel's white text on its dark background
    expect(overlaySvg(300, 200, { scene: { zones: [{ ...scene.zones[0], occupancy: undefined, entered: undefined }], lines: [] } })).not.toContain('fill-opacity="0.6"');
  });

  it('escapes names that are not XML-safe', () => {
    const svg = overlaySvg(100, 100, { scene: { zones: [{ id: 'a<b&c', polygon: [[0, 0], [50, 0], [50, 50]] }], lines: [] } });
    expect(svg).toContain('a&lt;b&amp;c');
  });
});

describe('placeScene / sceneOf', () => {
  const source = (over: Record<string, unknown>) => SourceSchema.parse({ id: 'cam', uri: '/x.mp4', ...over });

  it('places fractional and pixel coordinates with the analyzer, keeping the class filters', () => {
    const { scene } = placeScene(
      source({
        zones: [{ id: 'z', polygon: [[0.5, 0.5], [1, 0.5], [1, 1]], classes: ['person'] }],
        lines: [{ id: 'l', from: [10, 20], to: [300, 20], units: 'pixel', classes: ['car'] }],
      }),
      LABELS,
      400,
      200,
    );
    expect(scene.zones).toEqual([{ id: 'z', polygon: [[200, 100], [400, 100], [400, 200]], classes: ['person'] }]);
    expect(scene.lines).toEqual([{ id: 'l', from: [10, 20], to: [300, 20], classes: ['car'] }]);
  });

  it('a pixel point outside the frame is a config error naming the field', () => {
    let err: unknown;
    try {
      placeScene(source({ lines: [{ id: 'l', from: [10, 20], to: [900, 20], units: 'pixel' }] }), LABELS, 400, 200, 'sources[2]');
    } catch (e) {
      err = e;
    }
    expect(isArgusError(err, 'VAP_ERR_CONFIG')).toBe(true);
    expect((err as Error).message).toContain('sources[2].lines[0]');
  });

  it('sceneOf adds a frame’s figures: occupancy, entries and crossings summed over classes', () => {
    const { analyzer } = placeScene(source({ zones: [{ id: 'z', polygon: [[0, 0], [1, 0], [1, 1]] }], lines: [{ id: 'l', from: [0, 0.5], to: [1, 0.5] }] }), LABELS, 100, 100);
    const scene = sceneOf(analyzer, { zones: { z: { occupancy: 2, entered: 3 } }, lines: { l: { in: { person: 2, car: 1 }, out: { car: 4 } } } });
    expect(scene.zones[0]).toMatchObject({ occupancy: 2, entered: 3 });
    expect(scene.lines[0]).toMatchObject({ in: 3, out: 4 });
  });
});

describe('encodeImage / annotateImage', () => {
  it('BGR frames are written as RGB images', async () => {
    const img = black(4, 4, 'bgr');
    img.data.set([255, 0, 0]); // blue, in BGR bytes
    const png = await encodeImage(img, 'png');
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).toBe(3);
    expect([data[0], data[1], data[2]]).toEqual([0, 0, 255]);
  });

  it('annotateImage gives a PNG or JPEG of the frame size', async () => {
    for (const format of ['png', 'jpeg'] as const) {
      const meta = await sharp(await annotateImage(black(320, 180), { detections: box(10, 30, 100, 150), labels: LABELS }, format)).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, 320, 180]);
    }
  });
});
