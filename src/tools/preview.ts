import { writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Subject } from 'rxjs';
import { analyze, type FrameResult } from '../analytics/analyze.js';
import { SourceAnalyzer } from '../analytics/analyzer.js';
import { drawOverlay, encodeImage, lineLabel, zoneLabel } from '../annotate/draw.js';
import { sceneOf, type Scene } from '../annotate/scene.js';
import { checkClasses } from '../config/classes.js';
import { loadPipeline } from '../config/load.js';
import { redact } from '../core/redact.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { writeWhole } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import type { Point } from '../core/polygon.js';
import { forTerminal } from '../core/text.js';
import { pipelineBaseDir, resolveSourceUrl, settingOf } from '../pipeline/pipeline.js';
import type { DetectedFrame } from '../postprocess/postprocess.js';
import { indexedFormat, isStillImage, networkInputArgs, sourceKind, userInputArgs } from '../sources/ffmpeg-args.js';
import { sameFileBounded, statBounded, unwritableDir } from '../sources/file-look.js';
import { HttpRelay } from '../sources/http-relay.js';
import { configuredFfmpegPath, describeFfmpeg, resolveFfmpeg } from '../sources/ffmpeg-path.js';
import { secretsRelay } from '../sources/secrets-relay.js';
import { track } from '../tracking/track.js';
import { lookedInput, videoFrames, type RawFrame } from './frames.js';
import { FrameDetector, loadToolDetector } from './model.js';
import { Report } from './report.js';

export interface PreviewOptions {
  /** Source id (default: the first source). */
  source?: string;
  /** Seconds into the source (files; default 0). */
  at?: number;
  /** The PNG (or JPEG, by extension) to write. */
  out: string;
  log?: LogFn;
  /** Where the report goes (default stdout). */
  write?: (text: string) => void;
}

export interface PreviewResult {
  source: string;
  /** Time of the frame drawn, seconds into the source. */
  at: number;
  width: number;
  height: number;
  scene: Scene;
  /** The frame's detections (tracked ones with their id). */
  result: FrameResult;
}

/** Seconds of video before `--at` run through detection and tracking, so tracks exist on the frame drawn… */
const HISTORY_S = 2;
/** …but at most this many frames (a 30 fps source gets the last 0.67 s). */
const HISTORY_FRAMES = 20;

/** A first frame this much after the time asked for, after a seek, landed late (a key frame after it). */
const LANDED_LATE_S = 0.5;

/** How far before the time asked for each new try seeks (then no seek at all): see runPreview. */
const SEEK_MARGINS_S = [3, 30, 300];

/**
 * Checks `--out` before anything is read: a .png, .jpg or .jpeg file (not a folder), never one
 * of `inputs` (the pipeline file, the source's video: the picture would replace them), in a
 * folder that exists or can be made, and can be written.
 */
async function checkOut(out: string, inputs: readonly string[]): Promise<void> {
  const fail = (m: string) => {
    throw new ArgusError(ErrorCodes.SINK_FILE, `preview --out ${out}: ${m}`);
  };
  if (out.trim() === '') throw new ArgusError(ErrorCodes.CONFIG, 'preview --out: give the .png (or .jpg) file to write');
  // Looked at asynchronously and bounded (statBounded, sameFileBounded): statSync on a hung
  // network mount held the event loop, and Ctrl-C with it.
  const looked = await statBounded(out);
  if ('problem' in looked && looked.problem.code === ErrorCodes.SOURCE_TIMEOUT) fail(looked.problem.why);
  if ('stats' in looked && looked.stats.isDirectory()) fail('is a folder; name the .png (or .jpg) file to write');
  if (!/\.(png|jpe?g)$/i.test(out)) fail('the preview is a picture: name a .png, .jpg or .jpeg file');
  let over: string | undefined;
  for (const i of inputs) if (!over && (await sameFileBounded(i, out))) over = i;
  if (over) fail(`would be written over ${over}, which the preview reads; choose another name`);
  const dir = dirname(resolve(out));
  const why = await unwritableDir(dir);
  if (why) fail(`cannot write into ${dir} (${why})`);
}

const px = (p: Point) => `[${Math.round(p[0])}, ${Math.round(p[1])}]`;

/**
 * `argus preview PIPELINE.yaml`: one frame of a source at `--at` seconds, at full resolution
 * (ffmpeg), with that frame's detections and tracks (the frames of the 2 s before it run
 * through detection, tracking and the source's rules as the pipeline runs them), the zones and
 * lines placed by the pipeline's own analyzer with their class filters and the lines' `in`
 * direction, drawn into a PNG; prints the zones' and lines' pixel coordinates.
 */
