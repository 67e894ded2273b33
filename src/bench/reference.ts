import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { loadModelManifest, resolveModelFile } from '../assets/catalog.js';
import { PACKAGE_ROOT } from '../assets/paths.js';
import { PostprocessSchema } from '../config/schema.js';
import { ArgusError, ErrorCodes, type ErrorCode } from '../core/errors.js';
import { unletterboxXyxy } from '../core/geometry.js';
import type { Detector } from '../inference/detector.js';
import { Candidates } from '../models/decoder.js';
import { selectDetections } from '../postprocess/select.js';
import { checkYoloxDemo } from './peer.js';

/**
 * The comparison of argus with the official YOLOX ONNX Runtime demo (issue 14): what
 * scripts/reference/yolox_reference.py and `argus detect --json` print, the matching of one
 * against the other, and the arguments both are run with (test/reference/yolox-reference.test.ts
 * and scripts/bench-reference.ts).
 */

/** One detection in source pixels. */
export interface RefDetection {
  classId: number;
  label?: string;
  score: number;
  box: [number, number, number, number];
}

/** One image's detections. */
export interface FileDetections {
  file: string;
  width: number;
  height: number;
  /** The reference's letterbox scale (preproc's ratio). */
  ratio?: number;
  detections: RefDetection[];
}

/** IoU at or above which a matched pair agrees (same class, the box roughly in place). */
export const AGREE_IOU = 0.5;
/** IoU at or above which, with a score within EXACT_SCORE, a matched pair is exact. */
export const EXACT_IOU = 0.9;
/** Largest score difference of an exact pair. */
export const EXACT_SCORE = 0.01;

/** A reference detection and the argus detection matched to it. */
export interface MatchedPair {
  reference: RefDetection;
  argus: RefDetection;
  iou: number;
  /** argus's score minus the reference's. */
  scoreDiff: number;
  exact: boolean;
}

/** What differs on one image: matched pairs that are not exact, reference detections argus lacks, argus detections the reference lacks. */
export interface FileDifferences {
  file: string;
  /** Set when the image is in only one of the two outputs. */
  absentFrom?: 'argus' | 'reference';
  inexact: MatchedPair[];
  missing: RefDetection[];
  extra: RefDetection[];
}

export interface ReferenceCounts {
  /** Reference detections (the denominator of the percentages). */
  reference: number;
  argus: number;
  /** Matched pairs with IoU ≥ 0.9 and |score difference| ≤ 0.01. */
  exact: number;
  /** Matched pairs (same class, IoU ≥ 0.5), exact ones included. */
  agree: number;
  /** Reference detections with no agreeing argus detection. */
  missing: number;
  /** argus detections matched to no reference detection. */
  extra: number;
}

export interface ReferenceComparison {
  counts: ReferenceCounts;
  /** Images with any difference, in the reference's order (then argus-only images). */
  files: FileDifferences[];
}

/** IoU of two x1 y1 x2 y2 boxes (continuous coordinates; 0 when either has no area). */
export function boxIou(a: readonly number[], b: readonly number[]): number {
  const iw = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const ih = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (!(iw > 0 && ih > 0)) return 0;
  const inter = iw * ih;
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return union > 0 ? inter / union : 0;
}

/**
 * Matches one image's detections one to one: reference detections are taken by descending
 * score, and each takes the still unmatched argus detection of the same class with the highest
 * IoU, if that IoU is at least AGREE_IOU; else it is missing. argus detections left over are
 * extra.
 */
export function matchDetections(reference: readonly RefDetection[], argus: readonly RefDetection[]): { pairs: MatchedPair[]; missing: RefDetection[]; extra: RefDetection[] } {
  const taken = new Array<boolean>(argus.length).fill(false);
  const order = reference.map((_, i) => i).sort((i, j) => reference[j].score - reference[i].score || i - j);
  const pairs: MatchedPair[] = [];
  const missing: RefDetection[] = [];
  for (const i of order) {
    const r = reference[i];
    let best = -1;
    let bestIou = 0;
    for (let j = 0; j < argus.length; j++) {
      if (taken[j] || argus[j].classId !== r.classId) continue;
      const iou = boxIou(r.box, argus[j].box);
      if (iou > bestIou) {
        bestIou = iou;
        best = j;
      }
    }
    if (best < 0 || bestIou < AGREE_IOU) {
      missing.push(r);
      continue;
    }
    taken[best] = true;
    const a = argus[best];
    const scoreDiff = a.score - r.score;
    pairs.push({ reference: r, argus: a, iou: bestIou, scoreDiff, exact: bestIou >= EXACT_IOU && Math.abs(scoreDiff) <= EXACT_SCORE });
  }
  return { pairs, missing, extra: argus.filter((_, j) => !taken[j]) };
}

