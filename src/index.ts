// The library's entry point: what a program that embeds argus, or extends its pipeline with
// operators of its own, imports (see pipelines/custom-operator.ts and README, "Extending the pipeline").
export { loadPipeline } from './config/load.js';
export type { PipelineConfig, SourceConfig } from './config/schema.js';
export { Detections } from './core/detections.js';
export type { Frame, Stamps } from './core/frame.js';
export { dropStale } from './flow/drop-stale.js';
export type { AlertDraft, AnalyticsSummary } from './analytics/analyzer.js';
export type { FrameResult } from './analytics/analyze.js';
export { createPipeline, pipelineBaseDir, sourceChain, type Extension, type Pipeline, type SourceContext } from './pipeline/pipeline.js';
export { runPipeline, type RunOptions, type RunSummary } from './pipeline/run.js';
export type { SourceStats } from './sources/stats.js';
