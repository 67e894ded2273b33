import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { from, lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResult } from '../../src/analytics/analyze.js';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import type { Detector } from '../../src/inference/detector.js';
import type { SourceContext } from '../../src/pipeline/pipeline.js';
import { runPipeline } from '../../src/pipeline/run.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { newSourceStats } from '../../src/sources/stats.js';
import { crowdRule, minBoxArea } from '../../pipelines/custom-operator.js';
import { MODEL_RUN_TIMEOUT_MS, ROOT, runCommand } from '../helpers/cli.js';
import { fakeDetector } from '../helpers/fake-session.js';

const labels = ['person', 'car'];
const ctx = (): SourceContext => ({ config: parseConfigText('name: t\nsources: [{ id: cam, uri: x.mp4 }]', PipelineSchema, 't.yaml', {}).sources[0], stats: newSourceStats('cam'), labels });

/** A result at `pts` seconds with boxes `[x1, y1, x2, y2, classId]`. */
function result(pts: number, boxes: number[][]): FrameResult {
  const d = new Detections(new Float32Array(boxes.flatMap((b) => b.slice(0, 4))), new Float32Array(boxes.map(() => 0.9)), new Int32Array(boxes.map((b) => b[4])));
  const frame = { source: 'cam', seq: Math.round(pts * 10), pts, data: Buffer.alloc(0), letterbox: letterbox(640, 480, 640, 480, 'top-left'), stamps: emptyStamps(1), producedBy: 'captured' as const, release: () => {} };
  return { frame, detections: d, dropped: 0, alerts: [] };
}

describe('the README extension example (pipelines/custom-operator.ts)', () => {
  it('crowdRule: two people or more raise one alert naming the first person, then none until the cooldown has passed', async () => {
    const person = (x: number) => [x, 0, x + 50, 100, 0];
    const car = [0, 0, 50, 50, 1];
    const inputs = [
      result(0, [person(0)]), // one person: nothing
      result(1, [car, person(10), person(100)]), // a crowd: alert, row 1 (the first person)
      result(2, [person(0), person(100)]), // in the cooldown
      result(12, [person(0), person(100), person(200)]), // cooldown over: alert
      result(13, [car, car]), // cars are not people
    ];
    const out = await lastValueFrom(from(inputs).pipe(crowdRule(2, 10)(ctx()), toArray()));
    expect(out.map((r) => r.alerts.map((a) => [a.rule, a.row, a.people]))).toEqual([[], [['crowd', 1, 2]], [], [['crowd', 0, 3]], []]);
    expect(out[1].alerts[0]).toMatchObject({ severity: 'warning', event: 'crowd.detected', message: 'cam: 2 people in view' });
  });

  it('minBoxArea drops boxes below the area and keeps the rest in order', async () => {
    const out = await lastValueFrom(from([result(0, [[0, 0, 10, 10, 0], [0, 0, 40, 40, 1], [5, 5, 6, 6, 0]])]).pipe(minBoxArea(24 * 24)(ctx()), toArray()));
    expect(Array.from(out[0].detections.classId)).toEqual([1]);
    expect(Array.from(out[0].detections.xyxy)).toEqual([0, 0, 40, 40]);
  });

  describe('through a whole run (fake model, real ffmpeg)', () => {
    let detector: Detector;
    let dir: string;
    beforeAll(async () => {
      ({ detector } = await fakeDetector());
      dir = mkdtempSync(join(tmpdir(), 'argus-ext-'));
      execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=64x64:rate=10', '-frames:v', '30', '-pix_fmt', 'yuv420p', join(dir, 'clip.mp4')]);
    });
    afterAll(() => detector?.release());

    it("an extension's alerts are published like a rule's: an id, a snapshot, on every sink", async () => {
      // The fake model sees one person in every frame: a "crowd" of one every second of video.
      const config = parseConfigText(`name: ext\nsources: [{ id: cam, uri: ${join(dir, 'clip.mp4')}, rate: fast }]\nsinks: { jsonl: { path: ${join(dir, 'out.jsonl')} } }`, PipelineSchema, 'ext.yaml', {});
      const summary = await runPipeline(config, { detector, extend: crowdRule(1, 1), status: false });
      expect(summary.frames).toBe(30);
      const lines = readFileSync(join(dir, 'out.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      // Snapshots render concurrently, so alerts reach the sinks in any order.
      const alerts = lines.filter((m) => m.type === 'alert').sort((a, b) => a.seq - b.seq);
      expect(alerts.map((a) => a.seq)).toEqual([0, 10, 20]);
      expect(alerts[0].alert).toMatchObject({ rule: 'crowd', event: 'crowd.detected', people: 1 });
      expect(alerts[0].alert.id).toMatch(/^cam:crowd:/);
      expect(alerts[0].alert.snapshot?.contentType).toBe('image/jpeg');
      expect(summary.alerts).toMatchObject({ raised: 3, published: 3 });
    });
  });

  it('run by a path with a space (here through a link): it runs, and a wrong flag or a missing pipeline ends with a coded error, not a stack trace', async () => {
    // Before, `import.meta.url === file://${argv[1]}` was false by such a path (the URL is
    // percent-encoded, the link resolved): the script did nothing and exited 0.
    const link = join(mkdtempSync(join(tmpdir(), 'argus-ext-link-')), 'my checkout');
    symlinkSync(ROOT, link);
    const tsx = resolve(ROOT, 'node_modules/.bin/tsx');
    const missing = await runCommand(tsx, [join(link, 'pipelines', 'custom-operator.ts'), 'no-such-pipeline.yaml']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim()).toBe('custom-operator: VAP_ERR_CONFIG_FILE: no-such-pipeline.yaml: cannot read (ENOENT)');
    const typo = await runCommand(tsx, [join(link, 'pipelines', 'custom-operator.ts'), '--max-frame', '3']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^custom-operator: VAP_ERR_USAGE: --max-frame: unexpected; usage: /);
  });

  it('the example runs as a program on the demo with the real model', async () => {
    const r = await runCommand(resolve(ROOT, 'node_modules/.bin/tsx'), ['pipelines/custom-operator.ts', 'pipelines/demo.yaml', '--max-frames', '25'], { ARGUS_DEMO_RATE: 'fast' });
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop()!);
    expect(summary.frames).toBe(25);
    // The side sink reported each whole second of video (25 frames at 10 fps: seconds 0 and 1).
    expect(r.stderr.match(/^\[people\] lobby: \d+$/gm)).toHaveLength(2);
  }, MODEL_RUN_TIMEOUT_MS);
});
