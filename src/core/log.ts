import { constants, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import pino, { type Logger } from 'pino';
import { ArgusError, ErrorCodes } from './errors.js';
import { redact, redactDeep } from './redact.js';
import { stderrStatus, type StatusArea } from './terminal.js';

/** What a stalled stderr may hold back (then lines are dropped, counted), bytes. */
export const STDERR_QUEUE_BYTES = 1 << 20;
/**
 * What the JSONL sink lets its stream hold before it skips detection lines (its default
 * `maxBufferedBytes`), bytes. Defined here because stderr's lines through a stdout they share
 * (SharedStdoutWriter) are bounded above it: a slow reader costs detections before the log.
 * (The sink's bound was 16 MiB, the log's 2 MiB: past 2 MiB every log line was dropped while
 * detections went on, for as long as they flowed.)
 */
export const JSONL_MAX_BUFFERED_BYTES = 1 << 20;
/** What stdout's stream may hold before a log line written through it is dropped (SharedStdoutWriter), bytes. */
export const SHARED_QUEUE_BYTES = 2 * JSONL_MAX_BUFFERED_BYTES;
/** How often held lines are tried again, ms. */
const STDERR_RETRY_MS = 20;
/** At exit, held lines are written for at most this long, ms… */
const EXIT_DRAIN_MS = 5000;
/** …and given up on after this long without the reader taking a byte, ms. */
const EXIT_STALL_MS = 1000;

/**
 * stderr when it is a pipe (a shell pipeline, Docker's log FIFO) or a socket (systemd's
 * journal, a Node parent's `stdio: 'pipe'`, PM2): written without ever blocking, so a reader
 * that stops reading never stops argus. A pipe is written through a file description of its
 * own, opened non-blocking (`/proc/self/fd/2`); a socket's cannot be opened again, and is
 * written on fd 2 itself once Node's own stream for it has made it non-blocking (see
 * openStderrPipe). A log line written to a blocking pipe waited for the reader: a stalled log
 * shipper froze the frames, the alerts and the handling of SIGTERM. What the reader does not
 * take at once is held, in order, up to STDERR_QUEUE_BYTES and tried again every
 * STDERR_RETRY_MS; lines past that are dropped and counted, and one line says how many once
 * the reader takes them again. At exit what is held is written while the reader takes it
 * (drainSync), within EXIT_DRAIN_MS. A reader gone (EPIPE) silences it.
 */
export class PipeWriter implements StderrWriter {
  private readonly queue: Buffer[] = [];
  private queued = 0;
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  private gone = false;

  constructor(
    private readonly fd: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Lines dropped since the reader last took them all (tests). */
  get droppedLines(): number {
    return this.dropped;
  }

  /** Bytes held for the reader (tests). */
  get heldBytes(): number {
    return this.queued;
  }

  write(s: string | Uint8Array): void {
    if (this.gone) return;
    const b = typeof s === 'string' ? Buffer.from(s) : Buffer.from(s.buffer, s.byteOffset, s.byteLength);
    if (this.queue.length === 0 && this.dropped === 0) {
      const rest = this.put(b);
      if (rest === undefined) return;
      // The rest of a line the pipe took in part: copied, the caller may reuse its buffer.
      this.hold(typeof s === 'string' ? rest : Buffer.from(rest));
      return;
    }
    if (this.queued + b.length > STDERR_QUEUE_BYTES) {
      this.dropped++;
      return;
    }
    this.hold(typeof s === 'string' ? b : Buffer.from(b));
  }

  /**
   * Writes what is held for as long as the reader takes it, sleeping between tries: at exit
   * ('exit' handler), so that a slow reader still gets the last lines (the run's summary).
   * Within `totalMs`, and given up after `stallMs` without progress.
   */
  drainSync(totalMs = EXIT_DRAIN_MS, stallMs = EXIT_STALL_MS): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const nap = new Int32Array(new SharedArrayBuffer(4));
    const start = this.clock();
    let progress = start;
    while (!this.gone && (this.queue.length > 0 || this.dropped > 0)) {
      const before = this.queued;
      this.writeHeld();
      if (this.queue.length === 0 && this.dropped === 0) return;
      const t = this.clock();
      if (this.queued < before) progress = t;
      if (t - progress > stallMs || t - start > totalMs) return;
      Atomics.wait(nap, 0, 0, 10);
    }
  }

  private hold(b: Buffer): void {
    this.queue.push(b);
    this.queued += b.length;
    this.schedule();
  }

  /** Writes what the pipe takes now; the rest, or undefined when all of it went (or the reader is gone). */
  private put(b: Buffer): Buffer | undefined {
    try {
      const n = writeSync(this.fd, b);
      return n >= b.length ? undefined : b.subarray(n);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EAGAIN') return b;
      this.gone = true; // EPIPE (the reader closed), EBADF: nothing left to tell
      this.queue.length = 0;
      this.queued = 0;
      clearTimeout(this.timer);
      return undefined;
    }
  }

  private schedule(): void {
    if (this.timer) return;
    // Unref'd: held lines do not keep the process alive; the 'exit' handler writes them (drainSync).
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writeHeld();
      if (this.queue.length > 0) this.schedule();
    }, STDERR_RETRY_MS).unref();
  }

  /** What is held, as far as the pipe takes it; then, all of it taken, the count of dropped lines. */
  private writeHeld(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0];
      const rest = this.put(head);
      if (this.gone) return;
      if (rest) {
        this.queued -= head.length - rest.length;
        this.queue[0] = rest;
        return;
      }
      this.queue.shift();
      this.queued -= head.length;
    }
    if (this.dropped > 0) {
      const n = this.dropped;
      this.dropped = 0;
      const rest = this.put(Buffer.from(droppedLine(n, this.clock())));
      if (rest) this.hold(rest);
    }
  }
}

