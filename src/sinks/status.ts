import { percentileOfSorted } from '../core/stats.js';
import { FrameRates, type SourceStats } from '../sources/stats.js';

/**
 * A status line per source on stderr every `intervalMs`: frames in/out per second, drops,
 * p50/p99 end-to-end latency. On a terminal the lines are redrawn in place.
 */
export class StatusReporter {
  private timer: NodeJS.Timeout | undefined;
  private readonly rates = new FrameRates();
  private drawn = 0;

  constructor(
    private readonly stats: readonly SourceStats[],
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly intervalMs = 1000,
  ) {}

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
      const state = s.error ? `  FAILED: ${s.error.message.split('\n')[0]}` : '';
      return `${s.id}  in ${fin.toFixed(1)} fps  out ${fout.toFixed(1)} fps  drops ${s.dropped}  e2e p50 ${p(50)} ms  p99 ${p(99)} ms (from ${s.producedBy ?? '-'})  pipeline p50 ${pp(50)} ms  p99 ${pp(99)} ms${state}`;
    });
  }

  private print(): void {
    const lines = this.lines();
    if (this.stream.isTTY) {
      if (this.drawn) this.stream.write(`\x1b[${this.drawn}A`);
      this.stream.write(lines.map((l) => `\x1b[2K${l}\n`).join(''));
      this.drawn = lines.length;
    } else {
      this.stream.write(lines.map((l) => `[status] ${l}\n`).join(''));
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
