import { ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { atStopSignal, endsBy } from './signals.js';

/** The child processes argus started (ffmpeg) that have not exited. */
const live = new Set<ChildProcess>();
/** How those stopped gently at a stop signal are stopped (ownChild's `stopGently`). */
const gentle = new Map<ChildProcess, () => Promise<void>>();
let releaseSignals: (() => void) | undefined;
let exitHooked = false;

/**
 * The shell script of the reaper (startReaper): it starts with the children held as its arguments
 * (`T:START`, or `T:` where the start is not known), then reads lines `+ T:START` (a child to end should
 * argus end first: `-PGID`, a process group of its own, or `PID`; START, the start time of the
 * process T names, field 22 of its /proc/PID/stat, read at its spawn: processStart), `- T` (that
 * one has exited) and `0` (none left: argus ended them itself) until argus's end closes its stdin,
 * then sends each one left SIGTERM (the stop argus itself gives a camera's ffmpeg; one reading a
 * stalled socket leaves its read, 17–62 ms after argus's end) and, 1 s later, SIGKILL (one blocked
 * opening a named pipe, which SIGTERM does not interrupt). No fork while argus lives: shell
 * builtins only.
 * Before each signal, the target's identity (`ours`): a child that had exited, its exit not yet
 * told (argus killed between its reaping and the `- T` line; or one ended by the SIGTERM), may
 * have had its pid handed to another process (pid_max is 32768 on many hosts), and the reaper
 * killed a stranger: a whole process group (a shell's job, a CI run). One whose /proc/PID/stat
 * gives another start time is passed over. One with no /proc/PID is signalled still: a group
 * whose leader is gone may have members left, and Linux hands out no pid still used as a
 * process group's id. (No START, where /proc could not be read at the spawn: signalled as before.)
 * The name in /proc/PID/stat is the process's own (the executable's file name, or any it gives
 * itself: prctl PR_SET_NAME) and may hold a newline: its first line then holds no start time, and
 * a stranger so named was signalled whatever its start time. Read then to the file's end, the
 * lines joined (only then: a redirection of a loop, not of a builtin, is one POSIX lets a shell
 * exit at, were the file gone meanwhile); a stat that still gives no start time is not ours.
 */
const REAPER_SCRIPT = [
  'set -f',
  'live=" $* "',
  "while IFS=' ' read -r op t; do",
  '  case $op in',
  '    +) live="$live$t " ;;',
  '    -) case $live in *" $t:"*) live="${live%%" $t:"*} ${live#*" $t:"* }" ;; esac ;;',
  "    0) live=' ' ;;",
  '  esac',
  'done',
  'case $live in *[![:space:]]*) ;; *) exit 0 ;; esac',
  'ours() {',
  '  p=${1%%:*} s=${1#*:}',
  '  [ -z "$s" ] && return 0',
  '  st=',
  '  { read -r st < "/proc/${p#-}/stat"; } 2>/dev/null',
  '  [ -z "$st" ] && return 0',
  '  set -- ${st##*) }',
  '  if [ $# -lt 20 ]; then',
  '    st=',
  '    { while read -r l; do st="$st $l"; done < "/proc/${p#-}/stat"; } 2>/dev/null',
  '    [ -z "$st" ] && return 0',
  '    set -- ${st##*) }',
  '    [ $# -ge 20 ] || return 1',
  '  fi',
  '  shift 19',
  '  [ "$1" = "$s" ]',
  '}',
  'for e in $live; do ours "$e" && kill -s TERM -- "${e%%:*}"; done 2>/dev/null',
  'sleep 1',
  'for e in $live; do ours "$e" && kill -s KILL -- "${e%%:*}"; done 2>/dev/null',
].join('\n');

/** The reaper's script (REAPER_SCRIPT), for its tests. */
export const reaperScript = (): string => REAPER_SCRIPT;

/**
 * The start time of process `pid` (field 22 of /proc/PID/stat, clock ticks since boot: with the
 * pid, who it is), or undefined where it cannot be read (no /proc: not Linux; gone). Read at a
 * child's spawn, synchronously (a read of the kernel's memory, once per child): until its exit
 * is handled on the event loop, node has not reaped it, and its pid cannot be anyone else's.
 */
export function processStart(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  return statStart(stat);
}

/** The start time in a /proc/PID/stat line (processStart), or undefined where it has none. */
export function statStart(stat: string): string | undefined {
  // After the name in parentheses (which may hold spaces and parentheses): fields 3 on.
  const start = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19];
  return start && /^\d+$/.test(start) ? start : undefined;
}

