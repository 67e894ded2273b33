import { createServer, connect } from 'node:net';
import { describe, expect, it, vi } from 'vitest';

// Counts the reads of the kernel's socket tables peerOwner makes by itself.
const reads: string[] = [];
vi.mock('node:fs/promises', async (original) => {
  const fs = await original<typeof import('node:fs/promises')>();
  return { ...fs, readFile: (path: string, ...rest: unknown[]) => (reads.push(path), (fs.readFile as (...a: unknown[]) => Promise<unknown>)(path, ...rest)) };
});
const { peerOwner } = await import('../../src/sources/relay-door.js');

describe("peerOwner's own reads of the kernel's tables", () => {
  it('lookups at once share their reads: 20 connections read each table a few times, not 20 (each read is the whole table, in the kernel)', async () => {
    const server = createServer(() => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const peers = Array.from({ length: 20 }, () => connect(port, '127.0.0.1'));
    await Promise.all(peers.map((s) => new Promise((r) => s.on('connect', r))));
    try {
      reads.length = 0;
      const owners = await Promise.all(peers.map((s) => peerOwner(port, { address: s.localAddress!, port: s.localPort! })));
      expect(owners).toEqual(Array(20).fill('own'));
      expect(reads.filter((p) => p === '/proc/net/tcp').length).toBeLessThanOrEqual(2);
      expect(reads.filter((p) => p === '/proc/net/tcp6').length).toBeLessThanOrEqual(2);
    } finally {
      peers.forEach((s) => s.destroy());
      server.close();
    }
  });
});
