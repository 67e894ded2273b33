import type { Message, MessageKind } from './message.js';

/**
 * A destination for messages. `publish` is called on the frame path: it must return at once,
 * never block, and keep whatever it buffers bounded (dropping and counting detections when
 * full; alerts are never dropped silently).
 */
export interface Sink {
  readonly name: string;
  publish(kind: MessageKind, source: string, json: string, message: Message): void;
  /** Flushes what is buffered (bounded by the sink's own timeout) and releases resources. */
  close(): Promise<void>;
}
