import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import type { AlertMessage } from '../../src/sinks/message.js';

/**
 * The dead-letter file (sinks.kafka.deadLetterPath) is opened without waiting: a named pipe
 * whose reader was away froze the whole process in a synchronous open as the first too-large
 * alert was parked (no timer, no other camera, no heartbeat ran again). No broker is needed: a
 * message over maxMessageBytes is parked before any request.
 */
const dir = mkdtempSync(join(tmpdir(), 'argus-dead-letter-'));

function parkOne(deadLetterPath: string) {
  const logs: string[] = [];
  // Port 1 of loopback: nothing listens (the sink retries in the background; nothing waits on it).
  const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:1'] }), ssl: undefined, closeTimeoutMs: 200, maxMessageBytes: 1024, deadLetterPath, log: (m: string) => logs.push(m) });
  const m = { type: 'alert', source: 'cam', alert: { id: 'a1' }, pad: 'x'.repeat(5000) } as unknown as AlertMessage;
  return { sink, logs, publish: () => sink.publish('alert', 'cam', JSON.stringify(m), m) };
}

async function until(cond: () => boolean, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

describe('the dead-letter file', () => {
  it('a named pipe nobody reads: the parked alert is logged as not written, and the process goes on', async () => {
    const fifo = join(dir, 'dead.fifo');
    execFileSync('mkfifo', [fifo]);
    const { sink, logs, publish } = parkOne(fifo);
    void sink.start().catch(() => undefined);
    publish();
    expect(await until(() => sink.stats.parked === 1 && logs.some((l) => l.includes('cannot write the dead-letter file')))).toBe(true);
    expect(logs.find((l) => l.includes('cannot write the dead-letter file'))).toBe(`kafka: cannot write the dead-letter file ${fifo} (ENXIO: no such device or address, open '${fifo}'); parked messages are only counted`);
    expect(sink.stats.deadLettered).toBe(0);
    await sink.close();
  });

  it('a regular file takes the parked message', async () => {
    const file = join(dir, 'dead.jsonl');
    const { sink, publish } = parkOne(file);
    void sink.start().catch(() => undefined);
    publish();
    expect(await until(() => sink.stats.deadLettered === 1)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8')).key).toBe('cam');
    await sink.close();
  });
});
