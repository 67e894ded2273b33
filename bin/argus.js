#!/usr/bin/env node
// Entry point. Runs the compiled CLI (dist/, made by `npm ci` or `npm run build`) when it is
// newer than every file in src/; otherwise the TypeScript sources through tsx's loader, so an
// edit takes effect without a build step.
import { readdirSync, statSync } from 'node:fs';

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

// The start's signal listeners (src/core/starting.ts) first, on their own: the CLI's modules
// take half a second to load, and a Ctrl-C meanwhile ended argus without a word.
if (process.env.ARGUS_TSX !== '1' && built()) {
  await import('../dist/src/core/starting.js');
  await import('../dist/src/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/core/starting.ts');
  await import('../src/cli.ts');
}
