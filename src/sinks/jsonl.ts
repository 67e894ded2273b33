import { once } from 'node:events';
import { closeSync, constants, fstatSync, openSync, type WriteStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { Socket } from 'node:net';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { sameFile } from '../core/files.js';
import { JSONL_MAX_BUFFERED_BYTES, type LogFn } from '../core/log.js';
import type { Sink } from './sink.js';

/**
 * Why the JSON lines must not be written to `path` (they are appended to it): a file a source
 * reads (`inputs`), or the pipeline file; undefined otherwise. `--jsonl clip.mp4` emptied the
 * clip a source was about to read, and `--jsonl pipeline.yaml` the pipeline. `field` names the
 * setting (`sinks.jsonl.path`, `--jsonl`). argus run refuses such a path and argus check reports it.
 */
export function jsonlTargetRefusal(path: string, inputs: readonly string[], configFile: string | undefined, field: string): ArgusError | undefined {
  if (path === '-') return undefined;
  const input = inputs.find((i) => sameFile(i, path));
  if (input) return new ArgusError(ErrorCodes.SINK_FILE, `${field}: ${path} is a file a source reads (${input}); refusing to write over it`);
  if (configFile && sameFile(configFile, path)) return new ArgusError(ErrorCodes.SINK_FILE, `${field}: ${path} is the pipeline file; refusing to write over it`);
  return undefined;
}

export interface JsonlSinkOptions {
  /** Also write source status changes (default: detections and alerts only). */
  includeStatus?: boolean;
  /** Bytes the output may fall behind before detection lines are skipped. Default JSONL_MAX_BUFFERED_BYTES (1 MiB). */
  maxBufferedBytes?: number;
  log?: LogFn;
  /** stdout was closed by its reader (`argus run … --jsonl - | head`): the caller stops the run. */
  onClosed?: () => void;
  /** A named pipe with no reader yet is waited for until this aborts (VAP_ERR_INTERRUPTED then). */
  signal?: AbortSignal;
  /** A named pipe: how long close() waits for its reader to take the lines still buffered, ms. Default 5000. */
  closeTimeoutMs?: number;
  /** Where the path was given, for its errors: `--jsonl`, or (the default) `sinks.jsonl.path`. */
  field?: string;
}

/** How often a named pipe is tried again while it has no reader, ms. */
const FIFO_RETRY_MS = 100;

type Out = NodeJS.WritableStream & { writableLength: number; writable: boolean; destroyed: boolean };

/**
 * One JSON line per message (the v1 envelope), to a file or stdout. Writes are buffered by
 * the stream; if the disk (or a pipe reader) falls behind by more than `maxBufferedBytes`,
 * detection lines are skipped and counted rather than queued without bound.
 *
 * A write error never takes the process down: a full disk or an I/O error is logged once and
 * the sink stops writing (counted in `skipped`); stdout closed by its reader (EPIPE) asks the
 * run to stop, the way Unix tools end when `head` has read enough. A file that cannot be
 * opened is an error at start naming it (VAP_ERR_SINK_FILE). A named pipe is waited on for
 * its reader without holding a thread, so a signal can end the wait (see openFifo).
 */
export class JsonlSink implements Sink {
  readonly name = 'jsonl';
  /** Lines not written because the output was too far behind or had failed. */
  skipped = 0;
  /**
   * Of `skipped`: detection lines not written because the output was more than
   * `maxBufferedBytes` behind, by source (`argus_frames_dropped_total{reason="jsonl_behind"}`).
   */
  readonly behind = new Map<string, number>();
  /** A warning about lines skipped for a reader behind was given (once a run; close() sums them up). */
  private behindWarned = false;
  written = 0;
  /** Set when the output failed; nothing more is written. */
  error: NodeJS.ErrnoException | undefined;
  private readonly includeStatus: boolean;
  private readonly maxBufferedBytes: number;
  private readonly log: LogFn;

  private constructor(
    readonly path: string,
    private readonly out: Out,
    private readonly o: JsonlSinkOptions,
  ) {
    this.includeStatus = o.includeStatus ?? false;
    this.maxBufferedBytes = o.maxBufferedBytes ?? JSONL_MAX_BUFFERED_BYTES;
    this.log = o.log ?? (() => {});
    out.on('error', (e: Error) => this.fail(e as NodeJS.ErrnoException));
  }

  /**
   * Opens the file to append to it (made when missing), or takes stdout for '-'; a named pipe is
   * waited on for a reader (see openFifo). Appended, not truncated: each start of argus emptied
   * the file, so a restart (after a crash, by a service manager) erased the alerts of the run
   * before, for a pipeline without Kafka the only record of them. A last line that a killed run
   * cut short is ended first, so the next line is one of its own.
   */
  static async open(path: string, o: JsonlSinkOptions = {}): Promise<JsonlSink> {
    if (path === '-') return new JsonlSink(path, process.stdout, o);
    if ((await stat(path).catch(() => undefined))?.isFIFO()) return new JsonlSink(path, await openFifo(path, o), o);
    let fh;
    try {
      fh = await open(path, 'a');
    } catch (e) {
      throw new ArgusError(ErrorCodes.SINK_FILE, `${o.field ?? 'sinks.jsonl.path'}: cannot open ${path} for writing (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
    }
    const cut = await endsCut(path, (await fh.stat().catch(() => undefined))?.size ?? 0);
    const out = fh.createWriteStream({ autoClose: true });
    if (cut) out.write('\n');
    return new JsonlSink(path, out, o);
  }

  private fail(e: NodeJS.ErrnoException): void {
    if (this.error) return;
    this.error = e;
    if (this.out === process.stdout && (e.code === 'EPIPE' || e.code === 'ERR_STREAM_DESTROYED')) {
      this.log('jsonl: stdout was closed by its reader; stopping', { path: this.path }, 'warn');
      this.o.onClosed?.();
      return;
    }
    this.log(`jsonl: writing ${this.path} failed (${e.code ?? e.message}); no more lines are written to it`, { path: this.path, code: e.code }, 'error');
  }

  publish(kind: string, source: string, json: string): void {
    if (kind === 'status' && !this.includeStatus) return;
    if (this.error) {
      this.skipped++;
      return;
    }
    if (kind === 'detections' && this.out.writableLength > this.maxBufferedBytes) {
      this.skipped++;
      this.behind.set(source, (this.behind.get(source) ?? 0) + 1);
      if (!this.behindWarned) {
        this.behindWarned = true;
        this.log(`jsonl: writing ${this.path === '-' ? 'stdout' : this.path} is more than ${this.maxBufferedBytes} bytes behind (a slow reader or disk): detection lines are skipped (counted by source in argus_frames_dropped_total{reason="jsonl_behind"}, summed up at exit) until it catches up`, { path: this.path }, 'warn');
      }
      return;
    }
    this.out.write(json + '\n');
    this.written++;
  }

  async close(): Promise<void> {
    const behind = [...this.behind.values()].reduce((a, b) => a + b, 0);
    if (behind > 0) this.log(`jsonl: ${behind} detection lines were not written to ${this.path === '-' ? 'stdout' : this.path}: it was more than ${this.maxBufferedBytes} bytes behind (a slow reader or disk)`, { path: this.path, skipped: behind, bySource: Object.fromEntries(this.behind) }, 'warn');
    // (First: stdout that is a pipe is a Socket too, and was waited on for 5 s after its reader had gone.)
    if (this.out === process.stdout) {
      if (this.error || this.out.writableLength === 0) return;
      await this.readerTakes(this.out, Promise.race([once(this.out, 'drain'), once(this.out, 'error')]), 'stdout');
      return;
    }
    if (this.out instanceof Socket) return this.closePipe(this.out);
    const ws = this.out as WriteStream;
    if (ws.destroyed) return;
    ws.end();
    await Promise.race([once(ws, 'close'), once(ws, 'error')]).catch(() => undefined);
  }

  /** A named pipe: ended, and its reader given its time to take what is buffered (readerTakes). */
  private async closePipe(out: Socket): Promise<void> {
    if (out.destroyed) return;
    if (this.error) {
      // Its reader has gone (EPIPE): nothing more can be taken.
      out.destroy();
      return;
    }
    const closed = Promise.race([once(out, 'close'), once(out, 'error')]);
    out.end();
    if (await this.readerTakes(out, closed, this.path)) out.destroy();
  }

  /**
   * Stdout's or a named pipe's reader gets `closeTimeoutMs` to take what is buffered (until
   * `taken` settles); then the rest is dropped, logged: a reader that stopped reading cannot
   * hold the shutdown. Returns whether it was too late.
   */
  private async readerTakes(out: { writableLength: number }, taken: Promise<unknown>, name: string): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const ms = this.o.closeTimeoutMs ?? 5000;
    const late = await Promise.race([
      taken.then(
        () => false,
        () => false,
      ),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), ms))),
    ]);
    clearTimeout(timer);
    if (late) this.log(`jsonl: the reader of ${name} did not take the last ${out.writableLength} bytes within ${ms / 1000} s; they are dropped`, { path: this.path, bytes: out.writableLength }, 'warn');
    return late;
  }
}

/** Whether the file's last byte (of `size`) is not a newline: a line a killed run cut short. A file it cannot read (write-only to this user) is taken as whole. */
async function endsCut(path: string, size: number): Promise<boolean> {
  if (size === 0) return false;
  const fh = await open(path, 'r').catch(() => undefined);
  if (!fh) return false;
  try {
    const last = Buffer.alloc(1);
    const { bytesRead } = await fh.read(last, 0, 1, size - 1);
    return bytesRead === 1 && last[0] !== 0x0a;
  } catch {
    return false;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * A named pipe (FIFO), opened so that nothing can block on it. A plain open for writing blocks
 * until a reader opens the other end, inside a libuv threadpool thread: the run's start hung,
 * and neither SIGINT nor SIGTERM could stop the process (only SIGKILL). Here it is opened with
 * O_NONBLOCK, which fails at once (ENXIO) while there is no reader: it is tried again every
 * 100 ms, logged once, until a reader comes or `o.signal` aborts (VAP_ERR_INTERRUPTED naming
 * the file). Writes then go through the event loop (a libuv pipe, as stdout to a pipe), never
 * a threadpool thread.
 */
async function openFifo(path: string, o: JsonlSinkOptions): Promise<Socket> {
  let logged = false;
  for (;;) {
    if (o.signal?.aborted) throw new ArgusError(ErrorCodes.INTERRUPTED, `${o.field ?? 'sinks.jsonl.path'}: stopped while waiting for a reader of the named pipe ${path}`);
    let fd: number | undefined;
    try {
      // Synchronous, as it cannot block (O_NONBLOCK); a raw fd, which the socket owns from here.
      fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
      if (!fstatSync(fd).isFIFO()) throw Object.assign(new Error('it is no longer a named pipe'), { code: 'ENOTFIFO' });
      return new Socket({ fd, readable: false, writable: true });
    } catch (e) {
      if (fd !== undefined) {
        try {
          closeSync(fd);
        } catch {
          // closed already
        }
      }
      if ((e as NodeJS.ErrnoException).code !== 'ENXIO') {
        throw new ArgusError(ErrorCodes.SINK_FILE, `${o.field ?? 'sinks.jsonl.path'}: cannot open the named pipe ${path} for writing (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
      }
    }
    if (!logged) (o.log ?? (() => {}))(`jsonl: ${path} is a named pipe with no reader yet; waiting for one (SIGINT or SIGTERM stops)`, { path }, 'warn');
    logged = true;
    await new Promise<void>((r) => {
      const done = () => {
        clearTimeout(t);
        o.signal?.removeEventListener('abort', done);
        r();
      };
      const t = setTimeout(done, FIFO_RETRY_MS);
      o.signal?.addEventListener('abort', done, { once: true });
    });
  }
}
