import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { grabPicture, renderSnapshot } from '../analytics/snapshot.js';
import type { AlertsConfig } from '../config/schema.js';
import type { LogFn } from '../core/log.js';
import type { Detector } from '../inference/detector.js';
import type { AlertBody } from '../sinks/message.js';
import type { Publisher } from '../sinks/publisher.js';
import type { FrameResult } from './pipeline.js';

/**
 * Turns alert drafts into published alerts: an id, the frame's stamps, and a JPEG snapshot
 * (boxes, zones, lines drawn) embedded or written to a folder. The pixels are copied at once,
 * so the frame can be released; encoding runs off the frame path (libvips threads).
 */
export class AlertPublisher {
  private readonly pending = new Set<Promise<void>>();
  readonly stats = { raised: 0, published: 0, snapshotFailures: 0 };
  /** Alerts raised so far by rule. */
  readonly byRule = new Map<string, { severity: string; count: number }>();
  private dirReady: Promise<unknown> | undefined;

  constructor(
    private readonly publisher: Publisher,
    private readonly config: AlertsConfig,
    private readonly detector: Detector,
    private readonly baseDir: string,
    private readonly log: LogFn,
  ) {}

  /**
   * Renders one tiny snapshot with text, so libvips, librsvg and fontconfig are loaded (and
   * the font cache built) before the first real alert rather than during it.
   */
  async warmup(): Promise<void> {
    if (this.config.snapshot.mode === 'none') return;
    const rgb = Buffer.alloc(32 * 16 * 3, 128);
    const labels = ['x'];
    const { Detections } = await import('../core/detections.js');
    const d = new Detections(new Float32Array([1, 1, 20, 10]), new Float32Array([0.5]), new Int32Array([0]));
    await renderSnapshot({ rgb, width: 32, height: 16, srcWidth: 32, srcHeight: 16 }, { detections: d, labels, highlight: 0, zones: [], lines: [] }, this.config.snapshot).catch(() => undefined);
  }

  raise(r: FrameResult): void {
    const { frame, detections, dropped } = r;
    const snap = this.config.snapshot;
    const pic = snap.mode === 'none' ? undefined : grabPicture(frame, this.detector.manifest.preprocess.channelOrder);
    for (const draft of r.alerts) {
      this.stats.raised++;
      const br = this.byRule.get(draft.rule as string);
      if (br) br.count++;
      else this.byRule.set(draft.rule as string, { severity: draft.severity as string, count: 1 });
      const { row, ...rest } = draft;
      const body = { id: `${frame.source}:${draft.rule}:${frame.seq}:${draft.trackId ?? row}`, ...rest } as AlertBody;
      if (!pic) {
        this.publisher.alert(frame, detections, dropped, body);
        this.stats.published++;
        continue;
      }
      const geometry = r.analyzer?.geometry() ?? { zones: [], lines: [] };
      const zones = draft.zone ? geometry.zones.filter((z) => z.id === draft.zone) : geometry.zones;
      const job = renderSnapshot(pic, { detections, labels: this.detector.labels, highlight: row, zones, lines: geometry.lines }, snap)
        .then(async ({ jpeg, width, height }) => {
          if (snap.mode === 'embed') {
            body.snapshot = { contentType: 'image/jpeg', data: jpeg.toString('base64'), width, height };
          } else {
            const dir = isAbsolute(snap.dir) ? snap.dir : resolve(this.baseDir, snap.dir);
            this.dirReady ??= mkdir(dir, { recursive: true });
            await this.dirReady;
            const file = join(dir, `${body.id.replace(/[^A-Za-z0-9_.-]/g, '_')}.jpg`);
            await writeFile(file, jpeg);
            body.snapshot = { contentType: 'image/jpeg', ref: file, width, height };
          }
        })
        .catch((e: Error) => {
          this.stats.snapshotFailures++;
          this.log(`alert ${body.id}: snapshot failed (${e.message}); publishing without it`, {}, 'warn');
        })
        .then(() => {
          this.publisher.alert(frame, detections, dropped, body);
          this.stats.published++;
        })
        .finally(() => this.pending.delete(job));
      this.pending.add(job);
    }
  }

  /** Waits until every raised alert has been handed to the sinks. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
