/**
 * The refusal at a camera's first frame as the real pipeline makes it: zones in pixels of a
 * larger picture than the camera gives. The analyzer refuses them at the first frame and the
 * pipeline's isolate ends the chain as a source that failed (the error in its stats, the chain
 * complete, no error out of attach). The worker reads that error from its source's stats
 * (worker-unusable.test.ts drives the same with a fake pipeline on a virtual clock). Real ffmpeg,
 * fake inference session, no broker.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';
import type { Detector } from '../../src/inference/detector.js';
import { createPipeline } from '../../src/pipeline/pipeline.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { FAKE_SIZE, fakeDetector } from '../helpers/fake-session.js';
import { drivenWorker, type DrivenInternals } from '../helpers/worker.js';

let detector: Detector;
beforeAll(async () => {
  ({ detector } = await fakeDetector());
});
afterAll(() => detector?.release());

describe('Worker with the real pipeline: a zone outside the picture', () => {
  it('is refused as the record\'s at its first frame: said once (one error line, naming the field), not started again, its slot not reported', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'argus-outside-'));
    const clip = join(dir, 'clip.mp4');
    const S = FAKE_SIZE;
    execFileSync(defaultFfmpegPath(), ['-loglevel', 'error', '-f', 'lavfi', '-i', `testsrc=size=${S}x${S}:rate=10`, '-frames:v', '30', '-pix_fmt', 'yuv420p', clip]);
    const lines: { msg: string; level?: string }[] = [];
    const { w, i, settle, write } = await drivenWorker<DrivenInternals & { counters: { claims: number } }>({ log: (msg, _f, level) => lines.push({ msg, level }) });
    (i.membership as { requestRebalance: () => Promise<void> }).requestRebalance = async () => {};
    const cfg = parseConfigText(`name: t\nmodel: { path: fake.onnx }\nsources:\n  - id: cam\n    uri: /nonexistent.mp4\n`, PipelineSchema, 'test.yaml', {});
    // The pipeline as runWorker makes it: its log is the worker's, and the failures the worker says itself are left to it.
    const p = await createPipeline({ ...cfg, sources: [{ ...cfg.sources[0], enabled: false }] }, { detector, log: (msg, _f, level) => lines.push({ msg, level }), failureSaid: (id, e) => w.failureSaid(id, e) });
    i.pipeline = p;
    write('yard', { uri: clip, rate: 'fast', zones: [{ id: 'lane', units: 'pixel', polygon: [[0, 0], [S * 4, 0], [S * 4, S * 4]] }] });
    await settle();
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && !lines.some((l) => /runs nowhere: its record cannot be used on any worker/.test(l.msg))) {
      await new Promise((r) => setTimeout(r, 50));
      await settle();
    }
    // One error line, naming the field (before, the pipeline's "source yard failed: …" came first: two lines of one refusal).
    const said = lines.filter((l) => l.level === 'error' && /yard/.test(l.msg));
    expect(said.map((l) => l.msg)).toEqual([expect.stringMatching(/camera yard \(slot 0\) runs nowhere: its record cannot be used on any worker: camera yard\.zones\[0\]\.polygon\[1\]: point \[\d+, 0\] is outside the \d+x\d+ frame/)]);
    expect(i.counters.claims).toBe(1);
    expect(w.memberInfo().unreachable).toEqual([]);
    expect(w.metricsState().notRun).toEqual({ refusedHere: 0, refusedRecord: 1, envMissing: 0 });
    await p.close();
  }, 30_000);
});
