import pino, { type Logger } from 'pino';

/** JSON logs on stderr (stdout is kept for data such as `--jsonl -`). Level from $ARGUS_LOG_LEVEL, default info. */
export function createLogger(level = process.env.ARGUS_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: undefined }, pino.destination({ fd: 2, sync: true }));
}

export type LogLevel = 'info' | 'warn' | 'error';
/** What modules take to report events: a message, structured fields, a level (default info). */
export type LogFn = (msg: string, fields?: Record<string, unknown>, level?: LogLevel) => void;

/** Adapts a pino logger to the `LogFn` callbacks the modules take. */
export function logFn(logger: Logger): LogFn {
  return (msg, fields, level = 'info') => logger[level](fields ?? {}, msg);
}
