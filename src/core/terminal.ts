import { fstatSync, statSync } from 'node:fs';
import stringWidth from 'string-width';
import { forTerminal } from './text.js';
/**
 * A block of lines kept at the bottom of a terminal (the status line per source) while other
 * text (the JSON logs) is written above it.
 *
 * Whatever goes to the stream while the block is on screen goes through `print`: the block is
 * erased, the text written, and the block drawn again below it, in one write. So the block is
 * redrawn in place and never moves up over anything else. Each line of the block is cut to the
 * terminal's width (one row per line, whatever the width: a wrapped line would take rows the
 * redraw cannot count once the terminal is resized), and the block to its height.
 *
 * The logger sends its lines through `print` (see core/log.ts); writes to the stream itself
 * (`process.stderr.write`, `console.error`, Node's warnings) are routed through it too while the
 * block is on screen. Text written to the file descriptor behind the stream's back (a native
 * library's own stderr output) is not seen, and the next redraw may cover its last rows.
 */
export interface TerminalStream {
  isTTY?: boolean;
  columns?: number;
  rows?: number;
  write(chunk: string | Uint8Array, ...rest: unknown[]): boolean;
  on?(event: 'resize', listener: () => void): unknown;
  off?(event: 'resize', listener: () => void): unknown;
}

type Write = (s: string) => unknown;

const CSI = '\x1b[';

/** How long after the last text written above it the block is drawn again. */
export const REDRAW_DELAY_MS = 100;

export class StatusArea {
  /** The lines last shown (empty: no block). */
  private lines: string[] = [];
  private overflow: (hidden: number) => string = (k) => `… ${k} more`;
  /** Rows the block takes on screen now; 0 when it is not drawn. */
  private rows = 0;
  /** The last text written left the cursor inside a row (no final newline). */
  private partial = false;
  /** Inside `print`'s write. */
  private printing = false;
  private streamWrite: TerminalStream['write'] | undefined;
  /** The writes replaced while the block is shown: the block's stream's, and the others'. */
  private hooks: { stream: TerminalStream; own: TerminalStream['write']; hook: TerminalStream['write'] }[] = [];
  private readonly onResize = () => this.redraw();
  private redrawTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly stream: TerminalStream,
    /** Other streams to the same terminal (stdout, when it is): their writes erase and redraw the block too. */
    private readonly others: readonly TerminalStream[] = [],
  ) {}

  /** Escape sequences work here: the stream is a terminal. */
  get tty(): boolean {
    return Boolean(this.stream.isTTY);
  }

  /** Replaces the block with `lines` (on a terminal; elsewhere it does nothing). `overflow` names the lines left out when the block is taller than the terminal. */
  show(lines: readonly string[], overflow?: (hidden: number) => string): void {
    if (!this.tty) return;
    this.lines = [...lines];
    if (overflow) this.overflow = overflow;
    this.attach();
    this.redraw();
  }

  /**
   * Writes `text` above the block: the block is erased first and drawn again after it, all in
   * one call of `write` (default: the stream's own). Text that does not end a line leaves the
   * block off the screen until a later text ends it or the next `show`.
   */
  print(text: string, write: Write = (s) => this.raw(s)): void {
    if (!text) return;
    const out = this.erase() + text;
    this.partial = !text.endsWith('\n');
    // `write` may be the stream's own write, routed through the hook below: let it pass.
    this.printing = true;
    try {
      write(out);
    } finally {
      this.printing = false;
    }
    this.redrawSoon();
  }

  /**
   * The block comes back REDRAW_DELAY_MS after text written above it (at most that often), not
   * after each line: a burst of logs (reconnects of many cameras, debug level) then costs the terminal its
   * own bytes, not the whole block again per line (40 sources: 4.7 MB for 1000 log lines, every
   * write blocking the event loop).
   */
  private redrawSoon(): void {
    if (!this.lines.length || this.partial || this.redrawTimer) return;
    this.redrawTimer = setTimeout(() => {
      this.redrawTimer = undefined;
      this.redraw();
    }, REDRAW_DELAY_MS);
    this.redrawTimer.unref?.();
  }

  /** Leaves the block on the screen as it is and forgets it: later text goes below it. */
  clear(): void {
    if (this.redrawTimer) {
      // Logged since the last tick: the last block comes back once, for good.
      clearTimeout(this.redrawTimer);
      this.redrawTimer = undefined;
      this.redraw();
    }
    this.lines = [];
    this.rows = 0;
    this.detach();
  }

  private redraw(): void {
    if (this.redrawTimer) {
      clearTimeout(this.redrawTimer);
      this.redrawTimer = undefined;
    }
    if (!this.lines.length) return;
    const lead = this.erase() + (this.partial ? '\n' : '');
    this.partial = false;
    this.raw(lead + this.draw());
  }

  /** Moves to the first row of the block and erases from there to the end of the screen. */
  private erase(): string {
    if (!this.rows) return '';
    const s = `\r${CSI}${this.rows}A${CSI}J`;
    this.rows = 0;
    return s;
  }

  private draw(): string {
    if (!this.lines.length) return '';
    // One column short of the width: terminals differ on what a character in the last column does to the cursor.
    const width = Math.max(1, (this.stream.columns || 80) - 1);
    // One row free for the cursor below the block: a block as tall as the screen scrolls its first row away.
    const height = Math.max(1, (this.stream.rows || 24) - 1);
    let lines = this.lines;
    if (lines.length > height) lines = [...lines.slice(0, height - 1), this.overflow(lines.length - (height - 1))];
    this.rows = lines.length;
    return lines.map((l) => `${fit(l, width)}\n`).join('');
  }

  private raw(s: string): void {
    if (!s) return;
    if (this.streamWrite) this.streamWrite.call(this.stream, s);
    else this.stream.write(s);
  }

  /** Routes other writes to the stream through `print`, and redraws on resize, while the block is shown. */
  private attach(): void {
    if (this.hooks.length) return;
    for (const stream of [this.stream, ...this.others]) {
      const own = stream.write;
      if (stream === this.stream) this.streamWrite = own;
      // Every write to the terminal but the block's own: the block is erased first (if drawn),
      // and drawn again a moment later below what was written (if that ended its line).
      const hook = (chunk: string | Uint8Array, ...rest: unknown[]): boolean => {
        if (this.printing) return own.call(stream, chunk, ...rest);
        const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
        if (!text) return own.call(stream, chunk, ...rest);
        if (this.rows) this.raw(this.erase());
        const ok = own.call(stream, chunk, ...rest);
        this.partial = !text.endsWith('\n');
        this.redrawSoon();
        return ok;
      };
      stream.write = hook;
      this.hooks.push({ stream, own, hook });
    }
    this.stream.on?.('resize', this.onResize);
  }

  private detach(): void {
    for (const { stream, own, hook } of this.hooks) if (stream.write === hook) stream.write = own;
    if (this.hooks.length) this.stream.off?.('resize', this.onResize);
    this.hooks = [];
    this.streamWrite = undefined;
  }
}

