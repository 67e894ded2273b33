import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * A C module built by `npm ci` (scripts/build.mjs → dist/native/NAME.node), found from src/core
 * (tsx) or dist/src/core (compiled); undefined where it was not built (no C compiler at install,
 * another platform), where it cannot be loaded (built for another Node ABI or machine), or with
 * ARGUS_NATIVE=0. Its callers then run without it (TypeScript loops, Node's own sockets).
 */
export function loadNativeModule<T>(name: string): T | undefined {
  if (process.env.ARGUS_NATIVE === '0') return undefined;
  const req = createRequire(import.meta.url);
  for (const rel of [`../../dist/native/${name}.node`, `../../native/${name}.node`]) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (!existsSync(path)) continue;
    try {
      return req(path) as T;
    } catch {
      // built for another Node ABI or machine
    }
  }
  return undefined;
}
