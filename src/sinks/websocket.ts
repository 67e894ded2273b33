import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { randomBytes } from 'node:crypto';
import { ThrottledLog, type LogFn } from '../core/log.js';
import { KeyedTokenBuckets } from '../core/rate.js';
import { addressKey, DATA_HEADERS, OriginPolicy, parseRequestUrl, refuseSocket, requestAuthorized, tokenMatches } from '../core/http.js';
import { withoutSnapshot } from '../analytics/published.js';
import { SCHEMA_REVISION, type AlertMessage, type Message, type MessageKind } from './message.js';
import type { Sink } from './sink.js';

export interface WebSocketHubOptions {
  /** Clients must present this token (`?token=` or `Authorization: Bearer`) or the dashboard's session cookie (checked after the Origin). Default: none. */
  token?: string;
  /** How long the dashboard's session cookie opens /ws after it was issued (server.sessionMaxAgeMs). Default 12 h. */
  sessionMaxAgeMs?: number;
  /** Bytes queued for one client before its detection messages are dropped. Default 1 MiB. */
  maxBufferedBytes: number;
  /** Alerts and status changes held for a client that is behind; beyond it the client is closed (1013), never silently short of one. Default 1000. */
  maxAlertBacklog: number;
  /** The same backlog's bytes (an alert here carries its snapshot's URL, not the picture). Beyond it: closed (1013). Default 16 MiB. */
  maxAlertBacklogBytes?: number;
  /** Largest client message, its fragments together; a larger one closes the socket (1009). Default 4096. */
  maxClientMessageBytes: number;
  /**
   * Browser origins (`scheme://host[:port]`, or "*") allowed besides the server's own. An
   * upgrade without an Origin header (not a browser) is allowed; one with an Origin whose
   * host:port differs from the Host header and is not listed is refused with 403. Default: none.
   */
  allowedOrigins?: readonly string[];
  /** The server's own origins besides its Host's, behind a proxy that rewrites Host (server.publicOrigins): a page of one is admitted as the server's own. Default: none. */
  publicOrigins?: readonly string[];
  /** Clients connected at once; beyond it an upgrade answers 503. Default 64. */
  maxClients?: number;
  /**
   * Clients of one address (IPv4, or an IPv6 /64) connected at once; beyond it a new one is
   * closed at once with 4429 (its reason says why), the ones it holds stay. Default 16: one client
   * with the token held all 64 slots, and every other consumer, the dashboard included, got 503.
   */
  maxClientsPerAddress?: number;
  /**
   * New connections (handshakes) of one address (as maxClientsPerAddress counts it): a token
   * bucket that holds this many and refills at handshakesPerAddressPerSecond; an upgrade that
   * finds it empty answers 429 with Retry-After, before any handshake. Each admitted connection
   * costs a handshake, a session and, resumed, up to a send buffer of held alerts (~8 ms of CPU
   * and 2 MB sent): a client that connected, resumed and closed in a loop kept 40 % of a core busy.
   * Default 32.
   */
  handshakeBurstPerAddress?: number;
  /** The bucket's refill (handshakeBurstPerAddress). Default 2 a second. */
  handshakesPerAddressPerSecond?: number;
  /** The clock of the handshake rate and the message rate, monotonic ms (a step of the system clock moves neither). Default performance.now (tests pass a fake one). */
  now?: () => number;
  /** A ping every this often; a client that has not answered the previous one is terminated. Default 15 000 ms. */
  heartbeatMs?: number;
  /** Messages (and ping frames) one client may send per second; beyond it it is closed with 1008. Default 100. */
  maxMessagesPerSecond?: number;
  /**
   * Alerts' pictures held for `/api/snapshot?id=` (an alert on the WebSocket carries its
   * snapshot's URL, not its bytes), the oldest let go beyond it. Default 32 MiB.
   */
  snapshotCacheBytes?: number;
  /** The latest alerts held (in the WebSocket's form) for a client that resumes after one (subscribe's `after`). Default 2000. */
  replayAlerts?: number;
  /** The same in bytes. Default 16 MiB. */
  replayAlertBytes?: number;
  /** Source ids, announced in the hello message. */
  sources: () => readonly string[];
  /**
   * The run of the pipeline (its messages' `run`), announced in the hello message: a client that
   * reconnects tells a restart of argus (another run: seq from 0 again, the held alerts gone) from
   * a reconnect to the same run. Absent: not said (a hub of no pipeline run: tests, benches).
   */
  run?: string;
  /**
   * This hub's own tag, announced in the hello (`instance`): a client resuming names it, and one
   * that is not this hub's is a restart even when the run is the same (a program that embeds argus
   * and gives its run again). Default: random, one a hub (tests give one to stand for the same hub).
   */
  instance?: string;
  log?: LogFn;
}

type SubKind = 'detections' | 'alerts' | 'status' | 'frames';
const KINDS: readonly SubKind[] = ['detections', 'alerts', 'status', 'frames'];
const KIND_OF: Record<MessageKind, SubKind> = { detections: 'detections', alert: 'alerts', status: 'status' };

