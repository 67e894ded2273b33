import { now } from '../core/clock.js';
import type { Detections } from '../core/detections.js';
import type { Frame } from '../core/frame.js';
import type { AnalyticsSummary } from '../analytics/analyzer.js';
import type { Transition } from '../sources/health.js';
import type { AlertBody } from '../analytics/analyzer.js';
import { withoutSnapshot } from '../analytics/published.js';
import { alertMessage, detectionsMessage, runTag, statusMessage, type AlertMessage, type Claim, type DetectionsMessage, type ModelInfo, type StatusMessage } from './message.js';
import { redact } from '../core/redact.js';
import { RESERVED_OMITTED, type Outbox } from './outbox.js';
import type { Sink } from './sink.js';

/**
 * Builds each message once, stamps `published`, serialises it once and hands the same JSON to
 * every sink. With an outbox, alerts and status changes are journaled (fsynced) first and
 * reach the sinks once they are on disk.
 */
export class Publisher {
  constructor(
    readonly sinks: readonly Sink[],
    private readonly model: ModelInfo,
    private readonly labels: readonly string[],
    private readonly outbox?: Outbox,
    /** argus worker: the owner and epoch of a source, written into its messages. */
    private readonly claimOf?: (source: string, frame?: Frame) => Claim | undefined,
    /**
     * Every message's `run`, and the run in its alert ids (AlertPublisher): a tag of its own for
     * each publisher, one a run of the pipeline (runPipeline passes its run's: RunOptions.run, an
     * argus worker's incarnation), as its sources' seq count from 0 again at each. (One tag a process gave a program that ran its pipeline twice the first
     * run's (run, seq) and alert ids again.)
     */
    readonly run: string = runTag(),
  ) {}

  /**
   * Told each alert's latency as it is handed to the sinks: ms from its frame's `produced` stamp
   * (its snapshot, its journal write and the earlier alert of its source before it included).
   * The metrics' `argus_alert_latency_seconds{to="sinks"}`: the message's own `published` is
   * stamped when it is serialised, before the journal and that wait.
   */
  onAlertOut: ((ms: number) => void) | undefined;

  /** Journal writes not finished yet (their messages reach the sinks when they are). */
  private readonly journaling = new Set<Promise<unknown>>();

  private journal(msg: AlertMessage | StatusMessage, json: string): Promise<void> | undefined {
    if (!this.outbox) return undefined;
    const p = this.outbox.append(msg, json);
    this.journaling.add(p);
    return p.finally(() => this.journaling.delete(p));
  }

  /**
   * argus worker: the owner and epoch of `frame`'s messages: the claim it was admitted under. An
   * alert takes it when raised: built once its snapshot is done (up to seconds later), it took the
   * claim of that moment, and a camera fenced meanwhile (its frames' alerts go out under the old
   * epoch) had its alert under the epoch of its next claim, or under none once the claim was
   * forgotten. The frame, not its source, is asked for: a fenced frame's alert raised after its
   * worker claimed the camera again took the new epoch (the worker keeps the frame's own).
   */
  claimNow(frame: Frame): Claim | undefined {
    return this.claimOf?.(frame.source, frame);
  }

  detections(frame: Frame, detections: Detections, dropped: number, analytics?: AnalyticsSummary): DetectionsMessage {
    const msg = detectionsMessage(frame, detections, dropped, this.model, this.labels, analytics, this.claimOf?.(frame.source), this.run);
    this.fanOut(msg);
    return msg;
  }

  /**
   * Journals an alert at once, before its snapshot is rendered: a crash in between loses
   * nothing (it is replayed without the picture, its `snapshotOmitted` saying why: replayed with
   * neither, a consumer could not tell it from an alert of a pipeline that takes no snapshots).
   * `alert()` later journals the full alert under the same key, replacing this record. No
   * outbox: nothing to do.
   */
  reserve(frame: Frame, detections: Detections, dropped: number, body: AlertBody, claim = this.claimNow(frame)): void {
    if (!this.outbox) return;
    const msg = alertMessage(frame, detections, dropped, this.model, this.labels, withoutSnapshot(body, RESERVED_OMITTED), claim, this.run);
    msg.stamps.published = now();
    void this.journal(msg, JSON.stringify(msg));
  }

  /**
   * Journals the alert at once (when there is an outbox); resolves once it is on disk and handed
   * to every sink. `after`: the sinks get it only once that has settled too (the hand-over of the
   * alert its source raised before it: see AlertPublisher), while its journal write goes on
   * beside the earlier ones'. Waiting for `after` before journaling left an alert raised behind
   * another in memory only, one disk write after the other: a kill -9 meanwhile lost it.
   * `claim`: the one its frame was analysed under (claimNow when it was raised), for an alert
   * built later (once its snapshot is done).
   */
  async alert(frame: Frame, detections: Detections, dropped: number, body: AlertBody, after?: Promise<unknown>, claim = this.claimNow(frame)): Promise<AlertMessage> {
    const msg = alertMessage(frame, detections, dropped, this.model, this.labels, body, claim, this.run);
    msg.stamps.published = now();
    const json = JSON.stringify(msg);
    const journaled = this.journal(msg, json);
    if (journaled) await journaled;
    if (after) await after;
    for (const s of this.sinks) s.publish('alert', msg.source, json, msg);
    this.onAlertOut?.(now() - msg.stamps.produced);
    return msg;
  }

  /** A source's state change; its reason and detail are redacted (no credentials leave the process). */
  async status(t: Transition): Promise<StatusMessage> {
    const msg = statusMessage(t, this.claimOf?.(t.source), this.run);
    msg.reason = redact(msg.reason);
    if (msg.detail) msg.detail = redact(msg.detail);
    msg.published = now();
    const json = JSON.stringify(msg);
    const journaled = this.journal(msg, json);
    if (journaled) await journaled;
    for (const s of this.sinks) s.publish('status', msg.source, json, msg);
    return msg;
  }

  private fanOut(msg: DetectionsMessage | AlertMessage): void {
    msg.stamps.published = now();
    const json = JSON.stringify(msg);
    for (const s of this.sinks) s.publish(msg.type, msg.source, json, msg);
  }

  /** Lets journal writes in progress reach the sinks (the sinks themselves are closed by whoever started them). */
  async flush(): Promise<void> {
    while (this.journaling.size > 0) await Promise.all([...this.journaling]);
    await new Promise((r) => setImmediate(r)); // the awaiting alert()/status() calls hand their messages on first
  }

  /** Flushes, then closes the sinks in reverse order of creation (for users that own the sinks through the publisher). */
  async close(): Promise<void> {
    await this.flush();
    for (const s of [...this.sinks].reverse()) await s.close();
  }
}
