import type { LogFn } from '../core/log.js';

interface Entry {
  name: string;
  stop: () => unknown;
}

/**
 * Everything a run starts registers here how it stops; `stop` runs those in reverse order of
 * start (what started last, and may depend on the rest, stops first), also when the start
 * failed half-way. Like fastify's close hooks: a stop that fails is logged and the others
 * still run; stopping twice stops nothing twice.
 */
export class Lifecycle {
  private readonly entries: Entry[] = [];
  private stopping: Promise<void> | undefined;
  /** Names in the order they stopped (tests, logs). */
  readonly stopped: string[] = [];

  constructor(private readonly log: LogFn = () => {}) {}

  /**
   * Starts something with `open`, which must clean up after itself when it throws; once it
   * resolves, `stop` is registered for its value.
   */
  async start<T>(name: string, open: () => Promise<T> | T, stop: (value: T) => unknown): Promise<T> {
    if (this.stopping) throw new Error(`lifecycle: cannot start ${name}: stopping`);
    const value = await open();
    this.entries.push({ name, stop: () => stop(value) });
    return value;
  }

  /**
   * Registers how an object that exists already stops, before it is started: a start that
   * fails half-way (a client connected, then refused) is stopped too.
   */
  use<T>(name: string, value: T, stop: (value: T) => unknown): T {
    if (this.stopping) throw new Error(`lifecycle: cannot start ${name}: stopping`);
    this.entries.push({ name, stop: () => stop(value) });
    return value;
  }

  /** Names registered so far, in start order. */
  get started(): readonly string[] {
    return this.entries.map((e) => e.name);
  }

  /** Stops everything in reverse order of start. Never throws; the same promise on every call. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const e of [...this.entries].reverse()) {
        try {
          await e.stop();
        } catch (err) {
          this.log(`stop: ${e.name} failed: ${(err as Error).message}`, { component: e.name }, 'warn');
        }
        this.stopped.push(e.name);
        this.log(`stopped ${e.name}`, { component: e.name }, 'debug');
      }
    })();
    return this.stopping;
  }
}
