import { INTERRUPTED_STATUS } from '../core/errors.js';
import type { RunSummary } from './run.js';

/**
 * What `argus run` (and `argus worker`) says at its exit of the alerts it could not deliver and
 * of its outbox, one line each (`argus: …`), and the exit status that calls for: 3 where alerts
 * were not delivered to Kafka by the exit (kept in the outbox for the next start, parked as too
 * large, lost) or damaged records of the journal were skipped; undefined otherwise. The outbox's
 * read-only states are said too, where an operator has something to do or to know: alerts older
 * than maxAgeHours left in a read-only journal (`agedOnDisk`: never replayed; the first start on
 * a writable volume drops them), and a volume found writable again during the run
 * (`writableAgain`: this run journaled nothing; the next start does). Before, those were only in
 * the outbox summary's log line, /healthz and /metrics, and an exit with alerts not on disk told
 * the operator to make a volume writable that already was.
 */
export function deliveryExitText(summary: Pick<RunSummary, 'outbox' | 'lostAlerts' | 'keptAlerts' | 'unsavedAlerts' | 'parkedAlerts' | 'deadLetterPath'>): { lines: string[]; status?: number } {
  const lines: string[] = [];
  let status: number | undefined;
  const ob = summary.outbox;
  const damaged = ob?.damaged ?? 0;
  if (damaged > 0) {
    lines.push(`argus: ${damaged} damaged record(s) of the alert journal in ${ob?.dir} were skipped at start (undelivered alerts may be among them)${ob?.damagedCopy ? `; the journal as it was is kept as ${ob.damagedCopy}` : ''}`);
    status = 3;
  }
  if (summary.lostAlerts > 0 || summary.keptAlerts > 0 || summary.unsavedAlerts > 0 || summary.parkedAlerts > 0) {
    if (summary.lostAlerts > 0) lines.push(`argus: ${summary.lostAlerts} alert(s) could not be delivered and are lost`);
    if (summary.keptAlerts > 0) lines.push(`argus: ${summary.keptAlerts} alert(s) not yet acknowledged by Kafka are kept in ${ob?.dir} and are delivered on the next start`);
    if (summary.parkedAlerts > 0) lines.push(`argus: ${summary.parkedAlerts} alert(s) were too large for Kafka, even without their snapshot, and were not delivered to it: parked in the dead-letter file ${summary.deadLetterPath} (each logged as an error; any the file could not take is kept in the outbox, where there is one)`);
    if (summary.unsavedAlerts > 0) lines.push(`argus: ${summary.unsavedAlerts} alert(s) not yet acknowledged by Kafka could not all be written to the journal in ${ob?.dir} (${whyNotOnDisk(ob)}); those not on disk are lost`);
    status = 3;
  }
  if (ob) lines.push(...volumeText(ob, summary.unsavedAlerts > 0));
  return { lines, status };
}

/**
 * The outbox's read-only states (see deliveryExitText): aged alerts left on a read-only volume,
 * and a volume writable again (left out where `unsavedSaid`: the line of the alerts not on disk says it).
 */
function volumeText(ob: { dir: string; readOnly?: string; agedOnDisk?: number; writableAgain?: boolean }, unsavedSaid: boolean): string[] {
  const lines: string[] = [];
  if (ob.agedOnDisk) {
    lines.push(`argus: ${ob.agedOnDisk} undelivered alert(s) found at start in a journal on a read-only volume (${ob.dir}, or an older release's folder taken over) are older than outbox.maxAgeHours: never replayed, they stay there while the volume is read-only (not counted lost); the first start on a writable volume drops them, counted lost`);
  }
  if (ob.writableAgain && !unsavedSaid) {
    lines.push(`argus: the outbox ${ob.dir} was on a read-only volume at the start (${ob.readOnly ?? 'EROFS'}) and is writable again: this run journaled none of its alerts (unprotected against a crash); the next start journals there`);
  }
  return lines;
}

