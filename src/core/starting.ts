import { writeSync } from 'node:fs';
import { ErrorCodes, INTERRUPTED_STATUS } from './errors.js';

/**
 * A stop signal while argus starts, before a command has its own way of stopping: what it was
 * doing is said (`VAP_ERR_INTERRUPTED`), and argus exits 130, the status of every interruption
 * (README, exit statuses), whichever of SIGINT, SIGTERM or SIGHUP it was. Node takes half a
 * second to load argus's modules, `argus run` then reads its pipeline, and until run listened
 * for signals a Ctrl-C (or a supervisor's SIGTERM) in that time ended the process without a word.
 * process.exit() waits for libuv's threads: this is sound because nothing of the start holds one
 * for long (the pipeline, a named pipe included, is read without waiting: config/load.ts,
 * readConfigText). It used to end by the signal instead (143 for SIGTERM, 129 for SIGHUP), as a
 * blocking read of a named pipe nobody wrote to held a thread for good, and the exit with it.
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
  process.exit(INTERRUPTED_STATUS);
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
