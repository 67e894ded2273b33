import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

const { sharedBrokerPort, sharedBrokerSetup, testBrokers } = await import('../helpers/kafka.js');
type BrokerControl = import('../helpers/kafka.js').BrokerControl;

describe('the shared broker of a test run: one port, where global setup starts it, test.sh stops it and a test file looks for it', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
    asked.length = 0;
  });

  it("a test file that finds no KAFKA_BROKERS (global setup's start failed) starts it on KAFKA_PORT where that is set, the port test.sh stops: it started one on 19092, which nothing stopped", async () => {
    delete process.env.KAFKA_BROKERS;
    delete process.env.ARGUS_TEST_KAFKA_STARTED_FILE;
    delete process.env.ARGUS_TEST_KAFKA_PORT_FILE;
    process.env.KAFKA_PORT = '21650';
    process.env.ARGUS_TEST_PORT_OFFSET = '0';
    expect(sharedBrokerPort()).toBe(21650);
    expect(await testBrokers()).toEqual(['127.0.0.1:21650']);
    expect(asked).toEqual(['21650']);
  });

  it('without KAFKA_PORT: 19092 plus the run\'s offset', async () => {
    delete process.env.KAFKA_BROKERS;
    delete process.env.ARGUS_TEST_KAFKA_STARTED_FILE;
    delete process.env.ARGUS_TEST_KAFKA_PORT_FILE;
    delete process.env.KAFKA_PORT;
    process.env.ARGUS_TEST_PORT_OFFSET = '10000';
    expect(sharedBrokerPort()).toBe(29092);
    expect(await testBrokers()).toEqual(['127.0.0.1:29092']);
    expect(asked).toEqual(['29092']);
  });
});

/** A broker on one port as kafka-broker.sh keeps it, recording what was asked of it. */
function fakeBroker(runs: boolean): BrokerControl & { runs: boolean; calls: string[] } {
  const b = {
    runs,
    calls: [] as string[],
    running: async (port: number) => (b.calls.push(`status ${port}`), b.runs),
    start: async (port: number) => {
      b.calls.push(`start ${port}`);
      b.runs = true;
      return `KAFKA_BROKERS=127.0.0.1:${port}`;
    },
    stop: async (port: number) => {
      b.calls.push(`stop ${port}`);
      b.runs = false;
    },
  };
  return b;
}

describe('global setup and the shared broker: one the run started is stopped at its end, one that ran before never', () => {
  const saved = { ...process.env };
  let dir: string;
  afterEach(() => {
    process.env = { ...saved };
    rmSync(dir, { recursive: true, force: true });
  });
  const env = (start: boolean): string => {
    dir = mkdtempSync(join(tmpdir(), 'shared-broker-'));
    delete process.env.KAFKA_BROKERS;
    delete process.env.ARGUS_TEST_KAFKA_STARTED_FILE;
    process.env.KAFKA_PORT = '21651';
    process.env.ARGUS_TEST_KAFKA_PORT_FILE = join(dir, 'kafka-port');
    if (start) process.env.ARGUS_TEST_KAFKA = 'start';
    else delete process.env.ARGUS_TEST_KAFKA;
    return process.env.ARGUS_TEST_KAFKA_PORT_FILE;
  };

  it('a test file run on its own (`npx vitest run test/…`, no ARGUS_TEST_KAFKA) starts the broker it needs: the teardown stops it (it was left running)', async () => {
    env(false);
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    expect(b.calls).toEqual([]);
    expect(process.env.KAFKA_BROKERS).toBeUndefined();
    expect(await testBrokers(b)).toEqual(['127.0.0.1:21651']); // the test file's
    await teardown();
    expect(b.runs).toBe(false);
    expect(b.calls).toEqual(['status 21651', 'start 21651', 'status 21651', 'stop 21651']);
  });

  it('the test command (ARGUS_TEST_KAFKA=start): started here, handed on in KAFKA_BROKERS, its port written for test.sh, stopped at the end', async () => {
    const file = env(true);
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    expect(process.env.KAFKA_BROKERS).toBe('127.0.0.1:21651');
    expect(readFileSync(file, 'utf8')).toBe('21651\n');
    await teardown();
    expect(b.runs).toBe(false);
  });

  it('a start that fails: a test file starts it later, and the teardown still stops it', async () => {
    env(true);
    const b = fakeBroker(false);
    b.start = async () => {
      throw new Error('JVM did not answer');
    };
    const logged: string[] = [];
    const teardown = await sharedBrokerSetup(b, (m) => logged.push(m));
    expect(logged.join('\n')).toMatch(/could not start the Kafka broker on 21651.*JVM did not answer/);
    b.runs = true; // a test file's testBrokers() started it
    await teardown();
    expect(b.calls.at(-1)).toBe('stop 21651');
    expect(b.runs).toBe(false);
  });

  it('a broker that ran on the port before the run (a developer\'s own) is used and never stopped, nor its port written for test.sh to stop', async () => {
    for (const start of [true, false]) {
      const file = env(start);
      const b = fakeBroker(true);
      const teardown = await sharedBrokerSetup(b, () => {});
      await teardown();
      expect(b.runs).toBe(true);
      expect(b.calls.filter((c) => c.startsWith('stop'))).toEqual([]);
      expect(existsSync(file)).toBe(false);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with KAFKA_BROKERS set beforehand the run uses those: nothing is started, asked or stopped', async () => {
    env(true);
    process.env.KAFKA_BROKERS = '10.0.0.1:9092';
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    await teardown();
    expect(b.calls).toEqual([]);
    expect(process.env.KAFKA_BROKERS).toBe('10.0.0.1:9092');
  });

  it('the teardown leaves a broker the run did not start on the port alone, even one with kept data (a stop would remove it)', async () => {
    env(false);
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    await teardown();
    expect(b.calls.filter((c) => c.startsWith('stop'))).toEqual([]);
  });

  it('a run that needs no broker asks nothing of it at the start: one with a port offset that keeps 19092 over 65000 runs (its global setup failed, and no test file ran)', async () => {
    env(false);
    delete process.env.KAFKA_PORT;
    process.env.ARGUS_TEST_PORT_OFFSET = '47000';
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    await teardown();
    expect(b.calls).toEqual([]);
  });

  it('a broker another run or a developer started on the port during a run that started none is left running (the teardown stopped it: it had not run as the run began)', async () => {
    env(false);
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    await b.start(21651); // another test run, or a developer's terminal
    await teardown();
    expect(b.runs).toBe(true);
    expect(b.calls.filter((c) => c.startsWith('stop'))).toEqual([]);
  });

  it('a test file that finds the broker running (another file of the run, or a developer, started it) does not write it down: only the one that started it does', async () => {
    env(false);
    const b = fakeBroker(false);
    const teardown = await sharedBrokerSetup(b, () => {});
    b.runs = true; // a developer's own, started after the run began
    await testBrokers(b);
    await teardown();
    expect(b.runs).toBe(true);
  });
});
