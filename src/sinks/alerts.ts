import * as fsPromises from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { withoutSnapshot } from '../analytics/published.js';
import { grabPicture } from '../analytics/snapshot.js';
import { sceneOf } from '../annotate/scene.js';
import { renderSnapshot } from '../annotate/snapshot.js';
import type { AlertsConfig } from '../config/schema.js';
import { withDeadline } from '../core/clock.js';
import { ArgusError, ErrorCodes } from '../core/errors.js';
import { makeDir } from '../core/files.js';
import type { LogFn } from '../core/log.js';
import type { Detector } from '../inference/detector.js';
import type { AlertBody } from '../analytics/analyzer.js';
import type { Publisher } from './publisher.js';
import type { FrameResult } from '../analytics/analyze.js';

/**
 * Turns alert drafts into published alerts: an id, the frame's stamps, and a JPEG snapshot
 * (boxes, zones, lines drawn) embedded or written to a folder. The pixels are copied at once,
 * so the frame can be released; encoding runs off the frame path (libvips threads).
 */
/**
 * Pictures held for snapshots still being rendered, at most this many bytes (a burst of alerts
 * on 4K frames holds 25 MB a frame). Beyond it an alert goes out without a snapshot, counted.
 */
export const SNAPSHOT_HOLD_BYTES = 128 * 1024 * 1024;

/** Sources whose latest frames' alert ids AlertPublisher keeps (for the alerts of their stream's end, on such a frame's seq). */
const LAST_IDS_KEPT = 10_000;
/**
 * Per source, the latest seqs with alerts whose ids are kept: two chains of one camera may run
 * at once (attached again while the former one drains), the former's end coming after the
 * latter's alerts.
 */
const SEQS_KEPT = 4;

/**
 * How long a `ref` snapshot's folder and file may take to be made and written before the alert
 * goes out without it. Node's recursive mkdir loops for ever on some paths (/proc/x): a run's
 * shutdown waited on it until killed.
 */
export const SNAPSHOT_IO_TIMEOUT_MS = 10_000;

/**
 * How long a snapshot may take to render before its alert goes out without it (tens of ms as a
 * rule). One that never finishes (libvips stuck, or the thread pool it runs on taken by writes to
 * a hung network share) held its alert for good, and every later alert of its source behind it
 * (they reach the sinks in order), drain and the stop with them.
 */
export const SNAPSHOT_RENDER_TIMEOUT_MS = 10_000;

/** What AlertPublisher writes `ref` snapshots with (the file system; a stand-in in tests). */
export interface SnapshotFs {
  mkdir(dir: string, o: { recursive: true }): Promise<unknown>;
  writeFile(file: string, data: Buffer): Promise<void>;
  /** Removes a file written in part (default: node:fs/promises rm, force). */
  rm?(file: string): Promise<unknown>;
}

export interface AlertPublisherOptions {
  /** Default SNAPSHOT_HOLD_BYTES. */
  holdBytes?: number;
  /** Default SNAPSHOT_IO_TIMEOUT_MS. */
  ioTimeoutMs?: number;
  /** Default node:fs/promises. */
  fs?: SnapshotFs;
  /** Default SNAPSHOT_RENDER_TIMEOUT_MS. */
  renderTimeoutMs?: number;
  /** Default renderSnapshot (tests: one that never finishes). */
  render?: typeof renderSnapshot;
}

export class AlertPublisher {
  private readonly pending = new Set<Promise<void>>();
  /** Per source, the hand-over of its latest alert still on its way (see inOrder). */
  private readonly lastOf = new Map<string, Promise<unknown>>();
  /** `snapshotsSkipped`: alerts published without a snapshot because SNAPSHOT_HOLD_BYTES were held. */
  readonly stats = { raised: 0, published: 0, snapshotFailures: 0, snapshotsSkipped: 0 };
  private heldBytes = 0;
  /** Alerts raised so far by rule. */
  readonly byRule = new Map<string, { severity: string; count: number }>();
  private dirReady: Promise<unknown> | undefined;
  /** Per source, the ids its latest frames with alerts gave them (SEQS_KEPT, oldest first): the alerts of its stream's end, on such a frame's seq, are told apart from them (`.2`). */
  private readonly lastIds = new Map<string, { seq: number; ids: string[] }[]>();