/** The log line that says how many lines a stalled reader cost (a warning, as pino writes one). */
function droppedLine(n: number, time: number): string {
  return `${JSON.stringify({ level: 40, time, dropped: n, msg: `${n} log line(s) dropped: stderr was not read` })}\n`;
}

/** Where stderr's lines go when it is a pipe or a socket: a PipeWriter, or a SharedStdoutWriter. */
export interface StderrWriter {
  write(s: string | Uint8Array): void;
  /** At exit: what is held, written while the reader takes it (PipeWriter.drainSync). */
  drainSync(): void;
}

/** The stream SharedStdoutWriter writes through (process.stdout). */
export interface SharedStream {
  readonly writableLength: number;
  readonly destroyed: boolean;
  readonly writableEnded: boolean;
}

/**
 * stderr that is stdout's own pipe or socket (`2>&1 |`, systemd's default of one journal socket
 * for both): lines are written through Node's stream for stdout (`send`), the one that carries
 * argus's data there (`--jsonl -`), so lines and data leave in the order written. A PipeWriter of
 * their own held a line the reader had taken in part while the stream wrote a JSONL line into
 * the middle of it: neither parsed. The data is the JSONL sink's to bound, by the same stream's
 * backpressure: it skips detections while the stream holds more than JSONL_MAX_BUFFERED_BYTES.
 * Lines go on up to SHARED_QUEUE_BYTES, twice as much, so that a reader slower than
 * the detections costs detections first, not the log. Past that a line is dropped, counted, and
 * lines go on (the count first) once the stream holds at most JSONL_MAX_BUFFERED_BYTES: waiting for it
 * to empty, lines of a steady JSONL flow were dropped for as long as it lasted. What the stream
 * holds at exit is the stream's: lost if the reader has stalled.
 */
export class SharedStdoutWriter implements StderrWriter {
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly out: SharedStream,
    private readonly send: (s: string | Uint8Array) => void,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Lines dropped and not yet counted in a line (tests). */
  get droppedLines(): number {
    return this.dropped;
  }

  write(s: string | Uint8Array): void {
    if (this.out.destroyed || this.out.writableEnded) return;
    const held = this.out.writableLength;
    // A line alone larger than the bound still goes when nothing is held (as for PipeWriter).
    if (this.dropped > 0 || (held > 0 && held + (typeof s === 'string' ? Buffer.byteLength(s) : s.byteLength) > SHARED_QUEUE_BYTES)) {
      this.dropped++;
      this.schedule();
      return;
    }
    this.send(s);
  }

  drainSync(): void {
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.out.destroyed || this.out.writableEnded) return;
      if (this.out.writableLength > JSONL_MAX_BUFFERED_BYTES) return this.schedule();
      const n = this.dropped;
      this.dropped = 0;
      this.send(droppedLine(n, this.clock()));
    }, STDERR_RETRY_MS).unref();
  }
}

/** Whether fds `a` and `b` are one pipe or socket (`2>&1`). */
function sameFile(a: number, b: number): boolean {
  const x = fstatSync(a);
  const y = fstatSync(b);
  return x.dev === y.dev && x.ino === y.ino;
}

