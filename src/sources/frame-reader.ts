import { Pool } from '../core/pool.js';

/** Frame-size buffers, reused: a steady stream allocates nothing. */
export class BufferPool extends Pool<Buffer> {
  constructor(
    readonly size: number,
    /** Free buffers kept for reuse; extra ones are left to the GC. */
    maxFree = 4,
  ) {
    super(() => Buffer.allocUnsafeSlow(size), maxFree, (b) => b.length === size);
  }
}

/**
 * Cuts a byte stream of raw frames into exact frame-size buffers. Each byte is copied once,
 * from the pipe's chunk into a pooled frame buffer; pooled buffers come back through
 * `release`, so a steady stream allocates nothing.
 */
export class FrameReader {
  private current: Buffer | undefined;
  private filled = 0;

  constructor(
    readonly frameSize: number,
    private readonly pool: BufferPool,
    private readonly onFrame: (frame: Buffer) => void,
  ) {
    if (!(frameSize > 0)) throw new RangeError(`FrameReader: frame size must be positive, got ${frameSize}`);
  }

  /** Bytes of an incomplete frame held right now. */
  get pending(): number {
    return this.filled;
  }

  /**
   * Cuts `chunk` into frames. `hold`, asked before each new frame is begun, may stop the cut
   * there: the return value is the number of bytes consumed (the caller pushes the rest later).
   */
  push(chunk: Buffer, hold?: () => boolean): number {
    let off = 0;
    const len = chunk.length;
    while (off < len) {
      if (!this.current) {
        if (hold?.()) return off;
        this.current = this.pool.acquire();
        this.filled = 0;
      }
      const take = Math.min(this.frameSize - this.filled, len - off);
      chunk.copy(this.current, this.filled, off, off + take);
      this.filled += take;
      off += take;
      if (this.filled === this.frameSize) {
        const frame = this.current;
        this.current = undefined;
        this.filled = 0;
        this.onFrame(frame);
      }
    }
    return len;
  }

  /**
   * Where the next bytes of the stream go, for a reader that reads straight into the frame
   * (FrameSocket): the unwritten rest of the frame being cut, begun now if none is.
   */
  target(): Buffer {
    if (!this.current) {
      this.current = this.pool.acquire();
      this.filled = 0;
    }
    return this.current.subarray(this.filled);
  }

  /**
   * `n` bytes were written at the start of `target()`. A frame they complete goes to
   * `onFrame`; then `hold` is asked, as by `push`, and the return value is whether the next
   * frame may be read now.
   */
  advance(n: number, hold?: () => boolean): boolean {
    this.filled += n;
    if (this.filled < this.frameSize) return true;
    const frame = this.current!;
    this.current = undefined;
    this.filled = 0;
    this.onFrame(frame);
    return !hold?.();
  }

  /** Drops a half-written frame (on EOF or restart), so it can never reach inference. Returns its byte count. */
  discardPartial(): number {
    const n = this.filled;
    if (this.current) this.pool.release(this.current);
    this.current = undefined;
    this.filled = 0;
    return n;
  }
}
