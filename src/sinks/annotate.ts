import { closeSync, openSync, statSync, type Stats } from 'node:fs';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import type { FrameResult } from '../analytics/analyze.js';
import { grabPicture } from '../analytics/snapshot.js';
import { drawOverlay, placement, scaleOverlay, type DrawSize, type FrameImage, type Overlay } from '../annotate/draw.js';
import { sceneOf } from '../annotate/scene.js';
import { gapBefore, outputSlot, VideoWriter, type VideoWriterOptions } from '../annotate/video-writer.js';
import type { AnnotateSinkConfig } from '../config/schema/sinks.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { isVideoPath, makeDirSync, sameFile, VIDEO_EXTENSIONS } from '../core/files.js';
import type { LogFn } from '../core/log.js';

/** What the sink needs of an encoder: `VideoWriter`, or a fake in tests. */
export interface AnnotateEncoder {
  /** Resolves once the encoder can take the next frame. */
  write(frame: Uint8Array): Promise<void>;
  /** Finishes the file. */
  close(): Promise<void>;
  /** Stops at once (a close that took too long). */
  kill(): void;
}

export interface AnnotateSinkOptions extends Pick<AnnotateSinkConfig, 'maxWidth' | 'fps' | 'queue'> {
  /** Output path as configured (`{source}`, a folder, or a file); relative paths resolve against `baseDir`. */
  path: string;
  baseDir: string;
  /** Ids of the sources that will run (how `path` is turned into one file per source). */
  sources: readonly string[];
  /**
   * Sources may also be attached after `open` (`argus worker`: all its cameras are). A plain file
   * path then names one file per source from the start (`out.mp4` → `out-<id>.mp4`), so that no two
   * sources ever share one, and an attached source's file is checked at its first frame as `open`
   * checks the others'. (A source unknown at `open` is given its own file in any case.)
   */
  attachable?: boolean;
  /**
   * Files the sources read: an output that is one of them is refused (it would be emptied at
   * start). Read again at an attached source's first frame: pass a list that the attached
   * sources' files join (`Pipeline.inputs`).
   */
  inputs?: readonly string[];
  /** Files other outputs write, by what writes them (`--jsonl`): an output that is one of them is refused. */
  writtenBy?: ReadonlyMap<string, string>;
  ffmpegPath: string;
  /** Channel order of the frames' pixels (the model's). */
  channelOrder: 'rgb' | 'bgr';
  /** Class id → name for the box labels. */
  labels: readonly string[];
  /** A source's frame rate (its config `fps`, else what ffmpeg reported), when known; the output rate unless `fps` is set. Unknown: 25. */
  fpsOf?: (source: string) => number | undefined;
  log?: LogFn;
  /** How long `close` waits for the frames in hand and for ffmpeg to finish, ms, before killing it. Default 10 000. */
  closeTimeoutMs?: number;
  /** Starts an encoder (default: ffmpeg through `VideoWriter`). */
  encoder?: (o: VideoWriterOptions) => AnnotateEncoder;
  /** Draws the overlay onto a copy of the picture at `size` (default `drawOverlay`: libvips, off the main thread). */
  draw?: (image: FrameImage, overlay: Overlay, size: DrawSize) => Promise<Buffer>;
}

/** One source's figures. After `close`: offered = taken + dropped + skipped, and taken = written + lost. */
export interface AnnotateSourceStats {
  source: string;
  /** The MP4 written. */
  path: string;
  /** Frames the pipeline handed to the sink. */
  offered: number;
  /** Frames copied out to be drawn and encoded. */
  taken: number;
  /** Frames not copied: `queue` frames were already waiting (the drawing or the encoder was behind), or the encoder had failed. */
  dropped: number;
  /**
   * Of `dropped`: frames offered while no video was being written (the encoder had failed, the
   * output was refused, or the source's video or the sink was closing): not for being behind.
   */
  unwritten: number;
  /** Frames not copied because the output frame rate (`fps`) is below the source's. */
  skipped: number;
  /**
   * Taken frames handed to the encoder. After a clean close every one of them is in the file;
   * after an encoder failure (`error`) the file holds fewer: those ffmpeg had finished, up to its
   * last complete fragment.
   */
  written: number;
  /** Taken frames not encoded (the drawing or the encoder failed). */
  lost: number;
  /** Extra copies of the previous frame written in the place of frames not encoded (dropped here or by the pipeline), so the video keeps the source's timing. */
  repeated: number;
  /** Output size, once the first frame was taken. */
  width?: number;
  height?: number;
  fps?: number;
  /** Why this source's video stopped being written. */
  error?: string;
}

