import client, { type Histogram, Registry } from 'prom-client';
import type { FrameResult } from '../analytics/analyze.js';
import { STAGES, stageMs, e2eMs, pipelineMs } from '../core/frame.js';
import { dropsByReason, type SourceStats } from '../sources/stats.js';
import type { KafkaSink } from '../sinks/kafka.js';
import type { Publisher } from '../sinks/publisher.js';
import { ALL_SOURCES } from '../config/schema/source.js';
import type { Outbox } from '../sinks/outbox.js';
import type { WebSocketHub } from '../sinks/websocket.js';
import { SOURCE_STATES as STATES } from '../sources/health.js';
/**
 * Bucket bounds (seconds) of the latency histograms. They reach 60 s: every latency the stamps
 * believe is inside a finite bucket (a camera's time up to CAMERA_BEHIND_MAX_MS old, an arrival
 * up to MAX_ARRIVAL_AGE_MS; a stage falling behind, a broker away). With 2.5 s the largest, a
 * frame 9.5 s old was only in +Inf, and histogram_quantile gave its p99 as 2.5 s.
 */
export const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Bucket bounds (seconds) of the alerts' latency: those of the frames, then up to an hour, as an
 * alert waits in the outbox for as long as the broker is away.
 */
export const ALERT_LATENCY_BUCKETS = [...LATENCY_BUCKETS, 120, 300, 600, 1800, 3600];

export interface MetricsSources {
  stats: () => readonly SourceStats[];
  provider: string;
  kafka?: KafkaSink;
  /** The alerts' hand-over to the sinks (their latency from the frame's source stamp). */
  publisher?: Publisher;
  websocket?: WebSocketHub;
  outbox?: Outbox;
  alertsByRule?: () => ReadonlyMap<string, { severity: string; count: number }>;
  /** The JSON lines sink: detection lines it skipped, its output too far behind, by source. */
  jsonl?: { readonly behind: ReadonlyMap<string, number> };
  /** The annotated-video sink: frames it dropped per source. */
  annotate?: { readonly stats: readonly { source: string; dropped: number; unwritten: number; lost: number }[] };
  /** The HTTP server: requests it refused for their address's rate. */
  http?: { readonly stats: { readonly requestsLimited: number } };
  /** argus worker: which cameras it runs, under which epoch; its lease; its fence and claim counters. */
  cluster?: () => ClusterMetricsState;
}

/** What an argus worker shows on /metrics. */
export interface ClusterMetricsState {
  worker: string;
  cameras: readonly { id: string; epoch: number }[];
  lease: boolean;
  counters: { claims: number; releases: number; fencings: number; fencedFrames: number; forcedClaims: number; rebalancesAsked: number; unreachableReports: number };
  /** Cameras it reports unreachable now (cluster.unreachableAfterMs), and whether each one's slot is still its own. */
  unreachable: readonly { id: string; here: boolean }[];
  /** Cameras of the cameras topic the worker's view holds, and records of new ids it refused (cluster.maxCameras). */
  view: { cameras: number; refused: number };
  /**
   * Cameras it does not run for their record: refused by its chain here (its model or YAML; their
   * slots reported to the group), refused for their own geometry (zones or lines outside the
   * picture: every worker alike), and those whose `${env:…}` variable its environment lacks.
   */
  notRun: { refusedHere: number; refusedRecord: number; envMissing: number };
}

