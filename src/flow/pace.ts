/**
 * Flow control between a source that can wait (a file read as fast as possible) and the stage
 * that sets its pace (detection): the stage marks each frame it works on with `enter`/`leave`,
 * and the source releases its next frame (read ahead meanwhile) only when the stage has room:
 * fewer than `capacity` frames inside (one by default; more when the stage runs frames on
 * several inference workers at once). The pace depends on the stage alone, never on what later
 * operators do with a frame, so a frame that an operator filters out, keeps or delays cannot
 * stall the source.
 */
export class Pace {
  private inside = 0;
  private readonly roomListeners = new Set<() => void>();

  constructor(readonly capacity = 1) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Pace: capacity must be an integer ≥ 1, got ${capacity}`);
  }

  /** True while the stage is full: `capacity` frames inside. */
  get busy(): boolean {
    return this.inside >= this.capacity;
  }

  enter(): void {
    this.inside++;
  }

  /** Call once per `enter`, however the frame's work ended (done, failed, dropped, unsubscribed). */
  leave(): void {
    if (this.inside === 0) return;
    if (--this.inside < this.capacity) for (const f of [...this.roomListeners]) f();
  }

  /** Calls `f` each time a frame leaves and the stage has room for another. Returns the function that stops it. */
  onRoom(f: () => void): () => void {
    this.roomListeners.add(f);
    return () => this.roomListeners.delete(f);
  }
}
