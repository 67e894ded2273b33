import { createServer } from 'node:net';

/** A loopback port nothing listens on (taken and released). */
export async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * A loopback server that records the first bytes of its first connection and closes it: what a
 * client sends first (a TLS handshake starts with a record of type 22, 0x16; Kafka with a request).
 */
export async function firstBytesServer(): Promise<{ port: number; first: Promise<Buffer>; close: () => void }> {
  let hello!: (b: Buffer) => void;
  const first = new Promise<Buffer>((r) => (hello = r));
  const server = createServer((sock) => {
    sock.once('data', (d: Buffer) => {
      hello(d);
      sock.destroy();
    });
    sock.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as { port: number }).port, first, close: () => server.close() };
}
