import { getSystemErrorName } from 'node:util';
import { loadNativeModule } from '../core/native.js';
import type { FrameReader } from './frame-reader.js';

/** The C module (src/sources/frame-channel.c): a socket pair read by a thread of its own. */
interface NativeChannel {
  open(callback: (bytes: number, errno: number) => void): [handle: object, childFd: number];
  read(handle: object, into: Uint8Array): void;
  closeChild(handle: object): void;
  close(handle: object): void;
}

/**
 * The module built by `npm ci` (src/sources/frame-channel.c); undefined elsewhere than Linux,
 * without a C compiler at install, or with ARGUS_NATIVE=0 or ARGUS_FRAME_CHANNEL=0.
 */
function loadNative(): NativeChannel | undefined {
  if (process.platform !== 'linux' || process.env.ARGUS_FRAME_CHANNEL === '0') return undefined;
  return loadNativeModule<NativeChannel>('frame-channel');
}

const native = loadNative();

/** Whether ffmpeg's frames can come through a FrameChannel here. */
export const FRAME_CHANNELS = native !== undefined;

/**
 * The channel ffmpeg writes its frames into, read by a thread of argus's own: a connected pair
 * of Unix sockets, one end ffmpeg's stdout (`childEnd`, a descriptor for spawn's stdio), the
 * other read a whole frame at a time (recv with MSG_WAITALL, straight into the frame being cut,
 * `FrameReader.target`), so JavaScript hears of each frame once. Through Node's own sockets a
 * 3.1 MB frame came in 34–60 reads, each a callback (and through a child's stdout each a new
 * 64 KB buffer, copied into the frame): at 1080p that cost Node more CPU than the letterbox
 * (README, "Reading straight into the frame").
 *
 * The same contract as FrameSocket: nothing is read before `feed` and `resume`; reading stops
 * at a frame boundary when `hold` says so and goes on at `resume` (what ffmpeg writes meanwhile
 * waits in the socket, and ffmpeg waits on it when it is full); `onEnd` is told once every byte
 * ffmpeg wrote has been read, `onError` of a failed read.
 */
export class FrameChannel {
  /** ffmpeg's end, for spawn's stdio; closed with `spawned` once the child has its own copy. */
  childEnd: number | undefined;
  /** Whether the end of ffmpeg's output was read. */
  ended = false;
  onEnd: () => void = () => {};
  onError: (err: Error) => void = () => {};
  private readonly handle: object;
  private reader: FrameReader | undefined;
  private hold: (() => boolean) | undefined;
  /** A read is on the channel's thread (its target is the frame's unwritten rest). */
  private reading = false;
  private asked = 0;
  private closed = false;

  private constructor(n: NativeChannel) {
    const [handle, childFd] = n.open((bytes, errno) => this.done(bytes, errno));
    this.handle = handle;
    this.childEnd = childFd;
  }

  /** A channel, or undefined where there can be none (see FRAME_CHANNELS, and a failed socketpair: out of descriptors). */
  static open(): FrameChannel | undefined {
    if (!native) return undefined;
    try {
      return new FrameChannel(native);
    } catch {
      return undefined;
    }
  }

  /** The child has its own copy of `childEnd` (after spawn): ours is closed, so that ffmpeg's exit ends the stream. */
  spawned(): void {
    if (this.childEnd === undefined || this.closed) return;
    this.childEnd = undefined;
    native!.closeChild(this.handle);
  }

  /** Where the frames go, from the next `resume` on; `hold` is asked after each frame (true: reading stops until `resume`). */
  feed(reader: FrameReader, hold?: () => boolean): void {
    this.reader = reader;
    this.hold = hold;
  }

  /** Reads (on): at the first frame, or after one `hold` stopped at. */
  resume(): void {
    if (this.reading || this.closed || this.ended || !this.reader) return;
    this.read();
  }

  /** Stops the thread (a read in progress is dropped) and closes both ends. */
  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.childEnd = undefined;
    native!.close(this.handle);
  }

  private read(): void {
    const target = this.reader!.target();
    this.asked = target.length;
    this.reading = true;
    native!.read(this.handle, target);
  }

  private done(bytes: number, errno: number): void {
    this.reading = false;
    if (this.closed) return;
    const reader = this.reader!;
    let go = true;
    // (The bytes of a read that ended early, at the end or an error, are the stream's all the same.)
    if (bytes > 0) go = reader.advance(bytes, this.hold);
    if (this.closed) return;
    if (errno !== 0) {
      let code = `errno ${errno}`;
      try {
        code = getSystemErrorName(-errno);
      } catch {
        // an errno Node does not name
      }
      this.onError(Object.assign(new Error(`reading ffmpeg's frames failed: ${code}`), { code, errno: -errno }));
      return;
    }
    if (bytes < this.asked) {
      this.ended = true;
      this.onEnd();
      return;
    }
    // (A frame delivered by `advance` may have resumed reading already.)
    if (go && !this.reading) this.read();
  }
}
