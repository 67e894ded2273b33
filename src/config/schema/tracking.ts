import { z } from 'zod';

export const TrackingSchema = z
  .object({
    /** Track objects and put track ids in every message. Default true. */
    enabled: z.boolean().default(true),
    /** ByteTrack thresholds and buffers; see src/tracking/byte-tracker.ts for each trade-off. */
    trackHighThresh: z.number().min(0).max(1).optional(),
    trackLowThresh: z.number().min(0).max(1).optional(),
    newTrackThresh: z.number().min(0).max(1).optional(),
    matchThresh: z.number().min(0).max(1).optional(),
    lostTrackBufferMs: z.number().min(0).optional(),
    minConfirmFrames: z.number().int().min(1).optional(),
    /** Nominal frame rate for the motion model. Default: the source's frame rate. */
    frameRateHint: z.number().positive().optional(),
    classAware: z.boolean().optional(),
  })
  .strict();

export type TrackingConfig = z.infer<typeof TrackingSchema>;
