import pino, { type Logger } from 'pino';
import { redact, redactDeep } from './redact.js';

/**
 * JSON logs on stderr (stdout is kept for data such as `--jsonl -`). Level from
 * $ARGUS_LOG_LEVEL, default info. Every message and field is redacted (no credentials in
 * logs), and a closed stderr (EPIPE) silences the log instead of taking the process down.
 */
export function createLogger(level = process.env.ARGUS_LOG_LEVEL ?? 'info'): Logger {
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
    dest,
  );
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** What modules take to report events: a message, structured fields, a level (default info). */
export type LogFn = (msg: string, fields?: Record<string, unknown>, level?: LogLevel) => void;

/** Adapts a pino logger to the `LogFn` callbacks the modules take. */
export function logFn(logger: Logger): LogFn {
  return (msg, fields, level = 'info') => logger[level](fields ?? {}, msg);
}

/**
 * Logs the first event of a kind at once, then at most one line per `everyMs` (default 10 s),
 * which says how many were left out since (`suppressed`). For events a client can cause at will
 * (refused upgrades, kicked connections): each is still counted where it happens, and the log
 * (written synchronously) cannot be flooded. Keys are a fixed set of event names.
 */
export class ThrottledLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();
  constructor(
    private readonly out: LogFn,
    private readonly everyMs = 10_000,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  log(key: string, msg: string, fields?: Record<string, unknown>, level?: LogLevel): void {
    const now = this.clock();
    const s = this.last.get(key);
    if (s && now - s.at < this.everyMs) {
      s.suppressed++;
      return;
    }
    this.last.set(key, { at: now, suppressed: 0 });
    this.out(msg, s?.suppressed ? { ...fields, suppressed: s.suppressed } : fields, level);
  }
}
