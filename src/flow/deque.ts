/** A growable ring buffer: O(1) push at the back, shift from the front and put back at the front. Bounds are the caller's. */
export class Deque<T> {
  private buf: (T | undefined)[];
  private head = 0;
  private size = 0;

  constructor(initialCapacity = 16) {
    this.buf = new Array(Math.max(2, initialCapacity));
  }

  get length(): number {
    return this.size;
  }

  push(v: T): void {
    if (this.size === this.buf.length) this.grow();
    this.buf[(this.head + this.size) % this.buf.length] = v;
    this.size++;
  }

  unshift(v: T): void {
    if (this.size === this.buf.length) this.grow();
    this.head = (this.head - 1 + this.buf.length) % this.buf.length;
    this.buf[this.head] = v;
    this.size++;
  }

  /** The front item, left in place. */
  peek(): T | undefined {
    return this.size === 0 ? undefined : this.buf[this.head];
  }

  shift(): T | undefined {
    if (this.size === 0) return undefined;
    const v = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) % this.buf.length;
    this.size--;
    return v;
  }

  /** Removes up to `n` items from the front. */
  take(n: number): T[] {
    const out: T[] = [];
    while (out.length < n && this.size > 0) out.push(this.shift()!);
    return out;
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.buf.length * 2);
    for (let i = 0; i < this.size; i++) next[i] = this.buf[(this.head + i) % this.buf.length];
    this.buf = next;
    this.head = 0;
  }
}
