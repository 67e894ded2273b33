import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { makeDir } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import { cacheDir, mirrorDir } from './paths.js';

export type AssetKind = 'models' | 'streams' | 'images';

export interface AssetSpec {
  kind: AssetKind;
  /** File name in the cache and in the mirror's `<kind>/` folder. */
  file: string;
  /** Official download URL. */
  url: string;
  /** Tried in order after `url`. */
  alternates?: readonly string[];
  /** Hex sha256; a file that differs is refused. */
  sha256?: string;
}

export interface ResolveOptions {
  /** Mirror directory (default $ARGUS_MIRROR). */
  mirror?: string;
  /** Cache directory (default $ARGUS_CACHE or ~/.cache/argus). */
  cache?: string;
  /** Show a progress bar while downloading. Default: when stderr is a terminal. */
  progress?: boolean;
  /** The longest silence per URL (no answer, or no data while downloading), ms; a download may take longer as long as data keeps coming. Default 60 000. */
  timeoutMs?: number;
  /** Injected for tests. */
  fetch?: typeof fetch;
  /** Told what happens (download start, checksum mismatch of one URL, …). */
  log?: LogFn;
  /**
   * Aborting it stops a download at once (SIGINT, SIGTERM): its partial file is removed and the
   * call fails with VAP_ERR_INTERRUPTED. A copy already in the mirror or the cache is still returned.
   */
  signal?: AbortSignal;
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(path), h);
  return h.digest('hex');
}

/**
 * Whether the mirror or the cache holds the asset at `path` (`what`: "mirror copy", "cached
 * copy"). Anything there but a file (a directory, a FIFO) or a path that cannot be looked at is
 * a coded error naming it: it would be read, or handed on, as the asset.
 */
