// The run's server (and `argus check`) says what to change when it cannot listen: right for the port it was given.
import dns from 'node:dns';
import { EventEmitter } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { listenOn, listenProblem } from '../../src/server/http.js';

/** A server whose listen fails with `code`, as the kernel answers (EACCES cannot be had as root). */
function refusing(code: string): Server {
  const ee = new EventEmitter();
  return Object.assign(ee, { listen: () => ee.emit('error', Object.assign(new Error(`listen ${code}`), { code })) }) as unknown as Server;
}

const refusal = (code: string, port: number) => listenOn(refusing(code), '127.0.0.1', port).then(() => 'listened', (e: Error & { code?: string }) => `${e.code} ${e.message}`);

describe('listenOn: a refusal says what to change', () => {
  it('EACCES below 1024 is a privileged port; at 1024 or above it is the system\'s policy, not "set server.port to 1024 or above"', async () => {
    expect(await refusal('EACCES', 80)).toBe('VAP_ERR_SERVER_LISTEN server: cannot listen on 127.0.0.1:80 (EACCES): a port below 1024 needs root (or CAP_NET_BIND_SERVICE): set server.port (or ARGUS_HTTP_PORT) to 1024 or above');
    const high = await refusal('EACCES', 8080);
    expect(high).toMatch(/^VAP_ERR_SERVER_LISTEN server: cannot listen on 127\.0\.0\.1:8080 \(EACCES\): the system refuses this port to argus's user \(a security policy/);
    expect(high).not.toMatch(/1024/);
  });

  it('a code it has no advice for: the code alone', async () => {
    expect(await refusal('EINVAL', 8080)).toBe('VAP_ERR_SERVER_LISTEN server: cannot listen on 127.0.0.1:8080 (EINVAL)');
    expect(await refusal('EADDRINUSE', 8080)).toMatch(/\(EADDRINUSE\): another program listens there/);
  });
});

describe('listenProblem (argus check\'s look at the port): bounded', () => {
  it('a host name the resolver does not answer for: ETIMEDOUT naming server.host at the bound, and the probe listening later is closed (the port not held)', async () => {
    // A free port, to see it is free again after.
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', () => r()));
    const port = (free.address() as AddressInfo).port;
    await new Promise<void>((r) => free.close(() => r()));
    // net's listen looks a name up with dns.lookup: one that answers only when told (a resolver that does not answer).
    const real = dns.lookup;
    let answer: (() => void) | undefined;
    (dns as { lookup: unknown }).lookup = (_host: string, ...rest: unknown[]) => {
      const cb = rest.at(-1) as (e: Error | null, a: string, f: number) => void;
      answer = () => cb(null, '127.0.0.1', 4);
    };
    try {
      const t0 = performance.now();
      const e = await listenProblem('cameras.example', port, 300);
      expect(performance.now() - t0).toBeLessThan(3000);
      expect(e?.code).toBe('VAP_ERR_SERVER_LISTEN');
      expect((e?.cause as NodeJS.ErrnoException).code).toBe('ETIMEDOUT');
      expect(e?.message).toMatch(/^server: cannot listen on cameras\.example:\d+ \(ETIMEDOUT\): server\.host was not looked up within 0\.3 s/);
      answer?.();
    } finally {
      (dns as { lookup: unknown }).lookup = real;
    }
    // The late answer: the probe listened, and is closed again.
    await vi.waitFor(async () => {
      const again = createServer();
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject);
        again.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise<void>((r) => again.close(() => r()));
    }, { timeout: 5000, interval: 50 });
  }, 20_000);
});