interface SourceState {
  stats: AnnotateSourceStats;
  encoder?: AnnotateEncoder;
  /** Pts of the first frame taken: output slot 0. */
  base?: number;
  /** Output slot of the last frame offered (taken or dropped), of the last one taken, and of the last one written. */
  lastOffered: number;
  lastTaken: number;
  lastWritten: number;
  /** The last frame written (repeated to fill gaps). */
  previous?: Buffer;
  /** Frames taken and not yet through the encoder. */
  inHand: number;
  /** The chain of writes, in frame order. */
  tail: Promise<void>;
  drawErrorLogged: boolean;
  /** The source left (detach): its video is being finished; its frames are dropped until that is done. */
  ending?: Promise<void>;
  /** Its stays so far (1 until it left and came back), and the file of its first: each later stay writes a file of its own (stayPath). */
  stays: number;
  /** It left (detach) and has not offered a frame since: its next one begins a stay. */
  left?: boolean;
  firstPath: string;
}

/**
 * The file of a source's `stay`-th stay on this worker, from the 2nd on: `out-cam.mp4` →
 * `out-cam.2.mp4`. A camera that came back wrote its first stay's file over, and the video of
 * that stay (evidence, to a safety team) was lost.
 */
export function stayPath(path: string, stay: number): string {
  const ext = extname(path);
  return `${path.slice(0, path.length - ext.length)}.${stay}${ext}`;
}

const DEFAULT_FPS = 25;

/**
 * The output file of each source: `{source}` replaced, `<id>.mp4` inside a folder, or `-<id>`
 * before the extension when several sources share one path, or `perSource` (sources attached
 * later may join them).
 */
export function annotatePaths(path: string, sources: readonly string[], baseDir: string, perSource = false): Map<string, string> {
  const safe = (id: string) => id.replace(/[^A-Za-z0-9_.-]/g, '_');
  const abs = isAbsolute(path) ? path : resolve(baseDir, path);
  let folder = /[/\\]$/.test(path);
  if (!folder && !path.includes('{source}')) {
    try {
      folder = statSync(abs).isDirectory();
    } catch {
      // no such file yet: a file path
    }
  }
  const out = new Map<string, string>();
  for (const id of sources) {
    if (path.includes('{source}')) out.set(id, abs.replaceAll('{source}', safe(id)));
    else if (folder) out.set(id, join(abs, `${safe(id)}.mp4`));
    else if (sources.length > 1 || perSource) {
      const ext = extname(abs);
      out.set(id, `${abs.slice(0, abs.length - ext.length)}-${safe(id)}${ext || '.mp4'}`);
    } else out.set(id, abs);
  }
  return out;
}

/**
 * Why `file`, the output of `source`, is refused: not a container H.264 goes in, a file a source
 * reads (the same path or a link to it: creating the output would empty the recording), or the
 * output of another source (two encoders would write one file).
 */
function refusal(source: string, file: string, outputs: ReadonlyMap<string, string>, o: Pick<AnnotateSinkOptions, 'inputs' | 'writtenBy'>): ArgusError | undefined {
  // `--annotate out`, a folder not made yet: a file of that name, without a word on the folder form.
  const folder = extname(file) === '' ? `, or end the path in / for a folder (one ID.mp4 a source)` : '';
  if (!isVideoPath(file)) return new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: ${file}: the video is H.264; name a ${VIDEO_EXTENSIONS.join(', ')} file (ffmpeg picks the container by the extension)${folder}`);
  // A named pipe (or a device) named like a video: the output's creation (a synchronous open
  // for writing) waited for a reader with the event loop blocked, deaf to Ctrl-C; and an MP4 is
  // written to a file ffmpeg can seek in.
  const st = statOf(file);
  if (st && !st.isFile()) return new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: ${file} is ${st.isDirectory() ? 'a folder' : 'not a regular file (a named pipe, a socket or a device)'}: the video is written to a file (ffmpeg seeks back in it to finish the MP4)`);
  const input = o.inputs?.find((i) => sameFile(i, file));
  if (input) return new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: ${file} is a file a source reads (${input}); refusing to write over it`);
  const writer = [...(o.writtenBy ?? [])].find(([f]) => sameFile(f, file))?.[1];
  if (writer) return new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: ${file} is written by ${writer} too; name another file`);
  const other = [...outputs].find(([id, f]) => id !== source && f === file)?.[0];
  if (other !== undefined) return new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: ${file} is the video of ${other} too (the ids differ only in characters a file name cannot hold); use ids that differ in letters, digits, '.', '_' or '-'`);
  return undefined;
}

/**
 * The first of `paths` (each source's output file: annotatePaths) that AnnotateSink.open
 * refuses (refusal), or undefined; nothing is made. The run's open and `argus check` both ask it.
 */
export function annotateRefusal(o: Pick<AnnotateSinkOptions, 'inputs' | 'writtenBy'>, paths: ReadonlyMap<string, string>): ArgusError | undefined {
  for (const [source, file] of paths) {
    const refused = refusal(source, file, paths, o);
    if (refused) return refused;
  }
  return undefined;
}

/** `file`'s stat (links followed), or undefined where there is none. */
function statOf(file: string): Stats | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

/** Creates (empties) an output file, folders made as needed; VAP_ERR_SINK_FILE naming `sinks.annotate.path` when it cannot be written. */
function createOutput(file: string): void {
  try {
    makeDirSync(dirname(file));
    closeSync(openSync(file, 'w'));
  } catch (e) {
    throw new ArgusError(ErrorCodes.SINK_FILE, `sinks.annotate.path: cannot write ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
}