async function holds(spec: AssetSpec, path: string, what: string): Promise<boolean> {
  let st;
  try {
    st = await stat(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw new ArgusError(ErrorCodes.ASSET_FILE, `asset "${spec.file}": cannot look at the ${what} ${path} (${code ?? (e as Error).message})`, { cause: e });
  }
  if (st.isFile()) return true;
  const kind = st.isDirectory() ? 'a directory' : 'not a regular file';
  const fix = what.startsWith('mirror') ? 'put the file there, or remove it' : 'remove it, and argus fetches the asset into its place';
  throw new ArgusError(ErrorCodes.ASSET_FILE, `asset "${spec.file}": the ${what} ${path} is ${kind}: ${fix}`);
}

/**
 * Returns a local path for the asset: the mirror's copy if present, else the cache's, else a
 * fresh download (verified, then moved into the cache). Every copy is checked against sha256.
 * A mirror copy that fails it is refused (the mirror is the user's: argus never changes it); a
 * cached copy that fails it (a disk error, a copy cut short by hand) is moved aside to
 * `<file>.corrupt`, logged, and fetched again, once.
 */
export async function resolveAsset(spec: AssetSpec, options: ResolveOptions = {}): Promise<string> {
  const mirror = options.mirror ?? mirrorDir();
  const log = options.log ?? (() => {});
  /** Why the mirror folder itself cannot hold anything (it does not exist, …), when that is so. */
  let unusable: string | undefined;
  if (mirror) {
    const p = join(mirror, spec.kind, spec.file);
    if (!(await holds(spec, p, 'mirror copy'))) {
      unusable = await mirrorUnusable(mirror);
      // Once per process and folder: a mistyped ARGUS_MIRROR was passed over without a word, and
      // every asset downloaded (or, offline, each run failed) while the user believed it used.
      if (unusable && options.log && !warnedMirrors.has(mirror)) {
        warnedMirrors.add(mirror);
        log(`ARGUS_MIRROR=${mirror} ${unusable}: assets are taken from the cache or downloaded; point ARGUS_MIRROR at a folder holding models/, streams/, images/, or unset it`, { mirror }, 'warn');
      }
    } else {
      const digest = await digestOf(spec, p, `mirror copy ${p}`);
      if (digest !== undefined && digest !== spec.sha256) {
        throw new ArgusError(
          ErrorCodes.ASSET_CHECKSUM,
          `asset "${spec.file}": mirror copy ${p} has sha256 ${digest}, expected ${spec.sha256}: it failed its checksum; argus does not change the mirror: replace it with the file from ${spec.url}, or remove it and argus fetches it into the cache`,
        );
      }
      return p;
    }
  }
  const cached = join(options.cache ?? cacheDir(), spec.kind, spec.file);
  let corrupt: string | undefined;
  if (await holds(spec, cached, 'cached copy')) {
    const digest = await digestOf(spec, cached, `cached copy ${cached}`);
    if (digest === undefined || digest === spec.sha256) return cached;
    corrupt = await moveAside(spec, cached, digest, log);
  }
  try {
    await makeDir(dirname(cached));
  } catch (e) {
    throw new ArgusError(ErrorCodes.ASSET_FILE, `asset "${spec.file}": cannot create the cache folder ${dirname(cached)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): remove what is in its way, or set ARGUS_CACHE to a folder argus may write`, { cause: e });
  }
  await sweepStaleParts(dirname(cached), log);
  const urls = [spec.url, ...(spec.alternates ?? [])];
  const failures: string[] = [];
  for (const url of urls) {
    if (options.signal?.aborted) throw interrupted(spec, url);
    const tmp = `${cached}.part-${process.pid}`;
    try {
      log(`downloading ${spec.file} from ${url}`);
      const digest = await download(url, tmp, spec.file, options);
      if (spec.sha256 && digest !== spec.sha256) {
        failures.push(`${url}: sha256 ${digest}, expected ${spec.sha256}`);
        log(`${spec.file} from ${url} has sha256 ${digest}, expected ${spec.sha256}; trying the next URL`);
        await rm(tmp, { force: true });
        continue;
      }
      await rename(tmp, cached);
      return cached;
    } catch (e) {
      await rm(tmp, { force: true });
      // Interrupted: no next URL; the caller stops (exit status 130 for the CLI).
      if (options.signal?.aborted) throw interrupted(spec, url, e);
      failures.push(`${url}: ${(e as Error).message}`);
    }
  }
  const hint = unusable
    ? `the mirror ARGUS_MIRROR=${mirror} ${unusable}: point it at a folder holding ${spec.kind}/${spec.file}`
    : mirror
    ? `it is not in the mirror ARGUS_MIRROR=${mirror} either`
    : `set ARGUS_MIRROR to a directory holding ${spec.kind}/${spec.file}`;
  const before = corrupt ? `; the cached copy failed its checksum and is kept aside at ${corrupt}` : '';
  throw new ArgusError(
    ErrorCodes.ASSET_DOWNLOAD,
    `asset "${spec.file}" could not be fetched from ${urls.join(' or ')} (${hint}; or place it at ${cached}${before}):\n  ${failures.join('\n  ')}`,
  );
}

/** Mirror folders found unusable and warned about (once per process each). */
const warnedMirrors = new Set<string>();

/** Why the mirror folder cannot hold any asset ("does not exist", "is not a folder", …), or undefined where it is a folder. */
async function mirrorUnusable(mirror: string): Promise<string | undefined> {
  try {
    return (await stat(mirror)).isDirectory() ? undefined : 'is not a folder';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be looked at (${code ?? (e as Error).message})`;
  }
}

/**
 * Moves a cached copy that failed its checksum to `<file>.corrupt` (replacing an older one),
 * so that it is fetched again and can still be looked at; returns where it went. One that
 * cannot be moved is VAP_ERR_ASSET_CHECKSUM naming it and saying what to do.
 */
async function moveAside(spec: AssetSpec, cached: string, digest: string, log: LogFn): Promise<string> {
  const aside = `${cached}.corrupt`;
  try {
    await rename(cached, aside);
  } catch (e) {
    // ENOENT: another process moved it aside at the same time, and fetches it too.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new ArgusError(
        ErrorCodes.ASSET_CHECKSUM,
        `asset "${spec.file}": cached copy ${cached} has sha256 ${digest}, expected ${spec.sha256}: it failed its checksum and could not be moved aside (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): delete it, and argus fetches it again`,
        { cause: e },
      );
    }
  }
  log(`asset "${spec.file}": cached copy ${cached} failed its checksum (sha256 ${digest}, expected ${spec.sha256}): moved aside to ${aside}; fetching it again`, { asset: spec.file, path: cached, aside }, 'warn');
  return aside;
}

/**
 * A partial download untouched this long is no live download's, whatever its PID: a download
 * writes as its data arrives and is abandoned after `timeoutMs` (60 s by default) of silence.
 */
export const PART_STALE_MS = 60 * 60_000;
/**
 * …and one of a PID not alive here once it is untouched this long. Not at once: a cache shared
 * with other containers or hosts (docker compose's `assets` service and its workers) holds the
 * part files of downloads whose PID this process cannot see, all of them touched within 60 s.
 */
export const PART_GRACE_MS = 2 * 60_000;
/** `<file>.part-<PID>` (a download, fetch.ts) or `<file>.part-<PID>.<ext>` (a derived clip, catalog.ts). */
const PART_FILE = /\.part-(\d+)(?:\.[A-Za-z0-9]+)?$/;

/** Whether a process of this PID runs here (one of another user's counts: EPERM). */
function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid > 0x7fffffff) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the partial files of `dir` that interrupted or killed downloads left behind (`kill -9`,
 * a power cut, a second Ctrl-C): those untouched for PART_STALE_MS, and those of a PID that is
 * not alive untouched for PART_GRACE_MS. This process's own, and a live download's of another
 * process, are kept. Called before each download into `dir`; never throws (a file it cannot
 * remove is left for the next time). Returns the names removed.
 */
export async function sweepStaleParts(dir: string, log: LogFn = () => {}, now = Date.now()): Promise<string[]> {
  const swept: string[] = [];
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return swept;
  }
  for (const name of names) {
    const m = PART_FILE.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    const path = join(dir, name);
    try {
      const st = await stat(path);
      if (!st.isFile()) continue;
      const idle = now - st.mtimeMs;
      if (idle < PART_GRACE_MS || (idle < PART_STALE_MS && pidAlive(pid))) continue;
      await rm(path, { force: true });
      swept.push(name);
    } catch {
      // gone meanwhile, or not ours to remove: the next sweep tries again
    }
  }
  if (swept.length) log(`assets: removed ${swept.length} partial download(s) left in ${dir} by interrupted runs: ${swept.join(', ')}`, { dir, files: swept });
  return swept;
}

function interrupted(spec: AssetSpec, url: string, cause?: unknown): ArgusError {
  return new ArgusError(ErrorCodes.INTERRUPTED, `asset "${spec.file}": the download from ${url} was interrupted (its partial file is removed)`, { cause });
}

/** The copy's sha256 when the spec has one to check it against (undefined: nothing to check). */
async function digestOf(spec: AssetSpec, path: string, what: string): Promise<string | undefined> {
  if (!spec.sha256) return undefined;
  try {
    return await sha256File(path);
  } catch (e) {
    throw new ArgusError(ErrorCodes.ASSET_FILE, `asset "${spec.file}": cannot read the ${what} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, { cause: e });
  }
}

