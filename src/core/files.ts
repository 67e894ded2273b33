import { constants, mkdirSync, rmSync, statSync, type Stats } from 'node:fs';
import { access, lstat, mkdir, open, readlink, realpath, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { ErrorCodes, type ErrorCode } from './errors.js';
import { atStopSignal, endsBySignal } from './signals.js';

/**
 * Why a local input (a source's file, a file for `argus detect`) is no picture or video to read,
 * by its stat: a folder, or an empty file (ffmpeg said "moov atom not found", sharp "unsupported
 * image format"); undefined otherwise (a named pipe or a device has no size to judge). An empty
 * file is VAP_ERR_SOURCE_PROBE, as one ffmpeg cannot read: failed for good at a source's first
 * start, tried again once it had run (a snapshot being written anew).
 */
export function notAnInput(st: Stats): { code: ErrorCode; why: string } | undefined {
  if (st.isDirectory()) return { code: ErrorCodes.SOURCE_OPEN, why: 'is a folder, not a file' };
  if (st.isFile() && st.size === 0) return { code: ErrorCodes.SOURCE_PROBE, why: 'is empty (0 bytes)' };
  return undefined;
}

/**
 * Why a V4L2 source's node (`/dev/video0`, `v4l2:///dev/video0`: `path` without the scheme) cannot
 * be opened as ffmpeg opens it (read and write), or undefined: not there (a camera unplugged, a
 * container started without `--device`), not a character device (a file or a folder of that
 * name), or not this user's to open (EACCES: not in the `video` group). VAP_ERR_SOURCE_OPEN.
 */
export async function deviceProblem(path: string): Promise<string | undefined> {
  let st: Stats;
  try {
    st = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'no such device (a camera unplugged, or a container started without --device)' : `cannot be read (${code ?? (e as Error).message})`;
  }
  if (!st.isCharacterDevice()) return `is not a character device (${st.isDirectory() ? 'a folder' : 'a file'}): a V4L2 camera is one, /dev/videoN`;
  try {
    await access(path, constants.R_OK | constants.W_OK);
  } catch (e) {
    return `cannot be opened for reading and writing (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): add argus's user to the device's group (video)`;
  }
  return undefined;
}

/**
 * True when `a` and `b` name the same file: the same absolute path, or (both existing) the same
 * device and inode, so a symlink or a hard link to an input is caught too.
 */
export function sameFile(a: string, b: string): boolean {
  if (resolve(a) === resolve(b)) return true;
  try {
    const sa = statSync(a);
    const sb = statSync(b);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false; // one of them does not exist (yet)
  }
}

/** Containers an H.264 video is written into (ffmpeg picks the muxer by the extension). */
export const VIDEO_EXTENSIONS = ['.mp4', '.m4v', '.mov', '.mkv'] as const;

/** True when ffmpeg can write an H.264 video to a file of this name. */
export function isVideoPath(path: string): boolean {
  return (VIDEO_EXTENSIONS as readonly string[]).includes(extname(path).toLowerCase());
}

/**
 * Makes folder `dir` and its missing parents, or throws the first error other than "it exists"
 * (mkdir's EEXIST where a file has the name, ENOTDIR where one is above it). Not Node's `mkdir(…, { recursive: true })`: on a path
 * whose parent exists but takes no new entries (`/proc/self/x`) it loops for ever, a core busy
 * and the caller waiting (an outbox folder there hung argus's start for good). `mode`: the
 * folder's own (under the umask), when it is made; parents get the default.
 */
export async function makeDir(dir: string, mode?: number): Promise<void> {
  try {
    await mkdir(dir, mode);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if ((await stat(dir)).isDirectory()) return;
      throw e;
    }
    if (code !== 'ENOENT' || dirname(dir) === dir) throw e;
  }
  await makeDir(dirname(dir));
  try {
    await mkdir(dir, mode); // once: the parent is there now, so ENOENT again is this path's own answer
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !(await stat(dir)).isDirectory()) throw e;
  }
}

