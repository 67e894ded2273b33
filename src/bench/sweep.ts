import { loadModelManifest, resolveImage, resolveModelFile } from '../assets/catalog.js';
import type { ExecutionProviderName } from '../config/schema.js';
import type { Detections } from '../core/detections.js';
import { iouXyxy } from '../core/geometry.js';
import type { LogFn } from '../core/log.js';
import { percentiles } from '../core/stats.js';
import { Detector } from '../inference/detector.js';
import { Candidates } from '../models/decoder.js';
import { selectDetections } from '../postprocess/select.js';
import { normalizeHwcToChw } from '../preprocess/normalize.js';
import { defaultFfmpegPath } from '../sources/ffmpeg-path.js';
import { ffmpegSource } from '../sources/ffmpeg-source.js';
import { firstValueFrom } from 'rxjs';
import { unletterboxXyxy } from '../core/geometry.js';

const r2 = (v: number) => Math.round(v * 100) / 100;
const PRECISIONS = { fp32: 'yolox-nano', fp16: 'yolox-nano-fp16', int8: 'yolox-nano-int8' } as const;
export type Precision = keyof typeof PRECISIONS;
const IMAGES = ['000000000139.jpg', '000000001268.jpg', '000000002532.jpg', '000000005193.jpg', '000000006460.jpg', '000000008844.jpg', '000000001818.jpg', '000000003845.jpg', '000000007108.jpg', '000000007888.jpg'];

async function load(name: string, provider: ExecutionProviderName, threads: number, maxBatch: number, workers = 1): Promise<Detector> {
  const { manifest } = await loadModelManifest(name);
  const path = await resolveModelFile(manifest);
  return Detector.load(manifest, path, { providers: [provider], intraOpThreads: threads, warmupRuns: 3, batch: { maxBatch, maxWaitMs: 1000 }, workers });
}

/** Letterboxed, normalised tensors of the shared COCO images, with their letterboxes. */
async function imageInputs(det: Detector) {
  const out = [];
  for (const f of IMAGES) {
    const path = await resolveImage(f);
    const frame = await firstValueFrom(
      ffmpegSource({
        id: f,
        input: { url: path, kind: 'file', rate: 'fast', loop: false },
        output: { width: det.inputWidth, height: det.inputHeight, pixelFormat: det.pixelFormat, align: det.align, padValue: det.padValue },
        ffmpegPath: defaultFfmpegPath(),
      }),
    );
    const input = det.createInput();
    normalizeHwcToChw(frame.data, det.inputWidth, det.inputHeight, input.data, det.normalize);
    out.push({ input, letterbox: frame.letterbox });
    frame.release();
  }
  return out;
}

async function detectAll(det: Detector): Promise<Detections[]> {
  const inputs = await imageInputs(det);
  const cand = new Candidates(det.decoder.maxCandidates);
  const res: Detections[] = [];
  for (const { input, letterbox } of inputs) {
    const o = await det.run(input);
    const n = det.decoder.decode(o.outputs, o.batchIndex, 0.3, cand);
    const d = selectDetections(cand, n, { iouThreshold: 0.45, preNmsTopK: 30_000, maxDetections: 100, classAgnostic: false });
    unletterboxXyxy(d.xyxy, d.length, letterbox);
    res.push(d);
  }
  return res;
}

/** Share of the reference's detections matched by `other` (same class, IoU ≥ 0.5), over all images. */
export function agreement(ref: Detections[], other: Detections[]): number {
  let total = 0;
  let hit = 0;
  ref.forEach((r, k) => {
    const o = other[k];
    for (let i = 0; i < r.length; i++) {
      total++;
      for (let j = 0; j < o.length; j++) {
        if (r.classId[i] === o.classId[j] && iouXyxy(r.xyxy, i, o.xyxy, j) >= 0.5) {
          hit++;
          break;
        }
      }
    }
  });
  return total ? hit / total : 1;
}

/** Raw latency of `runs` rounds of `batch` × `workers` images submitted together (one batch per worker session). */
async function timeRuns(det: Detector, batch: number, runs: number, workers = 1) {
  const images = batch * workers;
  const inputs = Array.from({ length: images }, () => det.createInput());
  for (const i of inputs) i.data.fill(114 * det.manifest.preprocess.scale);
  for (let k = 0; k < 5; k++) await Promise.all(inputs.map((i) => det.run(i)));
  const times: number[] = [];
  for (let k = 0; k < runs; k++) {
    const t = performance.now();
    await Promise.all(inputs.map((i) => det.run(i)));
    times.push(performance.now() - t);
  }
  const [p50, p99] = percentiles(times, [50, 99]);
  return { p50: r2(p50), p99: r2(p99), imagesPerSec: r2((images * 1000) / p50) };
}

