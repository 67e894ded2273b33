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

/** Why an alert carries no snapshot though its rule's snapshot mode asks for one. */
export const SnapshotOmittedSchema = z
  .strictObject({
    reason: z
      .enum(['failed', 'busy', 'too-large', 'unknown', 'no-frame'])
      .describe(
        "failed: rendering or writing it failed; busy: too many pictures waited for theirs (alerts.snapshot, 128 MB held); too-large: the alert with it was larger than Kafka takes (sinks.kafka.maxMessageBytes, or the broker refused it), so Kafka got it without (the JSON lines and the WebSocket have it), or, on the WebSocket, the picture was larger than its server holds for /api/snapshot (sinks.websocket.snapshotCacheBytes), so the WebSocket got it without (the JSON lines have it, and Kafka when the alert with it is within its limit); unknown: replayed from the outbox as it was journaled when raised, before its snapshot was known (argus stopped before the alert with it was on disk): the snapshot may never have been rendered, or this alert may have been delivered with it already (the same id: a consumer that has that message keeps it); no-frame: raised by the end of the source's stream (a line's crossing settled there), which no frame shows",
      ),
    detail: z.string().describe('what happened, in words'),
    url: z.string().optional().describe("too-large: where this argus's server answers the picture (GET /api/snapshot?id=…&key=…, with the token or the session cookie; the WebSocket's snapshot url, its key naming this one picture) while it holds it; never on an alert replayed from an earlier run"),
  })
  .describe('the snapshot was left out, and why');
export type SnapshotOmitted = z.output<typeof SnapshotOmittedSchema>;

/**
 * An alert as published (the `alert` field of a v1 alert message). Open: rules add their own
 * fields (dwellMs, line, direction, ratePerMinute, classLabel, …).
 */
export const AlertBodySchema = z.looseObject({
  id: z.string().min(1).describe('unique across restarts: source:rule:<run tag>-<seq>:<track>, and .2, .3 after it for a second and third alert of one rule and track on one frame (consumers de-duplicate by it)'),
  rule: z.string(),
  severity: z.enum(['info', 'warning', 'critical']),
  event: z.string().describe('what happened, e.g. zone.enter, line.cross, conveyor.stopped'),
  message: z.string(),
  trackId: z.int().optional(),
  zone: z.string().optional(),
  dwellMs: z.int().min(0).optional().describe('zone.exit and zone.dwell: time inside, ms (for a track that went unseen, up to its last sighting)'),
  atPts: z
    .number()
    .optional()
    .describe(
      'when it happened, seconds on the pts scale, where the alert is raised later, on a frame of its own pts: zone.enter and zone.exit of a track that went through the zone unseen there (between two sightings, or as it vanished going in), when it came in (enter) or went out (exit); zone.enter, zone.exit and line.cross seen among a track\'s sightings before the tracker confirmed it, raised on the frame that confirmed it; line.cross of a track lost at the line and found past it under a new id, raised once the new id went on',
    ),
  lastSeenPts: z.number().optional().describe('zone alerts of a track gone (late): when it was last seen, seconds on the pts scale'),
  late: z
    .literal(true)
    .optional()
    .describe(
      'raised once its track was gone (unseen for the zone\'s exitDelayMs): the frame it came with (pts, detections, snapshot) is a later one, which does not show the track (or, after a gap with no frame in between, shows it back, a new stay); atPts and lastSeenPts say when it went in and was last seen',
    ),
  snapshot: z
    .strictObject({
      contentType: z.literal('image/jpeg'),
      data: z.string().meta({ contentEncoding: 'base64' }).optional(),
      ref: z.string().optional(),
      url: z.string().optional().describe('WebSocket API only: where the argus server answers the picture (GET /api/snapshot?id=…&key=…, with the token or the session cookie; the key names this one picture) while it holds it; Kafka and JSON lines embed `data` instead'),
      width: z.int(),
      height: z.int(),
    })
    // Exactly one of the picture (embed: Kafka, JSON lines), its file (ref) or its URL (embed, on the
    // WebSocket): before, a snapshot with none, or with two, was valid, and a consumer that
    // validated could not rely on finding the picture.
    .meta({
      description: 'the picture: data (alerts.snapshot.mode embed, on Kafka and in the JSON lines), ref (mode ref: its file on the argus host) or url (mode embed, on the WebSocket); exactly one of them',
      oneOf: [{ required: ['data'] }, { required: ['ref'] }, { required: ['url'] }],
    })
    .optional(),
  snapshotOmitted: SnapshotOmittedSchema.optional(),
});
export type AlertBody = z.output<typeof AlertBodySchema>;

/**
 * The alert without its picture, saying why (`snapshotOmitted`): the one way an alert leaves its
 * snapshot out (its render failed, too many pictures waited, or the alert with it was larger than
 * Kafka takes). A copy: the body given is left as it is.
 */
export function withoutSnapshot(body: AlertBody, omitted: SnapshotOmitted): AlertBody {
  const { snapshot: _left, ...rest } = body;
  return { ...rest, snapshotOmitted: omitted };
}

/**
 * An alert's JSON as an earlier run left it in the outbox, for its replay by this one: one sent
 * without its snapshot because it was too large (`snapshotOmitted.url`) named where that run's
 * server held the picture, which went with that run; replayed as it was, it pointed consumers at
 * a picture no server holds (this one's answers 404). The URL is taken out, and the detail says
 * why. Any other JSON is given back as it is (the same string: no parse unless it has a URL).
 */
export function replayedAlertJson(json: string): string {
  if (!json.includes('"snapshotOmitted"') || !json.includes('"url"')) return json;
  let m: { alert?: { snapshotOmitted?: Partial<SnapshotOmitted> } };
  try {
    m = JSON.parse(json) as typeof m;
  } catch {
    return json;
  }
  const omitted = m.alert?.snapshotOmitted;
  if (!omitted || typeof omitted.url !== 'string') return json;
  const { url: _gone, ...rest } = omitted;
  m.alert!.snapshotOmitted = { ...rest, detail: `${rest.detail ?? ''}; the picture was held by the argus run that raised the alert, which has ended (the JSON lines sink, when on, has it)` };
  return JSON.stringify(m);
}
