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

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** What a stop signal undoes where nothing else in the process listens for it (atStopSignal). */
const cleanups = new Set<() => void>();

/**
 * A stop signal with `cleanups` pending: where nothing else in the process listens for the signal
 * (argus detect, preview: no orderly stop of their own), each is run, and the process then ends
 * by the signal as it would have (its default action, status 128 + n). Where another listener
 * stops the process in order (argus run), that stop undoes what it holds itself.
 */
function onStopSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  for (const c of cleanups) {
    try {
      c();
    } catch {
      // the others are still undone, and the process still ends by the signal
    }
  }
  cleanups.clear();
  for (const s of STOP_SIGNALS) process.removeListener(s, onStopSignal);
  process.kill(process.pid, signal);
}

/**
 * Runs `cleanup` (synchronous) if SIGINT, SIGTERM or SIGHUP ends the process by its default action
 * before the returned function is called (see onStopSignal). The signals are listened for only
 * while something is pending.
 */
export function atStopSignal(cleanup: () => void): () => void {
  if (cleanups.size === 0) for (const s of STOP_SIGNALS) process.on(s, onStopSignal);
  cleanups.add(cleanup);
  return () => {
    if (!cleanups.delete(cleanup) || cleanups.size > 0) return;
    for (const s of STOP_SIGNALS) process.removeListener(s, onStopSignal);
  };
}