/** Grapheme clusters: what a terminal draws as one character (an emoji with its modifiers, a letter with its combining marks). */
const graphemes = new Intl.Segmenter();

/** Columns `text` takes on a terminal (string-width: East Asian width, emoji sequences, zero-width marks); nothing is taken for an escape sequence. */
const columns = (text: string) => stringWidth(text, { countAnsiEscapeCodes: true });

/**
 * `line` in at most `width` terminal columns: made safe for the terminal first (`forTerminal`,
 * the one policy for untrusted text there: control characters, which would move the cursor,
 * shown as `\xNN`, lone surrogates as U+FFFD), then measured: wide characters (CJK, emoji, an
 * emoji sequence as one) count two columns, combining marks none (string-width); a line cut
 * short ends with '…', never inside a character.
 */
export function fit(line: string, width: number): string {
  const safe = forTerminal(line);
  if (columns(safe) <= width) return safe;
  let out = '';
  let used = 0;
  // Character by character of the line as given, so that an escape (`\x1b`) is kept or left out whole.
  for (const { segment } of graphemes.segment(line)) {
    const shown = forTerminal(segment);
    const w = columns(shown);
    if (used + w > width - 1) break;
    out += shown;
    used += w;
  }
  return out + '…';
}

let stderrArea: StatusArea | undefined;

/**
 * The status block as an orderly stop leaves it, for an exit that skips it (hardExit's _exit, or a
 * SIGKILL): its last lines drawn again below the last text written (a line written just before,
 * the exit's own message, had erased them, their redraw due 100 ms later: never) and its hooks let
 * go. (The terminal's mode is put back by the C module: uv_tty_reset_mode, as Node's exit does;
 * stdin is not touched here, as reading process.stdin would open it.)
 */
export function restoreTerminal(): void {
  try {
    stderrArea?.clear();
  } catch {
    // (the terminal is gone: nothing to restore there)
  }
}

/** The block at the bottom of stderr, shared by the logger and the status line. */
export function stderrStatus(): StatusArea {
  // stdout to the same terminal (an extension's console.log): its lines are kept above the block too.
  return (stderrArea ??= new StatusArea(process.stderr, sameTerminal(1) ? [process.stdout] : []));
}

/**
 * Whether `target` (a file descriptor, or a path such as /dev/stdout or /dev/tty) is the
 * terminal stderr writes to: data written there shares the screen with the status block.
 */
export function sameTerminal(target: number | string): boolean {
  if (!process.stderr.isTTY) return false;
  if (target === '/dev/tty') return true; // the controlling terminal: another device number, the same screen
  try {
    const tty = fstatSync(2);
    const t = typeof target === 'number' ? fstatSync(target) : statSync(target);
    return t.isCharacterDevice() && t.rdev === tty.rdev;
  } catch {
    return false;
  }
}
