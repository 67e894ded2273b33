import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { ArgusError, ErrorCodes } from '../core/errors.js';

export type Route = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HttpServerOptions {
  host: string;
  port: number;
  routes?: Record<string, Route>;
  /** Upgrade handlers by path (e.g. /ws). */
  upgrades?: Record<string, (req: IncomingMessage, socket: Duplex, head: Buffer) => void>;
}

export interface RunningServer {
  server: Server;
  /** http://host:port */
  url: string;
  port: number;
  /** Adds a route after start (later features register themselves). */
  route(path: string, handler: Route): void;
  close(): Promise<void>;
}

/** The pipeline's HTTP server: small routes and WebSocket upgrades, bound to 127.0.0.1 unless configured otherwise. */
export async function startHttpServer(o: HttpServerOptions): Promise<RunningServer> {
  const routes = new Map(Object.entries(o.routes ?? {}));
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const h = routes.get(path);
    if (!h) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    Promise.resolve(h(req, res)).catch((e: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`error: ${e.message}\n`);
    });
  });
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const h = o.upgrades?.[path];
    if (!h) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    h(req, socket, head);
  });
  server.on('clientError', (_e, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(new ArgusError(ErrorCodes.SERVER_LISTEN, `server: cannot listen on ${o.host}:${o.port} (${e.code ?? e.message})`, { cause: e })),
    );
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
    route: (path, handler) => void routes.set(path, handler),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections?.();
      }),
  };
}
