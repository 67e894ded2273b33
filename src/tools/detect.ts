import { constants, type Stats } from 'node:fs';
import { access, writeFile } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { drawOverlay, encodeImage, placement, scaleOverlay, type FrameImage, type Overlay } from '../annotate/draw.js';
import { gapBefore, outputSlot, VideoWriter } from '../annotate/video-writer.js';
import { PostprocessSchema } from '../config/schema.js';
import type { Detections } from '../core/detections.js';
import { redact } from '../core/redact.js';
import { ArgusError, ErrorCodes, isArgusError, type ErrorCode } from '../core/errors.js';
import { isVideoPath, VIDEO_EXTENSIONS, writeWhole } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import { forTerminal, forTerminalLines } from '../core/text.js';
import { sourceKind } from '../sources/ffmpeg-args.js';
import { statBounded, statsBounded, unwritableDir, type StatLook } from '../sources/file-look.js';
import { resolveFfmpeg } from '../sources/ffmpeg-path.js';
import { quoteDamage } from '../sources/stats.js';
import { inputKind, readImage, videoFrames, type RawFrame, type VideoInfo } from './frames.js';
import { FrameDetector, loadToolDetector, modelRef } from './model.js';
import { Report } from './report.js';

export interface DetectOptions {
  /** Print one JSON document on stdout instead of the table. */
  json?: boolean;
  /** Annotated copy: a file for one input, a folder for several. */
  out?: string;
  /** Score threshold (default: the pipeline default, 0.3). */
  score?: number;
  /** NMS IoU threshold (default: the pipeline default, 0.45). */
  iou?: number;
  /** Model: a manifest name or path, or an ONNX file (default yolox-nano). */
  model?: string;
  /** Videos and GIFs: sample this many frames per second (default: every frame). */
  fps?: number;
  log?: LogFn;
  /** Where the table or JSON goes (default stdout). */
  write?: (text: string) => void;
}

/** One detection as `--json` prints it: box in source pixels, x1 y1 x2 y2, not rounded. */
export interface JsonDetection {
  classId: number;
  label: string;
  score: number;
  box: [number, number, number, number];
}

export interface JsonFrame {
  index: number;
  /** Seconds from the start (0 for a still image). */
  pts: number;
  /** The frame's size, where it is not the file's (its first frame's): a video whose resolution changed. Its boxes are in its own pixels. */
  width?: number;
  height?: number;
  detections: JsonDetection[];
}

export interface JsonFile {
  /** The path as given on the command line. */
  file: string;
  width: number;
  height: number;
  frames: JsonFrame[];
  /** The annotated copy written (`--out`). */
  annotated?: string;
  /** Why this file could not be read (the other files go on). */
  error?: { code: string; message: string };
  /** Read, but not all of it: a video whose frames end well before the length it claims (cut short, damaged), or with damage ffmpeg reported in it. */
  warning?: string;
  /** ffmpeg's reports of damaged input (a corrupt packet, a decoding error), those between two frames read counted once (a source's `decodeErrors`). */
  decodeErrors?: number;
}

/** What `argus detect --json` prints. */
export interface DetectOutput {
  /** The model: manifest name or ONNX path, as resolved. */
  model: string;
  files: JsonFile[];
  /** Files that failed (each with its `error`). */
  failed: number;
}

/** The annotated copy `target` could not be written (`e`: the file system's error). */
function unwritten(target: string, e: NodeJS.ErrnoException): ArgusError {
  return new ArgusError(ErrorCodes.SINK_FILE, `detect --out: cannot write the annotated copy ${target} (${e.code ?? e.message})`, { cause: e });
}

/** Still images written in the format their extension names; anything else becomes PNG. */
function imageFormat(path: string): 'png' | 'jpeg' {
  return /\.jpe?g$/i.test(path) ? 'jpeg' : 'png';
}

function toJson(d: Detections, labels: readonly string[]): JsonDetection[] {
  const out: JsonDetection[] = [];
  for (let i = 0; i < d.length; i++) {
    const o = i * 4;
    out.push({ classId: d.classId[i], label: labels[d.classId[i]] ?? String(d.classId[i]), score: d.confidence[i], box: [d.xyxy[o], d.xyxy[o + 1], d.xyxy[o + 2], d.xyxy[o + 3]] });
  }
  return out;
}

