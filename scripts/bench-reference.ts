/**
 * argus against the official YOLOX ONNX Runtime demo on still images (issue 14, point 2). Prints
 * figures; asserts nothing (test/reference/yolox-reference.test.ts asserts the targets).
 *
 *   npm run bench:reference -- [--json FILE] [--images DIR]…
 *
 * The images: the shared ones ($ARGUS_MIRROR/images/*.jpg, ../shared beside the checkout when
 * ARGUS_MIRROR is unset) and every *.jpg, *.jpeg and *.png in each --images folder. The
 * reference is scripts/reference/yolox_reference.py in the Python environment of
 * scripts/peers/setup.sh (the demo's preproc, demo_postprocess and multiclass_nms; Python
 * onnxruntime), with argus's input size, NMS IoU and class-awareness; argus runs as a user runs
 * it, `node bin/argus.js detect --json --score S FILE…`. At each score (0.3, 0.5): exact (same
 * class, IoU ≥ 0.9, |score difference| ≤ 0.01) and agree (same class, IoU ≥ 0.5) as shares of
 * the reference detections, missing and extra detections, images with a difference; the
 * differences themselves go to stderr. A control line per set: argus's inference, decoding and
 * NMS (in this process) on the reference's own input tensors, so that what differs above and
 * not there is argus's pre-processing.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadModelManifest } from '../src/assets/catalog.js';
import { PACKAGE_ROOT } from '../src/assets/paths.js';
import { isArgusError } from '../src/core/errors.js';
import { Detector } from '../src/inference/detector.js';
import {
  compareWithReference,
  detectArgs,
  detectOnReferenceTensors,
  formatCounts,
  formatDifferences,
  parseBenchReferenceArgs,
  parseDetectOutput,
  percentOf,
  prepareReference,
  REFERENCE_SCORES,
  runReference,
  type ReferenceCounts,
} from '../src/bench/reference.js';

const log = (m: string) => process.stderr.write(`bench:reference: ${m}\n`);

async function imagesIn(dir: string, pattern: RegExp): Promise<string[]> {
  return (await readdir(dir))
    .filter((f) => pattern.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** `argus detect --json` on the files, as a user runs it. */
function argusDetect(files: readonly string[], score: number): Promise<string> {
  return new Promise((res, rej) =>
    execFile(process.execPath, [join(PACKAGE_ROOT, 'bin', 'argus.js'), ...detectArgs(files, score)], { maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? rej(new Error(`argus detect failed (${err.message.split('\n')[0]}): ${stderr.trim().split('\n').slice(-8).join('\n')}`)) : res(stdout),
    ),
  );
}

async function main(): Promise<void> {
  const o = parseBenchReferenceArgs(process.argv.slice(2));
  const mirror = resolve(process.env.ARGUS_MIRROR ?? join(PACKAGE_ROOT, '..', 'shared'));
  process.env.ARGUS_MIRROR = mirror;
  const sets: { name: string; files: string[] }[] = [{ name: 'shared', files: await imagesIn(join(mirror, 'images'), /\.jpg$/i) }];
  for (const dir of o.images) sets.push({ name: dir, files: await imagesIn(resolve(dir), /\.(jpe?g|png)$/i) });

  log('Python environment (scripts/peers/setup.sh)');
  const ref = await prepareReference('yolox-nano', log);
  log(`reference: ${ref.inputHeight}×${ref.inputWidth} input, NMS IoU ${ref.iouThreshold}, ${ref.classAgnostic ? 'class-agnostic' : 'class-aware'}`);

  const detector = await Detector.load((await loadModelManifest('yolox-nano')).manifest, ref.model, { providers: ['cpu'], intraOpThreads: 1, warmupRuns: 0 });
  const tensors = await mkdtemp(join(tmpdir(), 'argus-bench-reference-'));
  const results: { images: string; files: number; score: number; run: 'argus detect' | 'reference tensors'; counts: ReferenceCounts; exactPct: number; agreePct: number; filesDiffering: number }[] = [];
  try {
    for (const set of sets) {
      if (!set.files.length) {
        log(`${set.name}: no images`);
        continue;
      }
      for (const score of REFERENCE_SCORES) {
        const reference = await runReference({ ...ref, score, tensors }, set.files);
        const runs = [
          { run: 'argus detect' as const, argus: parseDetectOutput(await argusDetect(set.files, score)) },
          { run: 'reference tensors' as const, argus: await detectOnReferenceTensors(detector, reference, tensors, score) },
        ];
        for (const { run, argus } of runs) {
          const c = compareWithReference(reference, argus);
          const diff = formatDifferences(c, ref.labels);
          if (diff) process.stderr.write(`${set.name} at score ${score}, ${run}:\n${diff}\n`);
          console.log(`${set.name} (${set.files.length} images), score ${score}, ${run}: ${formatCounts(c.counts)}; ${c.files.length} image(s) differ`);
          results.push({ images: set.name, files: set.files.length, score, run, counts: c.counts, exactPct: percentOf(c.counts.exact, c.counts), agreePct: percentOf(c.counts.agree, c.counts), filesDiffering: c.files.length });
        }
      }
    }
  } finally {
    await detector.release();
    await rm(tensors, { recursive: true, force: true });
  }
  if (o.json) await writeFile(o.json, `${JSON.stringify({ reference: { inputHeight: ref.inputHeight, inputWidth: ref.inputWidth, iouThreshold: ref.iouThreshold, classAgnostic: ref.classAgnostic }, results }, null, 2)}\n`);
}

main().catch((e: unknown) => {
  log(isArgusError(e) ? `${e.code}: ${e.message}` : String((e as Error)?.stack ?? e));
  process.exitCode = 1;
});
