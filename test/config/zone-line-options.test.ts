/** Zone and line options in the pipeline YAML: the tracking knobs' defaults and checks, and the hint for pixel coordinates written without `units: pixel`. */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { ArgusError, ErrorCodes } from '../../src/core/errors.js';

const parse = (yaml: string) => parseConfigText(`sources:\n  - id: cam\n    uri: /x.mp4\n${yaml}`, PipelineSchema, 'p.yaml', {});
const failure = (yaml: string): ArgusError => {
  try {
    parse(yaml);
  } catch (e) {
    return e as ArgusError;
  }
  throw new Error('expected an error');
};
/** The issue lines of a config error (after the "invalid configuration" line). */
const issues = (e: ArgusError) => e.message.split('\n').slice(1);

describe('pixel coordinates without units: pixel', () => {
  it('a zone: one coded error naming the polygon, with the hint', () => {
    const e = failure('    zones:\n      - {id: z, polygon: [[100, 300], [640, 300], [640, 480], [100, 480]]}\n');
    expect(e).toBeInstanceOf(ArgusError);
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(issues(e)).toEqual(['  sources[0].zones[0].polygon: coordinates look like pixels (e.g. [100, 300]) but units is fraction (0–1 of the frame); add `units: pixel` to this zone, or give fractions']);
  });

  it('a line: one error naming the line, with the hint', () => {
    const e = failure('    lines:\n      - {id: gate, from: [0, 240], to: [640, 240]}\n');
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(issues(e)).toEqual(['  sources[0].lines[0]: coordinates look like pixels (e.g. [0, 240]) but units is fraction (0–1 of the frame); add `units: pixel` to this line, or give fractions']);
  });

  it('points all within 0–100 may be percentages: the hint says so with the fractions (units: pixel alone made them a speck of a zone in the corner)', () => {
    const e = failure('    zones:\n      - {id: z, polygon: [[45, 80], [72, 80], [72, 97], [45, 97]]}\n    lines:\n      - {id: door, from: [100, 40], to: [0, 40]}\n');
    expect(issues(e)).toEqual([
      '  sources[0].zones[0].polygon: coordinates look like pixels (e.g. [45, 80]) but units is fraction (0–1 of the frame); add `units: pixel` to this zone, or give fractions (percentages of the frame divided by 100: [0.45, 0.8])',
      '  sources[0].lines[0]: coordinates look like pixels (e.g. [100, 40]) but units is fraction (0–1 of the frame); add `units: pixel` to this line, or give fractions (percentages of the frame divided by 100: [1, 0.4])',
    ]);
  });

  it('the same points with units: pixel are accepted', () => {
    const c = parse('    zones:\n      - {id: z, units: pixel, polygon: [[100, 300], [640, 300], [640, 480], [100, 480]]}\n    lines:\n      - {id: gate, units: pixel, from: [0, 240], to: [640, 240]}\n');
    expect(c.sources[0].zones[0].units).toBe('pixel');
  });
});