export async function runPreview(file: string, options: PreviewOptions): Promise<PreviewResult> {
  const report = options.write ? undefined : new Report();
  const write = options.write ?? report!.write;
  const log: LogFn = (m, f, level) => (level === 'warn' || level === 'error' ? options.log?.(m, f, level) : undefined);
  await checkOut(options.out, [file]);
  const config = await loadPipeline(file);
  const baseDir = pipelineBaseDir(file);
  // A worker's YAML has no sources: its cameras come from the cameras topic (it read sources[0].uri of nothing).
  if (config.sources.length === 0) throw new ArgusError(ErrorCodes.CONFIG, `${file}: a worker YAML (cluster section), with no sources to preview: its cameras are in the cameras topic; preview a pipeline YAML that names the camera under sources`);
  // Without --source: the first enabled source (one switched off would not run).
  const index = options.source === undefined ? Math.max(0, config.sources.findIndex((s) => s.enabled)) : config.sources.findIndex((s) => s.id === options.source);
  if (index < 0) throw new ArgusError(ErrorCodes.CONFIG, `preview --source ${options.source}: no such source in ${file} (sources: ${config.sources.map((s) => s.id).join(', ')})`);
  const src = config.sources[index];
  const asked = options.at ?? 0;
  if (!(asked >= 0)) throw new ArgusError(ErrorCodes.CONFIG, `preview --at ${options.at}: expected seconds ≥ 0`);

  const setting = (field: string) => settingOf({ configFile: file }, field);
  const loading = loadToolDetector({ manifest: config.model.manifest, path: config.model.path }, { baseDir, log, base: config.model, field: setting('model.manifest') });
  loading.catch(() => undefined); // awaited below
  let ffmpegPath: string;
  let url: string;
  let once: boolean;
  try {
    ffmpegPath = (config.ffmpegPath ? await describeFfmpeg(configuredFfmpegPath(config.ffmpegPath, baseDir), 'config ffmpegPath', setting('ffmpegPath')) : await resolveFfmpeg()).path;
    url = await resolveSourceUrl(src, baseDir, ffmpegPath, (m) => log(m), setting(`sources[${index}]`));
    // The source's file looked at once, bounded (lookedInput): what keeps it from being read
    // (not there, a folder, a stat's error, no answer from its file system) said before the model's wait.
    once = await lookedInput(url);
    if (sourceKind(url) === 'file') await checkOut(options.out, [url]);
  } catch (e) {
    await loading.then((d) => d.release(), () => undefined);
    throw e;
  }
  const detector = await loading;
  try {
    const file_ = sourceKind(url) === 'file';
    if (!file_ && asked > 0) throw new ArgusError(ErrorCodes.CONFIG, `preview --at ${asked}: source "${src.id}" is a live stream (${sourceKind(url)}); --at applies to files`);
    // A still image is one frame, the picture at every time: it is shown whatever --at says (past
    // its first 0.04 s it had "no frame there", a picture a pipeline runs as that very frame).
    const still = file_ && isStillImage(url);
    const at = still ? 0 : asked;
    const tracking = config.tracking.enabled;
    const start = tracking ? Math.max(0, at - HISTORY_S) : at;
    // Checked before any frame, so unknown class labels fail, each naming its field.
    checkClasses([{ source: src, path: `sources[${index}]` }], detector.labels, `${file}: `);
    const analyzer = new SourceAnalyzer(src, detector.labels, setting(`sources[${index}]`), (m) => log(m, { source: src.id }, 'warn'));
    const fd = new FrameDetector(detector, config.postprocess);

    // The pipeline's tracking and rules operators, fed one detected frame at a time.
    let fps: number | undefined = src.fps;
    const detected = new Subject<DetectedFrame>();
    let last: FrameResult | undefined;
    let failed: unknown;
    detected.pipe(track(config.tracking, () => fps), analyze(analyzer)).subscribe({ next: (r) => (last = r), error: (e) => (failed = e) });

    let durationS: number | undefined;
    // ffmpeg's length of the file, believed only from an index (MP4, MKV…): an MPEG-TS file's is a
    // guess from its timestamps, and two recordings joined with `cat`, each with its own, are given
    // the length of the first (--at in the second was refused as beyond the end). Else the file's
    // end is where its frames end.
    let lengthKnown = false;
    const pastEnd = () => file_ && lengthKnown && at > durationS!;
    /** The time in the file of the last frame decoded by this try, shown or skipped; whether a frame after `at` came. */
    let lastSeen = -Infinity;
    let pastAt = false;
    /** The file's frames (from this try's seek) ended before `at`: it is not within the last one's time (its period, or its very time at an unknown rate). */
    const endedBefore = () => !pastAt && at >= lastSeen + (fps ? 1 / fps : 1e-6);
    // Frames at or before this time (seconds in the file) are decoded but not detected: the
    // history is the last HISTORY_FRAMES frames up to `at`, by the frames' own times (after a
    // seek, the first frame is the first at or after the seek point, not the seek point).
    let skipUntil = -Infinity;
    let from: number | undefined;
    let lastFrame: RawFrame | undefined;
    // Where ffmpeg is asked to start. An indexed file (MP4, MKV…) lands on the frame asked for;
    // an MPEG-TS file lands on the next key frame after it (8.38 s for 5 s, a frame of the wrong
    // time shown as the preview), and a raw H.264/H.265 stream gives no frame at all after a
    // seek. So a first frame later than `start` (or none) starts again further back, down to no
    // seek at all: the frames before `start` are decoded and skipped.
    // A named pipe (any input read once) is read from its start, once: ffmpeg cannot seek it (it
    // decodes from the start and drops what is before the seek point), and read again after a
    // seek that found nothing, its writer was gone: no frame, VAP_ERR_SOURCE_TIMEOUT 15 s later.
    // From 0, its frames before `at` are decoded and skipped, and its last one is known.
    let seekAt = once ? 0 : start;
    // A camera's credentials (and an rtsps:// certificate to check) go through a relay of
    // argus's, as in a run: ffmpeg's command line is readable by every local user.
    const relay = file_ ? undefined : secretsRelay({ kind: sourceKind(url), url, rtspTransport: src.rtspTransport, inputArgs: src.inputArgs, tls: src.tls })?.();
    const ffmpegUrl = relay ? await relay.listen() : url;
    try {
      for (let attempt = 0; ; attempt++) {
        let late = false;
        let seen = false;
        const frames = videoFrames({
          ffmpegPath,
          url: ffmpegUrl,
          // The source's inputArgs, as a run gives them (ffmpeg was given none: a raw video
          // described by them, a V4L2 camera's format, failed here and ran): through argus's HTTP
          // relay without the options it takes over; an RTSP camera's, relayed or not, after the
          // source's transport, as a run's (without a relay, ffmpeg's own default tried UDP first,
          // whatever rtspTransport said: a camera reached over TCP only waited for it).
          // Before them, the transport and the short probe of a run's (networkInputArgs: without
          // it, a camera's first frame came 1.4 s later here than in a run, an HTTP or UDP one's 5 s).
          inputArgs: [
            ...networkInputArgs({ kind: sourceKind(url), url, rtspTransport: src.rtspTransport, inputArgs: src.inputArgs, decode: src.decode }),
            ...(relay instanceof HttpRelay ? (relay.ffmpegInputArgs(src.inputArgs) ?? []) : userInputArgs(url, sourceKind(url), src.inputArgs ?? [])),
          ],
          readsOnce: once,
          start: seekAt,
          // Up to and including the frame shown at `at` (live: the first 2 s).
          duration: file_ ? at - seekAt + 1e-3 : tracking ? HISTORY_S : 1e-3,
          // A camera joined mid-GOP: its first frame may come seconds after the stream's time 0.
          durationFromFirst: !file_,
          onPastDuration: () => (pastAt = true),
          fps: src.fps,
          deinterlace: src.decode.deinterlace,
          onDuration: (s, format) => {
            durationS = s;
            lengthKnown = indexedFormat(format);
          },
          onInfo: (i) => {
            fps ??= i.fps;
            if (fps) skipUntil = at - HISTORY_FRAMES / fps + 1e-6;
          },
        });
        lastSeen = -Infinity;
        pastAt = false;
        for await (const f of frames) {
          if (pastEnd()) break;
          if (!seen && file_ && seekAt > 0 && seekAt + f.pts > start + LANDED_LATE_S) {
            late = true;
            break; // (ends ffmpeg)
          }
          seen = true;
          lastSeen = seekAt + f.pts;
          if (seekAt + f.pts < start - 1e-6 || seekAt + f.pts <= skipUntil) continue;
          from ??= seekAt + f.pts;
          detected.next(await fd.detect(f, src.id));
          if (failed) throw failed;
          lastFrame = f;
          lastFrame.pts += seekAt; // its time in the file
        }
        // No frame after the seek, or none as far as `at`: a seek into a file whose timestamps
        // start again part-way (joined recordings) finds nothing, or the first part's frames only.
        const shortAfterSeek = file_ && seekAt > 0 && !pastEnd() && (!seen || endedBefore());
        if (once || (!late && !shortAfterSeek)) break;
        seekAt = attempt < SEEK_MARGINS_S.length ? Math.max(0, start - SEEK_MARGINS_S[attempt]) : 0;
      }
    } catch (e) {
      // ffmpeg's words name the camera, not the relay.
      throw relay && e instanceof ArgusError ? new ArgusError(e.code, redact(relay.unrelay(e.message)), { cause: e }) : e;
    } finally {
      relay?.close();
    }
    if (pastEnd()) {
      throw new ArgusError(ErrorCodes.CONFIG, `preview --at ${at}: beyond the end of source "${src.id}" (${url}), which lasts ${durationS!.toFixed(2)} s`);
    }
    if (file_ && lastSeen > -Infinity && endedBefore()) {
      throw new ArgusError(ErrorCodes.CONFIG, `preview --at ${at}: beyond the end of source "${src.id}" (${url}), whose last frame is at ${lastSeen.toFixed(2)} s`);
    }
    if (!lastFrame || !last) {
      throw new ArgusError(ErrorCodes.CONFIG, `preview --at ${at}: source "${src.id}" (${url}) has no frame there${lengthKnown ? ` (it lasts ${durationS!.toFixed(2)} s)` : ''}`);
    }

    // Zones and lines where the analyzer placed them (on the first frame's size).
    const scene = sceneOf(analyzer);
    // (A raw stream's first frame may be stamped a hair below 0.)
    const shownAt = Math.max(0, lastFrame.pts);
    const d = last.detections;
    const tracked = d.trackerId ? d.trackerId.filter((t) => t >= 0).length : 0;
    const image = { data: lastFrame.data, width: lastFrame.width, height: lastFrame.height, order: 'rgb' as const };
    const panel = [`${src.id} at ${shownAt.toFixed(2)} s: ${d.length} detection${d.length === 1 ? '' : 's'}${tracking ? `, ${tracked} tracked` : ''}`];
    const drawn = await drawOverlay(image, { detections: d, labels: detector.labels, scene, panel });
    const unwritten = (e: NodeJS.ErrnoException) => new ArgusError(ErrorCodes.SINK_FILE, `preview --out ${options.out}: cannot write it (${e.code ?? e.message})`, { cause: e });
    const encoded = await encodeImage({ ...image, data: drawn }, /\.jpe?g$/i.test(options.out) ? 'jpeg' : 'png');
    // Whole or not at all: a full disk left a truncated picture under the name.
    await writeWhole(options.out, (partial) => writeFile(partial, encoded).catch((e: NodeJS.ErrnoException) => {
      throw unwritten(e);
    }), unwritten);

    const lines = [`${options.out}: source "${src.id}" at ${shownAt.toFixed(2)} s, ${lastFrame.width}x${lastFrame.height}${still && asked > 0 ? ` (a still image: its one frame, whatever --at ${asked} says)` : ''}`];
    for (const z of scene.zones) lines.push(`zone ${zoneLabel(z)}: polygon ${z.polygon.map(px).join(' ')} (pixels)`);
    for (const l of scene.lines) lines.push(`line ${lineLabel(l)}: from ${px(l.from)} to ${px(l.to)} (pixels); "in" crosses from the right of from→to to its left (the green arrow)`);
    if (!scene.zones.length && !scene.lines.length) lines.push('no zones or lines in this source');
    lines.push(`${d.length} detection${d.length === 1 ? '' : 's'}${tracking ? ` (${tracked} tracked, from ${Math.max(0, from ?? start).toFixed(2)} s)` : ''}`);
    for (let i = 0; i < d.length; i++) {
      const id = d.trackerId && d.trackerId[i] >= 0 ? `#${d.trackerId[i]} ` : '';
      const b = Array.from(d.xyxy.subarray(i * 4, i * 4 + 4), (v) => Math.round(v));
      lines.push(`  ${`${id}${detector.labels[d.classId[i]] ?? d.classId[i]}`.padEnd(18)} ${d.confidence[i].toFixed(2)}  [${b.join(', ')}]`);
    }
    // Labels come from the model file, zone and line names from the YAML: shown, never run by the terminal.
    write(`${lines.map(forTerminal).join('\n')}\n`);
    await report?.finish('preview');
    return { source: src.id, at: shownAt, width: lastFrame.width, height: lastFrame.height, scene, result: last };
  } finally {
    await detector.release();
  }
}