/** Even output size for x264's yuv420p: at most `maxWidth` wide, the picture's aspect kept. */
function outputSize(width: number, height: number, maxWidth: number): { width: number; height: number } {
  const w = Math.min(width, maxWidth);
  const ow = Math.max(2, w - (w % 2));
  return { width: ow, height: Math.max(2, 2 * Math.round((height * ow) / width / 2)) };
}

/**
 * The annotated video: each source's frames with its boxes, track ids, zones, lines and counts,
 * drawn by libvips and encoded to MP4 by ffmpeg, beside the pipeline and never in its way.
 *
 * `offer` is called on the frame path and returns at once: a frame is copied (one memory copy
 * of its picture) only when fewer than `queue` frames of its source are waiting; otherwise it
 * is dropped and counted. Drawing runs in libvips' thread pool, encoding in ffmpeg (at a lower
 * CPU priority than the pipeline); writes to ffmpeg are awaited one after another, so a slow
 * encoder fills the queue and later frames are dropped rather than buffered.
 *
 * The video runs at a constant rate (the source's, or `fps`): each frame's place follows its
 * presentation time, and a frame the pipeline or the sink dropped is filled by repeating the
 * previous one (up to 10 s; a longer gap, an outage, is cut), so the video plays at the
 * source's speed. The MP4 is fragmented (an empty index, then one fragment per 2 s keyframe
 * interval): `close` ends it cleanly, and a process killed mid-run still leaves a playable file
 * up to its last complete fragment.
 */
export class AnnotateSink {
  readonly paths: ReadonlyMap<string, string>;
  private readonly states = new Map<string, SourceState>();
  private readonly log: LogFn;
  private closing: Promise<void> | undefined;

  private constructor(private readonly o: AnnotateSinkOptions, paths: Map<string, string>) {
    this.paths = paths;
    this.log = o.log ?? (() => {});
  }

  /**
   * Checks every output file (an H.264 container, not a file a source reads, not another
   * source's) before any is created, then creates them (folders made as needed); the first that
   * fails is VAP_ERR_SINK_FILE naming `sinks.annotate.path`.
   */
  static async open(o: AnnotateSinkOptions): Promise<AnnotateSink> {
    const paths = annotatePaths(o.path, o.sources, o.baseDir, o.attachable);
    const refused = annotateRefusal(o, paths);
    if (refused) throw refused;
    for (const file of paths.values()) createOutput(file);
    return new AnnotateSink(o, paths);
  }

  /** Per source, in the order sources first offered a frame. */
  get stats(): AnnotateSourceStats[] {
    return [...this.states.values()].map((s) => ({ ...s.stats }));
  }

  private state(source: string): SourceState {
    let s = this.states.get(source);
    if (!s) {
      const known = this.paths.get(source);
      // A source attached after open (a worker's camera): a file of its own, whatever the path's form.
      const path = known ?? annotatePaths(this.o.path, [source], this.o.baseDir, true).get(source)!;
      s = { stats: { source, path, offered: 0, taken: 0, dropped: 0, unwritten: 0, skipped: 0, written: 0, lost: 0, repeated: 0 }, lastOffered: -1, lastTaken: -1, lastWritten: -1, inHand: 0, tail: Promise.resolve(), drawErrorLogged: false, stays: 1, firstPath: path };
      if (known === undefined) this.checkAttached(s);
      this.states.set(source, s);
    }
    return s;
  }

