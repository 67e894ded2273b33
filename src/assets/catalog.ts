import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { formatIssues, readConfigFile } from '../config/load.js';
import { ModelManifestSchema, type ModelManifest } from '../config/schema.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { makeDir } from '../core/files.js';
import { ffmpegVersion } from '../sources/ffmpeg-path.js';
import { resolveAsset, sweepStaleParts, type ResolveOptions } from './fetch.js';
import { cacheDir, PACKAGE_ROOT } from './paths.js';

const Entry = z.object({
  file: z.string().regex(/^[A-Za-z0-9_.-]+$/),
  url: z.string().url(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  license: z.string().optional(),
  credit: z.string().optional(),
  description: z.string().optional(),
});
const CatalogSchema = z.object({
  streams: z.array(Entry).default([]),
  images: z.array(Entry).default([]),
  derived: z.array(z.object({ file: z.string().regex(/^[A-Za-z0-9_.-]+$/), from: z.string(), ffmpegArgs: z.array(z.string()) })).default([]),
});
export type Catalog = z.infer<typeof CatalogSchema>;

let catalogPromise: Promise<Catalog> | undefined;
export function loadCatalog(): Promise<Catalog> {
  catalogPromise ??= readConfigFile(join(PACKAGE_ROOT, 'streams', 'assets.yaml'), CatalogSchema);
  return catalogPromise;
}

/** Local path of a catalogued video (`asset:NAME` in a pipeline), fetched if needed; derived clips are made with ffmpeg. */
export async function resolveStream(name: string, ffmpegPath: string, options: ResolveOptions = {}): Promise<string> {
  const cat = await loadCatalog();
  const e = cat.streams.find((s) => s.file === name);
  if (e) return resolveAsset({ kind: 'streams', ...e }, options);
  const d = cat.derived.find((s) => s.file === name);
  if (d) return deriveClip(d, ffmpegPath, options);
  const known = [...cat.streams.map((s) => s.file), ...cat.derived.map((s) => s.file)].join(', ');
  throw new ArgusError(ErrorCodes.ASSET_UNKNOWN, `asset "${name}" is not in streams/assets.yaml (known: ${known})`);
}

export async function resolveImage(name: string, options: ResolveOptions = {}): Promise<string> {
  const cat = await loadCatalog();
  const e = cat.images.find((s) => s.file === name);
  if (!e) throw new ArgusError(ErrorCodes.ASSET_UNKNOWN, `image "${name}" is not in streams/assets.yaml`);
  return resolveAsset({ kind: 'images', ...e }, options);
}

async function deriveClip(d: Catalog['derived'][number], ffmpegPath: string, options: ResolveOptions): Promise<string> {
  const dir = join(options.cache ?? cacheDir(), 'derived');
  const out = join(dir, d.file);
  if (existsSync(out)) return out;
  const src = await resolveStream(d.from, ffmpegPath, options);
  try {
    await makeDir(dir);
  } catch (e) {
    // As fetch.ts names the cache folder it cannot make (this gave a bare EACCES / ENOTDIR).
    throw new ArgusError(ErrorCodes.ASSET_FILE, `asset "${d.file}": cannot create the folder of derived clips ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): remove what is in its way, or set ARGUS_CACHE to a folder argus may write`, { cause: e });
  }
  await sweepStaleParts(dir, options.log);
  options.log?.(`deriving ${d.file} from ${d.from} with ffmpeg`);
  await transcodeClip(src, out, d.ffmpegArgs, ffmpegPath);
  return out;
}

// fluent-ffmpeg keeps the ffmpeg path module-wide (setFfmpegPath on one command sets it for
// all), so clips are made one at a time, each run setting its own path first.
let transcoding: Promise<unknown> = Promise.resolve();

/**
 * Makes the clip `out` from `src` with the ffmpeg at `ffmpegPath`, through fluent-ffmpeg, with
 * `ffmpegArgs` as output options. ffmpeg writes a temporary file beside `out`, renamed into
 * place once it succeeded: `out` is never half-written. A failure is VAP_ERR_SOURCE_EXIT naming
 * the file, with the tail of ffmpeg's stderr (VAP_ERR_SOURCE_OPEN when no ffmpeg runs at that
 * path); the temporary file is removed. fluent-ffmpeg (archived upstream) is loaded only
 * here, never on the frame path, whose ffmpeg processes sources/ spawns itself.
 */
export function transcodeClip(src: string, out: string, ffmpegArgs: readonly string[], ffmpegPath: string): Promise<void> {
  const job = transcoding.then(async () => {
    const file = basename(out);
    // fluent-ffmpeg 2.1.3 throws from inside its own callback (uncatchable, the run never ends)
    // when the executable cannot be spawned, so make sure this one runs first (`ffmpeg -version`, once per path).
    if (!(await ffmpegVersion(ffmpegPath))) throw new ArgusError(ErrorCodes.SOURCE_OPEN, `deriving ${file}: cannot run ffmpeg at ${ffmpegPath} (\`ffmpeg -version\` failed)`);
    const { default: ffmpeg } = await import('fluent-ffmpeg');
    const tmp = `${out}.part-${process.pid}.mp4`;
    try {
      await new Promise<void>((res, rej) => {
        const cmd = ffmpeg().setFfmpegPath(ffmpegPath).input(src).inputOptions('-hide_banner', '-nostdin', '-loglevel', 'error').output(tmp);
        // Spread: fluent-ffmpeg keeps each of two or more arguments as given, but splits the items
        // of one array (and a lone argument) at a single space.
        if (ffmpegArgs.length) cmd.outputOptions(...ffmpegArgs);
        // fluent-ffmpeg's message is "ffmpeg exited with code N: <some of stderr>"; the tail of the whole stderr follows instead.
        cmd.on('error', (err, _stdout, stderr) => rej(new ArgusError(ErrorCodes.SOURCE_EXIT, `deriving ${file}: ${err.message.split(': ', 1)[0]}: ${(stderr ?? '').trim().slice(-500)}`, { cause: err })));
        cmd.on('end', () => res());
        cmd.run();
      });
      await rename(tmp, out).catch((e: NodeJS.ErrnoException) => {
        throw new ArgusError(ErrorCodes.ASSET_FILE, `deriving ${file}: cannot move the new clip into place at ${out} (${e.code ?? e.message})`, { cause: e });
      });
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  });
  transcoding = job.catch(() => undefined);
  return job;
}

/**
 * A manifest by name (models/NAME.yaml) or by path. `extends: NAME` takes every field of
 * that manifest and overrides the ones given.
 */
export async function loadModelManifest(ref: string, baseDir = process.cwd()): Promise<{ manifest: ModelManifest; file: string }> {
  const byName = join(PACKAGE_ROOT, 'models', `${ref}.yaml`);
  const name = MANIFEST_NAME.test(ref);
  const file = name && existsSync(byName) ? byName : isAbsolute(ref) ? ref : resolve(baseDir, ref);
  // A bare word that is neither a manifest of models/ nor a file: a misspelt name, not a missing file.
  if (name && !/\.ya?ml$/i.test(ref) && !existsSync(file)) throw new ArgusError(ErrorCodes.CONFIG, `"${ref}" is not a known manifest (known: ${(await manifestNames()).join(', ')}) nor a file`);
  // `model.manifest: my.onnx`: the model where its manifest goes (read as YAML, it was "larger than 1 MiB").
  if (/\.onnx$/i.test(ref)) throw new ArgusError(ErrorCodes.CONFIG, `${ref} is an ONNX model, not a manifest: give it as model.path, with manifest: naming its family (model: { manifest: yolox-nano, path: ${ref} } for the official YOLOX files)`);
  const raw = (await readConfigFile(file, z.record(z.unknown()), undefined, 'manifest')) as Record<string, unknown>;
  let doc = raw;
  if (typeof raw.extends === 'string') {
    const baseFile = join(PACKAGE_ROOT, 'models', `${raw.extends}.yaml`);
    if (!MANIFEST_NAME.test(raw.extends) || !existsSync(baseFile)) {
      throw new ArgusError(ErrorCodes.CONFIG, `${file}: extends: "${raw.extends}" is not a known manifest (known: ${(await manifestNames()).join(', ')})`);
    }
    const base = (await readConfigFile(baseFile, z.record(z.unknown()))) as Record<string, unknown>;
    const { extends: _e, ...rest } = raw;
    doc = { ...base, ...rest };
    delete doc.url;
    delete doc.alternates;
    delete doc.sha256;
    if (rest.url) doc.url = rest.url;
    if (rest.sha256) doc.sha256 = rest.sha256;
  }
  const parsed = ModelManifestSchema.safeParse(doc);
  if (!parsed.success) throw new ArgusError(ErrorCodes.CONFIG, `${file}: invalid model manifest\n${formatIssues(parsed.error, ModelManifestSchema)}`);
  return { manifest: parsed.data, file };
}

/** What a manifest's name (models/NAME.yaml) may be. */
const MANIFEST_NAME = /^[A-Za-z0-9_.-]+$/;

/** The manifests shipped in models/, by name. */
async function manifestNames(): Promise<string[]> {
  return (await readdir(join(PACKAGE_ROOT, 'models'))).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -'.yaml'.length)).sort();
}