/**
 * The writer of stderr's lines when it is a pipe or a socket: a SharedStdoutWriter when it is
 * stdout's own; else a PipeWriter, on a non-blocking description of its own for a pipe, on fd 2
 * for a socket that Node's stream made non-blocking. Undefined for a terminal or a file (written
 * as before).
 */
function openStderrPipe(): StderrWriter | undefined {
  let pipe: StderrWriter;
  try {
    const st = fstatSync(2);
    if (!st.isFIFO() && !st.isSocket()) return undefined;
    if (sameFile(1, 2)) {
      const out = process.stdout;
      const write = out.write.bind(out) as (s: string | Uint8Array) => boolean;
      // A reader gone (EPIPE) is the JSONL sink's to report; unheard, it would end the process.
      out.on('error', () => undefined);
      pipe = new SharedStdoutWriter(out, (s) => void write(s));
    } else if (st.isFIFO()) pipe = new PipeWriter(openSync('/proc/self/fd/2', constants.O_WRONLY | constants.O_NONBLOCK));
    else if (socketNonBlocking(2)) pipe = new PipeWriter(2);
    else return undefined;
  } catch {
    return undefined;
  }
  // Everything else written to stderr (console.error, Node's warnings, libraries) goes the same
  // way: written around it, it landed inside a log line the pipe had taken only in part.
  process.stderr.write = ((chunk: string | Uint8Array, encoding?: BufferEncoding | ((e?: Error | null) => void), cb?: (e?: Error | null) => void): boolean => {
    pipe.write(typeof chunk === 'string' && typeof encoding === 'string' && encoding !== 'utf8' && encoding !== 'utf-8' ? Buffer.from(chunk, encoding) : chunk);
    const done = typeof encoding === 'function' ? encoding : cb;
    if (done) process.nextTick(done);
    return true;
  }) as typeof process.stderr.write;
  process.on('exit', () => pipe.drainSync());
  return pipe;
}

/**
 * Whether the socket at `fd` (stderr) is non-blocking. Node's stream for a socket stderr (libuv's
 * handle, made when `process.stderr` is first used) sets O_NONBLOCK on the socket's file
 * description, which is shared with whoever else holds it, as every Node process writing to a
 * socket stderr does; its writes then queue in memory without bound, and pino's synchronous
 * destination, meeting EAGAIN, slept 100 ms and tried again, for as long as the reader stalled,
 * on the event loop. Read from /proc (Linux); false where the flag cannot be read or is not set:
 * the socket is then written as before.
 */
function socketNonBlocking(fd: number): boolean {
  void process.stderr; // Node's stream for fd 2, made now if it was not
  const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  return flags !== null && (parseInt(flags[1], 8) & constants.O_NONBLOCK) !== 0;
}

let stderrPipe: StderrWriter | undefined | null = null;
/** The process's writer for stderr, opened on first use; undefined where stderr is neither a pipe nor a socket. */
function stderrPipeWriter(): StderrWriter | undefined {
  if (stderrPipe === null) stderrPipe = openStderrPipe();
  return stderrPipe;
}

/** Writes `text` to stderr after the log's lines, never blocking on a pipe's or socket's stalled reader (the CLI's own messages, such as the exit summary). */
export function writeStderr(text: string): void {
  stderrPipeWriter(); // where stderr is a pipe or socket, process.stderr.write is its PipeWriter's from then on
  process.stderr.write(text);
}

/** The levels ARGUS_LOG_LEVEL may name (pino's). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * An environment variable naming one of `choices`, any case: `fallback` when unset or empty (a
 * compose file's `${LOG_LEVEL}` left unset); anything else is refused naming the variable
 * (VAP_ERR_CONFIG).
 */
export function envChoice<T extends string>(env: NodeJS.ProcessEnv, name: string, choices: readonly T[], fallback: T): T {
  const v = (env[name] ?? '').trim().toLowerCase();
  if (v === '') return fallback;
  const choice = choices.find((c) => c === v);
  if (choice === undefined) throw new ArgusError(ErrorCodes.CONFIG, `${name}: expected one of ${choices.join(', ')}; got ${JSON.stringify(env[name]?.slice(0, 32))}`);
  return choice;
}

/**
 * $ARGUS_LOG_LEVEL's level, `info` by default (envChoice). pino threw on another at start,
 * before argus's own error handling: a stack trace, and no code.
 */
export function envLogLevel(env: NodeJS.ProcessEnv = process.env): (typeof LOG_LEVELS)[number] {
  return envChoice(env, 'ARGUS_LOG_LEVEL', LOG_LEVELS, 'info');
}

