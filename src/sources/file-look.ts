import { resolve } from 'node:path';
import type { Stats } from 'node:fs';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { makeDir, notAnInput } from '../core/files.js';
import { ArgusError, ErrorCodes, type ErrorCode } from '../core/errors.js';
import { fileReadsOnce } from './ffmpeg-args.js';

/**
 * The longest a look at a local input's file may take, ms (a run's file source at each start,
 * argus preview's and detect's files): a stat on a network mount that stopped answering (NFS,
 * SMB) waits in the kernel; past this the look fails (VAP_ERR_SOURCE_TIMEOUT naming the file): a
 * run's source is retried as a source is, preview and detect end with the error.
 */
export const FILE_STAT_TIMEOUT_MS = 5000;

/** Why a file cannot be used as an input: a coded error's code and its words, which name the file. */
export interface FileProblem {
  code: ErrorCode;
  why: string;
}

/** What fileLook found: why the file cannot be an input (notAnInput, not there, no answer), or whether it is read once (readsOnce). */
export interface FileLook {
  problem?: FileProblem;
  readsOnce?: boolean;
}

/**
 * The stats of files not answered yet, one a path (statOnce). A stat on a hung mount waits in one
 * of libuv's threads (4 by default) until the mount answers: a source retried after each bound
 * started one more, and four took every thread, every asynchronous file write of the process
 * (the alert journal's, snapshots', recordings') and name lookup (Kafka's brokers) waiting behind them.
 */
const statsInFlight = new Map<string, Promise<Stats>>();

/** `stat(path)`, shared with a stat of the same path still in flight: one thread at most a path waits on a mount. */
function statOnce(path: string): Promise<Stats> {
  let looking = statsInFlight.get(path);
  if (!looking) {
    const p = stat(path);
    const forget = () => {
      if (statsInFlight.get(path) === p) statsInFlight.delete(path);
    };
    p.then(forget, forget);
    statsInFlight.set(path, (looking = p));
  }
  return looking;
}

/**
 * What a failed stat of `path` means, in words naming the file (VAP_ERR_SOURCE_OPEN). Each
 * error was "file not found" (a folder on the path this user may not enter, a link loop, a
 * name too long, a disk's I/O error), which sent a user looking for a file that was there.
 */
export function statProblem(path: string, e: unknown): FileProblem {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const what: Record<string, string> = {
    ENOTDIR: 'not found: a part of its path is a file, not a folder (ENOTDIR)',
    EACCES: "permission denied (EACCES): a folder on its path is not this user's to enter",
    EPERM: 'permission denied (EPERM)',
    ELOOP: 'too many levels of symbolic links (ELOOP): a link on its path leads back to itself',
    ENAMETOOLONG: 'its name, or a part of it, is too long for the file system (ENAMETOOLONG)',
    EIO: 'an input/output error (EIO): a failing disk, or a network mount that lost its server',
  };
  if (code === 'ENOENT') return { code: ErrorCodes.SOURCE_OPEN, why: `file not found: ${path}` };
  return { code: ErrorCodes.SOURCE_OPEN, why: `${path}: ${(code && what[code]) ?? `cannot be looked at (${code ?? (e as Error | undefined)?.message ?? String(e)})`}` };
}

/** statBounded's answer: the file's stats, or why there are none. */
export type StatLook = { stats: Stats } | { problem: FileProblem };

/**
 * How many of statsBounded's looks wait at once: half of libuv's 4 threads, the others left to
 * the process's other work (sharp's decoding, file writes, name lookups).
 */
export const LOOKS_AT_ONCE = 2;

/**
 * statBounded of each of `paths` (undefined: not looked at, its answer undefined), LOOKS_AT_ONCE
 * at a time, in order. argus detect of a glob looked at every file at once: on a mount that
 * stopped answering, 4 of its files took every one of libuv's threads for good (a local file's
 * look, queued behind them, timed out as if its own file system had not answered; the decoding
 * and writing after waited for ever). A look not answered within its bound holds its thread, and
 * the next go on in the others; once every one is so held, those not looked at yet fail
 * (VAP_ERR_SOURCE_TIMEOUT, naming them and the files whose looks hold the threads).
 */