const fmtBox = (b: readonly number[]) => `[${b.map((v) => v.toFixed(1)).join(', ')}]`;

/** Frames of one file up to which the table lists every frame; longer files get a summary. */
const TABLE_FRAMES = 30;

/**
 * The readable report of one file: each detection (per frame for up to 30 frames), else counts by
 * label. Text for a terminal: labels come from the model file, so each line goes through forTerminal.
 */
export function formatFile(f: JsonFile, video: boolean): string {
  const lines: string[] = [];
  const total = f.frames.reduce((s, fr) => s + fr.detections.length, 0);
  const head = `${f.file}  ${f.width}x${f.height}`;
  if (!video) {
    const dets = f.frames[0]?.detections ?? [];
    lines.push(`${head}  ${dets.length} detection${dets.length === 1 ? '' : 's'}`);
    for (const d of dets) lines.push(`  ${d.label.padEnd(14)} ${d.score.toFixed(2)}  ${fmtBox(d.box)}`);
    return lines.map(forTerminal).join('\n');
  }
  lines.push(`${head}  ${f.frames.length} frame${f.frames.length === 1 ? '' : 's'}, ${total} detection${total === 1 ? '' : 's'}`);
  if (f.warning) lines.push(`  warning: ${f.warning}`);
  if (f.frames.length <= TABLE_FRAMES) {
    for (const fr of f.frames) {
      lines.push(`  frame ${String(fr.index).padStart(4)}  ${fr.pts.toFixed(2).padStart(7)} s  ${fr.width !== undefined ? `${fr.width}x${fr.height}  ` : ""}${fr.detections.length} detection${fr.detections.length === 1 ? '' : 's'}`);
      for (const d of fr.detections) lines.push(`      ${d.label.padEnd(14)} ${d.score.toFixed(2)}  ${fmtBox(d.box)}`);
    }
    return lines.map(forTerminal).join('\n');
  }
  // By label: detections, frames with one, best score.
  const by = new Map<string, { n: number; frames: number; best: number }>();
  for (const fr of f.frames) {
    const seen = new Set<string>();
    for (const d of fr.detections) {
      const e = by.get(d.label) ?? { n: 0, frames: 0, best: 0 };
      e.n++;
      e.best = Math.max(e.best, d.score);
      if (!seen.has(d.label)) e.frames++;
      seen.add(d.label);
      by.set(d.label, e);
    }
  }
  const most = Math.max(0, ...f.frames.map((fr) => fr.detections.length));
  lines.push(`  per frame: ${(total / Math.max(1, f.frames.length)).toFixed(1)} on average, ${most} at most`);
  for (const [label, e] of [...by].sort((a, b) => b[1].n - a[1].n)) {
    lines.push(`  ${label.padEnd(14)} ${String(e.n).padStart(6)} detection${e.n === 1 ? ' ' : 's'} in ${String(e.frames).padStart(5)} frame${e.frames === 1 ? ' ' : 's'}, best ${e.best.toFixed(2)}`);
  }
  return lines.map(forTerminal).join('\n');
}

/** Output path of the annotated copy of `file` (`out` is the file itself for one input, a folder for several or when it is one). */
function outPath(out: string, file: string, folder: boolean, video: boolean): string {
  if (!folder) return out;
  const stem = basename(file, extname(file));
  return join(out, video ? `${stem}.mp4` : `${stem}${/\.(jpe?g)$/i.test(file) ? extname(file) : '.png'}`);
}

/**
 * Where each file's annotated copy goes, checked before anything is read: a folder for several
 * files (made if missing); never over an input (a copy written over its own video would empty
 * it while it is read), never two inputs onto one copy, and a name whose format can hold the
 * copy (H.264 video: .mp4, .m4v, .mov, .mkv; a still image: .png, .jpg, .jpeg).
 */
