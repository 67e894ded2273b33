import { type ChildProcess, execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { ownChild } from '../core/children.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';

/**
 * Which ffmpeg runs the sources. ffmpeg parses untrusted network input, so a maintained build
 * is preferred over the bundled one (@ffmpeg-installer/ffmpeg, a static build from 2018):
 *
 *   config `ffmpegPath` (the caller's) > $ARGUS_FFMPEG > /usr/bin/ffmpeg when it exists and is
 *   newer than the bundled binary > the bundled binary.
 *
 * "Newer" compares the library versions `ffmpeg -version` prints (libavformat, then
 * libavcodec), which grow with every release and also identify git snapshots such as the
 * bundled `N-47683-g0e8eb07980`; without them, the copyright year of the first line.
 */
export interface FfmpegVersion {
  /** From the first line, `ffmpeg version <this> Copyright …`: `5.1.6-0+deb12u1`, `N-47683-g0e8eb07980-static`. */
  version: string;
  /** The first line's copyright end year. */
  year?: number;
  libavformat?: [number, number, number];
  libavcodec?: [number, number, number];
}

export interface FfmpegChoice {
  path: string;
  /** Version string (`ffmpeg -version`'s first line, parsed); `unknown` if it could not be run. */
  version: string;
  /** Why this one: `$ARGUS_FFMPEG`, `newer than the bundled N-…`, … */
  reason: string;
}

export interface FfmpegCandidates {
  env?: NodeJS.ProcessEnv;
  /** The system ffmpeg considered. Default /usr/bin/ffmpeg. */
  systemPath?: string;
  /** The bundled ffmpeg. Default @ffmpeg-installer/ffmpeg's binary. */
  bundledPath?: string;
  /** Longest wait for a `-version`, ms (VERSION_TIMEOUT_MS). */
  versionTimeoutMs?: number;
}

export const SYSTEM_FFMPEG = '/usr/bin/ffmpeg';

export function bundledFfmpegPath(): string {
  const require = createRequire(import.meta.url);
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

/** Parses `ffmpeg -version` output; undefined when it is not ffmpeg's. */
export function parseFfmpegVersion(output: string): FfmpegVersion | undefined {
  const first = /^ffmpeg version (\S+)(.*)$/m.exec(output);
  if (!first) return undefined;
  const v: FfmpegVersion = { version: first[1] };
  const year = /Copyright \(c\) \d{4}-(\d{4})/.exec(first[2]);
  if (year) v.year = Number(year[1]);
  const lib = (name: string): [number, number, number] | undefined => {
    const m = new RegExp(`^${name}\\s+(\\d+)\\.\\s*(\\d+)\\.\\s*(\\d+)`, 'm').exec(output);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
  };
  const f = lib('libavformat');
  const c = lib('libavcodec');
  if (f) v.libavformat = f;
  if (c) v.libavcodec = c;
  return v;
}

const cmp = (a: readonly number[], b: readonly number[]) => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
};

/** a is a newer ffmpeg than b. False when they cannot be compared. */
export function isNewerFfmpeg(a: FfmpegVersion, b: FfmpegVersion): boolean {
  if (a.libavformat && b.libavformat) {
    const d = cmp(a.libavformat, b.libavformat);
    if (d !== 0) return d > 0;
    if (a.libavcodec && b.libavcodec) return cmp(a.libavcodec, b.libavcodec) > 0;
    return false;
  }
  if (a.year !== undefined && b.year !== undefined) return a.year > b.year;
  return false;
}

/**
 * Longest wait for `ffmpeg -version`, ms. Then the program is killed with SIGKILL: execFile's
 * default SIGTERM was waited on, and a wrapper that ignored it (`trap '' TERM`, a program stuck)
 * held `argus run`, `check` and `detect` at their start for ever.
 */
export const VERSION_TIMEOUT_MS = 10_000;

/**
 * How long a `-version` that has exited is given to close its output: a grandchild that kept it
 * (a wrapper's `cmd &`) held the answer, printed already, until the timeout.
 */
const OUTPUT_AFTER_EXIT_MS = 200;

/** The most of a `-version`'s output read (ffmpeg's is 1 to 2 kB). */
const VERSION_OUTPUT_BYTES = 1 << 20;

// `ffmpeg -version` per path, run once per process.
const versions = new Map<string, Promise<FfmpegVersion | undefined>>();
const versionsSync = new Map<string, FfmpegVersion | undefined>();
/** The paths whose last asynchronous `-version` gave no answer: it could not be started, or a signal ended it (ffmpegVersion). */
const unanswered = new Set<string>();
/** Why the last asynchronous `-version` of a path could not be started (ENOENT, EACCES, EAGAIN, …). */
const startErrors = new Map<string, string>();

/** `ffmpeg -version` of one executable (asynchronous, cached); undefined if it does not run or is not ffmpeg. */
export function ffmpegVersion(path: string, timeoutMs = VERSION_TIMEOUT_MS): Promise<FfmpegVersion | undefined> {
  let p = versions.get(path);
  if (!p) {
    p = new Promise((resolve) => {
      let started: ChildProcess;
      try {
        started = execFile(path, ['-hide_banner', '-version'], { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: VERSION_OUTPUT_BYTES }, (err, stdout) => {
          const v = err ? undefined : parseFfmpegVersion(String(stdout));
          // Not started (EAGAIN, EMFILE: a code of node's), or ended by a signal (the timeout, the OOM killer): no answer.
          // More than maxBuffer of output is an answer, and not ffmpeg's (node ends it, a code and a signal of its own).
          if (err && err.code !== 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER' && (typeof err.code === 'string' || err.signal)) unanswered.add(path);
          else unanswered.delete(path);
          if (err && typeof err.code === 'string' && err.code !== 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') startErrors.set(path, err.code);
          else startErrors.delete(path);
          versionsSync.set(path, v);
          resolve(v);
        });
      } catch (e) {
        // Thrown (node throws ENOMEM and E2BIG): no answer, as a start that fails later. It
        // rejected the promise cached for the path, and every caller awaits an answer or none.
        const code = (e as NodeJS.ErrnoException).code;
        unanswered.add(path);
        if (typeof code === 'string') startErrors.set(path, code);
        versionsSync.set(path, undefined);
        resolve(undefined);
        return;
      }
      const child = ownChild(started);
      // The answer is in once the program has exited, whoever else holds its pipes.
      child.once('exit', () => {
        setTimeout(() => {
          child.stdout?.destroy();
          child.stderr?.destroy();
        }, OUTPUT_AFTER_EXIT_MS).unref();
      });
    });
    versions.set(path, p);
  }
  return p;
}

/** libavformat of FFmpeg 4.4, the first with `-autoscale`. */
const AUTOSCALE_SINCE: readonly number[] = [58, 76];

/**
 * Whether the ffmpeg at `path` takes `-autoscale 0` (FFmpeg 4.4 and later): false for one known
 * older, by the version already asked of it (the choice of ffmpeg at start asks it; never asked
 * here, so a source's start never waits on it), or the bundled binary (a 2018 build, libavformat
 * 58.24) when its version was not asked yet. Older ones refuse the option, and every source with
 * it ("Unrecognized option 'autoscale'").
 */
export function ffmpegAutoscales(path: string): boolean {
  const v = versionsSync.get(path);
  if (v?.libavformat) return cmp(v.libavformat, AUTOSCALE_SINCE) >= 0;
  if (v) return true; // ffmpeg, without library versions: a build of its own, taken as current
  try {
    return path !== bundledFfmpegPath();
  } catch {
    return true;
  }
}

function ffmpegVersionSync(path: string, timeoutMs = VERSION_TIMEOUT_MS): FfmpegVersion | undefined {
  if (!versionsSync.has(path)) {
    let v: FfmpegVersion | undefined;
    // Its output into a file (unlinked at once), not a pipe: execFileSync waits for a pipe's
    // every writer, and a wrapper's grandchild (`cmd &`) that kept it held an answer printed
    // already until the timeout (10 s, the whole process blocked), then taken as no answer. A
    // file is read once the program itself has exited (the first 1 MiB, execFile's maxBuffer).
    let fd: number | undefined;
    try {
      const out = join(tmpdir(), `argus-ffmpeg-version-${process.pid}-${randomBytes(6).toString('hex')}`);
      fd = openSync(out, 'wx+', 0o600);
      unlinkSync(out);
      execFileSync(path, ['-hide_banner', '-version'], { timeout: timeoutMs, killSignal: 'SIGKILL', stdio: ['ignore', fd, 'ignore'] });
      const text = Buffer.alloc(VERSION_OUTPUT_BYTES);
      v = parseFfmpegVersion(text.toString('utf8', 0, readSync(fd, text, 0, text.length, 0)));
    } catch {
      v = undefined;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    versionsSync.set(path, v);
    versions.set(path, Promise.resolve(v));
  }
  return versionsSync.get(path);
}

function choose(c: FfmpegCandidates, versionOf: (path: string) => FfmpegVersion | undefined): FfmpegChoice {
  const env = c.env ?? process.env;
  if (env.ARGUS_FFMPEG) return { path: env.ARGUS_FFMPEG, version: versionOf(env.ARGUS_FFMPEG)?.version ?? 'unknown', reason: '$ARGUS_FFMPEG' };
  const bundled = c.bundledPath ?? bundledFfmpegPath();
  const system = c.systemPath ?? SYSTEM_FFMPEG;
  const bv = versionOf(bundled);
  if (existsSync(system)) {
    const sv = versionOf(system);
    if (sv && (!bv || isNewerFfmpeg(sv, bv))) {
      return { path: system, version: sv.version, reason: bv ? `newer than the bundled ${bv.version}` : 'the bundled ffmpeg does not run' };
    }
    return { path: bundled, version: bv?.version ?? 'unknown', reason: sv ? `bundled; ${system} (${sv.version}) is not newer` : `bundled; ${system} does not run` };
  }
  return { path: bundled, version: bv?.version ?? 'unknown', reason: `bundled; no ${system}` };
}

/** The ffmpeg to use when the config names none, with its version and why (versions run asynchronously, cached). */
export async function resolveFfmpeg(c: FfmpegCandidates = {}): Promise<FfmpegChoice> {
  const env = c.env ?? process.env;
  const bundled = c.bundledPath ?? (env.ARGUS_FFMPEG ? '' : bundledFfmpegPath());
  const system = c.systemPath ?? SYSTEM_FFMPEG;
  // Run the versions first (in parallel); `choose` then reads them from the cache.
  const paths = env.ARGUS_FFMPEG ? [env.ARGUS_FFMPEG] : [bundled, ...(existsSync(system) ? [system] : [])];
  const got = new Map(await Promise.all(paths.map(async (p) => [p, await ffmpegVersion(p, c.versionTimeoutMs)] as const)));
  if (env.ARGUS_FFMPEG) refuseUnrunnable(env.ARGUS_FFMPEG, 'ARGUS_FFMPEG');
  return choose({ ...c, env, bundledPath: bundled || undefined, systemPath: system }, (p) => got.get(p));
}

/**
 * Why the program at `path` is not ffmpeg, asked only once it has ended (`ended`: `exited with
 * code 0`) before reporting its input's stream; undefined when `path -version` gives an ffmpeg
 * version (cached: a run and detect have asked at start already, so this costs nothing more, and
 * nothing is asked on the way to a first frame; a cached failure is asked again), and also when
 * `-version` gives no answer (it could not be started, or a signal ended it: a timeout).
 * `ARGUS_FFMPEG=/bin/true` was reported as the input's fault: "no video stream", "decoded no
 * video frame".
 */
export async function notFfmpeg(path: string, ended: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (await ffmpegVersion(path)) return undefined;
  // Asked again, not taken from the cache: a -version that failed once (a busy machine's
  // timeout, no process free) would make a real ffmpeg's camera fail for good (VAP_ERR_SOURCE_OPEN is not retried).
  versions.delete(path);
  versionsSync.delete(path);
  if (await ffmpegVersion(path)) return undefined;
  // A -version that gave no answer again (no process free yet, a machine still too busy for its
  // 10 s, the OOM killer) says nothing of the program: the failure stays the source's, retried.
  // Taken as "not ffmpeg", it failed a real camera for good (VAP_ERR_SOURCE_OPEN).
  if (unanswered.has(path)) return undefined;
  const byEnv = env.ARGUS_FFMPEG === path;
  return `${byEnv ? `the program named by ARGUS_FFMPEG (${path})` : `the program run as ffmpeg (${path})`} did not behave as ffmpeg: it ${ended} without ffmpeg's report of its input, and \`${path} -version\` gives no ffmpeg version${byEnv ? '; set ARGUS_FFMPEG to an ffmpeg executable, or unset it' : ''}`;
}

/** The same choice for callers that need a path right away (runs `ffmpeg -version` synchronously, once per path). */
export function resolveFfmpegSync(c: FfmpegCandidates = {}): FfmpegChoice {
  return choose(c, (path) => ffmpegVersionSync(path, c.versionTimeoutMs));
}

/**
 * Version and reason for an ffmpeg the config names (`field`: what its error names, the
 * pipeline's `ffmpegPath`). One that is not there or cannot be run is refused (refuseUnrunnable).
 */
export async function describeFfmpeg(path: string, reason: string, field: string): Promise<FfmpegChoice> {
  const v = await ffmpegVersion(path);
  if (!v) refuseUnrunnable(path, field);
  return { path, version: v?.version ?? 'unknown', reason };
}

/**
 * The program a pipeline's `ffmpegPath` names: a relative path (`./tools/ffmpeg`) from the YAML's
 * folder, as every path of the YAML (it was the working directory's); a bare name (`ffmpeg`) is
 * looked up on PATH, as a shell does.
 */
export function configuredFfmpegPath(path: string, baseDir: string): string {
  return path.includes('/') && !isAbsolute(path) ? resolve(baseDir, path) : path;
}

/** Start errors of a program that is not there or cannot be run at all; others (EAGAIN, EMFILE, ENOMEM: no process free right now) prove nothing. */
const NOT_RUNNABLE = new Set(['ENOENT', 'ENOTDIR', 'EACCES', 'EPERM', 'ENOEXEC', 'ELOOP', 'ENAMETOOLONG', 'EISDIR']);

/**
 * VAP_ERR_CONFIG naming `field` and `path` when the `-version` asked of `path` could not start it
 * because it is not there (or not a program): asked once, at start, before any source runs.
 * Before, such a setting was taken as "version unknown" and every source failed at its start
 * (exit status 1, "ffmpeg executable not found"), naming neither the setting nor the cause.
 */
function refuseUnrunnable(path: string, field: string): void {
  const code = startErrors.get(path);
  if (!code || !NOT_RUNNABLE.has(code)) return;
  const what =
    code === 'ENOENT' || code === 'ENOTDIR'
      ? path.includes('/')
        ? 'no such file'
        : 'no such program on PATH'
      : code === 'EACCES' || code === 'EPERM' || code === 'EISDIR'
        ? 'not an executable file'
        : 'cannot be run';
  throw new ArgusError(ErrorCodes.CONFIG, `${field}: ${path}: ${what} (${code}); name an ffmpeg executable`);
}

/**
 * The ffmpeg executable when the config names none: $ARGUS_FFMPEG, else /usr/bin/ffmpeg when
 * it is newer than the bundled one, else the binary shipped by @ffmpeg-installer/ffmpeg (`resolveFfmpeg`
 * gives the version and the reason too).
 */
export function defaultFfmpegPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ARGUS_FFMPEG) return env.ARGUS_FFMPEG;
  return resolveFfmpegSync({ env }).path;
}
