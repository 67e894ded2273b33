/**
 * Every error the pipeline raises on purpose has a stable code, so operators can grep logs
 * and tests can assert the code rather than the wording.
 */
export const ErrorCodes = {
  /** A pipeline YAML (or a model manifest) failed validation; the message names the field. */
  CONFIG: 'VAP_ERR_CONFIG',
  /** The command line is wrong (an unknown command or option, a missing argument, a flag's value out of range); the message names the flag. Exit status 2. */
  USAGE: 'VAP_ERR_USAGE',
  /** A configuration file could not be read or parsed. */
  CONFIG_FILE: 'VAP_ERR_CONFIG_FILE',
  /** An asset is not in the mirror or cache and could not be downloaded. */
  ASSET_DOWNLOAD: 'VAP_ERR_ASSET_DOWNLOAD',
  /** An asset's sha256 does not match its manifest. */
  ASSET_CHECKSUM: 'VAP_ERR_ASSET_CHECKSUM',
  /** An asset's place in the mirror or the cache is not a file argus can read (a directory, no permission); the message names the path. */
  ASSET_FILE: 'VAP_ERR_ASSET_FILE',
  /** An asset reference names nothing in the manifests. */
  ASSET_UNKNOWN: 'VAP_ERR_ASSET_UNKNOWN',
  /** The model file is missing or ONNX Runtime cannot load it. */
  MODEL_LOAD: 'VAP_ERR_MODEL_LOAD',
  /** The model's input/output shapes do not fit the configured decoder. */
  MODEL_SHAPE: 'VAP_ERR_MODEL_SHAPE',
  /** ONNX Runtime loaded the model but failed to run it (an operator that fails on the input argus feeds). */
  MODEL_RUN: 'VAP_ERR_MODEL_RUN',
  /** A source cannot be opened (missing file, unsupported URL scheme). */
  SOURCE_OPEN: 'VAP_ERR_SOURCE_OPEN',
  /** ffmpeg could not be started right now (out of file descriptors, processes, memory): retried. */
  SOURCE_SPAWN: 'VAP_ERR_SOURCE_SPAWN',
  /** ffmpeg exited with an error before or while delivering frames. */
  SOURCE_EXIT: 'VAP_ERR_SOURCE_EXIT',
  /** ffmpeg did not report the input's video stream (size, rate). */
  SOURCE_PROBE: 'VAP_ERR_SOURCE_PROBE',
  /** A live source's stream ended (the server closed it). */
  SOURCE_EOF: 'VAP_ERR_SOURCE_EOF',
  /** No frame arrived within the stall timeout. */
  SOURCE_STALLED: 'VAP_ERR_SOURCE_STALLED',
  /** No first frame arrived within the start timeout (the source never sends a frame). */
  SOURCE_TIMEOUT: 'VAP_ERR_SOURCE_TIMEOUT',
  /** The input's resolution changed mid-stream (boxes map with the new size from then on). */
  SOURCE_RESIZED: 'VAP_ERR_SOURCE_RESIZED',
  /** A warning, not an error: ffmpeg reported damaged input (a corrupt packet, a decoding error); the frames around it may be damaged or lost (SourceStats.decodeErrors). */
  SOURCE_DAMAGED: 'VAP_ERR_SOURCE_DAMAGED',
  /** A Kafka topic the sink needs does not exist and may not be created; or `argus consume`'s topic does not exist or may not be read. */
  SINK_TOPIC: 'VAP_ERR_SINK_TOPIC',
  /** `argus cameras` / `argus cluster` / `argus consume`: the Kafka brokers did not answer in time (refused, unknown host, silent); the message names them, credentials redacted. */
  KAFKA_UNREACHABLE: 'VAP_ERR_KAFKA_UNREACHABLE',
  /** argus worker: a camera record of the cameras topic was refused, the worker holding `cluster.maxCameras` cameras already (or its key is longer than an id may be); the log line names the key. */
  CAMERA_LIMIT: 'VAP_ERR_CAMERA_LIMIT',
  /** A log line, not a thrown error: an alert did not reach Kafka (parked as too large for it, lost from a full buffer or at shutdown, given to the sink after it closed, or dropped by the outbox's bounds; or, said at start, an alerts topic that is compacted); the line names the alert or how many, and whether the outbox keeps it for the next start. */
  ALERT_UNDELIVERED: 'VAP_ERR_ALERT_UNDELIVERED',
  /** The HTTP/WebSocket server could not listen (port in use, bad host). */
  SERVER_LISTEN: 'VAP_ERR_SERVER_LISTEN',
  /** The alert outbox (the journal on disk) cannot be created, read or locked. */
  OUTBOX: 'VAP_ERR_OUTBOX',
  /** A file sink (JSONL) cannot be opened or written. */
  SINK_FILE: 'VAP_ERR_SINK_FILE',
  /** A connection to a camera's relay on 127.0.0.1 was refused (a warning, the source runs on): another user's, its owner not found in the kernel's socket tables in time, or past the relay's most connections. */
  RELAY_REFUSED: 'VAP_ERR_RELAY_REFUSED',
  /** A signal (SIGINT, SIGTERM) stopped a command while it waited at start on something outside it (an asset download, a named pipe's reader): exit status 130. */
  INTERRUPTED: 'VAP_ERR_INTERRUPTED',
  /** An unexpected exception: argus shut down in order (journal kept) and exits with status 4. */
  INTERNAL: 'VAP_ERR_INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class ArgusError extends Error {
  override readonly name = 'ArgusError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isArgusError(e: unknown, code?: ErrorCode): e is ArgusError {
  return e instanceof ArgusError && (code === undefined || e.code === code);
}

/**
 * The same error with a context before its message (`p.yaml: sources[0].uri: …`): a coded
 * error whose code is one of `codes` gets it; anything else is returned as it is.
 */
export function inContext(e: unknown, context: string, codes: readonly ErrorCode[]): unknown {
  if (!(e instanceof ArgusError) || !codes.includes(e.code)) return e;
  return new ArgusError(e.code, `${context}: ${e.message}`, { cause: e });
}

/** The exit status of an interrupted command (a signal at start, a second signal, VAP_ERR_INTERRUPTED). */
export const INTERRUPTED_STATUS = 130;

/**
 * How argus ends on an error that reached its command line: its code, message and exit status.
 * Coded errors exit 2 (130 for an interrupt); any other is a bug, said as one (VAP_ERR_INTERNAL,
 * exit status 4, as an exception a run did not catch): it was printed as its bare message
 * (`argus: Cannot read properties of undefined (reading 'uri')`) with status 2, "bad input".
 */
export function endingOf(e: unknown): { code: ErrorCode; message: string; status: number } {
  if (isArgusError(e)) return { code: e.code, message: e.message, status: e.code === ErrorCodes.INTERRUPTED ? INTERRUPTED_STATUS : 2 };
  const message = e instanceof Error ? `${e.message} (an error argus does not know: a bug; please report it with this line)` : `${String(e)} (thrown by something argus does not know: a bug; please report it with this line)`;
  return { code: ErrorCodes.INTERNAL, message, status: 4 };
}
