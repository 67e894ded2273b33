import pino, { type Logger } from 'pino';

/** JSON logs on stderr (stdout is kept for data such as `--jsonl -`). Level from $ARGUS_LOG_LEVEL, default info. */
export function createLogger(level = process.env.ARGUS_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: undefined }, pino.destination({ fd: 2, sync: true }));
}

/** Adapts a pino logger to the `(msg, fields)` callbacks the modules take. */
export function logFn(logger: Logger): (msg: string, fields?: Record<string, unknown>) => void {
  return (msg, fields) => logger.info(fields ?? {}, msg);
}
