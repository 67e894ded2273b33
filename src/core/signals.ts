import { constants as osConstants } from 'node:os';
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

/**
 * The longest the process waits at a stop signal on what its cleanups return, ms: past it they
 * are run again forced (as at a second signal) and the process ends by the signal all the same.
 * Each cleanup bounds its own wait (an RTSP camera's ffmpeg: FFMPEG_STOP_GRACE_MS); this bounds a
 * promise that never settles. The wait's timer also holds the event loop: a promise that nothing
 * else held let the loop empty, and a Ctrl-C ended the process with status 0.
 */
export const STOP_WAIT_MAX_MS = 5000;

/**
 * What a stop signal undoes where nothing else in the process listens for it (atStopSignal): given
 * `forced` false at the first signal, which may return a promise for the process to wait on (an
 * RTSP camera's ffmpeg given its grace to send TEARDOWN), true at a second one during that wait
 * and as the process ends after it (endBy).
 */
type Cleanup = (forced: boolean) => void | Promise<unknown>;
const cleanups = new Set<Cleanup>();

/** The first signal's cleanups, while the process waits on them before it ends; when it came; the wait's bound. */
let ending: { ran: Cleanup[]; at: number; bound: ReturnType<typeof setTimeout> } | undefined;

/** Runs `cs`; what they return, their rejections taken (a cleanup that throws or rejects leaves the others run, and the end by the signal). */
function runCleanups(cs: readonly Cleanup[], forced: boolean): Promise<unknown>[] {
  const waits: Promise<unknown>[] = [];
  for (const c of cs) {
    try {
      const r = c(forced);
      if (r) waits.push(r.catch(() => undefined));
    } catch {
      // the others are still undone, and the process still ends by the signal
    }
  }
  return waits;
}

/**
 * Ends the process by `signal` (its default action), what the cleanups undid undone again first,
 * forced: where the process waited on them (`ending`), the first signal's cleanups run again (a
 * partial file removed at the signal and made again by the write still under way was left
 * behind; a child is killed at once), and those registered during the wait run too (a partial
 * file begun then was left behind, as a child started then was).
 */
function endBy(signal: NodeJS.Signals): void {
  if (ending) {
    clearTimeout(ending.bound);
    runCleanups(ending.ran, true);
  }
  const late = [...cleanups];
  cleanups.clear();
  runCleanups(late, true);
  for (const s of STOP_SIGNALS) process.removeListener(s, onStopSignal);
  endsBy(signal);
}

/**
 * Ends the process by `signal`'s default action, its listeners already removed: sent to itself.
 * Where that leaves it running, argus is pid 1 (a container without an init: docker run without
 * --init, Kubernetes), for which the kernel drops a signal with no handler, its own included: the
 * process went on (work the signal cut, writeWhole's endsBySignal, waited for ever, the loop
 * emptied, and it ended with 13, the CLI's unsettled await, or 0, as if it had done its work).
 * It then exits with the status a shell gives an end by the signal, 128 + n.
 */
export function endsBy(signal: NodeJS.Signals): void {
  process.kill(process.pid, signal);
  setTimeout(() => process.exit(128 + (osConstants.signals[signal] ?? 0)), 0);
}

/**
 * A stop signal with `cleanups` pending: where nothing else in the process listens for the signal
 * (argus detect, preview: no orderly stop of their own), each is run, and the process then ends
 * by the signal as it would have (its default action, status 128 + n), once what they return has
 * settled, STOP_WAIT_MAX_MS at most. A second signal then (not a repeat within SIGNAL_REPEAT_MS:
 * the same one sent to the process and its group) runs them forced and ends the process at once.
 * Where another listener stops the process in order (argus run), that stop undoes what it holds itself.
 */
function onStopSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  if (ending) {
    if (performance.now() - ending.at < SIGNAL_REPEAT_MS) return;
    return endBy(signal);
  }
  const ran = [...cleanups];
  cleanups.clear();
  const waits = runCleanups(ran, false);
  if (!waits.length) return endBy(signal);
  const bound = setTimeout(() => endBy(signal), STOP_WAIT_MAX_MS);
  ending = { ran, at: performance.now(), bound };
  void Promise.all(waits).then(() => endBy(signal));
}

/**
 * Runs `cleanup` if SIGINT, SIGTERM or SIGHUP ends the process by its default action before the
 * returned function is called (see onStopSignal): synchronous, or a promise the process waits on
 * before it ends (bounded by the cleanup itself, and by STOP_WAIT_MAX_MS), called again with
 * `forced` at a second signal or as the process then ends (so idempotent); one registered during
 * that wait runs forced as the process ends.
 * The signals are listened for only while something is pending.
 */
export function atStopSignal(cleanup: Cleanup): () => void {
  if (cleanups.size === 0 && !ending) for (const s of STOP_SIGNALS) process.on(s, onStopSignal);
  cleanups.add(cleanup);
  return () => {
    if (!cleanups.delete(cleanup) || cleanups.size > 0 || ending) return;
    for (const s of STOP_SIGNALS) process.removeListener(s, onStopSignal);
  };
}

/**
 * What work cut by a stop signal awaits while the process ends by that signal (onStopSignal,
 * within STOP_WAIT_MAX_MS): a promise that never settles. Its failure then (a write whose partial
 * file the signal removed) is the signal's doing, not an error to say before the end.
 */
export const endsBySignal = (): Promise<never> => new Promise<never>(() => {});
