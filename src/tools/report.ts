import { ArgusError, ErrorCodes } from '../core/errors.js';

/**
 * Where `argus detect` and `argus preview` print their report: stdout, whose failures are
 * answered rather than crashing the process (`| head -1` gave an unhandled EPIPE with a stack
 * trace and status 1). A reader that went away (EPIPE) only stops the printing: the work goes on
 * (annotated copies are finished, not left half-written) and the command ends as it would have.
 * Any other failure (a full disk: ENOSPC) also stops the printing, and `finish` then throws
 * VAP_ERR_SINK_FILE naming it.
 */
export class Report {
  private error: NodeJS.ErrnoException | undefined;
  private readonly onError = (e: NodeJS.ErrnoException) => {
    this.error ??= e;
  };

  constructor(private readonly out: NodeJS.WritableStream = process.stdout) {
    out.on('error', this.onError);
  }

  readonly write = (s: string): void => {
    if (!this.error) this.out.write(s);
  };

  /** After the last write: throws VAP_ERR_SINK_FILE if the report could not be written (not for a reader gone away). */
  async finish(what: string): Promise<void> {
    // A write's error is emitted after it returns.
    await new Promise((r) => setImmediate(r));
    this.out.off('error', this.onError);
    // Later errors (the last buffered bytes) must not crash the process either.
    this.out.on('error', () => {});
    const e = this.error;
    if (e && e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw new ArgusError(ErrorCodes.SINK_FILE, `${what}: could not print to stdout (${e.code ?? e.message})`, { cause: e });
  }
}
