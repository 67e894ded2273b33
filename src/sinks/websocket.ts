import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { LogFn } from '../core/log.js';
import type { Message, MessageKind } from './message.js';
import type { Sink } from './sink.js';

export interface WebSocketHubOptions {
  /** Clients must present this token (`?token=` or `Authorization: Bearer`). Default: none. */
  token?: string;
  /** Bytes queued for one client before its detection messages are dropped. Default 1 MiB. */
  maxBufferedBytes: number;
  /** Alerts held for a client that is behind; beyond it the client is closed (1013), never silently short of an alert. Default 1000. */
  maxAlertBacklog: number;
  /** Largest client message answered with an error frame; larger frames than 64 KiB close the socket (1009). Default 4096. */
  maxClientMessageBytes: number;
  /** Source ids, announced in the hello message. */
  sources: () => readonly string[];
  log?: LogFn;
}

type SubKind = 'detections' | 'alerts' | 'status' | 'frames';
const KINDS: readonly SubKind[] = ['detections', 'alerts', 'status', 'frames'];
const KIND_OF: Record<MessageKind, SubKind> = { detections: 'detections', alert: 'alerts', status: 'status' };

interface Client {
  ws: WebSocket;
  sources: Set<string> | 'all';
  kinds: Set<SubKind>;
  /** Detection messages dropped since the client was last told. */
  droppedUntold: number;
  droppedTotal: number;
  alertBacklog: string[];
}

/**
 * WebSocket fan-out on the pipeline's HTTP server. Clients subscribe to sources and message
 * kinds with a small JSON protocol (README, "WebSocket API"). Every client has a bounded send
 * buffer: a slow one loses detection messages (counted, and told so) and never slows the
 * pipeline or other clients; alerts wait in a bounded backlog and are never dropped silently.
 */
export class WebSocketHub implements Sink {
  readonly name = 'websocket';
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<Client>();
  private readonly flushTimer: NodeJS.Timeout;
  readonly stats = { connected: 0, refused: 0, dropped: 0, sent: 0 };
  private readonly log: LogFn;

