import { z } from 'zod';
import { filePath, finite } from './common.js';

export const AlertsSchema = z
  .object({
    snapshot: z
      .object({
        /** embed: base64 JPEG inside the alert; ref: written to `dir`, the alert names the file; none. Default embed. */
        mode: z.enum(['embed', 'ref', 'none']).default('embed'),
        /** Folder for `ref` snapshots. Default ./snapshots (relative to the pipeline file). */
        dir: filePath().default('snapshots'),
        /** Largest JPEG in bytes; quality is lowered (then the size) until it fits. Default 150000. */
        maxBytes: finite().int().min(4096).default(150_000),
        /** Snapshot width at most, px; never more than the decoded picture (the model input's picture area). Default 832. */
        maxWidth: finite().int().min(64).default(832),
        /** JPEG quality to start from. Default 80. */
        quality: finite().int().min(10).max(100).default(80),
      })
      .strict()
      .default({}),
  })
  .strict();

/** The durable alert outbox: a journal on local disk that alerts are written to before any sink sees them. */
export const OutboxSchema = z
  .object({
    /** Default: on when a Kafka sink is configured (the journal is emptied by the broker's acknowledgements). */
    enabled: z.boolean().optional(),
    /** Folder of the journal; relative to the pipeline file. Default $ARGUS_STATE_DIR/<name>, else $XDG_STATE_HOME/argus/<name>, else ~/.local/state/argus/<name>. */
    dir: filePath().optional(),
    /**
     * Undelivered alerts kept at most, bytes (on disk, and in memory: they are also held there);
     * beyond it the oldest are dropped (each logged as an error). Default 128 MiB, at most 192 MiB
     * (they are held in memory; the journal itself is read back as a stream, whatever its size).
     */
    maxBytes: finite().int().min(64 * 1024).max(192 * 1024 * 1024).default(128 * 1024 * 1024),
    /** Undelivered alerts older than this are dropped (logged as errors), hours. Default 168 (7 days). */
    maxAgeHours: finite().positive().default(168),
    /** fsync each write. Default true; false still survives a process crash, not a power cut. */
    fsync: z.boolean().default(true),
  })
  .strict();

export type AlertsConfig = z.infer<typeof AlertsSchema>;

/** The bytes one detection of an alert takes in the outbox's journal at most (its JSON, quotes escaped), with a label of up to ~40 characters. */
const DETECTION_JOURNAL_BYTES = 160;
/** The rest of an alert in the journal (ids, stamps, rule, event, message, zone): at most. */
const ALERT_JOURNAL_BYTES = 8 * 1024;

/**
 * The most one alert takes in the outbox's journal, bytes, as far as the configuration bounds it:
 * its snapshot embedded (base64: 4 characters for every 3 bytes of `alerts.snapshot.maxBytes`),
 * its frame's detections (`postprocess.maxDetections`), and the rest. An `outbox.maxBytes` below
 * it dropped such an alert the moment it was journaled, its bound kept by evicting the oldest.
 */
export function alertJournalBytes(snapshot: Pick<AlertsConfig['snapshot'], 'mode' | 'maxBytes'>, maxDetections: number): number {
  const picture = snapshot.mode === 'embed' ? 4 * Math.ceil(snapshot.maxBytes / 3) : 0;
  return picture + maxDetections * DETECTION_JOURNAL_BYTES + ALERT_JOURNAL_BYTES;
}
export type OutboxConfig = z.infer<typeof OutboxSchema>;
