/**
 * kafkajs sends a heartbeat when Date.now() has passed the last one's Date.now() plus the
 * interval: a wall clock stepped back held every heartbeat back as long. The membership watches
 * the wall clock against the monotonic one and joins again when a step would outlast the lease.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KafkajsMembership } from '../../src/cluster/kafkajs-membership.js';
import { createTopicsReady, testBrokers, uniqueTopic } from '../helpers/kafka.js';

/** A kafkajs client whose consumers join at once: `consumers` lists each one made, with whether it was disconnected. */
function fakeKafka() {
  const consumers: { disconnected: boolean }[] = [];
  const kafka = {
    admin: () => ({ connect: async () => {}, disconnect: async () => {}, describeGroups: async () => ({ groups: [{ state: 'Empty', members: [] }] }) }),
    consumer: () => {
      const c = { disconnected: false };
      consumers.push(c);
      return {
        events: { REQUEST: 'request', HEARTBEAT: 'heartbeat', GROUP_JOIN: 'join', CRASH: 'crash' },
        on: () => {},
        connect: async () => {},
        subscribe: async () => {},
        run: async () => {},
        disconnect: async () => void (c.disconnected = true),
      };
    },
  };
  return { kafka: kafka as never, consumers };
}

describe('KafkajsMembership: the wall clock stepped back', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] }));
  afterEach(() => vi.useRealTimers());

  it('by more than the lease allows: joins again at once, saying so (kafkajs sent no heartbeat until the clock caught up, and the group dropped the worker)', async () => {
    const { kafka, consumers } = fakeKafka();
    const logs: string[] = [];
    const m = new KafkajsMembership({ kafka, group: 'g', topic: 'cams', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, leaseMs: 4500, info: () => ({ workerId: 'w1', incarnation: 'i1', capacity: 1, owned: [], labels: {} }), slots: () => ({ cost: () => 1, accepts: () => true }), onAssigned: () => {}, log: (msg) => void logs.push(msg) });
    await m.start();
    expect(consumers).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2000);
    // A step back smaller than the lease less two heartbeats (3.5 s): kafkajs's next heartbeat is late, not too late.
    vi.setSystemTime(Date.now() - 3000);
    await vi.advanceTimersByTimeAsync(2000);
    expect(consumers).toHaveLength(1);
    expect(logs).toEqual([]);
    // 30 s back (NTP stepping a drifted clock): a consumer of its own, at once.
    vi.setSystemTime(Date.now() - 30_000);
    await vi.advanceTimersByTimeAsync(300);
    expect(consumers).toHaveLength(2);
    expect(consumers[0].disconnected).toBe(true);
    expect(consumers[1].disconnected).toBe(false);
    expect(logs.join('\n')).toMatch(/wall clock went back 30000 ms.*joining group g again/);
    // A step forward changes nothing (kafkajs then heartbeats at every chance).
    vi.setSystemTime(Date.now() + 60_000);
    await vi.advanceTimersByTimeAsync(2000);
    expect(consumers).toHaveLength(2);
    await m.stop();
    vi.setSystemTime(Date.now() - 30_000);
    await vi.advanceTimersByTimeAsync(2000);
    expect(consumers).toHaveLength(2); // stopped: watched no longer
  });
});

describe('KafkajsMembership: the wall clock stepped back (real broker)', () => {
  it('30 s back: the lease holds again within seconds, in a group that still has the worker (it sent no heartbeat for 30 s, and the group was empty from 6 s on)', async () => {
    const kafka = new Kafka({ clientId: 'argus-test-clock', brokers: await testBrokers(), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const topic = uniqueTopic('argus-test-clock');
    const group = `${topic}.workers`;
    await createTopicsReady(admin, { topics: [{ topic, numPartitions: 2 }] });
    let joins = 0;
    const m = new KafkajsMembership({ kafka, group, topic, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, rebalanceTimeoutMs: 10_000, leaseMs: 4500, info: () => ({ workerId: 'w1', incarnation: 'i1', capacity: 1, owned: [], labels: {}, placement: true }), slots: () => ({ cost: () => 1, accepts: () => true }), onAssigned: () => void joins++ });
    const realNow = Date.now.bind(Date);
    try {
      await m.start();
      while (joins === 0) await new Promise((r) => setTimeout(r, 100));
      vi.spyOn(Date, 'now').mockImplementation(() => realNow() - 30_000);
      const stepped = performance.now();
      // Alive again: a proof of membership sent after the step (a heartbeat answered, or a join).
      while (!(m.lastAlive > stepped) && performance.now() - stepped < 20_000) await new Promise((r) => setTimeout(r, 100));
      expect(m.lastAlive).toBeGreaterThan(stepped);
      // …and it stays in the group past its session (6 s), heartbeating.
      await new Promise((r) => setTimeout(r, 7000));
      expect(performance.now() - m.lastAlive).toBeLessThan(4500);
      const g = (await admin.describeGroups([group])).groups[0];
      expect(g.state).toBe('Stable');
      expect(g.members).toHaveLength(1);
    } finally {
      vi.restoreAllMocks();
      await m.stop();
      await admin.disconnect();
    }
  }, 60_000);
});
