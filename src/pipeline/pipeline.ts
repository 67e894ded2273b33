import type { ChildProcess } from 'node:child_process';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defer, filter, finalize, from, merge, mergeMap, Observable, type OperatorFunction, takeUntil, tap } from 'rxjs';
import { analyze, CLOSED, type FrameResult, type HandOver } from '../analytics/analyze.js';
import { SourceAnalyzer, type AlertDraft } from '../analytics/analyzer.js';
import { addReports, type SourceAnalyticsReport } from '../analytics/report.js';
import { loadModelManifest, resolveModelFile, resolveStream } from '../assets/catalog.js';
import { checkClasses } from '../config/classes.js';
import { untrackedError, type PipelineConfig, type SourceConfig } from '../config/schema.js';
import { checksCertificate } from '../core/rtsp-relay.js';
import { now } from '../core/clock.js';
import { ArgusError, ErrorCodes, inContext } from '../core/errors.js';
import type { Frame } from '../core/frame.js';
import type { LogFn } from '../core/log.js';
import { redact } from '../core/redact.js';
import { Pace } from '../flow/pace.js';
import { Detector } from '../inference/detector.js';
import { sourceKind, type SourceKind } from '../sources/ffmpeg-args.js';
import { configuredFfmpegPath, describeFfmpeg, resolveFfmpeg } from '../sources/ffmpeg-path.js';
import { ffmpegNotGone, lastFfmpegGone, type LastFfmpeg, type SpawnFn } from '../sources/ffmpeg-source.js';
import type { Transition } from '../sources/health.js';
import { DamageWarnings, newSourceStats, recordTransition, type SourceStats } from '../sources/stats.js';
import { readCameraCa } from '../sources/rtsp-tap.js';
import { supervisedSource } from '../sources/supervised-source.js';
import { BYTE_TRACKER_DEFAULTS } from '../tracking/byte-tracker.js';
import { track } from '../tracking/track.js';
import { detect, ffmpegOutputFor } from './detect.js';
import { isolate } from './isolate.js';
import { stamp } from './stamp.js';

export type { FrameResult } from '../analytics/analyze.js';
export type { SourceStats } from '../sources/stats.js';

/** What an extension gets to know about the source whose results it handles. */
export interface SourceContext {
  readonly config: SourceConfig;
  readonly stats: SourceStats;
  /** The model's class labels (class id → name). */
  readonly labels: readonly string[];
}

/**
 * Operators of the user's, per source, between the rules and the sinks: called once per
 * source when the pipeline is subscribed. They may filter, drop, delay or change results, add
 * alert drafts (a custom rule) or feed a side sink. See README, "Extending the pipeline".
 */
export type Extension = ((source: SourceContext) => OperatorFunction<FrameResult, FrameResult>) & {
  /**
   * The extension's operators get the result of a stream's end too (`streamEnd`: no frame,
   * `r.frame.data` empty, no detections: the alerts a line settled there). Without it, that
   * result passes around them, after their last result: an operator written for frames (one
   * that reads the pixels) does not fail the source at a clean end, nor lose the alerts.
   */
  readonly streamEnd?: boolean;
};

export interface PipelineOptions {
  /** Directory that relative paths in the config are resolved against (the YAML's folder). */
  baseDir?: string;
  /** The pipeline file the config came from: an error about one of its settings names it before the field. */
  configFile?: string;
  log?: LogFn;
  /** Loaded model to reuse (bench, tests). */
  detector?: Detector;
  /** Every source state change (logged by the pipeline too). */
  onTransition?: (t: Transition) => void;
  /** Whether a source's failure is said by the caller, not logged by the pipeline (argus worker: a camera's record refused at its first frame; it is kept in the source's stats as any). */
  failureSaid?: (source: string, e: Error) => boolean;
  /** A source's ffmpeg reported its opened input with a video stream it could describe (its size, or a stream (H.264, H.265, MPEG-2, MPEG-4 Part 2) whose size comes with its key frame, before any frame; not `Input #0` alone: a login page through a forced demuxer): the camera answered, frames or not (argus worker: not unreachable). */
  onSourceOpened?: (source: string) => void;
  /** Emits once to stop the sources gracefully: frames in flight still finish and are emitted. */
  stop?: Observable<unknown>;
  /** The user's operators, per source, between the rules and the sinks. */
  extend?: Extension;
  /** Aborting it interrupts an asset download at start (VAP_ERR_INTERRUPTED, its partial file removed). */
  signal?: AbortSignal;
  /** An attached source's chain ended (a worker's camera stopped or moved away): what a sink holds for it can go. */
  onDetach?: (source: string) => void;
  /** Ids of detached sources whose totals `detached` keeps, the latest detached (default MAX_DETACHED_KEPT). */
  maxDetached?: number;
  /** Starts each source's ffmpeg (tests). Default: ffmpegSource's. */
  spawn?: SpawnFn;
  /**
   * The result of a stream's end that its chain was cut off before emitting (the stop's drain
   * timeout, `--max-frames`, an extension holding it as it was unsubscribed): its alerts, to the
   * alert path directly; false where that is closed (they are then counted lost: uncarriedAlerts).
   * runPipeline gives its AlertPublisher's. Without it, they are counted lost.
   */
  handOver?: HandOver;
}

