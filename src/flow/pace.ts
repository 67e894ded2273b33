/**
 * Flow control between a source that can wait (a file read as fast as possible) and the stage
 * that sets its pace (detection): the stage marks each frame it works on with `enter`/`leave`,
 * and the source releases its next frame (read ahead meanwhile) only when the stage is idle.
 * The pace depends on the stage alone, never on what later operators do with a frame, so a
 * frame that an operator filters out, keeps or delays cannot stall the source.
 */
export class Pace {
  private inside = 0;
  private readonly idleListeners = new Set<() => void>();

  /** True while the stage works on at least one frame. */
  get busy(): boolean {
    return this.inside > 0;
  }

  enter(): void {
    this.inside++;
  }

  /** Call once per `enter`, however the frame's work ended (done, failed, dropped, unsubscribed). */
  leave(): void {
    if (this.inside === 0) return;
    if (--this.inside === 0) for (const f of [...this.idleListeners]) f();
  }

  /** Calls `f` each time the stage becomes idle. Returns the function that stops it. */
  onIdle(f: () => void): () => void {
    this.idleListeners.add(f);
    return () => this.idleListeners.delete(f);
  }
}