/** makeDir, synchronous: for the few callers that cannot wait (a dead letter written at exit). */
export function makeDirSync(dir: string): void {
  try {
    mkdirSync(dir);
    return;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if (statSync(dir).isDirectory()) return;
      throw e;
    }
    if (code !== 'ENOENT' || dirname(dir) === dir) throw e;
  }
  makeDirSync(dirname(dir));
  try {
    mkdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(dir).isDirectory()) throw e;
  }
}

let parts = 0;

/** Partial files being written (writeWhole), each with the release of its removal at a stop signal. */
const partials = new Map<string, () => void>();

/** Removed if a stop signal ends the process while it is written (atStopSignal). */
function holdPartial(p: string): { removed: boolean } {
  const held = { removed: false };
  partials.set(
    p,
    atStopSignal(() => {
      held.removed = true;
      rmSync(p, { force: true });
    }),
  );
  return held;
}

function dropPartial(p: string): void {
  partials.get(p)?.();
  partials.delete(p);
}

/** Where a chain of links from `path` ends (`path` itself when it is no link), whether that file exists or not. */
async function linkTarget(path: string): Promise<string> {
  let target = path;
  // (40: Linux's own limit on links followed in one lookup; a loop ends there.)
  for (let i = 0; i < 40; i++) {
    const l = await lstat(target).catch(() => undefined);
    if (!l?.isSymbolicLink()) return target;
    target = resolve(dirname(target), await readlink(target));
  }
  return target;
}

/**
 * Writes the file `path` whole or not at all: `write` writes it under a hidden name beside it
 * (the same folder, so the rename stays on one file system; the same extension, which ffmpeg
 * picks the container by), which is then renamed over `path`. Whatever fails (a full disk, the
 * folder removed mid-write, the writer's own error) removes the partial file and is thrown again:
 * `path` is the whole new file or what it was before. A write straight to `path` left a
 * truncated picture or video there, which looked like a copy, and replaced a good one.
 * `failed` makes the error of the file system's own failure (making the partial file, renaming
 * it). The partial file is made (exclusively: never through a link someone put there) before
 * `write` writes it, with the permissions of the file it replaces (a private copy stays private;
 * its group too where the user may give it), else as a new file's. A stop signal (Ctrl-C) while
 * it is written removes it (atStopSignal).
 */
export async function writeWhole<T>(path: string, write: (partial: string) => Promise<T>, failed: (e: NodeJS.ErrnoException) => Error): Promise<T> {
  // A link is followed, a dangling one too (the file it names is written, the link kept); what
  // is not a regular file (a device such as /dev/null, a named pipe) is written as it is: a
  // rename would replace it.
  // (/dev/stdout's chain ends in /proc/self/fd/1, whose link names a pipe or socket by no path:
  // stat follows it where readlink cannot.)
  const st = await stat(path).catch(() => undefined);
  if (st && !st.isFile()) return write(path);
  const target = st ? await realpath(path) : await linkTarget(path);
  const ext = extname(target);
  // Cut: a name near the file system's 255 bytes would be too long with the suffix.
  const partial = join(dirname(target), `.${basename(target, ext).slice(0, 64)}.part-${process.pid}-${parts++}${ext}`);
  const held = holdPartial(partial);
  try {
    const fh = await open(partial, 'wx', st ? 0o600 : 0o666).catch((e: NodeJS.ErrnoException) => {
      throw failed(e);
    });
    try {
      if (st) {
        await fh.chown(st.uid, st.gid).catch(() => fh.chown(-1, st.gid)).catch(() => undefined);
        await fh.chmod(st.mode & 0o777);
      }
    } finally {
      await fh.close();
    }
    const r = await write(partial);
    await rename(partial, target).catch((e: NodeJS.ErrnoException) => {
      throw failed(e);
    });
    return r;
  } catch (e) {
    await rm(partial, { force: true }).catch(() => undefined);
    // The stop signal removed the partial file (its rename then failed, ENOENT): the process is
    // ending by the signal, and this is no error to say (argus preview said `cannot write it (ENOENT)`).
    if (held.removed) return endsBySignal();
    throw e;
  } finally {
    dropPartial(partial);
  }
}

