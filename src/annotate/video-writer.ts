import { type ChildProcess, execFile } from 'node:child_process';
import { setPriority } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { signalChild, spawnOwned } from '../core/children.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';

/** Longest gap, in seconds of output, filled by repeating the previous frame; a longer one (an outage) is cut. */
export const MAX_GAP_SECONDS = 10;

/**
 * The place of a frame shown at `pts` in a constant-rate video of `fps` whose slot 0 is at
 * `base` (seconds): the nearest slot, a tie going to the earlier one (a source at twice the
 * output rate keeps every other frame).
 */
export function outputSlot(pts: number, base: number, fps: number): number {
  return Math.round((pts - base) * fps - 1e-6);
}

/**
 * How many times the previous frame is repeated before one written at `slot`, the last written
 * having been at `lastWritten`: the empty slots between them, up to MAX_GAP_SECONDS of them.
 */
export function gapBefore(slot: number, lastWritten: number, fps: number): number {
  return Math.max(0, Math.min(slot - lastWritten - 1, Math.ceil(MAX_GAP_SECONDS * fps)));
}

export interface VideoWriterOptions {
  /** ffmpeg executable. */
  ffmpegPath: string;
  /** Output file; the container follows the extension (`.mp4`, `.mkv`, …). */
  path: string;
  /** What errors call the file (default `path`): the file a temporary one becomes (core/files.ts writeWhole). */
  name?: string;
  width: number;
  height: number;
  /** Frames per second of the output. */
  fps: number;
  /** Channel order of the frames written. */
  order: 'rgb' | 'bgr';
  /**
   * How the MP4 is laid out. `faststart` (default): the index (moov) is written at the end and
   * moved to the front, so the file is playable only once `close` has finished. `fragmented`:
   * an empty index first, then self-contained fragments (one per keyframe), so a process killed
   * mid-way still leaves a playable file up to its last complete fragment.
   */
  layout?: 'faststart' | 'fragmented';
  /** Frames between keyframes (x264's `-g`); with `fragmented`, the length of a fragment. Default x264's (250). */
  gop?: number;
  /** Scheduling priority of ffmpeg (`nice`, 0–19; higher yields the CPU to others). Default: the caller's. */
  nice?: number;
}

/** The encoder the annotated videos are written with (ffmpeg's `-c:v`). */
export const H264_ENCODER = 'libx264';

/**
 * Why the ffmpeg at `ffmpegPath` cannot write the annotated video, or undefined: it lists no
 * H264_ENCODER among its encoders (a build without libx264: every video's encoder failed at its
 * first frame), or it did not answer within `timeoutMs`. For `argus check`, beforehand.
 * Bounded by its own timer, and the process killed with SIGKILL: execFile's own timeout sent a
 * SIGTERM and waited for the exit, so a program that ignored it (a wrapper script, an ffmpeg
 * stuck) held the check until it ended, and one that then exited 0 with nothing listed was
 * said to lack the encoder.
 */
export function missingH264Encoder(ffmpegPath: string, timeoutMs = 10_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (why: string | undefined) => {
      if (timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      resolve(why);
    };
    const child = execFile(ffmpegPath, ['-hide_banner', '-encoders'], { maxBuffer: 4 * 1024 * 1024, windowsHide: true, killSignal: 'SIGKILL' }, (e, stdout) => {
      if (e && !stdout) return finish(`${ffmpegPath} did not list its encoders (${(e as NodeJS.ErrnoException).code ?? e.message})`);
      const has = stdout.split('\n').some((l) => l.trim().split(/\s+/)[1] === H264_ENCODER);
      finish(has ? undefined : `${ffmpegPath} has no ${H264_ENCODER} encoder, which the annotated video is written with (a build without it: install one with libx264, or set ffmpegPath)`);
    });
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      // Its pipes too, as `-version`'s (ffmpeg-path): a wrapper's child (a script's `sleep`, an
      // ffmpeg it started) holds them past the kill, and they kept argus check's loop alive until it ended.
      child.stdin?.destroy();
      child.stdout?.destroy();
      child.stderr?.destroy();
      finish(`${ffmpegPath} did not list its encoders (no answer within ${timeoutMs / 1000} s)`);
    }, timeoutMs);
  });
}

/**
 * Encodes packed 8-bit frames into a video file with ffmpeg (H.264, yuv420p, sizes padded to
 * even numbers as yuv420p needs). `write` resolves once ffmpeg has taken the frame (the pipe's
 * back-pressure); `close` finishes the file. A failure is VAP_ERR_SINK_FILE with the end of
 * ffmpeg's log.
 */
export class VideoWriter {
  private readonly child: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>;
  private readonly log: string[] = [];
  private failed: Error | undefined;
  private killed = false;
  /** Frames handed to ffmpeg so far (not all of them are in the file if ffmpeg then fails). */
  frames = 0;