/** Local path of the manifest's ONNX file (mirror, cache, download, or derived locally). */
export async function resolveModelFile(manifest: ModelManifest, options: ResolveOptions & { ffmpegPath?: string } = {}): Promise<string> {
  if (manifest.derive) return deriveModel(manifest.derive.from, manifest.derive.variant, options);
  const url = manifest.url ?? `file:///${manifest.file}`; // local-only: mirror or cache, else a clear error
  return resolveAsset({ kind: 'models', file: manifest.file, url, alternates: manifest.alternates, sha256: manifest.sha256 }, options);
}

let deriving: Promise<void> | undefined;
const recipes = new Map<string, Promise<string>>();

/** The scripts that derive model variants, in `scripts/` of the installation. */
const DERIVE_SCRIPTS = ['derive-models.sh', 'derive-models.py'];

/** Digest of the derivation scripts: a changed recipe makes new files instead of reusing stale ones. */
function recipeVersion(root: string): Promise<string> {
  let recipe = recipes.get(root);
  if (!recipe) {
    recipe = Promise.all(DERIVE_SCRIPTS.map((f) => readFile(join(root, 'scripts', f)))).then((parts) => {
      const h = createHash('sha256');
      for (const p of parts) h.update(p);
      return h.digest('hex').slice(0, 12);
    });
    recipe.catch(() => recipes.delete(root));
    recipes.set(root, recipe);
  }
  return recipe;
}

