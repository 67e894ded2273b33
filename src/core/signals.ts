/**
 * How long after the first stop signal a repeat is taken as the same one, ms. A signal sent both
 * to argus and to its process group arrives twice at once (unless the kernel merges the two):
 * GNU `timeout` signals its command and then the command's group, as do supervisors that signal
 * a process and its group. A person pressing Ctrl-C twice is slower than this.
 */
export const SIGNAL_REPEAT_MS = 500;

/**
 * SIGINT, SIGTERM and SIGHUP: the first stops in order (`stop`), a later one forces the exit
 * (`force`). A repeat within `repeatMs` of the first is the same stop delivered twice, not a
 * second signal: it used to force the exit, so `timeout 3600 argus run …` skipped the orderly stop
 * (frames in flight, alerts, the summary) and exited 130.
 */
export class StopSignals {
  private firstAt: number | undefined;

  constructor(
    private readonly on: { stop: (signal: string) => void; force: (signal: string) => void },
    private readonly clock: () => number = () => performance.now(),
    private readonly repeatMs = SIGNAL_REPEAT_MS,
  ) {}

  receive(signal: string): void {
    const t = this.clock();
    if (this.firstAt === undefined) {
      this.firstAt = t;
      this.on.stop(signal);
    } else if (t - this.firstAt >= this.repeatMs) this.on.force(signal);
  }
}
