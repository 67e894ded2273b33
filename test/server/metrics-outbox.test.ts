import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KafkaSinkSchema } from '../../src/config/schema.js';
import { Metrics } from '../../src/server/metrics.js';
import { KafkaSink } from '../../src/sinks/kafka.js';
import type { AlertMessage, Message, StatusMessage } from '../../src/sinks/message.js';
import { Outbox } from '../../src/sinks/outbox.js';

const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('metrics for alert delivery', () => {
  it('export what the outbox holds and what Kafka holds in memory, on disk and parked', async () => {
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-m-')), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    // A broker that is not there: nothing is ever acknowledged.
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], alertBufferSize: 2, closeTimeoutMs: 500 }), ssl: undefined, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m) });
    for (let i = 0; i < 5; i++) {
      const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id: `m${i}` } } as unknown as AlertMessage;
      const json = JSON.stringify(a);
      await outbox.append(a, json);
      kafka.publish('alert', 'cam', json, a);
    }
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka, outbox });
    const text = await metrics.scrape();
    expect(sample(text, 'argus_outbox_pending_alerts')).toBe(5);
    expect(sample(text, 'argus_outbox_events_total{event="appended"}')).toBe(5);
    // delivered_after_drop counts the dropped alerts the Kafka sink took after all, parked ones
    // too (its delivery callback reports both): its help said "delivered" alone.
    const help = text.split('\n').find((l) => l.startsWith('# HELP argus_outbox_events_total '))!;
    expect(help).toMatch(/delivered_after_drop \([^)]*parked/);
    // What the sink holds at the scrape (its retry loop against the absent broker may have one
    // alert in flight and have loaded one back from disk meanwhile, so the split is read, not fixed).
    const { alertsOnDisk, alertsBuffered } = kafka.stats;
    expect(sample(text, 'argus_queue_depth{queue="kafka_alerts_on_disk"}')).toBe(alertsOnDisk);
    expect(sample(text, 'argus_queue_depth{queue="kafka_alerts"}')).toBe(alertsBuffered);
    // Beyond the memory bound of 2, the rest waits on disk.
    expect(alertsBuffered).toBeLessThanOrEqual(2);
    expect(alertsOnDisk).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'argus_kafka_undeliverable_total{outcome="alert_lost"}')).toBe(0);
    await kafka.close();
    await outbox.close();
  }, 30_000);

  it('an alert sent without its snapshot (too large with it) is counted once Kafka took it so, apart from the parked ones', async () => {
    // Left without its picture when the batch is cut; a broker that takes everything.
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], maxMessageBytes: 2048, lingerMs: 1, closeTimeoutMs: 200 }), ssl: undefined });
    const inner = kafka as unknown as { connect(): Promise<void>; produce(part: unknown[]): Promise<void> };
    inner.connect = async () => undefined;
    inner.produce = async () => undefined;
    const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: 1 }, alert: { id: 'big', snapshot: { contentType: 'image/jpeg', data: 'A'.repeat(4000), width: 8, height: 8 } } } as unknown as AlertMessage;
    kafka.publish('alert', 'cam', JSON.stringify(a), a);
    for (let i = 0; i < 500 && kafka.stats.snapshotsLeftOut === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const text = await new Metrics({ stats: () => [], provider: 'cpu', kafka }).scrape();
    expect(sample(text, 'argus_kafka_undeliverable_total{outcome="snapshot_left_out"}')).toBe(1);
    expect(sample(text, 'argus_kafka_undeliverable_total{outcome="parked"}')).toBe(0);
    await kafka.close();
  }, 30_000);

  it('with the outbox, memory holds at most alertBufferSize alerts counting the batch in flight: those published while a request is out wait on disk, and a failed request is sent again first, as it was, then the rest in order', async () => {
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-m-')), maxBytes: 1 << 20, maxAgeMs: 3_600_000, fsync: false });
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], alertBufferSize: 2, lingerMs: 1, closeTimeoutMs: 500 }), ssl: undefined, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m) });
    // A connection that hangs until told to fail, then a broker that takes everything.
    const inner = kafka as unknown as { connect(): Promise<void>; produce(part: { msg: AlertMessage }[]): Promise<void> };
    let fail: (() => void) | undefined;
    inner.connect = () => new Promise<void>((_, reject) => (fail = () => reject(new Error('connect ECONNREFUSED 127.0.0.1:9'))));
    const sent: string[] = [];
    inner.produce = async (part) => void sent.push(...part.map((p) => p.msg.alert.id));
    const publish = async (id: string) => {
      const a = { type: 'alert', version: 1, source: 'cam', stamps: { emitted: Date.now() }, alert: { id } } as unknown as AlertMessage;
      const json = JSON.stringify(a);
      await outbox.append(a, json);
      kafka.publish('alert', 'cam', json, a);
    };
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(ok()).toBe(true);
    };
    await publish('a0');
    await until(() => fail !== undefined); // a0 is in flight
    for (const id of ['a1', 'a2', 'a3', 'a4']) await publish(id);
    // a0 in flight and a1 in memory; a2..a4 on disk (it held 3 in memory, then 4 once a0 came back).
    expect(kafka.stats.alertsBuffered).toBe(2);
    expect(kafka.stats.alertsOnDisk).toBe(3);
    inner.connect = async () => {};
    fail!();
    await until(() => kafka.stats.alertsSent === 5);
    expect(sent).toEqual(['a0', 'a1', 'a2', 'a3', 'a4']);
    expect(kafka.stats.alertsDropped).toBe(0);
    await kafka.close();
    await outbox.close();
  }, 30_000);

  it("counts every broker ack in the publish latency histogram, however long since the last scrape (it kept 100 000 for the scrape, then none)", async () => {
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], closeTimeoutMs: 500 }), ssl: undefined });
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka });
    // The sink's acks, as its delivery loop notes them (no broker needed for the arithmetic).
    const noteAck = (kafka as unknown as { noteAck(ms: number): void }).noteAck.bind(kafka);
    for (let i = 0; i < 100_010; i++) noteAck(i % 2 ? 4 : 40);
    const text = await metrics.scrape();
    expect(sample(text, 'argus_kafka_publish_latency_seconds_count')).toBe(100_010);
    expect(sample(text, 'argus_kafka_publish_latency_seconds_bucket{le="0.005"}')).toBe(50_005);
    noteAck(4);
    expect(sample(await metrics.scrape(), 'argus_kafka_publish_latency_seconds_count')).toBe(100_011);
    await kafka.close();
  }, 30_000);

  it("counts the alerts and status messages replayed from an earlier run's outbox apart: their age since that run is not in the publish latency histogram", async () => {
    const outbox = await Outbox.open({ dir: mkdtempSync(join(tmpdir(), 'argus-m-')), maxBytes: 1 << 20, maxAgeMs: 24 * 3_600_000, fsync: false });
    // Room for 2 alerts in memory: the rest of the replay waits on disk and is loaded back later.
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], alertBufferSize: 2, lingerMs: 1, closeTimeoutMs: 500 }), ssl: undefined, spill: outbox.spill(), onDelivered: (m) => outbox.ack(m) });
    // A broker that takes everything at once (the sink's own connect and produce, stood in for).
    const inner = kafka as unknown as { connect(): Promise<void>; produce(): Promise<void> };
    inner.connect = async () => {};
    inner.produce = async () => {};
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka });
    const hoursAgo = Date.now() - 3 * 3_600_000;
    const alert = (id: string, emitted: number) => ({ type: 'alert', version: 1, source: 'cam', stamps: { emitted }, alert: { id } }) as unknown as AlertMessage;
    const old: Message[] = [...Array(5)].map((_, i) => alert(`old${i}`, hoursAgo));
    old.push({ type: 'status', version: 1, source: 'cam', published: hoursAgo } as unknown as StatusMessage);
    for (const m of old) if (m.type === 'alert') await outbox.append(m, JSON.stringify(m));
    // What runPipeline does at start: the earlier run's alerts (3 h old) and a status, replayed at once.
    for (const m of old) kafka.publish(m.type, m.source, JSON.stringify(m), m, true);
    // This run's alert, a few ms old.
    const fresh = alert('new', Date.now() - 3);
    await outbox.append(fresh, JSON.stringify(fresh));
    kafka.publish('alert', 'cam', JSON.stringify(fresh), fresh);
    for (let i = 0; i < 200 && kafka.stats.alertsSent + kafka.stats.statusSent < 7; i++) await new Promise((r) => setTimeout(r, 10));
    expect(kafka.stats.alertsSent).toBe(6);
    expect(kafka.stats.alertsSpilled).toBeGreaterThan(0); // the replay went by the disk too
    const text = await metrics.scrape();
    expect(sample(text, 'argus_kafka_messages_total{kind="alert"}')).toBe(6);
    expect(sample(text, 'argus_kafka_replayed_total{kind="alert"}')).toBe(5);
    expect(sample(text, 'argus_kafka_replayed_total{kind="status"}')).toBe(1);
    // Only this run's alert: 3 ms, not 3 hours (before, 7 samples, 6 of them in +Inf).
    expect(sample(text, 'argus_kafka_publish_latency_seconds_count')).toBe(1);
    expect(sample(text, 'argus_kafka_publish_latency_seconds_bucket{le="60"}')).toBe(1);
    expect(kafka.ackLatency.count).toBe(1);
    await kafka.close();
    await outbox.close();
  }, 30_000);

  it('counts the acks that came before the metrics started (an earlier run\'s outbox replayed at start), as argus_kafka_messages_total does', async () => {
    const kafka = new KafkaSink({ ...KafkaSinkSchema.parse({ brokers: ['127.0.0.1:9'], closeTimeoutMs: 500 }), ssl: undefined });
    const noteAck = (kafka as unknown as { noteAck(ms: number): void }).noteAck.bind(kafka);
    // runPipeline publishes the replay right after the sink starts, and makes the metrics later.
    noteAck(4);
    noteAck(40);
    const metrics = new Metrics({ stats: () => [], provider: 'cpu', kafka });
    noteAck(4);
    const text = await metrics.scrape();
    expect(sample(text, 'argus_kafka_publish_latency_seconds_count')).toBe(3);
    expect(sample(text, 'argus_kafka_publish_latency_seconds_bucket{le="0.005"}')).toBe(2);
    await kafka.close();
  }, 30_000);
});
