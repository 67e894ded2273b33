import { z } from 'zod';
import { finite, ms } from './common.js';

export const TrackingSchema = z
  .object({
    /** Track objects and put track ids in every message. Default true. */
    enabled: z.boolean().default(true),
    /** ByteTrack thresholds and buffers; see src/tracking/byte-tracker.ts for each trade-off. */
    trackHighThresh: finite().min(0).max(1).optional(),
    trackLowThresh: finite().min(0).max(1).optional(),
    newTrackThresh: finite().min(0).max(1).optional(),
    matchThresh: finite().min(0).max(1).optional(),
    /**
     * How long the tracker keeps a track nothing matches ("lost"), to re-find it with the same
     * id. Default 1000. Longer: ids survive longer occlusions (fewer new ids, fewer duplicate
     * entries), but a newcomer at the same place may inherit an old id. Zones hold a track
     * unseen for their own exitDelayMs (default 2000), lines for forgetAfterMs: keep those at
     * least this long, or a re-found track enters (or learns its side) again.
     */
    lostTrackBufferMs: ms(0).optional(),
    minConfirmFrames: finite().int().min(1).optional(),
    /** Nominal frame rate for the motion model. Default: the source's frame rate. */
    frameRateHint: finite().positive().optional(),
    classAware: z.boolean().optional(),
  })
  .strict();

export type TrackingConfig = z.infer<typeof TrackingSchema>;