async function download(url: string, dest: string, label: string, options: ResolveOptions): Promise<string> {
  const doFetch = options.fetch ?? fetch;
  // A silence of timeoutMs ends the download, not its length: a 60 s cap on the whole of it
  // failed every asset that takes longer to arrive (a large model, a slow link) for good.
  const idleMs = options.timeoutMs ?? 60_000;
  const ac = new AbortController();
  // The caller's signal (a SIGINT) ends the download at once, not when its bytes are in.
  const signal = options.signal ? AbortSignal.any([ac.signal, options.signal]) : ac.signal;
  let idle: NodeJS.Timeout | undefined;
  const alive = () => {
    clearTimeout(idle);
    idle = setTimeout(() => ac.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
  };
  alive();
  try {
    return await receive(doFetch, url, dest, label, options, signal, alive);
  } finally {
    clearTimeout(idle);
  }
}

async function receive(doFetch: typeof fetch, url: string, dest: string, label: string, options: ResolveOptions, signal: AbortSignal, alive: () => void): Promise<string> {
  const res = await doFetch(url, { signal, redirect: 'follow' });
  alive();
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status} ${res.statusText}`);
  const total = Number(res.headers.get('content-length') ?? 0);
  const showBar = options.progress ?? Boolean(process.stderr.isTTY);
  const bar = showBar
    ? new cliProgress.SingleBar(
        { format: `${label} [{bar}] {percentage}% {value}/{total} bytes`, stream: process.stderr, hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(total || 1, 0);
  const hash = createHash('sha256');
  let received = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      received += chunk.length;
      alive();
      bar?.update(total ? received : 0);
      cb(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), tap, createWriteStream(dest));
  } finally {
    bar?.stop();
  }
  if ((await stat(dest)).size === 0) throw new Error('empty response');
  return hash.digest('hex');
}