interface Client {
  ws: WebSocket;
  /** Its address (addressKey): the unit maxClientsPerAddress bounds. */
  address: string;
  sources: Set<string> | 'all';
  kinds: Set<SubKind>;
  /** Detection messages dropped since the client was last told. */
  droppedUntold: number;
  droppedTotal: number;
  alertBacklog: string[];
  /** UTF-8 bytes of alertBacklog's messages. */
  alertBacklogBytes: number;
  /** Answered the last heartbeat ping. */
  alive: boolean;
  /** The last heartbeat ping's payload, which its pong must carry. */
  pingPayload?: Buffer;
  /** Inbound rate window. */
  windowStart: number;
  windowCount: number;
  /** Messages received in a row while the client's send buffer was over maxBufferedBytes. */
  unreadStrikes: number;
  /** Being closed by the hub: its messages are ignored and nothing more is sent. */
  closing: boolean;
  /**
   * Resuming (subscribe's `after`): the seq of the next held alert to send it, taken from the
   * held alerts as it reads (alerts raised meanwhile included, in order); undefined: live.
   */
  replayNext?: number;
  /** The id of the last alert it was sent while resuming (what a `missed` names, should the held ones pass it by). */
  replayedId?: string;
  /** It resumed once: a connection resumes once (a reconnect's first subscribe). */
  resumed: boolean;
  /**
   * Status changes raised while it resumes, each to be sent before the held alert of seq
   * `before` (after every alert raised before it): sent at once, one overtook the held alerts
   * still to be sent, and a camera showed failed before alerts it raised earlier. Counted in the
   * backlog's bounds.
   */
  replayStatus: { before: number; json: string; bytes: number }[];
  replayStatusBytes: number;
}

/** Messages a client may send in a row while it does not read its replies (send buffer over maxBufferedBytes) before it is closed. */
const UNREAD_STRIKES = 10;
const DEFAULT_MAX_CLIENTS = 64;
export const DEFAULT_MAX_CLIENTS_PER_ADDRESS = 16;
export const DEFAULT_HANDSHAKE_BURST_PER_ADDRESS = 32;
export const DEFAULT_HANDSHAKES_PER_ADDRESS_PER_SECOND = 2;
/** The close code of a client over maxClientsPerAddress (4000–4999: the application's own; 429 as in HTTP's Too Many Requests). */
export const CLOSE_TOO_MANY_FROM_ADDRESS = 4429;
export const DEFAULT_MAX_ALERT_BACKLOG_BYTES = 16 * 1024 * 1024;
const DEFAULT_HEARTBEAT_MS = 15_000;
const DEFAULT_MAX_MESSAGES_PER_SECOND = 100;
export const DEFAULT_SNAPSHOT_CACHE_BYTES = 32 * 1024 * 1024;
export const DEFAULT_REPLAY_ALERTS = 2000;
export const DEFAULT_REPLAY_ALERT_BYTES = 16 * 1024 * 1024;
/**
 * The WebSocket subprotocol argus speaks (`Sec-WebSocket-Protocol`), this JSON protocol's version 1.
 * A client may ask for none (then none is named) or for a list holding it (then it is named in
 * the answer). Before, ws named whatever the client asked first: `new WebSocket(url, 'mqtt')` was
 * told argus spoke MQTT, and a client that asked for a protocol argus does not speak was admitted.
 */
export const WS_SUBPROTOCOL = 'argus.v1';

/** Where the HTTP server answers an alert's picture (routes.ts): `?id=` the alert's id, `&key=` its picture's key. */
export const SNAPSHOT_PATH = '/api/snapshot';

/**
 * An alert's picture on this argus's server (SNAPSHOT_PATH), a path as the WebSocket and Kafka
 * carry it: the alert's id and its picture's key (HeldPicture.key), which the server must hold.
 */
function snapshotPath(alertId: string, key: string): string {
  return `${SNAPSHOT_PATH}?id=${encodeURIComponent(alertId)}&key=${key}`;
}

/**
 * An alert's picture held for SNAPSHOT_PATH. `key`: 96 random bits of its own, in its URL. Keyed
 * by the alert id alone, a URL named whichever picture held that id: a program that embeds argus
 * and gives its run again (RunOptions.run) after a restart raises the same alert ids, and the
 * dashboard's alerts of the first process (reloaded after the reconnect), or a Kafka consumer's
 * `snapshotOmitted.url`, were answered the new process's picture of another event.
 */
interface HeldPicture {
  jpeg: Buffer;
  key: string;
}
/** A run tag as subscribe's `run` names it (sinks/message.ts runTag's form). */
const RUN_TAG = /^[0-9a-z]{1,64}$/;
/** The longest alert id a subscribe's `after` may name. */
const MAX_ALERT_ID_LENGTH = 512;

/** An alert as the hub sent it, for a client that resumes after one. */
interface HeldAlert {
  /** Its place among every alert the hub held (one more each). */
  seq: number;
  id: string;
  source: string;
  json: string;
  bytes: number;
}

/**
 * WebSocket fan-out on the pipeline's HTTP server. Clients subscribe to sources and message
 * kinds with a small JSON protocol (README, "WebSocket API"). Every client has a bounded send
 * buffer: a slow one loses detection messages (counted, and told so) and never slows the
 * pipeline or other clients; alerts and status changes wait in a bounded backlog and are never
 * dropped silently.
 */
export class WebSocketHub implements Sink {
  readonly name = 'websocket';
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<Client>();
  private readonly flushTimer: NodeJS.Timeout;
  readonly stats = {
    connected: 0,
    /** Upgrades refused: bad URL, foreign Origin (403), no or wrong token (401), too many clients (503), too many handshakes of the address (429), over maxClientsPerAddress (4429). */
    refused: 0,
    /** Of those, upgrades refused with 429: their address had no handshake left (handshakeBurstPerAddress). */
    handshakesLimited: 0,
    dropped: 0,
    sent: 0,
    /** Replies (error, pong, subscribed, dropped) not sent because the client's buffer was full. */
    controlSkipped: 0,
    /** Clients closed with 1008 for sending more than maxMessagesPerSecond. */
    rateLimited: 0,
    /** Clients closed with 1008 for sending while not reading their replies. */
    notReading: 0,
    /** Clients terminated for not answering a heartbeat ping. */
    heartbeatTimeouts: 0,
  };
  private readonly log: LogFn;
  /** Events a client can cause at will (a refused origin, a kicked client) are logged at most once per 10 s each. */
  private readonly throttled: ThrottledLog;
  private readonly heartbeatTimer: NodeJS.Timeout;
  private readonly origins: OriginPolicy;
  private readonly maxClients: number;
  private readonly maxPerAddress: number;
  private readonly maxRate: number;
  /** Handshakes by address (handshakeBurstPerAddress, handshakesPerAddressPerSecond). */
  private readonly handshakes: KeyedTokenBuckets;
  private readonly now: () => number;
  /** close() was called: no upgrade is admitted any more. */
  private shuttingDown = false;
  /** This hub's own tag (WebSocketHubOptions.instance): the hello's `instance`. */
  readonly instance: string;
  /** Alerts' pictures by alert id, oldest first (SNAPSHOT_PATH). */
  private readonly pictures = new Map<string, HeldPicture>();
  private picturesBytes = 0;
  /** The latest alerts as sent, oldest first, for `subscribe`'s `after`. */
  private readonly held: HeldAlert[] = [];
  private heldBytes = 0;
  /** The seq the next held alert gets. */
  private heldSeq = 0;

