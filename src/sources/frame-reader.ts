/**
 * Cuts a byte stream of raw frames into exact frame-size buffers. Each byte is copied once,
 * from the pipe's chunk into a pooled frame buffer; pooled buffers come back through
 * `release`, so a steady stream allocates nothing.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  /** Buffers allocated over the pool's life (steady state: stops growing). */
  allocated = 0;

  constructor(
    readonly size: number,
    /** Free buffers kept for reuse; extra ones are left to the GC. */
    readonly maxFree = 4,
  ) {}

  acquire(): Buffer {
    const b = this.free.pop();
    if (b) return b;
    this.allocated++;
    return Buffer.allocUnsafeSlow(this.size);
  }

  release(b: Buffer): void {
    if (b.length === this.size && this.free.length < this.maxFree) this.free.push(b);
  }
}

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

  push(chunk: Buffer): void {
    let off = 0;
    const len = chunk.length;
    while (off < len) {
      if (!this.current) {
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
