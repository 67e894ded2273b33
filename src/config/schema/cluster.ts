import { z } from 'zod';
import { brokerList, finite, id, kafkaTopic, ms } from './common.js';
import { SourceSchema } from './source.js';
import { kafkaSasl, kafkaSsl } from './sinks.js';

/** A placement label's name and value (what `cluster.labels` and a camera's `placement.labels` hold). */
const labelKey = z.string().regex(/^[A-Za-z0-9_.\/-]{1,63}$/, 'a label name: 1–63 letters, digits, dot, dash, underscore or slash');
const labelValue = z.string().max(63);

/**
 * The largest camera cost and worker capacity. The assigner sums them: at 1e308 (accepted before)
 * or anything from about 9e15 (2^53), a cost of 1 added to the sum left it unchanged, so the
 * other cameras weighed nothing and all went to one worker. A million cameras at 1e9 sum to
 * 1e15, where every whole cost still counts; a camera's pixels (8.3e6 at 4K) fit.
 */
export const MAX_WEIGHT = 1e9;
/** The most `cluster.labels` a worker may have: what the group's leader reads of a member's (kafkajs-membership.ts). */
export const MAX_WORKER_LABELS = 256;

/** The most cameras a worker holds by default (cluster.maxCameras). */
export const DEFAULT_MAX_CAMERAS = 10_000;

/**
 * `argus worker`: cameras spread over workers by Kafka's consumer-group protocol (README,
 * "Many machines"). The cameras live in a compacted topic; its partitions are slots; the group
 * assigns slots to workers; each camera's owner and epoch are recorded in a second compacted topic.
 */
export const ClusterSchema = z
  .object({
    /** Brokers of the cluster's topics. Default: sinks.kafka.brokers. */
    brokers: brokerList.optional(),
    /** TLS to the cluster's brokers, as sinks.kafka.ssl; false for none (a plain cluster beside a TLS sink). Default: sinks.kafka.ssl. */
    ssl: kafkaSsl.optional(),
    /** SASL to the cluster's brokers, as sinks.kafka.sasl; false for none. Default: sinks.kafka.sasl. */
    sasl: z.union([kafkaSasl, z.literal(false)]).optional(),
    /** This worker's id: in messages (`owner`), metrics and `argus cluster status`. Default: the host name and the process id. */
    workerId: id.optional(),
    /** The consumer group the workers join. Default argus-workers. */
    group: z.string().min(1).default('argus-workers'),
    /** Compacted topic of camera definitions, keyed by camera id; its partitions are the slots. Default argus.cameras. */
    camerasTopic: kafkaTopic.default('argus.cameras'),
    /** Compacted single-partition topic of claims and releases (owner, epoch) and drain requests. Default argus.owners. */
    ownersTopic: kafkaTopic.default('argus.owners'),
    /** Slots (partitions of camerasTopic) when the worker creates it. Default 32. */
    slots: finite().int().min(1).max(1000).default(32),
    /**
     * What this worker offers to cameras' `placement.labels` (e.g. `{site: dock, gpu: "yes"}`): a
     * camera that asks for labels runs only on a worker with all of them. Default none.
     */
    labels: z
      .record(labelKey, labelValue)
      .refine((l) => Object.keys(l).length <= MAX_WORKER_LABELS, (l) => ({ message: `${Object.keys(l).length} labels; at most ${MAX_WORKER_LABELS} (the group's leader reads no more of a worker's: a camera asking for one it did not read would run nowhere)` }))
      .default({}),
    /** How much this worker runs, relative to the others: slots are shared in proportion (by camera cost). Default 1; at most MAX_WEIGHT. */
    capacity: finite().positive().max(MAX_WEIGHT).default(1),
    /**
     * Kafka's session timeout: a worker that has not heartbeated for this long leaves the group
     * and its cameras move. Failover takes about this long plus a camera start. Default 6000 (the
     * broker's smallest allowed by default; kafkajs's own default, 30 000, gives ~34 s failover).
     */
    sessionTimeoutMs: ms(1000).default(6000),
    /** Heartbeat period. Default 500. */
    heartbeatIntervalMs: ms(100).default(500),
    /**
     * A worker whose last heartbeat is older than sessionTimeoutMs minus this stops all its
     * cameras (it may have been expelled): before the group can hand them away. Default 1500.
     */
    fenceMarginMs: ms(100).default(1500),
    /** How long the group waits for every worker to rejoin in a rebalance. Default 10 000. */
    rebalanceTimeoutMs: ms(1000).default(10_000),
    /** A new owner waits this long at most for the old owner's release in a planned move. Default: sessionTimeoutMs. */
    releaseWaitMs: ms(0).optional(),
    /**
     * A camera of this worker's slots that has given it no frame for this long (counted from when
     * this worker first tried it under its current record, or from its last frame here; time spent
     * waiting for an old owner's release, or stalled, does not count), its connection
     * not streaming, is reported to the group as unreachable from this worker: the slot goes to a
     * worker that has not reported it, when there is one (README, "Many machines"). 0: never
     * (the camera stays and is retried here for ever). At least 1000 otherwise. Default 30 000.
     */
    unreachableAfterMs: ms(0).default(30_000),
    /**
     * The most cameras (ids of the cameras topic) a worker holds: a record of a new id past it is
     * refused (logged, VAP_ERR_CAMERA_LIMIT, and counted in argus_cluster_cameras_refused_total);
     * the camera runs nowhere until a camera is removed (the first 1 000 such ids are held aside
     * and taken in as cameras are removed) or the worker restarts with room for it. Whoever can write the
     * topic could otherwise fill every worker's memory. Default DEFAULT_MAX_CAMERAS (10 000).
     */
    maxCameras: finite().int().min(1).max(1_000_000).default(DEFAULT_MAX_CAMERAS),
    /** Replication factor of the cluster topics when created. Default 1. */
    replicationFactor: finite().int().min(1).default(1),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.unreachableAfterMs > 0 && c.unreachableAfterMs < 1000) ctx.addIssue({ code: 'custom', path: ['unreachableAfterMs'], message: '0 (never) or at least 1000: a camera\'s connect takes about a second' });
    if (c.fenceMarginMs >= c.sessionTimeoutMs) ctx.addIssue({ code: 'custom', path: ['fenceMarginMs'], message: 'must be less than sessionTimeoutMs' });
    if (c.heartbeatIntervalMs * 3 > c.sessionTimeoutMs - c.fenceMarginMs) {
      ctx.addIssue({ code: 'custom', path: ['heartbeatIntervalMs'], message: 'at most a third of sessionTimeoutMs − fenceMarginMs (a late heartbeat would stop the cameras)' });
    }
  });