  /**
   * open()'s checks for a source attached later, before its encoder can start: one that fails
   * is logged (VAP_ERR_SINK_FILE) and recorded as the source's error, so no frame of it is
   * written; the source itself runs on.
   */
  private checkAttached(s: SourceState): void {
    const { source, path } = s.stats;
    const taken = new Map([...this.paths, ...[...this.states.values()].map((o) => [o.stats.source, o.stats.path] as const), [source, path]]);
    let error = refusal(source, path, taken, this.o);
    if (!error) {
      try {
        createOutput(path);
      } catch (e) {
        error = e as ArgusError;
      }
    }
    if (!error) return;
    s.stats.error = `${error.code}: ${error.message}`;
    this.log(`annotate: no video of ${source}: ${error.message}`, { source, path, code: error.code }, 'error');
  }

  /** Takes a processed frame, or drops it; never waits. Call before the frame is released. */
  offer(r: FrameResult): void {
    const { frame } = r;
    const s = this.state(frame.source);
    if (s.left) this.comeBack(s);
    const st = s.stats;
    st.offered++;
    if (this.closing || st.error || s.ending) {
      st.dropped++;
      st.unwritten++;
      return;
    }
    const fps = (st.fps ??= this.o.fps ?? this.o.fpsOf?.(frame.source) ?? DEFAULT_FPS);
    s.base ??= frame.pts;
    // Its place in the output (a source at twice the output rate keeps every other frame).
    const slot = outputSlot(frame.pts, s.base, fps);
    if (slot <= s.lastTaken) {
      st.skipped++;
      return;
    }
    s.lastOffered = Math.max(s.lastOffered, slot);
    if (s.inHand >= this.o.queue) {
      st.dropped++;
      return;
    }
    s.lastTaken = slot;
    st.taken++;
    s.inHand++;

    const pic = grabPicture(frame, this.o.channelOrder);
    if (st.width === undefined) {
      const size = outputSize(pic.width, pic.height, this.o.maxWidth);
      st.width = size.width;
      st.height = size.height;
      const start = this.o.encoder ?? ((w: VideoWriterOptions) => new VideoWriter(w));
      s.encoder = start({ ffmpegPath: this.o.ffmpegPath, path: st.path, width: size.width, height: size.height, fps, order: this.o.channelOrder, layout: 'fragmented', gop: Math.max(1, Math.round(2 * fps)), nice: 10 });
    }
    const size = { width: st.width, height: st.height! };
    const { picture, sx, sy } = placement(pic.srcWidth, pic.srcHeight, size);
    const overlay = scaleOverlay(
      { detections: r.detections, labels: this.o.labels, scene: r.analyzer ? sceneOf(r.analyzer, r.analytics) : undefined },
      sx,
      sy,
      picture.left,
      picture.top,
    );
    const draw = this.o.draw ?? drawOverlay;
    const drawn = draw({ data: pic.rgb, width: pic.width, height: pic.height, order: this.o.channelOrder }, overlay, { ...size, picture });
    drawn.catch(() => undefined); // awaited in turn below
    s.tail = s.tail.then(() => this.write(s, drawn, slot)).finally(() => void s.inHand--);
  }

  /** Writes one drawn frame after the ones before it, repeating the previous frame over a gap. */
  private async write(s: SourceState, drawn: Promise<Buffer>, slot: number): Promise<void> {
    const st = s.stats;
    let buf: Buffer;
    try {
      buf = await drawn;
    } catch (e) {
      st.lost++;
      if (!s.drawErrorLogged) this.log(`annotate: drawing a frame of ${st.source} failed: ${(e as Error).message}`, { source: st.source }, 'warn');
      s.drawErrorLogged = true;
      return;
    }
    if (st.error) {
      st.lost++;
      return;
    }
    try {
      await this.fillGap(s, slot);
      await s.encoder!.write(buf);
      st.written++;
      s.previous = buf;
      s.lastWritten = slot;
    } catch (e) {
      st.lost++;
      st.error = (e as Error).message;
      this.log(`annotate: writing ${st.path} failed; no more frames of ${st.source} are written: ${st.error}`, { source: st.source, path: st.path }, 'error');
      s.encoder!.kill();
    }
  }

