import { loadSharp } from '../core/sharp.js';
import { grabPicture } from '../analytics/snapshot.js';
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
  ) {}

  offer(r: FrameResult): void {
    const source = r.frame.source;
    if (this.busy.has(source) || !this.hub.wants('frames', source)) return;
    const t = performance.now();
    if (t - (this.last.get(source) ?? -Infinity) < 1000 / this.maxFps) return;
    this.last.set(source, t);
    this.busy.add(source);
    const pic = grabPicture(r.frame, this.channelOrder);
    const seq = r.frame.seq;
    loadSharp()
      .then((sharp) => sharp(pic.rgb, { raw: { width: pic.width, height: pic.height, channels: 3 } }).jpeg({ quality: this.quality }).toBuffer())
      .then((jpeg) => {
        this.encoded++;
        this.hub.publishFrame(
          source,
          JSON.stringify({ type: 'frame', version: 1, source, seq, contentType: 'image/jpeg', data: jpeg.toString('base64'), width: pic.width, height: pic.height, sourceWidth: pic.srcWidth, sourceHeight: pic.srcHeight }),
        );
      })
      .catch(() => undefined)
      .finally(() => this.busy.delete(source));
  }
}