/**
 * Detached sources whose totals a pipeline keeps: an argus worker's cameras come and go for
 * months, each id ever attached kept an entry. Past it, the longest detached is forgotten, and
 * `seq` stays unique (alert ids are built from it): an id attached afresh starts past every
 * forgotten id's next seq.
 */
export const MAX_DETACHED_KEPT = 10_000;

export interface Pipeline {
  readonly config: PipelineConfig;
  readonly detector: Detector;
  readonly ffmpegPath: string;
  readonly stats: readonly SourceStats[];
  /** The local files the enabled sources read (absolute paths), and those of attached sources while they run, so that no output is written over one. */
  readonly inputs: readonly string[];
  /** Zones, lines and rules by source id (sources that have any). */
  readonly analyzers: ReadonlyMap<string, SourceAnalyzer>;
  /**
   * Alerts a stream's end raised that no result could carry and that could not be handed over
   * either (SourceAnalyzer.uncarried: a chain cut off, PipelineOptions.handOver refused or absent),
   * over every source's analyzer: those in `analyzers` and those of attached chains
   * that have ended (a worker's camera detached, or attached again: its former analyzer left
   * `analyzers`). The run's summary counts them lost.
   */
  readonly uncarriedAlerts: number;
  /**
   * Every processed frame from every enabled source. A source that fails is logged and
   * recorded in its stats; the others go on. Completes when every source has ended.
   */
  readonly results$: Observable<FrameResult>;
  /**
   * A source started after the pipeline (a worker's camera): its chain, built on subscription
   * (its URL resolved, its zones and lines checked), with the configured model, tracking and
   * rules. Its stats are in `stats` (and its analyzer in `analyzers`) while the chain runs.
   * `stop` emitting ends it as the pipeline's stop does: frames in flight finish.
   * `fence`: the check its results pass after the chain before the sinks (an argus worker's filter:
   * its claim holds, or a fenced result's alerts under the claim its frame was admitted under). The
   * result of its stream's end handed over (its chain cut off: PipelineOptions.handOver) passes it
   * too, as it never reaches that filter: one it drops is not handed over, nor counted lost (it
   * drops it as it would have on the chain's way). Before, a worker's cut-off chain's end went to
   * the alert path past it: not counted fenced, under the camera's latest claim.
   */
  attach(source: SourceConfig, stop: Observable<unknown>, admit?: () => boolean, fence?: (r: FrameResult) => boolean): Observable<FrameResult>;
  /**
   * Sources attached and detached again, by id: what their chains counted, summed over every
   * time the id was attached (a worker's camera that moved away and back), and the `seq` its
   * next attachment starts from (seq never repeats within a run). The latest detached
   * `maxDetached` ids (MAX_DETACHED_KEPT) at most.
   */
  readonly detached: ReadonlyMap<string, DetachedTotals>;
  /** Releases what the pipeline loaded (the model, unless it was given in the options). */
  close(): Promise<void>;
}

/** What the chains of a source attached and then detached counted, over all its attachments. */
export interface DetachedTotals {
  attachments: number;
  framesIn: number;
  framesOut: number;
  dropped: number;
  inferenceErrors: number;
  reconnects: number;
  decodeErrors: number;
  /** The `seq` of the next attachment's first frame. */
  nextSeq: number;
  /** The last frame's `pts`, and when (performance.now()) its pts were 0: the next attachment's pts go on from them. */
  lastPts?: number;
  ptsOrigin?: number;
  /** The frame rate its last chain had. */
  fps?: number;
  /**
   * What its zones, lines and rules counted over every attachment (entries, exits, crossings,
   * alerts per rule; occupancy 0), for sources with any: each attachment's analyzer starts
   * from nothing, and what it counted left the end-of-run summary with it.
   */
  analytics?: SourceAnalyticsReport;
}

/** Where a source's frames are, for the next chain of the same id. */
type Continuity = Pick<DetachedTotals, 'nextSeq' | 'lastPts' | 'ptsOrigin' | 'fps'>;

/** What one source's chain is built from. */
export interface ChainContext {
  detector: Detector;
  config: PipelineConfig;
  source: SourceConfig;
  stats: SourceStats;
  analyzer?: SourceAnalyzer;
  /**
   * Paces a file read as fast as possible by the detection stage; its capacity is how many of
   * the source's frames the stage runs at once (default 1), and may change while it runs.
   */
  pace?: Pace;
  log: LogFn;
  /** PipelineOptions.failureSaid. */
  failureSaid?: (source: string, e: Error) => boolean;
  stop?: Observable<unknown>;
  extend?: Extension;
  /** A file read as fast as possible: its frames wait behind other sources' for the model's session. */
  bulk?: boolean;
  /** Frames pass into the chain only while this says so (an argus worker's camera before its claim holds); the others are released unread. */
  admit?: () => boolean;
  /** The result of a stream's end its chain was cut off before emitting, stamped as `stamp` would: to the alert path directly (see analyze's HandOver). */
  handOver?: HandOver;
}

