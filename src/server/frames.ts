import { loadSharp } from '../core/sharp.js';
import { grabPicture, pictureImage } from '../analytics/snapshot.js';
import type { FrameResult } from '../analytics/analyze.js';
import type { WebSocketHub } from '../sinks/websocket.js';

/**
 * Live frames for the dashboard: at most `maxFps` JPEGs per source, made only while some
 * client subscribes to `frames`, one encode in flight per source. The pixels are copied at
 * once so the frame can be released; libvips encodes off the main thread.
 */
export class FrameBroadcaster {
  private readonly last = new Map<string, number>();
  private readonly busy = new Set<string>();
  encoded = 0;

  constructor(
    private readonly hub: WebSocketHub,
    private readonly channelOrder: 'bgr' | 'rgb',
    private readonly maxFps = 5,
    private readonly quality = 70,
    /** Live frames are at most this wide (the source's own frames can be 4K). */
    private readonly maxWidth = 640,
  ) {}

  offer(r: FrameResult): void {
    const source = r.frame.source;
    if (this.busy.has(source) || !this.hub.wants('frames', source)) return;
    const t = performance.now();
    if (t - (this.last.get(source) ?? -Infinity) < 1000 / this.maxFps) return;
    // Sources come and go (a worker's cameras): times older than a second say nothing any more.
    if (this.last.size >= 256) for (const [id, at] of this.last) if (t - at >= 1000) this.last.delete(id);
    this.last.set(source, t);
    this.busy.add(source);
    const pic = grabPicture(r.frame, this.channelOrder);
    const seq = r.frame.seq;
    loadSharp()
      .then((sharp) => {
        const img = pictureImage(sharp, pic);
        return (pic.width > this.maxWidth ? img.resize({ width: this.maxWidth }) : img).jpeg({ quality: this.quality }).toBuffer({ resolveWithObject: true });
      })
      .then(({ data: jpeg, info }) => {
        this.encoded++;
        this.hub.publishFrame(
          source,
          JSON.stringify({ type: 'frame', version: 1, source, seq, contentType: 'image/jpeg', data: jpeg.toString('base64'), width: info.width, height: info.height, sourceWidth: pic.srcWidth, sourceHeight: pic.srcHeight }),
        );
      })
      .catch(() => undefined)
      .finally(() => this.busy.delete(source));
  }
}