  constructor(
    private readonly publisher: Publisher,
    private readonly config: AlertsConfig,
    private readonly detector: Detector,
    private readonly baseDir: string,
    private readonly log: LogFn,
    private readonly o: AlertPublisherOptions = {},
  ) {
    this.holdBytes = o.holdBytes ?? SNAPSHOT_HOLD_BYTES;
    this.ioMs = o.ioTimeoutMs ?? SNAPSHOT_IO_TIMEOUT_MS;
    this.renderMs = o.renderTimeoutMs ?? SNAPSHOT_RENDER_TIMEOUT_MS;
    this.render = o.render ?? renderSnapshot;
    this.fs = { mkdir: (dir) => makeDir(dir), writeFile: fsPromises.writeFile, rm: (file) => fsPromises.rm(file, { force: true }), ...o.fs };
    this.dir = isAbsolute(config.snapshot.dir) ? config.snapshot.dir : resolve(baseDir, config.snapshot.dir);
  }

  private readonly holdBytes: number;
  private readonly ioMs: number;
  private readonly renderMs: number;
  private readonly render: typeof renderSnapshot;
  private readonly fs: Required<SnapshotFs>;
  /** The folder of `ref` snapshots. */
  private readonly dir: string;

  /** The folder of `ref` snapshots, made once (a failure, or a make that takes too long, holds for the run: each alert then goes out at once without its snapshot). */
  private snapshotDir(): Promise<string> {
    this.dirReady ??= withDeadline(this.fs.mkdir(this.dir, { recursive: true }), this.ioMs, `making the folder ${this.dir} took more than ${this.ioMs / 1000} s`);
    return this.dirReady.then(() => this.dir);
  }

  /**
   * Renders one tiny snapshot with text, so libvips, librsvg and fontconfig are loaded (and
   * the font cache built) before the first real alert rather than during it.
   */
  async warmup(): Promise<void> {
    if (this.config.snapshot.mode === 'none') return;
    // A folder that cannot be made stops the start (as the other outputs' paths do), rather than
    // each alert logging it.
    if (this.config.snapshot.mode === 'ref') {
      await this.snapshotDir().catch((e: NodeJS.ErrnoException) => {
        throw new ArgusError(ErrorCodes.SINK_FILE, `alerts.snapshot.dir: cannot make the folder of snapshots ${this.dir} (${e.code ?? e.message})`, { cause: e });
      });
    }
    const rgb = Buffer.alloc(32 * 16 * 3, 128);
    const labels = ['x'];
    const { Detections } = await import('../core/detections.js');
    const d = new Detections(new Float32Array([1, 1, 20, 10]), new Float32Array([0.5]), new Int32Array([0]));
    await renderSnapshot({ rgb, width: 32, height: 16, srcWidth: 32, srcHeight: 16 }, { detections: d, labels, highlight: 0 }, this.config.snapshot).catch(() => undefined);
  }

