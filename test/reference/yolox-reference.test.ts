import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelManifest } from '../../src/assets/catalog.js';
import {
  compareWithReference,
  detectArgs,
  detectOnReferenceTensors,
  formatCounts,
  formatDifferences,
  parseDetectOutput,
  percentOf,
  prepareReference,
  runReference,
  type ReferenceComparison,
} from '../../src/bench/reference.js';
import { Detector } from '../../src/inference/detector.js';
import { MIRROR } from '../helpers/assets.js';
import { ARGUS, MODEL_RUN_TIMEOUT_MS, runCommand } from '../helpers/cli.js';

/**
 * argus against the official YOLOX ONNX Runtime demo (issue 14, point 2): the demo's preproc,
 * demo_postprocess and multiclass_nms with Python onnxruntime (scripts/reference/yolox_reference.py,
 * in the environment scripts/peers/setup.sh makes from PyPI) and `argus detect --json`, both on
 * the shared images with the same model file, input size, NMS IoU and class-awareness.
 */
const FILES = readdirSync(join(MIRROR, 'images'))
  .filter((f) => f.endsWith('.jpg'))
  .sort()
  .map((f) => join(MIRROR, 'images', f));

let ref: Awaited<ReturnType<typeof prepareReference>>;

// On a fresh machine the Python environment is a pip install from PyPI (1–3 min, longer on a busy
// machine); after that it is reused from ARGUS_CACHE.
beforeAll(async () => {
  ref = await prepareReference('yolox-nano', (m) => console.log(`reference setup: ${m}`));
}, MODEL_RUN_TIMEOUT_MS);

function report(c: ReferenceComparison, score: number): string {
  return `score ${score}: ${formatCounts(c.counts)}\n${formatDifferences(c, ref.labels)}`;
}

async function compareAt(score: number): Promise<{ c: ReferenceComparison; message: string }> {
  const reference = await runReference({ ...ref, score }, FILES);
  const run = await runCommand('node', [ARGUS, ...detectArgs(FILES, score)]);
  expect(run.code, `argus detect failed:\n${run.stderr}`).toBe(0);
  const c = compareWithReference(reference, parseDetectOutput(run.stdout));
  // Without reference detections on every image the figures would say nothing.
  expect(reference.map((f) => f.file)).toEqual(FILES);
  expect(c.counts.reference).toBeGreaterThan(FILES.length);
  return { c, message: report(c, score) };
}

describe('argus matches the official YOLOX ONNX Runtime demo on the shared images', () => {
  it('has the shared images to compare', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(10);
  });

  // The control: with pre-processing taken out (argus runs on the reference's own input
  // tensors), argus's inference, decoding and NMS must give the reference's detections, so a
  // failure below is argus's pre-processing (or the CLI), not the comparison.
  describe('on the reference input tensors', () => {
    let detector: Detector;
    let tensors: string;
    beforeAll(async () => {
      tensors = mkdtempSync(join(tmpdir(), 'argus-reference-'));
      detector = await Detector.load((await loadModelManifest('yolox-nano')).manifest, ref.model, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 });
    }, MODEL_RUN_TIMEOUT_MS);
    afterAll(async () => {
      await detector?.release();
      if (tensors) rmSync(tensors, { recursive: true, force: true });
    });

    it('argus decodes exactly what the reference does: every detection exact at score 0.3', async () => {
      const reference = await runReference({ ...ref, score: 0.3, tensors }, FILES);
      const c = compareWithReference(reference, await detectOnReferenceTensors(detector, reference, tensors, 0.3));
      expect(c.counts.reference).toBeGreaterThan(FILES.length);
      expect(c.counts, report(c, 0.3)).toMatchObject({ exact: c.counts.reference, missing: 0, extra: 0 });
    });
  });

  it('at score 0.3, at least 99 % of the reference detections are exact (same class, IoU ≥ 0.9, score within 0.01)', async () => {
    const { c, message } = await compareAt(0.3);
    expect(percentOf(c.counts.exact, c.counts), message).toBeGreaterThanOrEqual(99);
  });

  it('at score 0.5, no reference detection is missing and argus has none extra', async () => {
    const { c, message } = await compareAt(0.5);
    expect({ missing: c.counts.missing, extra: c.counts.extra }, message).toEqual({ missing: 0, extra: 0 });
  });
});
