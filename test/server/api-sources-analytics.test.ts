/** /api/sources carries each source's run counts: zone entries, line crossings, alerts per rule, and what a filtered line saw instead. */
import { afterEach, describe, expect, it } from 'vitest';
import { SourceAnalyzer } from '../../src/analytics/analyzer.js';
import { SourceSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import type { Pipeline } from '../../src/pipeline/pipeline.js';
import { startHttpServer } from '../../src/server/http.js';
import type { Metrics } from '../../src/server/metrics.js';
import { RateMeter, registerRoutes } from '../../src/server/routes.js';
import { newSourceStats } from '../../src/sources/stats.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

const LABELS = ['person', 'car', 'cell phone'];

describe('/api/sources: run counts per source', () => {
  it('lists zone and line counts, alerts per rule and the note for a filtered line that counted nothing', async () => {
    const cfg = SourceSchema.parse({
      id: 'road',
      uri: '/x.mp4',
      lines: [{ id: 'gate', from: [1, 0.5], to: [0, 0.5], classes: ['car'], anchor: 'center' }],
      zones: [{ id: 'lot', polygon: [[0, 0], [1, 0], [1, 1], [0, 1]] }],
      rules: [{ id: 'cars', type: 'line-cross', line: 'gate' }, { id: 'in-lot', type: 'zone-enter', zone: 'lot' }],
    });
    const analyzer = new SourceAnalyzer(cfg, LABELS, 'sources[0]');
    analyzer.init(640, 480);
    // A "cell phone" (a car seen from above) moves down across the gate: track 1, 20 frames at 10 fps.
    for (let k = 0; k < 20; k++) {
      const y = 150 + k * 10;
      analyzer.process(new Detections(Float32Array.of(300, y - 20, 340, y + 20), Float32Array.of(0.9), Int32Array.of(2), Int32Array.of(1)), k * 100);
    }
    const stats = ['road', 'plain'].map((id) => Object.assign(newSourceStats(id), { state: 'streaming', framesOut: 20, width: 640, height: 480, fps: 10 }));
    const pipeline = { stats, detector: { manifest: { name: 'm', version: '1' }, provider: 'cpu', stuckRun: () => undefined } } as unknown as Pipeline;
    const rates = new RateMeter(() => []);
    cleanups.push(() => rates.close());
    const s = await startHttpServer({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => s.close());
    registerRoutes(s, { pipeline, metrics: {} as Metrics, rates, geometry: () => ({ zones: [], lines: [] }), analytics: (id) => (id === 'road' ? analyzer.report() : undefined) });
    const body = (await (await fetch(`http://127.0.0.1:${s.port}/api/sources`)).json()) as { sources: { id: string; analytics?: unknown }[] };
    const road = body.sources.find((x) => x.id === 'road')!;
    expect(road.analytics).toEqual({
      zones: { lot: { entered: 1, exited: 0, occupancy: 1, reidentified: 0, alerts: { 'in-lot': 1 } } },
      lines: { gate: { classes: ['car'], in: 0, out: 0, byClass: { in: {}, out: {} }, alerts: { cars: 0 }, seenInstead: { 'cell phone': 1 } } },
      alerts: { cars: 0, 'in-lot': 1 },
      notes: ["line 'gate' (classes: car) counted 0; seen crossing instead: cell phone ×1"],
    });
    expect(body.sources.find((x) => x.id === 'plain')!.analytics).toBeUndefined();
  });
});