/**
 * Prometheus metrics (README, "Metrics"). Per-frame work is a handful of histogram observes
 * on label children bound once per source; counters and gauges are read from the pipeline's
 * own counters at scrape time.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly stage: Histogram<'source' | 'stage'>;
  private readonly e2e: Histogram<'source'>;
  private readonly pipe: Histogram<'source'>;
  private readonly read: Histogram<'source'>;
  private readonly inference: Histogram<'provider'>;
  private readonly kafkaAck: Histogram;
  private readonly bound = new Map<string, { stages: ReturnType<Histogram<'source' | 'stage'>['labels']>[]; e2e: ReturnType<Histogram<'source'>['labels']>; pipe: ReturnType<Histogram<'source'>['labels']>; read: ReturnType<Histogram<'source'>['labels']>; infer: ReturnType<Histogram<'provider'>['labels']> }>();

  constructor(private readonly src: MetricsSources) {
    const r = this.registry;
    client.collectDefaultMetrics({ register: r, prefix: 'argus_', eventLoopMonitoringPrecision: 10 });
    const prune = () => this.prune();
    this.stage = new client.Histogram({
      name: 'argus_stage_latency_seconds',
      help: 'Time each frame spent in a stage (source = produced → captured: transport, buffering, decoding; wait = for the source\'s previous frame to leave detection; preprocess; queue = wait for the shared session; infer; postprocess; emit = tracking, rules and hand-off).',
      labelNames: ['source', 'stage'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
      // Collected first of the per-source histograms: series of sources gone are dropped before any is read.
      collect: prune,
    });
    this.e2e = new client.Histogram({
      name: 'argus_frame_latency_seconds',
      help: 'End-to-end: produced at the source (stamps.produced, producedBy: camera = an RTSP camera\'s own clock, due = a native-rate file\'s due time, arrival = a live stream\'s arrival, captured = a fast file\'s capture) to emitted, per processed frame.',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.pipe = new client.Histogram({
      name: 'argus_pipeline_latency_seconds',
      help: 'The pipeline part: captured (last byte from ffmpeg) to emitted, per processed frame.',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.read = new client.Histogram({
      name: 'argus_frame_read_latency_seconds',
      help: 'End-to-end over every frame read, dropped ones included: an emitted frame from produced to emitted (as argus_frame_latency_seconds), a dropped frame from its produced to the emission of the first result of a newer frame of its source (how long its moment went unseen). Its count is frames out plus the dropped frames a result of a newer frame followed.',
      labelNames: ['source'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.inference = new client.Histogram({
      name: 'argus_inference_seconds',
      help: 'ONNX Runtime run time by execution provider, per frame (a batched run is observed once for each of its frames).',
      labelNames: ['provider'],
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    this.kafkaAck = new client.Histogram({
      name: 'argus_kafka_publish_latency_seconds',
      help: 'Emitted to broker acknowledgement (acks=all), per message of this run (messages replayed from an earlier run\'s outbox: argus_kafka_replayed_total).',
      buckets: LATENCY_BUCKETS,
      registers: [r],
    });
    const kafkaAck = this.kafkaAck;
    if (src.kafka) src.kafka.onAck = (ms) => kafkaAck.observe(ms / 1000);
    const alertLatency = new client.Histogram({
      name: 'argus_alert_latency_seconds',
      help: 'Alerts of this run, from their frame\'s source stamp (stamps.produced) to: sinks = handed to every sink (after the snapshot, the outbox\'s fsync and the alert before it of its source), kafka = the broker\'s acknowledgement (through any outage, waiting in the outbox).',
      labelNames: ['to'],
      buckets: ALERT_LATENCY_BUCKETS,
      registers: [r],
    });
    if (src.publisher) {
      const toSinks = alertLatency.labels('sinks');
      src.publisher.onAlertOut = (ms) => toSinks.observe(ms / 1000);
    }
    if (src.kafka) {
      const toKafka = alertLatency.labels('kafka');
      src.kafka.onAlertAck = (ms) => toKafka.observe(ms / 1000);
    }
    const stats = () => src.stats();
    const counter = (name: string, help: string, read: (s: SourceStats) => number) =>
      new client.Counter({
        name,
        help,
        labelNames: ['source'],
        registers: [r],
        collect() {
          this.reset();
          for (const s of stats()) this.inc({ source: s.id }, read(s));
        },
      });
    counter('argus_frames_in_total', 'Frames read from ffmpeg.', (s) => s.framesIn);
    counter('argus_frames_out_total', 'Frames processed and emitted.', (s) => s.framesOut);
    counter('argus_source_reconnects_total', 'Reconnects of a source: restarts of its ffmpeg after a failure, a stall or the end of a stream (a resolution change restarted after the backoff included; not one restarted at once, nor a looped file’s next pass).', (s) => s.reconnects);
    counter('argus_source_decode_errors_total', 'ffmpeg’s reports of damaged input (a corrupt packet, a decoding error), those between two frames counted once.', (s) => s.decodeErrors);
    new client.Counter({
      name: 'argus_frames_dropped_total',
      help: 'Frames or messages dropped, by reason: stale (inference busy, newer frame kept), inference_error (the frame’s inference failed), kafka_buffer (producer buffer full or broker away), websocket_slow_client, jsonl_behind (the JSON lines output too far behind: a slow reader or disk), annotate_behind (the annotated video’s drawing or encoder was behind), annotate_failed (not in the annotated video: its drawing or encoder failed, or no video was being written).',
      labelNames: ['source', 'reason'],
      registers: [r],
      collect() {
        this.reset();
        for (const s of stats()) {
          const by = dropsByReason(s);
          this.inc({ source: s.id, reason: 'stale' }, by.stale);
          if (by.inferenceError > 0) this.inc({ source: s.id, reason: 'inference_error' }, by.inferenceError);
        }
        if (src.kafka) this.inc({ source: ALL_SOURCES, reason: 'kafka_buffer' }, src.kafka.stats.dropped);
        if (src.websocket) this.inc({ source: ALL_SOURCES, reason: 'websocket_slow_client' }, src.websocket.stats.dropped);
        for (const [source, n] of src.jsonl?.behind ?? []) this.inc({ source, reason: 'jsonl_behind' }, n);
        for (const a of src.annotate?.stats ?? []) {
          this.inc({ source: a.source, reason: 'annotate_behind' }, a.dropped - a.unwritten);
          if (a.unwritten + a.lost > 0) this.inc({ source: a.source, reason: 'annotate_failed' }, a.unwritten + a.lost);
        }
      },
    });
    new client.Gauge({
      name: 'argus_source_state',
      help: '1 for the state each source is in now.',
      labelNames: ['source', 'state'],
      registers: [r],
      collect() {
        this.reset();
        for (const s of stats()) for (const st of STATES) this.set({ source: s.id, state: st }, s.state === st ? 1 : 0);
      },
    });
    new client.Gauge({
      name: 'argus_queue_depth',
      help: 'Items waiting in bounded queues: kafka_detections, kafka_alerts (alerts in memory), kafka_alerts_on_disk (alerts beyond the memory bounds, waiting in the outbox), kafka_status, websocket_alert_backlog.',
      labelNames: ['queue'],
      registers: [r],
      collect() {
        this.reset();
        if (src.kafka) {
          this.set({ queue: 'kafka_detections' }, src.kafka.stats.buffered);
          this.set({ queue: 'kafka_alerts' }, src.kafka.stats.alertsBuffered);
          this.set({ queue: 'kafka_alerts_on_disk' }, src.kafka.stats.alertsOnDisk);
          this.set({ queue: 'kafka_status' }, src.kafka.stats.statusBuffered);
        }
        if (src.websocket) this.set({ queue: 'websocket_alert_backlog' }, src.websocket.clientStats().reduce((n, c) => n + c.backlog, 0));
      },
    });
    if (src.kafka) {
      const k = src.kafka;
      new client.Gauge({
        name: 'argus_kafka_buffer_fill_ratio',
        help: 'Detection buffer in front of the Kafka producer: used / capacity.',
        registers: [r],
        collect() {
          this.set(k.stats.buffered / k.bufferCapacity);
        },
      });
      new client.Counter({
        name: 'argus_kafka_messages_total',
        help: 'Messages acknowledged by the broker, by kind.',
        labelNames: ['kind'],
        registers: [r],
        collect() {
          this.reset();
          this.inc({ kind: 'detections' }, k.stats.sent);
          this.inc({ kind: 'alert' }, k.stats.alertsSent);
          this.inc({ kind: 'status' }, k.stats.statusSent);
        },
      });
      new client.Counter({
        name: 'argus_kafka_replayed_total',
        help: 'Of argus_kafka_messages_total: alerts and status messages an earlier run left undelivered in the outbox, replayed at start and acknowledged, by kind. Not in argus_kafka_publish_latency_seconds (their age since that run emitted them is no publish latency).',
        labelNames: ['kind'],
        registers: [r],
        collect() {
          this.reset();
          this.inc({ kind: 'alert' }, k.stats.alertsReplayed);
          this.inc({ kind: 'status' }, k.stats.statusReplayed);
        },
      });
      new client.Gauge({ name: 'argus_kafka_connected', help: '1 while publishing to Kafka works.', registers: [r], collect() { this.set(k.stats.connected ? 1 : 0); } });
      new client.Counter({
        name: 'argus_kafka_undeliverable_total',
        help: 'Messages the broker can never take (too large), by what became of them: parked (in the dead-letter file), snapshot_left_out (an alert sent without its embedded snapshot: delivered), alert_lost (alert buffer overflow without an outbox, or shutdown).',
        labelNames: ['outcome'],
        registers: [r],
        collect() {
          this.reset();
          this.inc({ outcome: 'parked' }, k.stats.parked);
          this.inc({ outcome: 'snapshot_left_out' }, k.stats.snapshotsLeftOut);
          this.inc({ outcome: 'alert_lost' }, k.stats.alertsDropped);
        },
      });
    }
    if (src.cluster) {
      const cl = src.cluster;
      new client.Gauge({
        name: 'argus_cluster_camera_epoch',
        help: 'argus worker: the cameras this worker runs (label worker), each with the epoch of its claim.',
        labelNames: ['source', 'worker'],
        registers: [r],
        collect() {
          this.reset();
          const st = cl();
          for (const c of st.cameras) this.set({ source: c.id, worker: st.worker }, c.epoch);
        },
      });
      new client.Gauge({ name: 'argus_cluster_cameras', help: 'argus worker: cameras of the cameras topic its view holds (at most cluster.maxCameras).', registers: [r], collect() { this.set(cl().view.cameras); } });
      new client.Counter({
        name: 'argus_cluster_cameras_refused_total',
        help: 'argus worker: camera records of new ids refused (VAP_ERR_CAMERA_LIMIT): the view held cluster.maxCameras cameras already, or the key was longer than an id.',
        registers: [r],
        collect() {
          this.reset();
          this.inc(cl().view.refused);
        },
      });
      new client.Gauge({
        name: 'argus_cluster_cameras_unusable',
        help: 'argus worker: cameras whose record its chain refused (VAP_ERR_CONFIG), run nowhere here until the record changes: scope here (its model or YAML: a class it lacks, lines with tracking off; the slot is reported to the group for a worker that can run it), record (the record\'s own geometry, zones or lines outside the picture: every worker refuses it alike).',
        labelNames: ['scope'],
        registers: [r],
        collect() {
          const n = cl().notRun;
          this.set({ scope: 'here' }, n.refusedHere);
          this.set({ scope: 'record' }, n.refusedRecord);
        },
      });
      new client.Gauge({ name: 'argus_cluster_cameras_env_missing', help: 'argus worker: cameras meant to run here (enabled, placement met) whose record names a ${env:ARGUS_CAMERA_…} variable its environment lacks (the slot is reported to the group for a worker that has it).', registers: [r], collect() { this.set(cl().notRun.envMissing); } });
      new client.Gauge({ name: 'argus_cluster_lease', help: 'argus worker: 1 while its group lease holds (a heartbeat answered within the session less the fence margin).', registers: [r], collect() { this.set(cl().lease ? 1 : 0); } });
      new client.Counter({
        name: 'argus_cluster_events_total',
        help: 'argus worker: claims and releases written, fencings (the lease ran out: every camera stopped), fenced_frames (results dropped because the claim no longer held), forced_claims (a planned move that did not get the release in time), unreachable_reports (a camera of its slots that gave it no frame for cluster.unreachableAfterMs, reported to the group), rebalances_asked (for such a report, or a placement the assignment did not meet).',
        labelNames: ['event'],
        registers: [r],
        collect() {
          this.reset();
          const c = cl().counters;
          this.inc({ event: 'claims' }, c.claims);
          this.inc({ event: 'releases' }, c.releases);
          this.inc({ event: 'fencings' }, c.fencings);
          this.inc({ event: 'fenced_frames' }, c.fencedFrames);
          this.inc({ event: 'forced_claims' }, c.forcedClaims);
          this.inc({ event: 'unreachable_reports' }, c.unreachableReports);
          this.inc({ event: 'rebalances_asked' }, c.rebalancesAsked);
        },
      });
      new client.Gauge({
        name: 'argus_cluster_unreachable',
        help: 'argus worker: cameras it reports unreachable now (no frame for cluster.unreachableAfterMs; the group gives their slots to another worker where it can), by whether the slot is still its own (held: 1 while the camera stays dark here).',
        labelNames: ['source', 'held'],
        registers: [r],
        collect() {
          this.reset();
          for (const u of cl().unreachable) this.set({ source: u.id, held: u.here ? '1' : '0' }, 1);
        },
      });
    }
    if (src.outbox) {
      const ob = src.outbox;
      new client.Gauge({ name: 'argus_outbox_pending_alerts', help: 'Alerts in the outbox journal not yet acknowledged by Kafka.', registers: [r], collect() { this.set(ob.pendingAlerts); } });
      new client.Gauge({ name: 'argus_outbox_pending_bytes', help: 'Bytes of the undelivered records in the outbox journal.', registers: [r], collect() { this.set(ob.stats.pendingBytes); } });
      // Whether the undelivered alerts would survive a crash now: said in the log at the start and
      // at the exit only (a read-only volume, a full disk), nothing a scrape or an alert rule saw.
      new client.Gauge({ name: 'argus_outbox_journaled', help: '1 while the outbox journal holds every undelivered record (alerts survive a crash, kill -9 or power cut); 0 once one is only in memory (writes failing: a full disk, a read-only volume) until a rewrite works again.', registers: [r], collect() { this.set(ob.journaled ? 1 : 0); } });
      // Said once in the log, and in /healthz: a scrape or an alert rule saw neither.
      new client.Gauge({ name: 'argus_outbox_aged_on_disk', help: 'Alerts found in the outbox journal on a read-only volume older than outbox.maxAgeHours: not replayed, and not removable there (found again at every start; the first writable start drops them, counted lost then). 0 on a writable volume.', registers: [r], collect() { this.set(ob.stats.agedOnDisk ?? 0); } });
      new client.Gauge({ name: 'argus_outbox_writable_again', help: '1 once a run that found its outbox volume read-only finds it writable again: its alerts stay unprotected until argus is restarted (the journal is not taken up while it runs); else 0.', registers: [r], collect() { this.set(ob.stats.writableAgain ? 1 : 0); } });
      new client.Counter({
        name: 'argus_outbox_events_total',
        help: 'Outbox journal events: appended, acked, recovered (replayed at start), evicted (dropped undelivered for maxBytes/maxAgeHours), delivered_after_drop (of those, handled by the Kafka sink from its send buffer after all: acknowledged by the broker, or parked in the dead-letter file, counted there), rejournaled_after_drop (of those, dropped as raised and journaled again with their snapshot; evicted less these two: lost), oversized (an alert larger than what maxBytes left: kept over it), write_errors, slow_writes (handed on before the disk confirmed them, after 1 s), corrupt (records skipped at start).',
        labelNames: ['event'],
        registers: [r],
        collect() {
          this.reset();
          const st = ob.stats;
          this.inc({ event: 'appended' }, st.appended);
          this.inc({ event: 'acked' }, st.acked);
          this.inc({ event: 'recovered' }, st.recovered);
          this.inc({ event: 'evicted' }, st.evicted);
          this.inc({ event: 'delivered_after_drop' }, st.deliveredAfterDrop);
          this.inc({ event: 'rejournaled_after_drop' }, st.rejournaledAfterDrop);
          this.inc({ event: 'oversized' }, st.oversized);
          this.inc({ event: 'write_errors' }, st.writeErrors);
          this.inc({ event: 'slow_writes' }, st.slowWrites);
          this.inc({ event: 'corrupt' }, st.corrupt);
        },
      });
    }
    if (src.websocket) {
      const w = src.websocket;
      new client.Gauge({ name: 'argus_websocket_clients', help: 'Connected WebSocket clients.', registers: [r], collect() { this.set(w.stats.connected); } });
      new client.Counter({
        name: 'argus_websocket_messages_total',
        help: 'Messages sent to WebSocket clients.',
        registers: [r],
        collect() {
          this.reset();
          this.inc(w.stats.sent);
        },
      });
    }
    if (src.http) {
      const h = src.http;
      new client.Counter({
        name: 'argus_http_requests_limited_total',
        help: 'HTTP requests answered 429: their address sent faster than server.requestsPerAddressPerSecond.',
        registers: [r],
        collect() {
          this.reset();
          this.inc(h.stats.requestsLimited);
        },
      });
    }
    new client.Counter({
      name: 'argus_alerts_total',
      help: 'Alerts raised, by rule and severity.',
      labelNames: ['rule', 'severity'],
      registers: [r],
      collect() {
        this.reset();
        for (const [rule, v] of src.alertsByRule?.() ?? []) this.inc({ rule, severity: v.severity }, v.count);
      },
    });
  }

  /** Per processed frame: stage and end-to-end latencies, inference time. */
  onFrame(r: FrameResult): void {
    const s = r.frame.stamps;
    let b = this.bound.get(r.frame.source);
    if (!b) {
      const source = r.frame.source;
      b = { stages: STAGES.map((stage) => this.stage.labels(source, stage)), e2e: this.e2e.labels(source), pipe: this.pipe.labels(source), read: this.read.labels(source), infer: this.inference.labels(this.src.provider) };
      this.bound.set(source, b);
    }
    for (let i = 0; i < STAGES.length; i++) b.stages[i].observe(stageMs(s, STAGES[i]) / 1000);
    const e2e = e2eMs(s) / 1000;
    b.e2e.observe(e2e);
    b.read.observe(e2e);
    if (r.superseded) for (const ms of r.superseded) b.read.observe(ms / 1000);
    b.pipe.observe(pipelineMs(s) / 1000);
    b.infer.observe(stageMs(s, 'infer') / 1000);
  }

  /**
   * Drops the latency series of sources no longer in the pipeline (an argus worker's cameras
   * that left it): they stayed frozen for good, 189 lines a camera, and a camera that moved to
   * another worker was exported by both. A source attached again starts new series.
   */
  private prune(): void {
    if (this.bound.size === 0) return;
    const live = new Set(this.src.stats().map((s) => s.id));
    for (const id of this.bound.keys()) {
      if (live.has(id)) continue;
      for (const stage of STAGES) this.stage.remove(id, stage);
      this.e2e.remove(id);
      this.pipe.remove(id);
      this.read.remove(id);
      this.bound.delete(id);
    }
  }

  async scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