  constructor(private readonly o: WebSocketHubOptions) {
    this.log = o.log ?? (() => {});
    this.throttled = new ThrottledLog(this.log);
    // autoPong off: a ping frame is answered by onPing, which respects the client's buffer.
    // maxPayload: a message over maxClientMessageBytes closes the socket (1009), fragments included:
    // ws holds each fragment of a message until its last, as its own Buffer (about 200 bytes for a
    // 1-byte fragment), so 64 KiB of 1-byte fragments held 13 MB per client.
    // handleProtocols: WS_SUBPROTOCOL or none (handleUpgrade refused any other list before).
    this.wss = new WebSocketServer({ noServer: true, maxPayload: o.maxClientMessageBytes, perMessageDeflate: false, autoPong: false, handleProtocols: (asked) => (asked.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false) });
    // A handshake ws itself refuses (a missing key, another version, a method but GET): said as
    // the server's other errors are. ws answered it as text/html, without the data headers.
    this.wss.on('wsClientError', (err: Error, socket: Duplex) => {
      const method = err.message === 'Invalid HTTP method';
      const headers: Record<string, string> = method ? { Allow: 'GET' } : /Sec-WebSocket-Version/.test(err.message) ? { 'Sec-WebSocket-Version': '13, 8' } : {};
      this.refuse(socket, method ? 405 : 400, method ? 'Method Not Allowed' : 'Bad Request', headers, `${method ? 'method not allowed' : 'bad request'}: ${err.message} (a WebSocket handshake, RFC 6455: GET with Sec-WebSocket-Key and Sec-WebSocket-Version: 13)\n`);
    });
    this.flushTimer = setInterval(() => this.flushBacklogs(), 50);
    this.flushTimer.unref();
    this.heartbeatTimer = setInterval(() => this.heartbeat(), o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS);
    this.heartbeatTimer.unref();
    this.origins = new OriginPolicy(o.allowedOrigins, o.publicOrigins);
    this.maxClients = o.maxClients ?? DEFAULT_MAX_CLIENTS;
    this.maxPerAddress = o.maxClientsPerAddress ?? DEFAULT_MAX_CLIENTS_PER_ADDRESS;
    this.maxRate = o.maxMessagesPerSecond ?? DEFAULT_MAX_MESSAGES_PER_SECOND;
    this.handshakes = new KeyedTokenBuckets(o.handshakeBurstPerAddress ?? DEFAULT_HANDSHAKE_BURST_PER_ADDRESS, o.handshakesPerAddressPerSecond ?? DEFAULT_HANDSHAKES_PER_ADDRESS_PER_SECOND);
    this.now = o.now ?? (() => performance.now());
    this.instance = o.instance ?? randomBytes(8).toString('hex');
  }

