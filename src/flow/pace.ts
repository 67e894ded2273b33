import { BehaviorSubject, type Observable } from 'rxjs';

/**
 * Flow control between a source that can wait (a file read as fast as possible) and the stage
 * that sets its pace (detection): the stage marks each frame it works on with `enter`/`leave`,
 * and the source releases its next frame (read ahead meanwhile) only when the stage has room:
 * fewer than `capacity` frames inside (one by default; more when the stage runs frames on
 * several inference workers at once). The pace depends on the stage alone, never on what later
 * operators do with a frame, so a frame that an operator filters out, keeps or delays cannot
 * stall the source.
 *
 * The capacity may change while frames are inside (`resize`: a fast file gets more room when
 * the last camera beside it ends, and one frame again when a camera joins): frames already
 * inside stay until they leave, and a larger stage has room at once.
 */
export class Pace {
  private inside = 0;
  private readonly roomListeners = new Set<() => void>();
  private readonly size: BehaviorSubject<number>;
  /** The capacity, now and at each change (for the stage's own concurrency: `dropStale`). */
  readonly capacity$: Observable<number>;

  constructor(capacity = 1) {
    check(capacity);
    this.size = new BehaviorSubject(capacity);
    this.capacity$ = this.size.asObservable();
  }

  get capacity(): number {
    return this.size.value;
  }

  /** True while the stage is full: `capacity` frames inside (or more, after it shrank). */
  get busy(): boolean {
    return this.inside >= this.capacity;
  }

  /**
   * A new capacity. The stage hears it first (`capacity$`), then, when it now has room, the
   * source (`onRoom`), so a frame the source held back goes into a stage that takes it.
   */
  resize(capacity: number): void {
    check(capacity);
    if (capacity === this.capacity) return;
    this.size.next(capacity);
    if (this.inside < capacity) this.room();
  }

  enter(): void {
    this.inside++;
  }

  /** Call once per `enter`, however the frame's work ended (done, failed, dropped, unsubscribed). */
  leave(): void {
    if (this.inside === 0) return;
    if (--this.inside < this.capacity) this.room();
  }

  /** Calls `f` each time a frame leaves, or the capacity grows, and the stage has room for another. Returns the function that stops it. */
  onRoom(f: () => void): () => void {
    this.roomListeners.add(f);
    return () => this.roomListeners.delete(f);
  }

  private room(): void {
    for (const f of [...this.roomListeners]) f();
  }
}

function check(capacity: number): void {
  if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Pace: capacity must be an integer ≥ 1, got ${capacity}`);
}