async function planOutputs(out: string, files: readonly string[], inputStats: readonly (Stats | undefined)[]): Promise<string[]> {
  const fail = (m: string) => {
    throw new ArgusError(ErrorCodes.SINK_FILE, `detect --out ${out}: ${m}`);
  };
  if (out.trim() === '') throw new ArgusError(ErrorCodes.CONFIG, 'detect --out: give a file (one input) or a folder');
  // Looked at asynchronously and bounded (statBounded): statSync on a hung network mount held
  // the event loop, and Ctrl-C with it.
  const looked = await statBounded(out);
  if ('problem' in looked && looked.problem.code === ErrorCodes.SOURCE_TIMEOUT) fail(looked.problem.why);
  const isDir = 'stats' in looked && looked.stats.isDirectory();
  if (files.length > 1 && 'stats' in looked && !isDir) fail(`with ${files.length} files, --out is a folder, and this is a file`);
  const folder = files.length > 1 || isDir || /[/\\]$/.test(out);
  const targets = files.map((f) => outPath(out, f, folder, inputKind(f) === 'video'));
  // Each copy looked at once, LOOKS_AT_ONCE at a time (statsBounded; the inputs were, by runDetect: `inputStats`), and
  // compared with the inputs by path and by device and inode (a link to one): each copy was
  // compared with every input by two stats of its own, one pair after another, 2 x N x N stats
  // (5.7 s before the model loaded for 200 pictures; minutes for a glob of 1 000).
  const copies = (await statsBounded(targets)) as StatLook[];
  const inode = (st: Stats) => `${st.dev}:${st.ino}`;
  const inputAt = new Map<string, number>();
  const firstAt = (key: string, i: number) => void (inputAt.has(key) || inputAt.set(key, i));
  files.forEach((f, i) => {
    firstAt(`path ${resolve(f)}`, i);
    const st = inputStats[i];
    if (st) firstAt(`inode ${inode(st)}`, i);
  });
  const copyAt = new Map<string, number>();
  for (const [i, f] of files.entries()) {
    const t = targets[i];
    const video = inputKind(f) === 'video';
    if (video && !isVideoPath(t)) fail(`${f} is a video (or GIF); its annotated copy is H.264: name a ${VIDEO_EXTENSIONS.join(', ')} file`);
    if (!video && !/\.(png|jpe?g)$/i.test(t)) fail(`${f} is a still image; name a .png, .jpg or .jpeg file for its annotated copy`);
    const copy = copies[i];
    if ('problem' in copy && copy.problem.code === ErrorCodes.SOURCE_TIMEOUT) fail(copy.problem.why);
    const byPath = inputAt.get(`path ${resolve(t)}`);
    const byInode = 'stats' in copy ? inputAt.get(`inode ${inode(copy.stats)}`) : undefined;
    const over = Math.min(byPath ?? Infinity, byInode ?? Infinity);
    if (over < Infinity) fail(`the annotated copy of ${f} would be written over ${files[over]}, an input; choose another name or folder`);
    // An existing copy this process may not replace: refused before the model loads, not after reading.
    if ('stats' in copy && !(await access(t, constants.W_OK).then(() => true, () => false))) fail(`cannot write ${t} (EACCES)`);
    const j = copyAt.get(resolve(t));
    if (j !== undefined) fail(`${files[j]} and ${f} would both be written to ${t}; give them different names`);
    copyAt.set(resolve(t), i);
  }
  for (const dir of new Set(targets.map((t) => dirname(resolve(t))))) {
    const why = await unwritableDir(dir);
    if (why) fail(`cannot write into ${dir} (${why})`);
  }
  return targets;
}

/**
 * `argus detect FILE…`: detections on still images (decoded by sharp), GIFs and videos (every
 * frame decoded by ffmpeg, or at most `fps` a second, each once, with its own time), at full
 * resolution through the exact letterbox, the model and the pipeline's post-processing. Prints a table per file, or one JSON document;
 * `out` writes annotated copies (images as PNG or JPEG by extension, videos and GIFs as H.264
 * MP4). Returns the JSON document either way.
 */
