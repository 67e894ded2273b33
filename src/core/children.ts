import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { atStopSignal, endsBy } from './signals.js';

/** The child processes argus started (ffmpeg) that have not exited. */
const live = new Set<ChildProcess>();
/** How those stopped gently at a stop signal are stopped (ownChild's `stopGently`). */
const gentle = new Map<ChildProcess, () => Promise<void>>();
let releaseSignals: (() => void) | undefined;
let exitHooked = false;

function killAll(): void {
  for (const c of live) c.kill('SIGKILL');
  live.clear();
  gentle.clear();
  releaseSignals?.();
  releaseSignals = undefined;
  process.removeListener('SIGQUIT', onQuit);
}

/**
 * SIGQUIT (a terminal's Ctrl-\, sent to its foreground group) where nothing else in the process
 * listens for it: the children killed, and the process ended by it as it would have been (its
 * default action, a core file where allowed), with no exit event. A child in a process group of
 * its own (spawnOwned) no longer got it with argus: one blocked opening a named pipe, or reading
 * a stalled camera, lived on for ever.
 */
function onQuit(): void {
  if (process.listenerCount('SIGQUIT') > 1) return;
  killAll();
  endsBy('SIGQUIT');
}

/**
 * At a stop signal (atStopSignal): the children with a gentle stop stopped so (an RTSP camera's
 * ffmpeg: SIGTERM, TEARDOWN, SIGKILL after its grace), the process's end waiting for them; every
 * other one killed. `forced` (a second signal during that wait): every one killed at once.
 */
function stopAll(forced: boolean): Promise<void> | void {
  const waits = forced ? [] : [...live].flatMap((c) => (gentle.has(c) ? [gentle.get(c)!()] : (c.kill('SIGKILL'), [])));
  if (!waits.length) return killAll();
  return Promise.all(waits).then(killAll);
}

/**
 * Makes `child` end with argus, however argus ends: killed (SIGKILL) at the process's exit (a
 * `process.exit`, the end of the event loop, an uncaught exception) and at a stop signal that
 * ends the process by its default action (argus detect, preview: atStopSignal). A child is
 * otherwise left behind: `argus detect FIFO.mp4` then Ctrl-C left its ffmpeg blocked opening the
 * named pipe, ignoring the SIGINT it got too (ffmpeg waits for a fourth), orphaned for ever.
 * A child that never started (no pid: its 'error' event says why) is not held. `stopGently`:
 * how a stop signal stops it instead (stopAll; an RTSP camera's ffmpeg: stopFfmpeg), the
 * process's end waiting for it; the exit still kills it. Returns `child`.
 */
export function ownChild<C extends ChildProcess>(child: C, stopGently?: () => Promise<void>): C {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return child;
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', killAll);
  }
  live.add(child);
  if (stopGently) gentle.set(child, stopGently);
  if (!releaseSignals) process.on('SIGQUIT', onQuit);
  releaseSignals ??= atStopSignal(stopAll);
  child.once('exit', () => {
    live.delete(child);
    gentle.delete(child);
    if (live.size > 0) return;
    releaseSignals?.();
    releaseSignals = undefined;
    process.removeListener('SIGQUIT', onQuit);
  });
  return child;
}

/**
 * Resolves once `child` has exited (or failed to start), or `ms` after the call where it has not:
 * what starts another reader of the same input after killing this one waits for it (a V4L2 device
 * is busy while open, a camera may take one session at a time), bounded, for a process stuck in
 * the kernel ends only when it leaves it.
 */
export function exitOf(child: ChildProcess, ms: number): Promise<void> {
  if (child.pid === undefined || child.exitCode != null || child.signalCode != null) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      child.off('exit', done);
      child.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    child.once('exit', done);
    child.once('error', done);
  });
}

/**
 * Starts a child (a source's ffmpeg) in a process group of its own, held by ownChild (with
 * `stopGently`, given the child). In argus's group, a terminal's Ctrl-C reached ffmpeg too, and
 * the SIGTERM argus sends an RTSP camera's ffmpeg to stop it (stopFfmpeg) was ffmpeg's second
 * signal: at a second, ffmpeg interrupts its I/O, and the camera's TEARDOWN was not sent (ffmpeg
 * 5.1, 8 of 8 times, over UDP and TCP; the camera kept the session until it timed out). Only argus
 * stops it now, once; it is ended in every way argus ends (ownChild: the exit, a stop signal),
 * and one left by an argus killed outright ends at its next write, into a pipe with no reader.
 * (Not unref'd: the child is waited for as any other.)
 */
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions, stopGently?: (child: ChildProcess) => Promise<void>): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  return ownChild(child, stopGently && (() => stopGently(child)));
}