/**
 * JSON logs on stderr (stdout is kept for data such as `--jsonl -`). Level from
 * $ARGUS_LOG_LEVEL, default info. Every message and field is redacted (no credentials in
 * logs), and a closed stderr (EPIPE) silences the log instead of taking the process down; a
 * pipe or socket whose reader stalls holds, then drops, lines instead of stopping the process
 * (PipeWriter; SharedStdoutWriter where it is stdout's own).
 * On a terminal, lines are written above the status block (see core/terminal.ts), never over it.
 */
export function createLogger(level = envLogLevel(), area: StatusArea = stderrStatus()): Logger {
  // A pipe or socket: never blocking on its reader (PipeWriter); else written synchronously, as a line is logged.
  const pipe = stderrPipeWriter();
  const dest = pipe ?? pino.destination({ fd: 2, sync: true });
  if (!pipe) (dest as ReturnType<typeof pino.destination>).on('error', () => undefined);
  return pino(
    {
      level,
      base: undefined,
      hooks: {
        logMethod(args, method) {
          try {
            const clean = (args as unknown[]).map((a) => (typeof a === 'string' ? redact(a) : a !== null && typeof a === 'object' && !(a instanceof Error) ? redactDeep(a) : a));
            method.apply(this, clean as Parameters<typeof method>);
          } catch {
            // stderr is gone: nothing left to tell
          }
        },
      },
    },
    aboveStatus(dest, area),
  );
}

/**
 * A pino destination that writes each line through `area`: the status block at the bottom of
 * the terminal is erased, the line written, and the block drawn again below it, in one write to
 * `dest`, so the block never covers a log line. `flush` is `dest`'s.
 */
export function aboveStatus(dest: { write(s: string): unknown; flush?(cb?: (err?: Error) => void): unknown }, area: StatusArea): { write(s: string): void; flush(cb?: (err?: Error) => void): void } {
  return {
    write: (s) => area.print(s, (out) => dest.write(out)),
    flush: (cb) => (dest.flush ? dest.flush(cb) : cb?.()),
  };
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** What modules take to report events: a message, structured fields, a level (default info). */
export type LogFn = (msg: string, fields?: Record<string, unknown>, level?: LogLevel) => void;

/** Adapts a pino logger to the `LogFn` callbacks the modules take. */
export function logFn(logger: Logger): LogFn {
  return (msg, fields, level = 'info') => logger[level](fields ?? {}, msg);
}

/**
 * Logs the first event of a kind at once, then at most one line per `everyMs` (default 10 s):
 * events within that time are counted, and when it ends one line says how many there were
 * (`suppressed`). For events a client can cause at will (refused upgrades, kicked
 * connections): each is still counted where it happens, and the log (written synchronously)
 * cannot be flooded. Keys are a fixed set of event names.
 */
export class ThrottledLog {
  private readonly windows = new Map<string, { suppressed: number; msg: string; fields?: Record<string, unknown>; level?: LogLevel; since: number; timer: NodeJS.Timeout }>();
  constructor(
    private readonly out: LogFn,
    private readonly everyMs = 10_000,
  ) {}

  log(key: string, msg: string, fields?: Record<string, unknown>, level?: LogLevel): void {
    const w = this.windows.get(key);
    if (w) {
      w.suppressed++;
      w.msg = msg;
      w.fields = fields;
      return;
    }
    this.out(msg, fields, level);
    const timer = setTimeout(() => this.close(key, this.everyMs), this.everyMs).unref();
    this.windows.set(key, { suppressed: 0, msg, level, since: Date.now(), timer });
  }

  /**
   * Ends every window now, each with its count line where events were counted in it: what owns
   * the log is stopping (a source's end). The count was otherwise lost: its timer is unref'd, and
   * a process that stops within the window (argus stopped 9 minutes into a relay's 10) never said
   * how many more there were.
   */
  flush(): void {
    for (const [key, w] of [...this.windows]) {
      clearTimeout(w.timer);
      this.close(key, Math.min(this.everyMs, Math.max(0, Date.now() - w.since)));
    }
  }

  private close(key: string, ms: number): void {
    const done = this.windows.get(key);
    this.windows.delete(key);
    if (done?.suppressed) this.out(`${done.msg} (and ${done.suppressed} more like it in ${Math.round(ms / 1000)} s)`, { ...done.fields, suppressed: done.suppressed }, done.level);
  }
}
