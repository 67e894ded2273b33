import pino, { type Logger } from 'pino';
import { redact, redactDeep } from './redact.js';
import { stderrStatus, type StatusArea } from './terminal.js';

/**
 * JSON logs on stderr (stdout is kept for data such as `--jsonl -`). Level from
 * $ARGUS_LOG_LEVEL, default info. Every message and field is redacted (no credentials in
 * logs), and a closed stderr (EPIPE) silences the log instead of taking the process down.
 * On a terminal, lines are written above the status block (see core/terminal.ts), never over it.
 */
export function createLogger(level = process.env.ARGUS_LOG_LEVEL ?? 'info', area: StatusArea = stderrStatus()): Logger {
  const dest = pino.destination({ fd: 2, sync: true });
  dest.on('error', () => undefined);
  return pino(
    {
      level,
      base: undefined,
      hooks: {
        logMethod(args, method) {
          try {
            const clean = (args as unknown[]).map((a) => (typeof a === 'string' ? redact(a) : a !== null && typeof a === 'object' && !(a instanceof Error) ? redactDeep(a) : a));
            method.apply(this, clean as Parameters<typeof method>);
          } catch {
            // stderr is gone: nothing left to tell
          }
        },
      },
    },
    aboveStatus(dest, area),
  );
}

/**
 * A pino destination that writes each line through `area`: the status block at the bottom of
 * the terminal is erased, the line written, and the block drawn again below it, in one write to
 * `dest`, so the block never covers a log line. `flush` is `dest`'s.
 */
export function aboveStatus(dest: { write(s: string): unknown; flush?(cb?: (err?: Error) => void): unknown }, area: StatusArea): { write(s: string): void; flush(cb?: (err?: Error) => void): void } {
  return {
    write: (s) => area.print(s, (out) => dest.write(out)),
    flush: (cb) => (dest.flush ? dest.flush(cb) : cb?.()),
  };
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** What modules take to report events: a message, structured fields, a level (default info). */
export type LogFn = (msg: string, fields?: Record<string, unknown>, level?: LogLevel) => void;

/** Adapts a pino logger to the `LogFn` callbacks the modules take. */
export function logFn(logger: Logger): LogFn {
  return (msg, fields, level = 'info') => logger[level](fields ?? {}, msg);
}

/**
 * Logs the first event of a kind at once, then at most one line per `everyMs` (default 10 s):
 * events within that time are counted, and when it ends one line says how many there were
 * (`suppressed`). For events a client can cause at will (refused upgrades, kicked
 * connections): each is still counted where it happens, and the log (written synchronously)
 * cannot be flooded. Keys are a fixed set of event names.
 */
export class ThrottledLog {
  private readonly windows = new Map<string, { suppressed: number; msg: string; fields?: Record<string, unknown>; level?: LogLevel }>();
  constructor(
    private readonly out: LogFn,
    private readonly everyMs = 10_000,
  ) {}

  log(key: string, msg: string, fields?: Record<string, unknown>, level?: LogLevel): void {
    const w = this.windows.get(key);
    if (w) {
      w.suppressed++;
      w.msg = msg;
      w.fields = fields;
      return;
    }
    this.out(msg, fields, level);
    this.windows.set(key, { suppressed: 0, msg, level });
    setTimeout(() => {
      const done = this.windows.get(key);
      this.windows.delete(key);
      if (done?.suppressed) this.out(`${done.msg} (and ${done.suppressed} more like it in ${this.everyMs / 1000} s)`, { ...done.fields, suppressed: done.suppressed }, done.level);
    }, this.everyMs).unref();
  }
}
