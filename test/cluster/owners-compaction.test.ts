import type { Kafka, Producer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ClusterView, OwnerLog } from '../../src/cluster/view.js';
import { Worker } from '../../src/cluster/worker.js';
import { PipelineSchema } from '../../src/config/schema.js';

const T = { cameras: 'c', owners: 'o' };

/** The owners topic as a producer sees it: every record with the offset the broker gave it. */
function ownersTopic() {
  const log: { key: string; value: Buffer; offset: number }[] = [];
  /** Views that read the topic as it is written (a running worker's). */
  const readers: ((key: string, value: Buffer, offset: number) => void)[] = [];
  const producer = {
    send: async ({ messages }: { messages: { key: string; value: string }[] }) => {
      const baseOffset = log.length;
      for (const m of messages) {
        const r = { key: m.key, value: Buffer.from(m.value), offset: log.length };
        log.push(r);
        for (const read of readers) read(r.key, r.value, r.offset);
      }
      return [{ baseOffset: String(baseOffset) }];
    },
  } as unknown as Producer;
  return {
    producer,
    readers,
    /** What Kafka's log cleaner leaves of the compacted topic: the latest record of each key, at its offset. */
    compacted: () => log.filter((r, i) => !log.slice(i + 1).some((later) => later.key === r.key)),
  };
}

/** A view started on `records` (a worker started after them). */
function viewOf(records: { key: string; value: Buffer; offset: number }[]): ClusterView {
  const v = new ClusterView({} as Kafka, T);
  v.ingest('c', 0, 'x', Buffer.from(JSON.stringify({ id: 'x', uri: 'rtsp://h/x' })), '0');
  for (const r of records) v.ingest('o', 0, r.key, r.value, String(r.offset));
  return v;
}

describe('the owners topic once Kafka has compacted it', () => {
  it('still holds the camera’s current claim when a release of an older one came after it (a fenced worker’s, once its lease held again)', async () => {
    const topic = ownersTopic();
    const a = new OwnerLog(topic.producer, 'o', 'A', 'a1');
    const b = new OwnerLog(topic.producer, 'o', 'B', 'b1');
    const [ea] = await a.claim(['x']); // A runs x; its lease lapses (a broker restart): its fence stops x
    const [eb] = await b.claim(['x']); // x's slot goes to B (or back to A, anew): B runs x under epoch eb
    await a.release('x', ea); // A's lease holds again: it releases the claim its fence stopped
    // A worker started after the log cleaner ran sees B holding x: the next owner waits for B's release.
    const v = viewOf(topic.compacted());
    expect(v.owners.get('x')).toMatchObject({ owner: 'B', incarnation: 'b1', epoch: eb, state: 'claimed' });
    expect(v.openBefore('x', eb + 100)).toEqual([{ owner: 'B', incarnation: 'b1', epoch: eb }]);
    // B's own release still closes it, compacted or not.
    await b.release('x', eb);
    const w = viewOf(topic.compacted());
    expect(w.owners.get('x')).toMatchObject({ owner: 'B', epoch: eb, state: 'released' });
    expect(w.openBefore('x', eb + 100)).toEqual([]);
  });

  it('still shows the camera’s latest claim released when a fenced worker released an older claim after it: the latest claim’s owner writes its release again', async () => {
    const topic = ownersTopic();
    const a = new OwnerLog(topic.producer, 'o', 'A', 'a1');
    const [ea] = await a.claim(['x']); // A runs x; its fence stops x (a long freeze)
    // B, a running worker, takes x over, moves it on and releases its claim; A, awake again, then releases its own.
    const config = PipelineSchema.parse({ cluster: { brokers: ['127.0.0.1:1'], workerId: 'B', ownersTopic: 'o', camerasTopic: 'c' } });
    const b = new Worker(config);
    const bi = b as unknown as { owners: OwnerLog; view: ClusterView; watchView: () => void };
    bi.owners = new OwnerLog(topic.producer, 'o', 'B', b.incarnation);
    bi.view.ingest('c', 0, 'x', Buffer.from(JSON.stringify({ id: 'x', uri: 'rtsp://h/x' })), '0');
    topic.readers.push((key, value, offset) => bi.view.ingest('o', 0, key, value, String(offset)));
    bi.watchView();
    bi.view.ingest('o', 0, 'x', topic.compacted()[0].value, String(ea));
    const [eb] = await bi.owners.claim(['x']);
    await bi.owners.release('x', eb);
    await a.release('x', ea);
    await new Promise((r) => setImmediate(r));
    // A worker started once the log cleaner has run: before, it saw B's claim open (B's release
    // gone, A's kept under the same key), and x's next owner waited releaseWaitMs for it.
    const v = viewOf(topic.compacted());
    expect(v.owners.get('x')).toMatchObject({ owner: 'B', epoch: eb, state: 'released' });
    expect(v.openBefore('x', eb + 100)).toEqual([]);
    // Written once: B's own release (epoch eb) read back changes nothing more.
    expect(topic.compacted().length).toBe(2);
  });

  it('a release written by an earlier version (keyed by its camera) is still read', () => {
    const v = new ClusterView({} as Kafka, T);
    const rec = (o: unknown) => Buffer.from(JSON.stringify(o));
    v.ingest('o', 0, 'x', rec({ type: 'claim', camera: 'x', owner: 'A', incarnation: 'a1', at: 1 }), '3');
    v.ingest('o', 0, 'x', rec({ type: 'release', camera: 'x', owner: 'A', incarnation: 'a1', epoch: 3, at: 2 }), '4');
    expect(v.owners.get('x')).toMatchObject({ owner: 'A', epoch: 3, state: 'released' });
    expect(v.openBefore('x', 10)).toEqual([]);
    // A release under another camera's key, or a tombstone of a release key, changes nothing.
    v.ingest('o', 0, 'y', rec({ type: 'claim', camera: 'y', owner: 'A', incarnation: 'a1', at: 1 }), '5');
    v.ingest('o', 0, 'release/x', rec({ type: 'release', camera: 'y', owner: 'A', incarnation: 'a1', epoch: 5, at: 2 }), '6');
    v.ingest('o', 0, 'release/y', null, '7');
    expect(v.owners.get('y')).toMatchObject({ owner: 'A', epoch: 5, state: 'claimed' });
  });
});