/** What the reaper ends of a child (ownChild): its process group, the child alone, or nothing (it ends by itself). */
export type Reap = 'group' | 'child' | 'none';

/** What the reaper is told to end for each held child, as its lines and arguments name it (`T:START`): `-PGID` (spawnOwned's, a group of its own) or `PID`, and its start time (processStart) where known. */
const targets = new Map<ChildProcess, string>();
let reaper: ChildProcess | undefined;
/** Whether /bin/sh is missing or may not be run here: no reaper is started (startReaper). */
let noShell = false;
/** The least time between two starts of the reaper where it is killed (startReaper), ms. */
const REAPER_RESTART_MS = 1000;

/**
 * The most bytes queued for the reaper before argus stops telling it lines (tellReaper). Its
 * pipe holds 64 KB at most; with the reaper stopped (SIGSTOP: a debugger, a frozen cgroup) it
 * fills, and node queued every later line in argus's memory, without bound, two at each child's
 * start and exit.
 */
const REAPER_BACKLOG = 4096;
/** The reaper's stdin while argus waits for it to take what is queued (tellReaper), then tells it the whole set (tellAll). */
let behind: ChildProcess['stdin'] = null;

/**
 * Tells the reaper a line, where there is one (a write into a pipe: no wait). Past REAPER_BACKLOG
 * queued, no more: once all is taken, the whole set of targets is told again as one write
 * (tellAll: `0`, then each `+`), which is what the lines left out would have made of it.
 */
function tellReaper(line: string): void {
  const stdin = reaper?.stdin;
  if (!stdin?.writable || behind === stdin) return;
  if (stdin.writableLength < REAPER_BACKLOG) {
    stdin.write(`${line}\n`);
    return;
  }
  behind = stdin;
  stdin.write(`${line}\n`, (e) => {
    if (behind !== stdin) return;
    behind = null;
    if (!e) tellAll();
  });
}

/** Tells the reaper the whole set of targets, as one write: `0`, then a `+` for each. */
function tellAll(): void {
  let lines = '0\n';
  for (const t of targets.values()) lines += `+ ${t}\n`;
  if (reaper?.stdin?.writable) reaper.stdin.write(lines);
}

/** The bytes queued for the reaper's pipe, not yet taken (for its tests). */
export function reaperBacklog(): number {
  return reaper?.stdin?.writableLength ?? 0;
}

/**
 * Starts the reaper, once (again where it has gone), told of every child held: a shell in a
 * session of its own, reading a pipe that only argus holds open, which ends the children argus
 * left when argus ends without ending them, however that is: killed outright (SIGKILL, the OOM
 * killer; a supervisor that kills argus's process group, `timeout -k`, supervisord's
 * `killasgroup`, which reach neither the reaper nor a child in a group of its own). Such a
 * child, one blocked opening a named pipe nobody writes to or reading a camera that stopped
 * sending, lived on for ever: nothing was left to end it. Not waited for (unref'd): it ends at
 * argus's end. Where no shell can be started, children are held as before, without it.
 */
