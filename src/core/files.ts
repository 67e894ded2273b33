import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { mkdir, realpath, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, extname, join, resolve } from 'node:path';

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

/** Makes folder `dir` (with its parents) and checks this process may write into it: the reason it cannot (an error code), or undefined. */
export function unwritableDir(dir: string): string | undefined {
  try {
    makeDirSync(dir);
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // mkdir says EEXIST for a path that is a file (or under one: ENOTDIR): say which.
    if (code === 'EEXIST' || code === 'ENOTDIR') return `${code}: it, or a folder above it, is a file`;
    return code ?? (e as Error).message;
  }
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

/**
 * Writes the file `path` whole or not at all: `write` writes it under a hidden name beside it
 * (the same folder, so the rename stays on one file system; the same extension, which ffmpeg
 * picks the container by), which is then renamed over `path`. Whatever fails (a full disk, the
 * folder removed mid-write, the writer's own error) removes the partial file and is thrown again:
 * `path` is the whole new file or what it was before. A write straight to `path` left a
 * truncated picture or video there, which looked like a copy, and replaced a good one.
 * `renameFailed` makes the error of a rename that fails.
 */
export async function writeWhole<T>(path: string, write: (partial: string) => Promise<T>, renameFailed: (e: NodeJS.ErrnoException) => Error): Promise<T> {
  // A link is followed (the file it names is replaced, the link kept); what is not a regular
  // file (a device such as /dev/null, a named pipe) is written as it is: a rename would replace it.
  let target = path;
  const st = await stat(path).catch(() => undefined);
  if (st && !st.isFile()) return write(path);
  if (st) target = await realpath(path);
  const ext = extname(target);
  // Cut: a name near the file system's 255 bytes would be too long with the suffix.
  const partial = join(dirname(target), `.${basename(target, ext).slice(0, 64)}.part-${process.pid}-${parts++}${ext}`);
  try {
    const r = await write(partial);
    await rename(partial, target).catch((e: NodeJS.ErrnoException) => {
      throw renameFailed(e);
    });
    return r;
  } catch (e) {
    await rm(partial, { force: true }).catch(() => undefined);
    throw e;
  }
}