  /** Repeats the previous frame in the empty slots before `slot` (up to MAX_GAP_SECONDS of them). */
  private async fillGap(s: SourceState, slot: number): Promise<void> {
    const gap = gapBefore(slot, s.lastWritten, s.stats.fps!);
    if (!s.previous || gap <= 0) return;
    for (let i = 0; i < gap; i++) await s.encoder!.write(s.previous);
    s.stats.repeated += gap;
  }

  /**
   * Writes the frames in hand, then ends each ffmpeg so the MP4 is complete; what is not done
   * within `closeTimeoutMs` is cut off (ffmpeg killed: the file keeps its complete fragments).
   * Logs each source's figures. The same promise on every call.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const all = Promise.all([...this.states.values()].map(async (s) => {
        await s.ending;
        await this.finish(s);
      }));
      await all;
      for (const s of this.states.values()) this.report(s);
    })();
    return this.closing;
  }

  /**
   * A source that left (an argus worker's camera stopped, or moved to another worker): its
   * frames in hand are written and its video ended now, as at close() (it kept its ffmpeg, idle,
   * until the stop: one per camera that ever left the worker). Its figures stay, and go on adding
   * up if it comes back; its next frame then starts a file of that stay's own (stayPath).
   */
  detach(source: string): Promise<void> {
    const s = this.states.get(source);
    if (!s?.encoder || s.ending || this.closing) return s?.ending ?? Promise.resolve();
    const ending = (async () => {
      await this.finish(s);
      this.report(s);
      // The next frame taken makes a new encoder (offer: no size yet), from slot 0 of a new file.
      s.encoder = undefined;
      s.base = undefined;
      s.previous = undefined;
      s.lastOffered = s.lastTaken = s.lastWritten = -1;
      s.stats.width = s.stats.height = undefined;
      s.left = true;
    })().finally(() => (s.ending = undefined));
    s.ending = ending;
    return ending;
  }

  /** A source's first frame after it left: a stay of its own, in a file of its own, checked and made as a new camera's is (an error: no video of this stay; the camera runs on). */
  private comeBack(s: SourceState): void {
    s.left = false;
    s.stays++;
    s.stats.path = stayPath(s.firstPath, s.stays);
    if (!s.stats.error) this.checkAttached(s);
  }

  /**
   * Writes `s`'s frames in hand, then ends its ffmpeg so the MP4 is complete; what is not done
   * within `closeTimeoutMs` is cut off (ffmpeg killed: the file keeps its complete fragments).
   */
  private async finish(s: SourceState): Promise<void> {
    const timeoutMs = this.o.closeTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((res) => {
      timer = setTimeout(() => res('timeout'), timeoutMs);
      timer.unref?.();
    });
    const done = (async () => {
      await s.tail;
      if (!s.encoder) return;
      try {
        // Frames dropped at the end: the last frame written stands in for them, so the video lasts as long as the source ran.
        if (!s.stats.error) await this.fillGap(s, s.lastOffered + 1);
        await s.encoder.close();
      } catch (e) {
        s.stats.error ??= (e as Error).message;
      }
    })();
    if ((await Promise.race([done, timedOut])) === 'timeout') {
      s.stats.error ??= `not finished within ${timeoutMs} ms of the stop; ffmpeg was killed`;
      s.encoder?.kill();
      await Promise.race([done, new Promise((r) => setTimeout(r, 1000).unref?.())]);
    }
    clearTimeout(timer);
  }

  /** Logs a source's figures. */
  private report(s: SourceState): void {
    const st = s.stats;
    const repeated = st.repeated ? ` (and ${st.repeated} repeats of the previous frame in the place of frames not processed or dropped)` : '';
    const skipped = st.skipped ? `, ${st.skipped} skipped (fps ${st.fps})` : '';
    const lost = st.lost ? `, ${st.lost} lost` : '';
    // After a failure the frames handed to ffmpeg are not all in the file: say which count it is.
    const written = st.error ? `${st.written} frames handed to the encoder, not all of them in the file` : `written ${st.written}`;
    this.log(
      `annotate: ${st.source} → ${st.path}: ${written}${repeated}, dropped ${st.dropped} (the drawing or the encoder was behind${st.error ? ', or no video was being written' : ''})${skipped}${lost}${st.error ? `; ${st.error}` : ''}`,
      { source: st.source, path: st.path, offered: st.offered, written: st.written, dropped: st.dropped, skipped: st.skipped, lost: st.lost, repeated: st.repeated },
      st.error ? 'warn' : 'info',
    );
  }
}
