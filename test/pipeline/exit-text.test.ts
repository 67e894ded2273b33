/**
 * What `argus run` says at its exit of undelivered alerts and of its outbox (deliveryExitText),
 * and the exit status: the outbox's read-only states (agedOnDisk, writableAgain) are said there,
 * not only in the outbox summary's log line, /healthz and /metrics.
 */
import { describe, expect, it } from 'vitest';
import { deliveryExitText, forcedExitText, secondSignalText, type OutboxNow } from '../../src/pipeline/exit-text.js';
import type { RunSummary } from '../../src/pipeline/run.js';

type Outbox = NonNullable<RunSummary['outbox']>;
const outbox = (o: Partial<Outbox> = {}): Outbox => ({ dir: '/var/lib/argus/outbox', replayed: 0, ...o }) as Outbox;
const summary = (o: Partial<RunSummary> = {}) => ({ lostAlerts: 0, keptAlerts: 0, unsavedAlerts: 0, parkedAlerts: 0, outbox: outbox(), ...o });

describe('the exit text of a run', () => {
  it('all delivered: nothing said, status left as it is', () => {
    expect(deliveryExitText(summary())).toEqual({ lines: [], status: undefined });
    expect(deliveryExitText(summary({ outbox: undefined }))).toEqual({ lines: [], status: undefined });
  });

  it('kept, lost, parked: said, status 3 (as before)', () => {
    const t = deliveryExitText(summary({ keptAlerts: 2, lostAlerts: 1, parkedAlerts: 1, deadLetterPath: '/d.jsonl' }));
    expect(t.status).toBe(3);
    expect(t.lines).toEqual([
      'argus: 1 alert(s) could not be delivered and are lost',
      'argus: 2 alert(s) not yet acknowledged by Kafka are kept in /var/lib/argus/outbox and are delivered on the next start',
      expect.stringMatching(/^argus: 1 alert\(s\) were too large for Kafka.*parked in the dead-letter file \/d\.jsonl/),
    ]);
  });

  it('aged alerts left in a read-only journal: said (never replayed, dropped by the first writable start), not counted lost, status unchanged', () => {
    const t = deliveryExitText(summary({ outbox: outbox({ readOnly: 'EROFS', agedOnDisk: 3 }) }));
    // Before: nothing at the exit (only the outbox summary's log line said agedOnDisk).
    expect(t.lines).toEqual([
      "argus: 3 undelivered alert(s) found at start in a journal on a read-only volume (/var/lib/argus/outbox, or an older release's folder taken over) are older than outbox.maxAgeHours: never replayed, they stay there while the volume is read-only (not counted lost); the first start on a writable volume drops them, counted lost",
    ]);
    expect(t.status).toBeUndefined();
  });

  it('a read-only volume writable again during the run: said; alerts not on disk are not told to make it writable', () => {
    const quiet = deliveryExitText(summary({ outbox: outbox({ readOnly: 'EROFS', writableAgain: true }) }));
    expect(quiet.lines).toEqual(['argus: the outbox /var/lib/argus/outbox was on a read-only volume at the start (EROFS) and is writable again: this run journaled none of its alerts (unprotected against a crash); the next start journals there']);
    expect(quiet.status).toBeUndefined();
    const unsaved = deliveryExitText(summary({ unsavedAlerts: 2, outbox: outbox({ readOnly: 'EROFS', writableAgain: true }) }));
    // Before: "(its volume is read-only, EROFS: make it writable, or set outbox.dir to a writable folder)", of a volume writable already.
    expect(unsaved.lines).toEqual(['argus: 2 alert(s) not yet acknowledged by Kafka could not all be written to the journal in /var/lib/argus/outbox (its volume was read-only at the start, EROFS, and is writable again: the next start journals there); those not on disk are lost']);
    expect(unsaved.status).toBe(3);
    const still = deliveryExitText(summary({ unsavedAlerts: 2, outbox: outbox({ readOnly: 'EROFS' }) }));
    expect(still.lines[0]).toMatch(/\(its volume is read-only, EROFS: make it writable, or set outbox\.dir to a writable folder\); those not on disk are lost$/);
    // No cause recorded (a summary of an older shape): no guess at one (before: "a full disk?").
    const unknown = deliveryExitText(summary({ unsavedAlerts: 1 }));
    expect(unknown.lines[0]).toMatch(/\(its writes failed\); those not on disk are lost$/);
  });

  it('alerts not all on disk: the cause the outbox saw (Outbox.whyOffDisk), not "a full disk?" for each', () => {
    const line = (offDisk: string, more: Partial<Outbox> = {}) => deliveryExitText(summary({ unsavedAlerts: 2, outbox: outbox({ offDisk, ...more }) })).lines;
    const lost = (why: string) => [`argus: 2 alert(s) not yet acknowledged by Kafka could not all be written to the journal in /var/lib/argus/outbox (${why}); those not on disk are lost`];
    // Before, each of these said "(its writes failed: a full disk?)".
    const lock = "another process took the journal's lock over (pid 4242 on other) while this one was frozen: this one wrote the journal no more";
    expect(line(lock)).toEqual(lost(lock));
    const hung = "the disk did not finish the journal's writes within 5 s at the stop";
    expect(line(hung)).toEqual(lost(hung));
    expect(line('its writes failed (EIO)')).toEqual(lost('its writes failed (EIO)'));
    expect(line('its writes failed (ENOSPC): the disk is full')).toEqual(lost('its writes failed (ENOSPC): the disk is full'));
    // A read-only volume and another cause: both.
    expect(line(hung, { readOnly: 'EROFS' })).toEqual(lost(`its volume is read-only, EROFS: make it writable, or set outbox.dir to a writable folder; ${hung}`));
    for (const l of [line(lock), line(hung), line('its writes failed (EIO)')]) expect(l[0]).not.toMatch(/full disk/);
  });

  it('damaged records skipped at start: said, status 3', () => {
    const t = deliveryExitText(summary({ outbox: outbox({ damaged: 2, damagedCopy: '/var/lib/argus/outbox/journal.damaged' }) }));
    expect(t).toEqual({ lines: ['argus: 2 damaged record(s) of the alert journal in /var/lib/argus/outbox were skipped at start (undelivered alerts may be among them); the journal as it was is kept as /var/lib/argus/outbox/journal.damaged'], status: 3 });
  });
});

