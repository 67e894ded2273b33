import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
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

/** Makes a server (net, http or https) listen on a loopback port; resolves with the port. */
export async function listening(server: { listen(port: number, host: string, cb: () => void): unknown; address(): unknown }): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

/** A spawn (ffmpegSource's `spawn`) that records each ffmpeg's command line, as `ps` shows it, and runs it. */
export function recordingSpawn(): { spawn: (cmd: string, args: readonly string[], o: SpawnOptions) => ChildProcess; commands: string[] } {
  const commands: string[] = [];
  return {
    commands,
    spawn: (cmd, args, o) => {
      commands.push(args.join(' '));
      return nodeSpawn(cmd, args, o);
    },
  };
}
