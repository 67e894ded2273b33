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
 * differences themselves go to stderr.
 */
import { execFile } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../src/assets/paths.js';
import { isArgusError } from '../src/core/errors.js';
import {
  compareWithReference,
  detectArgs,
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

  const results: { images: string; files: number; score: number; counts: ReferenceCounts; exactPct: number; agreePct: number; filesDiffering: number }[] = [];
  for (const set of sets) {
    if (!set.files.length) {
      log(`${set.name}: no images`);
      continue;
    }
    for (const score of REFERENCE_SCORES) {
      const reference = await runReference({ ...ref, score }, set.files);
      const argus = parseDetectOutput(await argusDetect(set.files, score));
      const c = compareWithReference(reference, argus);
      const diff = formatDifferences(c, ref.labels);
      if (diff) process.stderr.write(`${set.name} at score ${score}:\n${diff}\n`);
      console.log(`${set.name} (${set.files.length} images), score ${score}: ${formatCounts(c.counts)}; ${c.files.length} image(s) differ`);
      results.push({ images: set.name, files: set.files.length, score, counts: c.counts, exactPct: percentOf(c.counts.exact, c.counts), agreePct: percentOf(c.counts.agree, c.counts), filesDiffering: c.files.length });
    }
  }
  if (o.json) await writeFile(o.json, `${JSON.stringify({ reference: { inputHeight: ref.inputHeight, inputWidth: ref.inputWidth, iouThreshold: ref.iouThreshold, classAgnostic: ref.classAgnostic }, results }, null, 2)}\n`);
}

main().catch((e: unknown) => {
  log(isArgusError(e) ? `${e.code}: ${e.message}` : String((e as Error)?.stack ?? e));
  process.exitCode = 1;
});
