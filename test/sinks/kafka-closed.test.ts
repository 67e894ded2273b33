import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { ErrorCodes } from '../../src/core/errors.js';
import { KafkaSink, type KafkaSinkOptions } from '../../src/sinks/kafka.js';
import type { AlertMessage, Message } from '../../src/sinks/message.js';

/**
 * Alerts that reach no Kafka consumer are counted and said with a code (VAP_ERR_ALERT_UNDELIVERED).
 * No broker: port 1 of loopback, where nothing listens; close() gives up at once.
 */
function makeSink(extra: Partial<KafkaSinkOptions> = {}) {
  const logs: { msg: string; fields?: Record<string, unknown>; level?: string }[] = [];
  const sink = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:1'] }), ssl: undefined, closeTimeoutMs: 50, startWaitMs: 50, log: (msg, fields, level) => logs.push({ msg, fields, level }), ...extra });
  return { sink, logs };
}
const alert = (id: string) => ({ type: 'alert', source: 'cam', alert: { id }, stamps: { emitted: Date.now() } }) as unknown as AlertMessage;
const publish = (sink: KafkaSink, m: Message) => sink.publish(m.type, m.source, JSON.stringify(m), m);

describe('Kafka sink: alerts that reach no consumer are counted and said, with a code', () => {
  it('an alert given after close() (it vanished: no count, no log) is counted lost and said; one the outbox holds is said kept', async () => {
    const { sink, logs } = makeSink();
    await sink.close();
    publish(sink, alert('late-1'));
    publish(sink, { type: 'status', source: 'cam', state: 'stopped', previous: 'streaming', reason: 'r', at: 1, attempt: 0, published: 1 } as Message);
    expect(sink.stats).toMatchObject({ alertsDropped: 1, statusDropped: 1, alertsBuffered: 0 });
    expect(logs.filter((l) => l.msg.includes('late-1'))).toEqual([
      { msg: 'kafka: alert late-1 from cam came after the sink closed; not delivered', fields: { source: 'cam', alertId: 'late-1', code: ErrorCodes.ALERT_UNDELIVERED }, level: 'error' },
    ]);

    const store = new Set(['alert:kept-1']);
    const kept = makeSink({ spill: { key: (m) => `alert:${(m as AlertMessage).alert.id}`, has: (k) => store.has(k), load: () => undefined } });
    await kept.sink.close();
    publish(kept.sink, alert('kept-1'));
    publish(kept.sink, alert('gone-1')); // not in the outbox (closed too): lost
    expect(kept.sink.stats.alertsDropped).toBe(1);
    expect(kept.logs.filter((l) => /came after the sink closed/.test(l.msg)).map((l) => [l.level, l.msg, l.fields?.code])).toEqual([
      ['warn', 'kafka: alert kept-1 from cam came after the sink closed; it stays in the outbox and is sent on the next start', ErrorCodes.ALERT_UNDELIVERED],
      ['error', 'kafka: alert gone-1 from cam came after the sink closed; not delivered', ErrorCodes.ALERT_UNDELIVERED],
    ]);
  });

  it('alerts undelivered at shutdown and the oldest lost from a full buffer are said with the code', async () => {
    const { sink, logs } = makeSink({ alertBufferSize: 1 });
    publish(sink, alert('a1'));
    publish(sink, alert('a2')); // the buffer holds one: a1 lost
    await sink.close();
    expect(sink.stats.alertsDropped).toBe(2);
    const said = logs.filter((l) => l.level === 'error' && /alert/.test(l.msg));
    expect(said.map((l) => l.msg)).toEqual([expect.stringMatching(/alert buffer full .*oldest alert lost/), 'kafka: 1 alerts could not be delivered before shutdown']);
    for (const l of said) expect(l.fields?.code).toBe(ErrorCodes.ALERT_UNDELIVERED);
  });

  it('an ack that comes after close() gave up on its request takes back only what close() counted: with the outbox (alerts kept, not counted lost) alertsDropped stays 0 (it went to -1)', async () => {
    const store = new Set(['alert:slow-1']);
    const { sink, logs } = makeSink({ spill: { key: (m) => `alert:${(m as AlertMessage).alert.id}`, has: (k) => store.has(k), load: () => undefined } });
    // A producer whose request is answered only when the test says (a broker that answers late).
    let answer!: () => void;
    let sent = false;
    const internals = sink as unknown as { producer: unknown };
    internals.producer = {
      events: { DISCONNECT: 'producer.disconnect' },
      on: () => () => {},
      connect: async () => {},
      disconnect: async () => {},
      sendBatch: () => ((sent = true), new Promise<void>((r) => (answer = r))),
    };
    publish(sink, alert('slow-1'));
    const end = Date.now() + 20_000; // a hang bound only
    while (!sent && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    expect(sent).toBe(true);
    await sink.close(); // gives up on the request: the alert stays in the outbox
    expect(logs.some((l) => /1 alerts not delivered before shutdown; they stay in the outbox/.test(l.msg))).toBe(true);
    expect(sink.stats.alertsDropped).toBe(0);
    answer();
    await new Promise((r) => setTimeout(r, 50));
    expect(sink.stats).toMatchObject({ alertsSent: 1, alertsDropped: 0 });
  });
});