  /** Handles an HTTP upgrade request (the server routes `/ws` here). Never throws. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    try {
      const url = parseRequestUrl(req.url);
      if (!url) return this.refuse(socket, 400, 'Bad Request', {}, 'bad request: the URL cannot be parsed\n');
      const no = this.refusal(req, url);
      if (no) {
        if (no.status === 403) this.throttled.log('origin', 'websocket: upgrade from a foreign origin refused', { origin: String(req.headers.origin).slice(0, 200) }, 'warn');
        return this.refuse(socket, no.status, no.reason, no.headers, no.body);
      }
      // Subprotocols asked for, none of them argus's: 400 before the handshake (a browser's
      // WebSocket fails on its own when it asked for one and none is named; a client that is
      // not a browser reads why in the reason phrase and the header naming the one spoken).
      // A malformed list is refused here too: it passed, took one of the address's handshakes, and
      // ws answered a bare 400 (and 429 once the client's retries had spent them).
      const asked = subprotocolAsked(req.headers['sec-websocket-protocol']);
      if (asked !== 'none' && asked !== 'argus') {
        // What was asked is not logged: a client that passes its token as a subprotocol (the one
        // header a browser's WebSocket sets) would have it written to the log.
        this.throttled.log('subprotocol', `websocket: an upgrade asking only for subprotocols other than ${WS_SUBPROTOCOL}, or with a malformed Sec-WebSocket-Protocol, was refused with 400`, {}, 'warn');
        const why = asked === 'malformed' ? 'malformed Sec-WebSocket-Protocol (a comma-separated list of tokens, each once)' : 'WebSocket subprotocol not spoken here';
        return this.refuse(socket, 400, `Bad Request: ${why}; ask for ${WS_SUBPROTOCOL} or none`, { 'Sec-WebSocket-Protocol': WS_SUBPROTOCOL }, `bad request: ${why}; ask for ${WS_SUBPROTOCOL} or none\n`);
      }
      const address = addressKey(req.socket.remoteAddress);
      // The address's handshake rate before any handshake: one that connects and closes in a loop
      // (or holds its maxClientsPerAddress and loops one more) costs a 429, not a handshake, a
      // session and a resume each time.
      const wait = this.handshakes.take(address, this.now());
      if (wait > 0) {
        this.stats.handshakesLimited++;
        this.throttled.log('handshake rate', 'websocket: an address opened connections faster than handshakesPerAddressPerSecond; refused with 429', { address, burst: this.handshakes.burst, perSecond: this.handshakes.perSecond }, 'warn');
        return this.refuse(socket, 429, 'Too Many Requests', { 'Retry-After': String(Math.ceil(wait / 1000)) }, 'too many requests: this address opened connections faster than sinks.websocket.handshakesPerAddressPerSecond\n');
      }
      // One address at its bound first: it is told so (a browser sees no HTTP status of a refused
      // handshake, only a close code), and the slots stay open to the others.
      if (this.openClients(address) >= this.maxPerAddress) {
        this.stats.refused++;
        this.throttled.log('per address', 'websocket: a client over maxClientsPerAddress was closed', { address, max: this.maxPerAddress }, 'warn');
        this.wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on('error', () => ws.terminate());
          ws.close(CLOSE_TOO_MANY_FROM_ADDRESS, `too many connections from this address (maxClientsPerAddress ${this.maxPerAddress})`);
          setTimeout(() => ws.terminate(), 1000).unref();
        });
        return;
      }
      if (this.openClients() >= this.maxClients) return this.refuse(socket, 503, 'Service Unavailable', { 'Retry-After': '5' }, `service unavailable: ${this.maxClients} clients are connected (sinks.websocket.maxClients)\n`);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, address));
    } catch (e) {
      this.log('websocket: upgrade failed', { error: String((e as Error)?.message ?? e) }, 'error');
      this.refuse(socket, 500, 'Internal Server Error', {}, 'internal error\n');
    }
  }

  /**
   * Why a connection of `req` is refused before any handshake, or undefined: closing (503), a
   * foreign Origin (403), no or a wrong token (401). A plain request to /ws gets the same before
   * its 426 (server/http.ts, UpgradeRoute.refusal).
   */
  refusal(req: IncomingMessage, url: URL): { status: number; reason: string; headers?: Record<string, string>; body: string } | undefined {
    // Closing: a client admitted now was never closed (close() closes those it found), and its
    // socket held the server's close, and so the process's exit, for as long as it stayed.
    if (this.shuttingDown) return { status: 503, reason: 'Service Unavailable', body: 'service unavailable: the server is closing\n' };
    const origin = this.origins.of(req);
    if (!origin) return { status: 403, reason: 'Forbidden', body: 'forbidden: a page of this origin may not open /ws (server.allowedOrigins, server.publicOrigins)\n' };
    // The session cookie from the server's own origin only (or no browser's): a browser sends it
    // from every page of the same site (another port, another subdomain), and allowedOrigins
    // admits such a page (with "*", any): it opened the stream with the operator's cookie.
    if (this.o.token && !requestAuthorized(req, url, this.o.token, origin !== 'allowed', { maxAgeMs: this.o.sessionMaxAgeMs })) return { status: 401, reason: 'Unauthorized', headers: { 'WWW-Authenticate': 'Bearer realm="argus"' }, body: 'unauthorized: send Authorization: Bearer <token> or ?token=<token>\n' };
    return undefined;
  }

  /** Said as the server's other errors are (a body that says why, DATA_HEADERS): a bare status line before. */
  private refuse(socket: Duplex, status: number, reason: string, headers: Record<string, string> | undefined, body: string): void {
    this.stats.refused++;
    refuseSocket(socket, status, reason, { ...DATA_HEADERS, ...headers }, body);
  }

  /**
   * The origin of another site's page that allowedOrigins lets load an alert's picture
   * (SNAPSHOT_PATH, whose URL the alerts it receives carry), or undefined (core/http.ts,
   * OriginPolicy.crossOrigin).
   */
  crossOrigin(req: IncomingMessage): string | undefined {
    return this.origins.crossOrigin(req);
  }

  private accept(ws: WebSocket, address: string): void {
    const c: Client = {
      ws,
      address,
      sources: new Set(),
      kinds: new Set(),
      droppedUntold: 0,
      droppedTotal: 0,
      alertBacklog: [],
      alertBacklogBytes: 0,
      alive: true,
      windowStart: this.now(),
      windowCount: 0,
      unreadStrikes: 0,
      closing: false,
      resumed: false,
      replayStatus: [],
      replayStatusBytes: 0,
    };
    this.clients.add(c);
    this.stats.connected = this.clients.size;
    ws.on('message', (data, isBinary) => {
      try {
        this.onMessage(c, data, isBinary);
      } catch (e) {
        this.log('websocket: a client message failed', { error: String((e as Error)?.message ?? e) }, 'error');
        this.kick(c, 1011, 'internal error');
      }
    });
    ws.on('ping', (data) => this.onPing(c, data));
    // Only the answer to the last heartbeat's ping (its random payload) proves the client reads;
    // every pong counts against the message rate like a ping.
    ws.on('pong', (data) => {
      if (this.inbound(c) && c.pingPayload && data.equals(c.pingPayload)) c.alive = true;
    });
    ws.on('close', () => {
      this.clients.delete(c);
      this.stats.connected = this.clients.size;
    });
    ws.on('error', () => ws.terminate());
    // latestAlert: where a client that has had no alert yet resumes from after a reconnect (subscribe's `after`).
    const latestAlert = this.held.length > 0 ? this.held[this.held.length - 1].id : null;
    // schemaRevision: the message schema's revision (sinks/message.ts, SCHEMA_REVISION), which a client validating with its own copy compares with its copy's.
    this.sendControl(c, { type: 'hello', version: 1, schemaRevision: SCHEMA_REVISION, ...(this.o.run !== undefined ? { run: this.o.run } : {}), instance: this.instance, latestAlert, sources: this.o.sources(), kinds: KINDS, maxMessageBytes: this.o.maxClientMessageBytes });
  }

