// A command given SASL settings (a pipeline's sinks.kafka.sasl, a worker YAML's cluster.sasl) at
// a broker listener that takes none is answered "Request is not valid given the current SASL
// state" (ILLEGAL_SASL_STATE): the error's hint said to check the brokers and that Kafka runs
// there, which it did. It now says that listener takes no SASL and points at the SASL settings.
import { Kafka } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { isArgusError } from '../../src/core/errors.js';
import { commandKafkaConfig, reachKafka } from '../../src/sinks/kafka-reach.js';
import { testBrokers } from '../helpers/kafka.js';

let brokers: string[];
beforeAll(async () => {
  brokers = await testBrokers();
}, 600_000);

describe('reachKafka: SASL settings at a listener without SASL', () => {
  it('says the listener takes no SASL and gives the SASL hint, the password nowhere', async () => {
    const admin = new Kafka(commandKafkaConfig('argus-test-sasl', { brokers, sasl: { mechanism: 'plain', username: 'ops', password: 'hunter2-secret' } })).admin();
    const err = await reachKafka(brokers, admin, { timeoutMs: 30_000, hint: (refused) => (refused ? 'check sinks.kafka.sasl' : 'check sinks.kafka.brokers and that Kafka runs there') }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isArgusError(err, 'VAP_ERR_KAFKA_UNREACHABLE')).toBe(true);
    const message = (err as Error).message;
    expect(message).toContain('this listener takes no SASL');
    expect(message).toMatch(/: check sinks\.kafka\.sasl$/);
    expect(message).not.toContain('hunter2-secret');
  }, 60_000);
});
