import { SourceAnalyzer, type AnalyticsSummary } from '../analytics/analyzer.js';
import type { SourceConfig } from '../config/schema.js';
import type { Point } from '../core/polygon.js';

/** A zone as drawn: polygon in source pixels, its class filter and (when known) its figures. */
export interface ZoneShape {
  id: string;
  polygon: readonly Point[];
  /** Class labels the zone counts (undefined: every class). */
  classes?: readonly string[];
  /** Tracks inside now. */
  occupancy?: number;
  /** Entries so far. */
  entered?: number;
}

/** A counting line as drawn: from → to in source pixels; `in` is crossing from its right-hand side to its left-hand side (analytics/line.ts). */
export interface LineShape {
  id: string;
  from: Point;
  to: Point;
  classes?: readonly string[];
  /** Crossings so far, all classes together. */
  in?: number;
  out?: number;
}

/** The rules of one source placed on a frame: what `drawOverlay` draws besides the detections. */
export interface Scene {
  zones: ZoneShape[];
  lines: LineShape[];
}

const sum = (m: Record<string, number> | undefined) => (m ? Object.values(m).reduce((s, n) => s + n, 0) : 0);

/**
 * The zones and lines of the analyzer's source, in the pixels the analyzer placed them at
 * (`SourceAnalyzer.init`), with their class filters from the config and, when `analytics` (a
 * frame's figures) is given, their counts.
 */
export function sceneOf(analyzer: SourceAnalyzer, analytics?: AnalyticsSummary): Scene {
  const g = analyzer.geometry();
  const cfg = analyzer.source;
  return {
    zones: g.zones.map((z) => {
      const figures = analytics?.zones?.[z.id];
      return { id: z.id, polygon: z.polygon, classes: cfg.zones.find((c) => c.id === z.id)?.classes, ...(figures ? { occupancy: figures.occupancy, entered: figures.entered } : {}) };
    }),
    lines: g.lines.map((l) => {
      const figures = analytics?.lines?.[l.id];
      return { id: l.id, from: l.from, to: l.to, classes: cfg.lines.find((c) => c.id === l.id)?.classes, ...(figures ? { in: sum(figures.in), out: sum(figures.out) } : {}) };
    }),
  };
}

/**
 * Places a source's zones and lines on a `width × height` frame with the pipeline's own
 * analyzer (fractions scaled, pixel points checked against the frame: a config error names the
 * field). `path` is the source's place in the config, e.g. `sources[0]`, for those errors.
 */
export function placeScene(source: SourceConfig, labels: readonly string[], width: number, height: number, path = 'source'): { scene: Scene; analyzer: SourceAnalyzer } {
  const analyzer = new SourceAnalyzer(source, labels, path);
  analyzer.init(width, height);
  return { scene: sceneOf(analyzer), analyzer };
}
