import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';

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