export async function runDetect(files: readonly string[], options: DetectOptions = {}): Promise<DetectOutput> {
  const report = options.write ? undefined : new Report();
  const write = options.write ?? report!.write;
  const log: LogFn = (m, f, level) => (level === 'warn' || level === 'error' ? options.log?.(m, f, level) : undefined);
  if (files.length === 0) throw new ArgusError(ErrorCodes.CONFIG, 'detect: give at least one image or video file');
  // A URL (`argus detect https://…/x.jpg`, a camera) was "file not found" as any other name. A
  // V4L2 device (/dev/video0) is a camera too: opened as one (`-f v4l2`, tools/frames), it never
  // ends, and every frame's detections are kept for the report.
  const camera = (f: string) => sourceKind(f) === 'v4l2' || /^[a-z][a-z0-9+.-]*:\/\//i.test(f);
  // Each file looked at once, asynchronously and bounded, a few at a time (statsBounded): existsSync
  // and statSync on a hung network mount held the event loop, detect and Ctrl-C with it; all at
  // once, the files on such a mount took every thread of libuv's. A stat's error is said as it is
  // (a link loop, a folder this user may not enter: "permission denied"), not as "file not found".
  const looks = await statsBounded(files.map((f) => (camera(f) ? undefined : f)));
  const unreadable = (i: number): ArgusError | undefined => {
    const f = files[i];
    if (sourceKind(f) === 'v4l2') return new ArgusError(ErrorCodes.SOURCE_OPEN, `detect: ${f} is a V4L2 camera, not a file: detect reads files to their end; name it as a source of a pipeline and look at it with argus preview`);
    if (camera(f)) return new ArgusError(ErrorCodes.SOURCE_OPEN, `detect: ${f}: detect reads local files, not URLs: download the file first, or name a camera as a source of a pipeline and look at it with argus preview`);
    const l = looks[i];
    return l && 'problem' in l ? new ArgusError(l.problem.code, `detect: ${l.problem.why}`) : undefined;
  };
  // Nothing to read at all: fail before the model loads (with --json, its document all the same:
  // one error entry a file). Otherwise a missing file fails alone.
  if (files.every((_, i) => unreadable(i))) {
    if (!options.json) throw unreadable(0)!;
    const named = modelRef(options.model);
    const none: DetectOutput = { model: named.path ? resolve(named.path) : named.manifest!, files: files.map((f, i) => ({ file: redact(f), width: 0, height: 0, frames: [], error: { code: unreadable(i)!.code, message: redact(unreadable(i)!.message) } })), failed: files.length };
    write(`${JSON.stringify(none)}\n`);
    await report?.finish('detect');
    return none;
  }
  const post = PostprocessSchema.parse({ ...(options.score !== undefined ? { scoreThreshold: options.score } : {}), ...(options.iou !== undefined ? { iouThreshold: options.iou } : {}) });
  const targets = options.out !== undefined ? await planOutputs(options.out, files, looks.map((l) => (l && 'stats' in l ? l.stats : undefined))) : undefined;
  const ref = modelRef(options.model);
  const needsFfmpeg = files.some((f) => inputKind(f) === 'video');
  const [detector, ffmpeg] = await Promise.all([loadToolDetector(ref, { log, field: '--model' }), needsFfmpeg ? resolveFfmpeg() : undefined]);
  const fd = new FrameDetector(detector, post);
  const labels = detector.labels;
  const result: DetectOutput = { model: ref.path ? resolve(ref.path) : ref.manifest!, files: [], failed: 0 };
  try {
    for (const [i, file] of files.entries()) {
      const video = inputKind(file) === 'video';
      const target = targets?.[i];
      // Named without credentials wherever it is printed (a URL's user-info: README, "Security").
      const entry: JsonFile = { file: redact(file), width: 0, height: 0, frames: [] };
      /** `size`: the annotated copy's, where it is not the frame's (a video's is its first frame's). */
      const handle = async (frame: RawFrame, writeFrame?: (annotated: Buffer) => Promise<void>, size?: () => { width: number; height: number }) => {
        const { detections: d } = await fd.detect(frame);
        if (!entry.frames.length) {
          entry.width = frame.width;
          entry.height = frame.height;
        }
        const own = frame.width !== entry.width || frame.height !== entry.height ? { width: frame.width, height: frame.height } : {};
        entry.frames.push({ index: frame.index, pts: frame.pts, ...own, detections: toJson(d, labels) });
        if (writeFrame) await writeFrame(await drawnAt(imageOf(frame), { detections: d, labels }, size?.()));
      };
      try {
        const unread = unreadable(i);
        if (unread) throw unread;
        if ((looks[i] as { stats: Stats }).stats.isDirectory()) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `detect: ${file} is a folder: give the files in it (${join(file, '*.jpg')}, …)`);
        if (!video) {
          const frame = await readImage(file);
          await handle(frame, target ? async (px) => {
            const encoded = await encodeImage({ ...imageOf(frame), data: px }, imageFormat(target));
            await writeWhole(target, (partial) => writeFile(partial, encoded).catch((e: NodeJS.ErrnoException) => {
              throw unwritten(target, e);
            }), (e) => unwritten(target, e));
          } : undefined);
        } else {
          let writer: VideoWriter | undefined;
          let copySize: { width: number; height: number } | undefined;
          // The annotated copy's rate: the sampling rate, never above the stream's (sampling never repeats a frame).
          let fps = options.fps;
          // No slower than one frame for the whole file: one frame of a 139 s clip sampled at
          // --fps 0.0001 would otherwise make a copy that claims 10 000 s.
          let copyFps = fps;
          let info: VideoInfo | undefined;
          // ffmpeg's reports of damaged input: the first line, and how many times (those between two frames once, as a run's source counts them).
          let damage: string | undefined;
          let damaged = 0;
          // The frame the last report came after (videoFrames' `after`, by the log's order: the
          // same count on a busy machine, which reads the frames and the log in another order).
          let damageAfter: number | undefined;
          const onDamage = (line: string, after: number) => {
            damage ??= line;
            if (after !== damageAfter) damaged++;
            damageAfter = after;
          };
          // Each frame at its own time (a variable-rate file's, a GIF's delays): the previous
          // frame is repeated over a gap (up to MAX_GAP_SECONDS), as the annotate sink does, so
          // the copy plays as long as the file. A frame never waits for a free slot: one that
          // comes early (on the slot before) is written at the next, and later ones catch up.
          let base: number | undefined;
          let lastWritten = -1;
          let previous: Buffer | undefined;
          const onInfo = (i: VideoInfo) => {
            info = i;
            fps = options.fps && i.fps ? Math.min(options.fps, i.fps) : (options.fps ?? i.fps);
            copyFps = fps && i.durationS ? Math.max(fps, 1 / i.durationS) : fps;
          };
          // The copy is written under a temporary name, renamed once whole: a copy cut short by
          // a full disk (or by the file failing to read) is removed, not left looking like one.
          const read = async (partial: string | undefined) => {
            try {
              for await (const frame of videoFrames({ ffmpegPath: ffmpeg!.path, url: file, fps: options.fps, onInfo, onDamage })) {
                // The copy is at the first frame's size: a later picture of another size (the
                // file's resolution changed) is drawn into it, its aspect kept.
                copySize ??= { width: frame.width, height: frame.height };
                await handle(frame, partial !== undefined ? async (px) => {
                  const rate = copyFps ?? 10;
                  writer ??= new VideoWriter({ ffmpegPath: ffmpeg!.path, path: partial, name: target, width: copySize!.width, height: copySize!.height, fps: rate, order: 'rgb' });
                  const slot = outputSlot(frame.pts, (base ??= frame.pts), rate);
                  if (previous) for (let k = gapBefore(slot, lastWritten, rate); k > 0; k--) await writer.write(previous);
                  await writer.write(px);
                  lastWritten = Math.max(slot, lastWritten + 1);
                  previous = px;
                } : undefined, () => copySize!);
              }
            } finally {
              await (writer as VideoWriter | undefined)?.close();
            }
            if (entry.frames.length === 0) throw new ArgusError(ErrorCodes.SOURCE_PROBE, `detect: ${file}: ffmpeg decoded no video frame from it`);
          };
          await (target !== undefined ? writeWhole(target, read, (e) => unwritten(target, e)) : read(undefined));
          const cut = damage !== undefined ? cutShort(entry.frames.at(-1)!.pts, info, fps) : undefined;
          if (damaged > 0) entry.decodeErrors = damaged;
          // In the table and the JSON.
          if (cut) entry.warning = cut;
          else if (damage !== undefined) entry.warning = damagedWarning(damaged, damage);
        }
        if (target) entry.annotated = target;
      } catch (e) {
        // This file alone: the others are still read, and the run ends with an error after them.
        result.failed++;
        entry.error = { code: isArgusError(e) ? e.code : ErrorCodes.SOURCE_OPEN, message: redact((e as Error).message) };
        result.files.push(entry);
        // The copy could not be written: the file was read, and its detections are still given.
        const read = entry.error.code === ErrorCodes.SINK_FILE && entry.frames.length > 0;
        if (!options.json) write(`${read ? `${formatFile(entry, video)}\n` : ''}${forTerminalLines(`${entry.file}  ${entry.error.code}: ${entry.error.message}`)}\n`);
        continue;
      }
      result.files.push(entry);
      if (!options.json) write(`${formatFile(entry, video)}${target ? `\n  annotated: ${forTerminal(target)}` : ''}\n`);
    }
  } finally {
    await detector.release();
  }
  if (options.json) write(`${JSON.stringify(result)}\n`);
  await report?.finish('detect');
  return result;
}

