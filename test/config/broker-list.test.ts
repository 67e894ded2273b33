import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { PipelineSchema } from '../../src/config/schema.js';

/** A worker YAML (no sources) with the README's Kafka section: brokers: ["${env:KAFKA_BROKERS,…}"]. */
const PIPELINE = `name: x
sinks:
  kafka:
    brokers: ["\${env:KAFKA_BROKERS,127.0.0.1:19092}"]
cluster:
  brokers: ["\${env:KAFKA_BROKERS,127.0.0.1:19092}", "k9:9092"]
`;
const parse = (env: NodeJS.ProcessEnv) => parseConfigText(PIPELINE, PipelineSchema, 'p.yaml', env);
const problem = (env: NodeJS.ProcessEnv): string => {
  try {
    parse(env);
  } catch (e) {
    expect((e as { code?: string }).code).toBe('VAP_ERR_CONFIG');
    return (e as Error).message;
  }
  throw new Error('taken');
};

describe('a broker list item may list several brokers, comma-separated (KAFKA_BROKERS=b1:9092,b2:9092)', () => {
  it('is split into its brokers, in sinks.kafka and cluster alike (it was refused: "use host:port")', () => {
    const c = parse({ KAFKA_BROKERS: 'b1:9092,b2:9093, b3:9094,' });
    expect(c.sinks.kafka?.brokers).toEqual(['b1:9092', 'b2:9093', 'b3:9094']);
    expect(c.cluster?.brokers).toEqual(['b1:9092', 'b2:9093', 'b3:9094', 'k9:9092']);
    expect(parse({}).sinks.kafka?.brokers).toEqual(['127.0.0.1:19092']);
  });

  it('a bad broker in the list is refused naming the item, its place and the variable, never its text', () => {
    const m = problem({ KAFKA_BROKERS: 'b1:9092,user:hunter2@b2' });
    expect(m).toContain('sinks.kafka.brokers[0]: broker 2 of its comma-separated list: use host:port (its value comes from the environment: KAFKA_BROKERS)');
    expect(m).not.toContain('hunter2');
    expect(problem({ KAFKA_BROKERS: ',' })).toContain('sinks.kafka.brokers[0]: use host:port (its value comes from the environment: KAFKA_BROKERS)');
    expect(problem({ KAFKA_BROKERS: 'b1:99999' })).toContain('sinks.kafka.brokers[0]: the port is 1–65535');
  });

  it('a broker with spaces around it (an env_file keeps a trailing one) is taken, alone as in a list: it was refused alone, "use host:port"', () => {
    expect(parse({ KAFKA_BROKERS: 'b1:9092 ' }).sinks.kafka?.brokers).toEqual(['b1:9092']);
    expect(parse({ KAFKA_BROKERS: ' b1:9092' }).cluster?.brokers).toEqual(['b1:9092', 'k9:9092']);
  });

  it('a broker written in a form Kafka takes elsewhere says how to write it here, never quoting it', () => {
    const m = (v: string) => problem({ KAFKA_BROKERS: v }).split('\n')[1];
    expect(m('b1:9092 b2:9092')).toBe('  sinks.kafka.brokers[0]: use host:port, several separated by commas (its value comes from the environment: KAFKA_BROKERS)');
    expect(m('SASL_SSL://user:hunter2@b1:9092')).toBe("  sinks.kafka.brokers[0]: use host:port, without a listener's scheme (SASL_SSL://, PLAINTEXT://): TLS and SASL are set by ssl and sasl (its value comes from the environment: KAFKA_BROKERS)");
    expect(m('[::1]:9092')).toBe('  sinks.kafka.brokers[0]: use host:port: an IPv6 address cannot be a broker here (the Kafka client splits it at its colons): use a host name for it (its value comes from the environment: KAFKA_BROKERS)');
    expect(m('b0:9092,[fd00::1]:9092')).toBe('  sinks.kafka.brokers[0]: broker 2 of its comma-separated list: use host:port: an IPv6 address cannot be a broker here (the Kafka client splits it at its colons): use a host name for it (its value comes from the environment: KAFKA_BROKERS)');
    expect(m('::1:9092')).toContain('an IPv6 address cannot be a broker here');
    // Credentials in it (two colons too) are no IPv6 address.
    expect(m('user:hunter2@b1:9092')).toBe('  sinks.kafka.brokers[0]: use host:port (its value comes from the environment: KAFKA_BROKERS)');
    expect(problem({ KAFKA_BROKERS: 'SASL_SSL://user:hunter2@b1:9092' })).not.toContain('hunter2');
  });
});