export interface PrecisionReport {
  fp32: { p50: number; p99: number };
  int8: { p50: number; p99: number; speedup: number; agreement: number };
  fp16: { p50: number; p99: number; speedup: number; agreement: number };
}

/** INT8 and fp16 speed against fp32, side by side, and their agreement on the shared images. */
export async function precisionReport(threads: number, runs: number, log: LogFn): Promise<PrecisionReport> {
  const dets: Partial<Record<Precision, Detector>> = {};
  for (const p of Object.keys(PRECISIONS) as Precision[]) dets[p] = await load(PRECISIONS[p], 'cpu', threads, 1);
  log('bench: precision — detections on the shared images');
  const ref = await detectAll(dets.fp32!);
  const agree = { fp16: agreement(ref, await detectAll(dets.fp16!)), int8: agreement(ref, await detectAll(dets.int8!)) };
  // Blocks of 20 runs per model, rotated, so machine noise hits all three alike; within a block
  // only one session's intra-op threads are busy (ONNX Runtime's threads spin for a while after
  // a run, so run-by-run interleaving would make the sessions slow each other down).
  const t: Record<Precision, number[]> = { fp32: [], fp16: [], int8: [] };
  const input = dets.fp32!.createInput();
  input.data.fill(114);
  for (let block = 0; block < Math.ceil(runs / 20); block++) {
    for (const p of Object.keys(t) as Precision[]) {
      await dets[p]!.run(input);
      await new Promise((r) => setTimeout(r, 50)); // let the previous session's threads go idle
      for (let k = 0; k < 20; k++) {
        const s = performance.now();
        await dets[p]!.run(input);
        t[p].push(performance.now() - s);
      }
    }
  }
  for (const d of Object.values(dets)) await d!.release();
  const q = (p: Precision) => {
    const [p50, p99] = percentiles(t[p], [50, 99]);
    return { p50: r2(p50), p99: r2(p99) };
  };
  const f = q('fp32');
  return {
    fp32: f,
    int8: { ...q('int8'), speedup: r2(f.p50 / q('int8').p50), agreement: r2(agree.int8) },
    fp16: { ...q('fp16'), speedup: r2(f.p50 / q('fp16').p50), agreement: r2(agree.fp16) },
  };
}

export interface SweepRow {
  precision: Precision;
  provider: string;
  threads: number;
  /** Sessions on worker threads, each running one batch at a time. */
  workers: number;
  batch: number;
  p50: number;
  p99: number;
  imagesPerSec: number;
  withinBudget: boolean;
}

/**
 * Threads × providers × batch sizes × precisions, and two one-thread worker sessions side by
 * side: latency p50/p99 of a round (every image submitted together) and throughput for each.
 */
export async function sweep(o: { budgetMs: number; runs: number; providers: ExecutionProviderName[]; log: LogFn }): Promise<SweepRow[]> {
  const rows: SweepRow[] = [];
  for (const precision of Object.keys(PRECISIONS) as Precision[]) {
    for (const provider of o.providers) {
      for (const [threads, workers] of [[1, 1], [2, 1], [1, 2]]) {
        // Batch > 1 needs a model with a dynamic batch dimension: the fp32 variant has one.
        const batches = precision !== 'fp32' ? [1] : workers > 1 ? [1, 2] : [1, 2, 4, 8];
        for (const batch of batches) {
          const name = batch > 1 ? 'yolox-nano-dyn' : PRECISIONS[precision];
          o.log(`bench: sweep ${precision} ${provider} threads=${threads} workers=${workers} batch=${batch}`);
          const det = await load(name, provider, threads, batch, workers);
          if (det.provider !== provider) {
            await det.release();
            continue; // not available here
          }
          const r = await timeRuns(det, batch, o.runs, workers);
          await det.release();
          rows.push({ precision, provider, threads, workers, batch, ...r, withinBudget: r.p99 <= o.budgetMs });
        }
      }
    }
  }
  return rows;
}

export function sweepTable(rows: SweepRow[], budgetMs: number): string {
  const head = ['precision', 'provider', 'threads', 'workers', 'batch', 'p50 ms', 'p99 ms', 'images/s', `p99 ≤ ${budgetMs} ms`];
  const lines = [head, ...rows.map((r) => [r.precision, r.provider, String(r.threads), String(r.workers), String(r.batch), String(r.p50), String(r.p99), String(r.imagesPerSec), r.withinBudget ? 'yes' : 'no'])];
  const w = head.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return lines.map((l) => l.map((c, i) => c.padEnd(w[i])).join('  ')).join('\n');
}