export async function statsBounded(paths: readonly (string | undefined)[], timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<(StatLook | undefined)[]> {
  const looks: (StatLook | undefined)[] = new Array<StatLook | undefined>(paths.length).fill(undefined);
  const held: string[] = [];
  // A path named twice is looked at once (statOnce: one thread): its second look waits on the
  // first, and holds no thread of its own when it times out.
  const looking = new Map<string, Promise<StatLook>>();
  let next = 0;
  const lookNext = async (): Promise<void> => {
    while (next < paths.length) {
      const i = next++;
      const path = paths[i];
      if (path === undefined) continue;
      const shared = looking.get(path);
      const own = shared ?? statBounded(path, timeoutMs);
      if (!shared) looking.set(path, own);
      const look = await own;
      looks[i] = look;
      if (!shared && 'problem' in look && look.problem.code === ErrorCodes.SOURCE_TIMEOUT) {
        held.push(path);
        return; // its thread still waits on the mount
      }
    }
  };
  await Promise.all(Array.from({ length: LOOKS_AT_ONCE }, lookNext));
  for (let i = next; i < paths.length; i++) {
    const path = paths[i];
    if (path !== undefined) looks[i] = { problem: { code: ErrorCodes.SOURCE_TIMEOUT, why: `${path}: not looked at: the file system gave no answer about ${held.join(' nor ')} within ${timeoutMs / 1000} s (a network mount that stopped answering?), and a look at one more would wait behind them` } };
  }
  return looks;
}

/**
 * The stats of `path`, or why there are none (statProblem; VAP_ERR_SOURCE_TIMEOUT naming the
 * file where the file system gave no answer within `timeoutMs`). By an asynchronous stat, in
 * libuv's thread pool: statSync on a hung network mount stopped the event loop (every source
 * and sink of a run; a signal's handler, so Ctrl-C could not stop argus preview or detect). The
 * stat not answered is left to end in its thread, the only one for its path (statOnce).
 */
export function statBounded(path: string, timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<StatLook> {
  const looked = statOnce(path).then(
    (stats) => ({ stats }),
    (e: unknown) => ({ problem: statProblem(path, e) }),
  );
  return withinBound(looked, path, timeoutMs);
}

/** `looked`, or VAP_ERR_SOURCE_TIMEOUT naming `path` where the file system gave no answer within `timeoutMs` (the look left to end in its thread). */
function withinBound<T>(looked: Promise<T>, path: string, timeoutMs: number): Promise<T | { problem: FileProblem }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<{ problem: FileProblem }>((res) => {
    // (After the poll phase: an answer that came while the loop was held past the bound, by a
    // long synchronous task, is taken first.)
    timer = setTimeout(() => setImmediate(() => res({ problem: { code: ErrorCodes.SOURCE_TIMEOUT, why: `${path}: the file system gave no answer about it within ${timeoutMs / 1000} s (a network mount that stopped answering?)` } })), timeoutMs);
  });
  return Promise.race([looked, late]).finally(() => clearTimeout(timer));
}

/**
 * Makes folder `dir` (with its parents: core/files makeDir) and checks this process may write
 * into it, asynchronously and bounded as statBounded: why it cannot (an error code, or the file
 * system's silence, VAP_ERR_SOURCE_TIMEOUT's words), or undefined. argus preview's and detect's
 * `--out` folder: made and checked synchronously (mkdirSync, accessSync), a hung network mount
 * held the event loop, and Ctrl-C with it.
 */
export async function unwritableDir(dir: string, timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<string | undefined> {
  const looked = makeDir(dir)
    .then(() => access(dir, constants.W_OK))
    .then(
      () => undefined,
      (e: NodeJS.ErrnoException) =>
        // mkdir says EEXIST for a path that is a file (or under one: ENOTDIR): say which.
        e.code === 'EEXIST' || e.code === 'ENOTDIR' ? `${e.code}: it, or a folder above it, is a file` : (e.code ?? e.message),
    );
  const r = await withinBound(looked, dir, timeoutMs);
  return typeof r === 'object' ? r.problem.why.replace(`${dir}: `, '') : r;
}

/**
 * A look at the file at `path` a source is to read: why it cannot be an input (not there, a
 * folder, empty: notAnInput; a stat's error: statProblem), or whether it is read once (readsOnce:
 * a named pipe). Asynchronous and bounded by `timeoutMs` (statBounded): a run's file sources at
 * each start, argus preview's source and detect's files.
 */
export function fileLook(path: string, timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<FileLook> {
  return statBounded(path, timeoutMs).then((l) => {
    if ('problem' in l) return { problem: l.problem };
    const problem = notAnInput(l.stats);
    return problem ? { problem: { code: problem.code, why: `${path} ${problem.why}` } } : { readsOnce: fileReadsOnce(l.stats) };
  });
}

/** Why the file at `path` cannot be a source's input, or undefined (fileLook's `problem`). */
export function fileProblem(path: string, timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<FileProblem | undefined> {
  return fileLook(path, timeoutMs).then((l) => l.problem);
}

/**
 * core/files sameFile, by bounded asynchronous stats (statBounded): true when `a` and `b` name
 * the same file (the same absolute path, or, both there, the same device and inode: a link to
 * it). A path the file system gives no answer about within `timeoutMs` rejects, coded and naming
 * it (VAP_ERR_SOURCE_TIMEOUT); one that is not there (or cannot be looked at) is no other file.
 */
export async function sameFileBounded(a: string, b: string, timeoutMs = FILE_STAT_TIMEOUT_MS): Promise<boolean> {
  if (resolve(a) === resolve(b)) return true;
  const [la, lb] = await Promise.all([statBounded(a, timeoutMs), statBounded(b, timeoutMs)]);
  for (const l of [la, lb]) if ('problem' in l && l.problem.code === ErrorCodes.SOURCE_TIMEOUT) throw new ArgusError(l.problem.code, l.problem.why);
  return 'stats' in la && 'stats' in lb && la.stats.dev === lb.stats.dev && la.stats.ino === lb.stats.ino;
}