/**
 * Why a video's frames ending at `lastPts` look cut short: more than a second (and two frame
 * periods) before the length the file claims. A file cut after its index (an MP4 copied in
 * part) decoded 7.6 s of a claimed 139.4 s, and detect said nothing. Asked only when ffmpeg
 * said the input was damaged: the length is the container's, which a longer audio track or a
 * GIF's last delay also makes longer than the frames.
 */
export function cutShort(lastPts: number, info: VideoInfo | undefined, fps: number | undefined): string | undefined {
  const claimed = info?.durationS;
  if (claimed === undefined || !(claimed > 0)) return undefined;
  const slack = Math.max(1, fps ? 2 / fps : 0);
  if (claimed - lastPts <= slack) return undefined;
  return `its frames end at ${lastPts.toFixed(2)} s of the ${claimed.toFixed(2)} s it claims: cut short or damaged; what was read is given`;
}

/**
 * The warning for a video read to its end with damage in it (a corrupt middle): `count` reports
 * (those between two frames read once), the first of them `line` (quoteDamage: redacted, up to 300 characters).
 */
export function damagedWarning(count: number, line: string): string {
  return `ffmpeg reported damaged input ${count === 1 ? 'once' : `${count} times`}: frames around it may be damaged or lost; first: ${quoteDamage(line)}`;
}

