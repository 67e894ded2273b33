import { afterEach, describe, expect, it, vi } from 'vitest';

// The broker script is not run: execFile answers as kafka-broker.sh start would, and says the port it was asked for.
const asked: string[] = [];
vi.mock('node:child_process', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:child_process')>();
  return {
    ...real,
    execFile: (_cmd: string, _args: string[], o: { env: NodeJS.ProcessEnv }, cb: (e: Error | null, r: { stdout: string; stderr: string }) => void) => {
      asked.push(o.env.KAFKA_PORT ?? '');
      cb(null, { stdout: `KAFKA_BROKERS=127.0.0.1:${o.env.KAFKA_PORT}\n`, stderr: '' });
      return {};
    },
  };
});

const { sharedBrokerPort, testBrokers } = await import('../helpers/kafka.js');

describe('the shared broker of a test run: one port, where global setup starts it, test.sh stops it and a test file looks for it', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
    asked.length = 0;
  });

  it("a test file that finds no KAFKA_BROKERS (global setup's start failed) starts it on KAFKA_PORT where that is set, the port test.sh stops: it started one on 19092, which nothing stopped", async () => {
    delete process.env.KAFKA_BROKERS;
    process.env.KAFKA_PORT = '21650';
    process.env.ARGUS_TEST_PORT_OFFSET = '0';
    expect(sharedBrokerPort()).toBe(21650);
    expect(await testBrokers()).toEqual(['127.0.0.1:21650']);
    expect(asked).toEqual(['21650']);
  });

  it('without KAFKA_PORT: 19092 plus the run\'s offset', async () => {
    delete process.env.KAFKA_BROKERS;
    delete process.env.KAFKA_PORT;
    process.env.ARGUS_TEST_PORT_OFFSET = '10000';
    expect(sharedBrokerPort()).toBe(29092);
    expect(await testBrokers()).toEqual(['127.0.0.1:29092']);
    expect(asked).toEqual(['29092']);
  });
});