/** The most bytes of a CA file (a source's `tls.ca`, an HTTP camera's `-ca_file`): a bundle of every public authority is about 220 KB. */
export const MAX_CA_BYTES = 4 * 1024 * 1024;

/** The longest wait for a pipe's writer to have written it whole (readSmallFile), ms. */
export const PIPE_WAIT_MS = 5000;
/** The pause between two reads of a pipe that had nothing yet, ms. */
const PIPE_POLL_MS = 20;

/** How readSmallFile waits on a pipe (tests: a clock and pauses of their own). */
export interface PipeWait {
  /** The longest wait, ms. Default PIPE_WAIT_MS. */
  waitMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** A PipeWait with its defaults, and the moment it ends (from now). */
function waitOf(wait: PipeWait): { now: () => number; sleep: (ms: number) => Promise<void>; waitMs: number; until: number } {
  const now = wait.now ?? (() => performance.now());
  const waitMs = wait.waitMs ?? PIPE_WAIT_MS;
  return { now, sleep: wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))), waitMs, until: now() + waitMs };
}

/**
 * Writes `bytes` whole to `fh`, opened with O_NONBLOCK (a file, or a pipe whose reader may be
 * slow or stalled), never in a write that waits: what a full pipe refuses (EAGAIN) is written
 * after a pause, within `wait.waitMs`; then the write is rejected (`a pipe whose reader took no
 * more within 5 s`), what was written left in the pipe. A write to a pipe that waited held the
 * whole process while its reader did not read. A rejection (that one, or the write's own error:
 * ENOSPC) says in `written` how many bytes went in before it (WriteCutShort).
 */
export async function writeWithoutWaiting(fh: FileHandle, bytes: Buffer, wait: PipeWait = {}): Promise<void> {
  const { now, sleep, waitMs, until } = waitOf(wait);
  let at = 0;
  try {
    while (at < bytes.length) {
      const n = await fh.write(bytes, at, bytes.length - at, null).then(
        (r) => r.bytesWritten,
        (e: unknown) => {
          if ((e as NodeJS.ErrnoException).code === 'EAGAIN') return 0;
          throw e;
        },
      );
      at += n;
      if (n > 0 || at >= bytes.length) continue;
      if (now() >= until) throw new Error(`a pipe whose reader took no more within ${waitMs / 1000} s (${at} of ${bytes.length} bytes written)`);
      await sleep(PIPE_POLL_MS);
    }
  } catch (e) {
    throw Object.assign(e as Error, { written: at });
  }
}

/** writeWithoutWaiting's rejection: the error, and the bytes written before it. */
export type WriteCutShort = Error & { written: number };

/**
 * The reads of readSmallFile by path: each while it is under way (a second read of the path
 * then gets its result: two cameras naming one CA pipe, checked together at start, each read
 * it, the first took its bytes and the second failed as 'a pipe nobody wrote to'), and a pipe's
 * for good once it has given its bytes (it gives them once, and a CA file is read at start and
 * by each relay). A failed read is not kept: a pipe whose writer comes later is read then.
 */
const reads = new Map<string, Promise<Buffer>>();

/**
 * A small file's bytes (a CA bundle): at most `maxBytes`, read no further; otherwise a rejection
 * whose message says why (`not a regular file …`, `larger than …`, `cannot be read (ENOENT)`),
 * for the caller to put after the setting that named it. `readFile` read `/dev/zero` until its
 * 2 GiB limit (a gigabyte or two of memory first), and waited for ever on a named pipe nobody
 * writes to, holding one of libuv's four threads; the file is opened without waiting
 * (O_NONBLOCK, which a regular file ignores) and looked at before it is read. A regular file
 * whose size is 0 (a file of /proc's, which has its bytes all the same) is read to its end; a
 * pipe (`--ca <(cat ca.pem)`: /dev/fd/N, or a named one) until its writer closes it, within
 * `wait.waitMs` (a pipe nobody writes to fails then), its bytes kept for the next read of the
 * path (`reads`; reads of one path at once share one, so one bound, `maxBytes`, is meant for a
 * path). A device or a socket is refused. Both used to be refused: the first as "changed while
 * it was read".
 */
