import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';

/** A readable pipe as ffmpegSource uses it; data written while paused waits for resume(). */
export class FakePipe extends EventEmitter {
  private paused = false;
  private queue: (Buffer | string)[] = [];
  private encoding: BufferEncoding | undefined;
  destroyed = false;
  /** Writes not yet read (ffmpeg blocked on a full pipe). */
  get queued(): number {
    return this.queue.length;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    while (!this.paused && this.queue.length && !this.destroyed) this.emit('data', this.queue.shift());
    return this;
  }
  setEncoding(e: BufferEncoding): this {
    this.encoding = e;
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  write(d: Buffer | string): void {
    if (this.destroyed) return;
    const v = this.encoding && Buffer.isBuffer(d) ? d.toString(this.encoding) : d;
    if (this.paused) this.queue.push(v);
    else this.emit('data', v);
  }
}

/** A child process that prints what ffmpeg prints, on command. */
export class FakeFfmpeg extends EventEmitter {
  readonly stdout = new FakePipe();
  readonly stderr = new FakePipe();
  readonly stdin = null;
  readonly pid = 424242;
  exited = false;
  signals: string[] = [];

  constructor(
    readonly args: readonly string[],
    readonly frameBytes: number,
  ) {
    super();
  }
  /** The banner lines ffmpegSource probes: a 64x48 10 fps video stream, and the output ffmpeg writes (as it prints it before the first frame). */
  info(format = 'rtsp', fps = 10): void {
    this.stderr.write(this.infoText(format, fps));
  }
  /** What `info` writes (to write it in one chunk with the lines after it). */
  infoText(format = 'rtsp', fps = 10): string {
    return (
      `Input #0, ${format}, from 'x':\n  Duration: N/A\n    Stream #0:0: Video: h264 (High), yuv420p(progressive), 64x48, ${fps} fps, ${fps} tbr\nStream mapping:\n` +
        `[graph 0 input from stream 0:0 @ 0x55d0c0ffee40] w:64 h:48 pixfmt:yuv420p tb:1/90000 fr:${Math.round(fps * 1000)}/1000 sar:0/1\n` +
      `Output #0, rawvideo, to '${this.args[this.args.length - 1] ?? 'pipe:1'}':\n  Stream #0:0: Video: rawvideo (BGR[24] / 0x18524742), bgr24, 64x48, q=2-31, ${fps} fps, ${fps} tbn\n`
    );
  }
  /** The key our metadata filter prints after each frame's time (`frameTimeFilters`), from the -vf given. */
  get frameKey(): string {
    const vf = this.args[this.args.indexOf('-vf') + 1] ?? '';
    return /metadata=mode=print:key=([\w]+)/.exec(vf)?.[1] ?? 'argus';
  }
  /** The two lines the metadata filter prints for output frame `n` whose time is `ms` (epoch). */
  timeLine(n: number, ms: number, key = this.frameKey): string {
    return `[Parsed_metadata_7 @ 0x55d0c0ffee00] frame:${n}    pts:${Math.round(ms * 1000)} pts_time:1.76e+09\n[Parsed_metadata_7 @ 0x55d0c0ffee00] ${key}=1\n`;
  }
  frame(fill = 0): void {
    this.stdout.write(Buffer.alloc(this.frameBytes, fill));
  }
  exit(code: number | null, signal: NodeJS.Signals | null = null): void {
    if (this.exited) return;
    this.exited = true;
    this.emit('exit', code, signal);
    this.emit('close', code, signal);
  }
  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    this.signals.push(signal);
    this.exit(null, signal);
    return true;
  }
  asChild(): ChildProcess {
    return this as unknown as ChildProcess;
  }
}

/** A child that is sent its signal now and exits later (exitLater), or never: a real process exits some time after its SIGKILL. */
export class SlowToDie extends FakeFfmpeg {
  override kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    this.signals.push(signal);
    return true;
  }
  exitLater(): void {
    this.exit(null, (this.signals.at(-1) as NodeJS.Signals | undefined) ?? null);
  }
}
