import { once } from 'node:events';
import type { WriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import type { LogFn } from '../core/log.js';
import type { Sink } from './sink.js';

export interface JsonlSinkOptions {
  /** Also write source status changes (default: detections and alerts only). */
  includeStatus?: boolean;
  /** Bytes the output may fall behind before detection lines are skipped. Default 16 MiB. */
  maxBufferedBytes?: number;
  log?: LogFn;
  /** stdout was closed by its reader (`argus run … --jsonl - | head`): the caller stops the run. */
  onClosed?: () => void;
}

type Out = NodeJS.WritableStream & { writableLength: number; writable: boolean; destroyed: boolean };

/**
 * One JSON line per message (the v1 envelope), to a file or stdout. Writes are buffered by
 * the stream; if the disk (or a pipe reader) falls behind by more than `maxBufferedBytes`,
 * detection lines are skipped and counted rather than queued without bound.
 *
 * A write error never takes the process down: a full disk or an I/O error is logged once and
 * the sink stops writing (counted in `skipped`); stdout closed by its reader (EPIPE) asks the
 * run to stop, the way Unix tools end when `head` has read enough. A file that cannot be
 * opened is an error at start naming it (VAP_ERR_SINK_FILE).
 */
export class JsonlSink implements Sink {
  readonly name = 'jsonl';
  /** Lines not written because the output was too far behind or had failed. */
  skipped = 0;
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
    this.maxBufferedBytes = o.maxBufferedBytes ?? 16 * 1024 * 1024;
    this.log = o.log ?? (() => {});
    out.on('error', (e: Error) => this.fail(e as NodeJS.ErrnoException));
  }

  /** Opens (creates or truncates) the file, or takes stdout for '-'. */
  static async open(path: string, o: JsonlSinkOptions = {}): Promise<JsonlSink> {
    if (path === '-') return new JsonlSink(path, process.stdout, o);
    let fh;
    try {
      fh = await open(path, 'w');
    } catch (e) {
      throw new ArgusError(ErrorCodes.SINK_FILE, `sinks.jsonl.path: cannot open ${path} for writing (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
    }
    return new JsonlSink(path, fh.createWriteStream({ autoClose: true }), o);
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

  publish(kind: string, _source: string, json: string): void {
    if (kind === 'status' && !this.includeStatus) return;
    if (this.error || (kind === 'detections' && this.out.writableLength > this.maxBufferedBytes)) {
      this.skipped++;
      return;
    }
    this.out.write(json + '\n');
    this.written++;
  }

  async close(): Promise<void> {
    if (this.out === process.stdout) {
      if (!this.error && this.out.writableLength > 0) await Promise.race([once(this.out, 'drain'), once(this.out, 'error')]).catch(() => undefined);
      return;
    }
    const ws = this.out as WriteStream;
    if (ws.destroyed) return;
    ws.end();
    await Promise.race([once(ws, 'close'), once(ws, 'error')]).catch(() => undefined);
  }
}