  raise(r: FrameResult): void {
    const { frame, detections, dropped } = r;
    const snap = this.config.snapshot;
    // The stream's end (analyze): no frame, no picture.
    let pic = snap.mode === 'none' || r.alerts.length === 0 || r.streamEnd ? undefined : grabPicture(frame, this.detector.manifest.preprocess.channelOrder);
    /** Why this frame's alerts go out without their snapshot (their `snapshotOmitted`), when they do. */
    let skipped: string | undefined;
    if (pic && this.heldBytes + pic.rgb.length > this.holdBytes) {
      this.stats.snapshotsSkipped += r.alerts.length;
      skipped = `${Math.round(this.heldBytes / 1048576)} MB of pictures already wait for theirs`;
      this.log(`alerts on ${frame.source} frame ${frame.seq}: published without a snapshot (${skipped})`, {}, 'warn');
      pic = undefined;
    }
    // The picture is held until the last snapshot of this frame is rendered.
    let jobsLeft = pic ? r.alerts.length : 0;
    const held = pic ? pic.rgb.length : 0;
    this.heldBytes += held;
    const letGo = () => {
      if (--jobsLeft === 0) this.heldBytes -= held;
    };
    // The claim the frame was analysed under (argus worker): its alerts are built with it, also once their snapshot is done.
    const claim = this.publisher.claimNow(frame);
    // The ids this frame's alerts took (only where it raised more than one): a second alert of one
    // rule and track on a frame (a new track's way in and back out among its sightings before it was
    // confirmed; a stay's entry and its exit as it is gone) is `…:track.2`. Before, both had one id,
    // and consumers, which take a repeated id for a redelivery, kept one.
    // The stream's end's alerts take its last frame's seq: told apart from that frame's own the same
    // way, by the ids kept for that seq (not only the source's latest: another chain of the camera
    // may have raised alerts since, and the end's then took that frame's ids again, which consumers drop).
    const last = this.seqIds(frame.source, frame.seq);
    const ids = r.streamEnd || last.length > 0 ? new Set(last) : r.alerts.length > 1 ? new Set<string>() : undefined;
    for (const draft of r.alerts) {
      this.stats.raised++;
      const br = this.byRule.get(draft.rule as string);
      if (br) br.count++;
      else this.byRule.set(draft.rule as string, { severity: draft.severity as string, count: 1 });
      const { row, ...rest } = draft;
      // source:rule:run-seq:track — unique across restarts (run tag) and within a run (seq never repeats).
      let id = `${frame.source}:${draft.rule}:${this.publisher.run}-${frame.seq}:${draft.trackId ?? `r${row}`}`;
      if (ids) {
        if (ids.has(id)) for (let n = 2; ; n++) if (!ids.has(`${id}.${n}`)) {
          id = `${id}.${n}`;
          break;
        }
        ids.add(id);
      }
      last.push(id);
      let body = { id, ...rest } as AlertBody;
      if (skipped) body = withoutSnapshot(body, { reason: 'busy', detail: skipped });
      // The stream's end's alert: no frame shows it, said as any snapshot left out is (a consumer told
      // it from an alert whose picture was lost by nothing).
      else if (r.streamEnd && snap.mode !== 'none') body = withoutSnapshot(body, { reason: 'no-frame', detail: 'raised at the end of the stream (a crossing settled there): no frame shows it' });
      if (!pic) {
        this.track(this.inOrder(frame.source, undefined, (after) => this.publisher.alert(frame, detections, dropped, body, after, claim)).then(() => void this.stats.published++));
        continue;
      }
      // On disk now, not after the snapshot (tens of ms of libvips): it counts as raised.
      this.publisher.reserve(frame, detections, dropped, body, claim);
      // Drawn as preview and the annotated video draw the frame; a zone's alert shows its zone alone.
      const scene = r.analyzer ? sceneOf(r.analyzer, r.analytics) : undefined;
      if (scene && draft.zone) scene.zones = scene.zones.filter((z) => z.id === draft.zone);
      /** The `ref` file being written, removed if its write fails (see below), and whether the disk answered that write. */
      let writing: string | undefined;
      let answered = false;
      // The picture is let go when its render ends, whenever that is (past the deadline too: it is held till then).
      const render = this.render(pic, { detections, labels: this.detector.labels, highlight: row, scene }, snap);
      render.then(letGo, letGo);
      const rendered = withDeadline(render, this.renderMs, `rendering took more than ${this.renderMs / 1000} s`)
        .then(async ({ jpeg, width, height }) => {
          if (snap.mode === 'embed') {
            body.snapshot = { contentType: 'image/jpeg', data: jpeg.toString('base64'), width, height };
          } else {
            const dir = await this.snapshotDir();
            const file = join(dir, `${body.id.replace(/[^A-Za-z0-9_.-]/g, '_')}.jpg`);
            writing = file;
            const write = this.fs.writeFile(file, jpeg).catch(async (e: NodeJS.ErrnoException) => {
              if (e.code !== 'ENOENT') throw e;
              // The folder was removed since it was made (a cleanup job): made again, and the file
              // written once more (before, every later alert's snapshot failed for the rest of the run).
              this.dirReady = undefined;
              await this.snapshotDir();
              return this.fs.writeFile(file, jpeg);
            });
            await withDeadline(
              write.finally(() => (answered = true)),
              this.ioMs,
              `writing ${file} took more than ${this.ioMs / 1000} s`,
            );
            writing = undefined;
            body.snapshot = { contentType: 'image/jpeg', ref: file, width, height };
          }
        })
        .catch(async (e: Error) => {
          this.stats.snapshotFailures++;
          this.log(`alert ${body.id}: snapshot failed (${e.message}); publishing without it`, {}, 'warn');
          body = withoutSnapshot(body, { reason: 'failed', detail: e.message });
          // A write the disk took in part (full) left a cut-short picture under the alert's name,
          // taking room on the full disk: removed, before the alert goes out when the disk answered
          // the write (it answers this too), in the background when it did not (it would hold the alert).
          if (writing) {
            const removed = this.fs.rm(writing).catch(() => undefined);
            if (answered) await withDeadline(removed, this.ioMs, '').catch(() => undefined);
          }
        });
      this.track(this.inOrder(frame.source, rendered, (after) => this.publisher.alert(frame, detections, dropped, body, after, claim)).then(() => void this.stats.published++));
    }
  }