  constructor(private readonly o: WebSocketHubOptions) {
    this.log = o.log ?? (() => {});
    this.wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024, perMessageDeflate: false });
    this.flushTimer = setInterval(() => this.flushBacklogs(), 50);
    this.flushTimer.unref();
  }

  /** Handles an HTTP upgrade request (the server routes `/ws` here). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.o.token && !this.authorised(req)) {
      this.stats.refused++;
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
  }

  private authorised(req: IncomingMessage): boolean {
    const url = new URL(req.url ?? '/', 'http://x');
    const auth = req.headers.authorization;
    const given = url.searchParams.get('token') ?? (auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
    if (!given) return false;
    const a = Buffer.from(given);
    const b = Buffer.from(this.o.token!);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  private accept(ws: WebSocket): void {
    const c: Client = { ws, sources: new Set(), kinds: new Set(), droppedUntold: 0, droppedTotal: 0, alertBacklog: [] };
    this.clients.add(c);
    this.stats.connected = this.clients.size;
    ws.on('message', (data, isBinary) => this.onMessage(c, data, isBinary));
    ws.on('close', () => {
      this.clients.delete(c);
      this.stats.connected = this.clients.size;
    });
    ws.on('error', () => ws.terminate());
    this.sendControl(c, { type: 'hello', version: 1, sources: this.o.sources(), kinds: KINDS });
  }

  private onMessage(c: Client, data: RawData, isBinary: boolean): void {
    const size = Array.isArray(data) ? data.reduce((n, b) => n + b.length, 0) : (data as Buffer | ArrayBuffer).byteLength;
    if (isBinary) return this.error(c, 'bad_message', 'binary frames are not part of the protocol; send JSON text');
    if (size > this.o.maxClientMessageBytes) return this.error(c, 'message_too_large', `messages are limited to ${this.o.maxClientMessageBytes} bytes, got ${size}`);
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
        const sources = msg.sources ?? ['*'];
        const kinds = msg.kinds ?? ['detections', 'alerts'];
        if (!Array.isArray(sources) || !sources.every((s) => typeof s === 'string')) return this.error(c, 'bad_subscribe', '"sources" must be an array of source ids (or ["*"])');
        if (!Array.isArray(kinds) || !kinds.every((k) => KINDS.includes(k as SubKind))) return this.error(c, 'bad_subscribe', `"kinds" must be an array of ${KINDS.map((k) => `"${k}"`).join(', ')}`);
        c.sources = sources.includes('*') ? 'all' : new Set(sources as string[]);
        c.kinds = new Set(kinds as SubKind[]);
        const known = new Set(this.o.sources());
        const unknown = c.sources === 'all' ? [] : [...c.sources].filter((s) => !known.has(s));
        return this.sendControl(c, { type: 'subscribed', sources: c.sources === 'all' ? ['*'] : [...c.sources], kinds: [...c.kinds], unknownSources: unknown });
      }
      case 'unsubscribe':
        c.sources = new Set();
        c.kinds = new Set();
        return this.sendControl(c, { type: 'subscribed', sources: [], kinds: [] });
      case 'ping':
        return this.sendControl(c, { type: 'pong', t: Date.now() });
      default:
        return this.error(c, 'unknown_type', `unknown message type ${JSON.stringify(msg.type)}; expected "subscribe", "unsubscribe" or "ping"`);
    }
  }

  private error(c: Client, code: string, message: string): void {
    this.sendControl(c, { type: 'error', code, message });
  }

  private sendControl(c: Client, body: object): void {
    if (c.ws.readyState === WebSocket.OPEN) c.ws.send(JSON.stringify(body));
  }

  publish(kind: MessageKind, source: string, json: string, _m: Message): void {
    const sub = KIND_OF[kind];
    for (const c of this.clients) {
      if (!c.kinds.has(sub) || (c.sources !== 'all' && !c.sources.has(source))) continue;
      if (c.ws.readyState !== WebSocket.OPEN) continue;
      const behind = c.ws.bufferedAmount > this.o.maxBufferedBytes;
      if (kind === 'alert') {
        if (behind || c.alertBacklog.length > 0) this.queueAlert(c, json);
        else this.send(c, json);
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

  /** True when some client wants `kind` messages of `source` (so the caller can skip making them). */
  wants(kind: SubKind, source: string): boolean {
    for (const c of this.clients) if (c.kinds.has(kind) && (c.sources === 'all' || c.sources.has(source))) return true;
    return false;
  }

  /** Live JPEG frames for the dashboard: best effort, skipped for clients that are behind (not counted as drops). */
  publishFrame(source: string, json: string): void {
    for (const c of this.clients) {
      if (!c.kinds.has('frames') || (c.sources !== 'all' && !c.sources.has(source))) continue;
      if (c.ws.readyState !== WebSocket.OPEN || c.ws.bufferedAmount > this.o.maxBufferedBytes / 2) continue;
      c.ws.send(json);
    }
  }

  private send(c: Client, json: string): void {
    c.ws.send(json);
    this.stats.sent++;
  }

  private tellDropped(c: Client): void {
    this.sendControl(c, { type: 'dropped', count: c.droppedUntold, total: c.droppedTotal, reason: 'client too slow' });
    c.droppedUntold = 0;
  }

  private queueAlert(c: Client, json: string): void {
    if (c.alertBacklog.length >= this.o.maxAlertBacklog) {
      this.log('websocket: client too slow for its alerts; closing it', { backlog: c.alertBacklog.length }, 'warn');
      c.ws.close(1013, 'alert backlog overflow: reconnect');
      setTimeout(() => c.ws.terminate(), 1000).unref();
      this.clients.delete(c);
      return;
    }
    c.alertBacklog.push(json);
  }

  private flushBacklogs(): void {
    for (const c of this.clients) {
      if (c.ws.readyState !== WebSocket.OPEN) continue;
      while (c.alertBacklog.length > 0 && c.ws.bufferedAmount <= this.o.maxBufferedBytes) this.send(c, c.alertBacklog.shift()!);
      if (c.droppedUntold > 0 && c.ws.bufferedAmount <= this.o.maxBufferedBytes) this.tellDropped(c);
    }
  }

  /** Per-client figures, for health and metrics. */
  clientStats(): { dropped: number; backlog: number; buffered: number }[] {
    return [...this.clients].map((c) => ({ dropped: c.droppedTotal, backlog: c.alertBacklog.length, buffered: c.ws.bufferedAmount }));
  }

  async close(): Promise<void> {
    clearInterval(this.flushTimer);
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