/** The error `argus detect` ends with when files failed (after printing every result). */
export function detectFailure(r: DetectOutput): ArgusError | undefined {
  if (r.failed === 0) return undefined;
  const bad = r.files.filter((f) => f.error);
  const code = bad.length === r.files.length && bad.every((f) => f.error!.code === bad[0].error!.code) ? bad[0].error!.code : ErrorCodes.SOURCE_OPEN;
  const unwritten = bad.filter((f) => f.error!.code === ErrorCodes.SINK_FILE);
  const unread = bad.filter((f) => f.error!.code !== ErrorCodes.SINK_FILE);
  const of = `of ${r.files.length} file${r.files.length === 1 ? '' : 's'}`;
  const parts = [
    unread.length ? `${unread.length} ${of} could not be read: ${unread.map((f) => f.file).join(', ')}` : '',
    unwritten.length ? `${unwritten.length} ${of} had no annotated copy written: ${unwritten.map((f) => f.file).join(', ')}` : '',
  ].filter(Boolean);
  return new ArgusError(code as ErrorCode, `detect: ${parts.join('; ')}`);
}

/**
 * `overlay` drawn onto `image`, at its own size, or placed into `size` (letterboxed, centred,
 * where its aspect differs; the overlay scaled with it, as the annotate sink places a picture).
 */
async function drawnAt(image: FrameImage, overlay: Overlay, size?: { width: number; height: number }): Promise<Buffer> {
  if (!size || (size.width === image.width && size.height === image.height)) return drawOverlay(image, overlay);
  const { picture, sx, sy } = placement(image.width, image.height, size);
  return drawOverlay(image, scaleOverlay(overlay, sx, sy, picture.left, picture.top), { ...size, picture });
}

function imageOf(f: RawFrame): FrameImage {
  return { data: f.data, width: f.width, height: f.height, order: 'rgb' };
}