  /**
   * The ids kept for a source's frame `seq` (its alerts' ids are pushed on it): SEQS_KEPT seqs per
   * source, for LAST_IDS_KEPT sources (a worker's cameras come and go: those whose latest alerts
   * are the oldest are forgotten first).
   */
  private seqIds(source: string, seq: number): string[] {
    let recent = this.lastIds.get(source);
    if (recent) this.lastIds.delete(source);
    else recent = [];
    this.lastIds.set(source, recent);
    if (this.lastIds.size > LAST_IDS_KEPT) this.lastIds.delete(this.lastIds.keys().next().value!);
    let kept = recent.find((e) => e.seq === seq);
    if (!kept) {
      kept = { seq, ids: [] };
      recent.push(kept);
      if (recent.length > SEQS_KEPT) recent.shift();
    }
    return kept.ids;
  }

  /**
   * Hands an alert to the sinks once `ready` (its snapshot) and every earlier alert of its
   * source have been: a source's alerts reach the sinks in the order they were raised. Their
   * snapshots render side by side and finish in any order, and each went out as its own was done:
   * a consumer got a track's exit before its entry, and Kafka's order per source (the key) was
   * not the order of events (1 run in 2 of a fast file with an alert every 10 frames).
   * `publish` is called once `ready` alone (at once without a snapshot): it journals the alert
   * then, and gives it to the sinks once `after` (the earlier alerts' hand-over) has settled.
   */
  private inOrder(source: string, ready: Promise<unknown> | undefined, publish: (after: Promise<unknown> | undefined) => Promise<unknown>): Promise<unknown> {
    const before = this.lastOf.get(source);
    const settled = () => undefined;
    // (Whether the earlier one was handed on or failed: a failure is logged by track, and the next goes on.)
    const after = before?.then(settled, settled);
    const p = ready ? ready.then(settled, settled).then(() => publish(after)) : publish(after);
    this.lastOf.set(source, p);
    const forget = () => {
      if (this.lastOf.get(source) === p) this.lastOf.delete(source);
    };
    p.then(forget, forget);
    return p;
  }

  private track(job: Promise<void>): void {
    const p = job
      .catch((e: Error) => this.log(`alert: publishing failed (${e.message})`, {}, 'error'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  /** Waits until every raised alert has been handed to the sinks. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Drained and closed (close): the sinks and the outbox close after it, so nothing more is taken (handOver). */
  private closed = false;

  /** Drains (every raised alert handed to the sinks) and takes no more alerts handed over: the run's outputs close next. */
  async close(): Promise<void> {
    await this.drain();
    this.closed = true;
  }

  /**
   * The result of a stream's end whose chain was cut off before it reached the sinks (the stop's
   * drain timeout, --max-frames: PipelineOptions.handOver): raised as the chain would have (same
   * message, ids, `snapshotOmitted` no-frame), while the sinks and the outbox are open; false once
   * closed (its alerts are then counted lost). Before, such alerts were only counted lost (exit
   * status 3), though the sinks and the journal were there to take them.
   */
  handOver(r: FrameResult): boolean {
    if (this.closed) return false;
    this.raise(r);
    return true;
  }
}
