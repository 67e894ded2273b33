import { dirname, isAbsolute, resolve } from 'node:path';
import { catchError, EMPTY, map, merge, type Observable, of, takeUntil, tap } from 'rxjs';
import { loadModelManifest, resolveModelFile, resolveStream } from '../assets/catalog.js';
import type { PipelineConfig, SourceConfig } from '../config/schema.js';
import { now } from '../core/clock.js';
import { redact } from '../core/redact.js';
import type { LogFn } from '../core/log.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import type { Letterbox } from '../core/geometry.js';
import { SampleWindow } from '../core/stats.js';
import { dropStale } from '../flow/drop-stale.js';
import { Detector } from '../inference/detector.js';
import { sourceKind } from '../sources/ffmpeg-args.js';
import { describeFfmpeg, resolveFfmpeg } from '../sources/ffmpeg-path.js';
import type { SourceState, Transition } from '../sources/health.js';
import { supervisedSource } from '../sources/supervised-source.js';
import { infer, postprocess, preprocess } from './stages.js';
import { SourceAnalyzer, type AlertDraft, type AnalyticsSummary } from '../analytics/analyzer.js';
import { ByteTracker } from '../tracking/byte-tracker.js';

/** What the pipeline emits for every processed frame. */
export interface FrameResult {
  frame: Frame;
  /** Detections in source pixels, with track ids when tracking runs. */
  detections: Detections;
  /** Frames this source has dropped so far. */
  dropped: number;
  /** Zone occupancy, line counts, rates (sources with zones, lines or rules). */
  analytics?: AnalyticsSummary;
  /** Alerts this frame raised (after cooldown and de-duplication). */
  alerts: AlertDraft[];
  /** The source's analyzer (zones and lines in pixels, for drawing). */
  analyzer?: SourceAnalyzer;
}

export interface SourceStats {
  readonly id: string;
  /** Frames read from ffmpeg. */
  framesIn: number;
  /** Frames processed and emitted. */
  framesOut: number;
  /** Frames dropped: a newer one arrived while inference was busy, or inference failed on it. */
  dropped: number;
  /** Of `dropped`: frames whose inference failed (e.g. an inference worker died during the run). */
  inferenceErrors: number;
  /** Captured → emitted, ms, recent frames. */
  readonly e2e: SampleWindow;
  /** Set when the source ended with an error. */
  error?: Error;
  /** Health: starting, streaming, stalled, reconnecting, failed, ended, stopped. */
  state: SourceState;
  /** Restarts of this source's ffmpeg so far. */
  reconnects: number;
  /** The latest state change. */
  lastTransition?: Transition;
  /** Input size reported by ffmpeg. */
  width?: number;
  height?: number;
  fps?: number;
}

export interface PipelineOptions {
  /** Directory that relative paths in the config are resolved against (the YAML's folder). */
  baseDir?: string;
  log?: LogFn;
  /** Loaded model to reuse (bench, tests). */
  detector?: Detector;
  /** Every source state change (logged by the pipeline too). */
  onTransition?: (t: Transition) => void;
  /** Emits once to stop the sources gracefully: frames in flight still finish and are emitted. */
  stop?: Observable<unknown>;
}

export interface Pipeline {
  readonly config: PipelineConfig;
  readonly detector: Detector;
  readonly ffmpegPath: string;
  readonly stats: readonly SourceStats[];
  /** Zones, lines and rules by source id (sources that have any). */
  readonly analyzers: ReadonlyMap<string, SourceAnalyzer>;
  /**
   * Every processed frame from every enabled source. A source that fails is logged and
   * recorded in its stats; the others go on. Completes when every source has ended.
   */
  readonly results$: Observable<FrameResult>;
}

const NO_ALERTS: AlertDraft[] = [];
/** Consecutive frames whose inference failed before the source is failed with the error. */
const MAX_INFERENCE_FAILURES_IN_A_ROW = 30;

