import { randomBytes, timingSafeEqual } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import type { FrameReader } from './frame-reader.js';

/**
 * Whether ffmpeg's frames come through a FrameSocket: Linux, whose abstract socket names need
 * no file and vanish with the process. Elsewhere they come through ffmpeg's stdout pipe.
 */
export const FRAME_SOCKETS = process.platform === 'linux';

/** Bytes of the token that tells argus's own connection from another local process's. */
const TOKEN_BYTES = 16;

/** How long the two ends may take to connect. */
const OPEN_TIMEOUT_MS = 5_000;

/**
 * The channel ffmpeg writes its frames into: a connected pair of Unix sockets, one end
 * ffmpeg's stdout (`childEnd`), the other read by argus with net.Socket's `onread`, so each
 * read lands straight in the frame being cut (`FrameReader.target`). Through the stdout node
 * makes for a child (also a socket pair), every read is a new 64 KB buffer, copied into the
 * frame and left to the garbage collector.
 *
 * Used for files read as fast as possible, where it pays: the 1080p30 clip ran at 111–118
 * against 107–110 frames/s (medians of four batches of 4–10 interleaved runs, 2-core VM), with
 * 0.5 ms less of Node's CPU a frame, in 34 reads a frame against 59. Not for live sources:
 * read as a camera delivers them (ffmpeg writing a frame while Node reads it), the reads were
 * smaller, 139 a frame against 62, and the native-rate 1080p30 clip cost Node 1 ms more CPU a
 * frame, with a worse due → emitted p99 in 7 of 8 pairs of runs. The 432p clip and the peak
 * RSS were unchanged either way (README, "Reading straight into the frame").
 *
 * Reading stops at a frame boundary when `hold` says so (the frame after it must wait) and
 * goes on at `resume`; what ffmpeg wrote meanwhile waits in the socket, and ffmpeg waits on
 * it when it is full. `onEnd` is told once every byte ffmpeg wrote has been read.
 */
export class FrameSocket {
  /** ffmpeg's end, for spawn's stdio; let go of with `spawned` once the child has its own copy. */
  childEnd: Socket | undefined;
  /** Whether the end of ffmpeg's output was read. */
  ended = false;
  onEnd: () => void = () => {};
  onError: (err: Error) => void = () => {};
  private socket: Socket | undefined;
  private reader: FrameReader | undefined;
  private hold: (() => boolean) | undefined;
  /**
   * The buffer of the first read: node asks for a buffer when it connects, before the frame
   * size is known; the one byte read into it is moved into the first frame.
   */
  private readonly first = Buffer.alloc(1);

  private constructor() {}

  /**
   * Makes the pair. Rejects (with the system's error) when it cannot within OPEN_TIMEOUT_MS.
   * `listening` (tests) is awaited between the listen and argus's own connection.
   */
  static open(o: { listening?: (name: string) => unknown } = {}): Promise<FrameSocket> {
    const fs = new FrameSocket();
    return new Promise<FrameSocket>((resolve, reject) => {
      const token = randomBytes(TOKEN_BYTES);
      const name = `\0argus-frames-${process.pid}-${randomBytes(8).toString('hex')}`;
      const server = createServer();
      const peers = new Set<Socket>();
      let done = false;
      const finish = (err: Error | undefined, peer?: Socket): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        server.close();
        for (const p of peers) if (p !== peer) p.destroy();
        if (err || !peer) {
          fs.socket?.destroy();
          reject(err ?? new Error('no connection'));
          return;
        }
        fs.childEnd = peer;
        resolve(fs);
      };
      const timer = setTimeout(() => finish(new Error(`the frame socket did not connect within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS);
      // Any local process may connect to an abstract name: only the connection that sends the
      // token is ours (another one's would otherwise receive the camera's frames).
      server.on('connection', (peer) => {
        peers.add(peer);
        peer.on('error', () => peer.destroy());
        const got: Buffer[] = [];
        let n = 0;
        const onData = (b: Buffer): void => {
          got.push(b);
          n += b.length;
          if (n < TOKEN_BYTES) return;
          peer.off('data', onData);
          peer.pause();
          const sent = Buffer.concat(got);
          if (sent.length === TOKEN_BYTES && timingSafeEqual(sent, token)) finish(undefined, peer);
          else peer.destroy();
        };
        peer.on('data', onData);
      });
      server.on('error', (e) => finish(e));
      server.listen(name, async () => {
        try {
          await o.listening?.(name);
        } catch (e) {
          finish(e as Error);
        }
        if (done) return;
        const socket = connect({ path: name, onread: { buffer: () => fs.next(), callback: (n, buf) => fs.got(n, buf) } });
        fs.socket = socket;
        // Nothing is read before `feed`.
        socket.pause();
        socket.on('error', (e) => (done ? fs.onError(e) : finish(e)));
        socket.on('end', () => {
          fs.ended = true;
          fs.onEnd();
        });
        socket.write(token);
      });
    });
  }

  /** The child has its own copy of `childEnd` (after spawn): ours is closed, so that ffmpeg's exit ends the stream. */
  spawned(): void {
    this.childEnd?.destroy();
    this.childEnd = undefined;
  }

  /**
   * Where the frames go, from the next `resume` on; `hold` is asked after each frame, as by
   * FrameReader.advance (true: reading stops until `resume`).
   */
  feed(reader: FrameReader, hold?: () => boolean): void {
    this.reader = reader;
    this.hold = hold;
  }

  /** Reads (on): at the first frame, or after one `hold` stopped at. */
  resume(): void {
    this.socket?.resume();
  }

  destroy(): void {
    this.spawned();
    this.socket?.destroy();
  }

  private next(): Buffer {
    return this.reader ? this.reader.target() : this.first;
  }

  /** `n` bytes were read into `buf`; false stops reading (node's onread). */
  private got(n: number, buf: Uint8Array): boolean {
    const reader = this.reader;
    if (!reader) {
      // Nothing is read before `feed`: a byte lost here would shift every frame after it.
      this.socket?.destroy(new Error('frame bytes came before their size was known'));
      return false;
    }
    if (buf === this.first) reader.target()[0] = this.first[0]!;
    return reader.advance(n, this.hold);
  }
}