describe('fractions with units: pixel, and polygons with no area', () => {
  it('a zone and a line in fractions marked units: pixel: one error each, with the hint', () => {
    const e = failure('    zones:\n      - {id: z, units: pixel, polygon: [[0.1, 0.3], [0.5, 0.3], [0.5, 0.4]]}\n    lines:\n      - {id: gate, units: pixel, from: [0, 0.5], to: [1, 0.5]}\n');
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(issues(e)).toEqual([
      '  sources[0].zones[0].polygon: coordinates look like fractions (e.g. [0.1, 0.3]) but units is pixel; remove `units: pixel` from this zone (fractions are the default), or give pixels',
      '  sources[0].lines[0]: coordinates look like fractions (e.g. [0, 0.5]) but units is pixel; remove `units: pixel` from this line (fractions are the default), or give pixels',
    ]);
  });

  it('a pixel zone at the corner in whole pixels is still accepted', () => {
    expect(parse('    zones:\n      - {id: z, units: pixel, polygon: [[0, 0], [1, 0], [1, 1]]}\n').sources[0].zones[0].units).toBe('pixel');
  });

  it('points on one line (in fractions or pixels) have no area, as identical points do', () => {
    for (const poly of ['[[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]]', '[[0.3, 0.7], [0.3, 0.7], [0.3, 0.7]]']) {
      expect(issues(failure(`    zones:\n      - {id: z, polygon: ${poly}}\n`))).toEqual(['  sources[0].zones[0].polygon: polygon has no area']);
    }
    expect(issues(failure('    zones:\n      - {id: z, units: pixel, polygon: [[10, 10], [500, 500], [1000, 1000]]}\n'))).toEqual(['  sources[0].zones[0].polygon: polygon has no area']);
    // A thin but real zone is kept.
    expect(parse('    zones:\n      - {id: z, polygon: [[0.1, 0.1], [0.9, 0.1], [0.9, 0.101]]}\n').sources[0].zones).toHaveLength(1);
  });
});

describe('a repeated point is named, not taken for crossing edges', () => {
  it('a ring closed by repeating its first point (as GeoJSON writes it), and a point written twice: the point is named', () => {
    // Before: "polygon is self-intersecting (edges 0 and 3 cross)" for a plain closed square.
    expect(issues(failure('    zones:\n      - {id: z, polygon: [[0.1, 0.1], [0.9, 0.1], [0.9, 0.9], [0.1, 0.9], [0.1, 0.1]]}\n'))).toEqual([
      '  sources[0].zones[0].polygon[4]: repeats the first point: a polygon closes by itself, leave the last point out',
    ]);
    expect(issues(failure('    zones:\n      - {id: z, units: pixel, polygon: [[10, 10], [90, 10], [90, 10], [90, 90], [10, 90]]}\n'))).toEqual([
      '  sources[0].zones[0].polygon[2]: repeats the point before it (polygon[1]): leave one of them out',
    ]);
    // Edges that really cross are still named as such.
    expect(issues(failure('    zones:\n      - {id: z, polygon: [[0, 0], [1, 1], [1, 0], [0, 1]]}\n'))).toEqual(['  sources[0].zones[0].polygon: polygon is self-intersecting (edges 0 and 2 cross)']);
  });
});

describe('zone and line tracking knobs', () => {
  it('defaults: exit after 2000 ms unseen, exit by hold, no re-entry suppression; lines forget after 2000 ms', () => {
    const c = parse('    zones:\n      - {id: z, polygon: [[0,0],[1,0],[1,1]]}\n    lines:\n      - {id: l, from: [0, 0.5], to: [1, 0.5]}\n');
    expect(c.sources[0].zones[0]).toMatchObject({ exitDelayMs: 2000, exitOn: 'hold', reentrySuppressMs: 0 });
    expect(c.sources[0].lines[0]).toMatchObject({ forgetAfterMs: 2000 });
  });

  it('re-entry suppression longer than the exit delay is refused, naming the field', () => {
    const e = failure('    zones:\n      - {id: z, polygon: [[0,0],[1,0],[1,1]], exitDelayMs: 500, reentrySuppressMs: 800}\n');
    expect(issues(e)).toEqual(['  sources[0].zones[0].reentrySuppressMs: reentrySuppressMs (800) must not exceed exitDelayMs (500): an unseen track is only remembered that long']);
  });

  it('an unknown exitOn is refused', () => {
    expect(failure('    zones:\n      - {id: z, polygon: [[0,0],[1,0],[1,1]], exitOn: later}\n').message).toMatch(/sources\[0\]\.zones\[0\]\.exitOn/);
  });
});