/**
 * One source's chain, from its frames to results ready for the sinks: detection (dropping
 * stale frames) → tracking → rules → the user's operators → stamped. A source that fails ends
 * alone.
 */
export function sourceChain(frames$: Observable<Frame>, c: ChainContext): Observable<FrameResult> {
  const st = c.stats;
  const take = c.handOver;
  // Stamped as stamp() does a stream's end's result (it does not pass there), and never throwing
  // into the teardown that hands it over: one that fails is counted lost.
  const handOver: HandOver | undefined = take
    ? (r) => {
        r.frame.stamps.emitted = now();
        r.dropped = st.dropped;
        try {
          return take(r);
        } catch (e) {
          c.log(`source ${c.source.id}: handing the alerts of the end of its stream over failed (${(e as Error).message})`, { source: c.source.id }, 'error');
          return false;
        }
      }
    : undefined;
  return frames$.pipe(
    c.stop ? takeUntil<Frame>(c.stop) : (o) => o,
    c.admit ? gate(c.admit) : (o) => o,
    tap(() => st.framesIn++),
    detect(c.detector, { postprocess: c.config.postprocess, stats: st, pace: c.pace, bulk: c.bulk, log: c.log }),
    track(c.config.tracking, () => st.fps),
    analyze(c.analyzer, handOver),
    c.extend ? extended(c.extend, { config: c.source, stats: st, labels: c.detector.labels }, handOver) : (o) => o,
    stamp(st),
    isolate(st, c.log, c.failureSaid),
  );
}

/**
 * The user's operators on a source's results. A stream's end's result (`streamEnd`) reaches them
 * only where the extension asks for it (Extension.streamEnd); otherwise it is held while they
 * finish the stream and goes out after their last result (before their error, where they end in
 * one: a source's own failure). Before, every extension got it, and one that read the pixels of
 * every result threw on its empty `frame.data`: a file's clean end failed the source (exit 1),
 * where the same extension had worked before ends carried alerts. Operators that asked for it
 * and end in an error while they hold it (theirs on it, or the source's failure) do not drop it:
 * it goes out as it came, before the error. Either way, a chain cut off
 * (the stop's drain timeout, --max-frames) while that result is still held, or still inside
 * operators that asked for it, hands it over as it came (`handOver`: to the alert path
 * directly); only where that cannot take it are its alerts counted lost (SourceAnalyzer.uncarry).
 * Before, they were always counted lost (exit status 3), the sinks open all the while.
 */
function extended(ext: Extension, ctx: SourceContext, handOver?: HandOver): OperatorFunction<FrameResult, FrameResult> {
  const op = ext(ctx);
  const inline = ext.streamEnd === true;
  return (source) =>
    new Observable<FrameResult>((out) => {
      /** The stream's end's result, held (around the operators) or inside them (inline), and its alerts as it came. */
      let held: { r: FrameResult; alerts: readonly AlertDraft[] } | undefined;
      let ended = false;
      /** At the operators' end: the result held goes out (inline, on their error only: one they completed without was theirs to drop). */
      const flush = (failed: boolean) => {
        const h = held;
        held = undefined;
        if (h && (failed || !inline)) out.next(h.r);
      };
      const into = new Observable<FrameResult>((sub) =>
        source.subscribe({
          next: (r) => {
            if (!r.streamEnd) return sub.next(r);
            held = { r, alerts: r.alerts.map((a) => ({ ...a })) };
            if (inline) sub.next(r);
          },
          error: (e: unknown) => sub.error(e),
          complete: () => sub.complete(),
        }),
      );
      const inner = op(into).subscribe({
        next: (r) => {
          if (inline && r.streamEnd) held = undefined;
          out.next(r);
        },
        // Inline, the operators' error (theirs on it, or the source's passed on while they still held
        // it) does not take its alerts with it: it goes out as it came, before the error (the source
        // is then failed, the error logged).
        error: (e: unknown) => {
          ended = true;
          flush(true);
          out.error(e);
        },
        complete: () => {
          ended = true;
          flush(false);
          out.complete();
        },
      });
      return () => {
        inner.unsubscribe();
        const h = held;
        held = undefined;
        if (!h || ended) return;
        // As it came (inline, the operators may have changed it while they held it).
        if (!handOver?.({ ...h.r, alerts: h.alerts.map((a) => ({ ...a })) })) h.r.analyzer?.uncarry(h.alerts, handOver ? CLOSED : undefined);
      };
    });
}

/**
 * `model.workers` × `model.intraOpThreads`, where the pipeline leaves them out: 1 session × 2
 * threads (each frame's result soonest: what cameras want), or 2 sessions × 1 thread when the
 * CPU is the only provider and every source is a file read as fast as possible (throughput:
 * `stageCapacity` then runs two of a file's frames at once and pre-processes a third; 1.2–1.4 ×
 * the frames per second on 2 cores, README, "Inference threads"). Either one set keeps the
 * other's plain default.
 */