  constructor(readonly options: VideoWriterOptions) {
    const { ffmpegPath, path, width, height, fps, order, layout = 'faststart', gop } = options;
    const movflags = layout === 'fragmented' ? '+frag_keyframe+empty_moov+default_base_moof' : '+faststart';
    const args = [
      '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
      '-f', 'rawvideo', '-pix_fmt', order === 'bgr' ? 'bgr24' : 'rgb24', '-s', `${width}x${height}`, '-r', String(fps), '-i', 'pipe:0',
      '-an', '-vf', 'pad=ceil(iw/2)*2:ceil(ih/2)*2', '-c:v', H264_ENCODER, '-preset', 'veryfast', ...(gop ? ['-g', String(gop)] : []), '-pix_fmt', 'yuv420p', '-movflags', movflags,
      // A fragmented file's index on disk from its first packet (else in ffmpeg's 32 KB write buffer: an encoder killed before its first fragment left no index, a file no player opens).
      ...(layout === 'fragmented' ? ['-flush_packets', '1'] : []), path,
    ];
    // In a process group of its own (spawnOwned), as a source's ffmpeg: in argus's, a terminal's
    // Ctrl-C reached the encoder too, which ended at once (status 255) while argus was still
    // writing it its last frames: the file lost them and the close said the encoder had failed.
    // Left by an argus killed outright, it reads the end of its input and finishes the file: not
    // given to the reaper (endsAlone), which would cut that short.
    // A spawn that throws (node throws ENOMEM and E2BIG) is told as one that fails later is
    // (spawnOwned: a child that never started, its 'error' event), at write and close. Out of the
    // annotate sink's offer, a throw ended the whole run.
    this.child = spawnOwned(ffmpegPath, args, { stdio: ['pipe', 'ignore', 'pipe'] }, undefined, true);
    // First: a spawn that fails (EMFILE: node says so on the next tick, and leaves the child
    // without its pipes) is told by its 'error' event, which ended argus where nothing listened
    // yet (the pipes below were read first, and threw); write and close say it.
    this.exited = new Promise((res) => {
      this.child.on('error', (error) => res({ code: null, signal: null, error }));
      this.child.on('close', (code, signal) => res({ code, signal }));
    });
    if (options.nice !== undefined && this.child.pid !== undefined) {
      try {
        setPriority(this.child.pid, options.nice);
      } catch {
        // not permitted here: ffmpeg keeps the caller's priority
      }
    }
    this.child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      this.log.push(s);
      if (this.log.length > 20) this.log.shift();
    });
    // A write after ffmpeg has gone fails with EPIPE: the exit status tells why.
    this.child.stdin?.on('error', (e) => (this.failed ??= e));
  }

  /** How ffmpeg ended: its exit code, or the signal that killed it by name (SIGXFSZ: the file size limit). */
  private ended(code: number | null, signal: NodeJS.Signals | null): string {
    if (signal === null) return `ffmpeg exited with code ${code}`;
    if (this.killed && signal === 'SIGKILL') return 'ffmpeg was killed by argus (SIGKILL)';
    return `ffmpeg was killed by ${signal}${SIGNAL_CAUSES[signal] ? ` (${SIGNAL_CAUSES[signal]})` : ''}`;
  }

  private error(detail: string): ArgusError {
    return new ArgusError(ErrorCodes.SINK_FILE, `writing ${this.options.name ?? this.options.path}: ${detail}${this.log.length ? `: ${this.log.join('').trim().split('\n').slice(-4).join('\n')}` : ''}`);
  }

  /** Writes one frame (width × height × 3 bytes); resolves when ffmpeg can take the next. */
  async write(frame: Uint8Array): Promise<void> {
    const { width, height } = this.options;
    if (frame.length !== width * height * 3) throw new RangeError(`VideoWriter: frame has ${frame.length} bytes, expected ${width * height * 3}`);
    if (this.failed) {
      // EPIPE: ffmpeg has gone or is going; its exit status says why (a moment's wait for it).
      const end = await Promise.race([this.exited, delay(1000, undefined, { ref: false })]);
      throw this.error(end && !end.error ? this.ended(end.code, end.signal) : this.failed.message);
    }
    if (this.child.exitCode !== null || this.child.signalCode !== null) throw this.error(this.ended(this.child.exitCode, this.child.signalCode));
    const stdin = this.child.stdin;
    if (!stdin) {
      // Not started (EMFILE: no pipes): its 'error' event says why.
      const { error } = await this.exited;
      throw this.error(`could not start ffmpeg (${this.options.ffmpegPath}): ${error?.message ?? 'no input pipe'}`);
    }
    this.frames++;
    if (!stdin.write(frame) && !stdin.destroyed) {
      // Until ffmpeg takes more, or goes: an ffmpeg that exits (a container that cannot hold
      // the video, a full disk) may leave the pipe neither drained nor closed.
      let done = () => {};
      await Promise.race([
        new Promise<void>((res) => {
          done = () => {
            stdin.off('drain', done);
            stdin.off('close', done);
            res();
          };
          stdin.on('drain', done);
          stdin.on('close', done);
        }),
        this.exited,
      ]);
      done();
    }
  }

  /** Ends the input and waits for ffmpeg to finish the file. */
  async close(): Promise<void> {
    this.child.stdin?.end();
    const { code, signal, error } = await this.exited;
    if (error) throw this.error(`could not start ffmpeg (${this.options.ffmpegPath}): ${error.message}`);
    if (code !== 0) throw this.error(this.ended(code, signal));
  }

  /** Stops ffmpeg at once (SIGKILL), for a close that takes too long; a `fragmented` file keeps its complete fragments. */
  kill(): void {
    // (Not one that never started: signalChild.)
    if (signalChild(this.child, 'SIGKILL')) this.killed = true;
  }
}

/** What the signals an encoder meets usually mean. */
const SIGNAL_CAUSES: Partial<Record<NodeJS.Signals, string>> = {
  SIGXFSZ: 'the file size limit, ulimit -f',
  SIGKILL: 'killed from outside, often the out-of-memory killer',
  SIGSEGV: 'ffmpeg crashed',
  SIGTERM: 'stopped from outside',
};
