import { writeSync } from 'node:fs';
import { ErrorCodes } from './errors.js';

/**
 * A stop signal while argus starts, before a command has its own way of stopping: what it was
 * doing is said (`VAP_ERR_INTERRUPTED`), and the process ends by the signal, as it would have
 * (its default action: status 130 for SIGINT, 128 + n for the others). Node takes half a second
 * to load argus's modules, `argus run` then reads its pipeline, and until run listened for
 * signals a Ctrl-C (or a supervisor's SIGTERM) in that time ended the process without a word.
 * Not process.exit(130): the exit waits for libuv's threads, and one may be held for good by a
 * read of the pipeline from a named pipe nobody writes to (the process then never ended).
 *
 * Listening starts when this module is evaluated: the entry (bin/argus.js) imports it before
 * the CLI, and the CLI imports it first, so it is evaluated before any other module of argus.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** What the start is doing, said if a signal stops it (`loading argus`, `reading the pipeline p.yaml`). */
let doing = 'loading argus';
let listening = false;

function onSignal(signal: NodeJS.Signals): void {
  try {
    writeSync(2, `argus: ${ErrorCodes.INTERRUPTED}: ${signal} while ${doing}: stopped on the signal, before anything ran\n`);
  } catch {
    // stderr is gone: the status still says it
  }
  startEnded();
  process.kill(process.pid, signal);
}

/** Listens for the stop signals until `startEnded`. */
function startListening(): void {
  if (listening) return;
  listening = true;
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
}

/** What the start does now, for the message a signal gets (text safe for a terminal). */
export function starting(what: string): void {
  doing = what;
}

/**
 * The command stops on signals its own way from now on (`argus run` in order, `detect` and
 * `preview` by the default action with their cleanups, core/signals.ts): these listeners go.
 */
export function startEnded(): void {
  if (!listening) return;
  listening = false;
  for (const s of STOP_SIGNALS) process.removeListener(s, onSignal);
}

startListening();
