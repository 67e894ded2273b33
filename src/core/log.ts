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
