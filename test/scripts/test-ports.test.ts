import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { claimPortOffset, testPort } from '../helpers/ports.js';

/** A server on a port the kernel chose (free at that moment). */
function listen(): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}
const portOf = (s: Server) => (s.address() as { port: number }).port;
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

describe('test ports of a run (two test runs from different checkouts at once)', () => {
  const open: Server[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map(close));
  });

  it('a run takes the first offset whose lock port no other run holds, and holds it until it lets go', async () => {
    const other = await listen(); // another run's lock
    const spare = await listen();
    const base = portOf(other);
    const next = portOf(spare) - base; // an offset whose lock port is free
    await close(spare);
    open.push(other);
    const mine = await claimPortOffset([0, next], base);
    open.push(mine.lock);
    expect(mine.offset).toBe(next);
    // A third run finds both held.
    await expect(claimPortOffset([0, next], base)).rejects.toThrow(/every test port offset \(0, -?\d+\) is held by another test run/);
    // Once the first run ends, its offset is free again.
    await close(open.shift()!);
    const third = await claimPortOffset([0, next], base);
    open.push(third.lock);
    expect(third.offset).toBe(0);
  });

  it('testPort moves a fixed port by the offset, and refuses an offset that is not a whole number or goes past 65000', () => {
    const saved = process.env.ARGUS_TEST_PORT_OFFSET;
    try {
      process.env.ARGUS_TEST_PORT_OFFSET = '10000';
      expect(testPort(19092)).toBe(29092);
      delete process.env.ARGUS_TEST_PORT_OFFSET;
      expect(testPort(19092)).toBe(19092);
      for (const bad of ['-5', '1e4', 'x', '50000']) {
        process.env.ARGUS_TEST_PORT_OFFSET = bad;
        expect(() => testPort(19092)).toThrow(`ARGUS_TEST_PORT_OFFSET=${bad}`);
      }
    } finally {
      if (saved === undefined) delete process.env.ARGUS_TEST_PORT_OFFSET;
      else process.env.ARGUS_TEST_PORT_OFFSET = saved;
    }
  });
});