describe('frameSize', () => {
  it('pixel points beyond their frameSize, and frameSize on fractions: one error each, naming the field', () => {
    const e = failure(
      '    zones:\n      - {id: z, units: pixel, frameSize: [1920, 1080], polygon: [[100, 300], [2000, 300], [640, 480]]}\n      - {id: f, frameSize: [1920, 1080], polygon: [[0.1, 0.3], [0.5, 0.3], [0.5, 0.6]]}\n    lines:\n      - {id: gate, units: pixel, frameSize: [640, 360], from: [0, 240], to: [640, 400]}\n',
    );
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(issues(e)).toEqual([
      '  sources[0].zones[0].polygon[1]: point [2000, 300] is outside the 1920x1080 frameSize',
      '  sources[0].zones[1].frameSize: frameSize is for pixel points: add `units: pixel`, or remove frameSize (fractions need none)',
      '  sources[0].lines[0].to: point [640, 400] is outside the 640x360 frameSize',
    ]);
  });

  it('a size that is not two whole numbers of pixels is refused', () => {
    expect(issues(failure('    zones:\n      - {id: z, units: pixel, frameSize: [1920.5, 0], polygon: [[100, 300], [200, 300], [200, 400]]}\n'))).toEqual([
      '  sources[0].zones[0].frameSize[0]: Expected integer, received float',
      '  sources[0].zones[0].frameSize[1]: Number must be greater than or equal to 1',
    ]);
  });
});

describe('millisecond settings', () => {
  it('beyond the longest timer Node runs (2^31 − 1 ms) are refused, naming the field: Node ran such a timer after 1 ms, restarting the source every millisecond', () => {
    const e = failure('    watchdog: { startTimeoutMs: 99999999999 }\n    reconnect: { maxDelayMs: 3000000000 }\n');
    expect(e.code).toBe(ErrorCodes.CONFIG);
    expect(issues(e)).toEqual([
      '  sources[0].reconnect.maxDelayMs: at most 2147483647 ms (about 24.8 days), the longest timer Node runs',
      '  sources[0].watchdog.startTimeoutMs: at most 2147483647 ms (about 24.8 days), the longest timer Node runs',
    ]);
    expect(() => parse('    watchdog: { startTimeoutMs: 2147483647 }\n')).not.toThrow();
  });
});

describe('a zone has at most 4096 points, and checking one never stalls loading', () => {
  /** n points around a circle, in fractions (a simple polygon), as YAML. */
  const circle = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => [+(0.5 + 0.4 * Math.cos((2 * Math.PI * i) / n)).toFixed(6), +(0.5 + 0.4 * Math.sin((2 * Math.PI * i) / n)).toFixed(6)]));

  it('40 000 points (13.6 s of checking before): one coded error naming the polygon, and its points are not reported one by one', () => {
    // Every point also outside the frame: no 40 000 lines of "outside the frame".
    const points = JSON.stringify(Array.from({ length: 40_000 }, (_, i) => [i % 2 ? 2 : -1, i]));
    for (const poly of [circle(40_000), points]) {
      const e = failure(`    zones:\n      - {id: big, polygon: ${poly}}\n`);
      expect(e.code).toBe(ErrorCodes.CONFIG);
      expect(issues(e)).toEqual(['  sources[0].zones[0].polygon: at most 4096 points (each is tested against every detection of every frame): simplify the polygon']);
    }
  });

  it('4096 points are checked in full: a simple one is taken, one crossing itself is refused naming the edges', () => {
    expect(parse(`    zones:\n      - {id: big, polygon: ${circle(4096)}}\n`).sources[0].zones[0].polygon).toHaveLength(4096);
    const crossed = JSON.parse(circle(4096)) as number[][];
    [crossed[4000], crossed[4001]] = [crossed[4001], crossed[4000]];
    expect(issues(failure(`    zones:\n      - {id: big, polygon: ${JSON.stringify(crossed)}}\n`))).toEqual(['  sources[0].zones[0].polygon: polygon is self-intersecting (edges 3999 and 4001 cross)']);
  });
});
