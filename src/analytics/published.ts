import { z } from 'zod/v4';

/**
 * What analytics puts into published messages, as zod schemas: the figures of a detections
 * message and the body of an alert. The types derive from them; sinks/message.ts builds the
 * message JSON Schema (src/sinks/message.schema.json) from them. Nothing parses with them
 * at run time: the analyzer builds plain objects.
 */

const count = z.int().min(0);

/** Figures published in every detections message of a source with zones, lines or rules. */
export const AnalyticsSummarySchema = z
  .strictObject({
    zones: z.record(z.string(), z.strictObject({ occupancy: count.describe('tracks inside now'), entered: count.describe('entries so far') })).optional(),
    lines: z.record(z.string(), z.strictObject({ in: z.record(z.string(), count).describe('crossings by class label'), out: z.record(z.string(), count) })).optional(),
    rates: z.record(z.string(), z.number().min(0)).describe('items per minute by conveyor-rate rule id').optional(),
  })
  .describe('zone occupancy, line counts and conveyor rates, for sources with zones, lines or rules');
export type AnalyticsSummary = z.output<typeof AnalyticsSummarySchema>;

/**
 * An alert as published (the `alert` field of a v1 alert message). Open: rules add their own
 * fields (dwellMs, line, direction, ratePerMinute, classLabel, …).
 */
export const AlertBodySchema = z.looseObject({
  id: z.string().min(1).describe('unique across restarts: source:rule:<run tag>-<seq>:<track> (consumers de-duplicate by it)'),
  rule: z.string(),
  severity: z.enum(['info', 'warning', 'critical']),
  event: z.string().describe('what happened, e.g. zone.enter, line.cross, conveyor.stopped'),
  message: z.string(),
  trackId: z.int().optional(),
  zone: z.string().optional(),
  snapshot: z
    .strictObject({
      contentType: z.literal('image/jpeg'),
      data: z.string().meta({ contentEncoding: 'base64' }).optional(),
      ref: z.string().optional(),
      url: z.string().optional().describe('WebSocket API only: where the argus server answers the picture (GET, with the token or the session cookie) while it holds it; Kafka and JSON lines embed `data` instead'),
      width: z.int(),
      height: z.int(),
    })
    .optional(),
});
export type AlertBody = z.output<typeof AlertBodySchema>;
