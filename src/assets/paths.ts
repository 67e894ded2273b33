import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository (package) root, where models/, pipelines/ and streams/ live (from dist/src/assets as from src/assets). */
const here = resolve(fileURLToPath(new URL('../../', import.meta.url)));
export const PACKAGE_ROOT = existsSync(join(here, 'package.json')) ? here : resolve(here, '..');

/** Where fetched and derived assets are kept: $ARGUS_CACHE, else ~/.cache/argus. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.ARGUS_CACHE ? resolve(env.ARGUS_CACHE) : join(homedir(), '.cache', 'argus');
}

/** A directory laid out like ../shared (models/, streams/, images/) consulted before any download. */
export function mirrorDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.ARGUS_MIRROR ? resolve(env.ARGUS_MIRROR) : undefined;
}