export function inferenceThreads(config: PipelineConfig): { workers: number; intraOpThreads: number } {
  const m = config.model;
  if (m.workers === undefined && m.intraOpThreads === undefined) {
    const cpuOnly = m.providers.every((p) => p === 'cpu');
    const sources = config.sources.filter((s) => s.enabled);
    const files = sources.length > 0 && sources.every((s) => isBulk(sourceKind(s.uri), s.rate));
    if (cpuOnly && files) return { workers: 2, intraOpThreads: 1 };
  }
  return { workers: m.workers ?? 1, intraOpThreads: m.intraOpThreads ?? 2 };
}

/**
 * How many of a source's frames the detection stage holds at once. A file read as fast as
 * possible, in a run of nothing else, wants throughput: one frame per session (`model.workers`'
 * worker threads), results in order, so one file keeps every session busy (on 2 cores, 2
 * workers × 1 thread: 1.2–1.4 × the frames of one frame at a time; README, "Inference
 * threads"), and one frame more, which is pre-processed while every session runs and waits in
 * the session's queue: when a run ends the next starts at once, not after the main thread has
 * pre-processed it (432p and 1080p fast files, 2 × 1 threads: 86 → 93 and 67.5 → 72.5 fps,
 * medians of 8 and 3 interleaved runs). A camera, or a file played at its own rate, wants each
 * frame's result soonest: one at a time, every thread on it. Beside such a source (`alone`
 * false) a fast file holds one frame too: sessions take frames first come, first served, so
 * each source's share of inference follows the frames it holds, and a fast file holding three
 * took 2–3 times each camera's share (three 10 fps cameras dropped a quarter of their frames).
 * `alone` follows the sources running now (`StageShares`), not those the run started with.
 */
export function stageCapacity(kind: SourceKind, rate: SourceConfig['rate'], sessions: number, alone: boolean): number {
  return alone && isBulk(kind, rate) ? Math.max(1, sessions) + 1 : 1;
}

/**
 * The paces of the sources running in a pipeline, each sized by `stageCapacity` for the set
 * running now: a source joins when its chain is subscribed and leaves when the chain ends
 * (its file ended, it failed, it was stopped or detached). So when the last camera (or
 * native-rate file) beside fast files ends, the files get a fast file's capacity for the rest
 * of the run, and when a camera is attached again, they go back to one frame each. A pace that
 * shrinks keeps the frames inside until they leave: no frame is dropped for it.
 */
export class StageShares {
  private readonly running = new Map<Pace, { kind: SourceKind; rate: SourceConfig['rate'] }>();

  /** `sessions`: the model's sessions (`detector.session.slots`). */
  constructor(private readonly sessions: number) {}

  /** A source starts: its pace, sized for the sources running with it (theirs resized too). Call `leave` once when it ends. */
  join(kind: SourceKind, rate: SourceConfig['rate']): { pace: Pace; leave: () => void } {
    const pace = new Pace();
    this.running.set(pace, { kind, rate });
    this.resize();
    let left = false;
    return {
      pace,
      leave: () => {
        if (left) return;
        left = true;
        this.running.delete(pace);
        this.resize();
      },
    };
  }

  /** Sources running now. */
  get size(): number {
    return this.running.size;
  }

  private resize(): void {
    const alone = [...this.running.values()].every((r) => isBulk(r.kind, r.rate));
    for (const [pace, r] of this.running) pace.resize(stageCapacity(r.kind, r.rate, this.sessions, alone));
  }
}

/** `rate` and `loop` are for files: on a camera they change nothing, which its user is told (`field` names the source). */
function warnFileSettings(s: SourceConfig, url: string, field: string, log: LogFn): void {
  const kind = sourceKind(url);
  const asked = [s.rate === 'fast' ? 'rate: fast' : '', s.loop ? 'loop: true' : ''].filter(Boolean);
  if (kind !== 'file' && asked.length) log(`${field}: ${asked.join(' and ')} ${asked.length > 1 ? 'are' : 'is'} for files; source "${s.id}" is a live stream (${kind}), read as it comes`, { source: s.id }, 'warn');
}

/**
 * Zones and lines that forget an unseen track sooner than the tracker does (`exitDelayMs`,
 * `forgetAfterMs` below `tracking.lostTrackBufferMs`): a track the tracker re-finds after a gap
 * between the two enters the zone again (a second entry and `zone-enter` alert) or learns its
 * side afresh. The README says to keep them at least as long; a config that did not was taken
 * without a word. One warning per field, naming it (`field`: the source's).
 */