/** A detection with its box clamped to the picture (0…width, 0…height), as argus maps boxes back to source pixels. */
export function clampToPicture(d: RefDetection, width: number, height: number): RefDetection {
  const [x1, y1, x2, y2] = d.box;
  const cx = (v: number) => Math.min(Math.max(v, 0), width);
  const cy = (v: number) => Math.min(Math.max(v, 0), height);
  return { ...d, box: [cx(x1), cy(y1), cx(x2), cy(y2)] };
}

/**
 * Compares argus's detections with the reference's, image by image (matched by `file`). The
 * demo leaves boxes past the picture's edge as the model put them; argus clamps them to the
 * picture, so reference boxes are clamped the same way before matching.
 */
export function compareWithReference(reference: readonly FileDetections[], argus: readonly FileDetections[]): ReferenceComparison {
  const byFile = new Map(argus.map((f) => [f.file, f]));
  const counts: ReferenceCounts = { reference: 0, argus: 0, exact: 0, agree: 0, missing: 0, extra: 0 };
  const files: FileDifferences[] = [];
  const seen = new Set<string>();
  for (const ref of reference) {
    seen.add(ref.file);
    const mine = byFile.get(ref.file);
    const m = matchDetections(
      ref.detections.map((d) => clampToPicture(d, ref.width, ref.height)),
      mine?.detections ?? [],
    );
    counts.reference += ref.detections.length;
    counts.argus += mine?.detections.length ?? 0;
    counts.agree += m.pairs.length;
    counts.exact += m.pairs.filter((p) => p.exact).length;
    counts.missing += m.missing.length;
    counts.extra += m.extra.length;
    const inexact = m.pairs.filter((p) => !p.exact);
    if (!mine || inexact.length || m.missing.length || m.extra.length) files.push({ file: ref.file, ...(mine ? {} : { absentFrom: 'argus' as const }), inexact, missing: m.missing, extra: m.extra });
  }
  for (const f of argus) {
    if (seen.has(f.file)) continue;
    counts.argus += f.detections.length;
    counts.extra += f.detections.length;
    files.push({ file: f.file, absentFrom: 'reference', inexact: [], missing: [], extra: [...f.detections] });
  }
  return { counts, files };
}

/** A share of the reference detections, 0–100 (100 when there are none). */
export function percentOf(n: number, counts: ReferenceCounts): number {
  return counts.reference === 0 ? 100 : (100 * n) / counts.reference;
}

function describe(d: RefDetection, labels: readonly string[]): string {
  const name = d.label ?? labels[d.classId] ?? `class ${d.classId}`;
  return `${name} ${d.score.toFixed(3)} [${d.box.map((v) => v.toFixed(1)).join(', ')}]`;
}

