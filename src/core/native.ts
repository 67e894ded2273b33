import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { restoreTerminal } from './terminal.js';

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

/**
 * Ends the process at once with `code` (the C module src/core/hard-exit.c: _exit), skipping what
 * process.exit does after its 'exit' handlers: tearing down Node and joining every worker thread,
 * which waits for ever for a thread inside a native call that does not return. The caller emits
 * 'exit' first. The terminal is left as Node's exit leaves it: the status block's last lines on it
 * (restoreTerminal, also where the module is missing and the caller kills the process instead),
 * and its mode as it was (the module's uv_tty_reset_mode: raw mode undone).
 * Returns false (and does nothing more) where the module is not built or loadable.
 */
export function hardExit(code: number): boolean {
  restoreTerminal();
  const m = loadNativeModule<{ exit(code: number): never }>('hard-exit');
  if (!m) return false;
  m.exit(code);
  return true; // (not reached)
}

/** Whether hardExit can end the process (its module is built and loads). */
export function canHardExit(): boolean {
  return loadNativeModule('hard-exit') !== undefined;
}