export function readSmallFile(path: string, maxBytes: number, wait: PipeWait = {}): Promise<Buffer> {
  const known = reads.get(path);
  if (known) return known;
  let pipe = false;
  const read = readOnce(path, maxBytes, wait, () => (pipe = true));
  reads.set(path, read);
  const forget = () => {
    if (reads.get(path) === read) reads.delete(path);
  };
  read.then(() => pipe || forget(), forget);
  return read;
}

/** readSmallFile's one read of `path`; `isPipe` is called when it is a pipe. */
async function readOnce(path: string, maxBytes: number, wait: PipeWait, isPipe: () => void): Promise<Buffer> {
  const failed = (e: unknown) => new Error(`cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((e: unknown) => {
    throw failed(e);
  });
  let closeLater = false;
  try {
    const st = await fh.stat().catch((e: unknown) => {
      throw failed(e);
    });
    if (st.isDirectory()) throw new Error('a folder, not a file');
    if (st.isFIFO()) {
      closeLater = true;
      isPipe();
      return await readChunks(fh, maxBytes, failed, wait).finally(() => fh.close().catch(() => undefined));
    }
    if (!st.isFile()) throw new Error('not a regular file or a pipe (a socket or a device)');
    if (st.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    if (st.size === 0) return await readChunks(fh, maxBytes, failed);
    // One byte more than its size: a file that grew since its stat is not cut short unseen.
    const buf = Buffer.alloc(st.size + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, null).catch((e: unknown) => {
        throw failed(e);
      });
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n === buf.length) throw new Error('changed while it was read');
    return buf.subarray(0, n);
  } finally {
    if (!closeLater) await fh.close().catch(() => undefined);
  }
}

/**
 * A file's bytes to its end, at most `maxBytes`: a regular file whose size is not known (/proc's),
 * or, with `pipe`, a pipe until its writer closes it, within `pipe.waitMs` (readInto).
 */
async function readChunks(fh: FileHandle, maxBytes: number, failed: (e: unknown) => Error, pipe?: PipeWait): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(maxBytes + 1);
  const n = await readInto(fh, buf, pipe).catch((e: unknown) => {
    throw e instanceof PipeTimeout ? e : failed(e);
  });
  if (n > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
  // A copy of its size: the bytes of a pipe are kept (reads), not the whole buffer.
  return Buffer.from(buf.subarray(0, n));
}

/** readInto's rejection when a pipe's writer did not write it whole in time; its message says which way. */
export class PipeTimeout extends Error {}

/**
 * Reads `fh` into `buf` from its start until `buf` is full or the file ends; resolves to the
 * bytes read (a `buf.length` means there may be more: it was not read). With `pipe` (a pipe
 * opened with O_NONBLOCK) it is read without waiting: nothing yet (EAGAIN: a writer that has
 * not written; or the end with nothing read: no writer yet) is read again after a pause, never
 * in a read that blocks one of libuv's threads (a blocking read of a named pipe nobody writes
 * to held one for good, and process.exit() waited for it), until its writer closes it; past
 * `pipe.waitMs` it rejects with PipeTimeout (`a pipe nobody wrote to within 5 s`, or `whose
 * writer did not close it`). Any other error of a read rejects as it is.
 */
export async function readInto(fh: FileHandle, buf: Buffer, pipe?: PipeWait): Promise<number> {
  const w = pipe && waitOf(pipe);
  let n = 0;
  while (n < buf.length) {
    const got = await fh.read(buf, n, buf.length - n, null).then(
      (r) => r.bytesRead,
      (e: unknown) => {
        if (w && (e as NodeJS.ErrnoException).code === 'EAGAIN') return -1;
        throw e;
      },
    );
    if (got > 0) {
      n += got;
      continue;
    }
    if (!w || (got === 0 && n > 0)) break;
    if (w.now() >= w.until) throw new PipeTimeout(`a pipe ${n > 0 ? 'whose writer did not close it' : 'nobody wrote to'} within ${w.waitMs / 1000} s`);
    await w.sleep(PIPE_POLL_MS);
  }
  return n;
}
