/**
 * A free list of reusable objects (frame buffers, input tensors). `acquire` never waits: it
 * hands out a free object or makes a new one, so a consumer that keeps or drops an object
 * without giving it back costs an allocation, never a hang; objects not given back are left
 * to the garbage collector. `release` keeps at most `maxFree` objects for reuse.
 */
export class Pool<T> {
  private readonly free: T[] = [];
  /** Objects made over the pool's life (steady state: stops growing). */
  allocated = 0;

  constructor(
    private readonly create: () => T,
    /** Free objects kept for reuse; extra ones are left to the garbage collector. Default 4. */
    readonly maxFree = 4,
    /** Objects that may come back (e.g. a buffer of the right size). Default: all. */
    private readonly accepts: (item: T) => boolean = () => true,
  ) {}

  acquire(): T {
    const item = this.free.pop();
    if (item !== undefined) return item;
    this.allocated++;
    return this.create();
  }

  /** Gives an object back. The caller must not touch it afterwards. */
  release(item: T): void {
    if (this.free.length < this.maxFree && this.accepts(item)) this.free.push(item);
  }
}
