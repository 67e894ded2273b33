import { take, type Subscription } from 'rxjs';
import type { PipelineConfig } from '../config/schema.js';
import { JsonlSink } from '../sinks/jsonl.js';
import { StatusReporter } from '../sinks/status.js';
import { createPipeline, type FrameResult, type Pipeline, type PipelineOptions, type SourceStats } from './pipeline.js';

export interface RunOptions extends PipelineOptions {
  /** Stop after this many processed frames (all sources together). */
  maxFrames?: number;
  /** JSONL output path, '-' for stdout. Overrides `sinks.jsonl` in the config. */
  jsonl?: string;
  /** Print the per-source status line. Default true. */
  status?: boolean;
  /** Called for every processed frame, after the sinks (bench, tests). */
  onResult?: (r: FrameResult) => void;
  /** Aborting stops the sources and finishes cleanly. */
  signal?: AbortSignal;
  /** Called once the pipeline is built (model loaded, sources resolved). */
  onReady?: (p: Pipeline) => void;
}

export interface RunSummary {
  frames: number;
  stats: readonly SourceStats[];
  /** Sources that ended with an error. */
  failed: { source: string; error: Error }[];
  wallMs: number;
}

/** Builds the pipeline and runs it until every source ends, `maxFrames` is reached or `signal` aborts. */
export async function runPipeline(config: PipelineConfig, options: RunOptions = {}): Promise<RunSummary> {
  const pipeline = await createPipeline(config, options);
  options.onReady?.(pipeline);
  const labels = pipeline.detector.labels;
  const jsonlPath = options.jsonl ?? config.sinks.jsonl?.path;
  const jsonl = jsonlPath ? new JsonlSink(jsonlPath, labels) : undefined;
  const status = options.status === false ? undefined : new StatusReporter(pipeline.stats);
  status?.start();
  let frames = 0;
  const t0 = performance.now();
  let sub: Subscription | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      let results$ = pipeline.results$;
      if (options.maxFrames !== undefined) results$ = results$.pipe(take(options.maxFrames));
      const onAbort = () => {
        sub?.unsubscribe();
        resolve();
      };
      if (options.signal?.aborted) return resolve();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      sub = results$.subscribe({
        next: (r) => {
          frames++;
          jsonl?.write(r);
          options.onResult?.(r);
          r.frame.release();
        },
        error: (e) => {
          options.signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        complete: () => {
          options.signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      });
    });
  } finally {
    sub?.unsubscribe();
    status?.stop();
    await jsonl?.close();
    if (!options.detector) await pipeline.detector.release();
  }
  return {
    frames,
    stats: pipeline.stats,
    failed: pipeline.stats.filter((s) => s.error).map((s) => ({ source: s.id, error: s.error! })),
    wallMs: performance.now() - t0,
  };
}
