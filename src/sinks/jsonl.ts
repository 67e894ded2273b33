import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import type { FrameResult } from '../pipeline/pipeline.js';

const round2 = (v: number) => Math.round(v * 100) / 100;
const round4 = (v: number) => Math.round(v * 10000) / 10000;

/** The JSONL record of one processed frame (see README, "JSONL output"). */
export function frameRecord(r: FrameResult, labels: readonly string[]) {
  const { frame, detections: d } = r;
  const detections = new Array(d.length);
  for (let i = 0; i < d.length; i++) {
    const o = i * 4;
    detections[i] = {
      label: labels[d.classId[i]] ?? String(d.classId[i]),
      classId: d.classId[i],
      score: round4(d.confidence[i]),
      box: [round2(d.xyxy[o]), round2(d.xyxy[o + 1]), round2(d.xyxy[o + 2]), round2(d.xyxy[o + 3])],
    };
  }
  return { source: frame.source, seq: frame.seq, pts: round4(frame.pts), stamps: { ...frame.stamps }, dropped: r.dropped, detections };
}

/**
 * One JSON line per processed frame, to a file or stdout. Writes are buffered by the stream;
 * if the disk (or a pipe reader) falls behind by more than `maxBufferedBytes`, lines are
 * skipped and counted rather than queued without bound.
 */
export class JsonlSink {
  private readonly out: WriteStream | NodeJS.WriteStream;
  /** Lines not written because the output was too far behind. */
  skipped = 0;
  written = 0;

  constructor(
    readonly path: string,
    private readonly labels: readonly string[],
    private readonly maxBufferedBytes = 16 * 1024 * 1024,
  ) {
    this.out = path === '-' ? process.stdout : createWriteStream(path);
  }

  write(r: FrameResult): void {
    if (this.out.writableLength > this.maxBufferedBytes) {
      this.skipped++;
      return;
    }
    this.out.write(JSON.stringify(frameRecord(r, this.labels)) + '\n');
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
