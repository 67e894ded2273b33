// The run's server (and `argus check`) says what to change when it cannot listen: right for the port it was given.
import { EventEmitter } from 'node:events';
import type { Server } from 'node:net';
import { describe, expect, it } from 'vitest';
import { listenOn } from '../../src/server/http.js';

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