export function trackingGapWarnings(s: Pick<SourceConfig, 'zones' | 'lines'>, tracking: PipelineConfig['tracking'], field: string): string[] {
  if (!tracking.enabled) return [];
  const lost = tracking.lostTrackBufferMs ?? BYTE_TRACKER_DEFAULTS.lostTrackBufferMs;
  const lostText = `tracking.lostTrackBufferMs (${lost}${tracking.lostTrackBufferMs === undefined ? ', its default' : ''})`;
  return [
    ...s.zones.flatMap((z, i) => (z.exitDelayMs < lost ? [`${field}.zones[${i}].exitDelayMs (${z.exitDelayMs}) is below ${lostText}: a track the tracker re-finds after a gap between the two exits and enters again (a second zone-enter); keep it at least as long (README, "Tracking, zones, lines and rules")`] : [])),
    ...s.lines.flatMap((l, i) => (l.forgetAfterMs < lost ? [`${field}.lines[${i}].forgetAfterMs (${l.forgetAfterMs}) is below ${lostText}: a track the tracker re-finds after a gap between the two learns its side afresh (a crossing in the gap is not counted); keep it at least as long`] : [])),
  ];
}

/** A file read as fast as possible: it loses nothing by waiting (its frames yield to other sources'). */
function isBulk(kind: SourceKind, rate: SourceConfig['rate']): boolean {
  return kind === 'file' && rate === 'fast';
}

/** Lets frames through while `admit()` holds; releases the others' buffers at once. */
function gate(admit: () => boolean): OperatorFunction<Frame, Frame> {
  return filter((f) => {
    if (admit()) return true;
    f.release();
    return false;
  });
}

/** Where a setting is: `FILE: field` when the config came from a file, else the field. */
export function settingOf(options: Pick<PipelineOptions, 'configFile'>, field: string): string {
  return options.configFile ? `${options.configFile}: ${field}` : field;
}

/** `field`: what an unknown or invalid manifest's error names (`model.manifest`; `--model` for a command's flag). */
export async function loadDetector(config: PipelineConfig, options: PipelineOptions = {}, field = settingOf(options, 'model.manifest')): Promise<Detector> {
  const baseDir = options.baseDir ?? process.cwd();
  const m = config.model;
  // A path alone: the model describes itself. Otherwise a manifest (default yolox-nano).
  const manifest =
    m.path && !m.manifest
      ? undefined
      : (
          await loadModelManifest(m.manifest ?? 'yolox-nano', baseDir).catch((e: unknown) => {
            throw inContext(e, field, [ErrorCodes.CONFIG, ErrorCodes.CONFIG_FILE]);
          })
        ).manifest;
  const modelPath = m.path ? resolvePath(m.path, baseDir) : await resolveModelFile(manifest!, { log: options.log, signal: options.signal });
  // The session's creation, which a stop cannot interrupt (the download above it can: its own
  // VAP_ERR_INTERRUPTED names the asset), is left to go on.
  return loadedUnlessStopped(Detector.load(manifest, modelPath, {
    providers: m.providers,
    ...inferenceThreads(config),
    allowSpinning: m.allowSpinning,
    spinMicros: m.spinMicros,
    warmupRuns: m.warmupRuns,
    deviceId: m.deviceId,
    family: m.family,
    batch: m.batch,
    trtEngineCacheDir: m.trtEngineCacheDir ? resolvePath(m.trtEngineCacheDir, baseDir) : undefined,
    trtFp16: m.trtFp16,
    log: options.log,
  }), options.signal);
}

/**
 * The model's load, or VAP_ERR_INTERRUPTED once `signal` aborts while it is still going: a stop
 * while the session was being made (a TensorRT engine build: minutes) did nothing until the build
 * ended, then the run stopped, and a supervisor's SIGTERM met its SIGKILL first. The load goes on
 * (ONNX Runtime's session creation cannot be stopped), and its detector is released once made;
 * argus's exit does not wait for it (exitAfterInference).
 */