function startReaper(): void {
  if (reaper || noShell || process.platform === 'win32') return;
  let r: ChildProcess;
  try {
    // The children held are its arguments (`T:START`), not lines written after its start: argus
    // killed between the spawn and that write (a busy machine can hold it there) left the
    // restarted reaper knowing of no child, and the ffmpeg running on (a CI run at load 15).
    r = spawn('/bin/sh', ['-c', REAPER_SCRIPT, 'argus-reaper', ...targets.values()], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  } catch {
    return;
  }
  const startedAt = performance.now();
  const gone = (): void => {
    if (reaper === r) reaper = undefined;
  };
  r.once('error', (e: NodeJS.ErrnoException) => {
    gone();
    // No shell there (a distroless image), or not one argus may run: not tried again at each
    // child (a failed spawn, a fork of argus, at each ffmpeg start). Out of processes, memory or
    // descriptors (EAGAIN, ENOMEM, EMFILE): tried again at the next.
    if (e.code === 'ENOENT' || e.code === 'EACCES' || e.code === 'ENOTDIR') noShell = true;
  });
  r.once('exit', (_code, signal) => {
    gone();
    // Killed while argus lives (`pkill sh`, the OOM killer): started again, told of the children
    // held. It was started again only at argus's next child, and the ffmpegs of cameras that did
    // not restart outlived an argus then killed outright. A second at least after the last start:
    // a shell killed at each start is no loop of spawns.
    if (signal !== null) {
      setTimeout(() => {
        if (!reaper && targets.size > 0) startReaper();
      }, Math.max(0, startedAt + REAPER_RESTART_MS - performance.now())).unref();
    }
  });
  r.stdin?.on('error', gone);
  if (r.pid === undefined) return;
  reaper = r;
  r.unref();
  (r.stdin as unknown as { unref?: () => void } | null)?.unref?.();
}

function killAll(): void {
  for (const c of live) c.kill('SIGKILL');
  live.clear();
  targets.clear();
  tellReaper('0');
  gentle.clear();
  releaseHeld();
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
 * Killed outright (SIGKILL), argus leaves it to the reaper (startReaper), told to end its process
 * group (`reap` 'group': spawnOwned's), the child alone ('child'), or neither ('none').
 * A child that never started (no pid: its 'error' event says why) is not held. `stopGently`:
 * how a stop signal stops it instead (stopAll; an RTSP camera's ffmpeg: stopFfmpeg), the
 * process's end waiting for it; the exit still kills it. Returns `child`.
 */
export function ownChild<C extends ChildProcess>(child: C, stopGently?: () => Promise<void>, reap: Reap = 'child'): C {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return child;
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', killAll);
  }
  live.add(child);
  if (stopGently) gentle.set(child, stopGently);
  holdSignals();
  // Ended by the reaper too, should argus end without ending it (startReaper): started after the
  // signals are held, its own spawn is no time for a signal to end argus by its default action.
  const target = reap === 'none' ? undefined : reap === 'group' ? `-${child.pid}` : String(child.pid);
  if (target !== undefined) {
    // With its start time: the reaper ends the process it was told of, not another given its pid since.
    const told = `${target}:${processStart(child.pid) ?? ''}`;
    targets.set(child, told);
    if (reaper) tellReaper(`+ ${told}`);
    else startReaper();
  }
  child.once('exit', () => {
    live.delete(child);
    gentle.delete(child);
    if (targets.delete(child)) tellReaper(`- ${target}`);
    if (live.size > 0) return;
    releaseHeld();
  });
  return child;
}

/** What each held child reads (nameChild), for the word on one left at a command's end (childrenLeft). */
const names = new WeakMap<ChildProcess, string>();

/** Names what `child` reads (an ffmpeg's input: a file, a camera's URL), for childrenLeft. */
export function nameChild(child: ChildProcess, what: string): void {
  names.set(child, what);
}

/** A child held that has not exited (childrenLeft): its pid, and what it reads where named (nameChild). */
export interface ChildLeft {
  pid: number;
  what?: string;
}

/** The children held (ownChild) that have not exited. */
export function childrenLeft(): ChildLeft[] {
  return [...live].map((c) => ({ pid: c.pid!, what: names.get(c) }));
}

/**
 * How long a one-shot command (argus detect, preview) lets its children end after its result or
 * failure before it exits without them, ms (endDespiteChildren).
 */
export const CHILDREN_END_WAIT_MS = 2000;

/**
 * After a one-shot command's result or failure: where a child it started has not exited
 * CHILDREN_END_WAIT_MS later (an ffmpeg stuck in the kernel: a hung network mount, a wedged
 * device, which SIGKILL ends only when it leaves the kernel), `end` is called with those left, to
 * say so and exit; nothing where all have gone (the process ends by itself). The held child kept
 * the event loop alive: `argus detect` and `argus preview` printed their result and then never
 * ended, for as long as the kernel held the process. (The timer is unref'd: it holds nothing.)
 */
export function endDespiteChildren(end: (left: ChildLeft[]) => void): void {
  setTimeout(() => {
    const left = childrenLeft();
    if (left.length) end(left);
  }, CHILDREN_END_WAIT_MS).unref();
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
 * and, where argus is killed outright, by the reaper (startReaper: SIGTERM at once, SIGKILL 1 s
 * later): it ended only at its next write into the pipe with no reader, and one reading a stalled
 * camera or blocked opening a named pipe nobody writes to lived on for ever.
 * `endsAlone`: a child that ends by itself once argus is gone, and must be let to (the annotated
 * video's encoder, which reads argus's pipe to its end and then writes the file's index): not
 * given to the reaper, whose SIGKILL 1 s after argus's end could cut that index short.
 * (Not unref'd: the child is waited for as any other.) Never throws: a spawn that throws gives a
 * child that never started, its 'error' event telling why (notStartedChild), as node tells EMFILE.
 */
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions, stopGently?: (child: ChildProcess) => Promise<void>, endsAlone = false): ChildProcess {
  // The stop signals are listened for before the child exists: a signal between its spawn and
  // ownChild (a busy machine can hold a process there for long) found no listener and ended argus
  // by its default action, the child in a group of its own left running (an ffmpeg blocked on a
  // stalled camera, for ever).
  const held = holdSignals();
  let child: ChildProcess;
  try {
    child = spawn(command, args, { ...options, detached: true });
  } catch (e) {
    // Thrown (ENOMEM, E2BIG; an argument with a NUL): no child, the signals not held for one.
    if (held && live.size === 0) releaseHeld();
    return notStartedChild(e);
  }
  ownChild(child, stopGently && (() => stopGently(child)), endsAlone ? 'none' : 'group');
  if (held && live.size === 0) releaseHeld();
  return child;
}

/**
 * A child that never started, whose 'error' event tells `e` on the next tick: what node gives
 * for a start that fails after the call (EMFILE, EAGAIN: no pid, no pipes), and so what spawnOwned
 * gives for one whose spawn throws (node throws ENOMEM and E2BIG, and an argument with a NUL). Each
 * caller (a source's ffmpeg, argus detect's and preview's, the annotated video's encoder) tells
 * both by its 'error' listener, as its own coded error; a throw, handled by each apart, ended a
 * whole run where one forgot it (the annotate sink's offer).
 */
export function notStartedChild(e: unknown): ChildProcess {
  // No pipes, as node leaves a child whose start failed (stdin, stdout, stderr null); and no
  // process handle, as node leaves one (its onexit drops it before the 'error'): a ChildProcess
  // made so holds a handle never spawned, pid 0 inside, and its kill() was kill(0, signal), the
  // signal sent to argus's own process group (a stop's SIGKILL ended argus and its shell's job;
  // a test's ended the whole test run).
  const never = Object.assign(new ChildProcess(), { stdin: null, stdout: null, stderr: null, _handle: null });
  const error = e instanceof Error ? e : new Error(String(e));
  const errno = (error as NodeJS.ErrnoException).errno;
  process.nextTick(() => {
    // Ended, as node tells such a child (exitCode: the negative errno): whoever waits for its end has it.
    (never as { exitCode: number | null }).exitCode = typeof errno === 'number' && errno < 0 ? errno : -1;
    never.emit('error', error);
  });
  return never;
}

/**
 * Sends `child` `signal` where it started (it has a pid) and has not exited; false otherwise. A
 * child that never started holds a process handle never spawned (node's for EMFILE or EAGAIN,
 * until its 'error' on the next tick drops it; notStartedChild's had one too), and its kill()
 * sent the signal to whatever pid that handle's unwritten memory held: 0 (argus's own group), or
 * any process (-1, for argus run as root: every process on the host; a scratch script of 2000
 * such kills ended every process of the machine). A file or V4L2 source stopped before its failed
 * start was told, and the annotate sink, which kills its encoder after a write that failed (as it
 * fails where the encoder never started), did so.
 */
export function signalChild(child: ChildProcess, signal: NodeJS.Signals): boolean {
  // (exitCode and signalCode may be undefined rather than null on a child of another make: a wrapper's, a test's.)
  if (child.pid === undefined || child.exitCode != null || child.signalCode != null) return false;
  return child.kill(signal);
}

/** Listens for the stop signals and SIGQUIT for the children held (stopAll, onQuit), where not yet; whether it began to now. */
function holdSignals(): boolean {
  if (releaseSignals) return false;
  process.on('SIGQUIT', onQuit);
  releaseSignals = atStopSignal(stopAll);
  return true;
}

/** Stops listening (holdSignals): no child is held. */
function releaseHeld(): void {
  releaseSignals?.();
  releaseSignals = undefined;
  process.removeListener('SIGQUIT', onQuit);
}