describe('the exit text of a second signal (the stop cut short)', () => {
  const now = (h: ReturnType<OutboxNow['health']>): OutboxNow => ({ dir: '/var/lib/argus/outbox', health: () => h });
  it('says whether the alerts Kafka has not acknowledged are on disk for the next start', () => {
    // Before: only "messages in flight are lost".
    expect(forcedExitText(now({ journaled: true, pendingAlerts: 4 }), true)).toEqual(['argus: 4 alert(s) not yet acknowledged by Kafka are in the journal in /var/lib/argus/outbox and are delivered on the next start (any whose write was still in progress may be missing)']);
    expect(forcedExitText(now({ journaled: false, pendingAlerts: 2, offDisk: 'its writes failed (ENOSPC): the disk is full' }), true)).toEqual(['argus: 2 alert(s) not yet acknowledged by Kafka are not all in the journal in /var/lib/argus/outbox (its writes failed (ENOSPC): the disk is full); those not on disk are lost']);
    // The lock taken over by another process: said so (before: "its writes failed: a full disk?").
    expect(forcedExitText(now({ journaled: false, pendingAlerts: 2, offDisk: "another process took the journal's lock over (pid 7 on b) while this one was frozen: this one wrote the journal no more" }), true)).toEqual([
      "argus: 2 alert(s) not yet acknowledged by Kafka are not all in the journal in /var/lib/argus/outbox (another process took the journal's lock over (pid 7 on b) while this one was frozen: this one wrote the journal no more); those not on disk are lost",
    ]);
    expect(forcedExitText(now({ journaled: false, pendingAlerts: 2, readOnly: 'EROFS', agedOnDisk: 1 }), true)).toEqual([
      'argus: 2 alert(s) not yet acknowledged by Kafka are not all in the journal in /var/lib/argus/outbox (its volume is read-only, EROFS: make it writable, or set outbox.dir to a writable folder); those not on disk are lost',
      expect.stringMatching(/^argus: 1 undelivered alert\(s\) found at start in a journal on a read-only volume/),
    ]);
  });

  it('a volume writable again: its alerts not on disk are not said to be on a read-only volume, in one line (as at a normal exit)', () => {
    // Before: "(its volume is read-only, EROFS)", then a second line saying it is writable again.
    const h = { journaled: false, pendingAlerts: 2, readOnly: 'EROFS', writableAgain: true };
    expect(forcedExitText(now(h), true)).toEqual([
      'argus: 2 alert(s) not yet acknowledged by Kafka are not all in the journal in /var/lib/argus/outbox (its volume was read-only at the start, EROFS, and is writable again: the next start journals there); those not on disk are lost',
    ]);
    // The same words as the exit's own for its unsaved alerts.
    expect(deliveryExitText(summary({ unsavedAlerts: 2, outbox: outbox(h) })).lines).toEqual([expect.stringContaining('(its volume was read-only at the start, EROFS, and is writable again: the next start journals there); those not on disk are lost')]);
    // Nothing pending: the volume's state alone, as before.
    expect(forcedExitText(now({ ...h, pendingAlerts: 0 }), true)).toEqual([expect.stringMatching(/^argus: the outbox \/var\/lib\/argus\/outbox was on a read-only volume at the start \(EROFS\) and is writable again/)]);
  });

  it('during the orderly stop: that messages in flight are lost, then the outbox; once the stop has ended and said its exit text (the exit grace): only that it exits, no volume lines again', () => {
    const h = { journaled: false, pendingAlerts: 2, readOnly: 'EROFS', writableAgain: true, agedOnDisk: 1 };
    expect(secondSignalText(now(h), true, false)).toEqual({ lines: ['argus: second signal, exiting at once (messages in flight are lost)', ...forcedExitText(now(h), true)], status: 130 });
    expect(secondSignalText(now(h), true, false).lines).toHaveLength(3);
    // Before: "messages in flight are lost" and the read-only and aged lines repeated after the
    // exit's own, and exit status 130 whatever the stop had come to (undefined: the stop's own).
    expect(secondSignalText(now(h), true, true)).toEqual({ lines: ['argus: second signal after the orderly stop had ended: exiting at once (nothing was in flight; what is said above stands)'] });
    expect(secondSignalText(undefined, false, false)).toEqual({ lines: ['argus: second signal, exiting at once (messages in flight are lost)'], status: 130 });
  });

  it('nothing to say: no outbox, nothing pending, or no Kafka to wait for', () => {
    expect(forcedExitText(undefined, true)).toEqual([]);
    expect(forcedExitText(now({ journaled: true, pendingAlerts: 0 }), true)).toEqual([]);
    expect(forcedExitText(now({ journaled: true, pendingAlerts: 3 }), false)).toEqual([]);
  });
});