/**
 * Why alerts of the outbox are not all on disk, as the outbox saw it, in the words each exit text
 * uses: its volume's read-only state, and what else stopped the journal (Outbox.whyOffDisk:
 * another process took its lock, its writes failed and with what errno, the disk did not answer,
 * the journal was removed, the stop gave up on the disk). Before, every cause but a read-only
 * volume was said "its writes failed: a full disk?", a lock taken over and a disk that hung at
 * the stop too.
 */
function whyNotOnDisk(ob: { readOnly?: string; writableAgain?: boolean; offDisk?: string } | undefined): string {
  const why: string[] = [];
  if (ob?.readOnly) why.push(ob.writableAgain ? `its volume was read-only at the start, ${ob.readOnly}, and is writable again: the next start journals there` : `its volume is read-only, ${ob.readOnly}: make it writable, or set outbox.dir to a writable folder`);
  if (ob?.offDisk) why.push(ob.offDisk);
  // (No cause recorded: a summary of an older shape. No guess at it.)
  return why.length > 0 ? why.join('; ') : 'its writes failed';
}

/** What the outbox says of itself while argus runs (Outbox.health, its folder). */
export interface OutboxNow {
  dir: string;
  health(): { journaled: boolean; pendingAlerts: number; readOnly?: string; agedOnDisk?: number; writableAgain?: boolean; offDisk?: string };
}

/**
 * What a second signal (the orderly stop cut short: argus exits at once, 130) says of the
 * outbox: the alerts Kafka has not acknowledged, and whether the journal holds them (delivered on
 * the next start) or not (a read-only volume, failed writes: those not on disk are lost), with
 * the read-only states deliveryExitText says. Before, only `messages in flight are lost`: the
 * operator who cut the stop short did not learn whether the alerts raised were safe on disk.
 * `kafka`: whether there is a Kafka sink (the alerts the outbox holds wait for it).
 */
export function forcedExitText(outbox: OutboxNow | undefined, kafka: boolean): string[] {
  if (!outbox) return [];
  const h = outbox.health();
  const lines: string[] = [];
  const pending = kafka && h.pendingAlerts > 0;
  if (pending) {
    lines.push(
      h.journaled
        ? `argus: ${h.pendingAlerts} alert(s) not yet acknowledged by Kafka are in the journal in ${outbox.dir} and are delivered on the next start (any whose write was still in progress may be missing)`
        : // The volume's state as the exit's own line for alerts not on disk says it (before: "its volume is read-only" of one writable again, and a second line saying it was).
          `argus: ${h.pendingAlerts} alert(s) not yet acknowledged by Kafka are not all in the journal in ${outbox.dir} (${whyNotOnDisk(h)}); those not on disk are lost`,
    );
  }
  lines.push(...volumeText({ dir: outbox.dir, ...h }, pending && !h.journaled));
  return lines;
}

/**
 * All that a second signal says (StopSignals' force: argus exits at once, 130). While the orderly
 * stop runs: that messages in flight are lost, then what the outbox holds (forcedExitText). Once
 * the stop is over and its exit text said (`ended`: the process lingers up to its exit grace for a
 * library's stray handle), nothing was in flight and the outbox is closed: only that it exits at
 * once. Before, that second signal said "messages in flight are lost" and the outbox's volume
 * lines again, as if the stop had been cut short.
 */
export function secondSignalText(outbox: OutboxNow | undefined, kafka: boolean, ended: boolean): { lines: string[]; status?: number } {
  // Ended: the status the stop came to (undefined: process.exitCode), not 130 (nothing was cut short).
  if (ended) return { lines: ['argus: second signal after the orderly stop had ended: exiting at once (nothing was in flight; what is said above stands)'] };
  return { lines: ['argus: second signal, exiting at once (messages in flight are lost)', ...forcedExitText(outbox, kafka)], status: INTERRUPTED_STATUS };
}