  /**
   * Every inbound message or ping passes here first: false when the client is being closed or
   * is closed now — for sending more than maxMessagesPerSecond, or for sending while it does
   * not read its replies.
   */
  private inbound(c: Client): boolean {
    if (c.closing) return false;
    // The monotonic clock: on Date.now, a system clock stepped back an hour began no new window
    // for that hour, and closed every client with 1008 after maxMessagesPerSecond messages.
    const t = this.now();
    if (t - c.windowStart >= 1000) {
      c.windowStart = t;
      c.windowCount = 0;
    }
    if (++c.windowCount > this.maxRate) {
      this.stats.rateLimited++;
      this.kick(c, 1008, `more than ${this.maxRate} messages per second`);
      return false;
    }
    if (c.ws.bufferedAmount > this.o.maxBufferedBytes) {
      if (++c.unreadStrikes > UNREAD_STRIKES) {
        this.stats.notReading++;
        this.kick(c, 1008, 'not reading its replies');
        return false;
      }
    } else c.unreadStrikes = 0;
    return true;
  }

  private onPing(c: Client, data: Buffer): void {
    if (!this.inbound(c)) return;
    if (c.ws.readyState !== WebSocket.OPEN) return;
    if (c.ws.bufferedAmount > this.o.maxBufferedBytes) {
      this.stats.controlSkipped++;
      return;
    }
    c.ws.pong(data);
  }

  /** Closes a client the hub gave up on; it is cut off after 1 s if the close handshake does not finish (it may not be reading). */
  private kick(c: Client, code: number, reason: string): void {
    if (c.closing) return;
    c.closing = true;
    c.alertBacklog.length = 0;
    c.alertBacklogBytes = 0;
    c.replayStatus.length = 0;
    c.replayStatusBytes = 0;
    this.throttled.log(`kick ${code} ${reason.replace(/\d+/g, 'N')}`, 'websocket: closing a client', { code, reason }, 'warn');
    try {
      c.ws.close(code, reason);
    } catch {
      c.ws.terminate();
    }
    setTimeout(() => c.ws.terminate(), 1000).unref();
  }