export async function loadDetector(config: PipelineConfig, options: PipelineOptions = {}): Promise<Detector> {
  const baseDir = options.baseDir ?? process.cwd();
  const m = config.model;
  // A path alone: the model describes itself. Otherwise a manifest (default yolox-nano).
  const manifest = m.path && !m.manifest ? undefined : (await loadModelManifest(m.manifest ?? 'yolox-nano', baseDir)).manifest;
  const modelPath = m.path ? resolvePath(m.path, baseDir) : await resolveModelFile(manifest!, { log: options.log });
  return Detector.load(manifest, modelPath, {
    providers: m.providers,
    intraOpThreads: m.intraOpThreads,
    workers: m.workers,
    warmupRuns: m.warmupRuns,
    deviceId: m.deviceId,
    family: m.family,
    batch: m.batch,
    trtEngineCacheDir: m.trtEngineCacheDir ? resolvePath(m.trtEngineCacheDir, baseDir) : undefined,
    trtFp16: m.trtFp16,
    log: options.log,
  });
}

export async function createPipeline(config: PipelineConfig, options: PipelineOptions = {}): Promise<Pipeline> {
  const baseDir = options.baseDir ?? process.cwd();
  const log = options.log ?? (() => {});
  const ff = config.ffmpegPath ? await describeFfmpeg(config.ffmpegPath, 'config ffmpegPath') : await resolveFfmpeg();
  const ffmpegPath = ff.path;
  log(`ffmpeg ${ff.version} at ${ff.path} (${ff.reason})`, { ffmpeg: ff.path, version: ff.version });
  const sources = config.sources.filter((s) => s.enabled);
  // Resolve assets before loading the model, so a missing video fails fast.
  const urls = await Promise.all(sources.map((s) => resolveSourceUrl(s, baseDir, ffmpegPath, log)));
  const detector = options.detector ?? (await loadDetector(config, options));
  const stats: SourceStats[] = sources.map((s) => ({ id: s.id, framesIn: 0, framesOut: 0, dropped: 0, inferenceErrors: 0, e2e: new SampleWindow(2048), state: 'stopped', reconnects: 0 }));
  const pp = { ...config.postprocess };

  // Built now, so an unknown class label fails the start, naming the field.
  const analyzers = sources.map((src) => {
    const a = new SourceAnalyzer(src, detector.labels, `sources[${config.sources.indexOf(src)}]`);
    return a.empty ? undefined : a;
  });
  const { enabled: trackingEnabled, ...trackerOptions } = config.tracking;

  const stopOn = options.stop ? takeUntil<Frame>(options.stop) : (o: Observable<Frame>) => o;
  const perSource = sources.map((src, i) => {
    const st = stats[i];
    const analyzer = analyzers[i];
    let tracker: ByteTracker | undefined;
    let analyzerSize: Letterbox | undefined;
    const input = detector.createInput();
    // A frame whose inference fails (a worker died mid-run, a transient provider error) is
    // dropped and counted, and the source goes on; only failures that persist fail the source.
    let failedInARow = 0;
    const detect = (frame: Frame) =>
      of(frame).pipe(
        preprocess(detector, input),
        infer(detector, input),
        postprocess(detector, pp),
        tap(() => (failedInARow = 0)),
        catchError((err: Error) => {
          if (++failedInARow >= MAX_INFERENCE_FAILURES_IN_A_ROW) throw err;
          st.dropped++;
          st.inferenceErrors++;
          frame.release();
          if (failedInARow === 1) log(redact(`source ${src.id}: inference failed, frame dropped: ${err.message}`), { source: src.id }, 'warn');
          return EMPTY;
        }),
      );
    return supervisedSource({
      reconnect: src.reconnect,
      watchdog: src.watchdog,
      onTransition: (t) => {
        st.state = t.state;
        st.lastTransition = t;
        if (t.state === 'reconnecting') st.reconnects++;
        const level = t.state === 'failed' ? 'error' : t.state === 'reconnecting' || t.state === 'stalled' ? 'warn' : 'info';
        log(redact(`source ${t.source}: ${t.previous} → ${t.state} (${t.reason})`), { source: t.source, state: t.state, previous: t.previous, code: t.code, attempt: t.attempt }, level);
        options.onTransition?.(t);
      },
      id: src.id,
      input: { url: urls[i], kind: sourceKind(urls[i]), rate: src.rate, loop: src.loop, fps: src.fps, rtspTransport: src.rtspTransport, inputArgs: src.inputArgs },
      output: { width: detector.inputWidth, height: detector.inputHeight, pixelFormat: detector.pixelFormat, align: detector.align, padValue: detector.padValue },
      ffmpegPath,
      onResize: (_from, to) => {
        st.width = to.srcWidth;
        st.height = to.srcHeight;
      },
      onStreamInfo: (info) => {
        st.width = info.width;
        st.height = info.height;
        st.fps = info.fps;
        log(`source ${src.id} streaming`, { source: src.id, width: info.width, height: info.height, fps: info.fps });
      },
    }).pipe(
      stopOn,
      tap(() => st.framesIn++),
      dropStale(detect, {
        onDrop: (frame) => {
          st.dropped++;
          frame.release();
        },
      }),
      map(({ frame, detections }): FrameResult => {
        // Time base for tracking and rules: the frame's presentation time, so dropped frames
        // and files played faster than real time keep their true spacing.
        const tMs = frame.pts * 1000;
        if (trackingEnabled) {
          tracker ??= new ByteTracker({ ...trackerOptions, frameRateHint: trackerOptions.frameRateHint ?? st.fps ?? 30 });
          detections = tracker.update(detections, tMs);
        }
        let analytics: AnalyticsSummary | undefined;
        let alerts: AlertDraft[] = NO_ALERTS;
        if (analyzer) {
          if (analyzerSize !== frame.letterbox) {
            // First frame, or the resolution changed: place zones and lines for this size.
            if (!analyzerSize || analyzerSize.srcWidth !== frame.letterbox.srcWidth || analyzerSize.srcHeight !== frame.letterbox.srcHeight) {
              analyzer.init(frame.letterbox.srcWidth, frame.letterbox.srcHeight);
            }
            analyzerSize = frame.letterbox;
          }
          ({ summary: analytics, alerts } = analyzer.process(detections, tMs));
        }
        frame.stamps.emitted = now();
        st.framesOut++;
        st.e2e.add(frame.stamps.emitted - frame.stamps.captured);
        return { frame, detections, dropped: st.dropped, analytics, alerts, analyzer };
      }),
      catchError((err: Error) => {
        st.error = err;
        log(redact(`source ${src.id} failed: ${err.message}`), { source: src.id, code: (err as { code?: string }).code }, 'error');
        return EMPTY;
      }),
    );
  });

  const analyzerMap = new Map<string, SourceAnalyzer>();
  analyzers.forEach((a, i) => a && analyzerMap.set(sources[i].id, a));
  return { config, detector, ffmpegPath, stats, analyzers: analyzerMap, results$: merge(...perSource) };
}

function resolvePath(p: string, baseDir: string): string {
  return isAbsolute(p) ? p : resolve(baseDir, p);
}

async function resolveSourceUrl(src: SourceConfig, baseDir: string, ffmpegPath: string, log: (m: string) => void): Promise<string> {
  if (src.uri.startsWith('asset:')) return resolveStream(src.uri.slice('asset:'.length), ffmpegPath, { log });
  if (sourceKind(src.uri) === 'file' && !src.uri.startsWith('file://')) return resolvePath(src.uri, baseDir);
  return src.uri;
}

export function pipelineBaseDir(file: string): string {
  return dirname(resolve(file));
}
