import { createServer, type Server } from 'node:net';

/**
 * The fixed ports of the tests (the shared broker 19092, the fault tests' brokers 19192, 19292,
 * 19492, the RTSP servers 18554, 18574, and each one's neighbours) are these plus an offset of
 * the run's own, so that two test runs from different checkouts at once never share a broker or
 * an RTSP server (one run's fault test would kill the other's broker). Global setup chooses the
 * offset by holding a lock port (LOCK_PORT + offset) for the whole run, and hands it to the test
 * files in ARGUS_TEST_PORT_OFFSET; set by hand, that variable is used as it is.
 */
export const PORT_OFFSETS = [0, 10_000, 20_000] as const;

/** Held (listened on) by the run that uses the ports of its offset: 18550, 28550, 38550. */
export const LOCK_PORT = 18_550;

/** A fixed port of the tests, moved by the run's offset. */
export function testPort(base: number): number {
  const raw = process.env.ARGUS_TEST_PORT_OFFSET ?? '0';
  const offset = Number(raw);
  if (!/^\d+$/.test(raw) || base + offset > 65_000) throw new Error(`ARGUS_TEST_PORT_OFFSET=${raw}: not a whole number that keeps port ${base} under 65000`);
  return base + offset;
}

/** Listens on 127.0.0.1:port; resolves to the server, or undefined when the port is taken. */
function hold(port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer((c) => c.destroy());
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(undefined) : reject(e)));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(server));
  });
}

/**
 * The first offset whose lock port is free, with the server holding it (closed by the caller
 * when the run ends; the kernel frees it if the run dies). Throws when every offset is taken.
 */
export async function claimPortOffset(offsets: readonly number[] = PORT_OFFSETS, lockPort = LOCK_PORT): Promise<{ offset: number; lock: Server }> {
  for (const offset of offsets) {
    const lock = await hold(lockPort + offset);
    if (lock) return { offset, lock };
  }
  throw new Error(`every test port offset (${offsets.join(', ')}) is held by another test run (lock ports ${offsets.map((o) => lockPort + o).join(', ')}); wait for one to end, or set ARGUS_TEST_PORT_OFFSET`);
}