  private heartbeat(): void {
    this.handshakes.prune(this.now());
    for (const c of this.clients) {
      if (c.ws.readyState !== WebSocket.OPEN) continue;
      if (!c.alive) {
        this.stats.heartbeatTimeouts++;
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      c.pingPayload = randomBytes(8);
      try {
        c.ws.ping(c.pingPayload);
      } catch {
        c.ws.terminate();
      }
    }
  }

  private onMessage(c: Client, data: RawData, isBinary: boolean): void {
    if (!this.inbound(c)) return;
    if (isBinary) return this.error(c, 'bad_message', 'binary frames are not part of the protocol; send JSON text');
    let m: unknown;
    try {
      m = JSON.parse(data.toString());
    } catch {
      return this.error(c, 'bad_json', 'message is not valid JSON');
    }
    if (!m || typeof m !== 'object' || Array.isArray(m)) return this.error(c, 'bad_message', 'message must be a JSON object with a "type"');
    const msg = m as Record<string, unknown>;
    switch (msg.type) {
      case 'subscribe': {
        // Absent means the default; null is not an array, and is refused like any other non-array.
        const sources = msg.sources === undefined ? ['*'] : msg.sources;
        const kinds = msg.kinds === undefined ? ['detections', 'alerts'] : msg.kinds;
        if (!Array.isArray(sources) || !sources.every((s) => typeof s === 'string')) return this.error(c, 'bad_subscribe', '"sources" must be an array of source ids (or ["*"])');
        if (!Array.isArray(kinds) || !kinds.every((k) => KINDS.includes(k as SubKind))) return this.error(c, 'bad_subscribe', `"kinds" must be an array of ${KINDS.map((k) => `"${k}"`).join(', ')}`);
        const after = msg.after;
        if (after !== undefined && (typeof after !== 'string' || after.length === 0 || after.length > MAX_ALERT_ID_LENGTH)) return this.error(c, 'bad_subscribe', `"after" must be the id of the last alert received (a string of at most ${MAX_ALERT_ID_LENGTH} characters)`);
        const run = msg.run;
        if (run !== undefined && (typeof run !== 'string' || !RUN_TAG.test(run))) return this.error(c, 'bad_subscribe', '"run" must be the run of the last hello (1 to 64 of 0-9 and a-z)');
        const instance = msg.instance;
        if (instance !== undefined && (typeof instance !== 'string' || !RUN_TAG.test(instance))) return this.error(c, 'bad_subscribe', '"instance" must be the instance of the last hello (1 to 64 of 0-9 and a-z)');
        const resumes = after !== undefined || run !== undefined || instance !== undefined;
        // Once per connection: each resume sends up to a send buffer of held alerts, so a 100-byte
        // subscribe repeated at the message rate had the hub send ~100 MB a second to one client.
        if (resumes && c.resumed) return this.error(c, 'bad_subscribe', '"after", "run" and "instance" are taken once per connection (a reconnect\'s first subscribe); subscribe without them');
        c.sources = sources.includes('*') ? 'all' : new Set(sources as string[]);
        c.kinds = new Set(kinds as SubKind[]);
        // A resume in progress goes on, for the sources now subscribed, while alerts are: ended,
        // the held alerts not yet sent (a resume longer than the send buffer is paced by the
        // client's reading) were never sent, nor said missed, and a client that subscribed again
        // at once (another source added) lost a thousand of them. Without alerts it ends.
        if (!c.kinds.has('alerts')) this.endResume(c);
        const known = new Set(this.o.sources());
        const unknown = c.sources === 'all' ? [] : [...c.sources].filter((s) => !known.has(s));
        this.sendControl(c, { type: 'subscribed', sources: c.sources === 'all' ? ['*'] : [...c.sources], kinds: [...c.kinds], unknownSources: unknown });
        if (resumes && c.kinds.has('alerts')) this.resume(c, (after as string | undefined) ?? null, run as string | undefined, instance as string | undefined);
        return;
      }
      case 'unsubscribe':
        c.sources = new Set();
        c.kinds = new Set();
        this.endResume(c);
        return void this.sendControl(c, { type: 'subscribed', sources: [], kinds: [], unknownSources: [] });
      case 'ping':
        return void this.sendControl(c, { type: 'pong', t: Date.now() });
      default:
        return this.error(c, 'unknown_type', `unknown message type ${JSON.stringify(msg.type)?.slice(0, 64)}; expected "subscribe", "unsubscribe" or "ping"`);
    }
  }

  private error(c: Client, code: string, message: string): void {
    this.sendControl(c, { type: 'error', code, message });
  }

  /** Replies and notices: never queued behind a full buffer (a client that does not read must not make the server hold its replies). */
  private sendControl(c: Client, body: object): boolean {
    if (c.closing || c.ws.readyState !== WebSocket.OPEN) return false;
    if (c.ws.bufferedAmount > this.o.maxBufferedBytes) {
      this.stats.controlSkipped++;
      return false;
    }
    c.ws.send(JSON.stringify(body));
    return true;
  }

  publish(kind: MessageKind, source: string, json: string, m: Message): void {
    const sub = KIND_OF[kind];
    let held = false;
    if (kind === 'alert') [json, held] = this.holdAlert(source, json, m as AlertMessage);
    for (const c of this.clients) {
      if (!c.kinds.has(sub) || (c.sources !== 'all' && !c.sources.has(source))) continue;
      if (c.closing || c.ws.readyState !== WebSocket.OPEN) continue;
      // A client resuming takes this alert from the held ones, after those before it.
      if (held && c.replayNext !== undefined) {
        this.replay(c);
        continue;
      }
      // A status change while it resumes: after the held alerts raised before it.
      if (kind === 'status' && c.replayNext !== undefined) {
        this.holdStatus(c, json);
        continue;
      }
      const behind = c.ws.bufferedAmount > this.o.maxBufferedBytes;
      // Alerts and status changes are never dropped: a lost status leaves the client showing a
      // camera's old state for good (a failed camera as streaming). Both share the backlog, so
      // they keep their order; status changes are few (one per reconnect attempt at most).
      if (kind === 'alert' || kind === 'status') {
        this.deliverInOrder(c, json);
        continue;
      }
      if (behind) {
        c.droppedUntold++;
        c.droppedTotal++;
        this.stats.dropped++;
        continue;
      }
      if (c.droppedUntold > 0) this.tellDropped(c);
      this.send(c, json);
    }
  }

  /** An alert or status change (or a notice about them): sent, or queued behind those before it; never dropped. */
  private deliverInOrder(c: Client, json: string): void {
    if (c.ws.bufferedAmount > this.o.maxBufferedBytes || c.alertBacklog.length > 0) this.queueAlert(c, json);
    else this.send(c, json);
  }

  /**
   * An alert in the WebSocket's form, held for clients that resume after an earlier one. Its
   * snapshot is sent as a URL (SNAPSHOT_PATH), its bytes held apart: embedded (~200 KB in base64)
   * an alert filled a slow link's 16 MiB backlog in ~80 alerts, and the client was closed (a
   * remote dashboard lost every alert from then until it reconnected). As a URL it is ~1 KB, and
   * the picture is fetched when it is shown. Kafka and the JSON lines keep the embedded form.
   */
  private holdAlert(source: string, json: string, m: AlertMessage | undefined): [json: string, held: boolean] {
    const a = m?.alert;
    if (!a || typeof a.id !== 'string') return [json, false];
    const snap = a.snapshot;
    if (snap && typeof snap.data === 'string') {
      // Its size from the base64 text: one too large for the cache is never decoded.
      const size = Buffer.byteLength(snap.data, 'base64');
      const max = this.o.snapshotCacheBytes ?? DEFAULT_SNAPSHOT_CACHE_BYTES;
      // A picture over the whole cache is not held: a URL to it answered 404 from the start (a
      // dashboard showed "no longer held" for a picture it never could have had). The alert goes
      // without it, saying why (snapshotOmitted too-large, as Kafka's). The JSON lines embed it;
      // Kafka only within its own limit (1 MB by default, under the cache's 32 MiB), and the
      // detail said it did, which sent a consumer to a Kafka message without it.
      if (size > max) {
        const detail = `the picture (${size} bytes) is larger than the WebSocket holds for /api/snapshot (sinks.websocket.snapshotCacheBytes, ${max}): left out here; the JSON lines, where configured, embed it, and Kafka if the alert with it is within sinks.kafka.maxMessageBytes`;
        json = JSON.stringify({ ...m, alert: withoutSnapshot(a, { reason: 'too-large', detail }) });
      } else {
        const picture = Buffer.from(snap.data, 'base64');
        const key = randomBytes(12).toString('base64url');
        const before = this.pictures.get(a.id);
        if (before) this.picturesBytes -= before.jpeg.length;
        this.pictures.delete(a.id);
        this.pictures.set(a.id, { jpeg: picture, key });
        this.picturesBytes += picture.length;
        for (const [id, p] of this.pictures) {
          if (this.picturesBytes <= max) break;
          this.pictures.delete(id);
          this.picturesBytes -= p.jpeg.length;
        }
        const { data: _data, ...rest } = snap;
        json = JSON.stringify({ ...m, alert: { ...a, snapshot: { ...rest, url: snapshotPath(a.id, key) } } });
      }
    }
    const bytes = Buffer.byteLength(json);
    this.held.push({ seq: this.heldSeq++, id: a.id, source, json, bytes });
    this.heldBytes += bytes;
    const maxN = this.o.replayAlerts ?? DEFAULT_REPLAY_ALERTS;
    const maxB = this.o.replayAlertBytes ?? DEFAULT_REPLAY_ALERT_BYTES;
    let drop = 0;
    while (drop < this.held.length - 1 && (this.held.length - drop > maxN || this.heldBytes > maxB)) this.heldBytes -= this.held[drop++].bytes;
    if (drop > 0) this.held.splice(0, drop);
    return [json, true];
  }

  /** The JPEG of an alert's snapshot while the hub holds it and `key` is its picture's (SNAPSHOT_PATH's `key`), else undefined. */
  snapshot(alertId: string, key: string): Buffer | undefined {
    const p = this.pictures.get(alertId);
    // In constant time (tokenMatches: both hashed): `===` stops at the first byte that differs,
    // and the time of a refused guess told how much of the key it had right.
    return p !== undefined && tokenMatches(key, p.key) ? p.jpeg : undefined;
  }

  /** Where this argus's server answers an alert's picture (SNAPSHOT_PATH) while the hub holds it, else undefined. */
  snapshotUrl(alertId: string): string | undefined {
    const p = this.pictures.get(alertId);
    return p === undefined ? undefined : snapshotPath(alertId, p.key);
  }

  /**
   * A client resuming after alert `after` (the last it received, before a reconnect): the held
   * alerts after it of its sources, in order, then live ones. When `after` is no longer held (or
   * never was), it is told first, with a `missed` message naming the oldest held alert (those
   * between are not here: Kafka and the JSON lines have them), and every held alert follows.
   */
  private resume(c: Client, after: string | null, run?: string, instance?: string): void {
    c.resumed = true;
    // Another run: argus restarted since the client's last alert. Its `after` is not looked up
    // here: alert ids are the run's own, and one that came again (a run given again by a program
    // that embeds argus) resumed after the new run's alert of that id, the alerts before it lost.
    // Another hub of the same run (such a program started again with its run): the same, though
    // the runs agree; the ids came again all the same.
    const restarted = (run !== undefined && this.o.run !== undefined && run !== this.o.run) || (instance !== undefined && instance !== this.instance);
    let last = -1;
    if (!restarted && after !== null) {
      last = this.held.length - 1;
      while (last >= 0 && this.held[last].id !== after) last--;
    }
    const first = this.held[0]?.seq ?? this.heldSeq;
    // Without `after` (none of this run's alerts received), every alert of the run is sent: one let go is missed.
    if (restarted || (after !== null ? last < 0 : first > 0)) this.tellMissed(c, after, restarted);
    c.replayNext = last < 0 ? first : this.held[last].seq + 1;
    c.replayedId = after ?? undefined;
    this.replay(c);
  }

  /**
   * `missed`: alerts of the client's sources raised after `after` and before `oldest` are not
   * sent. `oldest` is the oldest held alert of its sources, the next it is sent (null: none is
   * held): the oldest of all, another source's for a client of some sources, named an alert it
   * never got, and it could not tell which of its own came before it.
   */
  private tellMissed(c: Client, after: string | null, restarted = false): void {
    const oldest = this.held.find((h) => c.sources === 'all' || c.sources.has(h.source));
    this.deliverInOrder(c, JSON.stringify({
      type: 'missed',
      after,
      oldest: oldest?.id ?? null,
      held: this.held.length,
      ...(restarted ? { restarted: true, run: this.o.run, instance: this.instance } : {}),
      reason: restarted
        ? `argus restarted (this is run ${this.o.run}, instance ${this.instance}, not the client's): alerts its last start raised after "after" (null: after the client connected), and this start's before "oldest" (the next one sent; null: none of these sources is held), are not sent (they are on Kafka and in the JSON lines, where configured)`
        : after === null
          ? 'alerts of this run raised before "oldest" (the next one sent; null: none of these sources is held) are no longer held here and are not sent (they are on Kafka and in the JSON lines, where configured)'
          : 'the alert named in "after" is no longer held here: alerts raised after it and before "oldest" (the next one sent; null: none of these sources is held) are not sent again (they are on Kafka and in the JSON lines, where configured)',
    }));
  }

  /**
   * Sends a resuming client held alerts while it reads: only while its send buffer and backlog are
   * empty, so a resume longer than the backlog is paced by the client (queued at once, it
   * overflowed the backlog: closed with 1013 mid-resume, and again at each reconnect). Called
   * again as its buffer drains (flushBacklogs) and as alerts are raised. Once it has them all, it is live.
   */
  private replay(c: Client): void {
    while (c.replayNext !== undefined && !c.closing && c.alertBacklog.length === 0 && c.ws.bufferedAmount <= this.o.maxBufferedBytes) {
      const first = this.held[0]?.seq ?? this.heldSeq;
      if (c.replayNext < first) {
        // It read so slowly that the held alerts passed it by.
        this.tellMissed(c, c.replayedId ?? null);
        c.replayNext = first;
        continue;
      }
      const status = c.replayStatus[0];
      if (status && status.before <= c.replayNext) {
        c.replayStatus.shift();
        c.replayStatusBytes -= status.bytes;
        this.send(c, status.json);
        continue;
      }
      const h = this.held[c.replayNext - first];
      if (!h) {
        this.endResume(c); // up to date: live from now on
        break;
      }
      c.replayNext++;
      if (c.sources !== 'all' && !c.sources.has(h.source)) continue;
      c.replayedId = h.id;
      this.send(c, h.json);
    }
  }

  /** A status change raised while `c` resumes: sent (replay) once the held alerts raised before it are. */
  private holdStatus(c: Client, json: string): void {
    const bytes = Buffer.byteLength(json);
    if (this.backlogOverflows(c, bytes)) return;
    c.replayStatus.push({ before: this.heldSeq, json, bytes });
    c.replayStatusBytes += bytes;
    this.replay(c);
  }

  /** The resume ends (up to date, or a subscribe replaced it): status changes it held back go out, in order, as any would. */
  private endResume(c: Client): void {
    c.replayNext = c.replayedId = undefined;
    const held = c.replayStatus;
    if (held.length === 0) return;
    c.replayStatus = [];
    c.replayStatusBytes = 0;
    for (const s of held) this.deliverInOrder(c, s.json);
  }

  /** True when `bytes` more would overflow the client's backlog (maxAlertBacklog, maxAlertBacklogBytes, status changes held back by a resume included): it is closed (1013). */
  private backlogOverflows(c: Client, bytes: number): boolean {
    const n = c.alertBacklog.length + c.replayStatus.length;
    const held = c.alertBacklogBytes + c.replayStatusBytes;
    if (n < this.o.maxAlertBacklog && held + bytes <= (this.o.maxAlertBacklogBytes ?? DEFAULT_MAX_ALERT_BACKLOG_BYTES)) return false;
    this.kick(c, 1013, `backlog overflow (${n} alerts and status changes, ${held} bytes): reconnect, subscribe with "after"`);
    return true;
  }

  /** True when some client wants `kind` messages of `source` (so the caller can skip making them). */
  wants(kind: SubKind, source: string): boolean {
    for (const c of this.clients) if (!c.closing && c.kinds.has(kind) && (c.sources === 'all' || c.sources.has(source))) return true;
    return false;
  }

  /** Clients not being closed (of `address` only, when given): a kicked one (closing for up to 1 s) does not hold a slot another may need. */
  private openClients(address?: string): number {
    let n = 0;
    for (const c of this.clients) if (!c.closing && (address === undefined || c.address === address)) n++;
    return n;
  }

  /** Live JPEG frames for the dashboard: best effort, skipped for clients that are behind (not counted as drops). */
  publishFrame(source: string, json: string): void {
    for (const c of this.clients) {
      if (!c.kinds.has('frames') || (c.sources !== 'all' && !c.sources.has(source))) continue;
      if (c.closing || c.ws.readyState !== WebSocket.OPEN || c.ws.bufferedAmount > this.o.maxBufferedBytes / 2) continue;
      c.ws.send(json);
    }
  }

  private send(c: Client, json: string): void {
    c.ws.send(json);
    this.stats.sent++;
  }

  private tellDropped(c: Client): void {
    if (this.sendControl(c, { type: 'dropped', count: c.droppedUntold, total: c.droppedTotal, reason: 'client too slow' })) c.droppedUntold = 0;
  }

  private queueAlert(c: Client, json: string): void {
    const bytes = Buffer.byteLength(json);
    if (this.backlogOverflows(c, bytes)) return;
    c.alertBacklog.push(json);
    c.alertBacklogBytes += bytes;
  }

  private flushBacklogs(): void {
    for (const c of this.clients) {
      if (c.closing || c.ws.readyState !== WebSocket.OPEN) continue;
      while (c.alertBacklog.length > 0 && c.ws.bufferedAmount <= this.o.maxBufferedBytes) {
        const json = c.alertBacklog.shift()!;
        c.alertBacklogBytes -= Buffer.byteLength(json);
        this.send(c, json);
      }
      if (c.droppedUntold > 0 && c.ws.bufferedAmount <= this.o.maxBufferedBytes) this.tellDropped(c);
      if (c.replayNext !== undefined) this.replay(c);
    }
  }

  /** Per-client figures, for health and metrics. */
  clientStats(): { dropped: number; backlog: number; buffered: number }[] {
    return [...this.clients].map((c) => ({ dropped: c.droppedTotal, backlog: c.alertBacklog.length, buffered: c.ws.bufferedAmount }));
  }

  async close(): Promise<void> {
    this.shuttingDown = true;
    clearInterval(this.flushTimer);
    clearInterval(this.heartbeatTimer);
    this.flushBacklogs();
    for (const c of this.clients) c.ws.close(1001, 'pipeline shutting down');
    await new Promise<void>((r) => {
      const t = setTimeout(() => {
        for (const c of this.clients) c.ws.terminate();
        r();
      }, 2000);
      t.unref();
      if (this.clients.size === 0) {
        clearTimeout(t);
        r();
      } else {
        let open = this.clients.size;
        for (const c of this.clients) c.ws.once('close', () => --open === 0 && (clearTimeout(t), r()));
      }
    });
    this.wss.close();
  }
}

/** A token (RFC 9110 5.6.2), what a subprotocol's name is. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * What an upgrade's `Sec-WebSocket-Protocol` asks for (absent, or a comma-separated list,
 * possibly in several headers, which Node joins): `none`, a list holding WS_SUBPROTOCOL
 * (`argus`), one without it (`other`), or one ws would refuse (`malformed`: an empty item, an
 * item that is not a token, an item twice), as ws parses it (whitespace around items allowed).
 */
function subprotocolAsked(header: string | string[] | undefined): 'none' | 'argus' | 'other' | 'malformed' {
  if (header === undefined) return 'none';
  const list = (Array.isArray(header) ? header.join(',') : header).split(',').map((p) => p.replace(/^[ \t]+|[ \t]+$/g, ''));
  if (list.some((p) => !TOKEN.test(p)) || new Set(list).size !== list.length) return 'malformed';
  return list.includes(WS_SUBPROTOCOL) ? 'argus' : 'other';
}
