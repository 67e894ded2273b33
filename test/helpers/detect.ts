import { lastValueFrom, map, mergeMap, of, toArray } from 'rxjs';
import type { Detector } from '../../src/inference/detector.js';
import { defaultFfmpegPath } from '../../src/sources/ffmpeg-path.js';
import { Pool } from '../../src/core/pool.js';
import { infer } from '../../src/inference/infer.js';
import { postprocess, type DetectedFrame } from '../../src/postprocess/postprocess.js';
import { preprocess } from '../../src/preprocess/preprocess.js';
import { ffmpegOutputFor, preprocessOptionsFor } from '../../src/pipeline/detect.js';
import { ffmpegSource } from '../../src/sources/ffmpeg-source.js';

export const POST = { scoreThreshold: 0.3, iouThreshold: 0.45, preNmsTopK: 30_000, maxDetections: 100, classAgnostic: false };

/** Runs the real stages on every frame ffmpeg decodes from `path` (an image is one frame), fitted as the pipeline fits them (`resize`, default exact). */
export function detectFile(detector: Detector, path: string, resize: 'exact' | 'fast' = 'exact'): Promise<DetectedFrame[]> {
  const tensors = new Pool(() => detector.createInput(), 1);
  const pre = preprocessOptionsFor(detector);
  return lastValueFrom(
    ffmpegSource({
      id: 'test',
      input: { url: path, kind: 'file', rate: 'fast', loop: false },
      output: ffmpegOutputFor(detector, resize),
      ffmpegPath: defaultFfmpegPath(),
    }).pipe(
      mergeMap((f) => of(f).pipe(preprocess(pre, tensors), infer(detector, tensors), postprocess(detector.decoder, detector.labels.length, POST), map((d) => (f.release(), d))), 1),
      toArray(),
    ),
  );
}
