// An alert's latency from its frame's source stamp: to its hand-over to the sinks (after the
// journal and the alert of its source before it) and to the broker's ack (through an outage,
// waiting in the outbox). Nothing said either: the message's `published` is stamped when it is
// serialised, and the Kafka publish latency counts from `emitted`, mixing alerts with detections.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { now } from '../../src/core/clock.js';
import { Detections } from '../../src/core/detections.js';
import { emptyStamps, type Frame } from '../../src/core/frame.js';
import { letterbox } from '../../src/core/geometry.js';
import { Metrics } from '../../src/server/metrics.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import type { AlertMessage } from '../../src/sinks/message.js';
import { Outbox } from '../../src/sinks/outbox.js';
import { Publisher } from '../../src/sinks/publisher.js';
import type { Sink } from '../../src/sinks/sink.js';
import type { AlertBody } from '../../src/analytics/analyzer.js';

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Polls `ok`; the bound only ends a hang (the caller asserts the result). */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 3000 && !ok(); i++) await wait(10);
  expect(ok()).toBe(true);
}

/** A frame produced `ageMs` ago, its result emitted now. */
function frame(ageMs: number): Frame {
  const t = now();
  const stamps = emptyStamps(t - ageMs / 2, t - ageMs);
  Object.assign(stamps, { staged: t - 10, preprocessed: t - 9, inferStart: t - 8, inferEnd: t - 3, postprocessed: t - 2, emitted: t });
  return { source: 'cam', seq: 7, pts: 0.7, data: Buffer.alloc(0), letterbox: letterbox(64, 64, 64, 64), stamps, producedBy: 'arrival', release: () => {} };
}
const NO_ROWS = new Detections(new Float32Array(0), new Float32Array(0), new Int32Array(0));
const body = (id: string) => ({ id, rule: 'r', severity: 'warning', event: 'zone.enter', message: 'in' }) as unknown as AlertBody;

describe('alert latency from the source stamp', () => {
  it('to the sinks: the wait for the alert before it of its source is counted; the message\'s published − produced does not show it', async () => {
    const handed: AlertMessage[] = [];
    const sink: Sink = { name: 'test', publish: (_k, _s, _j, m) => void handed.push(m as AlertMessage), close: async () => {} };
    const publisher = new Publisher([sink], { name: 'm', version: '1' }, ['person']);
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', publisher });
    // The alert before it (its snapshot still rendering) is handed over 300 ms later.
    let release!: () => void;
    const before = new Promise<void>((r) => (release = r));
    const f = frame(40);
    const p = publisher.alert(f, NO_ROWS, 0, body('a1'), before);
    await wait(300);
    expect(handed).toHaveLength(0);
    release();
    const msg = await p;
    expect(handed).toHaveLength(1);
    const text = await metrics.scrape();
    expect(sample(text, 'argus_alert_latency_seconds_count{to="sinks"}')).toBe(1);
    const s = sample(text, 'argus_alert_latency_seconds_sum{to="sinks"}')!;
    expect(s).toBeGreaterThanOrEqual(0.04 + 0.3 - 0.005);
    // The message says when it was serialised: before the wait.
    expect(msg.stamps.published - msg.stamps.produced).toBeLessThan(s * 1000 - 250);
    await publisher.close();
  });

  it('to the broker: an alert that waited in the outbox while the broker was away counts the outage, from its frame\'s source stamp; a replayed one is not counted', async () => {
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-alert-latency-')), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], alertBufferSize: 2, lingerMs: 1, closeTimeoutMs: 500 }), ssl: undefined, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m) });
    // The broker away (every connection refused) until the test lets it take everything.
    const inner = kafka as unknown as { connect(): Promise<void>; produce(): Promise<void> };
    let up = false;
    inner.connect = async () => {
      if (!up) throw new Error('connect ECONNREFUSED 127.0.0.1:9');
    };
    inner.produce = async () => {};
    const publisher = new Publisher([kafka], { name: 'm', version: '1' }, ['person'], outbox);
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka, publisher });
    const old = { type: 'alert', version: 1, source: 'cam', stamps: { produced: now() - 3_600_000, emitted: now() - 3_600_000 }, alert: { id: 'old' } } as unknown as AlertMessage;
    await outbox.append(old, JSON.stringify(old));
    kafka.publish('alert', 'cam', JSON.stringify(old), old, true);
    const outageStart = now();
    await publisher.alert(frame(50), NO_ROWS, 0, body('a1'));
    await wait(500);
    up = true;
    await until(() => kafka.stats.alertsSent === 2);
    const acked = now();
    const text = await metrics.scrape();
    expect(sample(text, 'argus_alert_latency_seconds_count{to="kafka"}')).toBe(1);
    const s = sample(text, 'argus_alert_latency_seconds_sum{to="kafka"}')!;
    // From the frame's source stamp (50 ms before the alert) through the 500 ms outage.
    expect(s).toBeGreaterThanOrEqual(0.05 + 0.5 - 0.005);
    expect(s).toBeLessThanOrEqual((acked - outageStart + 50 + 5) / 1000);
    // The hour-old replayed alert is counted apart (argus_kafka_replayed_total), not here.
    expect(sample(text, 'argus_alert_latency_seconds_bucket{le="3600",to="kafka"}')).toBe(1);
    expect(sample(text, 'argus_kafka_replayed_total{kind="alert"}')).toBe(1);
    expect(sample(text, 'argus_alert_latency_seconds_count{to="sinks"}')).toBe(1);
    await kafka.close();
    await outbox.close();
  }, 30_000);
});
