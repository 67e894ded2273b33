import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { Sink } from './sink.js';

/**
 * One JSON line per message (the v1 envelope), to a file or stdout. Writes are buffered by
 * the stream; if the disk (or a pipe reader) falls behind by more than `maxBufferedBytes`,
 * detection lines are skipped and counted rather than queued without bound.
 */
export class JsonlSink implements Sink {
  readonly name = 'jsonl';
  private readonly out: WriteStream | NodeJS.WriteStream;
  /** Lines not written because the output was too far behind. */
  skipped = 0;
  written = 0;

  constructor(
    readonly path: string,
    /** Also write source status changes (default: detections and alerts only). */
    private readonly includeStatus = false,
    private readonly maxBufferedBytes = 16 * 1024 * 1024,
  ) {
    this.out = path === '-' ? process.stdout : createWriteStream(path);
  }

  publish(kind: string, _source: string, json: string): void {
    if (kind === 'status' && !this.includeStatus) return;
    if (kind === 'detections' && this.out.writableLength > this.maxBufferedBytes) {
      this.skipped++;
      return;
    }
    this.out.write(json + '\n');
    this.written++;
  }

  async close(): Promise<void> {
    if (this.out === process.stdout) {
      if (this.out.writableLength > 0) await once(this.out, 'drain');
      return;
    }
    const ws = this.out as WriteStream;
    ws.end();
    await once(ws, 'finish');
  }
}