/** The differences, one block per image, for a test's failure message or the bench's report. */
export function formatDifferences(c: ReferenceComparison, labels: readonly string[] = []): string {
  const lines: string[] = [];
  for (const f of c.files) {
    lines.push(`${f.file}${f.absentFrom ? ` (absent from ${f.absentFrom}'s output)` : ''}:`);
    for (const p of f.inexact) lines.push(`  inexact  reference ${describe(p.reference, labels)}  argus ${describe(p.argus, labels)}  IoU ${p.iou.toFixed(3)}, score ${p.scoreDiff >= 0 ? '+' : ''}${p.scoreDiff.toFixed(3)}`);
    for (const d of f.missing) lines.push(`  missing  reference ${describe(d, labels)}`);
    for (const d of f.extra) lines.push(`  extra    argus ${describe(d, labels)}`);
  }
  return lines.join('\n');
}

/** One line of figures: exact %, agree %, missing, extra. */
export function formatCounts(c: ReferenceCounts): string {
  return `exact ${c.exact}/${c.reference} (${percentOf(c.exact, c).toFixed(1)} %), agree ${c.agree}/${c.reference} (${percentOf(c.agree, c).toFixed(1)} %), missing ${c.missing}, extra ${c.extra} (argus ${c.argus} detections)`;
}

const Box = z.tuple([z.number(), z.number(), z.number(), z.number()]);
const Detection = z.object({ classId: z.number().int(), label: z.string().optional(), score: z.number(), box: Box });
const ReferenceOutput = z.object({ files: z.array(z.object({ file: z.string(), width: z.number(), height: z.number(), ratio: z.number().optional(), detections: z.array(Detection) })) });
const DetectOutput = z.object({
  model: z.string().optional(),
  files: z.array(z.object({ file: z.string(), width: z.number(), height: z.number(), frames: z.array(z.object({ index: z.number(), pts: z.number().nullable().optional(), detections: z.array(Detection) })) })),
});

function parseJson<T>(text: string, schema: z.ZodType<T>, what: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ArgusError(ErrorCodes.CONFIG, `${what}: not JSON (${(e as Error).message}): ${text.slice(0, 200)}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new ArgusError(ErrorCodes.CONFIG, `${what}: unexpected output: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** The JSON scripts/reference/yolox_reference.py prints. */
export function parseReferenceOutput(text: string): FileDetections[] {
  return parseJson(text, ReferenceOutput, 'scripts/reference/yolox_reference.py').files as FileDetections[];
}

/** The JSON `argus detect --json` prints, one entry per still image (its one frame). */
export function parseDetectOutput(text: string): FileDetections[] {
  return parseJson(text, DetectOutput, 'argus detect --json').files.map((f) => {
    if (f.frames.length !== 1) throw new ArgusError(ErrorCodes.CONFIG, `argus detect --json: ${f.file}: ${f.frames.length} frames; the reference compares still images (one frame each)`);
    return { file: f.file, width: f.width, height: f.height, detections: f.frames[0].detections as RefDetection[] };
  });
}

/** The reference script. */
export const REFERENCE_SCRIPT = join(PACKAGE_ROOT, 'scripts', 'reference', 'yolox_reference.py');

/** What the reference is run with: argus's values for the model. */
export interface ReferenceSettings {
  /** The environment scripts/peers/setup.sh made (its python, its yolox-demo folder). */
  venv: string;
  model: string;
  /** The model's input, as the manifest's preprocess.height and width. */
  inputHeight: number;
  inputWidth: number;
  score: number;
  /** argus's postprocess.iouThreshold. */
  iouThreshold: number;
  /** argus's postprocess.classAgnostic. */
  classAgnostic: boolean;
  /** A folder where the reference also writes each image's input tensor (N.f32, N the image's index). */
  tensors?: string;
}

/** The command (python, arguments) that runs the reference on `files`. */
export function referenceCommand(s: ReferenceSettings, files: readonly string[]): [string, string[]] {
  return [
    join(s.venv, 'bin', 'python'),
    [REFERENCE_SCRIPT, '--demo', join(s.venv, 'yolox-demo'), '--model', s.model, '--score', String(s.score), '--input-shape', `${s.inputHeight},${s.inputWidth}`, '--nms', String(s.iouThreshold), ...(s.classAgnostic ? ['--class-agnostic'] : []), ...(s.tensors ? ['--tensors', s.tensors] : []), ...files],
  ];
}

/** Runs a command; its stdout, or an error (`code`) with the command and the end of its stderr. */
function output(cmd: string, args: readonly string[], code: ErrorCode, what: string, log?: (m: string) => void): Promise<string> {
  return new Promise((res, rej) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    p.stderr.setEncoding('utf8').on('data', (t: string) => {
      stderr += t;
      for (const line of t.split('\n')) if (line.trim()) log?.(line.trim());
    });
    p.on('error', (e) => rej(new ArgusError(code, `${what}: ${cmd} could not start: ${e.message}`)));
    p.on('close', (status) => (status === 0 ? res(stdout) : rej(new ArgusError(code, `${what} exited with ${status}: ${stderr.trim().split('\n').slice(-8).join('\n')}`))));
  });
}

/**
 * The reference's settings for `manifestRef` at argus's defaults: the Python environment of
 * scripts/peers/setup.sh (made from PyPI on first use, kept under ARGUS_CACHE; pip's messages
 * go to `log`), its demo sources checked against the official digests, the model file argus
 * resolves (mirror, cache, download), the manifest's input size and argus's default NMS IoU and
 * class-awareness (postprocess defaults). The score is the caller's.
 */
export async function prepareReference(manifestRef = 'yolox-nano', log?: (m: string) => void): Promise<Omit<ReferenceSettings, 'score'> & { labels: string[] }> {
  const { manifest } = await loadModelManifest(manifestRef);
  const model = await resolveModelFile(manifest, { log });
  const setup = join(PACKAGE_ROOT, 'scripts', 'peers', 'setup.sh');
  const venv = (await output('bash', [setup], ErrorCodes.ASSET_DOWNLOAD, 'scripts/peers/setup.sh', log)).trim().split('\n').pop()!;
  await checkYoloxDemo(join(venv, 'yolox-demo'));
  const post = PostprocessSchema.parse({});
  return { venv, model, inputHeight: manifest.preprocess.height, inputWidth: manifest.preprocess.width, iouThreshold: post.iouThreshold, classAgnostic: post.classAgnostic, labels: manifest.labels ?? [] };
}

/** The reference's detections on `files` (still images). */
export async function runReference(s: ReferenceSettings, files: readonly string[]): Promise<FileDetections[]> {
  const [python, args] = referenceCommand(s, files);
  return parseReferenceOutput(await output(python, args, ErrorCodes.MODEL_LOAD, 'scripts/reference/yolox_reference.py'));
}

/**
 * argus's model run, decoding and NMS (postprocess defaults, `score`) on the reference's own
 * input tensors (written by runReference with `tensors`), boxes mapped back with the
 * reference's ratio and clamped to the picture as argus does: what argus detects when its
 * pre-processing is taken out of the comparison.
 */
export async function detectOnReferenceTensors(detector: Detector, reference: readonly FileDetections[], tensors: string, score: number): Promise<FileDetections[]> {
  const post = PostprocessSchema.parse({ scoreThreshold: score });
  const decoder = detector.decoder;
  const candidates = new Candidates(decoder.maxCandidates);
  const input = detector.createInput();
  const out: FileDetections[] = [];
  for (const [i, f] of reference.entries()) {
    if (f.ratio === undefined) throw new ArgusError(ErrorCodes.CONFIG, `scripts/reference/yolox_reference.py: ${f.file}: no ratio in its output`);
    const bytes = await readFile(join(tensors, `${i}.f32`));
    if (bytes.byteLength !== input.data.byteLength) throw new ArgusError(ErrorCodes.MODEL_SHAPE, `${join(tensors, `${i}.f32`)}: ${bytes.byteLength} bytes, the model's input is ${input.data.byteLength}`);
    input.data.set(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
    const output = await detector.run(input);
    const n = decoder.decode(output.outputs, output.batchIndex, post.scoreThreshold, candidates);
    const d = selectDetections(candidates, n, { ...post, iouThreshold: decoder.nmsInGraph ? 1 : post.iouThreshold, numClasses: detector.labels.length });
    const lb = { srcWidth: f.width, srcHeight: f.height, dstWidth: detector.inputWidth, dstHeight: detector.inputHeight, scale: f.ratio, scaledWidth: Math.trunc(f.width * f.ratio), scaledHeight: Math.trunc(f.height * f.ratio), padX: 0, padY: 0 };
    unletterboxXyxy(d.xyxy, d.length, lb);
    const detections: RefDetection[] = [];
    for (let r = 0; r < d.length; r++) detections.push({ classId: d.classId[r], label: detector.labels[d.classId[r]], score: d.confidence[r], box: [d.xyxy[r * 4], d.xyxy[r * 4 + 1], d.xyxy[r * 4 + 2], d.xyxy[r * 4 + 3]] });
    out.push({ file: f.file, width: f.width, height: f.height, detections });
  }
  return out;
}

/** The arguments of bin/argus.js that run argus on `files` at `score`. */
export function detectArgs(files: readonly string[], score: number): string[] {
  return ['detect', '--json', '--score', String(score), ...files];
}

/** Score thresholds compared: the default (0.3, where ≥ 99 % must be exact) and 0.5 (no miss, no extra). */
export const REFERENCE_SCORES = [0.3, 0.5] as const;

export interface BenchReferenceOptions {
  /** Write the figures there as JSON. */
  json?: string;
  /** Folders of images (*.jpg, *.jpeg, *.png) compared besides the shared images. */
  images: string[];
}

export const BENCH_REFERENCE_USAGE = 'usage: npm run bench:reference -- [--json FILE] [--images DIR]…';

/** Arguments of scripts/bench-reference.ts. */
export function parseBenchReferenceArgs(argv: readonly string[]): BenchReferenceOptions {
  const o: BenchReferenceOptions = { images: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new ArgusError(ErrorCodes.CONFIG, `bench:reference: ${a} needs a value; ${BENCH_REFERENCE_USAGE}`);
      return v;
    };
    if (a === '--json') o.json = value();
    else if (a === '--images') o.images.push(value());
    else throw new ArgusError(ErrorCodes.CONFIG, `bench:reference: unknown argument ${a}; ${BENCH_REFERENCE_USAGE}`);
  }
  return o;
}