/**
 * A YOLOX-Nano variant made by scripts/derive-models.sh (a private Python environment from
 * PyPI: onnx, ONNX Runtime's quantisation tools), calibrated on the catalogued videos.
 * Made once into the cache.
 */
export async function deriveModel(from: string, variant: 'dyn' | 'fp16' | 'int8', options: ResolveOptions & { ffmpegPath?: string; root?: string } = {}): Promise<string> {
  const root = options.root ?? PACKAGE_ROOT;
  const { manifest } = await loadModelManifest(from);
  const stem = manifest.file.replace(/\.onnx$/, '');
  // An installation without the scripts (the Docker image copies only scripts/build.mjs) cannot
  // make the variant, nor find one made before (the cache keys them by the scripts' digest): it
  // stopped with an uncoded ENOENT naming the script.
  const missing = DERIVE_SCRIPTS.map((f) => join(root, 'scripts', f)).find((f) => !existsSync(f));
  if (missing) {
    throw new ArgusError(
      ErrorCodes.MODEL_LOAD,
      `model ${stem}.${variant}.onnx (the ${variant} variant of ${from}) is made locally by scripts/derive-models.sh, which this installation lacks (${missing}): make it where argus's repository and Python are (any argus command naming this manifest there writes it under <cache>/models/derived/), then give that file as the pipeline's model.path beside the manifest`,
    );
  }
  const dir = join(options.cache ?? cacheDir(), 'models', 'derived', await recipeVersion(root));
  const out = join(dir, `${stem}.${variant}.onnx`);
  if (existsSync(out)) return out;
  deriving ??= (async () => {
    const src = await resolveModelFile(manifest, options);
    const ffmpeg = options.ffmpegPath ?? (await import('../sources/ffmpeg-path.js')).defaultFfmpegPath();
    const videos = await Promise.all(['one-by-one-person-detection.mp4', 'bottle-detection.mp4'].map((v) => resolveStream(v, ffmpeg, options)));
    options.log?.(`deriving ${stem} variants (dynamic batch, fp16, int8) with scripts/derive-models.sh`);
    const stderr: string[] = [];
    const code = await new Promise<number | null>((res, rej) => {
      const p = spawn('bash', [join(root, 'scripts', 'derive-models.sh'), src, dir, ffmpeg, ...videos], { stdio: ['ignore', 'pipe', 'pipe'] });
      p.stdout.setEncoding('utf8').on('data', (s: string) => options.log?.(s.trim()));
      p.stderr.setEncoding('utf8').on('data', (s: string) => stderr.push(s));
      p.on('error', rej);
      p.on('close', res);
    });
    if (code !== 0) throw new ArgusError(ErrorCodes.MODEL_LOAD, `scripts/derive-models.sh failed (exit ${code}): ${stderr.join('').split('\n').filter((l) => !/Warning|W:onnx/.test(l)).slice(-8).join('\n')}`);
  })().finally(() => (deriving = undefined));
  await deriving;
  if (!existsSync(out)) throw new ArgusError(ErrorCodes.MODEL_LOAD, `scripts/derive-models.sh did not write ${out}`);
  return out;
}