export type ClusterConfig = z.infer<typeof ClusterSchema>;

/** Where a camera may run: on a worker with all these labels, and on this one worker when pinned. */
export const PlacementSchema = z
  .object({
    /** Labels the worker must have, each with this value (its `cluster.labels`). */
    labels: z.record(labelKey, labelValue).optional(),
    /** The one worker (cluster.workerId) that may run the camera; it runs nowhere while that worker is away. */
    pin: id.optional(),
  })
  .strict();
export type Placement = z.infer<typeof PlacementSchema>;

/**
 * One camera as `argus cameras apply` takes it and the cameras topic holds it: a `sources[]`
 * entry (zones, lines, rules included) plus `cost` (what it weighs against a worker's capacity).
 */
export const CameraSchema = z
  .object({
    /** Relative cost of running this camera (e.g. 2 for 1080p, 1 for 720p, or its pixels). Default 1; at most MAX_WEIGHT. */
    cost: finite().positive().max(MAX_WEIGHT).default(1),
    /** Where it may run (labels the worker must have, or one worker). Default anywhere. */
    placement: PlacementSchema.optional(),
  })
  .passthrough()
  .transform((c, ctx) => {
    const { cost, placement, ...rest } = c;
    const r = SourceSchema.safeParse(rest);
    if (!r.success) {
      for (const i of r.error.issues) ctx.addIssue({ ...i, path: i.path } as Parameters<typeof ctx.addIssue>[0]);
      return z.NEVER;
    }
    return { cost, placement, source: r.data };
  });
export type CameraDefinition = z.infer<typeof CameraSchema>;

/** The file `argus cameras apply` reads. */
export const CamerasFileSchema = z.object({ cameras: z.array(CameraSchema) }).strict();
