import { percentileOfSorted } from '../core/stats.js';
import { stderrStatus, StatusArea, type TerminalStream } from '../core/terminal.js';
import { dropsText, FrameRates, producedByMix, type SourceStats } from '../sources/stats.js';
import { redact } from '../core/redact.js';

/**
 * A source that is not streaming says so, with the reason of its latest change
 * (`RECONNECTING: … ECONNREFUSED; retry 3 in 0.5 s`, `STALLED: no frame for 2.0 s`, `ENDED: end
 * of file`): without it, a camera down for an hour showed `in 0.0 fps` beside the latency of its
 * last frames, as a quiet camera would. The reasons are redacted when made (supervised-source).
 */
function stateNote(s: SourceStats): string {
  if (s.state === 'streaming') return '';
  const reason = s.lastTransition?.state === s.state ? s.lastTransition.reason.split('\n')[0] : '';
  return `  ${s.state.toUpperCase()}${reason ? `: ${reason}` : ''}`;
}

/**
 * A status line per source on stderr every `intervalMs`: frames in/out per second, drops,
 * p50/p99 end-to-end latency and what it is counted from (the kinds of `produced` stamp of the
 * frames its percentiles are over: `camera`, or a mix such as `camera 97%, arrival 3%`), and the state of a source that is not streaming. On a terminal
 * the lines are a block redrawn in place at the bottom, each cut to the width, with the logs
 * written above it (core/terminal.ts); elsewhere each tick writes plain `[status]` lines.
 */
export class StatusReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly rates = new FrameRates();
  private readonly area: StatusArea;

  /** `out`: the terminal's shared block (default: stderr's, which the logger writes above), or a stream. */
  constructor(
    private readonly stats: readonly SourceStats[],
    out: StatusArea | TerminalStream = stderrStatus(),
    private readonly intervalMs = 1000,
    /**
     * Redraw the block in place on a terminal (default). False: plain lines even there — when
     * stdout carries data to the same terminal (`--jsonl -`), whose lines a redraw, which moves
     * the cursor up over what it drew, would erase.
     */
    private readonly inPlace = true,
  ) {
    this.area = out instanceof StatusArea ? out : new StatusArea(out);
  }

  start(): void {
    this.rates.sample(this.stats, performance.now());
    this.timer = setInterval(() => this.print(), this.intervalMs);
    this.timer.unref();
  }

  lines(): string[] {
    const rates = this.rates.sample(this.stats, performance.now());
    return this.stats.map((s) => {
      const { fpsIn: fin, fpsOut: fout } = rates.get(s.id)!;
      const sorted = s.e2e.sorted();
      const p = (q: number) => (sorted.length ? percentileOfSorted(sorted, q).toFixed(1) : '-');
      const pipe = s.pipeline.sorted();
      const pp = (q: number) => (pipe.length ? percentileOfSorted(pipe, q).toFixed(1) : '-');
      // Where frames were dropped: the p99 over the frames read, a dropped one until a newer frame's result came out.
      const read = s.dropped > 0 && s.e2eRead.count > 0 ? `; frames read p99 ${s.e2eRead.percentile(99).toFixed(1)} ms` : '';
      const state = s.error ? `  FAILED: ${redact(s.error.message.split('\n')[0])}` : stateNote(s);
      return `${s.id}  in ${fin.toFixed(1)} fps  out ${fout.toFixed(1)} fps  drops ${dropsText(s)}  e2e p50 ${p(50)} ms  p99 ${p(99)} ms (from ${producedByMix(s.e2eBy.counts) ?? s.producedBy ?? '-'}${read})  pipeline p50 ${pp(50)} ms  p99 ${pp(99)} ms${state}`;
    });
  }

  private print(): void {
    const lines = this.lines();
    if (this.area.tty && this.inPlace) this.area.show(lines, (k) => `… and ${k} more sources`);
    else this.area.print(lines.map((l) => `[status] ${l}\n`).join(''));
  }

  /** Stops the ticks; on a terminal the last block stays on the screen and later text goes below it. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.area.clear();
  }
}