function loadedUnlessStopped(loading: Promise<Detector>, signal: AbortSignal | undefined): Promise<Detector> {
  if (!signal) return loading;
  return new Promise((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      if (settled) return; // loaded already: the run goes on to stop in order, as before
      void loading.then((d) => d.release(), () => undefined);
      reject(new ArgusError(ErrorCodes.INTERRUPTED, "stopped while the model's session was being made (a TensorRT engine build takes minutes), before any source started"));
    };
    const done = () => {
      settled = true;
      signal.removeEventListener('abort', onAbort);
    };
    loading.then(
      (d) => {
        done();
        resolve(d);
      },
      (e: unknown) => {
        done();
        reject(e as Error);
      },
    );
    // Aborted already: after the load's own callbacks, should it be over (a settled promise's run first).
    if (signal.aborted) setImmediate(onAbort);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

export async function createPipeline(config: PipelineConfig, options: PipelineOptions = {}): Promise<Pipeline> {
  const baseDir = options.baseDir ?? process.cwd();
  const log = options.log ?? (() => {});
  const sources = config.sources.filter((s) => s.enabled);
  // The model loads while ffmpeg is chosen and the sources' assets are resolved (a cold start
  // waits for the longer of the two, not their sum); a missing video still fails the start,
  // and the model loaded meanwhile is released.
  const loading = options.detector ? undefined : loadDetector(config, options);
  loading?.catch(() => undefined); // awaited below, where its failure is reported
  let ffmpegPath: string;
  let urls: string[];
  try {
    const ff = config.ffmpegPath ? await describeFfmpeg(configuredFfmpegPath(config.ffmpegPath, baseDir), 'config ffmpegPath', settingOf(options, 'ffmpegPath')) : await resolveFfmpeg();
    ffmpegPath = ff.path;
    log(`ffmpeg ${ff.version} at ${ff.path} (${ff.reason})`, { ffmpeg: ff.path, version: ff.version });
    urls = await Promise.all(sources.map((s) => resolveSourceUrl(s, baseDir, ffmpegPath, log, settingOf(options, `sources[${config.sources.indexOf(s)}]`), options.signal)));
    sources.forEach((s, i) => {
      const field = settingOf(options, `sources[${config.sources.indexOf(s)}]`);
      warnFileSettings(s, urls[i], field, log);
      for (const w of trackingGapWarnings(s, config.tracking, field)) log(w, { source: s.id }, 'warn');
    });
    // An rtsps:// camera's CA file, read as its relay will (a file that is not one fails the
    // start, naming the field, rather than every connection to the camera).
    await Promise.all(
      sources.map(async (s) => {
        if (!checksCertificate(s.uri, s.tls) || !s.tls.ca) return;
        await readCameraCa(resolvePath(s.tls.ca, baseDir)).catch((e: Error) => {
          throw new ArgusError(ErrorCodes.CONFIG, `${settingOf(options, `sources[${config.sources.indexOf(s)}]`)}.${e.message}`);
        });
      }),
    );
  } catch (e) {
    // Said at once, the model released once made: a TensorRT engine build (minutes) held back the
    // error of a source file that was not there until it ended. argus's exit does not wait for a
    // session still being opened past its bound (exitAfterInference).
    void loading?.then((d) => d.release(), () => undefined);
    throw e;
  }
  const detector = options.detector ?? (await loading!);
  const ownsDetector = !options.detector;
  const stats = sources.map((s) => newSourceStats(s.id));
  let analyzers: (SourceAnalyzer | undefined)[];
  try {
    // Checked now, so unknown class labels fail the start, each naming its field (all of them, every source's).
    checkClasses(sources.map((src) => ({ source: src, path: `sources[${config.sources.indexOf(src)}]` })), detector.labels, options.configFile ? `${options.configFile}: ` : '');
    analyzers = sources.map((src) => {
      const a = new SourceAnalyzer(src, detector.labels, settingOf(options, `sources[${config.sources.indexOf(src)}]`), (m) => log(m, { source: src.id }, 'warn'));
      return a.empty ? undefined : a;
    });
  } catch (e) {
    if (ownsDetector) await detector.release();
    throw e;
  }
  const stop = options.stop;

  const frameOutput = ffmpegOutputFor(detector, config.model.resize);
  // While only fast files run, each may hold more than one frame in the detection stage
  // (stageCapacity); the set running is that of now, attached sources included.
  const shares = new StageShares(detector.session.slots);

  // One source: its supervised ffmpeg, then its chain.
  const chain = (src: SourceConfig, i: number): Observable<FrameResult> => build(src, urls[i], stats[i], analyzers[i], stop);
  const build = (src: SourceConfig, url: string, st: SourceStats, analyzer: SourceAnalyzer | undefined, stop: Observable<unknown> | undefined, admit?: () => boolean, cont?: Continuity, last?: LastFfmpeg, fence?: (r: FrameResult) => boolean): Observable<FrameResult> =>
    defer(() => {
      const kind = sourceKind(url);
      const { pace, leave } = shares.join(kind, src.rate);
      return chainOf(src, url, kind, pace, st, analyzer, stop, admit, cont, last, fence).pipe(finalize(leave));
    });
  const chainOf = (src: SourceConfig, url: string, kind: SourceKind, pace: Pace, st: SourceStats, analyzer: SourceAnalyzer | undefined, stop: Observable<unknown> | undefined, admit?: () => boolean, cont?: Continuity, last?: LastFfmpeg, fence?: (r: FrameResult) => boolean): Observable<FrameResult> => {
    const damage = new DamageWarnings(st, url, log);
    const supervised$ = supervisedSource({
      lastFfmpeg: last,
      spawn: options.spawn,
      seqStart: cont?.nextSeq,
      resume: cont?.lastPts !== undefined && cont.ptsOrigin !== undefined ? { lastPts: cont.lastPts, firstFrameAt: cont.ptsOrigin, fps: cont.fps } : undefined,
      id: src.id,
      input: { url, kind, rate: src.rate, loop: src.loop, fps: src.fps, rtspTransport: src.rtspTransport, cameraClock: src.cameraClock, sendCredentialsTo: src.sendCredentialsTo, inputArgs: src.inputArgs, decode: src.decode, tls: { ...src.tls, ca: src.tls.ca && resolvePath(src.tls.ca, baseDir) } },
      onClockNotice: (text) => log(text, { source: src.id }, 'warn'),
      onSecretsExposed: (text) => log(redact(text), { source: src.id, notice: 'secrets-on-command-line' }, 'warn'),
      onDamage: (line) => damage.report(line),
      relayLog: (msg, fields, level) => log(`source ${src.id}: ${msg}`, { source: src.id, ...fields }, level),
      output: frameOutput,
      ffmpegPath,
      pace,
      reconnect: src.reconnect,
      watchdog: src.watchdog,
      onTransition: (t) => onTransition(st, t),
      onReconnect: () => st.reconnects++,
      failedBy: () => st.error,
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
      onInputOpened: () => options.onSourceOpened?.(src.id),
    });
    const frames$ = cont
      ? supervised$.pipe(
          tap((f) => {
            cont.nextSeq = f.seq + 1;
            cont.lastPts = f.pts;
            cont.ptsOrigin ??= performance.now() - f.pts * 1000;
          }),
        )
      : supervised$;
    // An attached chain's end handed over passes its fence first, as its results do after the chain (see attach).
    const take = options.handOver;
    const handOver: HandOver | undefined = take && fence ? (r) => !fence(r) || take(r) : take;
    return sourceChain(frames$, { detector, config, source: src, stats: st, analyzer, pace, log, failureSaid: options.failureSaid, stop, extend: options.extend, admit, bulk: isBulk(kind, src.rate), handOver });
  };

  const onTransition = (st: SourceStats, t: Transition) => {
    recordTransition(st, t);
    // A failure its caller says itself (failureSaid: the error that ended the chain, isolate's) is a
    // debug line here: before, an argus worker's record refused at its first frame logged this, the
    // isolate's "failed" and the worker's own line, three errors of one refusal.
    const said = t.state === 'failed' && st.error !== undefined && options.failureSaid?.(t.source, st.error) === true;
    const level = said ? 'debug' : t.state === 'failed' ? 'error' : t.state === 'reconnecting' || t.state === 'stalled' || t.state === 'stuck' ? 'warn' : 'info';
    log(redact(`source ${t.source}: ${t.previous} → ${t.state} (${t.reason})`), { source: t.source, state: t.state, previous: t.previous, code: t.code, attempt: t.attempt }, level);
    options.onTransition?.(t);
  };

  const detached = new Map<string, DetachedTotals>();
  /**
   * The chains of each attached id still running (their continuity) and the id's last ffmpeg,
   * while a chain runs or that ffmpeg has not exited. A chain attached again under the id (an argus
   * worker's camera edited, or claimed again while its stopped chain still had a frame in
   * inference past stopBudget):
   * - starts past the running chains' seq, not at the seq the last one started at: both counted
   *   from there, and the same run published the same seq twice, alert ids with it;
   * - starts its ffmpeg once the last one has exited (FFMPEG_EXIT_WAIT_MS at most), as a source's
   *   restart does: it started beside it, killed but not gone, and a camera that takes one session
   *   at a time, or a V4L2 device, refused the new one.
   * Forgotten once no chain of the id runs and its ffmpegs have gone, the running one and any
   * left behind stuck (`awaiting`: the one whose exit it waits for).
   */
  const live = new Map<string, { running: Set<Continuity>; last: LastFfmpeg; awaiting?: ChildProcess }>();
  const maxDetached = options.maxDetached ?? MAX_DETACHED_KEPT;
  /** The largest next seq of a forgotten detached id: an id not in `detached` starts there. */
  let seqFloor = 0;
  const analyzerMap = new Map<string, SourceAnalyzer>();
  /** SourceAnalyzer.uncarried of attached chains that have ended (their analyzers left analyzerMap). */
  let uncarriedGone = 0;
  analyzers.forEach((a, i) => a && analyzerMap.set(sources[i].id, a));
  // The local file a resolved URL reads, if it is one.
  const inputOf = (u: string) => (sourceKind(u) === 'file' ? resolve(u.startsWith('file://') ? fileURLToPath(u) : u) : undefined);
  const inputs = urls.map(inputOf).filter((f) => f !== undefined);
  return {
    config,
    detector,
    ffmpegPath,
    stats,
    inputs,
    analyzers: analyzerMap,
    get uncarriedAlerts() {
      let n = uncarriedGone;
      for (const a of analyzerMap.values()) n += a.uncarried;
      return n;
    },
    detached,
    // Each subscription builds its chains afresh: operator state (tracker, pace, extensions) is per subscription.
    results$: merge(...sources.map((src, i) => defer(() => chain(src, i)))),
    attach: (src, stopOne, admit, fence) =>
      from(resolveSourceUrl(src, baseDir, ffmpegPath, log)).pipe(
        mergeMap((url) => {
          const untracked = untrackedError(src, config.tracking, `camera ${src.id}`);
          if (untracked) throw new ArgusError(ErrorCodes.CONFIG, untracked);
          checkClasses([{ source: src, path: `camera ${src.id}` }], detector.labels);
          warnFileSettings(src, url, `camera ${src.id}`, log);
          for (const w of trackingGapWarnings(src, config.tracking, `camera ${src.id}`)) log(w, { source: src.id }, 'warn');
          const a = new SourceAnalyzer(src, detector.labels, `camera ${src.id}`, (m) => log(m, { source: src.id }, 'warn'));
          const analyzer = a.empty ? undefined : a;
          const st = newSourceStats(src.id);
          stats.push(st);
          if (analyzer) analyzerMap.set(src.id, analyzer);
          const before = detached.get(src.id);
          const held = live.get(src.id) ?? { running: new Set<Continuity>(), last: {} };
          live.set(src.id, held);
          const running = held.running;
          const cont: Continuity = { nextSeq: Math.max(before?.nextSeq ?? seqFloor, ...[...running].map((c) => c.nextSeq)), lastPts: before?.lastPts, ptsOrigin: before?.ptsOrigin, fps: before?.fps };
          running.add(cont);
          const input = inputOf(url);
          if (input) inputs.push(input);
          return build(src, url, st, analyzer, stop ? merge(stop, stopOne) : stopOne, admit, cont, held.last, fence).pipe(
            finalize(() => {
              const at = stats.indexOf(st);
              if (at >= 0) stats.splice(at, 1);
              const i = input ? inputs.lastIndexOf(input) : -1;
              if (i >= 0) inputs.splice(i, 1);
              if (analyzerMap.get(src.id) === analyzer) analyzerMap.delete(src.id);
              // Settled now (its analyze operator's teardown ran first): what it could not carry stays counted.
              if (analyzer) uncarriedGone += analyzer.uncarried;
              const d = detached.get(src.id) ?? { attachments: 0, framesIn: 0, framesOut: 0, dropped: 0, inferenceErrors: 0, reconnects: 0, decodeErrors: 0, nextSeq: 0 };
              d.attachments++;
              d.framesIn += st.framesIn;
              d.framesOut += st.framesOut;
              d.dropped += st.dropped;
              d.inferenceErrors += st.inferenceErrors;
              d.reconnects += st.reconnects;
              d.decodeErrors += st.decodeErrors;
              if (analyzer) d.analytics = addReports(d.analytics, analyzer.report());
              running.delete(cont);
              // Forgotten once no chain of the id runs and none of its ffmpegs is left: not when the
              // wait for its last one ends (FFMPEG_EXIT_WAIT_MS at most), which left a network
              // camera's stuck one behind unknown to the next chain (an edit 2 s after), and
              // each edit while the camera hung could leave one more (one at most a source).
              // One listener a held id, on the ffmpeg that has not gone, whatever the edits.
              const forget = (): void => {
                if (running.size > 0 || live.get(src.id) !== held) return;
                const left = ffmpegNotGone(held.last);
                if (!left) return void live.delete(src.id);
                if (held.awaiting === left) return;
                held.awaiting = left;
                left.once('exit', () => {
                  held.awaiting = undefined;
                  forget();
                });
              };
              void lastFfmpegGone(held.last).then(forget);
              // The largest next seq of its chains, whichever ended last (one attached while another still ran).
              Object.assign(d, cont, { fps: st.fps ?? cont.fps, nextSeq: Math.max(d.nextSeq, cont.nextSeq) });
              detached.delete(src.id); // the latest detached last: the first is forgotten first
              detached.set(src.id, d);
              if (detached.size > maxDetached) {
                const [oldest, totals] = detached.entries().next().value!;
                seqFloor = Math.max(seqFloor, totals.nextSeq);
                detached.delete(oldest);
              }
              options.onDetach?.(src.id);
            }),
          );
        }),
      ),
    close: async () => {
      if (ownsDetector) await detector.release();
    },
  };
}

function resolvePath(p: string, baseDir: string): string {
  return isAbsolute(p) ? p : resolve(baseDir, p);
}

/**
 * What ffmpeg opens for a source: an `asset:` video's local path, a file relative to `baseDir`,
 * or the URL as given. An unknown asset's error names `field` (`sources[2]`) and its `uri`.
 * `signal` interrupts the asset's download.
 */
export async function resolveSourceUrl(src: SourceConfig, baseDir: string, ffmpegPath: string, log: (m: string) => void, field = `source "${src.id}"`, signal?: AbortSignal): Promise<string> {
  if (src.uri.startsWith('asset:')) {
    return resolveStream(src.uri.slice('asset:'.length), ffmpegPath, { log, signal }).catch((e: unknown) => {
      throw inContext(e, `${field}.uri`, [ErrorCodes.ASSET_UNKNOWN]);
    });
  }
  if (src.uri.startsWith('file://')) {
    try {
      return fileURLToPath(src.uri); // the schema took only file:///absolute URLs that convert
    } catch (e) {
      throw new ArgusError(ErrorCodes.CONFIG, `${field}.uri: ${(e as Error).message}`);
    }
  }
  if (sourceKind(src.uri) === 'file') return resolvePath(src.uri, baseDir);
  return src.uri;
}

export function pipelineBaseDir(file: string): string {
  return dirname(resolve(file));
}
