import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import cliProgress from 'cli-progress';
import { ArgusError, ErrorCodes } from '../core/errors.js';
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

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns a local path for the asset: the mirror's copy if present, else the cache's, else a
 * fresh download (verified, then moved into the cache). Every copy is checked against sha256.
 */
export async function resolveAsset(spec: AssetSpec, options: ResolveOptions = {}): Promise<string> {
  const mirror = options.mirror ?? mirrorDir();
  const log = options.log ?? (() => {});
  if (mirror) {
    const p = join(mirror, spec.kind, spec.file);
    if (await exists(p)) {
      await verify(spec, p, `mirror copy ${p}`);
      return p;
    }
  }
  const cached = join(options.cache ?? cacheDir(), spec.kind, spec.file);
  if (await exists(cached)) {
    await verify(spec, cached, `cached copy ${cached}`);
    return cached;
  }
  await mkdir(dirname(cached), { recursive: true });
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
  const hint = mirror
    ? `it is not in the mirror ARGUS_MIRROR=${mirror} either`
    : `set ARGUS_MIRROR to a directory holding ${spec.kind}/${spec.file}`;
  throw new ArgusError(
    ErrorCodes.ASSET_DOWNLOAD,
    `asset "${spec.file}" could not be fetched from ${urls.join(' or ')} (${hint}; or place it at ${cached}):\n  ${failures.join('\n  ')}`,
  );
}

function interrupted(spec: AssetSpec, url: string, cause?: unknown): ArgusError {
  return new ArgusError(ErrorCodes.INTERRUPTED, `asset "${spec.file}": the download from ${url} was interrupted (its partial file is removed)`, { cause });
}

async function verify(spec: AssetSpec, path: string, what: string): Promise<void> {
  if (!spec.sha256) return;
  const digest = await sha256File(path);
  if (digest !== spec.sha256) {
    throw new ArgusError(ErrorCodes.ASSET_CHECKSUM, `asset "${spec.file}": ${what} has sha256 ${digest}, expected ${spec.sha256}`);
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
