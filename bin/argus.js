#!/usr/bin/env node
// Entry point. Runs the compiled CLI (dist/, made by `npm ci` or `npm run build`) when it is
// newer than every file in src/; otherwise the TypeScript sources through tsx's loader, so an
// edit takes effect without a build step.
import { readdirSync, statSync } from 'node:fs';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

// A stop signal before the start's own listeners (src/core/starting.ts) are loaded, while the
// files of src/ are looked at and tsx's loader comes up (half a second), ended argus by the
// signal without a word. It is kept and sent again once they listen, which say it as for any
// signal of the start (VAP_ERR_INTERRUPTED, exit 130); a second one meanwhile exits at once.
let early;
const onEarly = (signal) => {
  if (early) process.exit(130);
  early = signal;
};
for (const s of STOP_SIGNALS) process.on(s, onEarly);

const src = new URL('../src/', import.meta.url);
const stamp = new URL('../dist/.built', import.meta.url);

function built() {
  let at;
  try {
    at = statSync(stamp).mtimeMs;
  } catch {
    return false;
  }
  for (const f of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (f.isFile() && statSync(`${f.parentPath ?? f.path}/${f.name}`).mtimeMs > at) return false;
  }
  return true;
}

/** The start's listeners are in place: the early ones go, and a signal they kept is sent again to them. */
function startListening() {
  for (const s of STOP_SIGNALS) process.removeListener(s, onEarly);
  if (early) process.kill(process.pid, early);
}

// The start's signal listeners (src/core/starting.ts) first, on their own: the CLI's modules
// take half a second to load, and a Ctrl-C meanwhile ended argus without a word.
if (process.env.ARGUS_TSX !== '1' && built()) {
  await import('../dist/src/core/starting.js');
  startListening();
  await import('../dist/src/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/core/starting.ts');
  startListening();
  await import('../src/cli.ts');
}
